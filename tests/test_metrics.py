"""Ranking metrics against direct definitions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score, roc_auc_score

from maxmargin.metrics import (
    auc,
    mean_average_precision,
    ndcg_at_k,
    pairwise_accuracy,
    ranking_risk,
)


def _risk_pairs(loss, s):
    tot, cnt = 0.0, 0
    n = len(loss)
    for i in range(n):
        for j in range(i + 1, n):
            d = abs(loss[j] - loss[i])
            mis = (loss[j] - loss[i]) * (s[i] - s[j]) < 0
            tot += d * (mis + 0.5 * (s[i] == s[j]))
            cnt += 1
    return tot / cnt


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(-3, 3), st.integers(0, 2)), min_size=2, max_size=30
    )
)
def test_ranking_risk_matches_eq1(rows):
    loss, s, g = (np.array(c, float) for c in zip(*rows))
    assert np.isclose(ranking_risk(loss, s), _risk_pairs(loss, s))
    vals = [_risk_pairs(loss[g == v], s[g == v]) for v in np.unique(g) if (g == v).sum() > 1]
    if vals:
        assert np.isclose(ranking_risk(loss, s, group=g), np.mean(vals))
    else:
        assert np.isnan(ranking_risk(loss, s, group=g))


def test_risk_of_perfect_and_reversed_ranking():
    loss = np.arange(10.0)
    assert ranking_risk(loss, -loss) == 0
    assert ranking_risk(loss, np.zeros(10)) == pytest.approx(0.5 * _risk_pairs(loss, loss) * 2 / 2)
    assert ranking_risk(loss, loss) == pytest.approx(_risk_pairs(loss, loss))


def test_auc_matches_sklearn_and_bipartite_risk():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    s = rng.integers(0, 10, 200).astype(float)  # many ties
    assert auc(y, s) == pytest.approx(roc_auc_score(y, s))
    # AUC = 1 - risk on the bipartite graph with 0/1 losses
    assert auc(y, s) == pytest.approx(1 - ranking_risk(1.0 - y, s, graph="bipartite"))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(-3, 3), st.integers(0, 2)), min_size=1, max_size=30
    )
)
def test_pairwise_accuracy_brute_force(rows):
    rel, s, g = (np.array(c, float) for c in zip(*rows, strict=True))
    per_group = []
    for gv in np.unique(g):
        r, sc = rel[g == gv], s[g == gv]
        up = r[:, None] > r[None, :]
        if up.any():
            good = (sc[:, None] > sc[None, :]) + 0.5 * (sc[:, None] == sc[None, :])
            per_group.append(good[up].mean())
    got = pairwise_accuracy(rel, s, group=g)
    if per_group:
        assert got == pytest.approx(np.mean(per_group), abs=1e-12)
    else:
        assert np.isnan(got)


def test_pairwise_accuracy_is_auc_for_binary():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    s = rng.integers(0, 10, 200).astype(float)
    assert pairwise_accuracy(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_ndcg_matches_sklearn_with_ties():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(2, 30))
        rel = rng.integers(0, 3, n).astype(float)
        if rel.max() == 0:
            rel[0] = 1
        s = rng.integers(0, 5, n).astype(float)
        for k in (1, 5, 10):
            ref = ndcg_score(np.exp2(rel)[None] - 1, s[None], k=k)
            assert ndcg_at_k(rel, s, k=k) == pytest.approx(ref)


def test_ndcg_groups_and_empty_queries():
    rel = np.array([1, 0, 0, 0, 2, 1.0])
    s = np.array([0.1, 0.9, 0.3, 0.2, 0.5, 0.4])
    g = np.array([0, 0, 1, 1, 2, 2])
    v0 = (1 / np.log2(3)) / 1.0
    assert ndcg_at_k(rel, s, k=10, group=g) == pytest.approx((v0 + 0 + 1) / 3)
    assert ndcg_at_k(rel, s, k=10, group=g, no_relevant="skip") == pytest.approx((v0 + 1) / 2)
    assert ndcg_at_k(rel, s, k=10, group=g, no_relevant="one") == pytest.approx((v0 + 2) / 3)


def test_map():
    rel = np.array([1, 0, 1, 0, 0, 1.0])
    s = -np.arange(6.0)  # ranked in input order
    assert mean_average_precision(rel, s) == pytest.approx((1 + 2 / 3 + 3 / 6) / 3)
    g = np.array([0, 0, 0, 1, 1, 1])
    assert mean_average_precision(rel, s, group=g) == pytest.approx(((1 + 2 / 3) / 2 + 1 / 3) / 2)


def test_validation():
    with pytest.raises(ValueError):
        auc([0, 1], [0.0])
    with pytest.raises(ValueError):
        ndcg_at_k([0, 1], [np.nan, 1.0])
    with pytest.raises(ValueError):
        ndcg_at_k([0, 1], [0.0, 1.0], k=0)
    with pytest.raises(ValueError):
        ranking_risk([], [])
