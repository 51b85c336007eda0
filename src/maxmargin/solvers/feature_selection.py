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
choice, [Sun2012 eqs. 2.86-2.87]).  The gradient of the loss term along an unselected column
j is ``-s_j`` with ``s_j = sum_i a_i y_i x_ij`` -- the column-generation score of
[Sun2012 eqs. 2.85/2.90].

Solvers: L2 hinge -- dual coordinate descent (:func:`maxmargin.solvers.svm.fit_dual_cd`,
warm started from the previous multipliers); L2 squared hinge -- a finite Newton method
(:class:`SquaredHingeRounds`, compiled) while the restricted data of at most
``NEWTON_MAX_COLUMNS`` columns is dense, else dual CD; L2 logistic -- L-BFGS; L1 hinge -- the LP
by ``scipy.optimize.linprog`` (HiGHS), duals from its marginals; L1 logistic -- L-BFGS-B
on ``w = u - v``, ``u, v >= 0``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.optimize import linprog, minimize
from scipy.special import expit

from maxmargin._validation import add_intercept
from maxmargin.exceptions import warn_interrupted
from maxmargin.solvers.cholesky import chol_solve
from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.solvers.svm import DENSE_FILL, DENSE_MAX_BYTES, DualCDData, dual_cd_data, fit_dual_cd

__all__ = [
    "NEWTON_MAX_COLUMNS",
    "SelectionOptions",
    "SelectionResult",
    "SquaredHingeRounds",
    "column_scores",
    "dual_value",
    "restricted_data",
    "restricted_data_drop",
    "select_features",
    "solve_restricted",
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


def _l2_dual_cd(loss):
    """The L2 problem of ``loss`` (hinge, or the squared hinge where the Newton rounds do
    not apply: sparse restricted data or many columns) by dual coordinate descent, warm
    started from the last solve's multipliers."""

    def solve(X, y, C, tol, warm, Xa=None, max_iter=None):
        Xa = dual_cd_data(add_intercept(X)) if Xa is None else Xa
        max_iter = 100_000 if max_iter is None else max_iter
        # every solve starts from the last solve's active set: the gap passes return any
        # sample the new columns made violating.  A capped (pricing) solve skips the gap
        # check (a pass over every sample) after its last epoch when an earlier one was
        # made: the pricing needs only approximate multipliers, and the objective of the
        # best checked iterate is still a valid bound
        sol = fit_dual_cd(
            Xa, y, C, loss=loss, tol=tol, max_iter=max_iter, rng=0, alpha0=warm.get("a"),
            active0=warm.get("active"), certify=max_iter >= 100_000,
        )  # fmt: skip
        warm["active"] = sol.active
        return sol.w[:-1], float(sol.w[-1]), sol.alpha.copy(), sol.primal

    return solve


@njit(cache=True)
def _line_search_steps(M, DM, wd, dd, C, live):  # pragma: no cover - compiled
    """For each column j of the margins ``M`` and their change ``DM`` along a direction
    ``d_j`` (``wd = <w_j, d_j>``, ``dd = ||d_j||^2``): the step ``t >= 0`` minimising
    ``1/2 ||w_j + t d_j||^2 + C sum_i max(0, 1 - M_ij - t DM_ij)^2``, the root of its
    derivative ``wd + t dd - 2C sum_i max(0, 1 - M_ij - t DM_ij) DM_ij`` (piecewise linear,
    non-decreasing), by Newton steps on the derivative safeguarded by bisection; the
    first, ``t = 1``, is exact when no margin crosses 1.  0 where ``live`` is False or the
    derivative at 0 is not negative (no descent)."""
    n, c = M.shape
    out = np.zeros(c)
    for j in range(c):
        if not live[j]:
            continue
        g0 = wd[j]
        for i in range(n):
            h = 1.0 - M[i, j]
            if h > 0.0:
                g0 -= 2.0 * C * h * DM[i, j]
        if g0 >= 0.0:
            continue
        lo = 0.0
        hi = np.inf
        t = 1.0
        for _ in range(100):
            g = wd[j] + t * dd[j]
            h2 = dd[j]
            for i in range(n):
                h = 1.0 - M[i, j] - t * DM[i, j]
                if h > 0.0:
                    g -= 2.0 * C * h * DM[i, j]
                    h2 += 2.0 * C * DM[i, j] * DM[i, j]
            if abs(g) <= 1e-12 * abs(g0):
                break
            if g < 0.0:
                lo = t
            else:
                hi = t
            t_new = t - g / h2 if h2 > 0.0 else np.inf
            if not (lo < t_new < hi):
                t_new = 0.5 * (lo + hi) if hi < np.inf else 2.0 * lo
            if t_new == t:
                break
            t = t_new
        out[j] = t
    return out


# ---------------------------------------------------------------- compiled rounds
@njit(cache=True)
def _gather_rows(X, rows):  # pragma: no cover - compiled
    """``X[rows]`` as an F-ordered array (the rows of an F-ordered X, column by column)."""
    m = rows.shape[0]
    k1 = X.shape[1]
    out = np.empty((k1, m)).T
    for col in range(k1):
        for p in range(m):
            out[p, col] = X[rows[p], col]
    return out


@njit(cache=True)
def _gather_problem(X, Y, rows, j):  # pragma: no cover - compiled
    """``X[rows]`` (F-ordered) and ``Y[rows, j]``: problem j's data on the rows."""
    y = np.empty(rows.shape[0])
    for p in range(rows.shape[0]):
        y[p] = Y[rows[p], j]
    return _gather_rows(X, rows), y


@njit(cache=True)
def _gram_recompute(X, Y, act, G, r, j):  # pragma: no cover - compiled
    """``G[j] = X_A^T X_A`` and ``r[:, j] = X_A^T y_A`` over the active rows of problem j."""
    XA, yA = _gather_problem(X, Y, np.flatnonzero(act[:, j]), j)
    G[j] = np.dot(XA.T, XA)
    r[:, j] = np.dot(XA.T, yA)


@njit(cache=True)
def _gram_rank_update(X, Y, rows, G, r, j, sign):  # pragma: no cover - compiled
    """``G[j] += sign X_R^T X_R``, ``r[:, j] += sign X_R^T y_R`` for the rows R."""
    XR, yR = _gather_problem(X, Y, rows, j)
    B = np.dot(XR.T, XR)
    b = np.dot(XR.T, yR)
    k1 = B.shape[0]
    for a in range(k1):
        r[a, j] += sign * b[a]
        for q in range(k1):
            G[j, a, q] += sign * B[a, q]


@njit(cache=True)
def _active_set_update(X, Y, act, G, r, changed, M, j):  # pragma: no cover - compiled
    """Problem j's active set ``{i : M_ij < 1}``: its Gram matrix and ``r`` updated by
    the rows entering and leaving (rank updates), recomputed when more rows change than
    half the active set or more than n since the last recomputation."""
    n = X.shape[0]
    enter = np.empty(n, dtype=np.int64)
    leave = np.empty(n, dtype=np.int64)
    ne = 0
    nl = 0
    na = 0
    for i in range(n):
        new = M[i, j] < 1.0
        if new:
            na += 1
        if new != act[i, j]:
            if new:
                enter[ne] = i
                ne += 1
            else:
                leave[nl] = i
                nl += 1
            act[i, j] = new
    if ne + nl == 0:
        return
    changed[j] += ne + nl
    if ne + nl > 0.5 * max(na, 1) or changed[j] > n:
        _gram_recompute(X, Y, act, G, r, j)
        changed[j] = 0
        return
    if ne:
        _gram_rank_update(X, Y, enter[:ne], G, r, j, 1.0)
    if nl:
        _gram_rank_update(X, Y, leave[:nl], G, r, j, -1.0)


@njit(cache=True)
def _primal_and_a(W, M, C):  # pragma: no cover - compiled
    """``(A, primal)``: ``A = 2C max(0, 1 - M)`` and each problem's objective."""
    n, c = M.shape
    A = np.empty((n, c))
    primal = np.zeros(c)
    for j in range(c):
        s = 0.0
        for i in range(n):
            h = 1.0 - M[i, j]
            if h > 0.0:
                s += h * h
                A[i, j] = 2.0 * C * h
            else:
                A[i, j] = 0.0
        w2 = 0.0
        for a in range(W.shape[0]):
            w2 += W[a, j] * W[a, j]
        primal[j] = 0.5 * w2 + C * s
    return A, primal


@njit(cache=True)
def _dual_from_scores(A, V, C):  # pragma: no cover - compiled
    """``sum_i a_i - sum_i a_i^2 / (4C) - 1/2 ||v||^2`` per problem, ``V`` (k+1, c) the
    scores ``X^T (a * y)`` of the problem's columns."""
    n, c = A.shape
    dual = np.empty(c)
    for j in range(c):
        s = 0.0
        for i in range(n):
            s += A[i, j] - A[i, j] * A[i, j] / (4.0 * C)
        v2 = 0.0
        for a in range(V.shape[0]):
            v2 += V[a, j] * V[a, j]
        dual[j] = s - 0.5 * v2
    return dual


@njit(cache=True)
def _scores_of_columns(S, AY, cols):  # pragma: no cover - compiled
    """The restricted scores ``V`` (constant first, then ``cols``) read from the scores
    ``S`` (c, d) of every column of the full data."""
    c = S.shape[0]
    k = cols.shape[0]
    V = np.empty((k + 1, c))
    for j in range(c):
        V[0, j] = AY[:, j].sum()
        for q in range(k):
            V[q + 1, j] = S[j, cols[q]]
    return V


@njit(cache=True)
def _dual_from_gram(A, G, r, W, C, j):  # pragma: no cover - compiled
    """Problem j's dual bound with its scores from the Gram matrix of the active rows of
    the current iterate: ``a_i y_i = 2C (y_i - <x_i, w>)`` there (0 elsewhere), so
    ``X^T (a * y) = 2C (r - G w)`` -- no pass over X."""
    k1 = W.shape[0]
    v2 = 0.0
    for a in range(k1):
        s = r[a, j]
        for q in range(k1):
            s -= G[j, a, q] * W[q, j]
        v2 += (2.0 * C * s) ** 2
    s = 0.0
    for i in range(A.shape[0]):
        s += A[i, j] - A[i, j] * A[i, j] / (4.0 * C)
    return s - 0.5 * v2


@njit(cache=True)
def _newton_rounds_solve(X, cols, Xfull, Y, C, state, control):  # pragma: no cover - compiled
    """One restricted solve of :class:`SquaredHingeRounds` in one call: the Gram
    matrices grown by the columns ``gk1..k`` (or formed when ``gk1 == 0``, with the
    margins M), then Newton steps for every problem not yet within ``tol`` (active-set
    rank updates, Cholesky solve, exact line search, margins and the duality gap), and
    with ``price`` the scores of every column of ``Xfull`` at the final iterate.  X: the
    columns, the constant first (n, k+1); W (k+1, c) the weights in that order; M the
    margins ``Y * (X W)``.  Between steps the gap's scores ``X^T (a * y)`` come from the
    Gram matrices of the new active rows (:func:`_dual_from_gram`); the returned duals
    are computed from X itself: from the pricing product with ``price``, by a product
    with X with ``certify``, else as between steps (NaN when the capped solve's last
    step needed none).  ``state = (W, M, act, G, r, gk1, changed)``: the kept state of
    :class:`SquaredHingeRounds` (arrays updated in place or returned); ``control = (tol,
    max_iter, check_first, certify, price)``.  Returns ``(W, M, G, r, A, primal, dual,
    n_steps, S)``."""
    W, M, act, G, r, gk1, changed = state
    tol, max_iter, check_first, certify, price = control
    n, k1 = X.shape
    c = Y.shape[1]
    if gk1 == 0:
        M = Y * np.dot(X, W)
        for j in range(c):
            for i in range(n):
                act[i, j] = M[i, j] < 1.0
        G = np.empty((c, k1, k1))
        r = np.empty((k1, c))
        for j in range(c):
            _gram_recompute(X, Y, act, G, r, j)
            changed[j] = 0
    elif gk1 < k1:
        # new columns: X_A^T X_A[:, new] from each problem's active rows
        m = k1 - gk1
        Gn = np.empty((c, k1, k1))
        rn = np.empty((k1, c))
        Gn[:, :gk1, :gk1] = G
        rn[:gk1] = r
        for j in range(c):
            XA, yA = _gather_problem(X, Y, np.flatnonzero(act[:, j]), j)
            XN = XA[:, gk1:].copy()
            B = np.dot(XA.T, XN)
            b = np.dot(XN.T, yA)
            for q in range(m):
                col = gk1 + q
                rn[col, j] = b[q]
                for a in range(k1):
                    Gn[j, a, col] = B[a, q]
                    Gn[j, col, a] = B[a, q]
        G = Gn
        r = rn
    d = Xfull.shape[1]
    S = np.zeros((c, d if price else 0))
    todo = np.ones(c, dtype=np.bool_)
    A, primal = _primal_and_a(W, M, C)
    dual = np.full(c, np.nan)
    have_s = False
    exact = False  # dual computed from X at the current iterate
    if check_first or max_iter < 1:
        for j in range(c):
            _active_set_update(X, Y, act, G, r, changed, M, j)
            dual[j] = _dual_from_gram(A, G, r, W, C, j)
            todo[j] = primal[j] - dual[j] > tol * max(abs(primal[j]), 1e-12)
    it = 0
    x = np.empty(k1)
    while it < max_iter and todo.any():
        Wbar = W.copy()
        for j in range(c):
            if not todo[j]:
                continue
            _active_set_update(X, Y, act, G, r, changed, M, j)
            H = 2.0 * C * G[j]
            for a in range(k1):
                H[a, a] += 1.0
            chol_solve(np.linalg.cholesky(H), k1, 2.0 * C * r[:, j], x)
            Wbar[:, j] = x
        D = Wbar - W
        DM = Y * np.dot(X, D)
        wd = np.zeros(c)
        dd = np.zeros(c)
        for a in range(k1):
            for j in range(c):
                wd[j] += W[a, j] * D[a, j]
                dd[j] += D[a, j] * D[a, j]
        t = _line_search_steps(M, DM, wd, dd, C, todo)
        W = W + t * D
        M = M + t * DM
        it += 1
        A, primal = _primal_and_a(W, M, C)
        last = it >= max_iter
        if price and last:  # the selected columns' scores read from the pricing product
            AY = A * Y
            S = np.dot(AY.T, Xfull)
            have_s = True
            exact = True
            dual = _dual_from_scores(A, _scores_of_columns(S, AY, cols), C)
        elif certify or not last:
            for j in range(c):
                if todo[j]:
                    _active_set_update(X, Y, act, G, r, changed, M, j)
                    dual[j] = _dual_from_gram(A, G, r, W, C, j)
        else:
            for j in range(c):
                if todo[j]:
                    dual[j] = np.nan
        for j in range(c):
            gap = primal[j] - dual[j]
            todo[j] = todo[j] and t[j] > 0.0 and gap > tol * max(abs(primal[j]), 1e-12)
    if price and not have_s:
        AY = A * Y
        S = np.dot(AY.T, Xfull)
        dual = _dual_from_scores(A, _scores_of_columns(S, AY, cols), C)
    elif certify and not exact:
        dual = _dual_from_scores(A, np.dot(X.T, A * Y), C)
    return W, M, G, r, A, primal, dual, it, S


@njit(cache=True)
def _drop_columns_state(buf, k1, keep, W, M, Y, G, r, gram):  # pragma: no cover - compiled
    """Remove the columns ``1 + q`` with ``keep[q]`` False from the F-ordered buffer (in
    place, its first ``k1`` columns in use), the weights W, and -- when the Gram matrices
    exist (``gram``) -- from the margins M (their terms subtracted), G and r.  Returns
    ``(W, G, r)``."""
    n, c = M.shape
    ix = np.empty(k1, dtype=np.int64)
    ix[0] = 0
    p = 1
    for q in range(k1 - 1):
        if keep[q]:
            ix[p] = q + 1
            p += 1
        elif gram:
            for j in range(c):
                w = W[q + 1, j]
                if w != 0.0:
                    for i in range(n):
                        M[i, j] -= Y[i, j] * buf[i, q + 1] * w
    ix = ix[:p]
    for a in range(p):
        if ix[a] != a:
            buf[:, a] = buf[:, ix[a]]
    Wn = np.empty((p, c))
    for a in range(p):
        Wn[a] = W[ix[a]]
    if not gram:
        return Wn, G, r
    Gn = np.empty((c, p, p))
    rn = np.empty((p, c))
    for a in range(p):
        rn[a] = r[ix[a]]
    for j in range(c):
        for a in range(p):
            for b in range(p):
                Gn[j, a, b] = G[j, ix[a], ix[b]]
    return Wn, Gn, rn


class SquaredHingeRounds:
    """The restricted squared-hinge problems ``1/2 ||w||^2 + C sum_i max(0, 1 - y_i <w,
    x_i>)^2`` of a column-generation selection by a finite Newton method [Keerthi2005],
    one compiled call per solve: on the active set ``A = {i : m_i < 1}`` the objective is
    the quadratic ``1/2 ||w||^2 + C ||y_A - X_A w||^2``, whose minimiser ``(I + 2C X_A^T
    X_A)^{-1} 2C X_A^T y_A`` (a Cholesky solve) gives the direction, followed by an exact
    line search along it (:func:`_line_search_steps`); it ends after finitely many steps,
    once ``A`` no longer changes.  The c problems on the same columns (one-vs-rest) are
    solved together: margins, steps and gaps over all of them, the factorisations per
    problem.  Kept between solves: the weights, the margins and, per problem, the Gram
    matrix ``G = X_A^T X_A`` and ``r = X_A^T y_A`` of its active rows, updated by the rows
    entering or leaving ``A`` (:func:`_active_set_update`), grown by appended columns and
    shrunk by dropped ones.  Every solve can end with the duality gap of its iterate: the
    dual variables ``a_i = 2C max(0, 1 - m_i)`` give the lower bound ``sum_i a_i - sum_i
    a_i^2 / (4C) - 1/2 ||X^T (a * y)||^2``.

    ``X``: the full data (n, d), dense or sparse (a sparse X's selected columns are
    written densely into the buffer; its pricing product is a sparse product outside the
    compiled call); ``Y`` (n, c) labels in {-1, +1}; ``capacity``: the most columns ever
    selected at once.  The buffer (F-ordered, the constant column first) receives the
    columns :meth:`add` appends without copying the old ones; :meth:`drop` compacts it in
    place.  :meth:`solve` runs the Newton steps and, with ``price=True``, the scores ``s_j
    = sum_i a_i y_i x_ij`` of every column of X at the final iterate (the pricing
    product), from which (dense X) the selected columns' scores in the certified gap are
    read.
    """

    def __init__(self, X, Y, C, capacity, cols=(), W0=None):
        # one memory layout for the compiled rounds: C-ordered, writeable float64 (a
        # read-only or F-ordered X is copied once), so numba compiles one specialisation
        # of each kernel instead of one per layout (tens of seconds each)
        self.sparse = sp.issparse(X)
        if self.sparse:  # columns gathered from CSC, the pricing product outside numba
            X = sp.csc_matrix(X, dtype=np.float64)
        else:
            X = np.require(X, dtype=np.float64, requirements=["C_CONTIGUOUS", "WRITEABLE"])
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        Y = np.ascontiguousarray(Y, dtype=np.float64)
        Y = Y.reshape(Y.shape[0], -1)
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"Y has {Y.shape[0]} rows, X has {X.shape[0]}")
        n, c = Y.shape
        self.X, self.Y, self.C = X, Y, float(C)
        self.capacity = int(capacity)
        self.buf = np.empty((self.capacity + 1, n)).T  # F-ordered (n, capacity + 1)
        self.buf[:, 0] = 1.0
        self.cols = np.empty(self.capacity, dtype=np.int64)
        self.k = 0
        self.W = np.zeros((1, c))
        self.M = np.zeros((n, c))  # margins Y * (X W), kept once the Gram matrices exist
        self.act = np.zeros((n, c), dtype=bool)
        self.G = np.zeros((c, 0, 0))
        self.r = np.zeros((0, c))
        self._gk1 = 0  # columns (with the constant) the Gram matrices cover; 0: none yet
        self.changed = np.zeros(c)
        self.moved = True
        self.n_iter = 0
        if len(cols):
            self.add(cols)
        if W0 is not None:  # (k + 1, c), the constant last (as the solvers' weights)
            W0 = np.asarray(W0, dtype=np.float64).reshape(-1, c)
            if W0.shape[0] != self.k + 1:
                raise ValueError(f"W0 has {W0.shape[0]} rows, expected {self.k + 1}")
            self.W = np.ascontiguousarray(np.vstack([W0[-1:], W0[:-1]]))

    @property
    def columns(self):
        """The selected columns, in the buffer's order."""
        return self.cols[: self.k].copy()

    def add(self, cols):
        """Append the columns ``cols`` of X (their weights start at 0)."""
        cols = np.asarray(cols, dtype=np.int64).reshape(-1)
        m = cols.size
        if self.k + m > self.capacity:
            raise ValueError(f"{self.k + m} columns exceed the capacity {self.capacity}")
        k = self.k
        new = self.X[:, cols]
        self.buf[:, 1 + k : 1 + k + m] = new.toarray() if self.sparse else new
        self.cols[k : k + m] = cols
        self.W = np.vstack([self.W, np.zeros((m, self.W.shape[1]))])
        self.k = k + m
        self.moved = True

    def drop(self, keep):
        """Remove the selected columns where the mask ``keep`` is False."""
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (self.k,):
            raise ValueError(f"keep must be a mask over the {self.k} selected columns")
        gram = self._gk1 > 0
        self.W, G, r = _drop_columns_state(
            self.buf, self.k + 1, keep, self.W, self.M, self.Y, self.G, self.r, gram
        )
        self.cols[: int(keep.sum())] = self.cols[: self.k][keep]
        self.k = int(keep.sum())
        if gram:
            self.G, self.r, self._gk1 = G, r, self.k + 1
        self.moved = True

    def solve(self, tol=1e-8, max_iter=100, price=False, certify=True):
        """Newton steps from the kept state until every problem's relative duality gap is
        at most ``tol`` (checked before the first step too unless columns were added or
        removed since the last solve) or after ``max_iter`` steps.  Returns ``(W, A,
        primals, duals, S)``: W (k + 1, c) with the constant last, ``S`` (c, d) the
        scores of every column of X (None without ``price``); a dual is NaN when the
        capped solve's last step was neither certified nor priced."""
        k1 = self.k + 1
        # sparse X: certified from the selected columns, priced by a sparse product
        inner_price = price and not self.sparse
        Xfull = np.zeros((self.X.shape[0], 0)) if self.sparse else self.X
        W, M, G, r, A, primal, dual, it, S = _newton_rounds_solve(
            self.buf[:, :k1], self.cols[: self.k], Xfull, self.Y, self.C,
            (self.W, self.M, self.act, self.G, self.r, self._gk1, self.changed),
            (float(tol), int(max_iter), not self.moved and max_iter >= 1,
             bool(certify or price), inner_price),
        )  # fmt: skip
        self.W, self.M, self.G, self.r, self._gk1 = W, M, G, r, k1
        self.moved = False
        self.n_iter += int(it)
        Wout = np.vstack([W[1:], W[:1]])
        if price and self.sparse:
            S = column_scores(self.X, self.Y, A).T
        return Wout, A, primal, dual, (S if price else None)


def _l2_logistic(X, y, C, tol, warm, Xa=None, max_iter=None):
    Xa = add_intercept(X) if Xa is None else Xa.M
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
    ("hinge", "l2"): _l2_dual_cd("hinge"),
    ("squared_hinge", "l2"): _l2_dual_cd("squared_hinge"),
    ("logistic", "l2"): _l2_logistic,
    ("hinge", "l1"): _l1_hinge,
    ("logistic", "l1"): _l1_logistic,
}


def restricted_data_drop(prev, keep):
    """:func:`restricted_data`'s result with the selected columns where the mask ``keep``
    is False removed, from the kept data itself when it is dense (no gather from X);
    None otherwise (form it anew)."""
    old, nnz = prev
    if not old.dense:
        return None
    ix = np.append(np.flatnonzero(keep), len(keep))
    out = np.ascontiguousarray(old.M[:, ix])
    gone = old.M[:, :-1][:, ~keep]
    nnz = nnz - int(np.count_nonzero(gone))
    sqn = old.sqn - np.einsum("ij,ij->i", gone, gone)
    e = np.zeros(1, dtype=np.int32)
    return DualCDData(out, e, e, np.zeros(0), out, True, sqn), nnz


def restricted_data(X, order, prev=None):
    """``(dual_cd_data(add_intercept(X[:, order])), nnz)`` -- the L2 problems' data on the
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
    Xa = add_intercept(X[:, order])
    nnz = Xa.nnz if sp.issparse(Xa) else int(np.count_nonzero(Xa))
    return dual_cd_data(Xa), nnz


def solve_restricted(X, y, C, loss, penalty, *, tol=1e-8, warm=None, Xa=None, max_iter=None):
    """Solve the problem on the columns of ``X`` (possibly none: intercept only).

    ``warm`` is a dict kept between calls (previous multipliers / weights, columns
    appended at the end).  ``Xa``: ``dual_cd_data(add_intercept(X))`` if already formed
    (the L2 problems use it; shared by the one-vs-rest problems of a round).
    ``max_iter``: a cap on dual CD's epochs (L2 hinge and squared hinge; None: 100000;
    below 100000 the last epoch is not certified).  Returns ``(w, b, a, objective)``.
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


# ------------------------------------------------------------------ forward / backward
#: relative duality gap of the backward pass's restricted problems (its weight ranking),
#: the last one solved to ``inner_tol``
_BACKWARD_TOL = 1e-2
#: squared hinge: Newton steps per restricted solve in the pricing rounds not solved to
#: ``inner_tol`` (their multipliers only rank the candidate columns); the backward
#: rounds and the set the backward pass starts from are solved to their tolerance
_NEWTON_ROUND_STEPS = 1


def _drop_columns(warm, keep):
    """Remove the selected columns not in the mask ``keep`` from a restricted problem's
    warm start (the multipliers stay valid; the weights lose those entries)."""
    w = warm.get("w_full")
    if w is not None:
        warm["w_full"] = np.append(w[:-1][keep], w[-1])
    z = warm.get("z")
    if z is not None:  # L1 logistic: (u, v, b)
        k = (z.shape[0] - 1) // 2
        warm["z"] = np.concatenate([z[:k][keep], z[k : 2 * k][keep], z[-1:]])


@dataclass(frozen=True)
class SelectionOptions:
    """The parameters of :func:`select_features`'s algorithm, named and defaulted as
    :class:`~maxmargin.learners.feature_selection.ForwardFeatureSelector`'s
    (``features_per_step="auto"`` there is 0.1 here)."""

    features_per_step: float = 0.1
    tol: float = 1e-3
    inner_tol: float = 1e-7
    pricing_tol: float = 0.1
    pricing_epochs: int = 5
    overselect: float = 1.0
    backward_step: float = 0.1
    max_time: float | None = None


@dataclass
class SelectionResult:
    """What :func:`select_features` found: the selected columns ``order`` and the
    restricted solutions ``sols`` (per problem ``(w, b, a, primal)``) of the chosen set,
    its objective and dual bound, the per-round ``history``, the ``path`` of sets per
    target, the columns the backward pass ``removed``, ``selected_by`` and ``n_iter``."""

    order: list
    sols: list
    objective: float
    dual: float
    history: list
    path: list
    removed: list
    selected_by: str
    n_iter: int


class _Selection:
    """The state of one forward / backward selection (:func:`select_features`)."""

    def __init__(self, X, ys, C, loss, penalty, inner_tol, pricing_tol, pricing_epochs):
        self.X, self.ys, self.d = X, ys, X.shape[1]
        self.C, self.loss, self.penalty = C, loss, penalty
        self.inner, self.pricing_tol, self.pricing_epochs = inner_tol, pricing_tol, pricing_epochs
        self.Y = np.column_stack(ys)
        self.warms = [{} for _ in ys]
        self.order: list[int] = []
        self.reach = self.d
        self.data = None  # the last round's L2 data (restricted_data)
        # squared hinge while the restricted data is dense and has few columns: the
        # one-vs-rest problems solved together by the compiled Newton rounds on a column
        # buffer grown in place, their state (Gram matrices) kept across rounds
        self.rounds = None
        self.colnnz = None
        # columns whose dense copy fits in DENSE_MAX_BYTES (sparse X, as dual_cd_data)
        self.max_dense = NEWTON_MAX_COLUMNS - 1
        if loss == "squared_hinge":
            if sp.issparse(X):
                self.colnnz = sp.csc_matrix(X).getnnz(axis=0)
                self.max_dense = min(self.max_dense, DENSE_MAX_BYTES // (8 * X.shape[0]) - 1)
            else:
                self.colnnz = np.count_nonzero(X, axis=0)

    def compiled_rounds_apply(self):
        # as restricted_data decides dense data (the constant column included) and the
        # Newton solver's column limit
        order = self.order
        if self.colnnz is None or len(order) > self.max_dense:
            return False
        n = self.X.shape[0]
        return int(self.colnnz[order].sum()) + n >= DENSE_FILL * n * (len(order) + 1)

    def _warm_solutions(self, W, A, P):
        sols = []
        for j, wm in enumerate(self.warms):  # the per-class warm starts, for dual CD
            wm["a"], wm["w_full"] = A[:, j], W[:, j]
            sols.append((W[:-1, j], float(W[-1, j]), A[:, j], float(P[j])))
        return sols

    def compiled_round(self, tol_k, price, rank_only):
        st, order = self.rounds, self.order
        if st is None:
            w0 = [wm.get("w_full") for wm in self.warms]
            W0 = None
            if all(w is not None and w.shape[0] == len(order) + 1 for w in w0):
                W0 = np.column_stack(w0)
            cap = min(self.d, self.reach, self.max_dense)
            st = self.rounds = SquaredHingeRounds(self.X, self.Y, self.C, cap, cols=order, W0=W0)
        elif st.k < len(order):
            st.add(order[st.k :])
        cap = _NEWTON_ROUND_STEPS if rank_only and tol_k > self.inner else 100
        W, A, P, _, S = st.solve(tol=tol_k, max_iter=cap, price=price, certify=price)
        return self._warm_solutions(W, A, P), S

    def evaluate(self, tol_k, price=True, rank_only=False):
        # rank_only: a pricing round whose multipliers only rank the candidates (the
        # squared hinge's Newton solves take one step there)
        S = None
        if self.compiled_rounds_apply():
            sols, S = self.compiled_round(tol_k, price, rank_only)
            self.data = None  # formed afresh if another solver takes over
        else:
            self.rounds = None
            sols = self.solve_round(tol_k)
        objective = sum(s[3] for s in sols)
        if not price:  # a backward round: only the weights are needed
            return sols, objective, -np.inf, None, None, np.nan, np.inf
        # pricing: the scores of every column for every class in one matrix product
        if S is None:
            S = column_scores(self.X, self.Y, np.column_stack([s[2] for s in sols])).T
        dual = 0.0
        for yb, (_, _, a, _), s in zip(self.ys, sols, S):
            s_all = np.append(s, a @ yb) if self.penalty == "l2" else s
            dual += dual_value(a, yb, s_all, self.C, self.loss, self.penalty)
        free = np.ones(self.d, dtype=bool)
        free[self.order] = False
        score = np.sqrt((S * S).sum(0)) if self.penalty == "l2" else np.abs(S).max(0)
        score = np.where(free, score, -np.inf)
        viol = float(score.max()) if free.any() else 0.0
        rel = (objective - dual) / max(abs(objective), 1e-12)
        return sols, objective, dual, free, score, viol, rel

    def solve_round(self, tol_k):
        order, inner = self.order, self.inner
        # the L2 problems' data (constant column, dual CD layout) formed once per
        # round for every class, grown from the last round's
        Xa = None
        if self.penalty == "l2":
            if self.data is None or self.data[0].M.shape[1] != len(order) + 1:
                self.data = restricted_data(self.X, order, self.data)  # else formed already
            Xa = self.data[0]
            Xs = Xa.M[:, :-1]  # the solvers read Xa; Xs gives the shape
        else:
            Xs = self.X[:, order]
        cap = self.pricing_epochs if self.pricing_tol <= tol_k and inner < tol_k else None
        # dual CD (the squared hinge: sparse or many columns), warm started per class
        return [
            solve_restricted(
                Xs, yb, self.C, self.loss, self.penalty, tol=tol_k, warm=wm, Xa=Xa, max_iter=cap
            )
            for yb, wm in zip(self.ys, self.warms)
        ]

    def drop(self, keep):
        """Remove the selected columns not in the mask ``keep`` from every kept state."""
        self.order = [c for c, k_ in zip(self.order, keep) if k_]
        for wm in self.warms:
            _drop_columns(wm, keep)
        if self.rounds is not None:
            self.rounds.drop(keep)
        self.data = None if self.data is None else restricted_data_drop(self.data, keep)


def select_features(
    X,
    ys,
    C,
    loss,
    penalty,
    *,
    targets,
    limit,
    budget,
    options=SelectionOptions(),
    verbose=0,
    callback=None,
) -> SelectionResult:
    """Forward selection by column generation for the one-vs-rest problems ``ys`` (each
    in {-1, +1}), then with a budget and ``overselect > 1`` a backward pass (the
    algorithm of :class:`~maxmargin.learners.feature_selection.ForwardFeatureSelector`,
    whose parameters ``options`` holds; ``targets`` the sorted set sizes to record,
    ``limit`` the one returned, ``budget`` whether a size was asked for)."""
    tol, inner_tol, max_time = options.tol, options.inner_tol, options.max_time
    pricing_tol, pricing_epochs = options.pricing_tol, options.pricing_epochs
    features_per_step, overselect = options.features_per_step, options.overselect
    backward_step = options.backward_step
    st = _Selection(X, ys, C, loss, penalty, float(inner_tol), pricing_tol, pricing_epochs)
    d, inner = st.d, st.inner
    step = features_per_step
    mon = ConvergenceMonitor(
        "ffs",
        verbose=verbose,
        callback=callback,
        fields=("phase", "n_selected", "objective", "gap"),
    )
    history = mon.history
    t0 = time.perf_counter()
    it = 0

    def should_stop(free, viol, rel, reach):
        if len(st.order) >= reach or not free.any():
            return True
        if not budget:
            if penalty == "l1" and viol <= 1.0 + tol:
                return True
            if penalty == "l2" and rel <= tol:
                return True
        return False

    # with a budget and overselect > 1: forward to ``reach`` columns (the rounds land
    # on every target on the way, where the forward set is kept as a candidate), then
    # backward to the smallest target, landing on every target below ``reach``
    backward = budget and overselect > 1.0
    reach = targets[-1]
    if backward:
        reach = min(d, int(np.ceil(float(overselect) * targets[-1])))
    st.reach = reach
    tset = set(targets)
    # the backward rounds' tolerance (their weights rank the columns)
    bw_tol = max(inner, min(float(pricing_tol), _BACKWARD_TOL))
    rel_prev = np.inf
    kept = None  # (order, sols, objective, dual, it) of the last recorded round
    # candidates per target: {k: (order, sols or None, objective, dual)} -- sols kept
    # for the budget only
    fwd_cand: dict = {}
    bwd_cand: dict = {}
    removed: list[int] = []
    timed_out = False

    def record(sols, objective, dual, viol, rel, phase):
        nonlocal kept
        rec = {
            "iteration": it,
            "n_selected": len(st.order),
            "objective": float(objective),
            "dual_bound": float(dual),
            "gap": float(rel),
            "max_violation": viol,
            "t_total": time.perf_counter() - t0,
            "phase": phase,
        }
        kept = (list(st.order), sols, objective, dual, it)
        n_sel = len(st.order)
        if budget and n_sel in tset:
            cand = fwd_cand if phase == "forward" else bwd_cand
            cand[n_sel] = (list(st.order), sols if n_sel == limit else None, objective, dual)
        mon.record(rec)
        return rec

    try:
        while True:
            # restricted problems are solved as accurately as the selection needs: a tenth
            # of the last full-problem gap (any dual point gives a valid bound), at most
            # pricing_tol, and to inner_tol before stopping
            tol_k = float(min(pricing_tol, max(inner, 0.1 * rel_prev)))
            # the forward candidates (compared with the backward pass's sets by their
            # objective) are solved to inner_tol, the set the backward pass starts
            # from to its tolerance, the last set to inner_tol: where the budget makes
            # that known in advance, directly (no pricing solve first)
            rank_only = True
            if budget and len(st.order) >= min(reach, d):
                tol_k = bw_tol if backward and len(st.order) > targets[-1] else inner
                rank_only = False
            elif budget and len(st.order) in tset:
                tol_k = inner
                rank_only = False
            sols, objective, dual, free, score, viol, rel = st.evaluate(tol_k, rank_only=rank_only)
            stop = should_stop(free, viol, rel, reach)
            need = inner if stop else tol_k
            if stop and backward and len(st.order) > targets[-1]:
                need = bw_tol
            if need < tol_k:
                sols, objective, dual, free, score, viol, rel = st.evaluate(need)
                stop = should_stop(free, viol, rel, reach)
            rel_prev = rel
            rec = record(sols, objective, dual, viol, rel, "forward")
            if stop:
                break
            if max_time is not None and rec["t_total"] >= max_time:
                timed_out = True
                break
            if penalty == "l1":  # only violated constraints may enter ([Sun2012 eq. 2.90])
                score = np.where(score > 1.0, score, -np.inf)
                if not np.isfinite(score.max()):
                    break
            n_left = int(np.isfinite(score).sum())
            if isinstance(step, int):
                m = step
            else:
                m = max(1, int(np.ceil(step * len(st.order))))
            goal = min([t for t in targets if t > len(st.order)] + [reach])
            if goal == reach == d and len(st.order) >= targets[-1]:
                m = d  # the backward pass starts from every column: no order to find
            m = min(m, goal - len(st.order), n_left)
            new = np.argsort(-score, kind="stable")[:m]
            st.order.extend(int(j) for j in new)
            it += 1
        # backward pass (from ``reach``; not after an early end, e.g. L1 with no
        # violated column left): remove the columns of smallest weight norm,
        # re-solving after each removal, down to the smallest target
        backward = backward and len(st.order) >= reach
        while backward and len(st.order) > targets[0] and not timed_out:
            Wc = np.array([s[0] for s in sols])
            norm2 = (Wc * Wc).sum(0)
            # a tenth of the selected columns per round (at least one), as RFE's step,
            # landing on every target
            below = max(t for t in targets if t < len(st.order))
            m = min(
                len(st.order) - below, max(1, int(np.ceil(float(backward_step) * len(st.order))))
            )
            drop = np.argsort(norm2, kind="stable")[:m]
            keep = np.ones(len(st.order), dtype=bool)
            keep[drop] = False
            removed.extend(st.order[j] for j in drop)
            st.drop(keep)
            it += 1
            at = len(st.order) in tset
            sols, objective, dual, _, _, viol, rel = st.evaluate(inner if at else bw_tol, price=at)
            rec = record(sols, objective, dual, viol, rel, "backward")
            if max_time is not None and rec["t_total"] >= max_time:
                timed_out = True
    except KeyboardInterrupt:
        if kept is None:
            raise  # nothing recorded: nothing to keep
        warn_interrupted(len(history))
    # per target, the better (smaller restricted objective) of the forward and the
    # backward set; without a candidate of the budget's size (stopped early), the
    # last recorded round
    path = []
    final = None
    for t in targets:
        f, b = fwd_cand.get(t), bwd_cand.get(t)
        if f is None and b is None:
            continue
        # the same set reached both ways counts as the forward one
        use_b = b is not None and (f is None or (b[2] < f[2] and sorted(b[0]) != sorted(f[0])))
        c = b if use_b else f
        by = "backward" if use_b else "forward"
        path.append(
            {"k": t, "columns": np.asarray(c[0], dtype=np.int64),
             "objective": float(c[2]), "selected_by": by}
        )  # fmt: skip
        if t == limit:
            final = (c, by)
    if final is not None:
        (order, sols, objective, dual), selected_by = final
    else:
        order, sols, objective, dual, it_kept = kept
        if not history or history[-1]["phase"] == "forward":
            it = it_kept
        selected_by = "forward"
    return SelectionResult(order, sols, objective, dual, history, path, removed, selected_by, it)
