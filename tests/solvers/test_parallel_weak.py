"""Blocked stump search (solvers/parallel_weak.py): equal to the serial search, bit for bit."""

import os

import numpy as np
import pytest
import scipy.sparse as sp

from maxmargin import StructBoostClassifier
from maxmargin.exceptions import ParallelFitError
from maxmargin.solvers.parallel_weak import (
    BlockedStumpSearch,
    _prepared,
    feature_blocks,
    supports_blocks,
)
from maxmargin.weak import DecisionStump, HistogramStump, make_weak_learner
from maxmargin.weak.binning import SORTED_MIN_BINS

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(sparse=False, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.integers(0, 4, size=(120, 37)).astype(float)  # many ties between features
    Z[:, 5] = Z[:, 20]  # duplicate features: the first must win
    if sparse:
        Z[rng.random(Z.shape) < 0.6] = 0.0
        Z = sp.csr_matrix(Z)
    A = rng.normal(size=(120, 4))
    A[:, 3] = np.round(A[:, 3])  # integer weights: exact gain ties
    return Z, A


def test_feature_blocks():
    assert np.array_equal(feature_blocks(3), [0, 1, 2, 3])
    b = feature_blocks(1000)
    assert len(b) == 17 and b[-1] == 1000
    with pytest.raises(ValueError):
        feature_blocks(5, 0)
    assert supports_blocks(DecisionStump()) and supports_blocks(HistogramStump())
    assert not supports_blocks(make_weak_learner("tree"))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weak", [DecisionStump(), HistogramStump(max_bins=3)])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_blocked_search_equals_serial(sparse, weak, n_jobs):
    Z, A = _data(sparse)
    if sparse:  # mostly-zero weights (a chain plane): only the non-zeros are sent
        A[np.random.default_rng(5).random(A.shape) < 0.9] = 0.0
    ref, gref = weak.best(weak.prepare(Z), A)
    with BlockedStumpSearch(weak, n_jobs=n_jobs, n_blocks=5) as blocked:
        prep = blocked.prepare(Z)
        for _ in range(2):  # the blocks stay prepared on the workers
            cand, gain = blocked.best(prep, A)
            assert np.array_equal(gain, gref)
            assert np.array_equal(cand.feature, ref.feature)
            assert np.array_equal(cand.threshold, ref.threshold)
            assert np.array_equal(cand.polarity, ref.polarity)
            assert np.array_equal(cand.evaluate(Z), ref.evaluate(Z))
        if n_jobs == 2:
            assert blocked.bytes_sent == 2 * 2 * (12 * np.count_nonzero(A) if sparse else A.nbytes)


@pytest.mark.parametrize("n_cols", [1, 4])
def test_blocked_sorted_search_equals_serial(n_cols):
    """Exact stumps on features with many distinct values: every block is coded as
    ``DecisionStump.prepare`` codes (sorted order kept) and searched by the two-pass
    ``best``; the stumps are the serial ones bit for bit, ties included."""
    rng = np.random.default_rng(1)
    n = 4 * SORTED_MIN_BINS
    Z = rng.normal(size=(n, 23))
    Z[:, 9] = Z[:, 2]  # a duplicate feature in another block: the first must win
    Z[:, 14] = np.round(Z[:, 14])  # few values: the histogram passes beside the sorted ones
    A = rng.normal(size=(n, n_cols))
    A[:, -1] = np.round(A[:, -1])  # integer weights: exact gain ties
    weak = DecisionStump()
    ref, gref = weak.best(weak.prepare(Z), A)
    with BlockedStumpSearch(weak, n_jobs=1, n_blocks=4) as blocked:
        prep = blocked.prepare(Z)
        cand, gain = blocked.best(prep, A)
        assert all(_prepared(b).order_row is not None for b in prep.blocks)
    assert np.array_equal(gain, gref)
    assert np.array_equal(cand.feature, ref.feature)
    assert np.array_equal(cand.threshold, ref.threshold)
    assert np.array_equal(cand.polarity, ref.polarity)


def test_structboost_n_jobs_bit_for_bit(digits_split):
    Xtr, ytr, Xte, _ = digits_split
    Xtr, ytr = Xtr[:400], ytr[:400]
    kw = dict(C=100, max_iter=10, random_state=0)
    a = StructBoostClassifier(**kw).fit(Xtr, ytr)
    b = StructBoostClassifier(**kw, n_jobs=2).fit(Xtr, ytr)
    assert np.array_equal(a.slot_weights_, b.slot_weights_)
    assert np.array_equal(a.hypotheses_.feature, b.hypotheses_.feature)
    assert np.array_equal(a.decision_function(Xte), b.decision_function(Xte))


class _DyingStump(DecisionStump):
    """Dies in a worker process (never in the test's own process)."""

    def __init__(self):
        super().__init__()
        self.master = os.getpid()  # pickled by value with the instance

    def best(self, prepared, A):
        if os.getpid() != self.master:
            os._exit(3)
        return super().best(prepared, A)


def test_dead_worker_in_weak_search_aborts_fit(digits_split):
    Xtr, ytr, _, _ = digits_split
    est = StructBoostClassifier(C=100, max_iter=5, weak_learner=_DyingStump(), n_jobs=2)
    with pytest.raises(ParallelFitError, match="weak-learner search"):
        est.fit(Xtr[:200], ytr[:200])
    assert not hasattr(est, "slot_weights_")


def test_ranker_n_jobs_is_the_oracle_thread_count(monkeypatch):
    """StructBoostRanker's n_jobs keeps its meaning (ranking-oracle threads)."""
    from maxmargin import StructBoostRanker
    from maxmargin.solvers import parallel_weak

    def refuse(self):
        raise AssertionError("the ranker must not start the blocked stump search")

    monkeypatch.setattr(parallel_weak.BlockedStumpSearch, "__enter__", refuse)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)
    StructBoostRanker(C=10, max_iter=3, n_jobs=2).fit(X, y)
    with pytest.raises(AssertionError, match="blocked"):
        StructBoostClassifier(C=10, max_iter=3, n_jobs=2).fit(X, y)
