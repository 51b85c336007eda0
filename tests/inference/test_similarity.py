"""MKMIS similarity features (issue 14, seed 002 Sec. 5.3) on the seed's fully specified
Gaussian mixture (Sec. 5.3.3), and the multiple-instance max by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC

from maxmargin import ForwardFeatureSelector, SimilarityFeatures, load, save
from maxmargin.datasets import make_gaussian_mixture_toy


def test_toy_mixture_follows_the_specification():
    X, y = make_gaussian_mixture_toy(4000, random_state=0)
    pos, neg = X[y == 1], X[y == 0]
    assert X.shape == (8000, 2) and y.sum() == 4000
    # the component means average out to 0 for both classes; spreads differ as specified
    np.testing.assert_allclose(pos.mean(0), 0.0, atol=0.15)
    np.testing.assert_allclose(neg.mean(0), 0.0, atol=0.15)
    near = np.linalg.norm(pos - np.array([1.0, 1.0]), axis=1) < 1.0
    assert np.linalg.norm(pos[near] - [1, 1], axis=1).std() < 0.5  # the sigma-0.5 component


def test_few_multi_kernel_features_beat_the_gaussian_svm():
    X, y = make_gaussian_mixture_toy(160, random_state=0)
    Xt, yt = make_gaussian_mixture_toy(800, random_state=1)
    svc = SVC(C=10.0, gamma=1.0).fit(X, y)
    auc_svc = roc_auc_score(yt, svc.decision_function(Xt))

    def auc(gammas, k):
        pipe = make_pipeline(
            SimilarityFeatures(gammas=gammas),
            ForwardFeatureSelector(n_features_to_select=k, C=10.0),
        ).fit(X, y)
        return roc_auc_score(yt, pipe.decision_function(Xt))

    mk6, sk6 = auc((0.2, 0.5, 0.7, 1.0, 1.5, 2.0), 6), auc((1.0,), 6)
    assert mk6 > sk6  # multiple kernels beat the single best one (Fig. 5.8)
    assert auc((0.2, 0.5, 0.7, 1.0, 1.5, 2.0), 10) > auc_svc  # 10 features vs 157 SVs


def test_multiple_instance_max_and_round_trip(tmp_path):
    # two channels of 1 column; channel 0 may match its own column or column 2
    X = np.array([[0.0, 1.0, 3.0], [2.0, 0.0, 0.0]])
    f = SimilarityFeatures(
        gammas=(1.0,), channels=[[0], [1]], support_sets=[[[0], [2]], [[1]]]
    ).fit(X)
    S = f.transform(X)
    assert S.shape == (2, 2 * 2 * 1)
    # sample 0, channel 0, exemplar 1 (anchor value 2): max(exp(-(0-2)^2), exp(-(3-2)^2))
    assert S[0, 1] == pytest.approx(np.exp(-1.0))
    assert S[1, 0] == pytest.approx(max(np.exp(-4.0), np.exp(-0.0)))
    back = load(save(f, tmp_path / "s.npz"))
    np.testing.assert_array_equal(back.transform(X), S)


def _refine_problem(seed=0):
    from maxmargin.datasets import make_gaussian_mixture_toy

    X, y = make_gaussian_mixture_toy(60, random_state=seed)
    f = SimilarityFeatures(gammas=(0.5, 1.5), n_exemplars=6, random_state=seed).fit(X)
    rng = np.random.default_rng(seed)
    coef = rng.normal(size=f.transform(X[:1]).shape[1])
    coef[[1, 7]] = 0.0  # exemplar 1 unused by both kernels
    return X, y, f, coef


def test_refinement_gradient_matches_finite_differences():
    X, y, f, coef = _refine_problem()
    ys = np.where(y == 1, 1.0, -1.0)

    def hinge(E):
        g = SimilarityFeatures(gammas=f.gammas).fit(E)
        return float(np.maximum(0.0, 1.0 - ys * (g.transform(X) @ coef + 0.1)).sum())

    ref = f.refine(X, y, coef, 0.1, max_iter=0, step=0.0)
    assert ref.refine_history_[0] == pytest.approx(hinge(f.exemplars_))
    # analytic sub-gradient of the first accepted step against central differences
    E0 = f.exemplars_.copy()
    g1 = SimilarityFeatures(gammas=f.gammas).fit(E0)
    g1.refine(X, y, coef, 0.1, max_iter=1, step=1e-7)
    step_dir = (E0 - g1.exemplars_) / 1e-7  # the gradient (first try accepted) or 0
    num = np.zeros_like(E0)
    for j in range(E0.shape[0]):
        for k in range(E0.shape[1]):
            e = np.zeros_like(E0)
            e[j, k] = 1e-6
            num[j, k] = (hinge(E0 + e) - hinge(E0 - e)) / 2e-6
    num[1] = 0.0  # zero-weight exemplar: held fixed
    np.testing.assert_allclose(step_dir, num, rtol=1e-4, atol=1e-6)


def test_refinement_lowers_the_loss_and_leaves_unused_exemplars():
    X, y, f, coef = _refine_problem(seed=1)
    before = f.exemplars_.copy()
    f.refine(X, y, coef, 0.0, max_iter=30)
    h = f.refine_history_
    assert len(h) > 2 and all(b < a for a, b in itertools.pairwise(h))
    np.testing.assert_array_equal(f.exemplars_[1], before[1])
    assert not np.array_equal(f.exemplars_, before)
    with pytest.raises(ValueError, match="finite weights"):
        f.refine(X, y, coef[:-1])
    bad = coef.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="finite weights"):
        f.refine(X, y, bad)
    with pytest.raises(ValueError, match="two classes"):
        f.refine(X, np.arange(len(y)) % 3, coef)
    with pytest.raises(ValueError, match="features"):
        f.refine(X[:, :1], y, coef)


def test_refinement_pulls_a_positive_exemplar_towards_positive_in_margin_samples():
    X = np.array([[1.0], [10.0]])
    y = np.array([1, 0])
    f = SimilarityFeatures(gammas=(1.0,)).fit(np.array([[0.0], [10.0]]))
    # exemplar 0 (weight > 0) sits at 0; the positive sample at 1 is inside the margin
    f.refine(X, y, [0.5, 0.0], 0.0, max_iter=1, step=1e-3)
    assert f.exemplars_[0, 0] > 0.0  # pulled towards x = 1 (the seed's sign: pushed away)
