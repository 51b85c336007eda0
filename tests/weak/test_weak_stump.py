"""Exact and histogram stumps against brute force, sparse input and scikit-learn."""

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.tree import DecisionTreeClassifier

from maxmargin.weak import DecisionStump, HistogramStump
from maxmargin.weak.reference import reference_best_stumps

VALUES = st.sampled_from([-1.0, 0.0, 0.5, 2.0, 7.0])


def _same_stumps(a, b):
    np.testing.assert_array_equal(a.feature, b.feature)
    np.testing.assert_array_equal(a.threshold, b.threshold)
    np.testing.assert_array_equal(a.polarity, b.polarity)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.integers(1, 4), st.integers(1, 3), st.data())
def test_exact_stump_equals_brute_force_including_ties(n, d, S, data):
    """Small-integer weights make every sum exact, so the tie rule must match exactly:
    first feature, first threshold, polarity +1 first, constant stump first."""
    X = data.draw(arrays(np.float64, (n, d), elements=VALUES))
    if data.draw(st.booleans()):
        X[:, 0] = 2.0  # a constant feature
    A = data.draw(arrays(np.float64, (n, S), elements=st.integers(-3, 3).map(float)))
    ref, ref_gain = reference_best_stumps(X, A)
    for Z in (X, sp.csr_matrix(X), sp.csc_matrix(X)):
        for learner in (DecisionStump(), HistogramStump()):
            stumps, gain = learner.best(learner.prepare(Z), A)
            np.testing.assert_array_equal(gain, ref_gain)
            _same_stumps(stumps, ref)
            np.testing.assert_array_equal(np.sum(stumps.evaluate(Z) * A.T, axis=1), gain)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 40), st.integers(1, 3), st.data())
def test_exact_stump_real_weights(n, d, data):
    X = data.draw(arrays(np.float64, (n, d), elements=st.floats(-3, 3, allow_nan=False)))
    A = data.draw(arrays(np.float64, (n, 2), elements=st.floats(-5, 5, allow_nan=False)))
    stumps, gain = DecisionStump().best(DecisionStump().prepare(X), A)
    _, ref_gain = reference_best_stumps(X, A)
    np.testing.assert_allclose(gain, ref_gain, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.sum(stumps.evaluate(X) * A.T, axis=1), gain, atol=1e-9)


def test_histogram_equals_exact_up_to_255_values():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 255, size=(3000, 6)) / 7.0  # 255 distinct values per feature
    A = rng.integers(-20, 21, size=(3000, 4)).astype(float)
    s1, g1 = DecisionStump().best(DecisionStump().prepare(X), A)
    hs = HistogramStump()
    prep = hs.prepare(X)
    assert prep.codes.dtype == np.uint8
    s2, g2 = hs.best(prep, A)
    np.testing.assert_array_equal(g1, g2)
    _same_stumps(s1, s2)


def test_histogram_many_values_is_a_restriction_of_exact():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5000, 5))
    A = rng.standard_normal((5000, 3))
    _, g_exact = DecisionStump().best(DecisionStump().prepare(X), A)
    hs = HistogramStump(max_bins=32)
    prep = hs.prepare(X)
    assert prep.n_bins.max() <= 32
    stumps, g = hs.best(prep, A)
    assert np.all(g <= g_exact + 1e-9) and np.all(g >= 0.8 * g_exact)
    np.testing.assert_allclose(np.sum(stumps.evaluate(X) * A.T, axis=1), g)


def test_sparse_matches_dense_on_random_sparse_data():
    rng = np.random.default_rng(2)
    X = sp.random(400, 30, density=0.1, random_state=3, format="csr")
    X.data -= 0.5  # negative and positive stored values around the implicit zeros
    A = rng.standard_normal((400, 3))
    for learner in (DecisionStump(), HistogramStump(max_bins=16)):
        s_d, g_d = learner.best(learner.prepare(X.toarray()), A)
        s_s, g_s = learner.best(learner.prepare(X), A)
        np.testing.assert_allclose(g_s, g_d, rtol=1e-12)
        _same_stumps(s_s, s_d)
        np.testing.assert_array_equal(s_s.evaluate(X), s_d.evaluate(X.toarray()))


def test_gain_at_least_sklearn_depth1_tree():
    """Our stump maximises the weighted correlation; sklearn's Gini stump with labels
    sign(a) and weights |a| (majority leaves) is one of the stumps we search."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((600, 8))
    a = X[:, 3] - 0.3 + rng.standard_normal(600)
    _, g = DecisionStump().best(DecisionStump().prepare(X), a[:, None])
    tree = DecisionTreeClassifier(max_depth=1).fit(X, np.sign(a), sample_weight=np.abs(a))
    g_sk = float(tree.predict(X) @ a)
    assert g[0] >= g_sk - 1e-9
    assert g[0] <= g_sk * 1.05  # essentially the same split on this easy problem


def test_constant_stump_when_weights_all_positive():
    X = np.arange(6, dtype=float)[:, None]
    learner = DecisionStump()
    stumps, gains = learner.best(learner.prepare(X), np.ones((6, 1)))
    assert gains[0] == 6.0
    assert np.all(stumps.evaluate(X) == 1.0)


def test_threshold_separates_close_values():
    """Adjacent floating-point values still get a threshold with lo <= t < hi."""
    lo = 1.0
    hi = np.nextafter(lo, 2.0)
    X = np.array([[lo], [hi]])
    learner = DecisionStump()
    stumps, gains = learner.best(learner.prepare(X), np.array([[-1.0], [1.0]]))
    assert gains[0] == 2.0
    np.testing.assert_array_equal(stumps.evaluate(X)[0], [-1.0, 1.0])
