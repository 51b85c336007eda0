"""The LP master problem of StructBoost, solved incrementally with HiGHS.

Both StructBoost primals (m-slack eq. 3 and 1-slack eq. 9) restricted to the current
columns (weak structured learners) and rows (cutting planes) have the form

    min  sum_j w_j + sum_k cost_k xi_k
    s.t. sum_j a_rj w_j + xi_slack(r) >= b_r    for every row r,     w >= 0, xi >= 0,

with one slack of cost C (1-slack) or m slacks of cost C/m (m-slack).  Rows and columns
are appended to a live ``highspy.Highs`` model, so each solve starts from the previous
basis: dual simplex after new rows, primal simplex after new columns.  The row duals are
the multipliers lambda of Alg. 2 line 11, from which mu is formed.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np

__all__ = ["LPMaster", "LPSolution"]

_INF = highspy.kHighsInf


@dataclass(frozen=True)
class LPSolution:
    w: np.ndarray  # column weights (n_columns,)
    xi: np.ndarray  # slack values (n_slacks,)
    row_dual: np.ndarray  # lambda >= 0 per row
    objective: float


class LPMaster:
    """Incremental LP with weight columns (cost 1) and fixed slack columns."""

    def __init__(self, slack_costs, tolerance: float = 1e-9) -> None:
        slack_costs = np.asarray(slack_costs, dtype=np.float64)
        self.n_slacks = len(slack_costs)
        self.n_columns = 0
        self.n_rows = 0
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("primal_feasibility_tolerance", tolerance)
        h.setOptionValue("dual_feasibility_tolerance", tolerance)
        h.setOptionValue("threads", 1)
        # warm starts: keep the simplex basis between solves (presolve would discard it)
        h.setOptionValue("presolve", "off")
        h.setOptionValue("solver", "simplex")
        h.addVars(self.n_slacks, np.zeros(self.n_slacks), np.full(self.n_slacks, _INF))
        h.changeColsCost(self.n_slacks, np.arange(self.n_slacks, dtype=np.int32), slack_costs)
        self._h = h

    def add_rows(self, slack: np.ndarray, rhs: np.ndarray, coef: np.ndarray) -> None:
        """Append rows ``coef[r] . w + xi[slack[r]] >= rhs[r]``; coef is (r, n_columns)."""
        slack = np.asarray(slack, dtype=np.int64)
        rhs = np.asarray(rhs, dtype=np.float64)
        r = len(rhs)
        if r == 0:
            return
        coef = np.asarray(coef, dtype=np.float64).reshape(r, self.n_columns)
        # CSR by hand: each row's non-zero weight entries, then its slack entry
        rows_idx, cols_idx = np.nonzero(coef)
        nnz = np.bincount(rows_idx, minlength=r)
        starts = np.zeros(r, dtype=np.int64)
        starts[1:] = np.cumsum(nnz + 1)[:-1]
        first = np.zeros(r, dtype=np.int64)
        first[1:] = np.cumsum(nnz)[:-1]
        indices = np.empty(int(nnz.sum()) + r, dtype=np.int32)
        values = np.empty(len(indices))
        pos = starts[rows_idx] + (np.arange(len(rows_idx)) - first[rows_idx])
        indices[pos] = self.n_slacks + cols_idx
        values[pos] = coef[rows_idx, cols_idx]
        indices[starts + nnz] = slack
        values[starts + nnz] = 1.0
        self._h.addRows(
            r,
            rhs,
            np.full(r, _INF),
            len(indices),
            starts.astype(np.int32),
            indices.astype(np.int32),
            values,
        )
        self.n_rows += r

    def add_columns(self, coef: np.ndarray) -> None:
        """Append weight columns (cost 1, w >= 0); coef is (n_rows, k)."""
        coef = np.asarray(coef, dtype=np.float64).reshape(self.n_rows, -1)
        k = coef.shape[1]
        if k == 0:
            return
        cT = coef.T
        mask = cT != 0.0
        nnz = mask.sum(axis=1)
        starts = np.zeros(k, dtype=np.int32)
        starts[1:] = np.cumsum(nnz)[:-1]
        _, rows_idx = np.nonzero(mask)
        self._h.addCols(
            k,
            np.ones(k),
            np.zeros(k),
            np.full(k, _INF),
            int(nnz.sum()),
            starts,
            rows_idx.astype(np.int32),
            cT[mask],
        )
        self.n_columns += k

    def delete_rows(self, rows: np.ndarray) -> None:
        """Drop rows (inactive cutting planes); remaining rows keep their order."""
        rows = np.asarray(rows, dtype=np.int32)
        if len(rows):
            self._h.deleteRows(len(rows), rows)
            self.n_rows -= len(rows)

    def solve(self) -> LPSolution:
        h = self._h
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            msg = h.modelStatusToString(status)
            raise RuntimeError(f"LP master not solved to optimality: {msg}")
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        duals = np.maximum(0.0, np.asarray(sol.row_dual))
        return LPSolution(
            w=np.maximum(0.0, x[self.n_slacks :]),
            xi=np.maximum(0.0, x[: self.n_slacks]),
            row_dual=duals,
            objective=float(h.getInfo().objective_function_value),
        )
