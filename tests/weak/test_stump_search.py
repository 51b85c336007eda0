"""The stump search's two compiled paths (histogram of the codes; samples in sorted order
for features with many distinct values) against brute force and against each other.

The sorted path must give the histogram path's answer bit for bit (every bin's sums
start at 0 and add its samples in increasing index in both), so the tie rule -- first
feature, first threshold, polarity +1, constant stump first -- is the same whichever
path a feature takes, and so is the answer for any number of numba threads.
"""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from maxmargin.weak import DecisionStump, HistogramStump, binning
from maxmargin.weak.binning import code_features
from maxmargin.weak.reference import reference_best_stumps

VALUES = st.sampled_from([-1.0, 0.0, 0.5, 2.0, 7.0])


def _search(fc, A):
    A = np.ascontiguousarray(A, dtype=np.float64)
    return DecisionStump().search(fc, A)


def _assert_same(r1, r2):
    for a, b in zip(r1, r2, strict=True):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.integers(1, 4), st.integers(1, 3), st.data())
def test_sorted_path_equals_brute_force_including_ties(n, d, S, data):
    """Every feature with more than one bin takes the sorted path (SORTED_MIN_BINS = 1);
    small-integer weights make every sum exact, so ties must break as in brute force."""
    X = data.draw(arrays(np.float64, (n, d), elements=VALUES))
    if data.draw(st.booleans()):
        X[:, 0] = 2.0  # a constant feature
    A = data.draw(arrays(np.float64, (n, S), elements=st.integers(-3, 3).map(float)))
    learner = DecisionStump()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(binning, "SORTED_MIN_BINS", 1)
        fc = learner.prepare(X)
    assert np.all((fc.order_row >= 0) == (fc.n_bins > 1))
    ref, ref_gain = reference_best_stumps(X, A)
    stumps, gain = learner.best(fc, A)
    np.testing.assert_array_equal(gain, ref_gain)
    np.testing.assert_array_equal(stumps.feature, ref.feature)
    np.testing.assert_array_equal(stumps.threshold, ref.threshold)
    np.testing.assert_array_equal(stumps.polarity, ref.polarity)


def _many_values(n, d, rng):
    """Continuous features with repeated values (ties) and a constant feature."""
    X = rng.standard_normal((n, d))
    X[:, 1] = np.round(X[:, 1], 2)  # a few hundred values, several samples each
    X[:, 2] = np.round(X[:, 2], 1)  # about 60 distinct values: the histogram path
    X[:, 3] = 5.0
    return X


def test_sorted_path_is_the_histogram_path_bit_for_bit():
    rng = np.random.default_rng(0)
    X = _many_values(3000, 6, rng)
    A = rng.standard_normal((3000, 7)) * rng.exponential(1.0, (3000, 1))
    A[:, 4] = 0.0  # a column without weight: the constant stump, polarity +1
    fast = code_features(X, None, keep_order=True)
    assert list(fast.order_row >= 0) == [True, True, False, False, True, True]
    plain = code_features(X, None)
    assert plain.order_row is None
    _assert_same(_search(fast, A), _search(plain, A))
    # a histogram stump with room for every distinct value (no sorted order kept) is the
    # exact search too
    wide = code_features(X, 4096)
    np.testing.assert_array_equal(wide.n_bins, fast.n_bins)
    _assert_same(_search(wide, A), _search(fast, A))
    gain, split, pol = _search(fast, A)
    assert np.all(split[:, 4] == -1) and np.all(pol[:, 4] == 1.0) and np.all(gain[:, 4] == 0)


def test_sorted_path_gains_against_brute_force_real_weights():
    rng = np.random.default_rng(1)
    X = _many_values(700, 4, rng)
    A = rng.standard_normal((700, 3))
    learner = DecisionStump()
    stumps, gain = learner.best(learner.prepare(X), A)
    _, ref_gain = reference_best_stumps(X, A)
    # sums of 700 terms of size <= 4: rounding below 700 * 4 * 2^-52 * 2
    np.testing.assert_allclose(gain, ref_gain, rtol=0, atol=1e-11)
    np.testing.assert_allclose(np.sum(stumps.evaluate(X) * A.T, axis=1), gain, atol=1e-11)


def test_order_budget_falls_back_to_the_histogram(monkeypatch):
    rng = np.random.default_rng(2)
    X = _many_values(1000, 5, rng)
    A = rng.standard_normal((1000, 4))
    full = code_features(X, None, keep_order=True)
    monkeypatch.setattr(binning, "ORDER_BUDGET", 4 * 1000 * 2)  # two features' orders
    part = code_features(X, None, keep_order=True)
    assert np.count_nonzero(part.order_row >= 0) == 2
    assert np.count_nonzero(full.order_row >= 0) == 3  # features 0, 1, 4
    _assert_same(_search(part, A), _search(full, A))


@pytest.mark.parametrize("max_bins", [None, 255])
def test_same_answer_for_any_thread_count(max_bins):
    """Large enough for the parallel kernel (>= 16M weight additions); features are
    independent, so 1 and 2 numba threads give the same arrays bit for bit."""
    rng = np.random.default_rng(3)
    n, d, S = 12000, 12, 120
    X = _many_values(n, d, rng)
    A = rng.standard_normal((n, S))
    learner = DecisionStump() if max_bins is None else HistogramStump(max_bins)
    fc = learner.prepare(X)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = learner.search(fc, A)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = learner.search(fc, A)
    finally:
        numba.set_num_threads(old)
    _assert_same(one, two)


def _search_best(fc, A):
    """The stumps ``best`` chose before its gain-first route: argmax over ``search``."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    gain, split, pol = DecisionStump().search(fc, A)
    f = np.argmax(gain, axis=0)
    cols = np.arange(A.shape[1])
    return f, fc.thresholds(f, split[f, cols]), pol[f, cols], gain[f, cols]


def _assert_best_is_search(fc, A):
    stumps, gain = DecisionStump().best(fc, A)
    f, thr, pol, ref_gain = _search_best(fc, A)
    np.testing.assert_array_equal(stumps.feature, f)
    np.testing.assert_array_equal(stumps.threshold, thr)
    np.testing.assert_array_equal(stumps.polarity, pol)
    np.testing.assert_array_equal(gain, ref_gain)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 5), st.integers(1, 6), st.booleans(), st.data())
def test_best_gain_first_route_is_the_full_search_bit_for_bit(n, d, S, sorted_all, data):
    """``best`` (gains of every feature, then the split of the winning feature only) gives
    the stumps of the full per-feature search bit for bit, ties included (small integer
    weights: many equal gains, equal |gain| of both polarities, zero columns), with every
    feature on the sorted path or a mix of both paths."""
    X = data.draw(arrays(np.float64, (n, d), elements=VALUES))
    A = data.draw(arrays(np.float64, (n, S), elements=st.integers(-3, 3).map(float)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(binning, "SORTED_MIN_BINS", 1 if sorted_all else 3)
        fc = DecisionStump().prepare(X)
    _assert_best_is_search(fc, A)
    ref, ref_gain = reference_best_stumps(X, A)  # and brute force (exact integer sums)
    stumps, gain = DecisionStump().best(fc, A)
    np.testing.assert_array_equal(gain, ref_gain)
    np.testing.assert_array_equal(stumps.feature, ref.feature)
    np.testing.assert_array_equal(stumps.threshold, ref.threshold)
    np.testing.assert_array_equal(stumps.polarity, ref.polarity)


@pytest.mark.parametrize("S", [1, 4, 7, 10])
def test_best_gain_first_route_real_weights(S):
    """Real weights (rounded sums) on a mix of sorted and histogram features: the same
    stumps and gains as the full search, bit for bit; every split was located (none of
    the fallback's -2)."""
    rng = np.random.default_rng(5)
    X = _many_values(2500, 6, rng)
    A = rng.standard_normal((2500, S)) * (rng.random((2500, S)) < 0.4)
    fc = code_features(X, None, keep_order=True)
    assert np.any(fc.order_row >= 0) and np.any(fc.order_row < 0)
    _assert_best_is_search(fc, A)
    from maxmargin.weak.stump import _dense_args, _gains_dense, _locate_dense

    order, order_row, bin_end = _dense_args(fc)
    args = (fc.codes, fc.n_bins, order, order_row, bin_end, fc.offsets, A, A.sum(axis=0))
    gain = _gains_dense(*args)
    np.testing.assert_array_equal(gain, DecisionStump().search(fc, A)[0])
    f = np.argmax(gain, axis=0)
    split, _ = _locate_dense(*args, f, gain[f, np.arange(S)])
    assert np.all(split >= -1)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 11), st.data())
def test_one_column_histogram_route_is_the_full_search_bit_for_bit(n, d, data):
    """One weight column on histogram features only (no sorted order kept: the binned and
    the coded stumps) takes ``_gains_hist1`` (four features per pass over the samples):
    the stumps and gains of the full search bit for bit, ties and constant features
    included, any number of features (not only multiples of four); and brute force."""
    from maxmargin.weak import CodedStump

    X = data.draw(arrays(np.float64, (n, d), elements=VALUES))
    if data.draw(st.booleans()):
        X[:, 0] = 2.0  # a constant feature (one bin)
    A = data.draw(arrays(np.float64, (n, 1), elements=st.integers(-3, 3).map(float)))
    codes = np.searchsorted([-1.0, 0.0, 0.5, 2.0, 7.0], X)  # 0-4: CodedStump's input
    for learner, Z in ((HistogramStump(255), X), (CodedStump(8), codes)):
        fc = learner.prepare(Z)
        assert fc.order_row is None
        stumps, gain = learner.best(fc, A)
        f, thr, pol, ref_gain = _search_best(fc, A)
        np.testing.assert_array_equal(stumps.feature, f)
        np.testing.assert_array_equal(stumps.threshold, thr)
        np.testing.assert_array_equal(stumps.polarity, pol)
        np.testing.assert_array_equal(gain, ref_gain)
        ref, brute_gain = reference_best_stumps(Z.astype(np.float64), A)
        np.testing.assert_array_equal(gain, brute_gain)
        np.testing.assert_array_equal(stumps.evaluate(Z), ref.evaluate(Z.astype(np.float64)))


def test_one_column_histogram_route_real_weights():
    """Rounded sums: 2000 samples, 13 features of 3-256 bins, one real weight column."""
    rng = np.random.default_rng(7)
    X = _many_values(2000, 13, rng)
    A = rng.standard_normal((2000, 1))
    fc = code_features(X, 255)
    assert fc.order_row is None
    from maxmargin.weak.stump import _gains_hist1

    np.testing.assert_array_equal(
        _gains_hist1(fc.codes, fc.n_bins, A, A.sum(axis=0)), DecisionStump().search(fc, A)[0]
    )
    stumps, gain = HistogramStump(255).best(fc, A)
    f, thr, pol, ref_gain = _search_best(fc, A)
    assert (stumps.feature[0], stumps.threshold[0], stumps.polarity[0]) == (f[0], thr[0], pol[0])
    assert gain[0] == ref_gain[0]
