"""The fast smoothed master and its exact polish (issue 18), checked against independent answers.

* The model the fast master returns is the optimum of the m-slack LP (StructBoost eq. 3)
  over exactly its final columns, written out row by row and solved by scipy's linprog.
* The reported objective is recomputed here from the weights by enumerating every output;
  the reported dual bound never exceeds the linprog optimum.
* The smoothing satisfies its bounds ``P <= P_beta <= P + C log(K) / beta`` and its
  gradient matches finite differences; its duals are box-feasible.
* The generic (one call per output) dense methods of the task protocol agree with the
  label-coding specialisations.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris

from data_makers import restricted_lp_optimum
from maxmargin import StructBoost, StructBoostClassifier
from maxmargin.exceptions import EmptyModelWarning
from maxmargin.solvers.column_generation import fit_structboost
from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.lp_master import NSlackLP
from maxmargin.solvers.smoothed_problem import SmoothedProblem
from maxmargin.tasks import BinaryTask, MultiClassTask
from maxmargin.tasks.base import StructuredTask
from maxmargin.tasks.hierarchy import HierarchyTask, LabelAugmentedTask
from maxmargin.weak import DecisionStump

GLASS = {"glass": {"window": [1, 2, 3], "non_window": [5, 6, 7]}}


def small_digits(n=150, k=4):
    X, y = load_digits(return_X_y=True)
    keep = y < k
    return X[keep][:n, ::2], y[keep][:n]


def exact(task):
    """The task's ``(gamma, losses)`` for the linprog check of :func:`restricted_lp_optimum`."""
    return task.gamma_, task.dense_losses()


def primal_by_enumeration(task, H, col_hyp, col_slot, w, C):
    W = np.zeros((H.shape[0], task.n_slots))
    np.add.at(W, (col_hyp, col_slot), w)
    scores = (H.T @ W) @ task.gamma_.T  # (m, K) joint scores
    y = task.y_
    hinge = np.array(
        [
            max(
                task.delta_[y[i], k] + scores[i, k] - scores[i, y[i]]
                for k in range(scores.shape[1])
            )
            for i in range(len(y))
        ]
    )
    return w.sum() + C * hinge.mean()


@pytest.mark.parametrize("sharing", ["shared", "per_class"])
@pytest.mark.parametrize("C", [5.0, 50.0, 500.0])
def test_fast_master_returns_the_exact_lp_optimum_over_its_columns(sharing, C):
    X, y = small_digits()
    task = MultiClassTask(sharing=sharing).bind(X, y)
    res = fit_structboost(
        task, DecisionStump(), C=C, master="fast", max_iter=25, rng=np.random.default_rng(0)
    )
    assert res.certified
    H = res.hypotheses.evaluate(X)
    opt = restricted_lp_optimum(H, res.column_hyp, res.column_slot, task.y_, C, *exact(task))
    assert res.objective == pytest.approx(opt, rel=1e-9)
    # the reported values, recomputed independently of the solver
    primal = primal_by_enumeration(task, H, res.column_hyp, res.column_slot, res.w, C)
    assert res.objective == pytest.approx(primal, rel=1e-12)
    assert res.dual_bound <= opt * (1 + 1e-9)
    assert res.gap <= 1e-9


def test_every_iterations_dual_bound_is_a_lower_bound():
    """The smoothed duals' bound, recorded every iteration, never exceeds the LP optimum
    over that iteration's columns (the columns are a prefix of the final ones)."""
    X, y = small_digits(120, 3)
    task = MultiClassTask().bind(X, y)
    res = fit_structboost(task, DecisionStump(), C=30.0, master="fast", max_iter=12)
    H = res.hypotheses.evaluate(X)
    for rec in res.history[:-1:3]:
        n = rec["n_columns"]
        opt = restricted_lp_optimum(
            H, res.column_hyp[:n], res.column_slot[:n], task.y_, 30.0, *exact(task)
        )
        assert rec["dual_bound"] <= opt * (1 + 1e-9)
        assert rec["objective"] >= opt * (1 - 1e-9)  # any w is feasible: P(w) >= optimum


def test_smoothing_bounds_gradient_and_box_feasible_duals():
    X, y = small_digits(80, 4)
    task = MultiClassTask().bind(X, y)
    weak = DecisionStump()
    prep = weak.prepare(X)
    store = ColumnStore(weak.hypotheses_class, X.shape[1], X.shape[0], task.n_slots)
    rng = np.random.default_rng(3)
    C = 40.0
    sm = SmoothedProblem(task, store, C)
    for _ in range(4):  # a few stumps from random signed weights
        cand, _ = weak.best(prep, rng.normal(size=(len(y), task.n_slots)))
        sm.add_columns(store.add(cand.take([0]), cand.take([0]).evaluate(X), [np.arange(4)]))
    w = rng.random(store.n_columns)
    sm.set_weights(w)
    K = task.n_outputs
    assert sm.objective <= sm.smooth_objective <= sm.objective + C * np.log(K) / sm.beta + 1e-12
    # mu = (C/m) softmax: nonnegative, rows summing to C/m (box-feasible m-slack duals)
    Mu = (C / len(y)) * sm.P  # the duals behind the signed weights sm.A
    assert np.all(Mu >= 0)
    np.testing.assert_allclose(Mu.sum(axis=1), C / len(y), rtol=1e-12)
    np.testing.assert_allclose(sm.A, task.dense_weak_weights(Mu), atol=1e-12)
    # gradient of the smoothed objective = 1 - gains (finite differences)
    g = sm.grad.copy()
    f0 = sm.smooth_objective
    for j in rng.choice(len(w), 5, replace=False):
        e = np.zeros_like(w)
        e[j] = 1e-6
        sm.set_weights(w + e)
        assert (sm.smooth_objective - f0) / 1e-6 == pytest.approx(g[j], abs=1e-4)
    sm.set_weights(w)
    opt = restricted_lp_optimum(store.H, store.col_hyp, store.col_slot, task.y_, C, *exact(task))
    assert sm.dual_bound <= opt * (1 + 1e-9) <= sm.objective * (1 + 1e-9)


@pytest.mark.parametrize(
    "task",
    [
        MultiClassTask(),
        MultiClassTask(loss=np.array([[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0.0]])),
        BinaryTask(),
    ],
)
def test_generic_dense_methods_match_the_label_coding_ones(task):
    X, y = small_digits(60, 4)
    if isinstance(task, BinaryTask):
        y = y % 2
    task = task.bind(X, y)
    rng = np.random.default_rng(0)
    F = rng.normal(size=(len(y), task.n_slots))
    Mu = rng.random((len(y), int(task.n_outputs)))
    np.testing.assert_allclose(task.dense_margins(F), StructuredTask.dense_margins(task, F))
    np.testing.assert_allclose(task.dense_losses(), StructuredTask.dense_losses(task))
    np.testing.assert_allclose(
        task.dense_weak_weights(Mu), StructuredTask.dense_weak_weights(task, Mu), atol=1e-12
    )


@pytest.mark.parametrize(
    "task",
    [HierarchyTask(GLASS, loss="height"), LabelAugmentedTask(GLASS, loss="height")],
    ids=["hierarchy", "label_augmented"],
)
def test_fast_and_exact_masters_reach_the_same_optimum_on_trees(task):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 4, size=(40, 3)).astype(float)
    y = np.array([1, 2, 3, 5, 6, 7])[rng.integers(0, 6, 40)]
    objs = []
    for master in ("fast", "exact"):
        res = fit_structboost(
            task.bind(X, y),
            DecisionStump(),
            C=20.0,
            master=master,
            formulation="m-slack",
            eps_cp=1e-10,
            eps_cg=1e-9,
            max_iter=500,
            rng=np.random.default_rng(0),
        )
        assert res.converged and res.certified
        objs.append(res.objective)
    assert objs[0] == pytest.approx(objs[1], rel=1e-8)


def test_column_store_keeps_one_copy_of_identical_classifiers():
    X, _ = small_digits(50)
    weak = DecisionStump()
    cand, _ = weak.best(weak.prepare(X), np.random.default_rng(0).normal(size=(50, 1)))
    store = ColumnStore(weak.hypotheses_class, X.shape[1], X.shape[0], 3)
    out = cand.evaluate(X)
    assert list(store.add(cand, out, [np.array([0, 1])])) == [0, 1]
    assert list(store.add(cand, out, [np.array([1, 2])])) == [2]  # only the new slot
    assert store.n_hyp == 1 and store.n_columns == 3
    assert store.find(out[0]) == 0 and store.find(-out[0]) == -1


def test_polish_with_no_time_left_returns_at_once_and_keeps_its_state():
    X, y = small_digits(100)
    task = MultiClassTask().bind(X, y)
    res = fit_structboost(task, DecisionStump(), C=20.0, master="fast", max_iter=5)
    store = ColumnStore(DecisionStump.hypotheses_class, X.shape[1], X.shape[0], task.n_slots)
    store.add(res.hypotheses, res.hypotheses.evaluate(X), [np.arange(4)] * len(res.hypotheses))
    lp = NSlackLP(task, store, 20.0)
    lp.activate(np.arange(store.n_columns))
    lp.add_rows(np.arange(len(y)), (task.y_ + 1) % 4)
    assert lp.run(row_tol=1e-9, col_tol=1e-9, deadline=time.perf_counter() - 1.0) is False
    assert lp.n_solves == 0  # the deadline had passed: no HiGHS solve was attempted
    assert lp.n_solves == 0 and not lp.w.any()


def test_tiny_C_warns_that_the_model_is_empty():
    X, y = load_iris(return_X_y=True)
    with pytest.warns(EmptyModelWarning, match="no weak learner"):
        clf = StructBoostClassifier(C=0.5, max_iter=5).fit(X, y)
    assert len(clf.hypotheses_) == 0


def test_huge_C_is_refused_with_advice_and_1e9_works():
    X, y = small_digits(100)
    with pytest.raises(ValueError, match="too large"):
        StructBoostClassifier(C=1e13).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyModelWarning)
        clf = StructBoostClassifier(C=1e9, max_iter=20).fit(X, y)
    assert np.isfinite(clf.objective_) and clf.score(X, y) == 1.0
    assert clf.history_[-1]["objective"] >= clf.history_[-1]["dual_bound"]


def test_master_auto_picks_fast_where_a_smoothed_risk_exists():
    from maxmargin import StructBoostRanker

    X, y = small_digits(60, 2)
    assert StructBoostClassifier(max_iter=3).fit(X, y).master_ == "fast"
    assert StructBoostRanker(max_iter=3).fit(X, y).master_ == "fast"  # Huber-smoothed
    assert StructBoostRanker(max_iter=3, master="exact").fit(X, y).master_ == "exact"
    assert StructBoostRanker(max_iter=3, formulation="m-slack").fit(X, y).master_ == "fast"
    est = StructBoost(task=MultiClassTask(), master="exact", max_iter=3).fit(X, y)
    assert est.master_ == "exact" and est.formulation_ == "n-slack"
    with pytest.raises(ValueError, match="master"):
        StructBoostClassifier(master="quick").fit(X, y)
