"""StructBoostClassifier: scikit-learn conformance, bad input, fitted attributes."""

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from maxmargin import StructBoost, StructBoostClassifier
from maxmargin.tasks import MultiClassTask
from maxmargin.weak import DecisionStump

# Checks that cannot run here, and why:
# - check_array_api_input needs SCIPY_ARRAY_API=1 and array-api-strict; sklearn skips it.


@pytest.mark.parametrize(
    "master,formulation", [("fast", "auto"), ("exact", "1-slack"), ("exact", "m-slack")]
)
@pytest.mark.parametrize("sharing", ["shared", "per_class"])
def test_fits_iris(iris, master, formulation, sharing):
    X, y = iris
    clf = StructBoostClassifier(
        C=50,
        max_iter=40,
        sharing=sharing,
        master=master,
        formulation=formulation,
        random_state=0,
    ).fit(X, y)
    assert clf.master_ == master
    assert clf.score(X, y) > 0.93
    assert clf.decision_function(X).shape == (150, 3)
    assert set(clf.classes_) == {0, 1, 2}


def test_history_records(iris):
    X, y = iris
    seen = []
    clf = StructBoostClassifier(C=50, max_iter=10, random_state=0, callback=seen.append)
    clf.fit(X, y)
    # one call per iteration; the final polish calls again with the replaced last record
    assert seen[: clf.n_iter_ - 1] == clf.history_[:-1]
    assert seen[-1] == clf.history_[-1]
    keys = {
        "iteration",
        "objective",
        "dual_bound",
        "gap",
        "master_objective",
        "xi",
        "n_weak",
        "n_columns",
        "n_planes",
        "n_cp",
        "gain",
        "certified",
        "t_weak",
        "t_master",
        "t_oracle",
        "t_total",
    }
    for rec in clf.history_:
        assert keys <= set(rec)
        assert rec["objective"] >= rec["dual_bound"] - 1e-9
        assert rec["gap"] == pytest.approx(
            (rec["objective"] - rec["dual_bound"]) / rec["objective"], abs=1e-12
        )
    assert clf.objective_ == pytest.approx(clf.history_[-1]["objective"])
    # the default certificate: a certified relative gap of at most gap_tol (no LP)
    assert clf.history_[-1]["certified"] and clf.gap_ <= clf.gap_tol
    assert clf.n_iter_ == len(clf.history_)


def test_staged_predict_ends_with_predict(iris):
    X, y = iris
    clf = StructBoostClassifier(C=50, max_iter=15, random_state=0).fit(X, y)
    stages = list(clf.staged_predict(X))
    assert len(stages) == clf.n_iter_
    np.testing.assert_array_equal(stages[-1], clf.predict(X))
    errors = [np.mean(s != y) for s in stages]
    assert errors[-1] < errors[0]


def test_converges_and_stops_on_separable_data():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 0, 1, 1])
    clf = StructBoostClassifier(C=10, max_iter=50).fit(X, y)
    assert clf.converged_
    assert clf.n_iter_ < 50
    np.testing.assert_array_equal(clf.predict(X), y)
    assert clf.decision_function(X).shape == (4,)


def test_small_C_learns_nothing():
    """A column's gain is at most C * max|dpsi|; with C <= 1 no stump can enter (eq. 10)."""
    X, y = load_iris(return_X_y=True)
    clf = StructBoostClassifier(C=0.5, max_iter=5).fit(X, y)
    assert clf.converged_ and len(clf.hypotheses_) == 0


def test_binary_with_string_labels(iris):
    X, y = iris
    X, y = X[y > 0], np.where(y[y > 0] == 1, "versicolor", "virginica")
    clf = StructBoostClassifier(C=50, max_iter=30, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.9
    assert clf.predict(X[:2]).dtype.kind in "UO"


def test_generic_structboost_with_task(iris):
    X, y = iris
    est = StructBoost(task=MultiClassTask(), C=50, max_iter=20, random_state=0).fit(X, y)
    assert np.mean(est.predict(X) == y) > 0.9


def test_pipeline_and_grid_search(digits):
    X, y = digits
    X, y = X[:300], y[:300]
    pipe = make_pipeline(StandardScaler(), StructBoostClassifier(max_iter=10, random_state=0))
    grid = GridSearchCV(pipe, {"structboostclassifier__C": [10.0, 100.0]}, cv=2).fit(X, y)
    assert grid.best_score_ > 0.5


@pytest.mark.parametrize("master,formulation", [("fast", "auto"), ("exact", "1-slack")])
def test_max_time_stops_early_with_a_certified_gap(master, formulation, digits):
    X, y = digits
    clf = StructBoostClassifier(
        max_iter=10_000, max_time=1.0, master=master, formulation=formulation, C=100.0
    ).fit(X[:500], y[:500])
    assert not clf.converged_ and clf.n_iter_ < 10_000
    # when the final certificate finishes inside the budget the model is certified to
    # its promise (the fast master's default: gap_tol; the exact master: the LP
    # optimum); otherwise the last iterate keeps its valid gap
    last = clf.history_[-1]
    assert last["objective"] >= last["dual_bound"] - 1e-9
    promised = clf.gap_tol * (1 + 1e-9) if master == "fast" else 1e-9
    assert not last["certified"] or last["gap"] <= promised


def test_max_time_already_spent_returns_a_valid_model():
    """With no time left the polish is skipped: the last iterate comes back with its
    (uncertified but valid) duality gap, never an exception or a half-solved LP."""
    X, y = load_digits(return_X_y=True)
    clf = StructBoostClassifier(max_iter=10_000, max_time=1e-9, C=100.0).fit(X[:300], y[:300])
    assert not clf.converged_ and clf.n_iter_ <= 1
    last = clf.history_[-1]
    assert last["objective"] >= last["dual_bound"]
    assert np.isfinite(clf.gap_)
    assert clf.predict(X[:5]).shape == (5,)


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"C": 0.0}, "C must be a finite number > 0"),
        ({"C": -1.0}, "C must be a finite number > 0"),
        ({"C": np.nan}, "C must be a finite number"),
        ({"max_iter": 0}, "max_iter must be an integer >= 1"),
        ({"max_iter": 2.5}, "max_iter must be an integer"),
        ({"eps_cp": 0.0}, "eps_cp must be a finite number > 0"),
        ({"max_time": -1.0}, "max_time must be None or a finite number > 0"),
        ({"sharing": "both"}, "sharing must be"),
        ({"formulation": "2-slack"}, "formulation must be"),
        ({"weak_learner": "oak"}, "unknown weak_learner"),
        ({"callback": 3}, "callback must be None or a callable"),
    ],
)
def test_bad_hyperparameters(iris, params, message):
    X, y = iris
    with pytest.raises(ValueError, match=message):
        StructBoostClassifier(**params).fit(X, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_X(iris, bad):
    X, y = iris
    X = X.copy()
    X[3, 1] = bad
    with pytest.raises(ValueError, match=r"NaN|infinity"):
        StructBoostClassifier(max_iter=2).fit(X, y)


def test_length_mismatch(iris):
    X, y = iris
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        StructBoostClassifier(max_iter=2).fit(X, y[:-1])


def test_single_class(iris):
    X, _ = iris
    with pytest.raises(ValueError, match="1 class"):
        StructBoostClassifier(max_iter=2).fit(X, np.zeros(len(X)))


def test_wrong_number_of_features_at_predict(iris):
    X, y = iris
    clf = StructBoostClassifier(max_iter=3).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])


def test_non_numeric_X(iris):
    X, y = iris
    X = X.astype(object)
    X[0, 0] = "abc"
    with pytest.raises(ValueError, match=r"could not convert|abc"):
        StructBoostClassifier(max_iter=2).fit(X, y)


def test_empty_X():
    with pytest.raises(ValueError, match="0 sample"):
        StructBoostClassifier().fit(np.zeros((0, 3)), np.zeros(0))


def test_nan_at_predict(iris):
    X, y = iris
    clf = StructBoostClassifier(max_iter=3).fit(X, y)
    X2 = X.copy()
    X2[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(X2)


class _InterruptingStump(DecisionStump):
    """Exact stumps, but the ``at``-th search raises KeyboardInterrupt (Ctrl-C inside the
    weak-learner search, not in a callback)."""

    def __init__(self, at):
        super().__init__()
        self.at, self.calls = at, 0

    def best(self, prepared, A):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return super().best(prepared, A)


@pytest.mark.parametrize("master", ["fast", "exact"])
def test_ctrl_c_in_the_weak_learner_search(iris, master):
    from maxmargin.exceptions import FitInterruptedWarning

    X, y = iris
    with pytest.raises(KeyboardInterrupt):  # nothing completed: nothing to keep
        StructBoostClassifier(master=master, weak_learner=_InterruptingStump(1)).fit(X, y)
    with pytest.warns(FitInterruptedWarning):
        clf = StructBoostClassifier(
            master=master, weak_learner=_InterruptingStump(4), random_state=0
        ).fit(X, y)
    assert len(clf.history_) == 3 and not clf.converged_
    # the kept model is iteration 3's restricted-master solution, as in an uninterrupted fit
    full = StructBoostClassifier(master=master, max_iter=10, random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.objective_, full.history_[2]["objective"], rtol=1e-9)
    staged = list(full.staged_predict(X))[2]
    np.testing.assert_array_equal(clf.predict(X), staged)


def test_auto_weak_learner_is_exact_up_to_the_row_limit_then_binned(monkeypatch, tmp_path):
    """weak_learner="auto" (the classifier's default): exact stumps up to
    AUTO_EXACT_ROWS rows, histogram stumps above -- the same fit as naming them."""
    from maxmargin import load, save
    from maxmargin.learners import structboost

    assert StructBoostClassifier().weak_learner == "auto"
    assert structboost.resolve_weak_learner("auto", structboost.AUTO_EXACT_ROWS) == "stump"
    assert structboost.resolve_weak_learner("auto", structboost.AUTO_EXACT_ROWS + 1) == (
        "hist_stump"
    )
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))  # 400 distinct values per feature: binning matters
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5)
    kw = {"C": 100.0, "max_iter": 15, "random_state": 0}
    for limit, named in ((400, "stump"), (399, "hist_stump")):
        monkeypatch.setattr(structboost, "AUTO_EXACT_ROWS", limit)
        auto = StructBoostClassifier(**kw).fit(X, y)
        ref = StructBoostClassifier(weak_learner=named, **kw).fit(X, y)
        assert auto.weak_learner_ == named
        np.testing.assert_array_equal(auto.hypotheses_.threshold, ref.hypotheses_.threshold)
        np.testing.assert_array_equal(auto.slot_weights_, ref.slot_weights_)
    thresholds = {
        named: StructBoostClassifier(weak_learner=named, **kw).fit(X, y).hypotheses_.threshold
        for named in ("stump", "hist_stump")
    }
    assert not np.array_equal(thresholds["stump"], thresholds["hist_stump"])  # they differ
    path = tmp_path / "auto.npz"
    save(auto, path)
    back = load(path)
    assert back.weak_learner == "auto" and back.weak_learner_ == "hist_stump"
