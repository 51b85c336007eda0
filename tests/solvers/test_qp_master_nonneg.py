"""The 1-slack QP master with non-negative coordinates (``nonneg=J``) against scipy.

The independent answer: the master written out in full, primal

    min_{w, xi} 1/2 ||w||^2 + C xi   s.t.  A w + xi >= b,  xi >= 0,  w_J >= 0

and its Lagrangian dual over (lam, mu) (not the clipped form the master uses),

    max_{lam >= 0, 1'lam <= C, mu >= 0}  b'lam - 1/2 ||A' lam + E_J mu||^2,

both solved by scipy's SLSQP.  Scipy's answers are made exactly feasible (w_J clipped, xi
recomputed; lam, mu clipped and lam scaled into the cap), so scipy's primal value P_ref and
dual value D_ref bracket the optimum exactly, as our (primal, dual) do.  The bounds used:
both intervals contain the optimum, so ``max(D, D_ref) <= min(P, P_ref)`` up to rounding,
and by the strong convexity of ``1/2 ||w||^2`` (the primal is 1-strongly convex in w),
``1/2 ||w - w*||^2 <= P(w) - opt`` for every feasible w: ``||w - w_ref|| <= sqrt(2 (P -
D)) + sqrt(2 (P_ref - D_ref))``.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

from maxmargin.solvers.qp_master import OneSlackQPMaster, declared_nonneg, refuse_nonneg


def scipy_master(A, b, C, J):
    P, D = A.shape
    E = np.zeros((D, len(J)))
    E[J, np.arange(len(J))] = 1.0

    # primal over z = (w, xi)
    def f(z):
        return 0.5 * z[:D] @ z[:D] + C * z[D]

    cons = [
        {
            "type": "ineq",
            "fun": lambda z: A @ z[:D] + z[D] - b,
            "jac": lambda z: np.hstack([A, np.ones((P, 1))]),
        }
    ]
    bounds = [(0, None) if j in set(J) else (None, None) for j in range(D)] + [(0, None)]
    jac = lambda z: np.concatenate([z[:D], [C]])  # noqa: E731
    r = minimize(f, np.zeros(D + 1), jac=jac, bounds=bounds, constraints=cons, method="SLSQP",
                 options={"ftol": 1e-15, "maxiter": 2000})  # fmt: skip
    w = r.x[:D].copy()
    w[J] = np.maximum(w[J], 0.0)
    P_ref = 0.5 * w @ w + C * max(0.0, float(np.max(b - A @ w)))

    # dual over u = (lam, mu), minimised as its negative
    def g(u):
        v = A.T @ u[:P] + E @ u[P:]
        return -(b @ u[:P]) + 0.5 * v @ v

    def gjac(u):
        v = A.T @ u[:P] + E @ u[P:]
        return np.concatenate([-b + A @ v, E.T @ v])

    cap = [
        {
            "type": "ineq",
            "fun": lambda u: C - u[:P].sum(),
            "jac": lambda u: np.concatenate([-np.ones(P), np.zeros(len(J))]),
        }
    ]
    opts = {"ftol": 1e-15, "maxiter": 2000}
    u0 = np.zeros(P + len(J))
    nb = [(0, None)] * (P + len(J))
    r = minimize(g, u0, jac=gjac, bounds=nb, constraints=cap, method="SLSQP", options=opts)
    lam = np.maximum(r.x[:P], 0.0)
    if lam.sum() > C:
        lam *= C / lam.sum()
    mu = np.maximum(r.x[P:], 0.0)
    v = A.T @ lam + E @ mu
    D_ref = float(b @ lam - 0.5 * v @ v)
    return w, P_ref, D_ref, mu


def problem(seed, P=8, D=6):
    """Planes whose unconstrained master puts negative weight on the coordinates J."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(P, D))
    A[:, 3:] -= 0.8  # pulls the last coordinates negative
    b = rng.random(P) + 0.5
    return A, b, 2.0, np.array([1, 3, 4, 5])


def master(A, b, C, J, solver="active-set"):
    m = OneSlackQPMaster(C=C, dim=A.shape[1], tol=1e-12, solver=solver, nonneg=J)
    for a, bb in zip(A, b):
        m.add_plane(a, bb)
    return m


@pytest.mark.parametrize("solver", ["active-set", "smo"])
@pytest.mark.parametrize("seed", range(4))
def test_constrained_master_equals_scipy(seed, solver):
    A, b, C, J = problem(seed)
    free = OneSlackQPMaster(C=C, dim=A.shape[1], tol=1e-12)
    for a, bb in zip(A, b):
        free.add_plane(a, bb)
    assert free.solve().w[J].min() < -1e-3  # the bounds are active: the case under test
    sol = master(A, b, C, J, solver).solve()
    assert sol.w[J].min() >= 0.0  # feasible, exactly
    w_ref, P_ref, D_ref, mu = scipy_master(A, b, C, J)
    assert mu.max() > 1e-3  # scipy's dual uses the bounds' multipliers too
    gap, gap_ref = sol.primal - sol.dual, P_ref - D_ref
    assert 0.0 <= gap <= 1e-9 and 0.0 <= gap_ref <= 1e-7  # both solved (our tol: 1e-12 scale)
    # the two brackets of the optimum intersect (rounding: 1e-12 relative)
    eps = 1e-12 * max(1.0, abs(P_ref))
    assert max(sol.dual, D_ref) <= min(sol.primal, P_ref) + eps
    # strong convexity: both points within sqrt(2 gap) of the unique optimum
    assert np.linalg.norm(sol.w - w_ref) <= np.sqrt(2 * gap) + np.sqrt(2 * gap_ref) + 1e-9
    # the primal value is the objective at the returned point
    xi = max(0.0, float(np.max(b - A @ sol.w)))
    assert sol.xi == pytest.approx(xi, abs=1e-15)
    assert sol.primal == pytest.approx(0.5 * sol.w @ sol.w + C * xi, rel=1e-15)


def test_constrained_master_warm_starts_and_prunes_consistently():
    """Planes added one by one (the cutting-plane loop's use, face kept from solve to
    solve) end at the answer of the full set solved at once."""
    A, b, C, J = problem(7, P=12)
    one = master(A, b, C, J).solve()
    m = OneSlackQPMaster(C=C, dim=A.shape[1], tol=1e-12, solver="active-set", nonneg=J)
    for a, bb in zip(A, b):
        m.add_plane(a, bb)
        sol = m.solve()
        assert sol.w[J].min() >= 0.0 and sol.dual <= sol.primal + 1e-12
    gap = (sol.primal - sol.dual) + (one.primal - one.dual)
    assert np.linalg.norm(sol.w - one.w) <= 2 * np.sqrt(2 * gap) + 1e-9
    assert m.n_faces >= 1


def test_nonneg_validation():
    with pytest.raises(ValueError, match="explicit planes"):
        OneSlackQPMaster(C=1.0, dim=None, nonneg=[0])
    with pytest.raises(ValueError, match="non-negative coordinates must lie in"):
        OneSlackQPMaster(C=1.0, dim=3, nonneg=[3])

    class M:
        dim = 3
        nonneg_coords = np.array([2, 1, 2])

    assert declared_nonneg(M()).tolist() == [1, 2]
    with pytest.raises(ValueError, match="does not enforce"):
        refuse_nonneg(M(), "n-slack")
    M.nonneg_coords = [5]
    with pytest.raises(ValueError, match=r"0\.\.2, got \[5\]"):
        declared_nonneg(M())
