"""Algorithms 1/2 (O(n log n)) against the O(n^2) enumeration of all pairs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maxmargin.inference.ranking import (
    PreferenceGraph,
    brute_force_constraint,
    most_violated_constraint,
)

GRAPHS = [
    ("complete", None),
    ("bipartite", None),
    ("bipartite", 2),
    ("bipartite", 5),
    ("star", None),
]


@st.composite
def problems(draw):
    n = draw(st.integers(1, 40))
    # few distinct values -> many ties in losses, scores and in key +- margin
    loss = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    score = draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n))
    grouped = draw(st.booleans())
    group = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) if grouped else None
    return (
        np.array(loss, float),
        np.array(score, float) / 2,
        None if group is None else np.array(group),
    )


@settings(max_examples=60, deadline=None)
@given(
    problems(),
    st.sampled_from(GRAPHS),
    st.sampled_from(["margin", "slack", "unit"]),
    st.sampled_from([1, 2]),
)
def test_matches_brute_force(prob, graph, rescaling, n_jobs):
    loss, s, group = prob
    kind, top_k = graph
    a, d = most_violated_constraint(loss, s, kind, rescaling, group, top_k, n_jobs=n_jobs)
    a_ref, d_ref = brute_force_constraint(loss, s, kind, rescaling, group, top_k)
    # integer / half-integer data: all sums are exact
    np.testing.assert_array_equal(a, a_ref)
    assert d == d_ref


@pytest.mark.parametrize("rescaling", ["margin", "slack", "unit"])
@pytest.mark.parametrize("kind,top_k", GRAPHS)
def test_continuous_random(kind, top_k, rescaling):
    rng = np.random.default_rng(0)
    n = 500
    loss = np.round(rng.random(n), 2)
    s = rng.normal(size=n)
    group = rng.integers(0, 7, n)
    a, d = most_violated_constraint(loss, s, kind, rescaling, group, top_k, n_jobs=2)
    a_ref, d_ref = brute_force_constraint(loss, s, kind, rescaling, group, top_k)
    np.testing.assert_allclose(a, a_ref, rtol=1e-9, atol=1e-9)
    assert np.isclose(d, d_ref, rtol=1e-12)


@pytest.mark.parametrize("rescaling", ["margin", "slack", "unit"])
def test_constraint_value_is_hinge_sum(rescaling):
    """delta - <alpha, s> equals the sum of pairwise hinges (eqs. 9/10)."""
    rng = np.random.default_rng(1)
    n = 60
    loss, s = rng.random(n), rng.normal(size=n)
    a, d = most_violated_constraint(loss, s, "complete", rescaling)
    D = loss[None, :] - loss[:, None]  # D[i, j] = loss_j - loss_i
    S = s[:, None] - s[None, :]
    h = {
        "margin": np.maximum(D - S, 0),
        "slack": np.maximum(D * (1 - S), 0),
        "unit": np.maximum(1 - S, 0),
    }[rescaling]
    assert np.isclose(d - a @ s, h[D > 0].sum())


def test_bipartite_tie_at_top_k_joins_upper_side():
    loss = np.array([0.0, 1.0, 1.0, 2.0])
    g = PreferenceGraph(loss, graph="bipartite", top_k=2)
    assert g.edges_per_group.sum() == 3  # {0,1,2} above {3}


def test_all_tied_has_no_constraint():
    a, d = most_violated_constraint(np.ones(10), np.arange(10.0), "complete", "slack")
    assert d == 0 and not a.any()


def test_input_validation():
    with pytest.raises(ValueError):
        most_violated_constraint([0.0, np.nan], [0.0, 1.0])
    with pytest.raises(ValueError):
        most_violated_constraint([0.0, 1.0], [0.0])
    with pytest.raises(ValueError):
        most_violated_constraint([0.0, 1.0], [0.0, 1.0], graph="chain")
    with pytest.raises(ValueError):
        most_violated_constraint([0.0, 1.0], [0.0, 1.0], rescaling="both")
    with pytest.raises(ValueError):
        PreferenceGraph([0.0, 1.0], graph="complete", top_k=1)


@pytest.mark.parametrize("rescaling", ["margin", "slack", "unit"])
@pytest.mark.parametrize("kind,top_k", GRAPHS)
def test_threaded_tree_and_piecewise_sort_equal_serial_bit_for_bit(
    monkeypatch, kind, top_k, rescaling
):
    """With the parallel paths forced on for small n (tree levels on numba threads, the
    sort cut into fixed pieces merged by co-rank), the oracle equals the serial one bit
    for bit, and the brute force; ties in the keys included."""
    import maxmargin.inference.ranking as R

    rng = np.random.default_rng(3)
    for trial in range(4):
        n = int(rng.integers(2, 300))
        loss = np.round(rng.random(n), 1)
        s = np.round(rng.normal(size=n), 1)  # many ties
        group = rng.integers(0, 4, n) if trial % 2 else None
        plain = most_violated_constraint(loss, s, kind, rescaling, group, top_k, n_jobs=1)
        monkeypatch.setattr(R, "_PARALLEL_N", 0)
        monkeypatch.setattr(R, "_PIECEWISE_N", 2)
        try:
            serial = most_violated_constraint(loss, s, kind, rescaling, group, top_k, 1)
            for n_jobs in (2, -1):
                a, d = most_violated_constraint(loss, s, kind, rescaling, group, top_k, n_jobs)
                np.testing.assert_array_equal(a, serial[0])
                assert d == serial[1]
        finally:
            monkeypatch.undo()
        # the piecewise sort orders tied keys differently: the same answer to rounding
        np.testing.assert_allclose(serial[0], plain[0], rtol=1e-12, atol=1e-12)
        assert np.isclose(serial[1], plain[1], rtol=1e-12)
        a_ref, d_ref = brute_force_constraint(loss, s, kind, rescaling, group, top_k)
        np.testing.assert_allclose(serial[0], a_ref, rtol=1e-9, atol=1e-9)
        assert np.isclose(serial[1], d_ref, rtol=1e-12)


def test_sorted_order_pieces_and_merge(monkeypatch):
    import maxmargin.inference.ranking as R

    rng = np.random.default_rng(0)
    monkeypatch.setattr(R, "_PIECEWISE_N", 2)
    for n in (2, 3, 7, 100, 1001):
        for key in (rng.normal(size=n), np.round(rng.normal(size=n))):  # distinct / tied
            orders = [R.sorted_order(key, t) for t in (1, 2, 3)]
            for p in orders:
                assert np.array_equal(np.sort(p), np.arange(n))  # a permutation
                assert np.all(np.diff(key[p]) >= 0)  # sorted
                np.testing.assert_array_equal(p, orders[0])  # same for any thread count
            if len(np.unique(key)) == n:
                np.testing.assert_array_equal(orders[0], np.argsort(key))
    # the merge takes the left run's element first on ties, at every co-rank split
    key = np.array([1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 2.0])
    A, B = np.array([0, 1, 2, 3]), np.array([4, 5, 6])
    for segments in (1, 2, 3, 7):
        out = np.empty(7, np.int64)
        R._merge_sorted(key, A, B, out, segments)
        np.testing.assert_array_equal(out, [0, 1, 2, 4, 5, 3, 6])


def test_preference_graph_sort_on_threads_is_the_stable_order(monkeypatch):
    from maxmargin.inference import ranking as rk

    monkeypatch.setattr(rk, "_PARALLEL_N", 1)
    monkeypatch.setattr(rk, "_PIECEWISE_N", 1)  # the piecewise stable sort on small data
    rng = np.random.default_rng(0)
    loss = np.round(rng.random(1001), 1)  # many ties: stability decides the order
    g1 = rk.PreferenceGraph(loss, n_jobs=1)
    g2 = rk.PreferenceGraph(loss, n_jobs=2)
    assert np.array_equal(g1.order, np.argsort(loss, kind="stable"))
    assert np.array_equal(g1.order, g2.order)
    assert np.array_equal(g1.loss_sorted, g2.loss_sorted)
    s = rng.normal(size=1001)
    a1, d1 = g1.most_violated(s, n_jobs=1)
    a2, d2 = g2.most_violated(s, n_jobs=2)
    assert np.array_equal(a1, a2) and np.array_equal(d1, d2)
