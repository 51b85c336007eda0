import numpy as np
import pytest

from maxmargin.weak import HYPOTHESES, DecisionTree, NonNegative, make_weak_learner


@pytest.mark.parametrize("base", ["stump", "real_stump", DecisionTree(max_depth=2)])
def test_nonnegative_gains_outputs_and_persistence(base):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    A = rng.normal(size=(40, 2))
    learner = NonNegative(base)
    h, g = learner.best(learner.prepare(X), A)
    out = h.evaluate(X)
    assert out.min() >= 0.0 and out.max() <= 1.0
    np.testing.assert_allclose(np.sum(out * A.T, axis=1), g, atol=1e-9)
    # the wrapped learner's choice is the base learner's choice
    b = make_weak_learner(base)
    hb, _ = b.best(b.prepare(X), A)
    np.testing.assert_allclose(out, 0.5 * (hb.evaluate(X) + 1.0))
    name = type(h).__name__
    h2 = HYPOTHESES[name].from_arrays(h.to_arrays())
    np.testing.assert_array_equal(h2.evaluate(X), out)
    both = learner.hypotheses_class.empty(3).concat(h).concat(h2.take([1]))
    assert len(both) == 3


def test_nonnegative_rejects_unbounded_base():
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        NonNegative("linear_svm").prepare(np.zeros((3, 2)))
