"""Smoothed hinge losses for the fast restricted master of StructBoost.

The fast master (:mod:`maxmargin.solvers.smoothed_problem`) minimises
``1'w + C * smooth_risk(scores(w))`` over ``w >= 0`` where ``smooth_risk`` is a smooth
upper or lower approximation of the task's (weighted average) hinge.  A task supplies it
through :meth:`~maxmargin.tasks.base.StructuredTask.smoothed_risk`, which returns a
:class:`SmoothedRisk`: the true and the smoothed risk, the signed weak-learner weights of
the smoothed risk's (negative) gradient, and the dual value of those weights.

Two smoothings are used:

* **log-sum-exp** over listed outputs (every task with ``dense_outputs``): the hinge of
  example i is ``max_y a_iy`` with ``a_(i, y_i) = 0``; ``(1/beta) log sum_y exp(beta a_iy)``
  is within ``log(K)/beta`` above it, and its gradient is the softmax -- box-feasible
  m-slack duals ([Shen2014 eq. 4]).
* **Huber** per preference pair (:class:`~maxmargin.tasks.ranking.RankingTask`): ``h(t) =
  t^2 / (2 delta)`` on ``[0, delta]``, ``t - delta/2`` above, within ``delta/2`` below the
  hinge; its derivative ``clip(t / delta, 0, 1)`` is again a box-feasible dual per pair,
  and sums over all pairs of a preference graph take O(n log^2 n) (sorting, prefix sums;
  :func:`maxmargin.inference.ranking.PreferenceGraph.smoothed_hinge`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["SmoothedRisk", "softmax_rows"]


@dataclass
class SmoothedRisk:
    """A smoothed risk at given slot scores (everything per unit of C).

    ``risk``: the true weighted average hinge (``P(w) = 1'w + C risk``); ``smooth``: the
    smoothed one; ``weights``: signed weak-learner weights ``A`` (n_z, n_slots) with
    ``d smooth / dF = -A``, so a column's gain is ``C * (H A)[h, s]``; ``dual``: ``sum mu
    Delta`` of the duals ``mu = C * (the gradient's pair weights)``, per unit of C (the
    dual bound is ``C * dual / max(1, max gain)``); ``support``: task-specific, e.g. the
    softmax matrix for listed outputs (it picks the exact polish's starting rows).
    """

    risk: float
    smooth: float
    weights: np.ndarray
    dual: float
    support: object = None


@njit(cache=True)
def _shift_rows(aug, beta):  # pragma: no cover - compiled
    """``aug[i] <- beta (aug[i] - max_y aug_iy)`` in place; returns the row maxima."""
    m, K = aug.shape
    amax = np.empty(m)
    for i in range(m):
        a = aug[i, 0]
        for k in range(1, K):
            if aug[i, k] > a:
                a = aug[i, k]
        amax[i] = a
        for k in range(K):
            aug[i, k] = beta * (aug[i, k] - a)
    return amax


@njit(cache=True)
def _normalise_rows(E, amax, beta):  # pragma: no cover - compiled
    """Rows of E = exp(shifted) to softmax in place; returns ``(sum_i max_i, sum_i LSE_i)``."""
    m, K = E.shape
    hinge = 0.0
    lse = 0.0
    for i in range(m):
        z = 0.0
        for k in range(K):
            z += E[i, k]
        inv = 1.0 / z
        for k in range(K):
            p = E[i, k] * inv
            # below 1e-30 a weight is zero: float32 denormals would slow the products
            E[i, k] = p if p > 1e-30 else 0.0
        hinge += amax[i]
        lse += amax[i] + np.log(z) / beta
    return hinge, lse


def softmax_rows(aug: np.ndarray, beta: float) -> tuple[float, float]:
    """Row-wise ``softmax(beta * aug)`` in place; returns ``(sum_i max_y aug_iy,
    sum_i LSE_i)`` with ``LSE_i = (1/beta) log sum_y exp(beta aug_iy)``.  The
    exponentials are NumPy's (vectorised), the row passes numba's."""
    amax = _shift_rows(aug, beta)
    np.exp(aug, out=aug)
    return _normalise_rows(aug, amax, beta)
