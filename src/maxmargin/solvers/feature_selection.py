"""Restricted problems of forward feature selection by column generation (seed 002,
Sec. 2.4): linear classifiers on a subset of the columns of X.

The problems, with ``m_i = y_i (<w, x_i> + b)`` and scikit-learn's ``C``:

* ``penalty="l2"``: ``1/2 ||w||^2 + C sum_i l(m_i)``; the intercept is the weight of a
  constant column (regularised, as liblinear);
* ``penalty="l1"``: ``||w||_1 + C sum_i l(m_i)`` with an unpenalised intercept,

``l`` the hinge ``max(0, 1 - m)`` or the logistic loss ``log(1 + exp(-m))``.

Each solver returns ``(w, b, a, objective)`` where ``a_i = -C l'(m_i) >= 0`` are the
dual variables (for the hinge: the multipliers of the margin constraints, a sub-gradient
choice, thesis eq. 2.86-2.87).  The gradient of the loss term along an unselected column
j is ``-s_j`` with ``s_j = sum_i a_i y_i x_ij`` -- the column-generation score of
thesis eq. 2.85 / 2.90.

Solvers: L2 hinge -- dual coordinate descent (:func:`maxmargin.solvers.svm.fit_dual_cd`,
warm started from the previous multipliers); L2 logistic -- L-BFGS; L1 hinge -- the LP
by ``scipy.optimize.linprog`` (HiGHS), duals from its marginals; L1 logistic -- L-BFGS-B
on ``w = u - v``, ``u, v >= 0``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, minimize
from scipy.special import expit

from maxmargin.solvers.svm import DENSE_FILL, DualCDData, dual_cd_data, fit_dual_cd

__all__ = ["column_scores", "dual_value", "restricted_data", "solve_restricted", "with_const"]


def _logistic(m):
    return np.logaddexp(0.0, -m)


def column_scores(X, y, a):
    """``s_j = sum_i a_i y_i x_ij`` for every column; ``y`` and ``a`` may be (n, k) for k
    problems at once (one matrix product), giving (d, k) scores."""
    ay = a * y
    if ay.ndim == 1:
        return np.asarray(X.T @ ay).ravel()
    # (k, n) @ (n, d) reads a C-ordered X row by row: twice as fast as X.T @ ay here
    return np.asarray(ay.T @ X).T


def _with_const(X, scale=1.0):
    col = np.full((X.shape[0], 1), scale)
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(col)], format="csr")
    return np.hstack([X, col])


def _l2_hinge(X, y, C, tol, warm, Xa=None, max_iter=None):
    Xa = dual_cd_data(with_const(X)) if Xa is None else Xa
    alpha0 = warm.get("a")
    max_iter = 100_000 if max_iter is None else max_iter
    # every solve starts from the last solve's active set: the gap passes return any
    # sample the new columns made violating.  A capped (pricing) solve skips the gap
    # check (a pass over every sample) after its last epoch when an earlier one was
    # made: the pricing needs only approximate multipliers, and the objective of the best
    # checked iterate is still a valid bound
    capped = max_iter < 100_000
    act = warm.get("active")
    sol = fit_dual_cd(
        Xa, y, C, loss="hinge", tol=tol, max_iter=max_iter, rng=0, alpha0=alpha0,
        active0=act, certify=not capped,
    )  # fmt: skip
    warm["active"] = sol.active
    w = sol.w
    return w[:-1], float(w[-1]), sol.alpha.copy(), sol.primal


def _l2_logistic(X, y, C, tol, warm, Xa=None, max_iter=None):
    Xa = with_const(X) if Xa is None else Xa.M
    d = Xa.shape[1]
    w0 = np.zeros(d)
    prev = warm.get("w_full")
    if prev is not None:
        w0[: prev.shape[0] - 1] = prev[:-1]
        w0[-1] = prev[-1]

    def f(w):
        m = y * (Xa @ w)
        g = -C * expit(-m) * y
        return 0.5 * w @ w + C * _logistic(m).sum(), w + np.asarray(Xa.T @ g).ravel()

    res = minimize(f, w0, jac=True, method="L-BFGS-B", options={"gtol": tol, "maxiter": 10000})
    w = res.x
    m = y * (Xa @ w)
    return w[:-1], float(w[-1]), C * expit(-m), float(res.fun)


def _l1_hinge(X, y, C, tol, warm, Xa=None, max_iter=None):
    n, k = X.shape
    Xs = sp.csr_matrix(X)
    Y = sp.diags(y)
    # variables: u (k), v (k), b (1, free), xi (n);  -y_i(x_i (u - v) + b) - xi_i <= -1
    A = sp.hstack(
        [-Y @ Xs, Y @ Xs, sp.csr_matrix(-y[:, None]), -sp.identity(n, format="csr")], format="csr"
    )
    cost = np.concatenate([np.ones(2 * k), [0.0], np.full(n, C)])
    bounds = [(0, None)] * (2 * k) + [(None, None)] + [(0, None)] * n
    res = linprog(cost, A_ub=A, b_ub=-np.ones(n), bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"linprog failed: {res.message}")
    z = res.x
    w = z[:k] - z[k : 2 * k]
    a = np.clip(-res.ineqlin.marginals, 0.0, C)
    return w, float(z[2 * k]), a, float(res.fun)


def _l1_logistic(X, y, C, tol, warm, Xa=None, max_iter=None):
    k = X.shape[1]
    z0 = np.zeros(2 * k + 1)
    prev = warm.get("z")
    if prev is not None:
        kp = (prev.shape[0] - 1) // 2
        z0[:kp] = prev[:kp]
        z0[k : k + kp] = prev[kp : 2 * kp]
        z0[-1] = prev[-1]

    def f(z):
        w = z[:k] - z[k : 2 * k]
        m = y * (X @ w + z[-1])
        g = -C * expit(-m) * y
        gw = np.asarray(X.T @ g).ravel()
        grad = np.concatenate([1.0 + gw, 1.0 - gw, [g.sum()]])
        return z[: 2 * k].sum() + C * _logistic(m).sum(), grad

    bounds = [(0, None)] * (2 * k) + [(None, None)]
    res = minimize(
        f, z0, jac=True, method="L-BFGS-B", bounds=bounds, options={"gtol": tol, "maxiter": 20000}
    )
    z = res.x
    warm["z"] = z
    w = z[:k] - z[k : 2 * k]
    m = y * (X @ w + z[-1])
    return w, float(z[-1]), C * expit(-m), float(res.fun)


_SOLVERS = {
    ("hinge", "l2"): _l2_hinge,
    ("logistic", "l2"): _l2_logistic,
    ("hinge", "l1"): _l1_hinge,
    ("logistic", "l1"): _l1_logistic,
}


def with_const(X, scale=1.0):
    """X with a constant column ``scale`` appended (the L2 problems' intercept); dense X
    gives a C-ordered array."""
    if not sp.issparse(X):
        n, k = X.shape
        out = np.empty((n, k + 1))
        out[:, :k] = X
        out[:, k] = scale
        return out
    return _with_const(X, scale)


def restricted_data(X, order, prev=None):
    """``(dual_cd_data(with_const(X[:, order])), nnz)`` -- the L2 problems' data on the
    selected columns and its number of non-zeros.  ``prev``: this function's result for a
    prefix of ``order`` (the last round); for dense X whose data stays dense (at least
    ``DENSE_FILL`` non-zero, as :func:`dual_cd_data` decides), the new data is grown
    from it: the old columns copied row by row, only the new ones gathered from X, the
    squared row norms updated.
    """
    if prev is not None and not sp.issparse(X) and prev[0].dense:
        old, nnz = prev
        kp = old.M.shape[1] - 1
        k = len(order)
        new = X[:, order[kp:]]
        nnz = nnz + int(np.count_nonzero(new))
        n = X.shape[0]
        if kp <= k and nnz >= DENSE_FILL * n * (k + 1):
            out = np.empty((n, k + 1))
            out[:, :kp] = old.M[:, :kp]
            out[:, kp:k] = new
            out[:, k] = 1.0
            sqn = old.sqn + np.einsum("ij,ij->i", new, new)
            e = np.zeros(1, dtype=np.int32)
            return DualCDData(out, e, e, np.zeros(0), out, True, sqn), nnz
    Xa = with_const(X[:, order])
    nnz = Xa.nnz if sp.issparse(Xa) else int(np.count_nonzero(Xa))
    return dual_cd_data(Xa), nnz


def solve_restricted(X, y, C, loss, penalty, *, tol=1e-8, warm=None, Xa=None, max_iter=None):
    """Solve the problem on the columns of ``X`` (possibly none: intercept only).

    ``warm`` is a dict kept between calls (previous multipliers / weights, columns
    appended at the end).  ``Xa``: ``dual_cd_data(with_const(X))`` if already formed
    (the L2 problems use it; shared by the one-vs-rest problems of a round).
    ``max_iter``: a cap on dual CD's epochs (L2 hinge; None: 100000).  Returns ``(w, b,
    a, objective)``.
    """
    warm = {} if warm is None else warm
    if X.shape[1] == 0:
        X = np.zeros((X.shape[0], 0))
    w, b, a, obj = _SOLVERS[(loss, penalty)](X, y, C, tol, warm, Xa=Xa, max_iter=max_iter)
    warm["a"] = a
    warm["w_full"] = np.append(w, b)
    return w, b, a, obj


def dual_value(a, y, s_all, C, loss, penalty):
    """A lower bound on the optimum of the problem over *all* columns, from the
    restricted problem's dual variables ``a`` and the scores ``s_all`` of every column.

    L2: ``D(a) = sum_i phi(a_i) - 1/2 ||s||^2`` with ``phi(a) = a`` (hinge) or the binary
    entropy ``-a log(a/C) - (C - a) log(1 - a/C)`` (logistic), where the intercept column
    is one of the columns of ``s_all``.  L1: the dual constraint ``|s_j| <= 1`` and
    ``sum a_i y_i = 0``; ``a`` is scaled by ``1 / max(1, max_j |s_j|)`` to be feasible
    and ``D = sum_i phi(a_i)`` (``y^T a = 0`` holds at a restricted optimum with a free
    intercept).
    """

    def phi(a):
        if loss == "hinge":
            return float(a.sum())
        p = np.clip(a / C, 1e-300, 1.0)
        q = np.clip(1.0 - a / C, 1e-300, 1.0)
        return float(-C * (p * np.log(p) + q * np.log(q)).sum())

    if penalty == "l2":
        return phi(a) - 0.5 * float(s_all @ s_all)
    scale = max(1.0, float(np.max(np.abs(s_all))) if s_all.size else 1.0)
    return phi(a / scale)
