"""Operating points of cascade stages (thesis seed 002, Sec. 4.3, after Sun et al. [83]).

A cascade of ``n`` stages must reach recall ``A`` and false acceptance rate (FAR) ``B``:
``prod a_i >= A`` and ``prod b_i <= B``.  A stage's candidate operating points are its
ROC points ``(alpha_k, beta_k)`` (recall and FAR of the threshold ``t_k`` on validation
scores).  Three rules decide whether a stage is good enough and which point it takes:

* **fixed rule** ([Sun2012 eq. 4.51]): the point must reach ``(A^(1/n), B^(1/n))``; among the points
  that do, the one with the lowest FAR is taken.
* **one-point planning** ([Sun2012 eq. 4.52]): the point must lie on or above the *cascade
  indifference curve* ``{(A^(m/n), B^(m/n)) : 1 <= m <= n}`` (continuous ``m``): repeating
  it ``n/m`` times meets the goal.  With ``m_b = n log beta / log B`` and ``m_a = n log
  alpha / log A`` this is ``max(1, m_a) <= min(n, m_b)``.  Among such points: lowest FAR
  (``select="min_far"``, the thesis's implementation), highest recall (``"max_recall"``)
  or highest curve ``A* = B^(log alpha / log beta)`` (``"max_curve"``).
* **two-point planning** ([Sun2012 eq. 4.54] / its log form 4.55): the LP
  ``max sum_k x_k log alpha_k  s.t.  sum_k x_k log beta_k <= log B,  sum_k x_k <= n,
  x >= 0``; the goal is reachable when ``exp(optimum) >= A``.  A vertex optimum uses at
  most two points; the stage takes the one with the smaller FAR.  Solved by HiGHS.

When a rule's goal cannot be met (the stage hit its weak-classifier limit), Sec. 4.3.4's
fallbacks keep the FAR goal and give up recall (``fallback="far"``): fixed rule -- the
highest recall with ``beta <= B^(1/n)``; one-point -- the highest ``A*`` with ``m_b >= 1``;
two-point -- the LP's smaller-FAR point (or, if the LP is infeasible, the highest recall
with ``beta <= B^(1/n)``).  The "reversed strategy" the section mentions keeps the recall
goal and gives up FAR (``fallback="recall"``, the same for every rule): the lowest FAR
with ``alpha >= A^(1/n)`` (the highest recall if no point has it).  After a stage takes
``(a, b)`` the remaining goal is ``A <- A / a``, ``B <- B / b``, ``n <- n - 1``.

Corrections to the seed's text (see docs/detection.md): [Sun2012 eq. 4.58] prints ``B <- B / a_i``
for ``B <- B / b_i``; [Sun2012 eq. 4.57] prints ``argmax log alpha / log beta``, but ``A* = B^(log
alpha / log beta)`` with ``B < 1`` is largest where that ratio is *smallest*.

An empirical FAR of 0 (no validation negative accepted) is counted as ``1 / (2 n_neg)``,
so every ``log beta`` is finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np

from maxmargin.solvers._highs import new_highs

__all__ = [
    "OperatingPoint",
    "fixed_rule",
    "one_point",
    "recall_fallback",
    "roc_points",
    "select_operating_point",
    "two_point",
    "two_point_lp",
]

RULES = ("fixed", "one-point", "two-point")


@dataclass(frozen=True)
class OperatingPoint:
    index: int  # into the ROC arrays
    threshold: float
    recall: float
    far: float
    attained: bool  # the rule's goal is met


def roc_points(scores_pos, scores_neg):
    """Thresholds (midpoints between distinct scores, plus one below all) and the recall
    and FAR of accepting ``score > threshold``; points with recall 0 are left out."""
    sp_ = np.sort(np.asarray(scores_pos, dtype=np.float64))
    sn = np.sort(np.asarray(scores_neg, dtype=np.float64))
    if len(sp_) == 0 or len(sn) == 0:
        raise ValueError("need positive and negative scores for a ROC curve")
    u = np.unique(np.concatenate([sp_, sn]))
    thr = np.concatenate([[u[0] - 1.0], (u[:-1] + u[1:]) / 2.0])
    recall = 1.0 - np.searchsorted(sp_, thr, side="right") / len(sp_)
    far = 1.0 - np.searchsorted(sn, thr, side="right") / len(sn)
    keep = recall > 0
    far = np.maximum(far, 0.5 / len(sn))
    return thr[keep], recall[keep], far[keep]


def _check(alpha, beta, A, B, n):
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    if alpha.shape != beta.shape or alpha.ndim != 1 or len(alpha) == 0:
        raise ValueError("alpha and beta must be non-empty 1-d arrays of the same length")
    if np.any((alpha <= 0) | (alpha > 1) | (beta <= 0) | (beta > 1)):
        raise ValueError("ROC points must lie in (0, 1]")
    if not (0 < A <= 1 and 0 < B < 1 and n >= 1):
        raise ValueError(f"need 0 < A <= 1, 0 < B < 1 and n >= 1; got A={A}, B={B}, n={n}")
    return alpha, beta


def _pick(idx, key):
    return int(idx[np.argmin(key[idx])])


def fixed_rule(alpha, beta, A, B, n):
    """(index, attained) of the fixed rule."""
    alpha, beta = _check(alpha, beta, A, B, n)
    a, b = A ** (1.0 / n), B ** (1.0 / n)
    ok = np.flatnonzero((alpha >= a) & (beta <= b))
    if len(ok):
        return _pick(ok, beta), True
    return _fallback_far(alpha, beta, b), False


def _fallback_far(alpha, beta, b):
    ok = np.flatnonzero(beta <= b)
    if len(ok):
        return int(ok[np.argmax(alpha[ok])])
    return int(np.argmin(beta))


def one_point(alpha, beta, A, B, n, select="min_far"):
    """(index, attained) of one-point planning."""
    alpha, beta = _check(alpha, beta, A, B, n)
    m_b = n * np.log(beta) / np.log(B)
    if A < 1:
        m_a = n * np.log(alpha) / np.log(A)
    else:  # recall 1 is needed at every repetition
        m_a = np.where(alpha >= 1.0, 0.0, np.inf)
    ok = np.flatnonzero(np.maximum(1.0, m_a) <= np.minimum(n, m_b) + 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(alpha) / np.log(beta)  # A* = B ** ratio: larger A* for smaller ratio
    ratio = np.where(np.isfinite(ratio), ratio, np.inf)
    if len(ok):
        if select == "min_far":
            return _pick(ok, beta), True
        if select == "max_recall":
            return _pick(ok, -alpha), True
        if select == "max_curve":
            return _pick(ok, ratio), True
        raise ValueError(f"select must be 'min_far', 'max_recall' or 'max_curve', got {select!r}")
    cand = np.flatnonzero(m_b >= 1.0)
    if len(cand):
        return _pick(cand, ratio), False
    return int(np.argmin(beta)), False


def two_point_lp(alpha, beta, B, n):
    """Solve [Sun2012 eq. 4.55] with HiGHS; returns ``(x, optimum)`` or ``(None, -inf)`` if
    infeasible."""
    la, lb = np.log(alpha), np.log(beta)
    K = len(la)
    h = new_highs()
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    h.addVars(K, np.zeros(K), np.full(K, inf))
    h.changeColsCost(K, np.arange(K, dtype=np.int32), -la)  # HiGHS minimises
    idx = np.arange(K, dtype=np.int32)
    h.addRow(-inf, float(np.log(B)), K, idx, lb)
    h.addRow(-inf, float(n), K, idx, np.ones(K))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None, -np.inf
    x = np.maximum(np.asarray(h.getSolution().col_value), 0.0)
    return x, float(x @ la)


def two_point(alpha, beta, A, B, n):
    """(index, attained, x) of two-point planning."""
    alpha, beta = _check(alpha, beta, A, B, n)
    x, opt = two_point_lp(alpha, beta, B, n)
    if x is None:
        return _fallback_far(alpha, beta, B ** (1.0 / n)), False, None
    used = np.flatnonzero(x > 1e-9 * max(1.0, x.max()))
    k = _pick(used, beta) if len(used) else int(np.argmin(beta))
    return k, bool(opt >= np.log(A) - 1e-12), x


def recall_fallback(alpha, beta, A, n):
    """Index of the lowest-FAR point with recall ``>= A^(1/n)`` (else the highest
    recall): Sec. 4.3.4's reversed strategy."""
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    ok = np.flatnonzero(alpha >= min(A, 1.0) ** (1.0 / n) - 1e-12)
    if len(ok):
        return _pick(ok, beta)
    return int(np.argmax(alpha))


FALLBACKS = ("far", "recall")


def select_operating_point(
    scores_pos, scores_neg, A, B, n, rule="two-point", select="min_far", fallback="far"
):
    """The stage's operating point under ``rule`` from validation scores; ``fallback``
    says what a stage that cannot reach the goal gives up (see the module docstring)."""
    if fallback not in FALLBACKS:
        raise ValueError(f"fallback must be one of {FALLBACKS}, got {fallback!r}")
    thr, alpha, beta = roc_points(scores_pos, scores_neg)
    if rule == "fixed":
        k, ok = fixed_rule(alpha, beta, A, B, n)
    elif rule == "one-point":
        k, ok = one_point(alpha, beta, A, B, n, select=select)
    elif rule == "two-point":
        k, ok, _ = two_point(alpha, beta, A, B, n)
    else:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if not ok and fallback == "recall":
        k = recall_fallback(alpha, beta, A, n)
    return OperatingPoint(k, float(thr[k]), float(alpha[k]), float(beta[k]), bool(ok))
