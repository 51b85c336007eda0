"""ForwardFeatureSelector (issue 14, seed 002 Sec. 2.4): the restricted problems equal the
problem solved independently on the selected columns, the L1 stopping rule gives the LP
optimum over all columns, and the selector works in a Pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog, minimize
from sklearn.datasets import make_classification
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from maxmargin import ForwardFeatureSelector


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=80, n_features=15, n_informative=4, n_redundant=2, flip_y=0.05, random_state=3
    )
    return X, np.where(y == 1, 1.0, -1.0)


def _lp_l1_hinge(X, y, C):
    """min ||w||_1 + C sum xi, y_i(<w, x_i> + b) >= 1 - xi: written out for linprog."""
    n, d = X.shape
    A = np.hstack([-y[:, None] * X, y[:, None] * X, -y[:, None], -np.eye(n)])
    cost = np.r_[np.ones(2 * d), 0.0, np.full(n, C)]
    bounds = [(0, None)] * (2 * d) + [(None, None)] + [(0, None)] * n
    return linprog(cost, A_ub=A, b_ub=-np.ones(n), bounds=bounds, method="highs").fun


def _l2_hinge(X, y, C):
    """Dual of 1/2||(w, b)||^2 + C sum hinge with a constant column (L-BFGS-B on the box)."""
    Xa = np.hstack([X, np.ones((len(X), 1))])
    Q = (y[:, None] * y[None, :]) * (Xa @ Xa.T)
    r = minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1),
        np.zeros(len(y)),
        jac=True,
        bounds=[(0, C)] * len(y),
        method="L-BFGS-B",
        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000},
    )
    return -r.fun


def _logistic(X, y, C, l1):
    n, d = X.shape
    if not l1:
        Xa = np.hstack([X, np.ones((n, 1))])

        def f(w):
            m = y * (Xa @ w)
            return 0.5 * w @ w + C * np.logaddexp(0, -m).sum(), w - C * Xa.T @ (y / (1 + np.exp(m)))

        return minimize(
            f, np.zeros(d + 1), jac=True, method="L-BFGS-B", options={"gtol": 1e-10}
        ).fun

    def g(z):
        w = z[:d] - z[d : 2 * d]
        m = y * (X @ w + z[-1])
        r = -C * y / (1 + np.exp(m))
        gw = X.T @ r
        return z[: 2 * d].sum() + C * np.logaddexp(0, -m).sum(), np.r_[1 + gw, 1 - gw, r.sum()]

    bounds = [(0, None)] * (2 * d) + [(None, None)]
    return minimize(g, np.zeros(2 * d + 1), jac=True, method="L-BFGS-B", bounds=bounds,
                    options={"gtol": 1e-10, "maxiter": 20000}).fun  # fmt: skip


def _reference(X, y, C, loss, penalty):
    if loss == "hinge":
        return _lp_l1_hinge(X, y, C) if penalty == "l1" else _l2_hinge(X, y, C)
    return _logistic(X, y, C, penalty == "l1")


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("penalty", ["l2", "l1"])
def test_restricted_problem_equals_the_problem_on_the_selected_columns(data, loss, penalty):
    X, y = data
    C = 0.5
    sel = ForwardFeatureSelector(n_features_to_select=4, loss=loss, penalty=penalty, C=C).fit(X, y)
    assert sel.get_support().sum() == len(sel.order_) <= 4
    ref = _reference(X[:, sel.get_support()], y, C, loss, penalty)
    assert sel.objective_ == pytest.approx(ref, rel=1e-5)
    objs = np.array([r["objective"] for r in sel.history_])
    assert np.all(objs[1:] <= objs[:-1] * (1 + 1e-7))  # never worse
    # every recorded dual bound is below the optimum over all columns
    full = _reference(X, y, C, loss, penalty)
    assert all(r["dual_bound"] <= full * (1 + 1e-6) for r in sel.history_)
    assert all(r["objective"] >= full * (1 - 1e-6) for r in sel.history_)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_l1_stopping_rule_reaches_the_full_optimum(data, loss):
    X, y = data
    C = 0.2
    sel = ForwardFeatureSelector(loss=loss, penalty="l1", C=C, tol=1e-6).fit(X, y)
    full = _reference(X, y, C, loss, "l1")
    assert sel.support_.sum() < X.shape[1]  # stopped early, with a sparse model
    assert sel.history_[-1]["max_violation"] <= 1 + 1e-4
    assert sel.objective_ == pytest.approx(full, rel=1e-5)
    if loss == "hinge":  # the LP of the thesis, solved independently over all columns
        assert sel.objective_ == pytest.approx(_lp_l1_hinge(X, y, C), rel=1e-7)


def test_l2_stopping_rule_bounds_the_full_gap(data):
    X, y = data
    C = 0.5
    sel = ForwardFeatureSelector(C=C, tol=3e-2, features_per_step=2).fit(X, y)
    full = _l2_hinge(X, y, C)
    rec = sel.history_[-1]
    assert rec["gap"] <= 3e-2
    assert (sel.objective_ - full) / sel.objective_ <= rec["gap"] + 1e-9


def test_first_column_is_the_largest_score(data):
    X, y = data
    sel = ForwardFeatureSelector(n_features_to_select=1, C=1.0).fit(X, y)
    # with no feature, the intercept-only SVM; its multipliers give the first scores
    s0 = abs(sel.history_[0]["max_violation"])
    assert s0 > 0 and sel.order_.shape == (1,)


def test_pipeline_and_multiclass():
    X, y = make_classification(
        n_samples=150, n_features=20, n_informative=5, n_classes=3, random_state=0
    )
    sel = ForwardFeatureSelector(n_features_to_select=6, features_per_step=2, inner_tol=1e-3)
    pipe = make_pipeline(sel, LinearSVC()).fit(X, y)
    sel = pipe[0]
    assert sel.get_support().sum() == 6 and sel.coef_.shape == (3, 20)
    assert sel.transform(X).shape == (150, 6)
    assert pipe.score(X, y) > 0.6
    frac = ForwardFeatureSelector(n_features_to_select=0.25, loss="logistic").fit(X, y)
    assert frac.get_support().sum() == 5


@pytest.mark.parametrize(
    ("step", "sizes"),
    [
        (3, [0, 3, 6, 9, 12]),
        (0.25, [0, 1, 2, 3, 4, 5, 7, 9, 12]),  # ceil(0.25 * selected), at least one
        ("auto", list(range(13))),  # 0.1: one per round to 11 features, then ceil(1.1) = 2
    ],
)
def test_features_per_step_sets_the_rounds(data, step, sizes):
    X, y = data
    sel = ForwardFeatureSelector(n_features_to_select=12, features_per_step=step).fit(X, y)
    assert [r["n_selected"] for r in sel.history_] == sizes


def test_capped_pricing_rounds_still_end_on_the_restricted_optimum():
    """Rounds solved for pricing with a one-epoch cap (pricing_epochs=1) and uncapped
    select columns whose final restricted problem is solved fully: the objective is the
    sum of the one-vs-rest optima on the selected columns (scipy)."""
    X, y = make_classification(
        n_samples=90, n_features=12, n_informative=4, n_classes=3, random_state=1
    )
    C = 0.5
    for cap in (1, None):
        sel = ForwardFeatureSelector(
            n_features_to_select=5, C=C, pricing_epochs=cap, inner_tol=1e-9
        ).fit(X, y)
        Xs = X[:, sel.get_support()]
        ref = sum(_l2_hinge(Xs, np.where(y == c, 1.0, -1.0), C) for c in range(3))
        assert sel.objective_ == pytest.approx(ref, rel=1e-6)


def test_scores_of_all_classes_in_one_product_equal_the_per_class_scores():
    import scipy.sparse as sp

    from maxmargin.solvers.feature_selection import column_scores

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 7)) * (rng.random((30, 7)) < 0.5)
    Y = np.where(rng.random((30, 3)) < 0.5, 1.0, -1.0)
    A = rng.random((30, 3))
    for M in (X, sp.csc_matrix(X)):
        S = column_scores(M, Y, A)
        assert S.shape == (7, 3)
        for c in range(3):
            np.testing.assert_allclose(S[:, c], column_scores(M, Y[:, c], A[:, c]), rtol=1e-12)
            np.testing.assert_allclose(S[:, c], X.T @ (A[:, c] * Y[:, c]), rtol=1e-12)


def test_bad_features_per_step_and_pricing_options(data):
    X, y = data
    for kw in (
        {"features_per_step": 0},
        {"features_per_step": 1.5},
        {"features_per_step": "many"},
        {"pricing_tol": 0.0},
        {"pricing_epochs": 0},
    ):
        with pytest.raises(ValueError):
            ForwardFeatureSelector(**kw).fit(X, y)
