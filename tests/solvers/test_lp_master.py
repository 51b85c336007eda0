"""The incremental HiGHS master equals scipy's linprog on the same LP, with valid duals."""

import numpy as np
import pytest
from scipy.optimize import linprog

from maxmargin.solvers.lp_master import LPMaster


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_slacks", [1, 4])
def test_incremental_master_matches_linprog(seed, n_slacks):
    rng = np.random.default_rng(seed)
    slack_costs = rng.uniform(1, 5, n_slacks)
    master = LPMaster(slack_costs)
    all_rows, all_slack, all_rhs = np.zeros((0, 0)), [], []
    for _step in range(4):  # alternate new rows and new columns, as column generation does
        r = rng.integers(1, 4)
        coef = rng.normal(size=(r, master.n_columns))
        slack = rng.integers(0, n_slacks, r)
        rhs = rng.uniform(0, 2, r)
        master.add_rows(slack, rhs, coef)
        all_rows = np.vstack([all_rows, coef])
        all_slack += list(slack)
        all_rhs += list(rhs)
        k = rng.integers(1, 4)
        new = rng.normal(size=(master.n_rows, k))
        new[rng.random(new.shape) < 0.3] = 0.0
        master.add_columns(new)
        all_rows = np.hstack([all_rows, new])
        sol = master.solve()
        # written-out LP: variables [xi, w]
        A = np.hstack([np.eye(n_slacks)[all_slack], all_rows])
        c = np.concatenate([slack_costs, np.ones(master.n_columns)])
        ref = linprog(c, A_ub=-A, b_ub=-np.array(all_rhs), bounds=(0, None), method="highs")
        assert sol.objective == pytest.approx(ref.fun, rel=1e-9, abs=1e-9)
        # strong duality with the row duals: b.lambda = objective, A'lambda <= c
        lam = sol.row_dual
        assert np.dot(all_rhs, lam) == pytest.approx(ref.fun, rel=1e-7, abs=1e-9)
        assert np.all(A.T @ lam <= c + 1e-7)


def test_delete_rows_keeps_optimum_when_inactive():
    master = LPMaster([2.0])
    master.add_rows([0, 0], [1.0, 0.1], np.zeros((2, 0)))
    master.add_columns(np.array([[1.0], [1.0]]))
    sol = master.solve()
    inactive = np.flatnonzero(sol.row_dual == 0)
    master.delete_rows(inactive)
    assert master.solve().objective == pytest.approx(sol.objective)


def test_highs_banner_does_not_reach_stdout():
    """highspy >= 1.16 prints a banner on the first Highs(); our factory swallows it, so
    ``maxmargin ... --json`` stays one JSON document (checked in a fresh process)."""
    import subprocess
    import sys

    code = "from maxmargin.solvers._highs import new_highs; new_highs(); new_highs(); print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "ok\n"
