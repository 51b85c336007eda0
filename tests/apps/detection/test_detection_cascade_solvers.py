"""Cascade solvers (issue 13, priority 3): operating points vs brute force over ROC
points, the LACBoost / FisherBoost master vs the QP written out and solved by scipy,
cost-sensitive AdaBoost vs BinaryAdaBoost at equal costs."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from maxmargin import BinaryAdaBoost
from maxmargin.solvers.asymmetric_boost import (
    asymmetric_objective,
    fit_asymmetric_stage,
    fit_cost_sensitive_stage,
    scatter_matrix,
)
from maxmargin.solvers.operating_point import (
    fixed_rule,
    one_point,
    roc_points,
    select_operating_point,
    two_point,
    two_point_lp,
)


def _roc(seed, n=12):
    rng = np.random.default_rng(seed)
    sp_ = rng.normal(1.5, 1.0, 40)
    sn = rng.normal(0.0, 1.0, 200)
    thr, a, b = roc_points(sp_, sn)
    k = np.linspace(0, len(a) - 1, n).astype(int)
    return thr[k], a[k], b[k]


def test_roc_points_brute_force():
    rng = np.random.default_rng(0)
    sp_, sn = rng.integers(0, 5, 15).astype(float), rng.integers(0, 5, 30).astype(float)
    thr, a, b = roc_points(sp_, sn)
    for t, ai, bi in zip(thr, a, b):
        assert ai == pytest.approx((sp_ > t).mean())
        assert bi == pytest.approx(max((sn > t).mean(), 0.5 / len(sn)))


def _two_point_brute(a, b, B, n):
    """Max of eq. 4.55 over every pair of points (a vertex uses at most two), by the
    vertices of each pair's 2-d polygon."""
    la, lb = np.log(a), np.log(b)
    best = -np.inf
    for i, j in itertools.combinations_with_replacement(range(len(a)), 2):
        # lines: x_i = 0, x_j = 0, lb_i x_i + lb_j x_j = log B, x_i + x_j = n
        lines = [((1, 0), 0), ((0, 1), 0), ((lb[i], lb[j]), np.log(B)), ((1, 1), n)]
        for (p1, r1), (p2, r2) in itertools.combinations(lines, 2):
            M = np.array([p1, p2], float)
            if abs(np.linalg.det(M)) < 1e-12:
                continue
            x = np.linalg.solve(M, [r1, r2])
            if i == j:
                x = np.array([x.sum(), 0.0]) if x.min() >= -1e-9 else x
            if x.min() >= -1e-9 and x @ [lb[i], lb[j]] <= np.log(B) + 1e-9 and x.sum() <= n + 1e-9:
                best = max(best, x @ [la[i], la[j]])
    return best


@pytest.mark.parametrize("seed", range(6))
def test_two_point_lp_equals_brute_force(seed):
    _, a, b = _roc(seed)
    for B, n in [(1e-3, 10), (0.05, 3), (0.3, 2)]:
        x, opt = two_point_lp(a, b, B, n)
        ref = _two_point_brute(a, b, B, n)
        if x is None:
            assert ref == -np.inf
            continue
        assert opt == pytest.approx(ref, abs=1e-8)
        assert (x > 1e-9).sum() <= 2
        k, ok, _ = two_point(a, b, 0.9, B, n)
        assert ok == (np.exp(ref) >= 0.9 - 1e-12)
        used = np.flatnonzero(x > 1e-9 * x.max())
        assert k == used[np.argmin(b[used])]


@pytest.mark.parametrize("seed", range(6))
def test_one_point_rule_equals_brute_force(seed):
    _, a, b = _roc(seed, n=25)
    for A, B, n in [(0.9, 1e-3, 10), (0.95, 0.05, 4), (0.99, 1e-4, 20)]:
        grid = np.linspace(1, n, 20001)
        feas = [
            k
            for k in range(len(a))
            if np.any((a[k] >= A ** (grid / n) - 1e-12) & (b[k] <= B ** (grid / n) + 1e-12))
        ]
        k, ok = one_point(a, b, A, B, n)
        assert ok == bool(feas)
        if feas:
            assert b[k] == min(b[j] for j in feas)
            kc, _ = one_point(a, b, A, B, n, select="max_curve")
            astar = [B ** (np.log(a[j]) / np.log(b[j])) for j in feas]
            assert B ** (np.log(a[kc]) / np.log(b[kc])) == pytest.approx(max(astar))
        # fixed rule by brute force
        k2, ok2 = fixed_rule(a, b, A, B, n)
        fe = [j for j in range(len(a)) if a[j] >= A ** (1 / n) and b[j] <= B ** (1 / n)]
        assert ok2 == bool(fe)
        if fe:
            assert b[k2] == min(b[j] for j in fe)


def test_select_operating_point_threshold_reproduces_the_point():
    rng = np.random.default_rng(1)
    sp_, sn = rng.normal(2, 1, 100), rng.normal(0, 1, 1000)
    for rule in ("fixed", "one-point", "two-point"):
        op = select_operating_point(sp_, sn, 0.9, 1e-3, 10, rule=rule)
        assert op.recall == pytest.approx((sp_ > op.threshold).mean())
        assert op.far == pytest.approx(max((sn > op.threshold).mean(), 0.5 / len(sn)))
    with pytest.raises(ValueError, match="rule"):
        select_operating_point(sp_, sn, 0.9, 1e-3, 10, rule="three-point")


# ----------------------------------------------------------------- LACBoost / FisherBoost
def _all_stump_columns(X):
    cols = [np.ones(len(X)), -np.ones(len(X))]
    for f in range(X.shape[1]):
        u = np.unique(X[:, f])
        for t in (u[:-1] + u[1:]) / 2:
            h = np.where(X[:, f] > t, 1.0, -1.0)
            cols += [h, -h]
    return np.array(cols).T


def _capped_simplex_min(f, T):
    """SLSQP on ``f`` (value and gradient) over ``w >= 0, sum w <= 1``."""
    return minimize(
        f,
        np.full(T, 1.0 / T),
        jac=True,
        method="SLSQP",
        bounds=[(0, None)] * T,
        constraints=[{"type": "ineq", "fun": lambda w: 1 - w.sum(), "jac": lambda w: -np.ones(T)}],
        options={"ftol": 1e-14, "maxiter": 2000},
    )


def _stage_columns(res, X):
    """A column generation stage's columns and their {-1, +1} outputs on ``X``."""
    c_ = res.columns
    return c_, np.where(X[:, c_["feature"]] > c_["threshold"], 1.0, -1.0) * c_["polarity"]


@pytest.mark.parametrize("kind", ["lacboost", "fisherboost"])
@pytest.mark.parametrize("theta", [0.3, 3.0])
def test_asymmetric_master_equals_scipy_on_all_stumps(kind, theta):
    rng = np.random.default_rng(0)
    n = 24
    X = rng.integers(0, 4, size=(n, 3)).astype(float)
    ys = np.where(X[:, 0] + rng.normal(0, 1, n) > 1.5, 1.0, -1.0)
    sigma = 1e-3
    res = fit_asymmetric_stage(X, ys, kind=kind, theta=theta, sigma=sigma, max_weak=200)
    A = _all_stump_columns(X)
    Q = scatter_matrix(ys, kind)
    e = np.where(ys > 0, 1 / (ys > 0).sum(), -1 / (ys < 0).sum())
    H = A.T @ (Q + sigma * np.eye(n)) @ A
    c = theta * A.T @ e

    def f(w):
        return 0.5 * w @ H @ w - c @ w, H @ w - c

    ref = _capped_simplex_min(f, A.shape[1])
    # the CG stage's objective, recomputed from its columns and weights
    c_, Acg = _stage_columns(res, X)
    got = asymmetric_objective(c_["w"], Acg, ys, kind=kind, theta=theta, sigma=sigma)
    assert res.history[-1]["objective"] == pytest.approx(got, abs=1e-9)
    # and the stage's score is the columns' weighted sum
    np.testing.assert_allclose(res.stumps.evaluate(X).sum(0), Acg @ c_["w"], atol=1e-12)
    assert got == pytest.approx(ref.fun, abs=1e-7)
    assert got <= ref.fun + 1e-9


# ------------------------------------------------------------- cost-sensitive AdaBoost
@pytest.mark.parametrize("variant", ["discrete", "real", "gentle"])
def test_cost_sensitive_adaboost_is_adaboost_at_equal_costs(variant):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] + X[:, 1] ** 2 + 0.3 * rng.normal(size=120) > 1).astype(int)
    ref = BinaryAdaBoost(variant=variant, max_iter=15).fit(X, y)
    res = fit_cost_sensitive_stage(X, np.where(y == 1, 1.0, -1.0), variant=variant, max_weak=15)
    F = res.stumps.evaluate(X).sum(axis=0)
    np.testing.assert_allclose(F, ref.decision_function(X), rtol=1e-9, atol=1e-9)
    assert [h["objective"] for h in res.history] == pytest.approx(
        [h["objective"] for h in ref.history_], rel=1e-9
    )


@pytest.mark.parametrize("variant", ["discrete", "real", "gentle"])
def test_cost_sensitive_loss_decreases_and_costs_shift_the_boundary(variant):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    ys = np.where(X[:, 0] + 0.8 * rng.normal(size=300) > 0.5, 1.0, -1.0)
    r1 = fit_cost_sensitive_stage(X, ys, variant=variant, max_weak=20)
    r5 = fit_cost_sensitive_stage(X, ys, variant=variant, c_pos=5 / 3, c_neg=1 / 3, max_weak=20)
    obj = [h["objective"] for h in r5.history]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(obj))
    pos = ys > 0
    rec1 = (r1.stumps.evaluate(X).sum(0)[pos] > 0).mean()
    rec5 = (r5.stumps.evaluate(X).sum(0)[pos] > 0).mean()
    assert rec5 > rec1  # a dearer missed positive: higher recall


def test_recycling_reuses_splits():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 5))
    ys = np.where(X[:, 0] > 0.2, 1.0, -1.0)
    first = fit_cost_sensitive_stage(X, ys, variant="gentle", max_weak=10)
    again = fit_cost_sensitive_stage(
        X, ys, variant="gentle", max_weak=10, recycle=first.stumps, recycle_lambda=0.5
    )
    assert again.n_recycled > 0
    assert len(again.stumps) < 10
    lac = fit_asymmetric_stage(
        X, ys, max_weak=10, recycle=first.stumps, recycle_lambda=0.5, theta=3.0
    )
    assert lac.n_recycled > 0


def test_fallbacks_when_the_goal_is_out_of_reach():
    rng = np.random.default_rng(3)
    sp_, sn = rng.normal(0.5, 1, 200), rng.normal(0, 1, 2000)  # a weak stage
    A, B, n = 0.9, 1e-4, 10
    for rule in ("fixed", "one-point", "two-point"):
        far = select_operating_point(sp_, sn, A, B, n, rule=rule, fallback="far")
        rec = select_operating_point(sp_, sn, A, B, n, rule=rule, fallback="recall")
        assert not far.attained and not rec.attained
        _, a, b = roc_points(sp_, sn)
        ok = a >= A ** (1 / n) - 1e-12
        assert rec.far == pytest.approx(b[ok].min())  # brute force: lowest FAR at that recall
        assert rec.recall >= A ** (1 / n) and far.recall < rec.recall
    with pytest.raises(ValueError, match="fallback"):
        select_operating_point(sp_, sn, A, B, n, fallback="both")


# ------------------------------------------------------------- chaining (eq. 4.59)
@pytest.mark.parametrize("kind", ["lacboost", "fisherboost"])
def test_asymmetric_master_with_starting_scores_equals_scipy(kind):
    """F0 = rho0: the master minimises the objective of the scores rho0 + Aw, written out
    over every stump column and solved by SLSQP."""
    rng = np.random.default_rng(3)
    n = 24
    X = rng.integers(0, 4, size=(n, 3)).astype(float)
    ys = np.where(X[:, 0] + rng.normal(0, 1, n) > 1.5, 1.0, -1.0)
    rho0 = 0.4 * np.where(X[:, 1] > 1.5, 1.0, -1.0) + 0.1 * rng.normal(size=n)
    theta, sigma = 1.0, 1e-3
    res = fit_asymmetric_stage(X, ys, kind=kind, theta=theta, sigma=sigma, max_weak=200, F0=rho0)
    A = _all_stump_columns(X)
    Q = scatter_matrix(ys, kind) + sigma * np.eye(n)
    e = np.where(ys > 0, 1 / (ys > 0).sum(), -1 / (ys < 0).sum())

    def full(w):  # the objective of the scores rho0 + Aw, constant included
        r = rho0 + A @ w
        return 0.5 * r @ Q @ r - theta * e @ r, A.T @ (Q @ r - theta * e)

    ref = _capped_simplex_min(full, A.shape[1])
    c_, Acg = _stage_columns(res, X)
    r = rho0 + Acg @ c_["w"]
    got = 0.5 * r @ Q @ r - theta * e @ r
    assert got == pytest.approx(ref.fun, abs=1e-7)
    assert got <= ref.fun + 1e-9
    # the recorded objective omits only the constant of rho0
    const = 0.5 * rho0 @ Q @ rho0 - theta * e @ rho0
    assert res.history[-1]["objective"] == pytest.approx(got - const, abs=1e-9)
    # and the optimum differs from the one without rho0 (F0 is not ignored)
    plain = fit_asymmetric_stage(X, ys, kind=kind, theta=theta, sigma=sigma, max_weak=200)
    assert not np.allclose(plain.stumps.evaluate(X).sum(0), res.stumps.evaluate(X).sum(0))


@pytest.mark.parametrize("variant", ["discrete", "real", "gentle"])
def test_cost_sensitive_stage_from_starting_scores_continues_the_booster(variant):
    """Stage-wise boosting from F0 = the scores after 4 rounds gives exactly rounds 5-9
    of one 9-round run (the chained stage of eq. 4.59 is the booster continued)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 4))
    ys = np.where(X[:, 0] - X[:, 1] ** 2 + 0.4 * rng.normal(size=150) > -0.5, 1.0, -1.0)
    kw = dict(variant=variant, c_pos=1.5, c_neg=0.5)
    whole = fit_cost_sensitive_stage(X, ys, max_weak=9, **kw)
    head = fit_cost_sensitive_stage(X, ys, max_weak=4, **kw)
    F4 = head.stumps.evaluate(X).sum(0)
    tail = fit_cost_sensitive_stage(X, ys, max_weak=5, F0=F4, **kw)
    np.testing.assert_allclose(
        F4 + tail.stumps.evaluate(X).sum(0), whole.stumps.evaluate(X).sum(0), atol=1e-10
    )
    assert [h["objective"] for h in tail.history] == pytest.approx(
        [h["objective"] for h in whole.history[4:]], rel=1e-10
    )


def test_starting_scores_must_match_the_rows():
    X = np.random.default_rng(0).normal(size=(20, 2))
    ys = np.r_[np.ones(10), -np.ones(10)]
    for fit in (fit_cost_sensitive_stage, fit_asymmetric_stage):
        with pytest.raises(ValueError, match="F0"):
            fit(X, ys, F0=np.zeros(19))
        with pytest.raises(ValueError, match="F0"):
            fit(X, ys, F0=np.r_[np.zeros(19), np.nan])
