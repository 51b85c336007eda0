"""Exact decision stumps: the classic weak learner of LPBoost and StructBoost (Sec. 4.2).

A stump is ``phi(x) = p * (+1 if x[f] > t else -1)`` with polarity ``p`` in {-1, +1}.
Thresholds lie half-way between consecutive distinct values of a feature; a threshold of
``-inf`` gives the constant classifier ``phi = p`` (the class bias of a multi-class model).
For signed weights ``a`` the gain of the split after bin ``b`` of a feature is
``p * (sum(a) - 2 * sum_{bins <= b} a)``.  Each feature is sorted once per fit into
integer codes (:mod:`maxmargin.weak.binning`); a search is then, per feature and in
parallel over features (numba ``prange``), one sequential pass accumulating the weights
of every column of ``A`` (all K class slots together) into a histogram over the codes,
followed by a prefix-sum scan over the bins.  A feature with more than
``binning.SORTED_MIN_BINS`` distinct values (exact mode) is walked in its sorted order
instead, adding every bin's samples and scanning at once, which gives the same sums bit
for bit without a (bins x columns) histogram.  :meth:`DecisionStump.best` on a fit with
sorted features first keeps only each (feature, column)'s largest gain, then re-walks
the winning feature of each column for its split (the same additions, the same stumps;
see ``_gains_dense``).  Features are independent, so any number
of threads gives the same answer.  Ties go to the first feature, the first threshold and
polarity +1, the constant stump (feature 0) coming first, as in
:func:`maxmargin.weak.reference.all_stumps`.
"""

from __future__ import annotations

from contextlib import contextmanager

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from maxmargin.weak.base import Hypotheses, WeakLearner, check_loaded
from maxmargin.weak.binning import FeatureCodes, code_features, dense_columns

__all__ = ["DecisionStump", "Stumps", "evaluate_thresholds", "threads_for"]

_EVAL_BLOCK = 256  # features densified at a time when evaluating on sparse input
_PARALLEL_WORK = 16_000_000  # below this many weight additions one thread is faster


@contextmanager
def threads_for(work: float):
    """Run numba kernels single-threaded for small searches.

    Waking the thread pool costs far more than a small search on a busy machine
    (measured 24 ms vs 0.8 ms for 2000 x 100 on 2 loaded cores).
    """
    if work >= _PARALLEL_WORK or numba.get_num_threads() == 1:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)


@njit(parallel=True, cache=True)
def _eval_kernel(cols, col_of, thr, v_lo, v_hi):  # pragma: no cover - compiled
    n = cols.shape[0]
    h = len(thr)
    out = np.empty((n, h))
    for k in prange(n):
        for j in range(h):
            out[k, j] = v_hi[j] if cols[k, col_of[j]] > thr[j] else v_lo[j]
    return out


def evaluate_thresholds(Z, feature, thr, v_lo, v_hi) -> np.ndarray:
    """``v_hi[j] if Z[:, feature[j]] > thr[j] else v_lo[j]``, shape (h, n).

    Vectorised through a numba kernel on the used columns only; for sparse Z the used
    columns are densified a block of features at a time.
    """
    n = Z.shape[0]
    h = len(feature)
    if h == 0:
        return np.zeros((0, n))
    uf, col_of = np.unique(feature, return_inverse=True)
    if not sp.issparse(Z) or len(uf) <= _EVAL_BLOCK:
        cols = dense_columns(Z, uf)
        with threads_for(n * h):
            return _eval_kernel(cols, col_of.astype(np.int64), thr, v_lo, v_hi).T
    Z = Z.tocsc()
    out = np.empty((h, n))
    for b0 in range(0, len(uf), _EVAL_BLOCK):
        sel = np.flatnonzero((col_of >= b0) & (col_of < b0 + _EVAL_BLOCK))
        cols = dense_columns(Z, uf[b0 : b0 + _EVAL_BLOCK])
        out[sel] = _eval_kernel(cols, col_of[sel] - b0, thr[sel], v_lo[sel], v_hi[sel]).T
    return out


class Stumps(Hypotheses):
    """Batch of decision stumps (feature, threshold, polarity)."""

    def __init__(self, feature, threshold, polarity, n_features: int) -> None:
        self.feature = np.asarray(feature, dtype=np.int64)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.polarity = np.asarray(polarity, dtype=np.float64)
        self.n_features = int(n_features)

    def __len__(self) -> int:
        return len(self.feature)

    def evaluate(self, Z) -> np.ndarray:
        if not sp.issparse(Z):
            Z = np.asarray(Z)
            if Z.dtype.kind not in "iu":  # integer codes: only the used columns converted
                Z = np.asarray(Z, dtype=np.float64)
        return evaluate_thresholds(Z, self.feature, self.threshold, -self.polarity, self.polarity)

    def take(self, index) -> Stumps:
        return Stumps(
            self.feature[index], self.threshold[index], self.polarity[index], self.n_features
        )

    def concat(self, other: Hypotheses) -> Stumps:
        if not isinstance(other, Stumps):
            raise TypeError("can only concatenate Stumps with Stumps")
        return Stumps(
            np.concatenate([self.feature, other.feature]),
            np.concatenate([self.threshold, other.threshold]),
            np.concatenate([self.polarity, other.polarity]),
            self.n_features,
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "feature": self.feature,
            "threshold": self.threshold,
            "polarity": self.polarity,
            "n_features": np.array(self.n_features),
        }

    @classmethod
    def from_arrays(cls, arrays) -> Stumps:
        out = cls(
            arrays["feature"], arrays["threshold"], arrays["polarity"], int(arrays["n_features"])
        )
        check_loaded(
            "stumps",
            out.n_features,
            np.asarray(arrays["feature"]),
            (out.polarity,),
            thresholds=(out.threshold,),
            rows=len(out.feature),
        )
        if out.feature.ndim != 1 or not np.all(np.abs(out.polarity) == 1.0):
            raise ValueError("stumps: polarity must be +1 or -1")
        return out

    @classmethod
    def empty(cls, n_features: int) -> Stumps:
        return cls(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), n_features)


# -- histogram accumulation (shared by stumps, real stumps and trees) ---------------------
@njit(cache=True)
def _hist_dense(codes, f, nb, A, hist):  # pragma: no cover - compiled
    n, S = A.shape
    if S == 1:
        for k in range(n):
            hist[codes[f, k], 0] += A[k, 0]
    else:
        for k in range(n):
            c = codes[f, k]
            for s in range(S):
                hist[c, s] += A[k, s]


@njit(cache=True)
def _hist_sparse(indptr, indices, codes, zero_bin, f, A, total, hist):  # pragma: no cover
    S = A.shape[1]
    zb = zero_bin[f]
    if zb >= 0:
        for s in range(S):
            hist[zb, s] = total[s]
    for p in range(indptr[f], indptr[f + 1]):
        c = codes[p]
        r = indices[p]
        for s in range(S):
            hist[c, s] += A[r, s]
        if zb >= 0:
            for s in range(S):
                hist[zb, s] -= A[r, s]


@njit(cache=True)
def _start(total, best, sg, bb):  # pragma: no cover - compiled
    """The constant stump of every column: gain |total|, polarity sign(total) (+1 at 0)."""
    for s in range(len(total)):
        best[s] = abs(total[s])
        sg[s] = total[s]
        bb[s] = -1


@njit(cache=True)
def _finish(f, best, sg, bb, gain, split, pol):  # pragma: no cover - compiled
    for s in range(len(best)):
        gain[f, s] = best[s]
        split[f, s] = bb[s]
        pol[f, s] = 1.0 if sg[s] >= 0.0 else -1.0


@njit(cache=True)
def _step(b, cum, binsum, total, best, sg, bb):  # pragma: no cover - compiled
    """Add bin ``b``'s sums and keep, per column, the first split of largest gain.

    ``|g| > best`` is the rule ``g > best or -g > best`` (polarity +1 first) written
    without branches, so the loop over the columns vectorises."""
    for s in range(len(total)):
        c = cum[s] + binsum[s]
        cum[s] = c
        g = total[s] - 2.0 * c
        ag = abs(g)
        up = ag > best[s]
        best[s] = ag if up else best[s]
        sg[s] = g if up else sg[s]
        bb[s] = b if up else bb[s]


@njit(cache=True)
def _scan(hist, nb, total, f, gain, split, pol):  # pragma: no cover - compiled
    """Best split of one feature for every column: constant first, then bins in order."""
    S = len(total)
    best, sg, bb, cum = np.empty(S), np.empty(S), np.empty(S, dtype=np.int64), np.zeros(S)
    _start(total, best, sg, bb)
    for b in range(nb - 1):
        _step(b, cum, hist[b], total, best, sg, bb)
    _finish(f, best, sg, bb, gain, split, pol)


@njit(cache=True, inline="always")
def _bin_sums(order, pos, end, A, x):  # pragma: no cover - compiled
    """``x[s]`` = the samples ``order[pos:end]``'s ``A[:, s]`` summed from 0 in that order
    (one bin of a feature walked in sorted order: the histogram pass's additions)."""
    k = order[pos]
    for s in range(x.shape[0]):
        x[s] = 0.0 + A[k, s]
    for j in range(pos + 1, end):
        k = order[j]
        for s in range(x.shape[0]):
            x[s] += A[k, s]


@njit(cache=True)
def _scan_sorted(order, bin_end, start, nb, A, total, f, gain, split, pol):  # pragma: no cover
    """``_scan`` of a feature with many bins, walking its samples in sorted order.

    Every bin's sums start at 0 and add its samples in increasing index (the order is a
    stable sort), the additions of the histogram pass: the result is the same bit for
    bit, without a (bins x columns) histogram to clear and scatter into."""
    S = len(total)
    best, sg, bb, cum = np.empty(S), np.empty(S), np.empty(S, dtype=np.int64), np.zeros(S)
    binsum = np.empty(S)
    _start(total, best, sg, bb)
    pos = 0
    for b in range(nb - 1):
        end = bin_end[start + b]
        k = order[pos]
        if end - pos == 1:  # one sample in the bin (most bins of a continuous feature)
            for s in range(S):
                c = cum[s] + (0.0 + A[k, s])
                cum[s] = c
                g = total[s] - 2.0 * c
                ag = abs(g)
                up = ag > best[s]
                best[s] = ag if up else best[s]
                sg[s] = g if up else sg[s]
                bb[s] = b if up else bb[s]
        else:
            _bin_sums(order, pos, end, A, binsum)
            _step(b, cum, binsum, total, best, sg, bb)
        pos = end
    _finish(f, best, sg, bb, gain, split, pol)


@njit(parallel=True, cache=True)
def _search_dense(codes, n_bins, order, order_row, bin_end, offsets, A, total):  # pragma: no cover
    d = codes.shape[0]
    S = A.shape[1]
    gain = np.empty((d, S))
    split = np.empty((d, S), dtype=np.int64)
    pol = np.empty((d, S))
    for f in prange(d):
        nb = n_bins[f]
        r = order_row[f]
        if r >= 0:
            _scan_sorted(order[r], bin_end, offsets[f], nb, A, total, f, gain, split, pol)
            continue
        hist = np.zeros((nb, S))
        if nb > 1:
            _hist_dense(codes, f, nb, A, hist)
        _scan(hist, nb, total, f, gain, split, pol)
    return gain, split, pol


_NO_ORDER = np.zeros((0, 1), dtype=np.int32)


def _dense_args(fc: FeatureCodes):
    """The sorted-order arrays of ``fc`` for ``_search_dense`` (empty when none kept)."""
    if fc.order_row is None:
        return _NO_ORDER, np.full(fc.n_features, -1, dtype=np.int64), fc.offsets
    return fc.order, fc.order_row, fc.bin_end


@njit(parallel=True, cache=True)
def _search_sparse(indptr, indices, codes, zero_bin, n_bins, A, total):  # pragma: no cover
    d = len(n_bins)
    S = A.shape[1]
    gain = np.empty((d, S))
    split = np.empty((d, S), dtype=np.int64)
    pol = np.empty((d, S))
    for f in prange(d):
        nb = n_bins[f]
        hist = np.zeros((nb, S))
        if nb > 1:
            _hist_sparse(indptr, indices, codes, zero_bin, f, A, total, hist)
        _scan(hist, nb, total, f, gain, split, pol)
    return gain, split, pol


# -- the stump search of ``best``: gains first, then the chosen split of each column -------
# ``search`` keeps every feature's split and polarity; ``best`` needs them only at the
# winning feature of each column.  Its first pass keeps only the largest |gain| of every
# (feature, column) -- a running ``max``, not the three selects of ``_step``, so the
# scan over the bins is about three times cheaper -- and a second pass re-walks the one
# winning feature per column for the first split reaching that value.  Both passes do
# the additions of ``search`` in the same order, so the stumps are the same bit for bit:
# ``_step`` keeps the first split whose |gain| is strictly larger than every earlier
# one (the constant first), which is the first split whose |gain| equals the maximum.


@njit(cache=True)
def _gain_hist(hist, nb, total, m):  # pragma: no cover - compiled
    """``m[s]`` = the largest |gain| of column ``s`` over the constant and every split."""
    S = len(total)
    cum = np.zeros(S)
    for s in range(S):
        m[s] = abs(total[s])
    for b in range(nb - 1):
        for s in range(S):
            c = cum[s] + hist[b, s]
            cum[s] = c
            m[s] = max(m[s], abs(total[s] - 2.0 * c))


@njit(cache=True)
def _gain_sorted(order, bin_end, start, nb, A, total, m, cum, x):  # pragma: no cover
    """``_gain_hist`` of a feature walked in sorted order (the sums of ``_scan_sorted``)."""
    S = len(total)
    for s in range(S):
        m[s] = abs(total[s])
        cum[s] = 0.0
    pos = 0
    for b in range(nb - 1):
        end = bin_end[start + b]
        _bin_sums(order, pos, end, A, x)
        pos = end
        for s in range(S):
            c = cum[s] + x[s]
            cum[s] = c
            m[s] = max(m[s], abs(total[s] - 2.0 * c))


@njit(parallel=True, cache=True)
def _gains_dense(codes, n_bins, order, order_row, bin_end, offsets, A, total):  # pragma: no cover
    d = codes.shape[0]
    S = A.shape[1]
    gain = np.empty((d, S))
    for f in prange(d):
        nb = n_bins[f]
        r = order_row[f]
        if r >= 0:
            cum, x = np.empty(S), np.empty(S)
            _gain_sorted(order[r], bin_end, offsets[f], nb, A, total, gain[f], cum, x)
            continue
        hist = np.zeros((nb, S))
        if nb > 1:
            _hist_dense(codes, f, nb, A, hist)
        _gain_hist(hist, nb, total, gain[f])
    return gain


@njit(parallel=True, cache=True)
def _gains_hist1(codes, n_bins, A, total):  # pragma: no cover - compiled
    """``_gains_dense`` for one weight column and histogram features only: four features
    share each pass over the samples (four independent histograms, so consecutive
    samples in one bin do not wait on each other), each bin adding its samples in
    increasing index as ``_hist_dense`` does."""
    d, n = codes.shape
    gain = np.empty((d, 1))
    nbmax = n_bins.max()
    t = total[0]
    for q in prange((d + 3) // 4):
        f0 = 4 * q
        nf = min(4, d - f0)
        h = np.zeros((4, nbmax))
        if nf == 4:
            for k in range(n):
                a = A[k, 0]
                h[0, codes[f0, k]] += a
                h[1, codes[f0 + 1, k]] += a
                h[2, codes[f0 + 2, k]] += a
                h[3, codes[f0 + 3, k]] += a
        else:
            for i in range(nf):
                if n_bins[f0 + i] > 1:
                    for k in range(n):
                        h[i, codes[f0 + i, k]] += A[k, 0]
        for i in range(nf):
            m = abs(t)
            c = 0.0
            for b in range(n_bins[f0 + i] - 1):
                c = c + h[i, b]
                m = max(m, abs(t - 2.0 * c))
            gain[f0 + i, 0] = m
    return gain


@njit(cache=True)
def _first_at(t, m, c, b, k):  # pragma: no cover - compiled
    """``b`` if split ``b`` (cumulative sum ``c``) is the first to reach |gain| ``m``."""
    g = t - 2.0 * c
    return b if k == -2 and abs(g) == m else k


@njit(cache=True)
def _locate_dense(
    codes, n_bins, order, order_row, bin_end, offsets, A, total, feat, m
):  # pragma: no cover
    """Split and polarity of column ``s`` at feature ``feat[s]``: the first split (the
    constant, -1, first) whose |gain| equals ``m[s]``, found with the sums of the first
    pass; split -2 if none does (never, the sums being the same)."""
    S = A.shape[1]
    n = A.shape[0]
    split = np.empty(S, dtype=np.int64)
    pol = np.empty(S)
    for s in range(S):
        f = feat[s]
        t = total[s]
        k = -1 if abs(t) == m[s] else -2
        sg = t
        nb = n_bins[f]
        r = order_row[f]
        cum = 0.0
        if k == -2 and r >= 0:
            start = offsets[f]
            pos = 0
            for b in range(nb - 1):
                end = bin_end[start + b]
                x = 0.0 + A[order[r, pos], s]
                for j in range(pos + 1, end):
                    x += A[order[r, j], s]
                pos = end
                cum = cum + x
                k = _first_at(t, m[s], cum, b, k)
                if k >= 0:
                    sg = t - 2.0 * cum
                    break
        elif k == -2 and nb > 1:
            h = np.zeros(nb)
            for i in range(n):
                h[codes[f, i]] += A[i, s]
            for b in range(nb - 1):
                cum = cum + h[b]
                k = _first_at(t, m[s], cum, b, k)
                if k >= 0:
                    sg = t - 2.0 * cum
                    break
        split[s] = k
        pol[s] = 1.0 if sg >= 0.0 else -1.0
    return split, pol


def check_weights(fc: FeatureCodes, A) -> np.ndarray:
    """A as a C-contiguous float (n, S) array matching the prepared samples."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2 or A.shape[0] != fc.n_samples:
        raise ValueError(f"weights must have shape ({fc.n_samples}, S), got {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("weights must be finite")
    return np.ascontiguousarray(A)


class DecisionStump(WeakLearner):
    """Exact decision-stump search over every feature, threshold and polarity (numba).

    Parameters
    ----------
    max_bins : int or None, default=None
        None: one bin per distinct value (exact).  An integer gives the histogram stump
        (:class:`~maxmargin.weak.hist_stump.HistogramStump`).

    Features are coded once per fit (:meth:`prepare`; dense or scipy.sparse input);
    each call to :meth:`best` is one parallel pass over the features for all weight
    columns together.
    """

    hypotheses_class = Stumps
    exact_search = True  # every feature, threshold (bin boundary) and polarity

    def __init__(self, max_bins: int | None = None) -> None:
        self.max_bins = max_bins

    def prepare(self, Z) -> FeatureCodes:
        # features with many distinct values are searched in sorted order (exact mode)
        return code_features(Z, self.max_bins, keep_order=self.max_bins is None)

    def search(self, fc: FeatureCodes, A, total=None):
        """Per-feature results: gain, split, polarity, each (d, S).  ``total`` (the
        column sums of A) may be passed when several feature blocks share one A."""
        total = A.sum(axis=0) if total is None else total
        if fc.n_features == 0:  # only the constant stump exists
            pol = np.where(total >= 0, 1.0, -1.0)[None]
            return np.abs(total)[None], np.full((1, A.shape[1]), -1), pol
        work = (len(fc.codes) if fc.sparse else fc.codes.size) * A.shape[1]
        with threads_for(work):
            if fc.sparse:
                return _search_sparse(
                    fc.indptr, fc.indices, fc.codes, fc.zero_bin, fc.n_bins, A, total
                )
            order, order_row, bin_end = _dense_args(fc)
            return _search_dense(
                fc.codes, fc.n_bins, order, order_row, bin_end, fc.offsets, A, total
            )

    def best(self, prepared: FeatureCodes, A):
        A = check_weights(prepared, A)
        return self.best_given_total(prepared, A, A.sum(axis=0))

    def best_given_total(self, prepared: FeatureCodes, A, total):
        """:meth:`best` for checked weights ``A`` (C-contiguous float64) with their column
        sums ``total`` -- what several feature blocks sharing one A pass
        (:mod:`maxmargin.solvers.parallel_weak`)."""
        cols = np.arange(A.shape[1])
        one = A.shape[1] == 1 and prepared.order_row is None
        if prepared.n_features and not prepared.sparse and (one or prepared.order_row is not None):
            # sorted features (the scan dominates) or one column (the histogram passes)
            order, order_row, bin_end = _dense_args(prepared)
            args = (prepared.codes, prepared.n_bins, order, order_row, bin_end)
            with threads_for(prepared.codes.size * A.shape[1]):
                if one:
                    gain = _gains_hist1(prepared.codes, prepared.n_bins, A, total)
                else:
                    gain = _gains_dense(*args, prepared.offsets, A, total)
            f = np.argmax(gain, axis=0)  # first feature with the best gain, per column
            g = gain[f, cols]
            k, pol = _locate_dense(*args, prepared.offsets, A, total, f, g)
            if np.all(k >= -1):  # always: both passes add in the same order
                thr = prepared.thresholds(f, k)
                return Stumps(f, thr, pol, prepared.n_features), g
        gain, split, pol = self.search(prepared, A, total)
        f = np.argmax(gain, axis=0)  # first feature with the best gain, per column
        k = split[f, cols]
        thr = prepared.thresholds(f, k) if prepared.n_features else np.full(len(cols), -np.inf)
        return Stumps(f, thr, pol[f, cols], prepared.n_features), gain[f, cols]
