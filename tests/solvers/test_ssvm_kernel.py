"""Kernel SSVM (1-slack dual) and latent SSVM (CCCP)."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from maxmargin import KernelSSVM, LatentSSVM, SSVMClassifier, StructSVM
from maxmargin.tasks.classification import MultiClassTask


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_linear_kernel_equals_linear_ssvm(rescaling):
    X, y = load_iris(return_X_y=True)
    lin = StructSVM(
        task=MultiClassTask(),
        C=50.0,
        solver="n-slack",
        rescaling=rescaling,
        tol=1e-6,
        random_state=0,
    ).fit(X, y)
    ker = KernelSSVM(C=50.0, kernel="linear", rescaling=rescaling, tol=1e-6).fit(X, y)
    assert np.isclose(ker.objective_, lin.objective_, rtol=2e-6)
    # same w: primal-dual pairs are unique in w because the objective is strongly convex
    w_ker = ker.support_vectors_.T @ ker.dual_coef_
    np.testing.assert_allclose(w_ker.ravel(), lin.coef_, atol=2e-3 * np.abs(lin.coef_).max())
    np.testing.assert_array_equal(ker.predict(X), lin.predict(X))


def test_rbf_kernel_beats_linear_on_rings():
    rng = np.random.default_rng(0)
    n = 300
    r = np.r_[rng.uniform(0, 1, n // 3), rng.uniform(1.5, 2.5, n // 3), rng.uniform(3, 4, n // 3)]
    t = rng.uniform(0, 2 * np.pi, n)
    X = np.c_[r * np.cos(t), r * np.sin(t)]
    y = np.repeat(np.arange(3), n // 3)
    lin = SSVMClassifier(C=100.0).fit(X, y)
    ker = KernelSSVM(C=100.0, kernel="rbf", gamma=1.0, tol=1e-3).fit(X, y)
    assert ker.converged_
    assert ker.score(X, y) > 0.95 > lin.score(X, y)
    assert ker.history_[-1]["gap"] <= 1e-3


def _xor_blobs(n, seed):
    """Each class is a union of two blobs on opposite corners (not linearly separable)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[2, 2], [-2, -2], [2, -2], [-2, 2], [0, 4], [0, -4]], dtype=float)
    cls = np.array([0, 0, 1, 1, 2, 2])
    k = rng.integers(0, 6, n)
    return centres[k] + 0.6 * rng.normal(size=(n, 2)), cls[k]


def test_latent_beats_non_latent():
    X, y = _xor_blobs(300, 0)
    Xt, yt = _xor_blobs(600, 1)
    plain = SSVMClassifier(C=100.0, tol=1e-3).fit(X, y)
    lat = LatentSSVM(n_latent=2, C=100.0, tol=1e-3, random_state=0).fit(X, y)
    assert lat.score(Xt, yt) > 0.9
    assert lat.score(Xt, yt) > plain.score(Xt, yt) + 0.2
    # CCCP never increases the latent objective
    assert np.all(np.diff(lat.objective_path_) <= 1e-6 * abs(lat.objective_path_[0]))
