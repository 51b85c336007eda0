"""Additive-kernel feature maps and piecewise evaluation (issue 14, seed 002 Sec. 5.2):
the maps stay inside the analytic error bound of the sampled spectrum, chi2 equals
scikit-learn's AdditiveChi2Sampler, and the piecewise scorers match the kernel SVM."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from sklearn.kernel_approximation import AdditiveChi2Sampler

from maxmargin import AdditiveKernelMap, PiecewiseAdditiveScorer, SVMClassifier
from maxmargin.kernels import additive_kernel, feature_map_error_bound, signature, spectrum


@pytest.mark.parametrize("kernel", ["intersection", "chi2"])
def test_spectrum_is_the_fourier_transform_of_the_signature(kernel):
    for w in (0.0, 0.3, 1.1):
        val = quad(lambda lam, w=w: np.cos(w * lam) * signature(lam, kernel), -200, 200, limit=400)
        val = val[0]
        assert val / (2 * np.pi) == pytest.approx(float(spectrum(w, kernel)), rel=1e-6)


@pytest.mark.parametrize("kernel", ["intersection", "chi2"])
@pytest.mark.parametrize("steps", [2, 3, 6])
def test_feature_map_within_the_analytic_bound(kernel, steps):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.02, 1.0, 400)
    y = rng.uniform(0.02, 1.0, 400)
    L = 0.5
    m = AdditiveKernelMap(kernel=kernel, sample_steps=steps, sample_interval=L).fit(x[:, None])
    approx = np.sum(m.transform(x[:, None]) * m.transform(y[:, None]), axis=1)
    exact = np.diag(additive_kernel(x[:, None], y[:, None], kernel))
    bound = feature_map_error_bound(x, y, kernel, steps, L)
    inside = np.isfinite(bound)
    assert inside.mean() > 0.9
    assert np.all(np.abs(approx - exact)[inside] <= bound[inside] + 1e-12)
    # the bound is not vacuous: it shrinks with more steps to the aliasing floor
    if steps == 6:
        assert np.median(bound[inside] / np.sqrt(x * y)[inside]) < 0.15


def test_chi2_map_is_sklearns_sampler():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (20, 4))
    X[0, 0] = 0.0
    ours = AdditiveKernelMap(kernel="chi2", sample_steps=3).fit_transform(X)
    np.testing.assert_allclose(ours, AdditiveChi2Sampler(sample_steps=3).fit_transform(X))


def test_negative_features_are_refused():
    with pytest.raises(ValueError, match="Negative"):
        AdditiveKernelMap().fit(-np.ones((3, 2)))


@pytest.fixture(scope="module")
def histograms():
    rng = np.random.default_rng(2)
    n, d = 200, 6
    y = rng.integers(0, 2, n)
    X = rng.dirichlet(np.ones(d), n) + 0.15 * y[:, None] * (np.arange(d) < 2)
    return X / X.sum(1, keepdims=True), y


@pytest.mark.parametrize("kernel", ["intersection", "chi2"])
def test_piecewise_scorers_match_the_kernel_svm(histograms, kernel):
    X, y = histograms
    svm = SVMClassifier(solver="smo", kernel=kernel, C=10.0, tol=1e-6).fit(X, y)
    exact = svm.decision_function(X)
    lin = PiecewiseAdditiveScorer.from_svm(svm, method="linear", n_bins=128, value_range=(0, 1))
    const = PiecewiseAdditiveScorer.from_svm(svm, method="constant", n_bins=128, value_range=(0, 1))
    assert np.abs(X).max() <= 1
    np.testing.assert_allclose(lin.exact_scores(X), exact, atol=1e-9)
    err_lin = np.abs(lin.decision_function(X) - exact).max()
    err_const = np.abs(const.decision_function(X) - exact).max()
    scale = np.abs(exact).max()
    assert err_lin < 2e-2 * scale and err_lin < err_const
    coarse = PiecewiseAdditiveScorer.from_svm(svm, n_bins=32, value_range=(0, 1))
    assert np.abs(coarse.decision_function(X) - exact).max() > err_lin  # refines with bins
    if kernel == "intersection":
        fast = PiecewiseAdditiveScorer.from_svm(svm, method="exact")
        np.testing.assert_allclose(fast.decision_function(X), exact, atol=1e-9)
