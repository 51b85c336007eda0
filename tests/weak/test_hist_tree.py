"""HistogramTree against independent answers: brute-force greedy trees, the exact tree
and stump learners, a plain-Python tree walk, and model-file round trips."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits

from maxmargin import StructBoostClassifier
from maxmargin.io import load, save
from maxmargin.weak import (
    HYPOTHESES,
    DecisionStump,
    DecisionTree,
    HistogramTree,
    Trees,
    make_weak_learner,
)
from maxmargin.weak import hist_tree as ht

# Gains are sums of at most n terms |a| <= ~3 in double precision; two summation orders
# (histograms, subtraction, bincount) agree to well within n * 2**-52 * sum|a| < 1e-9.
ATOL = 1e-9


def _thresholds(x):
    u = np.unique(x)
    return (u[:-1] + u[1:]) / 2.0  # every split between distinct values


def _splits(X):
    return [(f, t) for f in range(X.shape[1]) for t in _thresholds(X[:, f])]


def _best_split(X, a, rows):
    """First (feature, threshold) maximising |L| + |R| summed over the columns of a
    (2-d), or None when no split beats the unsplit node."""
    best, arg = np.abs(a[rows].sum(axis=0)).sum(), None
    for f, t in _splits(X):
        right = rows & (X[:, f] > t)
        left = rows & ~(X[:, f] > t)
        g = np.abs(a[left].sum(axis=0)).sum() + np.abs(a[right].sum(axis=0)).sum()
        if g > best + 1e-10 * np.abs(a[rows]).sum():
            best, arg = g, (f, t)
    return arg


def _brute_greedy_depth2(X, a):
    """Greedy depth-2 tree by enumeration: the root split first, then each child's;
    returns the tree's gain per column of a."""
    n = len(X)
    every = np.ones(n, dtype=bool)
    root = _best_split(X, a, every)
    parts = [every] if root is None else [~(X[:, root[0]] > root[1]), X[:, root[0]] > root[1]]
    leaves = []
    for rows in parts:
        sp_ = _best_split(X, a, rows)
        if sp_ is None:
            leaves.append(rows)
        else:
            leaves += [rows & ~(X[:, sp_[0]] > sp_[1]), rows & (X[:, sp_[0]] > sp_[1])]
    return sum(np.abs(a[r].sum(axis=0)) for r in leaves)


def _brute_optimal_depth2(X, a):
    """The best depth-2 tree (all root splits x best child splits), per column of a 1-col a."""
    n = len(X)
    every = np.ones(n, dtype=bool)

    def best_child(rows):
        g = abs(a[rows].sum())
        for f, t in _splits(X):
            r = rows & (X[:, f] > t)
            g = max(g, abs(a[r].sum()) + abs(a[rows & ~r].sum()))
        return g

    best = best_child(every)
    for f, t in _splits(X):
        r = X[:, f] > t
        best = max(best, best_child(~r) + best_child(r))
    return best


def _tiny(seed, n=14, d=3, S=3, distinct=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if distinct:
        X = rng.integers(0, distinct, size=(n, d)).astype(float)
    A = rng.standard_normal((n, S))
    return X, A


@pytest.mark.parametrize("seed", range(6))
def test_depth2_equals_brute_force_greedy_per_slot(seed):
    X, A = _tiny(seed, distinct=4 if seed % 2 else None)
    wl = HistogramTree(max_depth=2, max_bins=None if seed % 2 == 0 else 4)
    trees, g = wl.best(wl.prepare(X), A)
    for s in range(A.shape[1]):
        expect = _brute_greedy_depth2(X, A[:, [s]])[0]
        np.testing.assert_allclose(g[s], expect, rtol=0, atol=ATOL)
        # greedy: at least the best stump, at most the best depth-2 tree
        assert g[s] <= _brute_optimal_depth2(X, A[:, s]) + ATOL
    np.testing.assert_allclose(np.sum(trees.evaluate(X) * A.T, axis=1), g, atol=ATOL)


@pytest.mark.parametrize("seed", range(4))
def test_depth2_equals_brute_force_greedy_joint(seed):
    X, A = _tiny(seed + 10, distinct=3 if seed % 2 else None)
    wl = HistogramTree(max_depth=2, max_bins=None, grow="joint")
    trees, g = wl.best(wl.prepare(X), A)
    np.testing.assert_allclose(g, _brute_greedy_depth2(X, A), rtol=0, atol=ATOL)
    # one structure, per-slot leaves
    assert np.all(trees.feature == trees.feature[0]) and np.all(
        trees.threshold == trees.threshold[0]
    )
    np.testing.assert_allclose(np.sum(trees.evaluate(X) * A.T, axis=1), g, atol=ATOL)


def _problem(seed=0, n=400, d=6, S=4):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, d)), 2)
    X[:, 2] = np.round(X[:, 2])  # few distinct values
    A = np.sin(3 * X[:, :1] + X[:, 1:2] * np.arange(1, S + 1)) + 0.3 * rng.standard_normal((n, S))
    return X, A


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
@pytest.mark.parametrize("max_bins", [None, 16])
def test_equals_exact_tree_learner(depth, max_bins):
    """With the same bins both learners search the same greedy trees (same tie rules)."""
    X, A = _problem(depth)
    ours, g = HistogramTree(depth, max_bins).best(HistogramTree(depth, max_bins).prepare(X), A)
    ref = DecisionTree(depth, max_bins)
    theirs, g_ref = ref.best(ref.prepare(X), A)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(ours.evaluate(X), theirs.evaluate(X))
    if depth == 1:  # a depth-1 tree is the best stump
        st = DecisionStump(max_bins)
        np.testing.assert_allclose(g, st.best(st.prepare(X), A)[1], rtol=0, atol=ATOL)


@pytest.mark.parametrize("grow", ["per_slot", "joint"])
def test_subtraction_equals_direct_accumulation(grow, monkeypatch):
    X, A = _problem(5, n=600, S=5)
    wl = HistogramTree(5, 32, grow=grow)
    prep = wl.prepare(X)
    t1, g1 = wl.best(prep, A)
    monkeypatch.setattr(ht, "_SUBTRACT_BYTES", 0)  # every node accumulated directly
    t2, g2 = wl.best(prep, A)
    np.testing.assert_allclose(g1, g2, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(t1.evaluate(X), t2.evaluate(X))


def _walk(trees, X):
    """Plain-Python evaluation of heap-layout trees."""
    out = np.empty((len(trees), len(X)))
    for t in range(len(trees)):
        for k in range(len(X)):
            node = 0
            for _ in range(trees.depth):
                go_right = X[k, trees.feature[t, node]] > trees.threshold[t, node]
                node = 2 * node + (2 if go_right else 1)
            out[t, k] = trees.leaf[t, node - (2**trees.depth - 1)]
    return out


@pytest.mark.parametrize("depth", [1, 3, 6])
@pytest.mark.parametrize("grow", ["per_slot", "joint"])
def test_evaluation_equals_python_walk_and_gain(depth, grow):
    X, A = _problem(depth + 20, n=300, S=3)
    wl = HistogramTree(depth, grow=grow)
    trees, g = wl.best(wl.prepare(X), A)
    assert trees.depth == depth and len(trees) == A.shape[1]
    out = trees.evaluate(X)
    np.testing.assert_array_equal(out, _walk(trees, X))
    # routing on codes during the search == routing on thresholds at evaluation
    np.testing.assert_allclose(np.sum(out * A.T, axis=1), g, rtol=0, atol=ATOL)
    rng = np.random.default_rng(1)
    Xn = rng.standard_normal((50, X.shape[1]))  # unseen values
    np.testing.assert_array_equal(trees.evaluate(Xn), _walk(trees, Xn))
    # values exactly at the stored thresholds (x > t goes right, x == t left)
    thr = trees.threshold[np.isfinite(trees.threshold)]
    Xt = rng.choice(thr, size=(200, X.shape[1]))
    np.testing.assert_array_equal(trees.evaluate(Xt), _walk(trees, Xt))
    back = HYPOTHESES["Trees"].from_arrays(trees.to_arrays())
    np.testing.assert_array_equal(back.evaluate(Xn), trees.evaluate(Xn))


def test_deeper_never_loses_gain_and_sparse_matches_dense():
    X, A = _problem(7)
    X[X < 0.3] = 0.0
    prev = None
    for depth in range(1, 7):
        wl = HistogramTree(depth)
        _, g = wl.best(wl.prepare(X), A)
        if prev is not None:
            assert np.all(g >= prev - ATOL)
        prev = g
        _, g_sp = wl.best(wl.prepare(sp.csr_matrix(X)), A)
        np.testing.assert_allclose(g_sp, g, rtol=0, atol=ATOL)


def test_names_and_validation():
    wl = make_weak_learner("hist_tree:4:joint")
    assert isinstance(wl, HistogramTree) and wl.max_depth == 4 and wl.grow == "joint"
    assert make_weak_learner("hist_tree").max_depth == 3
    for bad in ("hist_tree:7", "hist_tree:0", "hist_tree:3:shared"):
        with pytest.raises(ValueError, match="unknown weak_learner"):
            make_weak_learner(bad)
    for kw in ({"max_depth": 7}, {"max_depth": 2.5}, {"grow": "both"}):
        with pytest.raises(ValueError):
            HistogramTree(**kw).prepare(np.zeros((3, 2)))
    wl = HistogramTree(2)
    prep = wl.prepare(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="weights"):
        wl.best(prep, np.zeros((4, 1)))
    with pytest.raises(ValueError, match="finite"):
        wl.best(prep, np.full((3, 1), np.nan))


@pytest.mark.parametrize(
    ("weak", "sharing"), [("hist_tree:3", "per_class"), ("hist_tree:2:joint", "shared")]
)
def test_structboost_model_file_round_trip(tmp_path, weak, sharing):
    X, y = load_digits(return_X_y=True)
    X, y = X[:300], y[:300]
    clf = StructBoostClassifier(
        weak_learner=weak, sharing=sharing, C=50, max_iter=8, random_state=0
    ).fit(X, y)
    assert isinstance(clf.hypotheses_, Trees) and clf.score(X, y) > 0.7
    path = tmp_path / "sb.mm"
    save(clf, path)
    back = load(path)
    assert back.weak_learner == weak
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))


def test_all_slots_in_one_call_equal_one_slot_at_a_time():
    X, A = _problem(11, S=6)
    wl = HistogramTree(4)
    prep = wl.prepare(X)
    trees, g = wl.best(prep, A)
    for s in range(6):
        one, g1 = wl.best(prep, A[:, [s]])
        np.testing.assert_allclose(g1[0], g[s], rtol=0, atol=ATOL)
        np.testing.assert_array_equal(one.evaluate(X)[0], trees.evaluate(X)[s])
