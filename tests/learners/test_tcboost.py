"""TCBoostClassifier (issue 14, seed 002 Ch. 3): LPBoost equals binary StructBoost, the
L1 problems reach the optimum over *all* stumps (solved independently), the masters are
optimal on their columns, and the dual bounds are valid."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog, minimize
from sklearn.datasets import make_classification

from maxmargin import BinaryAdaBoost, StructBoostClassifier, TCBoostClassifier, load, save
from maxmargin.weak.reference import all_stumps


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=50, n_features=3, n_informative=2, n_redundant=0, flip_y=0.1, random_state=0
    )
    return X, y


def _margins(X, y, H):
    s = np.where(y == 1, 1.0, -1.0)
    return s[:, None] * H.T


def _full_lp(X, y, C):
    """LPBoost over every stump, written out for linprog."""
    M = _margins(X, y, all_stumps(X).evaluate(X))
    n, T = M.shape
    A = np.hstack([-M, -np.eye(n)])
    cost = np.r_[np.ones(T), np.full(n, C / n)]
    return linprog(cost, A_ub=A, b_ub=-np.ones(n), bounds=(0, None), method="highs").fun


def _smooth(M, C, loss, penalty):
    n, T = M.shape
    c = C / n

    def f(w):
        m = M @ w
        if loss == "exp":
            L, dL = np.exp(-m), -np.exp(-m)
        else:
            L, dL = np.logaddexp(0, -m), -1 / (1 + np.exp(m))
        reg, dreg = (w.sum(), np.ones(T)) if penalty == "l1" else (0.5 * w @ w, w)
        return reg + c * L.sum(), dreg + c * M.T @ dL

    r = minimize(f, np.zeros(T), jac=True, method="L-BFGS-B", bounds=[(0, None)] * T,
                 options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 50000})  # fmt: skip
    return r.fun


def test_lpboost_equals_binary_structboost(data):
    X, y = data
    C = 10.0
    tc = TCBoostClassifier(loss="hinge", penalty="l1", C=C, max_iter=300).fit(X, y)
    assert tc.converged_ and tc.history_[-1]["gain"] <= 1 + 1e-6
    sb = StructBoostClassifier(C=C, max_iter=300, eps_cg=1e-9, random_state=0, certify="exact").fit(
        X, y
    )
    assert tc.objective_ == pytest.approx(sb.objective_, rel=1e-6)
    assert tc.objective_ == pytest.approx(_full_lp(X, y, C), rel=1e-7)
    assert tc.history_[-1]["gap"] < 1e-6  # certified for the whole stump class


@pytest.mark.parametrize("loss", ["exp", "logistic"])
def test_l1_smooth_losses_reach_the_optimum_over_all_stumps(data, loss):
    X, y = data
    C = 10.0
    tc = TCBoostClassifier(loss=loss, penalty="l1", C=C, max_iter=300).fit(X, y)
    assert tc.converged_
    full = _smooth(_margins(X, y, all_stumps(X).evaluate(X)), C, loss, "l1")
    assert tc.objective_ == pytest.approx(full, rel=1e-6)
    for rec in tc.history_:  # every bound is below the optimum over all stumps
        assert rec["dual_bound"] <= full * (1 + 1e-7) and rec["objective"] >= full * (1 - 1e-7)


@pytest.mark.parametrize("loss", ["exp", "logistic", "hinge"])
def test_l2_master_is_optimal_on_its_weak_learners(data, loss):
    X, y = data
    C = 10.0
    tc = TCBoostClassifier(loss=loss, penalty="l2", C=C, max_iter=8).fit(X, y)
    assert len(tc.coef_) == 8 and np.all(tc.coef_ >= 0)
    M = _margins(X, y, tc.hypotheses_.evaluate(X))
    if loss == "hinge":  # QP in (w, xi): its optimum through the box dual, by L-BFGS-B
        c = C / len(y)
        r = minimize(
            lambda a: (0.5 * np.maximum(M.T @ a, 0) @ np.maximum(M.T @ a, 0) - a.sum(),
                       M @ np.maximum(M.T @ a, 0) - 1),
            np.zeros(len(y)), jac=True, method="L-BFGS-B", bounds=[(0, c)] * len(y),
            options={"ftol": 1e-15, "gtol": 1e-11},
        )  # fmt: skip
        ref = -r.fun
    else:
        ref = _smooth(M, C, loss, "l2")
    assert tc.objective_ == pytest.approx(ref, rel=1e-5)
    objs = np.array([r["objective"] for r in tc.history_])
    assert np.all(objs[1:] <= objs[:-1] * (1 + 1e-9))


def test_continuous_weak_learners_and_round_trip(data, tmp_path):
    X, y = data
    for weak in ("real_stump", "realboost_stump"):
        tc = TCBoostClassifier(loss="exp", C=10.0, weak_learner=weak, max_iter=10).fit(X, y)
        assert tc.score(X, y) > 0.8
        back = load(save(tc, tmp_path / "m.npz"))
        np.testing.assert_array_equal(back.decision_function(X), tc.decision_function(X))


def test_multiclass_is_refused(data):
    X, _ = data
    with pytest.raises(ValueError, match="binary"):
        TCBoostClassifier().fit(X, np.arange(len(X)) % 3)


def test_adaboost_first_rounds_by_hand(data):
    X, y = data
    s = np.where(y == 1, 1.0, -1.0)
    n = len(y)
    D = np.full(n, 1.0 / n)
    H = all_stumps(X).evaluate(X)
    # Discrete: the largest edge and alpha = 1/2 log((1 + r) / (1 - r))
    r = float((H @ (D * s)).max())
    est = BinaryAdaBoost(variant="discrete", max_iter=1).fit(X, y)
    F = est.decision_function(X)
    alpha = 0.5 * np.log((1 + r) / (1 - r))
    assert est.coef_[0] == pytest.approx(alpha, rel=1e-12)
    assert D @ (s * F) / alpha == pytest.approx(r, rel=1e-12)
    assert est.history_[0]["objective"] == pytest.approx(np.mean(np.exp(-s * F)), rel=1e-12)
    # Gentle: on each side of the split the weighted mean of y; the split maximises
    # sum_sides (P - N)^2 / (P + N) over every threshold
    est = BinaryAdaBoost(variant="gentle", max_iter=1).fit(X, y)
    F = est.decision_function(X)
    for v in np.unique(F):
        assert v == pytest.approx(s[F == v].mean(), rel=1e-12)

    def fit_value(side):
        tot = 0.0
        for part in (side, ~side):
            if part.any():
                tot += (D[part] @ s[part]) ** 2 / D[part].sum()
        return tot

    best = max(fit_value(h > 0) for h in H)
    assert fit_value(F > F.min()) == pytest.approx(best, rel=1e-12)
    # Real: 1/2 log((P + eps) / (N + eps)) on each side, eps = 1 / (2n)
    est = BinaryAdaBoost(variant="real", max_iter=1).fit(X, y)
    F = est.decision_function(X)
    eps = 1 / (2 * n)
    for v in np.unique(F):
        part = F == v
        P, N = D[part & (s > 0)].sum(), D[part & (s < 0)].sum()
        assert v == pytest.approx(0.5 * np.log((P + eps) / (N + eps)), rel=1e-10)
    # later rounds keep lowering the exponential loss
    for variant in ("discrete", "real", "gentle"):
        est = BinaryAdaBoost(variant=variant, max_iter=15).fit(X, y)
        obj = np.array([h["objective"] for h in est.history_])
        assert np.all(np.diff(obj) <= 1e-12) and est.score(X, y) > 0.8
