"""PLS feature-subset search for boosting (thesis Sec. 3.4): the PLS regression against
least squares, scikit-learn and the resampling equivalence; the subset search against the
full search."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cross_decomposition import PLSRegression

from maxmargin import BinaryAdaBoost, TCBoostClassifier
from maxmargin.weak import DecisionStump, FeatureSubset, pls_coefficients


def _data(n=80, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + 2.0
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    return X, y


def test_full_rank_pls_is_weighted_least_squares():
    X, y = _data()
    om = np.random.default_rng(1).uniform(0.2, 3.0, size=len(y))
    b = pls_coefficients(X, y, n_components=X.shape[1], sample_weight=om)
    mu, my = om @ X / om.sum(), om @ y / om.sum()
    s = np.sqrt(om)
    ref = np.linalg.lstsq(s[:, None] * (X - mu), s * (y - my), rcond=None)[0]
    np.testing.assert_allclose(b, ref, rtol=1e-8, atol=1e-10)
    # the thesis's uncentred Algorithm 2
    b0 = pls_coefficients(X, y, n_components=X.shape[1], sample_weight=om, center=False)
    ref0 = np.linalg.lstsq(s[:, None] * X, s * y, rcond=None)[0]
    np.testing.assert_allclose(b0, ref0, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_pls_matches_scikit_learn(k):
    X, y = _data(d=8)
    b = pls_coefficients(X, y, n_components=k)
    ref = PLSRegression(n_components=k, scale=False).fit(X, y).coef_.ravel()
    np.testing.assert_allclose(b, ref, rtol=1e-7, atol=1e-9)


def test_integer_weights_equal_duplicated_rows_and_sparse_equals_dense():
    X, y = _data(n=40, d=7, seed=3)
    counts = np.random.default_rng(2).integers(1, 4, size=len(y))
    b = pls_coefficients(X, y, n_components=3, sample_weight=counts.astype(float))
    rows = np.repeat(np.arange(len(y)), counts)
    np.testing.assert_allclose(b, pls_coefficients(X[rows], y[rows], 3), rtol=1e-9)
    Xs = X.copy()
    Xs[Xs < 2.0] = 0.0
    np.testing.assert_allclose(
        pls_coefficients(sp.csr_matrix(Xs), y, 3), pls_coefficients(Xs, y, 3), rtol=1e-9
    )


def test_pls_importance_finds_the_informative_features():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 200))
    y = np.sign(X[:, :5].sum(axis=1))
    fs = FeatureSubset(size=10, random_state=0, max_samples=None)
    imp = fs.importance(fs.prepare(X), y[:, None])
    assert imp[:5].sum() > 0.15  # the uniform share would be 5 / 200 = 0.025
    assert set(np.argsort(imp)[-5:]) == set(range(5))


def test_subset_search_is_the_base_search_on_the_subset_columns():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 30))
    A = rng.normal(size=(60, 1))
    fs = FeatureSubset(size=7, method="random", random_state=0)
    st = fs.prepare(X)
    h, gain = fs.best(st, A)
    S = st.features
    assert len(S) == 7 and np.all(np.diff(S) > 0)
    h_sub, gain_sub = DecisionStump().best(DecisionStump().prepare(X[:, S]), A)
    np.testing.assert_allclose(gain, gain_sub)
    assert h.feature[0] == S[h_sub.feature[0]] and h.n_features == 30
    np.testing.assert_array_equal(h.evaluate(X), h_sub.evaluate(X[:, S]))
    # refreshed every `refresh` calls; a subset as large as the data is the full search
    fs2 = FeatureSubset(size=100, refresh=2, random_state=0)
    st2 = fs2.prepare(X)
    for _ in range(5):
        _, g2 = fs2.best(st2, A)
    assert len(st2.history) == 3
    np.testing.assert_allclose(g2, DecisionStump().best(DecisionStump().prepare(X), A)[1])


def test_tc_boost_on_subsets_converges_to_the_full_optimum():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 40))
    y = (X[:, :8] @ rng.normal(size=8) + 0.5 * rng.normal(size=80) > 0).astype(int)
    kw = dict(loss="hinge", penalty="l1", C=5.0, max_iter=300)
    full = TCBoostClassifier(**kw).fit(X, y)
    sub = TCBoostClassifier(**kw, feature_subset={"size": 3, "refresh": 2, "random_state": 0}).fit(
        X, y
    )
    assert full.converged_ and sub.converged_
    assert sub.history_[-1]["priced_all"]
    assert any(not r["priced_all"] for r in sub.history_)
    assert all(np.isnan(r["dual_bound"]) for r in sub.history_ if not r["priced_all"])
    # stopping on the subset alone would end above the optimum (3.50 vs 3.488 here)
    assert sub.objective_ == pytest.approx(full.objective_, rel=1e-9)


def test_binary_adaboost_with_a_feature_subset():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 100))
    y = (X[:, 3] + X[:, 7] > 0).astype(int)
    plain = BinaryAdaBoost(max_iter=20).fit(X, y)
    same = BinaryAdaBoost(max_iter=20, feature_subset={"size": 100}).fit(X, y)
    np.testing.assert_array_equal(same.decision_function(X), plain.decision_function(X))
    pls = BinaryAdaBoost(max_iter=20, feature_subset={"size": 10, "random_state": 0}).fit(X, y)
    assert set(pls.hypotheses_.feature) <= set(range(100))
    assert np.mean(pls.predict(X) == y) > 0.85


@pytest.mark.parametrize(
    "spec, match",
    [
        ({"sizes": 3}, "unknown keys"),
        ({"size": 0}, "positive integer"),
        ({"method": "lasso"}, "method"),
        ({"max_samples": 1}, "max_samples"),
    ],
)
def test_bad_feature_subset_settings(spec, match):
    X = np.random.default_rng(0).normal(size=(20, 4))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        BinaryAdaBoost(feature_subset=spec).fit(X, y)
