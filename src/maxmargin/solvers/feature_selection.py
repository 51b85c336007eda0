"""Restricted problems of forward feature selection by column generation (seed 002,
Sec. 2.4): linear classifiers on a subset of the columns of X.

The problems, with ``m_i = y_i (<w, x_i> + b)`` and scikit-learn's ``C``:

* ``penalty="l2"``: ``1/2 ||w||^2 + C sum_i l(m_i)``; the intercept is the weight of a
  constant column (regularised, as liblinear);
* ``penalty="l1"``: ``||w||_1 + C sum_i l(m_i)`` with an unpenalised intercept,

``l`` the hinge ``max(0, 1 - m)``, the squared hinge ``max(0, 1 - m)^2`` (L2 only) or the
logistic loss ``log(1 + exp(-m))``.

Each solver returns ``(w, b, a, objective)`` where ``a_i = -C l'(m_i) >= 0`` are the
dual variables (for the hinge: the multipliers of the margin constraints, a sub-gradient
choice, thesis eq. 2.86-2.87).  The gradient of the loss term along an unselected column
j is ``-s_j`` with ``s_j = sum_i a_i y_i x_ij`` -- the column-generation score of
thesis eq. 2.85 / 2.90.

Solvers: L2 hinge -- dual coordinate descent (:func:`maxmargin.solvers.svm.fit_dual_cd`,
warm started from the previous multipliers); L2 squared hinge -- a finite Newton method
(:class:`SquaredHingeNewton`) on dense restricted data of at most ``NEWTON_MAX_COLUMNS``
columns, else dual CD; L2 logistic -- L-BFGS; L1 hinge -- the LP
by ``scipy.optimize.linprog`` (HiGHS), duals from its marginals; L1 logistic -- L-BFGS-B
on ``w = u - v``, ``u, v >= 0``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import linprog, minimize
from scipy.special import expit

from maxmargin.solvers.svm import DENSE_FILL, DualCDData, dual_cd_data, fit_dual_cd

__all__ = [
    "NEWTON_MAX_COLUMNS",
    "SquaredHingeNewton",
    "column_scores",
    "dual_value",
    "restricted_data",
    "solve_restricted",
    "with_const",
]

#: the squared-hinge problems use the Newton solver on at most this many columns (its
#: Cholesky factorisations cost ``k^3 / 3`` per iteration), dual CD above
NEWTON_MAX_COLUMNS = 400


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


class SquaredHingeNewton:
    """A finite Newton method for ``1/2 ||w||^2 + C sum_i max(0, 1 - y_i <w, x_i>)^2`` on a
    dense X (Keerthi & DeCoste 2005): on the active set ``A = {i : m_i < 1}`` the objective
    is the quadratic ``1/2 ||w||^2 + C ||y_A - X_A w||^2``, whose minimiser ``(I + 2C
    X_A^T X_A)^{-1} 2C X_A^T y_A`` (a Cholesky solve) gives the direction, followed by an
    exact line search along it (the objective is a convex piecewise quadratic in the step
    length); it ends after finitely many steps, once ``A`` no longer changes.

    Kept between calls (feature selection's restricted problems): the weights and the
    Gram matrix ``G = X_A^T X_A`` and ``r = X_A^T y_A`` of the active rows, updated by the
    rows entering or leaving ``A`` (rank updates, or recomputed when more rows change
    than half the active set), by columns appended (:meth:`solve` on an X with more
    columns: the new ones just before the last, the constant column) and by columns
    removed (:meth:`drop`).  Every solve ends with the duality gap of its iterate: the
    dual variables ``a_i = 2C max(0, 1 - m_i)`` give the lower bound ``sum_i a_i -
    sum_i a_i^2 / (4C) - 1/2 ||X^T (a * y)||^2``.
    """

    def __init__(self, y, C, w0=None):
        self.y = np.asarray(y, dtype=np.float64)
        self.C = float(C)
        self.w = None if w0 is None else np.array(w0, dtype=np.float64)
        self.act = None
        self.G = None
        self.r = None
        self.n_iter = 0  # Newton steps over all solves
        self._changed = 0  # rows updated since G was last recomputed

    def drop(self, keep):
        """Remove the columns where the mask ``keep`` (over all but the last column) is
        False."""
        if self.w is None:
            return
        ix = np.append(np.flatnonzero(keep), len(keep))
        self.w = self.w[ix]
        if self.G is not None:
            self.G = self.G[np.ix_(ix, ix)]
            self.r = self.r[ix]

    def _recompute(self, X):
        XA = X[self.act]
        self.G = XA.T @ XA
        self.r = XA.T @ self.y[self.act]
        self._changed = 0

    def _sync_columns(self, X):
        k1 = X.shape[1]
        if self.w is not None and self.w.shape[0] > k1:
            raise ValueError(f"X has {k1} columns, fewer than the state's {self.w.shape[0]}")
        if self.w is None:
            self.w = np.zeros(k1)
        if self.G is None:  # first solve: the active rows of the starting point
            if self.w.shape[0] < k1:
                self.w = np.concatenate([self.w[:-1], np.zeros(k1 - self.w.shape[0]), self.w[-1:]])
            self.act = self.y * (X @ self.w) < 1.0
            self._recompute(X)
            return
        kp1 = self.w.shape[0]
        if kp1 == k1:
            return
        old = np.append(np.arange(kp1 - 1), k1 - 1)
        new = np.arange(kp1 - 1, k1 - 1)
        XA = X[self.act]
        B = XA.T @ XA[:, new]
        G = np.empty((k1, k1))
        G[np.ix_(old, old)] = self.G
        G[:, new] = B
        G[new, :] = B.T
        r = np.empty(k1)
        r[old] = self.r
        r[new] = XA[:, new].T @ self.y[self.act]
        w = np.zeros(k1)
        w[old] = self.w
        self.G, self.r, self.w = G, r, w

    def _set_active(self, X, act):
        enter = act & ~self.act
        leave = self.act & ~act
        ne, nl = int(enter.sum()), int(leave.sum())
        if ne + nl == 0:
            return
        self.act = act
        self._changed += ne + nl
        if ne + nl > 0.5 * max(int(act.sum()), 1) or self._changed > X.shape[0]:
            self._recompute(X)
            return
        y = self.y
        if ne:
            Xe = X[enter]
            self.G += Xe.T @ Xe
            self.r += Xe.T @ y[enter]
        if nl:
            Xl = X[leave]
            self.G -= Xl.T @ Xl
            self.r -= Xl.T @ y[leave]

    def _bounds(self, X, m):
        """(primal, dual bound, a) at the current weights with margins ``m``."""
        C = self.C
        h = np.maximum(0.0, 1.0 - m)
        a = 2.0 * C * h
        v = X.T @ (a * self.y)
        primal = 0.5 * float(self.w @ self.w) + C * float(h @ h)
        dual = float(a.sum()) - float(a @ a) / (4.0 * C) - 0.5 * float(v @ v)
        return primal, dual, a

    def _line_search(self, d, m, dm):
        """The step ``t >= 0`` minimising the objective at ``w + t d`` (margins ``m + t
        dm``): the root of its derivative, piecewise linear and non-decreasing,
        by Newton steps safeguarded by bisection."""
        C = self.C
        wd = float(self.w @ d)
        dd = float(d @ d)

        def deriv(t):
            h = 1.0 - m - t * dm
            on = h > 0.0
            g = wd + t * dd - 2.0 * C * float(h[on] @ dm[on])
            return g, dd + 2.0 * C * float(dm[on] @ dm[on])

        g0, _ = deriv(0.0)
        if g0 >= 0.0:
            return 0.0
        lo, hi, t = 0.0, np.inf, 1.0
        scale = abs(g0)
        for _ in range(60):
            g, h2 = deriv(t)
            if abs(g) <= 1e-13 * scale:
                return t
            if g < 0.0:
                lo = t
            else:
                hi = t
            t_new = t - g / h2 if h2 > 0.0 else np.inf
            if not lo < t_new < hi:
                t_new = 2.0 * lo if not np.isfinite(hi) else 0.5 * (lo + hi)
            t = t_new
        return t

    def solve(self, X, tol=1e-8, max_iter=100):
        """Newton steps on the dense X (C-ordered, the constant column last, as
        :func:`with_const`) from the kept state until the relative duality gap is at most
        ``tol`` (checked before the first step too) or after ``max_iter`` steps.  Returns
        ``(w, a, primal, dual)``."""
        X = np.asarray(X)
        self._sync_columns(X)
        y = self.y
        m = y * (X @ self.w)
        primal, dual, a = self._bounds(X, m)
        it = 0
        while it < max_iter and primal - dual > tol * max(abs(primal), 1e-12):
            self._set_active(X, m < 1.0)
            H = 2.0 * self.C * self.G
            H[np.diag_indices_from(H)] += 1.0
            wbar = cho_solve(cho_factor(H, check_finite=False), 2.0 * self.C * self.r,
                             check_finite=False)  # fmt: skip
            d = wbar - self.w
            dm = y * (X @ d)
            t = self._line_search(d, m, dm)
            it += 1
            if t <= 0.0:
                break
            self.w = self.w + t * d
            m = y * (X @ self.w)
            primal, dual, a = self._bounds(X, m)
        self.n_iter += it
        return self.w.copy(), a, primal, dual


def _l2_squared_hinge(X, y, C, tol, warm, Xa=None, max_iter=None):
    Xa = dual_cd_data(with_const(X)) if Xa is None else Xa
    if Xa.dense and Xa.M.shape[1] <= NEWTON_MAX_COLUMNS:
        nt = warm.get("newton")
        if nt is None:
            nt = warm["newton"] = SquaredHingeNewton(y, C, w0=warm.get("w_full"))
        w, a, primal, _ = nt.solve(Xa.M, tol=tol, max_iter=100 if max_iter is None else max_iter)
        return w[:-1], float(w[-1]), a, primal
    warm.pop("newton", None)  # too many columns (or sparse): dual CD, as for the hinge
    sol = fit_dual_cd(
        Xa, y, C, loss="squared_hinge", tol=tol, max_iter=100_000 if max_iter is None else max_iter,
        rng=0, alpha0=warm.get("a"), active0=warm.get("active"),
        certify=max_iter is None,
    )  # fmt: skip
    warm["active"] = sol.active
    return sol.w[:-1], float(sol.w[-1]), sol.alpha.copy(), sol.primal


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
    ("squared_hinge", "l2"): _l2_squared_hinge,
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

    L2: ``D(a) = sum_i phi(a_i) - 1/2 ||s||^2`` with ``phi(a) = a`` (hinge), ``a - a^2 /
    (4C)`` (squared hinge) or the binary
    entropy ``-a log(a/C) - (C - a) log(1 - a/C)`` (logistic), where the intercept column
    is one of the columns of ``s_all``.  L1: the dual constraint ``|s_j| <= 1`` and
    ``sum a_i y_i = 0``; ``a`` is scaled by ``1 / max(1, max_j |s_j|)`` to be feasible
    and ``D = sum_i phi(a_i)`` (``y^T a = 0`` holds at a restricted optimum with a free
    intercept).
    """

    def phi(a):
        if loss == "hinge":
            return float(a.sum())
        if loss == "squared_hinge":
            return float(a.sum()) - float(a @ a) / (4.0 * C)
        p = np.clip(a / C, 1e-300, 1.0)
        q = np.clip(1.0 - a / C, 1e-300, 1.0)
        return float(-C * (p * np.log(p) + q * np.log(q)).sum())

    if penalty == "l2":
        return phi(a) - 0.5 * float(s_all @ s_all)
    scale = max(1.0, float(np.max(np.abs(s_all))) if s_all.size else 1.0)
    return phi(a / scale)
