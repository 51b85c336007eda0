"""The Cholesky factor updates against NumPy's factor and solve."""

import numpy as np
import pytest

from maxmargin.solvers.cholesky import chol_append, chol_delete, chol_solve


def _spd(rng, m):
    B = rng.normal(size=(m, m + 2))
    return B @ B.T + 0.1 * np.eye(m)


@pytest.mark.parametrize("seed", range(4))
def test_append_delete_solve_match_numpy(seed):
    rng = np.random.default_rng(seed)
    m = 7
    G = _spd(rng, m)
    L = np.zeros((m + 1, m + 1))
    # grown one row / column at a time; 7 x 7, entries O(10), smallest eigenvalue >= 0.1:
    # the factors' rounding error is far below the 1e-12 asserted
    for n in range(m):
        assert chol_append(L, n, G[n, :n].copy(), G[n, n], 1e-12)
    np.testing.assert_allclose(L[:m, :m], np.linalg.cholesky(G), atol=1e-12)
    rhs, out = rng.normal(size=m + 1), np.empty(m + 1)
    chol_solve(L, m, rhs, out)
    np.testing.assert_allclose(out[:m], np.linalg.solve(G, rhs[:m]), rtol=1e-10, atol=1e-12)
    for k in (3, 0, 4):  # remove rows / columns: the factor of what is left
        chol_delete(L, G.shape[0], k)
        G = np.delete(np.delete(G, k, 0), k, 1)
        n = G.shape[0]
        np.testing.assert_allclose(L[:n, :n], np.linalg.cholesky(G), atol=1e-12)
        assert not L[n].any()
        chol_solve(L, n, rhs, out)
        np.testing.assert_allclose(out[:n], np.linalg.solve(G, rhs[:n]), rtol=1e-10, atol=1e-12)


def test_append_refuses_a_singular_pivot():
    rng = np.random.default_rng(0)
    a = rng.normal(size=3)
    G = np.outer(a, a)  # rank one: the second pivot is 0
    L = np.zeros((3, 3))
    assert chol_append(L, 0, G[0, :0].copy(), G[0, 0], 1e-12)
    assert not chol_append(L, 1, G[1, :1].copy(), G[1, 1], 1e-9 * G[1, 1])
