"""Tree, real stump, perceptron and linear-SVM weak learners; edge cases for all."""

import numpy as np
import pytest
import scipy.sparse as sp

from maxmargin.weak import (
    HYPOTHESES,
    WEAK_LEARNERS,
    DecisionStump,
    DecisionTree,
    HistogramStump,
    LinearSVMWeak,
    RealStump,
    SigmoidPerceptron,
    make_weak_learner,
)


def _problem(seed=0, n=300, d=6, S=3):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, d)), 1)
    A = np.sin(3 * X[:, :1] + X[:, 1:2] * np.arange(1, S + 1)) + 0.3 * rng.standard_normal((n, S))
    return X, A


def _true_gain(h, Z, A):
    return np.sum(h.evaluate(Z) * A.T, axis=1)


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
@pytest.mark.parametrize("max_bins", [None, 255])
def test_tree_gain_at_least_stump_gain(depth, max_bins):
    X, A = _problem(depth)
    stump = DecisionStump(max_bins)
    _, g_stump = stump.best(stump.prepare(X), A)
    tree = DecisionTree(max_depth=depth, max_bins=max_bins)
    h, g = tree.best(tree.prepare(X), A)
    np.testing.assert_allclose(_true_gain(h, X, A), g, atol=1e-9)
    assert np.all(g >= g_stump - 1e-9)
    if depth == 1:
        np.testing.assert_allclose(g, g_stump, atol=1e-9)
    else:
        assert np.all(g > g_stump)
    assert set(np.unique(h.leaf)) <= {-1.0, 1.0}


def test_tree_sparse_matches_dense():
    X, A = _problem(5)
    X[X < 0.3] = 0.0
    tree = DecisionTree(max_depth=3)
    h_d, g_d = tree.best(tree.prepare(X), A)
    h_s, g_s = tree.best(tree.prepare(sp.csr_matrix(X)), A)
    np.testing.assert_allclose(g_s, g_d, rtol=1e-12)
    np.testing.assert_array_equal(h_s.evaluate(sp.csr_matrix(X)), h_d.evaluate(X))


def _brute_gentle(X, A):
    """max over features/thresholds (and the constant) of sum_sides D^2 / T."""
    best = np.full(A.shape[1], -np.inf)
    P, N = np.maximum(A, 0), np.maximum(-A, 0)

    def crit(p, q):
        t = p + q
        return np.divide((p - q) ** 2, t, out=np.zeros_like(t), where=t > 0)

    best = crit(P.sum(0), N.sum(0))
    for f in range(X.shape[1]):
        for t in np.unique(X[:, f])[:-1]:
            lo = X[:, f] <= t
            c = crit(P[lo].sum(0), N[lo].sum(0)) + crit(P[~lo].sum(0), N[~lo].sum(0))
            best = np.maximum(best, c)
    return best


@pytest.mark.parametrize("mode", ["gentle", "real"])
def test_real_stump_outputs_and_gain(mode):
    X, A = _problem(7, n=120, d=4)
    learner = RealStump(mode=mode)
    h, g = learner.best(learner.prepare(X), A)
    out = h.evaluate(X)
    assert np.all(np.abs(out) <= 1.0 + 1e-12)
    np.testing.assert_allclose(_true_gain(h, X, A), g, atol=1e-9)
    if mode == "gentle":  # the Gentle criterion is the true gain of its outputs
        np.testing.assert_allclose(g, _brute_gentle(X, A), rtol=1e-9)
    else:
        assert np.isclose(np.abs(out).max(), 1.0)
    _, g_s = learner.best(learner.prepare(sp.csc_matrix(X)), A)
    np.testing.assert_allclose(g_s, g, rtol=1e-9)


def test_perceptron_gain_at_least_starting_stump():
    X, A = _problem(8, n=400, d=5)
    A[:, 0] = np.where(X[:, 0] + X[:, 1] > 0.2, 1.0, -1.0)  # an oblique boundary
    stump = DecisionStump()
    _, g_stump = stump.best(stump.prepare(X), A)
    learner = SigmoidPerceptron()
    h, g = learner.best(learner.prepare(X), A)
    np.testing.assert_allclose(_true_gain(h, X, A), g, atol=1e-9)
    assert np.all(g >= g_stump - 1e-9)
    assert g[0] > g_stump[0] + 0.1 * A.shape[0] * 0.1  # the oblique direction is found
    h2, g2 = SigmoidPerceptron(output="sign").best(learner.prepare(X), A)
    assert np.all(g2 >= g_stump - 1e-9)
    assert set(np.unique(h2.evaluate(X))) <= {-1.0, 1.0}


def test_linear_svm_separable_and_drop():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((200, 3))
    a = np.where(X @ [1.0, -2.0, 0.5] > 0.3, 1.0, -1.0) * rng.uniform(0.5, 1.5, 200)
    learner = LinearSVMWeak(drop_fraction=0.0)
    h, g = learner.best(learner.prepare(X), a[:, None])
    np.testing.assert_allclose(g, np.abs(a).sum(), rtol=1e-9)  # perfect separation
    np.testing.assert_allclose(_true_gain(h, X, a[:, None]), g)
    w = LinearSVMWeak(drop_fraction=0.1)._dropped(np.array([0, 5, 1, 2, 3, 4, 6, 7, 8, 9, 10.0]))
    assert w[2] == 0 and np.count_nonzero(w) == 9
    h_s, g_s = LinearSVMWeak().best(LinearSVMWeak().prepare(sp.csr_matrix(X)), a[:, None])
    np.testing.assert_allclose(_true_gain(h_s, sp.csr_matrix(X), a[:, None]), g_s)


def _learners():
    return [make_weak_learner(name) for name in WEAK_LEARNERS] + [
        DecisionTree(max_depth=4),
        HistogramStump(max_bins=2),
    ]


@pytest.mark.parametrize("learner", _learners(), ids=lambda w: type(w).__name__)
def test_edge_cases_and_persistence(learner):
    """All-zero weights, one sample, constant features, sparse input: finite, exact gains."""
    rng = np.random.default_rng(10)
    X = rng.standard_normal((30, 4))
    X[:, 1] = 3.0
    cases = [
        (X, np.zeros((30, 2))),
        (X[:1], np.array([[1.5, -2.0]])),
        (np.full((10, 3), 7.0), rng.standard_normal((10, 2))),
        (sp.csr_matrix(np.where(X > 0.5, X, 0.0)), rng.standard_normal((30, 2))),
    ]
    for Z, A in cases:
        h, g = learner.best(learner.prepare(Z), A)
        assert len(h) == A.shape[1] and g.shape == (A.shape[1],)
        out = h.evaluate(Z)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(out))
        assert np.all(np.abs(out) <= 1.0)
        np.testing.assert_allclose(np.sum(out * A.T, axis=1), g, atol=1e-9)
        if not A.any():
            np.testing.assert_array_equal(g, 0.0)
        if Z.shape[0] == 1 or np.ptp(np.asarray(sp.csr_matrix(Z).toarray()), axis=0).max() == 0:
            np.testing.assert_array_equal(np.ptp(out, axis=1), 0.0)  # only constants exist
            if not isinstance(learner, RealStump):
                np.testing.assert_allclose(g, np.abs(A.sum(axis=0)))
    # pickle-free round trip through plain arrays and the registry
    name = type(h).__name__
    assert HYPOTHESES[name] is type(h)
    arrays = h.to_arrays()
    assert all(isinstance(v, np.ndarray) and v.dtype.kind in "fiu" for v in arrays.values())
    h2 = HYPOTHESES[name].from_arrays(arrays)
    np.testing.assert_array_equal(h2.evaluate(X), h.evaluate(X))
    both = h.empty(4).concat(h).concat(h2.take([1, 0]))
    assert len(both) == 4
    np.testing.assert_array_equal(both.evaluate(X)[2], h.evaluate(X)[1])


def test_unknown_name():
    with pytest.raises(ValueError, match="unknown weak_learner"):
        make_weak_learner("forest")
    with pytest.raises(ValueError):
        DecisionTree(max_depth=7).prepare(np.zeros((3, 2)))


@pytest.mark.parametrize("name", sorted(WEAK_LEARNERS))
def test_structboost_accepts_every_name(name):
    from sklearn.datasets import load_iris

    from maxmargin import StructBoostClassifier

    X, y = load_iris(return_X_y=True)
    clf = StructBoostClassifier(weak_learner=name, max_iter=4, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.6
    assert all({"t_weak", "t_master", "t_oracle"} <= set(r) for r in clf.history_)
