"""Several columns per column-generation iteration (``columns_per_iter``, issue 28).

* Every classifier that enters has, under the signed weights of the search that priced it,
  a slot of gain above ``1 + eps_cg`` (recomputed here from its outputs, not read from the
  search): a valid entering column of [Shen2014 Alg. 1].
* The fit ends at the exact LP optimum over its stored columns (scipy's linprog, every
  row written out) with ``certify="exact"``, and within its certified gap of it with
  ``certify="gap"``.
* ``max_iter`` keeps counting weak learners: at most ``max_iter`` classifiers enter,
  over fewer iterations.
* q = 1 is the classic loop: the default fit, one new classifier per iteration at most.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from data_makers import LP_TOL, restricted_lp_optimum
from maxmargin import StructBoostClassifier
from maxmargin.solvers.column_generation import fit_structboost
from maxmargin.tasks import MultiClassTask
from maxmargin.weak import DecisionStump

EPS_CG = 1e-6
#: the search's gains and the float64 products below sum the same weights in different
#: orders: |difference| <= n * eps * sum |A| (about 1e-13 here)
ROUND = 1e-10


def digits(n=240, k=6):
    X, y = load_digits(return_X_y=True)
    keep = y < k
    return X[keep][:n, ::2], y[keep][:n]


class RecordingStump(DecisionStump):
    """Exact stumps that remember the signed weights of every search."""

    def __init__(self):
        super().__init__()
        self.weights = []

    def best(self, prepared, A):
        self.weights.append(np.array(A, dtype=np.float64, copy=True))
        return super().best(prepared, A)


def fit(X, y, q, certify="exact", max_iter=1000, C=50.0):
    task = MultiClassTask().bind(X, y)
    weak = RecordingStump()
    searches = []  # number of searches made before each iteration's record
    res = fit_structboost(
        task,
        weak,
        C=C,
        master="fast",
        certify=certify,
        eps_cg=EPS_CG,
        max_iter=max_iter,
        columns_per_iter=q,
        rng=np.random.default_rng(0),
        callback=lambda rec: searches.append(len(weak.weights)),
    )
    return task, weak, searches, res


@pytest.mark.parametrize("q, C", [(2, 50.0), (4, 50.0), (10, 50.0), (10, 5.0)])
def test_every_entered_classifier_prices_above_the_threshold(q, C):
    # (with q = 10 > 6 classes, candidates below the threshold are on offer: at C = 5
    # and 50 some have gain 0.85-0.86 in every slot, so a loose pick rule fails here)
    X, y = digits(300)
    task, weak, searches, res = fit(X, y, q, C=C)
    assert res.converged
    H = res.hypotheses.evaluate(task.weak_inputs())
    first_col = np.full(len(res.hypotheses), -1)
    for j in range(len(res.column_hyp) - 1, -1, -1):
        first_col[res.column_hyp[j]] = j
    several = 0
    n_cols = 0
    for rec, n_search in zip(res.history, searches, strict=True):
        entered = np.flatnonzero((first_col >= n_cols) & (first_col < rec["n_columns"]))
        n_cols = rec["n_columns"]
        if len(entered) == 0:
            continue
        A = weak.weights[n_search - 1]  # the search that priced this iteration's columns
        gains = H[entered] @ A  # (entered, slots)
        assert np.all(gains.max(axis=1) > 1.0 + EPS_CG - ROUND)
        assert len(entered) <= q
        several += len(entered) > 1
    assert several > 0  # the option did enter several classifiers at once


@pytest.mark.parametrize("q", [1, 3, 6])
def test_ends_at_the_full_lp_optimum_over_its_columns(q):
    X, y = digits()
    task, _, _, res = fit(X, y, q, certify="exact", max_iter=40)
    assert res.certified
    H = res.hypotheses.evaluate(X)
    opt = restricted_lp_optimum(H, res.column_hyp, res.column_slot, task.y_, 50.0, np.eye(6))
    assert res.objective == pytest.approx(opt, rel=1e-9)
    assert res.dual_bound <= opt * (1 + 1e-9)


@pytest.mark.parametrize("q", [3, 6])
def test_certified_gap_bounds_the_distance_to_the_lp_optimum(q):
    X, y = digits()
    task, _, _, res = fit(X, y, q, certify="gap", max_iter=40)
    H = res.hypotheses.evaluate(X)
    opt = restricted_lp_optimum(H, res.column_hyp, res.column_slot, task.y_, 50.0, np.eye(6))
    assert res.dual_bound <= opt + LP_TOL * max(1.0, opt)
    assert res.objective >= opt - LP_TOL * max(1.0, opt)
    assert (res.objective - opt) / res.objective <= res.gap + LP_TOL


@pytest.mark.parametrize("q, max_iter", [(4, 10), (4, 11), (6, 25)])
def test_max_iter_counts_weak_learners(q, max_iter):
    X, y = digits()
    _, _, _, res = fit(X, y, q, certify="none", max_iter=max_iter)
    assert not res.converged  # the budget, not convergence, ended these fits
    n_weak = len(res.hypotheses)
    assert n_weak <= max_iter
    assert n_weak >= max_iter - 1  # steps that only re-open held columns are rare here
    assert len(res.history) < n_weak  # fewer iterations than weak learners


def test_one_column_per_iteration_is_the_default_fit():
    X, y = digits(150, 4)
    kw = dict(C=100.0, max_iter=30, random_state=0)
    a = StructBoostClassifier(**kw).fit(X, y)
    b = StructBoostClassifier(columns_per_iter=1, **kw).fit(X, y)
    assert np.array_equal(a.slot_weights_, b.slot_weights_)
    assert [r["objective"] for r in a.history_] == [r["objective"] for r in b.history_]
    # the classic loop: at most one new classifier per iteration (shared stumps)
    _, _, _, res = fit(X, y, 1, max_iter=30)
    first = np.unique(res.column_hyp, return_index=True)[1]
    per_iter = np.diff(np.searchsorted(np.sort(first), [0] + [r["n_columns"] for r in res.history]))
    assert per_iter.max() == 1


def test_columns_per_iter_must_be_a_positive_integer():
    X, y = digits(60, 3)
    with pytest.raises(ValueError):
        StructBoostClassifier(columns_per_iter=0).fit(X, y)
    task = MultiClassTask().bind(X, y)
    with pytest.raises(ValueError, match="columns_per_iter"):
        fit_structboost(task, DecisionStump(), C=10.0, columns_per_iter=1.5)
