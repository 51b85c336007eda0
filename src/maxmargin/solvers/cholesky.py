"""A dense Cholesky factor kept up to date as rows and columns come and go.

``L[:n, :n]`` is the lower-triangular factor of a symmetric positive definite matrix
(``L L^T``) stored in the leading block of a preallocated array; the compiled helpers
grow it by one row and column (:func:`chol_append`, O(n^2)), remove one
(:func:`chol_delete`, Givens rotations, O(n^2)) and solve with it (:func:`chol_solve`,
two triangular solves).  Users: the primal active-set method of the 1-slack QP master
(:mod:`maxmargin.solvers.qp_master`, one factor over the free planes) and the Newton step
of forward feature selection (:mod:`maxmargin.solvers.feature_selection`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["chol_append", "chol_delete", "chol_solve", "forward_sub"]


@njit(cache=True)
def forward_sub(L, n, rhs, out):
    """``out[:n] = L[:n, :n]^{-1} rhs[:n]`` (lower triangular); ``out`` may be a row of
    ``L`` below the block (read only through entries already written)."""
    for i in range(n):
        v = rhs[i]
        for k in range(i):
            v -= L[i, k] * out[k]
        out[i] = v / L[i, i]


@njit(cache=True)
def chol_append(L, n, col, diag, tiny):
    """Grow the Cholesky factor ``L[:n, :n]`` of a matrix ``G`` by one row/column (``col``
    = the new column's entries against the ``n`` current rows, ``diag`` its diagonal
    entry), written into row ``n`` of ``L``: O(n^2).  False when the
    new pivot is not positive beyond ``tiny`` (the grown matrix is numerically
    singular)."""
    forward_sub(L, n, col, L[n])
    ss = 0.0
    for i in range(n):
        ss += L[n, i] * L[n, i]
    d2 = diag - ss
    if not (d2 > tiny):
        return False
    L[n, n] = np.sqrt(d2)
    for i in range(n):
        L[i, n] = 0.0
    return True


@njit(cache=True)
def chol_delete(L, n, k):
    """Remove row/column ``k`` from the factor ``L[:n, :n]`` (rows below ``k`` move up;
    the one super-diagonal entry each of them then carries is rotated away by Givens
    rotations of adjacent columns): O(n^2)."""
    for i in range(k, n - 1):
        for j in range(n):
            L[i, j] = L[i + 1, j]
    for i in range(k, n - 1):
        a = L[i, i]
        c_ = L[i, i + 1]
        r = np.hypot(a, c_)
        if r == 0.0:
            continue
        cs = a / r
        sn = c_ / r
        for row in range(i, n - 1):
            u = L[row, i]
            v = L[row, i + 1]
            L[row, i] = cs * u + sn * v
            L[row, i + 1] = -sn * u + cs * v
        L[i, i + 1] = 0.0
    for j in range(n):
        L[n - 1, j] = 0.0


@njit(cache=True)
def chol_solve(L, n, rhs, out):
    """``out = (L L^T)^{-1} rhs`` on the leading ``n`` block: two triangular solves."""
    forward_sub(L, n, rhs, out)
    for i in range(n - 1, -1, -1):
        v = out[i]
        for k in range(i + 1, n):
            v -= L[k, i] * out[k]
        out[i] = v / L[i, i]
