"""The smoothed master's Newton step length (``SmoothedProblem.line_search = "newton"``,
the default): the first line-search trial along the L-BFGS direction ``d`` is
``t = -g'd / d'Hd`` rounded to a power of two (at most 1), ``d'Hd`` from the log-sum-exp's
Hessian ``beta (diag p - p p')`` per example.

Checked against independent answers:

* the curvature against a central second difference of the smoothed objective along
  ``d`` (the objective evaluated by the task's own ``smoothed_value`` on float64 scores);
* the smoothed optimum over fixed columns, reached with and without the Newton length,
  against the restricted m-slack LP solved by scipy's HiGHS: ``P(w) <= P_beta(w)`` and
  ``LP <= P_beta* <= LP + C log(K) / beta`` (the smoothing bound), and the two line
  searches reach the same ``P_beta*`` (a convex problem's optimal value);
* after the compiled Newton steps, the slot scores the kernel carries equal the float64
  scores of its weights, ``H' w``, to the float32 bound of the products (a trial that
  reuses ``t H'd`` must move the scores exactly as the weights moved).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy.optimize import linprog

from data_makers import U32
from data_makers import smoothed_problem as problem
from maxmargin.tasks import MultiClassTask
from maxmargin.tasks.hierarchy import HierarchyTask

TAXONOMY = {"r": {"a": [0, 1], "b": [2, 3]}}


def restricted_lp(sm) -> float:
    """min 1'w + (C/m) 1'xi s.t. w.dPsi_i(y) + xi_i >= Delta(y_i, y), w, xi >= 0 over the
    problem's stored columns, from the task's dense margins (affine in the slot scores)."""
    st, task, m = sm.store, sm.task, sm.m
    n = st.n_columns
    F0 = np.zeros((st.n_z, st.n_slots))
    base = task.dense_margins(F0)  # Delta(y_i, y)
    K = base.shape[1]
    # margin change per unit weight of each column: dense_margins is affine in F
    cols = []
    for j in range(n):
        Fj = np.outer(st.H[st.col_hyp[j]], np.eye(st.n_slots)[st.col_slot[j]])
        cols.append((task.dense_margins(Fj) - base).ravel())
    G = np.array(cols).T  # (m K, n): a_iy(w) = base_iy + G w
    rows = np.repeat(np.arange(m), K)
    slack = np.zeros((m * K, m))
    slack[np.arange(m * K), rows] = 1.0
    # base + G w - xi_i <= 0
    A_ub = np.hstack([G, -slack])
    cost = np.concatenate([np.ones(n), np.full(m, sm.C / m)])
    res = linprog(cost, A_ub=A_ub, b_ub=-base.ravel(), bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("task", [MultiClassTask(), HierarchyTask(TAXONOMY)])
def test_curvature_is_the_second_derivative_along_the_direction(task):
    sm = problem(task)
    rng = np.random.default_rng(3)
    for _ in range(4):
        d = rng.normal(size=sm.store.n_columns)
        cd = sm.store.H.T @ sm.store.weight_matrix(d)  # float64 H'd
        q = sm._curvature(cd)

        def f(s, cd=cd):
            value, _ = sm.task.smoothed_value(sm.F + s * cd, sm.beta)
            return sm.C * value

        # central difference: error <= s^2 / 12 max|f''''| + 4 eps |f| / s^2; the LSE's
        # derivatives along d scale with beta^(k-1) |u|^k, so s = 1e-3 / (beta max|u|)
        u = np.abs(sm.task.slot_scores_to_label_scores(cd)).max() * 2
        s = 1e-3 / (sm.beta * u)
        fd = (f(s) - 2 * f(0.0) + f(-s)) / s**2
        assert q > 0
        assert abs(fd - q) <= 1e-3 * q + 8 * 2.0**-53 * abs(f(0.0)) / s**2


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("C", [0.5, 40.0, 4000.0])
def test_newton_and_halving_reach_the_same_smoothed_optimum_and_the_lp(compiled, C):
    sm = problem(MultiClassTask(), C=C)
    sm.compiled = compiled
    lp = restricted_lp(sm)
    K = sm.task.n_slots
    opt = {}
    for mode in ("newton", "halving"):
        s = copy.deepcopy(sm)
        s.line_search, s.tol, s.max_steps = mode, 0.0, 5000
        s.solve()
        s.set_weights(s.w)  # scores and objective recomputed in float64
        assert s.objective <= s.smooth_objective + 1e-12 * abs(s.smooth_objective)
        assert s.objective >= lp - 1e-6 * max(1.0, lp)  # a true primal value
        # the smoothing bound: P_beta* <= P(w_LP) + C log(K) / beta = LP + C log K / beta
        assert s.smooth_objective <= lp + C * np.log(K) / s.beta + 1e-6 * max(1.0, lp)
        opt[mode] = s.smooth_objective
    assert abs(opt["newton"] - opt["halving"]) <= 1e-7 * abs(opt["halving"])


def test_compiled_newton_steps_keep_scores_and_weights_consistent():
    sm = problem(MultiClassTask(), working_set=5)
    sm.compiled = True
    sm.line_search = "newton"
    sm.max_steps = 1
    # each step adds to the float64 scores a float32 product of at most n_h outputs
    # |phi| <= 1 with the float32 step (rounded from the float64 step dw): error
    # <= ((n_h + 1) u32 / (1 - n_h u32)) |dw|_1, plus the float64 sum, u64 |F|
    n_h = sm.store.n_hyp
    bound, steps = 0.0, 0
    for _ in range(60):
        w0 = sm.w.copy()
        if sm.solve() == 0:
            break
        steps += 1
        bound += (n_h + 1) * U32 / (1 - n_h * U32) * np.abs(sm.w - w0).sum()
        bound += 2.0**-53 * np.abs(sm.F).max()
    assert steps > 10
    assert np.abs(sm.F - sm.store.scores(sm.w)).max() <= bound
