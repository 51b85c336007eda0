"""Label-coding tasks: oracles equal brute-force enumeration of the outputs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from maxmargin.tasks import BinaryTask, DualPairs, MultiClassTask


def brute_force(F, y_codes, gamma, delta):
    """argmax_y Delta(y_i, y) - w.dPsi_i(y) by enumerating every label of every example."""
    out = []
    for i in range(len(F)):
        vals = [
            delta[y_codes[i], k] - (F[i] @ gamma[y_codes[i]] - F[i] @ gamma[k])
            for k in range(len(gamma))
        ]
        out.append(max(vals))
    return np.array(out)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 12), st.data())
def test_loss_augmented_equals_enumeration(K, n, data):
    y = data.draw(arrays(np.int64, n, elements=st.integers(0, K - 1)))
    y[: min(n, K)] = np.arange(min(n, K))
    if len(np.unique(y)) < 2:
        return
    F = data.draw(
        arrays(np.float64, (n, len(np.unique(y))), elements=st.floats(-3, 3, allow_nan=False))
    )
    delta = data.draw(arrays(np.float64, (len(np.unique(y)),) * 2, elements=st.floats(0.1, 2)))
    np.fill_diagonal(delta, 0.0)
    task = MultiClassTask(loss=delta).bind(np.zeros((n, 1)), y)
    orc = task.loss_augmented(F)
    expected = brute_force(F, task.y_, task.gamma_, task.delta_)
    np.testing.assert_allclose(orc.loss - orc.margin, expected, atol=1e-12)
    again = task.evaluate_outputs(F, orc.label)
    np.testing.assert_allclose(again.margin, orc.margin)


def test_binary_oracle_and_prediction():
    task = BinaryTask().bind(np.zeros((4, 1)), np.array([-1, 1, 1, -1]))
    F = np.array([[0.5], [0.5], [-2.0], [-3.0]])
    # joint score of label +1 is F/2, of -1 is -F/2: prediction is sign(F)
    np.testing.assert_array_equal(task.decode(task.predict_codes(F)), [1, 1, -1, -1])
    orc = task.loss_augmented(F)
    expected = brute_force(F, task.y_, task.gamma_, task.delta_)
    np.testing.assert_allclose(orc.loss - orc.margin, expected)


def test_weak_weights_match_definition():
    """A[i, s] = sum_y mu_(i,y) (Gamma[y_i, s] - Gamma[y, s]) (ARCHITECTURE 'the one idea')."""
    rng = np.random.default_rng(0)
    y = np.array([0, 1, 2, 1, 0])
    task = MultiClassTask().bind(np.zeros((5, 1)), y)
    pairs = DualPairs(np.array([0, 0, 3, 4]), np.array([1, 2, 0, 1]), rng.random(4))
    A = task.weak_weights(pairs)
    expected = np.zeros((5, 3))
    for i, k, v in zip(pairs.sample, pairs.label, pairs.value):
        expected[i] += v * (np.eye(3)[y[i]] - np.eye(3)[k])
    np.testing.assert_allclose(A, expected)
    # joint_difference agrees with the weights: sum_pairs mu dpsi = sum_z phi(z) A[z, s]
    phi = rng.normal(size=(2, 5))
    slots = np.array([0, 2])
    d = task.joint_difference(phi, slots, pairs) @ pairs.value
    np.testing.assert_allclose(d, [phi[0] @ A[:, 0], phi[1] @ A[:, 2]])


def test_initial_violators_are_wrong_labels():
    task = MultiClassTask().bind(np.zeros((50, 1)), np.arange(50) % 4)
    orc = task.initial_violators(np.random.default_rng(0))
    assert np.all(orc.label != task.y_)
    assert len(np.unique(orc.label)) == 4  # ties broken at random, not always the first


@pytest.mark.parametrize("bad", [np.ones((3, 3)), np.array([[0.0, 1.0], [0.0, 0.0]])])
def test_invalid_loss_matrix_rejected(bad):
    with pytest.raises(ValueError, match="loss matrix"):
        MultiClassTask(loss=bad).bind(np.zeros((2, 1)), [0, 1])


def test_single_class_rejected():
    with pytest.raises(ValueError, match="at least 2 classes"):
        MultiClassTask().bind(np.zeros((3, 1)), [1, 1, 1])
