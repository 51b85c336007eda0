"""The LP master problem of StructBoost, solved incrementally with HiGHS.

Both StructBoost primals (m-slack [Shen2014 eq. 3] and 1-slack [Shen2014 eq. 9]) restricted to the
current columns (weak structured learners) and rows (cutting planes) have the form

    min  sum_j w_j + sum_k cost_k xi_k
    s.t. sum_j a_rj w_j + xi_slack(r) >= b_r    for every row r,     w >= 0, xi >= 0,

with one slack of cost C (1-slack) or m slacks of cost C/m (m-slack).  Rows and columns
are appended to a live ``highspy.Highs`` model, so each solve starts from the previous
basis: dual simplex after new rows, primal simplex after new columns.  The row duals are
the multipliers lambda of [Shen2014 Alg. 2 line 11], from which mu is formed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np

from maxmargin.solvers._highs import new_highs
from maxmargin.tasks.base import DualPairs

__all__ = ["LPMaster", "LPNumericalError", "LPSolution", "NSlackLP"]


class LPNumericalError(RuntimeError):
    """HiGHS could not solve a master LP (in practice: a badly scaled LP, very large C)."""


def _lp_failure(what: str, msg: str, C: float) -> LPNumericalError:
    return LPNumericalError(
        f"{what} not solved to optimality: {msg}.  With C = {C:g} the slack costs are "
        "so far from the unit weight costs that double-precision simplex fails; use a "
        "smaller C (above about 1e9 the hinge is zero on separable data anyway) or "
        "master='fast', which keeps a certified smoothed solution"
    )


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
        self.C = float(slack_costs.sum())
        self.n_slacks = len(slack_costs)
        self.n_columns = 0
        self.n_rows = 0
        self.rhs = np.zeros(0)  # right-hand side of every row
        h = new_highs()
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
        self.rhs = np.concatenate([self.rhs, rhs])

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
            self.rhs = np.delete(self.rhs, rows)

    def solve(self) -> LPSolution:
        h = self._h
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise _lp_failure("1-slack LP master", h.modelStatusToString(status), self.C)
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        duals = np.maximum(0.0, np.asarray(sol.row_dual))
        return LPSolution(
            w=np.maximum(0.0, x[self.n_slacks :]),
            xi=np.maximum(0.0, x[: self.n_slacks]),
            row_dual=duals,
            objective=float(h.getInfo().objective_function_value),
        )


class NSlackLP:
    """StructBoost's m-slack master ([Shen2014 eq. 3]) over stored columns, solved exactly by HiGHS.

    The LP holds only *active* rows -- pairs ``(i, y)``: ``w.dPsi_i(y) + xi_i >=
    Delta(y_i, y)`` -- and *active* columns; :meth:`run` alternates HiGHS solves (warm-
    started: dual simplex after new rows, primal after new columns) with

    * row generation: every example whose hinge at the LP's ``w`` exceeds its slack by
      more than ``row_tol`` adds its most violated output (the loss-augmented oracle);
    * column pricing: every inactive stored column whose gain under the LP duals exceeds
      ``1 + col_tol`` enters.

    When neither adds anything, ``w`` is the optimum of the m-slack LP over *all* stored
    columns and all outputs (up to the tolerances).  Columns at zero and rows with zero
    dual for ``prune_after`` solves in a row leave the LP (they are re-priced / re-found
    like any other), which keeps the LP small: most weak learners end at zero weight.
    Slack columns are created for an example when its first row arrives.

    Used as the exact master (``master="exact"``, rows to ``eps_cp`` every iteration) and
    as the final polish of the fast smoothed master (rows and columns to 1e-9).
    """

    def __init__(self, task, store, C: float, *, prune_after: int = 20) -> None:
        self.task, self.store, self.C = task, store, float(C)
        self.m = task.n_samples
        self.K = int(task.n_outputs)
        self.losses = None  # (m, K) Delta, filled on first use
        self.prune_after = int(prune_after)
        h = new_highs()
        h.setOptionValue("primal_feasibility_tolerance", 1e-9)
        h.setOptionValue("dual_feasibility_tolerance", 1e-9)
        h.setOptionValue("threads", 1)
        h.setOptionValue("presolve", "off")
        h.setOptionValue("solver", "simplex")
        self._h = h
        self.lp_col = np.zeros(0, dtype=np.int64)  # LP column -> store column j, or -(i+1)
        self.slack_of = np.full(self.m, -1, dtype=np.int64)  # example -> LP column
        self.active = np.zeros(0, dtype=bool)  # per store column
        self.col_age = np.zeros(0, dtype=np.int64)
        self.row_i = np.zeros(0, dtype=np.int64)
        self.row_y = np.zeros(0, dtype=np.int64)
        self.row_rhs = np.zeros(0)
        self.row_age = np.zeros(0, dtype=np.int64)
        self._has_row = np.zeros((self.m, self.K), dtype=bool)
        # last solution
        self.w = np.zeros(0)
        self.xi = np.zeros(self.m)
        self.row_dual = np.zeros(0)
        self.lp_objective = 0.0
        self.n_solves = 0
        self.t_oracle = 0.0  # seconds in the loss-augmented oracle
        self._rows_added = self._cols_added = False

    # -- model building ------------------------------------------------------------------
    def _dense_losses(self) -> np.ndarray:
        if self.losses is None:
            self.losses = np.asarray(self.task.dense_losses(), dtype=np.float64)
        return self.losses

    def _sync_columns(self) -> None:
        n = self.store.n_columns
        k = n - len(self.active)
        if k > 0:
            self.active = np.concatenate([self.active, np.zeros(k, dtype=bool)])
            self.col_age = np.concatenate([self.col_age, np.zeros(k, dtype=np.int64)])
            self.w = np.concatenate([self.w, np.zeros(k)])

    def _coefficients(self, cols: np.ndarray, rows_i, rows_y) -> np.ndarray:
        """dPsi coefficients of store columns ``cols`` in rows (i, y): (len(cols), r)."""
        st = self.store
        pairs = DualPairs(rows_i, rows_y, np.ones(len(rows_i)))
        return self.task.joint_difference(st.H[st.col_hyp[cols]], st.col_slot[cols], pairs)

    def add_rows(self, rows_i: np.ndarray, rows_y: np.ndarray) -> int:
        """Add rows (i, y) not yet in the LP; returns how many were added."""
        rows_i = np.asarray(rows_i, dtype=np.int64)
        rows_y = np.asarray(rows_y, dtype=np.int64)
        key = rows_i * self.K + rows_y
        key, first = np.unique(key, return_index=True)
        rows_i, rows_y = rows_i[first], rows_y[first]
        new = ~self._has_row[rows_i, rows_y]
        rows_i, rows_y = rows_i[new], rows_y[new]
        r = len(rows_i)
        if r == 0:
            return 0
        self._sync_columns()
        h = self._h
        # slack columns for examples seen for the first time
        fresh = np.unique(rows_i[self.slack_of[rows_i] < 0])
        if len(fresh):
            base = len(self.lp_col)
            h.addVars(len(fresh), np.zeros(len(fresh)), np.full(len(fresh), _INF))
            h.changeColsCost(
                len(fresh),
                np.arange(base, base + len(fresh), dtype=np.int32),
                np.full(len(fresh), self.C / self.m),
            )
            self.slack_of[fresh] = base + np.arange(len(fresh))
            self.lp_col = np.concatenate([self.lp_col, -(fresh + 1)])
        act_cols = np.flatnonzero(self.active)
        lp_of_col = self._lp_index_of_columns(act_cols)
        rhs = self._dense_losses()[rows_i, rows_y]
        if len(act_cols):
            coef = self._coefficients(act_cols, rows_i, rows_y).T  # (r, n_act)
            ri, ci = np.nonzero(coef)
            vals = coef[ri, ci]
            lp_ci = lp_of_col[ci]
        else:
            ri = np.zeros(0, dtype=np.int64)
            lp_ci = np.zeros(0, dtype=np.int64)
            vals = np.zeros(0)
        # CSR: each row's weight entries, then its slack
        ri = np.concatenate([ri, np.arange(r)])
        lp_ci = np.concatenate([lp_ci, self.slack_of[rows_i]])
        vals = np.concatenate([vals, np.ones(r)])
        order = np.argsort(ri, kind="stable")
        ri, lp_ci, vals = ri[order], lp_ci[order], vals[order]
        starts = np.searchsorted(ri, np.arange(r)).astype(np.int32)
        h.addRows(r, rhs, np.full(r, _INF), len(vals), starts, lp_ci.astype(np.int32), vals)
        self.row_i = np.concatenate([self.row_i, rows_i])
        self.row_y = np.concatenate([self.row_y, rows_y])
        self.row_rhs = np.concatenate([self.row_rhs, rhs])
        self.row_age = np.concatenate([self.row_age, np.zeros(r, dtype=np.int64)])
        self.row_dual = np.concatenate([self.row_dual, np.zeros(r)])
        self._has_row[rows_i, rows_y] = True
        self._rows_added = True
        return r

    def _lp_index_of_columns(self, cols: np.ndarray) -> np.ndarray:
        pos = np.full(len(self.active), -1, dtype=np.int64)
        is_w = self.lp_col >= 0
        pos[self.lp_col[is_w]] = np.flatnonzero(is_w)
        return pos[cols]

    def activate(self, cols: np.ndarray) -> int:
        """Bring store columns into the LP (cost 1, w >= 0); returns how many."""
        self._sync_columns()
        cols = np.asarray(cols, dtype=np.int64)
        cols = cols[~self.active[cols]]
        k = len(cols)
        if k == 0:
            return 0
        if len(self.row_i):
            coef = self._coefficients(cols, self.row_i, self.row_y)  # (k, n_rows)
        else:
            coef = np.zeros((k, 0))
        mask = coef != 0.0
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
            coef[mask],
        )
        self.lp_col = np.concatenate([self.lp_col, cols])
        self.active[cols] = True
        self.col_age[cols] = 0
        self._cols_added = True
        return k

    def _deactivate(self, cols: np.ndarray) -> None:
        if len(cols) == 0:
            return
        idx = np.sort(self._lp_index_of_columns(cols)).astype(np.int32)
        self._h.deleteCols(len(idx), idx)
        keep = np.ones(len(self.lp_col), dtype=bool)
        keep[idx] = False
        self.lp_col = self.lp_col[keep]
        self.slack_of[-(self.lp_col[self.lp_col < 0] + 1)] = np.flatnonzero(self.lp_col < 0)
        self.active[cols] = False
        self.w[cols] = 0.0

    def _delete_rows(self, rows: np.ndarray) -> None:
        if len(rows) == 0:
            return
        rows = np.sort(rows).astype(np.int32)
        self._h.deleteRows(len(rows), rows)
        keep = np.ones(len(self.row_i), dtype=bool)
        keep[rows] = False
        self._has_row[self.row_i[rows], self.row_y[rows]] = False
        for name in ("row_i", "row_y", "row_rhs", "row_age", "row_dual"):
            setattr(self, name, getattr(self, name)[keep])

    # -- solving -------------------------------------------------------------------------
    def solve(self, deadline: float | None = None) -> bool:
        """One HiGHS solve; False if the time limit stopped it (solution unchanged)."""
        h = self._h
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                return False
            # HiGHS compares its limit with the run time accumulated over every run()
            h.setOptionValue("time_limit", float(h.getRunTime() + left))
        else:
            h.setOptionValue("time_limit", _INF)
        # the basis stays primal feasible when only columns were added (primal simplex)
        # and dual feasible when only rows were (dual simplex)
        primal = self._cols_added and not self._rows_added and self.n_solves > 0
        h.setOptionValue("simplex_strategy", 4 if primal else 1)
        self._rows_added = self._cols_added = False
        h.run()
        status = h.getModelStatus()
        self.n_solves += 1
        stopped = (highspy.HighsModelStatus.kTimeLimit, highspy.HighsModelStatus.kIterationLimit)
        if status in stopped:
            return False
        if status != highspy.HighsModelStatus.kOptimal:
            raise _lp_failure("m-slack LP master", h.modelStatusToString(status), self.C)
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        self._sync_columns()
        self.w = np.zeros(len(self.active))
        is_w = self.lp_col >= 0
        self.w[self.lp_col[is_w]] = np.maximum(0.0, x[is_w])
        self.xi = np.zeros(self.m)
        has = self.slack_of >= 0
        self.xi[has] = np.maximum(0.0, x[self.slack_of[has]])
        self.row_dual = np.maximum(0.0, np.asarray(sol.row_dual))
        self.lp_objective = float(h.getInfo().objective_function_value)
        return True

    def dual_pairs(self) -> DualPairs:
        on = self.row_dual > 0
        return DualPairs(self.row_i[on], self.row_y[on], self.row_dual[on])

    def weak_weights(self) -> np.ndarray:
        return self.task.weak_weights(self.dual_pairs())

    def run(
        self,
        *,
        row_tol: float,
        col_tol: float,
        deadline: float | None = None,
        prune: bool = True,
    ) -> bool:
        """Solve to optimality over all stored columns and all outputs (see class doc).

        Returns False if the deadline stopped it (the last solution is kept)."""
        self._sync_columns()
        while True:
            if not self.solve(deadline):
                return False
            t0 = time.perf_counter()
            orc = self.task.loss_augmented(self.store.scores(self.w))
            self.t_oracle += time.perf_counter() - t0
            viol = np.flatnonzero(orc.hinge > self.xi + row_tol)
            gains = self.store.gains(self.weak_weights())
            enter = np.flatnonzero(~self.active & (gains > 1.0 + col_tol))
            added = self.add_rows(viol, orc.label[viol]) if len(viol) else 0
            added += self.activate(enter)
            if prune and self.prune_after:
                self._prune()
            if added == 0:
                return True

    def _prune(self) -> None:
        """Drop rows whose dual and active columns whose weight stayed at zero."""
        self.row_age = np.where(self.row_dual > 0, 0, self.row_age + 1)
        self.col_age = np.where(self.active & (self.w > 0), 0, self.col_age + self.active)
        stale_cols = np.flatnonzero(self.active & (self.col_age > self.prune_after))
        stale_rows = np.flatnonzero(self.row_age > self.prune_after)
        self._deactivate(stale_cols)
        self._delete_rows(stale_rows)

    def warm_start(self, w: np.ndarray) -> None:
        """Hand HiGHS a starting point (weights w, slacks = hinge at w) before its first
        solve; a live model keeps its basis instead."""
        if self.n_solves:
            return
        self._sync_columns()
        w = np.asarray(w, dtype=np.float64)
        hinge = self.task.loss_augmented(self.store.scores(w)).hinge
        x = np.empty(len(self.lp_col))
        is_w = self.lp_col >= 0
        x[is_w] = w[self.lp_col[is_w]]
        x[~is_w] = hinge[-(self.lp_col[~is_w] + 1)]
        sol = highspy.HighsSolution()
        sol.col_value = x.tolist()
        sol.value_valid = True
        self._h.setSolution(sol)

    # -- certificate ---------------------------------------------------------------------
    def record(self) -> dict:
        """History fields of the current LP solution (see :meth:`certificate`)."""
        primal, dual, xi = self.certificate()
        return {
            "objective": primal,
            "dual_bound": dual,
            "master_objective": self.lp_objective,
            "xi": xi,
            "n_planes": len(self.row_i),
        }

    def certificate(self) -> tuple[float, float, float]:
        """(primal, dual, mean hinge): P(w) from the oracle at the LP's w, and a lower bound
        from the LP's row duals made box-feasible and scaled by the largest column gain."""
        self._sync_columns()
        F = self.store.scores(self.w)
        hinge = self.task.loss_augmented(F).hinge
        primal = float(self.w.sum()) + self.C * float(hinge.mean())
        lam = self.row_dual.copy()
        per = np.bincount(self.row_i, weights=lam, minlength=self.m)
        cap = self.C / self.m
        scale = np.ones(self.m)
        over = per > cap
        scale[over] = cap / per[over]
        lam *= scale[self.row_i]
        A = self.task.weak_weights(DualPairs(self.row_i, self.row_y, lam))
        g = self.store.gains(A)
        gmax = float(g.max()) if len(g) else 0.0
        dual = float(lam @ self.row_rhs) / max(1.0, gmax)
        return primal, dual, float(hinge.mean())
