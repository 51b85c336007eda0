"""SparseKernelSVM (issue 14, seed 002 Algorithm 5): the returned model's objective is a
true primal value (never below the full kernel SVM optimum, solved independently) and
approaches it as the basis grows; accuracy approaches SVC's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from maxmargin import SparseKernelSVM, load, save


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    idx = np.random.default_rng(0).choice(len(y), 100, replace=False)
    return X[idx], y[idx]


def _full_optimum(X, y, C, gamma):
    """min 1/2||w||^2 + C sum hinge with kernel rbf + 1 and no intercept: box dual."""
    s = np.where(y == 1, 1.0, -1.0)
    Q = s[:, None] * s[None, :] * (rbf_kernel(X, gamma=gamma) + 1.0)
    r = minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1.0),
        np.zeros(len(y)),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, C)] * len(y),
        options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10000},
    )
    return -r.fun


def test_objective_is_a_primal_value_that_improves_with_the_basis(data, tmp_path):
    X, y = data
    C = 1.0
    gamma = 1.0 / (X.shape[1] * X.var())
    opt = _full_optimum(X, y, C, gamma)
    objs = []
    for k in (5, 15, 40):
        est = SparseKernelSVM(n_basis=k, C=C).fit(X, y)
        assert len(est.coef_) <= k
        # the reported objective is the primal of the returned model, recomputed here
        s = np.where(y == est.classes_[1], 1.0, -1.0)
        f = est.decision_function(X)
        G = rbf_kernel(est.basis_vectors_, gamma=gamma) + 1.0
        primal = 0.5 * est.coef_ @ G @ est.coef_ + C * np.maximum(0, 1 - s * f).sum()
        assert est.objective_ == pytest.approx(primal, rel=1e-9)
        assert est.objective_ >= opt * (1 - 1e-9)
        objs.append(est.objective_)
    assert objs[0] > objs[1] > objs[2]
    assert objs[2] <= opt * 1.1
    svc = SVC(C=C).fit(X, y)
    assert est.score(X, y) >= svc.score(X, y) - 0.02
    back = load(save(est, tmp_path / "m.npz"))
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
