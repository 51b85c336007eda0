"""ForwardFeatureSelector (issue 14, seed 002 Sec. 2.4): the restricted problems equal the
problem solved independently on the selected columns, the L1 stopping rule gives the LP
optimum over all columns, and the selector works in a Pipeline."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
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


def _l2_dual(X, y, C, squared=False):
    """Dual of 1/2||(w, b)||^2 + C sum hinge (``squared``: squared hinge) with a constant
    column, by L-BFGS-B: max e^T a - 1/2 a^T Q a over the box 0 <= a <= C (hinge), or
    over a >= 0 with I / (2C) added to Q (squared hinge) -- an independent route to the
    optimum."""
    Xa = np.hstack([X, np.ones((len(X), 1))])
    Q = (y[:, None] * y[None, :]) * (Xa @ Xa.T)
    if squared:
        Q = Q + np.eye(len(y)) / (2 * C)
    r = minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1),
        np.zeros(len(y)),
        jac=True,
        bounds=[(0, None if squared else C)] * len(y),
        method="L-BFGS-B",
        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000},
    )
    return -r.fun


def _l2_hinge(X, y, C):
    """Dual of 1/2||(w, b)||^2 + C sum hinge with a constant column (L-BFGS-B on the box)."""
    return _l2_dual(X, y, C)


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
        {"overselect": 0.5},
        {"overselect": np.inf},
    ):
        with pytest.raises(ValueError):
            ForwardFeatureSelector(**kw).fit(X, y)


def _l2_hinge_weights(X, y, C):
    """Weights (without the intercept) of 1/2||(w, b)||^2 + C sum hinge, from its dual
    solved by L-BFGS-B on the box (independent of dual CD)."""
    Xa = np.hstack([X, np.ones((len(X), 1))])
    Z = y[:, None] * Xa
    Q = Z @ Z.T
    r = minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1),
        np.zeros(len(y)),
        jac=True,
        bounds=[(0, C)] * len(y),
        method="L-BFGS-B",
        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000},
    )
    return (Z.T @ r.x)[:-1]


def test_backward_pass_removes_the_smallest_weights_of_the_restricted_problem(data):
    """overselect: forward to ceil(2.5 * 3) = 8 columns, then one column per round
    (ceil(0.1 * 8) = 1) removed -- the one of smallest |w_j| of the restricted problem on
    the remaining columns, replayed here with weights from an independent dual solve."""
    X, y = data
    C = 0.5
    exact = {"features_per_step": 1, "pricing_tol": 1e-9, "inner_tol": 1e-9, "pricing_epochs": None}
    sel = ForwardFeatureSelector(n_features_to_select=3, overselect=2.5, C=C, **exact).fit(X, y)
    fwd = ForwardFeatureSelector(n_features_to_select=8, C=C, **exact).fit(X, y)
    cols = list(fwd.order_)
    assert [r["n_selected"] for r in sel.history_] == [*range(9), 7, 6, 5, 4, 3]
    assert [r["phase"] for r in sel.history_] == ["forward"] * 9 + ["backward"] * 5
    removed = []
    while len(cols) > 3:
        w = _l2_hinge_weights(X[:, cols], y, C)
        removed.append(cols.pop(int(np.argmin(np.abs(w)))))
    assert list(sel.removed_) == removed
    # the kept set is the better (smaller restricted objective) of the forward prefix and
    # the backward pass's set, both solved independently here
    ref_f = _l2_hinge(X[:, fwd.order_[:3]], y, C)
    ref_b = _l2_hinge(X[:, cols], y, C)
    assert sel.objective_ == pytest.approx(min(ref_f, ref_b), rel=1e-6)
    best = cols if ref_b < ref_f else list(fwd.order_[:3])
    assert sorted(sel.order_) == sorted(best)
    assert sel.selected_by_ == ("backward" if ref_b < ref_f else "forward")
    assert sel.support_.sum() == 3


@pytest.mark.parametrize("seed", range(6))
def test_overselect_keeps_the_better_of_the_forward_and_backward_sets(seed):
    """Whatever the backward pass finds, the kept set's restricted objective is at most
    the forward set's of the same size (the forward candidate is solved to inner_tol and
    compared); on these problems the backward set wins at least once."""
    X, y = make_classification(
        n_samples=120, n_features=30, n_informative=6, n_redundant=6, n_classes=3,
        flip_y=0.05, random_state=seed,
    )  # fmt: skip
    C = 1.0
    sel = ForwardFeatureSelector(n_features_to_select=4, overselect=3.0, C=C, inner_tol=1e-9)
    sel.fit(X, y)
    fwd = ForwardFeatureSelector(n_features_to_select=4, C=C, inner_tol=1e-9).fit(X, y)
    ys = [np.where(y == c, 1.0, -1.0) for c in range(3)]
    ref = sum(_l2_hinge(X[:, sel.support_], yc, C) for yc in ys)
    ref_fwd = sum(_l2_hinge(X[:, fwd.support_], yc, C) for yc in ys)
    assert sel.objective_ == pytest.approx(ref, rel=1e-6)
    assert ref <= ref_fwd * (1 + 1e-6)
    rows = [r for r in sel.history_ if r["n_selected"] == 4]
    assert [r["phase"] for r in rows] == ["forward", "backward"]
    assert sel.objective_ == pytest.approx(min(r["objective"] for r in rows), rel=1e-12)
    _SEEN.add(sel.selected_by_)


_SEEN: set = set()


def test_overselect_backward_set_won_somewhere():
    assert "backward" in _SEEN  # run after the parametrised test above


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("penalty", ["l2", "l1"])
def test_overselect_restricted_problem_equals_the_problem_on_the_selected_columns(
    data, loss, penalty
):
    """After the backward pass (warm starts with the removed columns dropped) the final
    model is the optimum on the selected columns, with exactly the budget."""
    X, y = data
    C = 0.5
    sel = ForwardFeatureSelector(
        n_features_to_select=4, overselect=2.0, loss=loss, penalty=penalty, C=C
    ).fit(X, y)
    assert sel.get_support().sum() == len(sel.order_) == 4
    ref = _reference(X[:, sel.get_support()], y, C, loss, penalty)
    assert sel.objective_ == pytest.approx(ref, rel=1e-5)
    assert not np.any(sel.coef_[:, ~sel.get_support()])
    assert len(sel.removed_) == 4  # forward to 8, backward to 4
    if sel.selected_by_ == "backward":
        assert set(sel.removed_).isdisjoint(sel.order_)


def test_dropping_columns_from_a_warm_start():
    from maxmargin.solvers.feature_selection import _drop_columns

    warm = {"w_full": np.array([1.0, 2.0, 3.0, 9.0]), "z": np.arange(7.0), "a": np.ones(5)}
    _drop_columns(warm, np.array([True, False, True]))
    np.testing.assert_array_equal(warm["w_full"], [1.0, 3.0, 9.0])  # intercept kept last
    np.testing.assert_array_equal(warm["z"], [0.0, 2.0, 3.0, 5.0, 6.0])  # u, v, b
    np.testing.assert_array_equal(warm["a"], np.ones(5))  # multipliers untouched


def test_overselect_without_a_budget_is_ignored(data):
    X, y = data
    a = ForwardFeatureSelector(overselect=3.0, tol=3e-2).fit(X, y)
    b = ForwardFeatureSelector(tol=3e-2).fit(X, y)
    np.testing.assert_array_equal(a.order_, b.order_)
    assert a.removed_.size == 0 and a.selected_by_ == "forward"


def test_interrupt_in_the_backward_pass_keeps_the_forward_set(data):
    """Ctrl-C during the backward pass: the forward set of the budget (solved to
    inner_tol) is kept, never a set of the wrong size."""
    from maxmargin.exceptions import FitInterruptedWarning

    X, y = data

    def stop(rec):
        if rec["phase"] == "backward" and rec["n_selected"] > 3:
            raise KeyboardInterrupt

    with pytest.warns(FitInterruptedWarning):
        sel = ForwardFeatureSelector(
            n_features_to_select=3, overselect=3.0, inner_tol=1e-9, callback=stop
        ).fit(X, y)
    fwd = ForwardFeatureSelector(n_features_to_select=3, inner_tol=1e-9).fit(X, y)
    np.testing.assert_array_equal(sel.order_, fwd.order_)
    assert sel.objective_ == pytest.approx(fwd.objective_, rel=1e-9)
    assert sel.selected_by_ == "forward"


def test_overselect_with_sparse_input(data):

    X, y = data
    Xs = X * (np.abs(X) > 0.5)
    a = ForwardFeatureSelector(n_features_to_select=4, overselect=2.0, inner_tol=1e-9)
    b = ForwardFeatureSelector(n_features_to_select=4, overselect=2.0, inner_tol=1e-9)
    a.fit(Xs, y)
    b.fit(sp.csr_matrix(Xs), y)
    np.testing.assert_array_equal(np.sort(a.order_), np.sort(b.order_))
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)


# ------------------------------------------------- squared hinge (Newton) and k_path
def _l2_sqhinge(X, y, C):
    """Dual of 1/2||(w, b)||^2 + C sum max(0, 1 - m)^2 with a constant column."""
    return _l2_dual(X, y, C, squared=True)


def _multiclass(seed=0, n=150, d=30):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=6, n_redundant=6, n_classes=3,
        flip_y=0.05, random_state=seed,
    )  # fmt: skip
    return X, y


def test_newton_line_search_is_exact():
    """The compiled line search returns the minimiser of the piecewise quadratic along
    the direction (against scipy's bounded scalar minimiser)."""
    from scipy.optimize import minimize_scalar

    from maxmargin.solvers.feature_selection import _line_search_steps

    rng = np.random.default_rng(0)
    n, c, C = 200, 4, 0.7
    M = rng.normal(1.0, 1.0, size=(n, c))
    DM = rng.normal(0.0, 1.0, size=(n, c))
    W = rng.normal(size=(6, c))
    D = rng.normal(size=(6, c))
    wd, dd = (W * D).sum(0), (D * D).sum(0)
    # make every direction a descent direction
    g0 = wd - 2 * C * (np.maximum(0, 1 - M) * DM).sum(0)
    D[:, g0 >= 0] *= -1
    DM[:, g0 >= 0] *= -1
    wd = (W * D).sum(0)
    t = _line_search_steps(M, DM, wd, dd, C, np.ones(c, dtype=bool))
    for j in range(c):

        def phi(s, j=j):
            w = W[:, j] + s * D[:, j]
            h = np.maximum(0, 1 - M[:, j] - s * DM[:, j])
            return 0.5 * w @ w + C * h @ h

        ref = minimize_scalar(phi, bounds=(0, 50), method="bounded", options={"xatol": 1e-12})
        assert t[j] == pytest.approx(ref.x, abs=1e-6)
        assert phi(t[j]) <= ref.fun + 1e-9
    assert not _line_search_steps(M, DM, wd, dd, C, np.zeros(c, dtype=bool)).any()


def test_squared_hinge_restricted_problem_equals_the_problem_on_the_selected_columns(data):
    X, y = data
    C = 0.5
    sel = ForwardFeatureSelector(n_features_to_select=4, loss="squared_hinge", C=C).fit(X, y)
    ref = _l2_sqhinge(X[:, sel.get_support()], y, C)
    assert sel.objective_ == pytest.approx(ref, rel=1e-6)
    full = _l2_sqhinge(X, y, C)
    assert all(r["dual_bound"] <= full * (1 + 1e-6) for r in sel.history_)
    assert all(r["objective"] >= full * (1 - 1e-6) for r in sel.history_)


def test_squared_hinge_dual_cd_fallback_agrees_with_newton(data, monkeypatch):
    """Sparse input (the Newton rounds on its densified columns, or dual CD where the
    restricted data is sparse), or more columns than NEWTON_MAX_COLUMNS (dual CD): the
    same restricted optima."""

    import maxmargin.solvers.feature_selection as fsmod

    X, y = data
    kw = {"n_features_to_select": 5, "loss": "squared_hinge", "inner_tol": 1e-9,
          "pricing_tol": 1e-9, "pricing_epochs": None, "features_per_step": 1}  # fmt: skip
    a = ForwardFeatureSelector(**kw).fit(X, y)
    b = ForwardFeatureSelector(**kw).fit(sp.csr_matrix(X * (np.abs(X) > 0.3)), y)
    ref_b = _l2_sqhinge((X * (np.abs(X) > 0.3))[:, b.get_support()], y, 1.0)
    assert b.objective_ == pytest.approx(ref_b, rel=1e-6)
    monkeypatch.setattr(fsmod, "NEWTON_MAX_COLUMNS", 3)
    c = ForwardFeatureSelector(**kw).fit(X, y)
    np.testing.assert_array_equal(a.order_, c.order_)
    assert c.objective_ == pytest.approx(a.objective_, rel=1e-7)


_PATH_SEEN: set = set()


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_k_path_records_every_k_from_one_fit(loss, seed):
    """One fit with k_path: forward to overselect * max(k), one backward pass landing on
    every k; each recorded set has k columns, its objective is the restricted optimum on
    them (independent dual solves) and at most the forward prefix's of the same size."""
    X, y = _multiclass(seed)
    C = 1.0
    ref_fn = _l2_hinge if loss == "hinge" else _l2_sqhinge
    ys = [np.where(y == c, 1.0, -1.0) for c in range(3)]
    sel = ForwardFeatureSelector(
        k_path=[6, 2, 4], overselect=2.0, loss=loss, C=C, inner_tol=1e-9
    ).fit(X, y)
    assert [e["k"] for e in sel.path_] == [2, 4, 6]
    hist = sel.history_
    assert max(r["n_selected"] for r in hist) == 12  # forward to 2 * 6
    phases = {(r["n_selected"], r["phase"]) for r in hist}
    for k in (2, 4, 6):
        assert (k, "forward") in phases and (k, "backward") in phases
        e = sel.path_[[2, 4, 6].index(k)]
        cols = e["columns"]
        assert len(set(cols.tolist())) == k
        ref = sum(ref_fn(X[:, cols], yc, C) for yc in ys)
        assert e["objective"] == pytest.approx(ref, rel=1e-6)
        fwd = [r["objective"] for r in hist if r["n_selected"] == k and r["phase"] == "forward"]
        bwd = [r["objective"] for r in hist if r["n_selected"] == k and r["phase"] == "backward"]
        assert e["objective"] == pytest.approx(min(fwd[-1], bwd[-1]), rel=1e-12)
        if bwd[-1] < fwd[-1] * (1 - 1e-9):
            assert e["selected_by"] == "backward"
        elif fwd[-1] < bwd[-1] * (1 - 1e-9):
            assert e["selected_by"] == "forward"
        _PATH_SEEN.add(e["selected_by"])
    # the selector itself: the largest k (no budget given)
    np.testing.assert_array_equal(sel.get_support(), sel.get_support_at(6))
    assert sel.objective_ == pytest.approx(sel.path_[-1]["objective"], rel=1e-12)
    assert sel.transform(X).shape == (len(X), 6)


def test_k_path_both_sets_won_somewhere():
    assert _PATH_SEEN == {"forward", "backward"}  # run after the parametrised test above


def test_k_path_with_a_budget_and_without_overselect():
    X, y = _multiclass(3)
    sel = ForwardFeatureSelector(n_features_to_select=4, k_path=(2, 4, 8), overselect=2.0)
    sel.fit(X, y)
    np.testing.assert_array_equal(sel.get_support(), sel.get_support_at(4))
    assert sel.transform(X).shape == (len(X), 4)
    assert max(r["n_selected"] for r in sel.history_) == 16
    # without a backward pass the sets are the forward prefixes of one order
    fw = ForwardFeatureSelector(k_path=[2, 4, 8]).fit(X, y)
    for e in fw.path_:
        np.testing.assert_array_equal(e["columns"], fw.order_[: e["k"]])
        assert e["selected_by"] == "forward"
    assert not ForwardFeatureSelector(n_features_to_select=3).fit(X, y).path_


def test_k_path_bad_input():
    X, y = _multiclass(0, n=60, d=14)
    with pytest.raises(ValueError, match="must be one of k_path"):
        ForwardFeatureSelector(n_features_to_select=3, k_path=[2, 4]).fit(X, y)
    for bad in ([], [0, 2], [2.5], ["a"]):
        with pytest.raises(ValueError, match="k_path"):
            ForwardFeatureSelector(k_path=bad).fit(X, y)
    with pytest.raises(ValueError, match="k_path"):
        ForwardFeatureSelector(k_path=3).fit(X, y)
    sel = ForwardFeatureSelector(k_path=[2, 4]).fit(X, y)
    with pytest.raises(ValueError, match="no set of 3 features"):
        sel.get_support_at(3)
    with pytest.raises(ValueError, match="penalty='l2' only"):
        ForwardFeatureSelector(loss="squared_hinge", penalty="l1").fit(X, y)
    with pytest.raises(ValueError, match="backward_step"):
        ForwardFeatureSelector(backward_step=1.0).fit(X, y)


def test_k_path_backward_step_sets_the_backward_rounds():
    X, y = _multiclass(4)
    sel = ForwardFeatureSelector(k_path=[3, 10], overselect=3.0, backward_step=0.2).fit(X, y)
    sizes = [r["n_selected"] for r in sel.history_ if r["phase"] == "backward"]
    # from 30: a fifth (rounded up) per round, landing on 10, then on 3
    assert sizes == [24, 19, 15, 12, 10, 8, 6, 4, 3]
    # 3 * 10 = all 30 columns: after the largest k one round adds every remaining column
    fwd = [r["n_selected"] for r in sel.history_ if r["phase"] == "forward"]
    assert fwd[-2:] == [10, 30]


def test_k_path_save_load_round_trip(tmp_path):
    import maxmargin

    X, y = _multiclass(5, n=80, d=12)
    sel = ForwardFeatureSelector(k_path=[2, 5], overselect=2.0, loss="squared_hinge").fit(X, y)
    back = maxmargin.load(maxmargin.save(sel, tmp_path / "ffs.npz"))
    for a, b in zip(sel.path_, back.path_):
        assert a["k"] == b["k"] and a["selected_by"] == b["selected_by"]
        np.testing.assert_array_equal(a["columns"], b["columns"])
    np.testing.assert_array_equal(back.get_support_at(2), sel.get_support_at(2))


def test_restricted_data_drop_equals_the_data_formed_afresh():
    from maxmargin.solvers.feature_selection import restricted_data, restricted_data_drop

    X, _ = _multiclass(6)
    order = [4, 9, 1, 22, 7, 13]
    keep = np.array([True, False, True, True, False, True])
    cut = restricted_data_drop(restricted_data(X, order), keep)
    ref = restricted_data(X, [c for c, k in zip(order, keep) if k])
    np.testing.assert_array_equal(cut[0].M, ref[0].M)
    np.testing.assert_allclose(cut[0].sqn, ref[0].sqn, rtol=1e-12)
    assert cut[1] == ref[1] and cut[0].dense
    # data kept as CSR (under a tenth non-zero) are formed anew (None)

    Xs = sp.csr_matrix(X * (np.abs(X) > np.quantile(np.abs(X), 0.97)))
    sparse = restricted_data(Xs, list(range(30)))
    assert not sparse[0].dense
    assert restricted_data_drop(sparse, np.arange(30) % 2 == 0) is None


# ------------------------------------------- compiled rounds (SquaredHingeRounds)
def _newton_step_reference(Xc, Y, C, W):
    """One step of the finite Newton method from W, written out densely: per problem the
    minimiser of the quadratic on the active rows ``{m_i < 1}`` (``numpy.linalg.solve``),
    then the step length minimising the objective along the direction (scipy's bounded
    scalar minimiser) -- an independent route to what one capped solve must return."""
    from scipy.optimize import minimize_scalar

    out = W.copy()
    for j in range(Y.shape[1]):
        y, w = Y[:, j], W[:, j]
        act = y * (Xc @ w) < 1.0
        XA = Xc[act]
        wbar = np.linalg.solve(np.eye(Xc.shape[1]) + 2 * C * XA.T @ XA, 2 * C * XA.T @ y[act])

        def phi(t, w=w, d=wbar - w, y=y):
            v = w + t * d
            h = np.maximum(0, 1 - y * (Xc @ v))
            return 0.5 * v @ v + C * h @ h

        t = minimize_scalar(phi, bounds=(0, 50), method="bounded", options={"xatol": 1e-12}).x
        out[:, j] = w + t * (wbar - w)
    return out


@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_rounds_reach_the_independent_optimum(sparse):
    """The compiled rounds (one numba call per solve, column buffer grown in place)
    through columns added and removed, capped (one-step) and full solves: every full solve
    reaches the independent dual optimum of each problem on the current columns with a
    certified gap (the multipliers give the weights, ``w = X^T (a * y)``); every capped
    solve is one step of the Newton method written out densely; the kept Gram matrices
    equal those formed afresh; the pricing scores equal ``X^T (a * y)`` over every column.
    A sparse X (columns densified into the buffer, the pricing product outside numba)
    gives the same iterates."""
    from maxmargin.solvers.feature_selection import SquaredHingeRounds

    X, y = _multiclass(1)
    C = 0.3
    Y = np.column_stack([np.where(y == c, 1.0, -1.0) for c in range(3)])
    rs = SquaredHingeRounds(sp.csr_matrix(X) if sparse else X, Y, C, capacity=20, cols=[0, 1, 2, 3])
    cols = [0, 1, 2, 3]
    W_prev = np.zeros((5, 3))
    steps = [("start", 1), ("add", 1), ("add", 100), ("drop", 1), ("add", 100),
             ("drop", 100), ("same", 100), ("add", 1), ("same", 1)]  # fmt: skip
    for step, max_iter in steps:
        if step == "add":
            new = [j for j in range(7, 30) if j not in cols][:4]
            cols += new
            rs.add(new)
            W_prev = np.vstack([W_prev[:-1], np.zeros((len(new), 3)), W_prev[-1:]])
        elif step == "drop":
            keep = np.ones(len(cols), dtype=bool)
            keep[[0, 3, len(cols) - 1]] = False
            rs.drop(keep)
            cols = [c for c, k in zip(cols, keep) if k]
            W_prev = np.vstack([W_prev[:-1][keep], W_prev[-1:]])
        np.testing.assert_array_equal(rs.columns, cols)
        Xa = np.c_[X[:, cols], np.ones(len(X))]  # the solvers' weights: constant last
        n_before = rs.n_iter
        W2, A2, P2, D2, S = rs.solve(tol=1e-10, max_iter=max_iter, price=True)
        np.testing.assert_allclose(A2, 2 * C * np.maximum(0, 1 - Y * (Xa @ W2)), atol=1e-10)
        H = np.maximum(0, 1 - Y * (Xa @ W2))
        np.testing.assert_allclose(P2, 0.5 * (W2 * W2).sum(0) + C * (H * H).sum(0), rtol=1e-12)
        V = Xa.T @ (A2 * Y)  # the certified dual from the returned multipliers
        D_ref = A2.sum(0) - (A2 * A2).sum(0) / (4 * C) - 0.5 * (V * V).sum(0)
        np.testing.assert_allclose(D2, D_ref, rtol=1e-10)
        np.testing.assert_allclose(S, (A2 * Y).T @ X, rtol=1e-10, atol=1e-10)
        if max_iter == 1 and rs.n_iter > n_before:
            np.testing.assert_allclose(
                W2, _newton_step_reference(Xa, Y, C, W_prev), rtol=1e-6, atol=1e-8
            )
        W_prev = W2
        # the buffer holds the constant column first, then the selected columns
        Xc = np.c_[np.ones(len(X)), X[:, cols]]
        np.testing.assert_array_equal(rs.buf[:, : len(cols) + 1], Xc)
        for j in range(3):
            act = rs.act[:, j]
            np.testing.assert_allclose(rs.G[j], Xc[act].T @ Xc[act], atol=1e-9)
            np.testing.assert_allclose(rs.r[:, j], Xc[act].T @ Y[act, j], atol=1e-9)
            if max_iter == 100:
                ref = _l2_sqhinge(X[:, cols], Y[:, j], C)
                assert P2[j] == pytest.approx(ref, rel=1e-7)
                assert D2[j] <= ref * (1 + 1e-9) and P2[j] - D2[j] <= 1e-10 * P2[j]
                np.testing.assert_allclose(W2[:, j], Xa.T @ (A2[:, j] * Y[:, j]), atol=1e-6)
    # a capped step that is neither certified nor priced reports no dual (NaN)
    rs.add([5])
    _, _, P3, D3, S3 = rs.solve(tol=1e-10, max_iter=1, certify=False)
    assert S3 is None and np.isnan(D3).all() and np.isfinite(P3).all()


def test_compiled_rounds_bad_input():
    from maxmargin.solvers.feature_selection import SquaredHingeRounds

    X, y = _multiclass(2, n=40, d=14)
    Y = np.where(y == 0, 1.0, -1.0)
    rs = SquaredHingeRounds(X, Y, 1.0, capacity=3)
    with pytest.raises(ValueError, match="capacity"):
        rs.add([0, 1, 2, 3])
    rs.add([0, 1])
    with pytest.raises(ValueError, match="mask over the 2"):
        rs.drop(np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="W0 has 2 rows"):
        SquaredHingeRounds(X, Y, 1.0, capacity=3, cols=[0, 1], W0=np.zeros(2))
    with pytest.raises(ValueError, match="rows"):
        SquaredHingeRounds(X, Y[:10], 1.0, capacity=3)


def test_compiled_rounds_take_one_layout():
    """A read-only or F-ordered X is copied once to a C-ordered writeable array, so the
    compiled rounds see one array type (numba compiles one specialisation per layout and
    write flag, tens of seconds each); the solution is the C-ordered input's, bit for bit."""
    from maxmargin.solvers.feature_selection import SquaredHingeRounds

    X, y = _multiclass(2, n=40, d=14)
    Y = np.where(y == 0, 1.0, -1.0)
    ref = SquaredHingeRounds(X, Y, 1.0, capacity=3, cols=[0, 1]).solve(tol=1e-10)
    ro = np.ascontiguousarray(X)
    ro.flags.writeable = False
    for Xin in (np.asfortranarray(X), ro):
        rs = SquaredHingeRounds(Xin, Y, 1.0, capacity=3, cols=[0, 1])
        assert rs.X.flags.c_contiguous and rs.X.flags.writeable
        out = rs.solve(tol=1e-10)
        for a, b in zip(out, ref, strict=True):
            assert a is b is None or np.array_equal(a, b)


@pytest.mark.parametrize("seed", [0, 3])
def test_selector_with_compiled_rounds_reaches_the_independent_optima(seed, monkeypatch):
    """The selector's squared-hinge fit (k_path, forward then backward) by the compiled
    rounds: every recorded set's objective is the restricted optimum and every round's
    dual bound is below the optimum over all columns (independent dual solves); a sparse
    X takes the same rounds and sets; and with the Newton column limit forcing dual CD
    on the largest sets (switching to it and back), the recorded sets' objectives are
    still the restricted optima."""
    import maxmargin.solvers.feature_selection as fsmod

    X, y = _multiclass(seed)
    ys = [np.where(y == k, 1.0, -1.0) for k in range(3)]
    kw = {"k_path": [2, 4, 8], "overselect": 3.0, "loss": "squared_hinge", "inner_tol": 1e-9,
          "backward_step": 0.2}  # fmt: skip
    a = ForwardFeatureSelector(**kw).fit(X, y)
    full = sum(_l2_sqhinge(X, yc, 1.0) for yc in ys)
    for e in a.path_:
        ref = sum(_l2_sqhinge(X[:, e["columns"]], yc, 1.0) for yc in ys)
        assert e["objective"] == pytest.approx(ref, rel=1e-6)
    assert all(r["dual_bound"] <= full * (1 + 1e-6) for r in a.history_)
    b = ForwardFeatureSelector(**kw).fit(sp.csr_matrix(X), y)
    assert [r["n_selected"] for r in a.history_] == [r["n_selected"] for r in b.history_]
    for ea, eb in zip(a.path_, b.path_, strict=True):
        np.testing.assert_array_equal(ea["columns"], eb["columns"])
        assert ea["objective"] == pytest.approx(eb["objective"], rel=1e-9)
        assert ea["selected_by"] == eb["selected_by"]
    for ra, rb in zip(a.history_, b.history_, strict=True):
        assert ra["objective"] == pytest.approx(rb["objective"], rel=1e-8)
        assert ra["dual_bound"] == pytest.approx(rb["dual_bound"], rel=1e-8)
    monkeypatch.setattr(fsmod, "NEWTON_MAX_COLUMNS", 12)  # dual CD above 11 columns
    c = ForwardFeatureSelector(**kw).fit(X, y)
    assert max(r["n_selected"] for r in c.history_) == 24
    for e in c.path_:
        ref = sum(_l2_sqhinge(X[:, e["columns"]], yc, 1.0) for yc in ys)
        assert e["objective"] == pytest.approx(ref, rel=1e-6)


def test_squared_hinge_newton_steps_per_round(monkeypatch):
    """Squared hinge with k_path: the pricing rounds take one Newton step (their
    multipliers only rank candidates); the rounds at a k, the set the backward pass starts
    from and every backward round are solved to their tolerance (as dual CD solves them
    for the hinge)."""
    from maxmargin.solvers import feature_selection as sfs

    calls = []
    orig = sfs.SquaredHingeRounds.solve

    def spy(self, tol=1e-8, max_iter=100, price=False, certify=True):
        calls.append((self.k, max_iter, price, tol))
        return orig(self, tol, max_iter, price, certify)

    monkeypatch.setattr(sfs.SquaredHingeRounds, "solve", spy)
    X, y = _multiclass(7)
    sel = ForwardFeatureSelector(
        k_path=[3, 8], overselect=3.0, loss="squared_hinge", backward_step=0.2, inner_tol=1e-6
    ).fit(X, y)
    fwd = [r["n_selected"] for r in sel.history_ if r["phase"] == "forward"]
    bwd = [r["n_selected"] for r in sel.history_ if r["phase"] == "backward"]
    assert fwd[-1] == 24 and bwd[-1] == 3
    ks = [c[0] for c in calls]
    assert ks == fwd + bwd  # one solve per round (none solved twice here)
    for k, max_iter, price, _tol in calls[: len(fwd)]:
        if k in (3, 8) or k == 24:
            assert max_iter == 100
        else:
            assert max_iter == 1 and price
    for k, max_iter, price, _tol in calls[len(fwd) :]:
        assert max_iter == 100 and price == (k in (3, 8))
    assert calls[len(fwd) - 1][3] == pytest.approx(1e-2)  # the start of the backward pass
