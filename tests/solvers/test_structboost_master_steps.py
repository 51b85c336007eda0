"""Pieces of the fast master's steps (issue 28): the entering columns' gains and the
line search's backtracking rule, each against an independent computation."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.smoothed_problem import SmoothedProblem
from maxmargin.tasks import MultiClassTask
from maxmargin.tasks.hierarchy import HierarchyTask
from maxmargin.weak import DecisionStump

U64 = 2.0**-53


TAXONOMY = {"r": {"a": [0, 1], "b": [2, 3]}}


@pytest.mark.parametrize("task", [MultiClassTask(), HierarchyTask(TAXONOMY)])
def test_entering_columns_get_their_gain_from_the_current_duals(task):
    """``add_columns`` prices the new columns by one product over their classifiers'
    slots; each gain must be ``sum_z A[z, s] phi_h(z)``, written out here as a loop."""
    X, y = load_digits(return_X_y=True)
    keep = y < 4
    X, y = X[keep][:200], y[keep][:200]
    task = task.bind(X, y)
    weak = DecisionStump()
    prep = weak.prepare(X)
    store = ColumnStore(weak.hypotheses_class, X.shape[1], X.shape[0], task.n_slots)
    sm = SmoothedProblem(task, store, 30.0)
    rng = np.random.default_rng(0)
    for _ in range(6):
        cand, _ = weak.best(prep, rng.normal(size=(len(y), task.n_slots)))
        hyps = cand.take([0, 1])
        # two classifiers, different slot sets (one of them possibly a stored one)
        slots = [np.arange(task.n_slots), rng.permutation(task.n_slots)[:2]]
        cols = store.add(hyps, hyps.evaluate(X), slots)
        sm.add_columns(cols)
        for c in cols:
            h, s = store.col_hyp[c], store.col_slot[c]
            expect = sum(sm.A[z, s] * store.H[h, z] for z in range(store.n_z))
            scale = np.abs(sm.A[:, s]).sum()
            assert abs(sm.gains[c] - expect) <= 4 * store.n_z * U64 * scale
        sm.solve()
