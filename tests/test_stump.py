"""The numba exact stump equals the plain reference (brute force over every stump)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from maxmargin.weak import DecisionStump
from maxmargin.weak.reference import reference_best_stumps


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 25), st.integers(1, 4), st.integers(1, 3), st.data())
def test_numba_stump_equals_reference(n, d, S, data):
    X = data.draw(arrays(np.float64, (n, d), elements=st.sampled_from([-1.0, 0.0, 0.5, 2.0, 7.0])))
    A = data.draw(arrays(np.float64, (n, S), elements=st.floats(-5, 5, allow_nan=False)))
    learner = DecisionStump()
    stumps, gains = learner.best(learner.prepare(X), A)
    _, ref_gains = reference_best_stumps(X, A)
    np.testing.assert_allclose(gains, ref_gains, rtol=1e-9, atol=1e-9)
    # the returned stumps really achieve the reported gains
    np.testing.assert_allclose(np.sum(stumps.evaluate(X) * A.T, axis=1), gains, atol=1e-9)


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
