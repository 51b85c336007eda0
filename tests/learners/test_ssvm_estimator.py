"""SSVMClassifier: scikit-learn API, persistence hooks, hierarchy-ready StructSVM."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris

from maxmargin.learners.ssvm import SSVMClassifier, StructSVM
from maxmargin.tasks.classification import MultiClassTask


@pytest.mark.parametrize("solver", ["1-slack", "n-slack", "frank-wolfe", "subgradient"])
def test_iris_accuracy(solver, iris):
    X, y = iris
    clf = SSVMClassifier(C=100.0, solver=solver, tol=1e-2, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.9
    assert clf.decision_function(X).shape == (150, 3)


def test_binary_and_sparse(iris):
    X, y = iris
    y2 = np.where(y == 0, "a", "b")
    clf = SSVMClassifier(tol=1e-6).fit(X, y2)
    assert clf.decision_function(X).shape == (150,)
    assert set(clf.predict(X)) <= {"a", "b"}
    s = SSVMClassifier(tol=1e-6).fit(sp.csr_matrix(X), y2)
    assert np.isclose(s.objective_, clf.objective_, rtol=1e-4)
    np.testing.assert_allclose(
        s.decision_function(sp.csr_matrix(X)), clf.decision_function(X), atol=1e-2
    )


def test_state_round_trip(iris):
    X, y = iris
    clf = SSVMClassifier(C=50.0, random_state=3).fit(X, y)
    meta, arrays = clf._get_state()
    import json

    json.dumps(meta)  # metadata must be JSON
    back = SSVMClassifier._from_state(meta, arrays)
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    np.testing.assert_allclose(back.decision_function(X), clf.decision_function(X))
    assert back.get_params() == {**clf.get_params(), "callback": None}
    arrays["coef"] = arrays["coef"][:-1]
    with pytest.raises(ValueError, match="inconsistent"):
        SSVMClassifier._from_state(meta, arrays)


def test_io_save_load(tmp_path):
    from maxmargin import io

    if "SSVMClassifier" not in io.registered_models():  # until the lead adds it
        io.register_model(SSVMClassifier)
    X, y = load_iris(return_X_y=True)
    clf = SSVMClassifier(C=10.0).fit(X, y)
    path = io.save(clf, tmp_path / "m.mm")
    back = io.load(path)
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))


def test_custom_loss_matrix_task():
    """A LabelCodingTask with a non-0/1 loss (stand-in for the hierarchy task)."""
    X, y = load_iris(return_X_y=True)
    L = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float)
    m = StructSVM(task=MultiClassTask(loss=L), C=100.0, solver="n-slack", tol=1e-4).fit(X, y)
    m2 = StructSVM(task=MultiClassTask(loss=L), C=100.0, solver="1-slack", tol=1e-4).fit(X, y)
    assert np.isclose(m.objective_, m2.objective_, rtol=2e-4)
    assert m.score(X, y) > 0.9


def test_hierarchy_task():
    from maxmargin.tasks.hierarchy import HierarchyTask

    X, y = load_iris(return_X_y=True)
    tax = {"root": {"a": [0], "b": [1, 2]}}
    a = StructSVM(task=HierarchyTask(tax), C=100.0, solver="n-slack", tol=1e-5).fit(X, y)
    b = StructSVM(task=HierarchyTask(tax), C=100.0, solver="1-slack", tol=1e-5).fit(X, y)
    assert np.isclose(a.objective_, b.objective_, rtol=5e-5)
    assert a.score(X, y) > 0.9


@pytest.mark.parametrize("name", ["SSVMClassifier", "StructSVM", "KernelSSVM", "RankSVM"])
def test_unconverged_warning_names_the_estimator_at_the_callers_line(name):
    """``store_solution``: one ConvergenceWarning text for every SSVM-like estimator, and
    it points at the line that called ``fit`` (the stacklevel), not into maxmargin."""
    import maxmargin as mm
    from maxmargin.exceptions import ConvergenceWarning

    X, y = load_iris(return_X_y=True)
    kw = {"task": MultiClassTask(), "solver": "1-slack"} if name == "StructSVM" else {}
    est = getattr(mm, name)(C=1e4, tol=1e-12, max_iter=2, **kw)
    with pytest.warns(ConvergenceWarning, match=f"^{name} stopped after 2 iterations") as rec:
        est.fit(X, y)
    assert [w.filename for w in rec] == [__file__]
    assert not est.converged_ and est.n_iter_ == 2 == len(est.history_)
    assert est.objective_ >= est.dual_objective_
