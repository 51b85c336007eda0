"""Restricted master problems of totally-corrective boosting (seed 002, Sec. 3.1, 3.3).

With the margin matrix ``M[i, t] = y_i h_t(x_i)`` of the selected weak learners, weights
``w >= 0`` (weak-learner classes closed under negation make the sign constraint free),
``c = C / n`` and ``m = M w``::

    min_{w >= 0}  R(w) + c sum_i L(m_i),     R(w) = ||w||_1  or  1/2 ||w||^2,

``L`` the hinge, exponential or logistic loss ([Sun2012 eqs. 3.7/3.8] with ``lambda = 1``
and the loss weighted by ``C`` times the mean, as StructBoost's ``C``; the thesis's
``lambda sum w_t^2`` is written here ``1/2 ||w||^2``).  The Lagrange dual in the
sample weights ``a_i in [0, c]`` is::

    max_a  sum_i phi(a_i) - R*(M^T a),

``phi(a) = a`` (hinge), ``a - a log(a / c)`` (exponential), ``-c [p log p + (1-p) log(1-p)]``
with ``p = a / c`` (logistic); ``R*(g) = 0`` if ``max g <= 1`` else ``+inf`` (L1) and
``1/2 ||[g]_+||^2`` (L2).  At a primal point the weights are ``a_i = -c L'(m_i)`` (thesis
[Sun2012 eq. 3.30]; the hinge takes the master's multipliers).

Solvers: L1 hinge (LPBoost) -- the LP with ``scipy.optimize.linprog``; L2 hinge -- the
smooth box-constrained dual by L-BFGS-B; exponential / logistic -- the primal by
L-BFGS-B on ``w >= 0``, warm started from the previous weights.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, minimize
from scipy.special import expit

__all__ = ["LOSSES", "dual_objective", "loss_weights", "primal_objective", "solve_master"]

LOSSES = ("hinge", "exp", "logistic")
_EXP_CAP = 700.0  # exp(700) is finite in float64


def _loss(m, loss):
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - m)
    if loss == "exp":
        return np.exp(np.minimum(-m, _EXP_CAP))
    return np.logaddexp(0.0, -m)


def _dloss(m, loss):
    if loss == "exp":
        return -np.exp(np.minimum(-m, _EXP_CAP))
    return -expit(-m)


def primal_objective(M, w, c, loss, penalty) -> float:
    m = M @ w if w.size else np.zeros(M.shape[0])
    reg = float(w.sum()) if penalty == "l1" else 0.5 * float(w @ w)
    return reg + c * float(_loss(m, loss).sum())


def loss_weights(m, c, loss):
    """``a_i = -c L'(m_i)`` (for the hinge the sub-gradient with weight c where m < 1)."""
    if loss == "hinge":
        return np.where(m < 1.0, c, 0.0)
    return -c * _dloss(m, loss)


def _xlogx(p):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)


def _phi(a, c, loss):
    if loss == "hinge":
        return float(a.sum())
    if loss == "exp":  # a - a log(a/c) = c (p - p log p)
        p = a / c
        return float(c * (p - _xlogx(p)).sum())
    p = np.clip(a / c, 0.0, 1.0)
    return float(-c * (_xlogx(p) + _xlogx(1.0 - p)).sum())


def dual_objective(a, g, c, loss, penalty, gain_max=None) -> float:
    """A lower bound from the sample weights ``a`` with ``g = M^T a`` (selected learners).

    L1: ``a`` is scaled by ``1 / max(1, max g, gain_max)`` to satisfy every dual
    constraint; ``gain_max`` is the largest ``sum_i a_i y_i h(x_i)`` over the whole
    weak-learner class, which makes the bound hold for the full problem (when the weak
    learner's search is exact).  L2: the bound of the restricted problem.  For the
    exponential loss ``a_i <= c`` is not required.
    """
    if penalty == "l1":
        s = max(1.0, float(g.max()) if g.size else 0.0, gain_max or 0.0)
        return _phi(a / s, c, loss)
    gp = np.maximum(g, 0.0)
    return _phi(a, c, loss) - 0.5 * float(gp @ gp)


def _lp_l1_hinge(M, c):
    n, T = M.shape
    A = sp.hstack([-sp.csr_matrix(M), -sp.identity(n, format="csr")], format="csr")
    cost = np.concatenate([np.ones(T), np.full(n, c)])
    res = linprog(cost, A_ub=A, b_ub=-np.ones(n), bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"linprog failed: {res.message}")
    a = np.clip(-res.ineqlin.marginals, 0.0, c)
    return res.x[:T], a


def _lbfgsb(f, x0, bounds, tol):
    """The minimiser of ``f`` (value, gradient) in the box, by L-BFGS-B to ``gtol``."""
    options = {"ftol": 1e-15, "gtol": tol, "maxiter": 20000}
    return minimize(f, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=options).x


def _dual_l2_hinge(M, c, a0, tol):
    n = M.shape[0]

    def f(a):
        g = np.maximum(M.T @ a, 0.0)
        return -(a.sum() - 0.5 * g @ g), -(1.0 - M @ g)

    x0 = np.full(n, c) if a0 is None else np.clip(a0, 0.0, c)
    a = _lbfgsb(f, x0, [(0.0, c)] * n, tol)
    return np.maximum(M.T @ a, 0.0), a


def _primal_smooth(M, c, loss, penalty, w0, tol):
    T = M.shape[1]

    def f(w):
        m = M @ w
        reg, dreg = (w.sum(), np.ones(T)) if penalty == "l1" else (0.5 * w @ w, w)
        return reg + c * _loss(m, loss).sum(), dreg + c * (M.T @ _dloss(m, loss))

    w = _lbfgsb(f, w0, [(0.0, None)] * T, tol)
    return w, loss_weights(M @ w, c, loss)


def solve_master(M, c, loss, penalty, *, w0=None, a0=None, tol=1e-10):
    """Optimal ``w`` on the columns of ``M`` and the sample weights ``a``."""
    T = M.shape[1]
    if w0 is None or w0.shape[0] != T:
        w_init = np.zeros(T)
        if w0 is not None:
            w_init[: w0.shape[0]] = w0
        w0 = w_init
    if loss == "hinge" and penalty == "l1":
        return _lp_l1_hinge(M, c)
    if loss == "hinge":
        return _dual_l2_hinge(M, c, a0, tol)
    return _primal_smooth(M, c, loss, penalty, w0, tol)
