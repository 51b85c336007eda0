"""The compiled projected L-BFGS steps (``solvers/_smoothed_kernels.py``) take the same
steps as the Python steps of :class:`SmoothedProblem` on label-coding tasks.

Both paths run the same operations in the same precision; they differ only in the order
of floating-point sums.  From one common state (L-BFGS memory, working set, bound
weights), one step of each is compared:

* the direction comes from float64 dot products over the n working-set coordinates (each
  within ``n u64`` relative of the other path's), so the step's weights agree to far
  below ``rtol = 1e-9`` (that is 1e5 times ``n u64`` for n <= 100);
* the new slot scores ``F + H' dW`` are float32 sums of at most ``n_h`` products
  ``phi * dw`` with ``|phi| <= 1`` (stumps), so they agree to
  ``gamma = 2 n_h u32 / (1 - n_h u32) * ||dw||_1`` (``u32 = 2^-24``, two orders of summation);
* the smoothed objective ``1'w + (C/m) sum_i LSE_i`` has LSE 1-Lipschitz in the margins,
  which move by at most ``2 |Delta G|`` with ``|Delta G| <= ||Gamma||_inf |Delta F|``, so
  it agrees to ``2 C ||Gamma||_inf gamma`` plus float64 summation, ``4 n u64 |f|``.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from sklearn.datasets import load_digits

from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.smoothed_problem import SmoothedProblem
from maxmargin.tasks import BinaryTask, MultiClassTask
from maxmargin.tasks.hierarchy import HierarchyTask
from maxmargin.weak import DecisionStump

U32 = 2.0**-24
U64 = 2.0**-53
TAXONOMY = {"r": {"a": [0, 1], "b": [2, 3]}}


def problem(task, n_stumps=12, C=40.0, seed=0, working_set=None):
    X, y = load_digits(return_X_y=True)
    keep = y < 4
    X, y = X[keep][:160, ::2], y[keep][:160]
    if isinstance(task, BinaryTask):
        y = np.where(y < 2, -1, 1)
    task = task.bind(X, y)
    weak = DecisionStump()
    prep = weak.prepare(X)
    store = ColumnStore(weak.hypotheses_class, X.shape[1], X.shape[0], task.n_slots)
    rng = np.random.default_rng(seed)
    sm = SmoothedProblem(task, store, C, working_set=working_set, tol=0.0)
    sm.compiled = False
    for _ in range(n_stumps):
        cand, _ = weak.best(prep, rng.normal(size=(len(y), task.n_slots)))
        h = cand.take([0])
        sm.add_columns(store.add(h, h.evaluate(X), [np.arange(task.n_slots)]))
    sm.set_weights(rng.random(store.n_columns) * (rng.random(store.n_columns) < 0.6))
    return sm


@pytest.mark.parametrize(
    "task, working_set",
    [(MultiClassTask(), None), (MultiClassTask(), 5), (HierarchyTask(TAXONOMY), None),
     (BinaryTask(), 4)],
)  # fmt: skip
def test_compiled_step_equals_python_step(task, working_set):
    sm = problem(task, working_set=working_set)
    assert not sm.compiled
    sm.max_steps = 1
    checked = 0
    for _ in range(8):  # common states along the Python path, with growing memory
        sc = copy.deepcopy(sm)
        sc.compiled = True
        assert sc._coded()
        w0 = sm.w.copy()
        k_py, k_c = sm.solve(), sc.solve()
        assert k_py == k_c
        if k_py == 0:
            break
        checked += 1
        n = len(sm.ws)
        n_h = len(np.unique(sm.store.col_hyp[sm.ws]))
        gamma_inf = np.abs(sm.task.gamma_).sum(axis=1).max()
        gam = 2 * n_h * U32 / (1 - n_h * U32) * np.abs(sm.w - w0).sum()
        np.testing.assert_allclose(sc.w, sm.w, rtol=1e-9, atol=1e-9 * np.abs(sm.w).max())
        np.testing.assert_allclose(sc.F, sm.F, rtol=0, atol=gam + 4 * n * U64 * np.abs(sm.F).max())
        f_tol = 2 * sm.C * gamma_inf * gam + 4 * n * U64 * abs(sm.smooth_objective)
        assert abs(sc.smooth_objective - sm.smooth_objective) <= f_tol
        assert abs(sc.objective - sm.objective) <= f_tol + sm.C * 2 * gamma_inf * gam
        assert len(sc._pairs) == len(sm._pairs)
    assert checked >= 3


def test_compiled_path_is_not_used_for_sparse_slots():
    sm = problem(MultiClassTask(sharing="per_class"))
    sm.compiled = True
    # every classifier in every slot here (the helper adds all slots): dense products
    assert sm._coded()
    sm.store.col_slot = sm.store.col_slot.copy()
    assert SmoothedProblem._coded(sm) == (not sm.store._sparse_slots())
