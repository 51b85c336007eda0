"""Real-valued stumps (Real / Gentle AdaBoost outputs), PhD thesis [Sun2012] Sec. 3.2-3.3.

A real stump outputs ``v_hi`` if ``x[f] > t`` and ``v_lo`` otherwise.  With labels
``y_k = sign(a_k)`` and weights ``|a_k|``, let ``P`` and ``N`` be the positive and
negative weight on one side of the split and ``D = P - N``, ``T = P + N``:

* ``mode="gentle"`` ([Sun2012 eq. 3.26]): ``v = D / T = P_w(y=1|side) - P_w(y=-1|side)``, already in
  [-1, 1]; the split maximises the weighted least-squares fit, ``sum_sides D^2 / T``,
  which is exactly the true gain ``sum_k a_k phi(z_k)`` of these outputs.
* ``mode="real"`` ([Sun2012 eq. 3.21]): ``v = 1/2 log((P + eps) / (N + eps))`` (eps = smoothing of
  Schapire & Singer, ``sum|a| / (2n)``), divided by ``max(|v_lo|, |v_hi|)`` so that the
  outputs lie in [-1, 1]; the split minimises Real AdaBoost's normaliser
  ``sum_sides sqrt(P N)`` (the surrogate of [Sun2012 eq. 3.22]), and the returned gain is the true
  gain of the scaled outputs.

Both are surrogates of the linear gain: over outputs in [-1, 1] the gain is maximised
by ``sign(D)`` on each side (a depth-1 tree), so a real stump's gain never exceeds the
best ``{-1, +1}`` split's.  Their use is the smoother, better-calibrated columns.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from maxmargin.weak.base import Hypotheses, WeakLearner, check_loaded
from maxmargin.weak.binning import FeatureCodes, code_features
from maxmargin.weak.stump import (
    _hist_dense,
    _hist_sparse,
    check_weights,
    evaluate_thresholds,
    threads_for,
)

__all__ = ["RealAdaBoostStump", "RealStump", "RealStumps"]

MODES = ("gentle", "real")


class RealStumps(Hypotheses):
    """Batch of real-valued stumps (feature, threshold, v_lo for x <= t, v_hi for x > t)."""

    def __init__(self, feature, threshold, v_lo, v_hi, n_features: int) -> None:
        self.feature = np.asarray(feature, dtype=np.int64)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.v_lo = np.asarray(v_lo, dtype=np.float64)
        self.v_hi = np.asarray(v_hi, dtype=np.float64)
        self.n_features = int(n_features)

    def __len__(self) -> int:
        return len(self.feature)

    def evaluate(self, Z) -> np.ndarray:
        return evaluate_thresholds(Z, self.feature, self.threshold, self.v_lo, self.v_hi)

    def take(self, index) -> RealStumps:
        return RealStumps(
            self.feature[index],
            self.threshold[index],
            self.v_lo[index],
            self.v_hi[index],
            self.n_features,
        )

    def concat(self, other: Hypotheses) -> RealStumps:
        if not isinstance(other, RealStumps):
            raise TypeError("can only concatenate RealStumps with RealStumps")
        return RealStumps(
            *(
                np.concatenate([getattr(self, a), getattr(other, a)])
                for a in ("feature", "threshold", "v_lo", "v_hi")
            ),
            self.n_features,
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "feature": self.feature,
            "threshold": self.threshold,
            "v_lo": self.v_lo,
            "v_hi": self.v_hi,
            "n_features": np.array(self.n_features),
        }

    @classmethod
    def from_arrays(cls, arrays) -> RealStumps:
        out = cls(
            arrays["feature"],
            arrays["threshold"],
            arrays["v_lo"],
            arrays["v_hi"],
            int(arrays["n_features"]),
        )
        check_loaded(
            "real stumps",
            out.n_features,
            np.asarray(arrays["feature"]),
            (out.v_lo, out.v_hi),
            thresholds=(out.threshold,),
            rows=len(out.feature),
        )
        return out

    @classmethod
    def empty(cls, n_features: int) -> RealStumps:
        return cls(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0), n_features)


@njit(cache=True)
def _crit(P, N, gentle):  # pragma: no cover - compiled
    if gentle:
        T = P + N
        return (P - N) * (P - N) / T if T > 0.0 else 0.0
    return -np.sqrt(max(P, 0.0) * max(N, 0.0))


@njit(cache=True)
def _scan_real(hist, nb, tot, f, gentle, crit, split, PL, NL):  # pragma: no cover
    S = len(tot) // 2
    for s in range(S):
        split[f, s] = -1
        crit[f, s] = _crit(tot[s], tot[S + s], gentle)
        PL[f, s] = 0.0
        NL[f, s] = 0.0
        p = 0.0
        q = 0.0
        for b in range(nb - 1):
            p += hist[b, s]
            q += hist[b, S + s]
            c = _crit(p, q, gentle) + _crit(tot[s] - p, tot[S + s] - q, gentle)
            if c > crit[f, s]:
                crit[f, s] = c
                split[f, s] = b
                PL[f, s] = p
                NL[f, s] = q


@njit(parallel=True, cache=True)
def _search_dense(codes, n_bins, A2, tot, gentle):  # pragma: no cover - compiled
    d = codes.shape[0]
    S = A2.shape[1] // 2
    crit = np.empty((d, S))
    split = np.empty((d, S), dtype=np.int64)
    PL = np.empty((d, S))
    NL = np.empty((d, S))
    for f in prange(d):
        nb = n_bins[f]
        hist = np.zeros((nb, 2 * S))
        if nb > 1:
            _hist_dense(codes, f, nb, A2, hist)
        _scan_real(hist, nb, tot, f, gentle, crit, split, PL, NL)
    return crit, split, PL, NL


@njit(parallel=True, cache=True)
def _search_sparse(indptr, indices, codes, zero_bin, n_bins, A2, tot, gentle):  # pragma: no cover
    d = len(n_bins)
    S = A2.shape[1] // 2
    crit = np.empty((d, S))
    split = np.empty((d, S), dtype=np.int64)
    PL = np.empty((d, S))
    NL = np.empty((d, S))
    for f in prange(d):
        nb = n_bins[f]
        hist = np.zeros((nb, 2 * S))
        if nb > 1:
            _hist_sparse(indptr, indices, codes, zero_bin, f, A2, tot, hist)
        _scan_real(hist, nb, tot, f, gentle, crit, split, PL, NL)
    return crit, split, PL, NL


class RealStump(WeakLearner):
    """Real-valued stump with Gentle (default) or scaled Real AdaBoost outputs in [-1, 1].

    ``max_bins``: None for exact thresholds, an integer for histogram binning.
    """

    hypotheses_class = RealStumps

    def __init__(self, mode: str = "gentle", max_bins: int | None = None) -> None:
        self.mode = mode
        self.max_bins = max_bins

    def prepare(self, Z) -> FeatureCodes:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        return code_features(Z, self.max_bins)

    def best(self, prepared: FeatureCodes, A):
        fc = prepared
        A = check_weights(fc, A)
        n, S = A.shape
        A2 = np.ascontiguousarray(np.hstack([np.maximum(A, 0.0), np.maximum(-A, 0.0)]))
        tot = A2.sum(axis=0)
        gentle = self.mode == "gentle"
        if fc.n_features == 0:
            crit = np.array([[_crit(tot[s], tot[S + s], gentle) for s in range(S)]])
            split, PL, NL = np.full((1, S), -1), np.zeros((1, S)), np.zeros((1, S))
        elif fc.sparse:
            with threads_for(len(fc.codes) * 2 * S):
                crit, split, PL, NL = _search_sparse(
                    fc.indptr, fc.indices, fc.codes, fc.zero_bin, fc.n_bins, A2, tot, gentle
                )
        else:
            with threads_for(fc.codes.size * 2 * S):
                crit, split, PL, NL = _search_dense(fc.codes, fc.n_bins, A2, tot, gentle)
        f = np.argmax(crit, axis=0)
        cols = np.arange(S)
        k, pl, nl = split[f, cols], PL[f, cols], NL[f, cols]
        pr, nr = tot[:S] - pl, tot[S:] - nl
        eps = (tot[:S] + tot[S:]) / (2.0 * max(n, 1))  # Schapire-Singer smoothing
        v_lo, v_hi = self._outputs(pl, nl, eps), self._outputs(pr, nr, eps)
        if not gentle:  # scale Real AdaBoost's log-odds into [-1, 1]
            scale = np.maximum(np.abs(v_lo), np.abs(v_hi))
            scale[scale == 0] = 1.0
            v_lo, v_hi = v_lo / scale, v_hi / scale
        v_lo = np.where(k < 0, v_hi, v_lo)  # constant classifier: one output everywhere
        gain = v_lo * (pl - nl) + v_hi * (pr - nr)
        thr = fc.thresholds(f, k) if fc.n_features else np.full(S, -np.inf)
        return RealStumps(f, thr, v_lo, v_hi, fc.n_features), gain

    def _outputs(self, P, N, eps):
        T = P + N
        if self.mode == "gentle":  # [Sun2012 eq. 3.26]
            v = np.divide(P - N, T, out=np.zeros_like(T), where=T > 0)
            return np.clip(v, -1.0, 1.0)  # |P - N| / (P + N) can round above 1
        safe = np.where(eps > 0, eps, 1.0)  # [Sun2012 eq. 3.21], smoothed; 0 for all-zero weights
        return np.where(eps > 0, 0.5 * np.log((P + safe) / (N + safe)), 0.0)


class RealAdaBoostStump(RealStump):
    """:class:`RealStump` with Real AdaBoost's scaled log-odds outputs (``mode="real"``)."""

    def __init__(self, mode: str = "real", max_bins: int | None = None) -> None:
        super().__init__(mode=mode, max_bins=max_bins)
