"""Stage-wise multi-class boosting baselines with the package's weak learners.

* :class:`AdaBoostMH` -- Schapire & Singer (1999), Hamming loss over K one-vs-all labels;
  weak hypothesis ``alpha * v_l * phi(x)`` with a vote vector ``v`` in {-1, +1}^K
  shared by one weak classifier ``phi`` (the discrete AdaBoost.MH of Kegl & Busa-Fekete).
* :class:`AdaBoostECC` -- Guruswami & Sahai (1999) in the real form of Li (2006):
  a random half coloring per round, one binary weak classifier, two confidences.
* :class:`AdaBoostMO` -- Schapire & Singer (1999), output codes with one weak classifier
  per code column per round and loss-based decoding.

All reuse the weak-learner protocol (``best`` maximises ``sum_k A[k, s] phi(x_k)`` per
column) and record the same per-iteration history as :mod:`maxmargin.learners.multiboost`.
The sample weights are recomputed from the scores in the log domain every round, so long
runs cannot overflow or underflow them.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import logsumexp

from maxmargin._registry import register
from maxmargin._validation import POSITIVE_INT, Options, store_params
from maxmargin.learners._boosting import MultiClassBoosting
from maxmargin.weak.base import EDGE_CAP, edge_weight

__all__ = ["AdaBoostECC", "AdaBoostMH", "AdaBoostMO"]


def _softmax_weights(z: np.ndarray) -> np.ndarray:
    """exp(z) / sum exp(z) without overflow (z may be -inf)."""
    z = z - np.max(z)
    e = np.exp(z)
    return e / e.sum()


class _StageWise(MultiClassBoosting):
    def __init__(
        self,
        *,
        max_iter: int = 100,
        weak_learner="stump",
        max_time=None,
        random_state=None,
        verbose: int = 0,
        callback=None,
    ):
        store_params(self, locals())


_HEAD = """
    Parameters
    ----------
    max_iter : int, default=100
        Boosting rounds.
    weak_learner : str or WeakLearner, default="stump"
        Name in :data:`maxmargin.weak.WEAK_LEARNERS` or an instance.
"""

_TAIL = """    max_time : float or None, default=None
        Wall-clock limit in seconds.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the random choices (AdaBoost.ECC colorings, AdaBoost.MO random codes).
    verbose : int, default=0
        Print one line per round when > 0.
    callback : callable or None, default=None
        Called with each round's record (the dict appended to ``history_``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    hypotheses_ : Hypotheses
        The weak learners of the model.
    coef_, var_hyp_, var_out_ : ndarray of shape (n_vars,)
        Weight of every variable, its weak learner (-1: the constant 1) and raw output
        column.
    path_iter_, path_var_, path_value_ : ndarray
        Weight changes per round (for :meth:`staged_predict`).
    history_ : list of dict
        Per round: objective (the normalised exponential loss minimised), train_error,
        val_error (with ``fit(..., eval_set=(X, y))``), n_weak, edge, t_weak, t_total;
        ``dual_bound`` and ``gap`` are nan (stage-wise: no master problem).
    n_iter_ : int
        Number of rounds run.
    objective_ : float
        Final objective.
    converged_ : bool
        True when a weak learner separated the weighted data perfectly.
    n_features_in_ : int
        Number of features seen in ``fit``.
"""


def _example(name: str) -> str:
    return f"""
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin import {name}
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = {name}(max_iter=20, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
"""


@register
class AdaBoostMH(_StageWise):
    __doc__ = (
        """AdaBoost.MH with discrete weak learners and a per-class vote vector.

    Minimises ``mean_{i,l} exp(-Y_il F_l(x_i))``, ``Y_il = +1`` iff ``l = y_i``.  Each
    round finds ``phi`` and ``v`` maximising the edge ``sum_l |sum_i D_il Y_il phi(x_i)|``:
    the best weak learner of each one-vs-all column is a candidate, the best candidate's
    votes ``v`` are refined by one alternation (search with column ``sum_l D_l Y_l v_l``).
    """
        + _HEAD
        + _TAIL
        + _example("AdaBoostMH")
        + """
    References
    ----------
    Schapire & Singer, Machine Learning 1999 [Schapire1999]; the discrete form with a vote
    vector of Kegl & Busa-Fekete, ICML 2009 [Kegl2009] (full citations: docs/references.md).
    """
    )

    def _boost(self, X, y, K, weak, builder, record):
        prepared = weak.prepare(X)
        Y = np.where(np.arange(K)[None, :] == y[:, None], 1.0, -1.0)
        F = np.zeros((len(y), K))
        for it in range(int(self.max_iter)):
            t0 = time.perf_counter()
            D = _softmax_weights(-Y * F)
            A = D * Y
            hyps, _ = weak.best(prepared, A)
            outs = hyps.evaluate(X)  # (K candidates, m)
            edges = outs @ A  # (candidate, label)
            c = int(np.argmax(np.abs(edges).sum(axis=1)))
            best, out, e = hyps.take([c]), outs[c], edges[c]
            v = np.where(e >= 0, 1.0, -1.0)
            h2, _ = weak.best(prepared, (A @ v)[:, None])  # alternation step for phi
            o2 = h2.evaluate(X)[0]
            e2 = o2 @ A
            if np.abs(e2).sum() > np.abs(e).sum():
                best, out, e = h2, o2, e2
                v = np.where(e >= 0, 1.0, -1.0)
            edge = float(np.abs(e).sum())
            a = edge_weight(edge)
            t_weak = time.perf_counter() - t0
            hidx = builder.add_hypotheses(best)
            new = builder.add_vars(np.repeat(hidx, K), np.arange(K))
            coef = builder.coef.copy()
            coef[new] = a * v
            builder.set_coef(it, coef)
            F += a * out[:, None] * v[None, :]
            obj = np.exp(logsumexp(-Y * F) - np.log(Y.size))
            if record(it, obj, F, edge=edge, t_weak=t_weak) or edge >= EDGE_CAP:
                return edge >= EDGE_CAP
        return False


@register
class AdaBoostECC(_StageWise):
    __doc__ = (
        """AdaBoost.ECC (Guruswami & Sahai 1999; real version of Li 2006).

    Minimises ``mean_{i, l != y_i} exp(-(F_{y_i}(x_i) - F_l(x_i)) / 2)``.  Round t draws a
    random half coloring ``M_t`` of the classes, trains one binary weak learner on labels
    ``M_t(y_i)`` with weights ``sum_{l: M_t(l) != M_t(y_i)} D_il`` and gives it the
    confidences ``alpha`` (output +1) and ``-beta`` (output -1) that minimise the loss;
    ``F_l += M_t(l) f_t(x)``.
    """
        + _HEAD
        + _TAIL
        + _example("AdaBoostECC")
        + """
    References
    ----------
    Guruswami & Sahai, COLT 1999 [Guruswami1999]; the two-confidence form of Li, ICML 2006
    [Li2006] (full citations: docs/references.md).
    """
    )

    def _boost(self, X, y, K, weak, builder, record):
        prepared = weak.prepare(X)
        rng = self._rng()
        m = len(y)
        F = np.zeros((m, K))
        own = np.arange(K)[None, :] == y[:, None]
        bias = builder.add_vars(np.full(K, -1), np.arange(K))  # constant part of f_t
        smooth = 1.0 / (m * K)
        for it in range(int(self.max_iter)):
            t0 = time.perf_counter()
            M = -np.ones(K)
            M[rng.permutation(K)[: K // 2]] = 1.0
            z = np.where(own, -np.inf, -(F[np.arange(m), y][:, None] - F) / 2.0)
            D = _softmax_weights(z)
            b = M[y]
            d = (D * (M[None, :] != b[:, None])).sum(axis=1)
            d /= d.sum()
            hyps, gains = weak.best(prepared, (d * b)[:, None])
            phi = hyps.evaluate(X)[0]
            pos = phi > 0
            w_pp, w_pm = d[pos & (b > 0)].sum(), d[pos & (b < 0)].sum()
            w_mm, w_mp = d[~pos & (b < 0)].sum(), d[~pos & (b > 0)].sum()
            alpha = 0.5 * np.log((w_pp + smooth) / (w_pm + smooth))
            beta = 0.5 * np.log((w_mm + smooth) / (w_mp + smooth))
            t_weak = time.perf_counter() - t0
            hidx = builder.add_hypotheses(hyps)
            new = builder.add_vars(np.repeat(hidx, K), np.arange(K))
            coef = builder.coef.copy()
            coef[new] = M * (alpha + beta) / 2.0  # f = (a+b)/2 phi + (a-b)/2
            coef[bias] += M * (alpha - beta) / 2.0
            builder.set_coef(it, coef)
            f = np.where(pos, alpha, -beta)
            F += f[:, None] * M[None, :]
            z = np.where(own, -np.inf, -(F[np.arange(m), y][:, None] - F) / 2.0)
            obj = np.exp(logsumexp(z) - np.log(m * (K - 1)))
            if record(it, obj, F, edge=float(gains[0]), t_weak=t_weak):
                return False
        return False


@register
class AdaBoostMO(_StageWise):
    __doc__ = (
        """AdaBoost.MO (Schapire & Singer 1999): output codes with one weak learner per code
    column and round, loss-based decoding ``argmin_k sum_l exp(-M_kl f_l(x))``.
    """
        + _HEAD
        + """    code : {"random", "ova", "exhaustive"}, default="random"
        The code matrix: "ova" (one-vs-all, L = K columns), "random" (dense random +-1
        code) or "exhaustive" (all 2^(K-1) - 1 distinct splits; K <= 12).
    n_codes : int or None, default=None
        Columns L of the "random" code (None: 2K).
"""
        + _TAIL
        + """    code_ : ndarray of shape (n_classes, L)
        The +-1 code matrix used.
"""
        + _example("AdaBoostMO")
        + """
    References
    ----------
    Schapire & Singer, Machine Learning 1999 [Schapire1999] (full citation:
    docs/references.md).
    """
    )

    def __init__(
        self,
        *,
        max_iter: int = 100,
        weak_learner="stump",
        code: str = "random",
        n_codes: int | None = None,
        max_time=None,
        random_state=None,
        verbose: int = 0,
        callback=None,
    ):
        store_params(self, locals())

    _parameter_constraints = {
        **MultiClassBoosting._parameter_constraints,
        "code": [Options("ova", "random", "exhaustive")],
        "n_codes": [None, POSITIVE_INT],
    }

    def _make_code(self, K: int, rng) -> np.ndarray:
        if self.code == "ova":
            return np.where(np.eye(K) > 0, 1.0, -1.0)
        if self.code == "exhaustive":
            if K > 12:
                raise ValueError("code='exhaustive' needs at most 12 classes")
            cols = np.arange(1, 2 ** (K - 1))  # class K-1 always -1: one of each pair
            return np.where((cols[None, :] >> np.arange(K)[:, None]) & 1, 1.0, -1.0)
        L = int(self.n_codes) if self.n_codes is not None else 2 * K
        M = rng.choice([-1.0, 1.0], size=(K, L))
        for col in range(L):  # no constant column
            while np.all(M[:, col] == M[0, col]):
                M[:, col] = rng.choice([-1.0, 1.0], size=K)
        return M

    def _n_outputs(self, n_classes: int) -> int:
        return self.code_.shape[1]

    def _decode(self, raw):
        return -logsumexp(-raw[:, None, :] * self.code_[None, :, :], axis=2)

    def _boost(self, X, y, K, weak, builder, record):
        prepared = weak.prepare(X)
        M = self.code_
        L = M.shape[1]
        Yb = M[y]  # (m, L) binary labels of every code column
        f = np.zeros_like(Yb)
        for it in range(int(self.max_iter)):
            t0 = time.perf_counter()
            D = _softmax_weights(-Yb * f)
            hyps, gains = weak.best(prepared, D * Yb)  # one weak learner per column
            edge = float(gains.sum())
            a = edge_weight(edge)
            t_weak = time.perf_counter() - t0
            hidx = builder.add_hypotheses(hyps)
            new = builder.add_vars(hidx, np.arange(L))
            coef = builder.coef.copy()
            coef[new] = a
            builder.set_coef(it, coef)
            f += a * hyps.evaluate(X).T
            obj = np.exp(logsumexp(-Yb * f) - np.log(Yb.size))
            if record(it, obj, f, edge=edge, t_weak=t_weak) or edge >= EDGE_CAP:
                return edge >= EDGE_CAP
        return False

    def _prepare_fit(self, n_classes: int) -> None:
        self.code_ = self._make_code(n_classes, self._rng())

    def _extra_state(self):
        return {}, {"code": self.code_}

    def _set_extra_state(self, meta, arrays) -> None:
        self.code_ = np.asarray(arrays["code"], dtype=np.float64)
