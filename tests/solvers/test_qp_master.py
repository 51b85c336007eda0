"""1-slack QP master against scipy's SLSQP on the primal."""

import numpy as np
import pytest
from scipy.optimize import minimize

from maxmargin.solvers.qp_master import OneSlackQPMaster


def _slsqp(A, b, C):
    D = A.shape[1]
    res = minimize(
        lambda z: 0.5 * z[:D] @ z[:D] + C * z[D],
        np.zeros(D + 1),
        jac=lambda z: np.r_[z[:D], C],
        constraints=[
            {
                "type": "ineq",
                "fun": lambda z: A @ z[:D] + z[D] - b,
                "jac": lambda z: np.c_[A, np.ones(len(b))],
            }
        ],
        bounds=[(None, None)] * D + [(0, None)],
        method="SLSQP",
        options={"ftol": 1e-13, "maxiter": 1000},
    )
    return res.x[:D], res.fun


@pytest.mark.parametrize("solver", ["smo", "highs", "active-set"])
@pytest.mark.parametrize("seed", range(6))
def test_matches_slsqp(seed, solver):
    rng = np.random.default_rng(seed)
    D = int(rng.integers(2, 8))
    # HiGHS needs a nonsingular Gram matrix: fewer planes than features
    P = int(rng.integers(1, D + 1)) if solver == "highs" else int(rng.integers(1, 25))
    C = float(rng.choice([0.1, 1.0, 10.0]))
    A, b = rng.normal(size=(P, D)), rng.normal(size=P) + 0.5
    m = OneSlackQPMaster(C=C, dim=D, solver=solver)
    for p in range(P):  # incremental, warm-started
        m.add_plane(A[p], b[p])
        sol = m.solve()
    w_ref, f_ref = _slsqp(A, b, C)
    rtol = 1e-5 if solver == "highs" else 1e-6  # HiGHS stops at its own tolerances
    assert np.isclose(sol.primal, f_ref, rtol=rtol, atol=1e-8)
    np.testing.assert_allclose(sol.w, w_ref, atol=1e-3)
    assert -1e-7 <= sol.gap <= rtol * max(1.0, abs(sol.primal))
    assert sol.lam.min() >= 0 and sol.lam.sum() <= C * (1 + 1e-12)


def test_rank_deficient_and_duplicate_planes():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 2))
    A = np.vstack([A, A, A[:2] * 2.0])  # many more planes than features
    b = rng.random(A.shape[0])
    m = OneSlackQPMaster(C=2.0, dim=2)
    for a, bb in zip(A, b):
        m.add_plane(a, bb)
    sol = m.solve()
    _, f_ref = _slsqp(A, b, 2.0)
    assert np.isclose(sol.primal, f_ref, rtol=1e-6)
    assert abs(sol.gap) < 1e-7


def test_pruning_keeps_optimum():
    rng = np.random.default_rng(5)
    A, b = rng.normal(size=(30, 5)), rng.normal(size=30)
    m = OneSlackQPMaster(C=1.0, dim=5, prune_after=1)
    for a, bb in zip(A, b):
        m.add_plane(a, bb)
        m.solve()
    sol = m.solve()
    assert m.n_planes <= 30
    _, f_ref = _slsqp(*m.planes, 1.0)
    assert np.isclose(sol.primal, f_ref, rtol=1e-6)


def test_empty_and_validation():
    m = OneSlackQPMaster(C=1.0, dim=3)
    sol = m.solve()
    assert sol.primal == 0 and not sol.w.any()
    with pytest.raises(ValueError):
        OneSlackQPMaster(C=0.0, dim=3)
    with pytest.raises(ValueError):
        m.add_plane(np.ones(2), 1.0)
    with pytest.raises(ValueError):
        m.add_plane(np.array([1.0, np.nan, 0.0]), 1.0)


def test_active_set_alone_reaches_the_optimum():
    """The active-set method by itself (no SMO after it) ends at a KKT point: the
    capped-simplex duality gap of :func:`capped_simplex_smo_steps` is ~0 there, on a singular Gram
    (more planes than features) too."""
    from maxmargin.solvers.qp_master import _active_set, capped_simplex_smo_steps

    rng = np.random.default_rng(7)
    for P, D in ((5, 8), (30, 4)):
        A, b = rng.normal(size=(P, D)), rng.normal(size=P) + 0.5
        G = A @ A.T
        lam, ok = _active_set(G, b, 3.0, np.zeros(P))
        if not ok:  # a singular face system: the caller falls back to SMO
            continue
        assert lam.min() >= 0 and lam.sum() <= 3.0 * (1 + 1e-12)
        g = G @ lam - b
        _, gap, _ = capped_simplex_smo_steps(G, g, lam.copy(), P, 3.0, 0.0, 0)
        assert gap <= 1e-9 * max(1.0, float(np.abs(b).max()) * 3.0)


def _qp_by_enumeration(G, b, C):
    """min 1/2 x'Gx - b'x, x >= 0, sum(x) <= C by brute force: every support S and
    both states of the sum constraint; the face optimum (a linear solve) is kept when
    feasible; the best feasible value is the optimum (G positive definite)."""
    from itertools import combinations

    P = len(b)
    best = 0.0  # x = 0
    for r in range(1, P + 1):
        for S in combinations(range(P), r):
            S = list(S)
            GS, bS = G[np.ix_(S, S)], b[S]
            cands = [np.linalg.solve(GS, bS)]  # sum constraint inactive
            K = np.block([[GS, -np.ones((r, 1))], [np.ones((1, r)), np.zeros((1, 1))]])
            cands.append(np.linalg.solve(K, np.append(bS, C))[:r])  # sum(x) = C
            for xs in cands:
                if xs.min() >= -1e-12 and xs.sum() <= C * (1 + 1e-12):
                    best = min(best, 0.5 * xs @ GS @ xs - bS @ xs)
    return best


@pytest.mark.parametrize("C", [1e-3, 0.5, 3.0, 1e3])
def test_active_set_matches_enumeration(C):
    """The compiled active-set method (Cholesky updates of the free block) reaches the
    QP's optimum, found independently by enumerating every support, from cold and warm
    starts, with the sum constraint active (small C) and inactive (large C); the bound
    is the enumeration's own rounding, 1e-9 relative."""
    from maxmargin.solvers.qp_master import _active_set

    rng = np.random.default_rng(3)
    for trial in range(6):
        P = 7
        A = rng.normal(size=(P, 9))
        b = rng.normal(size=P) + 0.3
        G = A @ A.T
        opt = _qp_by_enumeration(G, b, C)
        w0 = rng.dirichlet(np.ones(P))
        # cold, warm inside, and warm on the face sum(lam) = C (the slack must re-enter)
        starts = [np.zeros(P), w0 * C * rng.uniform(0.2, 0.9), w0 * C]
        for lam0 in starts:
            lam, ok = _active_set(G, b, C, lam0)
            assert ok
            assert lam.min() >= 0 and lam.sum() <= C * (1 + 1e-12)
            val = 0.5 * lam @ G @ lam - b @ lam
            assert abs(val - opt) <= 1e-9 * max(1.0, abs(opt)), (trial, val, opt)
