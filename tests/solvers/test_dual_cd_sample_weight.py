"""Per-sample weights of the linear SVM's dual coordinate descent
(``fit_dual_cd(sample_weight=)``): the weighted primal ``1/2 ||w||^2 + C sum c_i loss_i``
against its dual solved independently by scipy (L-BFGS-B with the bounds ``0 <= a_i <=
C c_i`` for the hinge; ``a_i >= 0`` and the diagonal ``1 / (2 C c_i)`` for the squared
hinge), an integer weight against the duplicated row, and unit weights against no
weights bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from maxmargin.solvers.svm import fit_dual_cd


def tiny(seed, n=14, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ np.array([1.0, -0.5, 0.3]) + 0.4 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y, rng.uniform(0.2, 3.0, n)


def primal(X, y, w, C, c, squared):
    h = np.maximum(0.0, 1.0 - y * (X @ w))
    return 0.5 * w @ w + C * (c * (h * h if squared else h)).sum()


def scipy_dual(X, y, C, c, squared):
    """The weighted dual's optimum ``(w(a), D(a))`` by L-BFGS-B."""
    Z = X * y[:, None]
    diag = 0.5 / (C * c) if squared else np.zeros(len(c))

    def f(a):
        v = Z.T @ a
        return 0.5 * v @ v + 0.5 * (diag * a) @ a - a.sum(), Z @ v + diag * a - 1.0

    bounds = [(0.0, None if squared else C * ci) for ci in c]
    res = minimize(
        f,
        np.zeros(len(c)),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 50000, "ftol": 1e-16, "gtol": 1e-13},
    )
    return Z.T @ res.x, -res.fun


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("seed", [0, 1])
def test_weighted_dual_cd_is_the_weighted_svm(loss, seed):
    X, y, c = tiny(seed)
    C, tol = 0.7, 1e-10
    sol = fit_dual_cd(X, y, C, loss=loss, tol=tol, max_iter=100000, rng=0, sample_weight=c)
    sq = loss == "squared_hinge"
    assert sol.converged
    w_sc, d_sc = scipy_dual(X, y, C, c, sq)
    p_cd, p_sc = primal(X, y, sol.w, C, c, sq), primal(X, y, w_sc, C, c, sq)
    # weak duality for both, then the gap of ours: P(w) - P* <= tol P(w) (its own
    # certificate), and scipy's dual value is below P*
    assert d_sc <= p_cd * (1 + 1e-12) and d_sc <= p_sc * (1 + 1e-12)
    assert p_cd - d_sc <= tol * p_cd + (p_sc - d_sc) + 1e-12 * p_cd
    assert sol.primal == pytest.approx(p_cd, rel=1e-12)
    # the primal is 1-strongly convex: 1/2 ||w - w*||^2 <= P(w) - P*
    bound = np.sqrt(2 * max(p_cd - d_sc, 0)) + np.sqrt(2 * max(p_sc - d_sc, 0)) + 1e-9
    assert np.linalg.norm(sol.w - w_sc) <= bound
    # the weights matter: the unweighted optimum is far from the weighted one
    w1 = fit_dual_cd(X, y, C, loss=loss, tol=tol, max_iter=100000, rng=0).w
    assert primal(X, y, w1, C, c, sq) > p_cd + 100 * (p_cd - d_sc) + 1e-9


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_integer_weight_is_the_duplicated_row(loss):
    X, y, _ = tiny(2)
    c = np.ones(len(y))
    c[[1, 4]] = 2.0
    a = fit_dual_cd(X, y, 1.0, loss=loss, tol=1e-11, max_iter=100000, sample_weight=c)
    Xd, yd = np.vstack([X, X[[1, 4]]]), np.concatenate([y, y[[1, 4]]])
    b = fit_dual_cd(Xd, yd, 1.0, loss=loss, tol=1e-11, max_iter=100000)
    assert a.primal == pytest.approx(b.primal, rel=1e-9)
    # both within their gaps of the same optimum (1-strongly convex primal)
    gap = (a.primal - a.dual) + (b.primal - b.dual)
    assert np.linalg.norm(a.w - b.w) <= 2 * np.sqrt(2 * gap) + 1e-9


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_unit_weights_are_no_weights_bit_for_bit(loss):
    X, y, _ = tiny(3, n=40)
    a = fit_dual_cd(X, y, 0.5, loss=loss, tol=1e-6, rng=7)
    b = fit_dual_cd(X, y, 0.5, loss=loss, tol=1e-6, rng=7, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert a.primal == b.primal and a.dual == b.dual and a.n_iter == b.n_iter


def test_sample_weight_is_checked():
    X, y, _ = tiny(4)
    for bad in (np.ones(3), -np.ones(len(y)), np.full(len(y), np.nan)):
        with pytest.raises(ValueError, match="sample_weight"):
            fit_dual_cd(X, y, 1.0, sample_weight=bad)
