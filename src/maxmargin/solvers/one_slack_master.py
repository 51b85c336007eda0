"""StructBoost's 1-slack restricted master: Kelley's cutting planes on the 1-slack LP
([Shen2014 Alg. 2, eq. 9]).

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014 [Shen14].
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.lp_master import LPMaster, LPSolution, NSlackLP
from maxmargin.solvers.restricted_master import POLISH_TOL, RestrictedMaster
from maxmargin.solvers.working_set import WorkingSet
from maxmargin.tasks.base import Cut

__all__ = ["OneSlackMaster"]

STAB = 0.5  # weight of the stability centre in the in-out query point
#: a truncated cutting-plane loop (max_cp_rounds) still goes on while the master's
#: relative gap exceeds this, so weak learners are priced from reasonable duals
TRUNCATE_GAP = 0.1
#: rounds whose planes do not move the LP point before a cutting-plane loop gives up
STALL_ROUNDS = 5


class OneSlackMaster(RestrictedMaster):
    """[Shen2014 Alg. 2]: Kelley's cutting planes on the 1-slack LP ([Shen2014 eq. 9]), working
    set kept.

    Implementation details that are ours (docs/structboost.md): best-point certificate,
    in-out stabilised planes, pruning of planes inactive for ``prune_after`` solves,
    truncation after ``max_cp_rounds`` once the master's gap is below ``TRUNCATE_GAP``,
    and a stall guard.  ``certify`` runs the loop to ``eps_cp`` and, when the task's
    outputs can be listed, polishes with the exact m-slack LP (same optimum, Thm. 2.1).
    """

    formulation = "1-slack"

    def __init__(
        self,
        task,
        store: ColumnStore,
        C: float,
        *,
        eps_cp: float,
        rng,
        stabilize: bool = True,
        prune_after: int = 50,
        max_cp_rounds: int | None = None,
        truncate_gap: float = TRUNCATE_GAP,
    ):
        self.task, self.store, self.C = task, store, C
        self.eps_cp, self.stabilize = eps_cp, stabilize
        self.prune_after, self.max_cp_rounds = prune_after, max_cp_rounds
        self.truncate_gap = truncate_gap
        self.master = LPMaster([C])
        self.ws = WorkingSet()
        self.age = np.zeros(0, dtype=np.int64)
        self.lp: NSlackLP | None = None  # the exact polish, for listable outputs
        self.certified = False
        self._t_oracle = 0.0
        self._start = None
        self._loop_certified = False
        self._add_cut(task.initial_cut(rng))
        self.sol = self._solve()
        self.sol, self.risk, _ = self._cutting_planes(self.sol, None, None)

    @property
    def w(self) -> np.ndarray:
        return self.lp.w if self.lp is not None and self.certified else self._pad(self.sol.w)

    def weak_weights(self) -> np.ndarray:
        if self.lp is not None and self.certified:
            return self.lp.weak_weights()
        return self.task.weak_weights(self.ws.dual_pairs(self.sol.row_dual))

    def add_columns(self, cols: np.ndarray) -> None:
        st = self.store
        self.master.add_columns(
            self.ws.column_coefficients(self.task, st.H, st.col_hyp[cols], st.col_slot[cols])
        )
        self.certified = False
        self.sol = self._solve()

    def solve(self, deadline: float | None) -> dict:
        self.sol, self.risk, n_cp = self._cutting_planes(self.sol, self.max_cp_rounds, deadline)
        return {"n_cp": n_cp}

    def record(self) -> dict:
        if self.lp is not None and self.certified:
            return self.lp.record()
        return {
            "objective": float(self.sol.w.sum() + self.C * self.risk),
            "dual_bound": self._dual_bound(),
            "master_objective": float(self.sol.objective),
            "xi": float(self.risk),
            "n_planes": self.ws.n_rows,
        }

    def _dual_bound(self) -> float:
        """sum lambda_p b_p / max(1, max gain): a lower bound from the plane duals."""
        lam = self.sol.row_dual
        total = float(lam.sum())
        if total > self.C:
            lam = lam * (self.C / total)
        g = self.store.gains(self.task.weak_weights(self.ws.dual_pairs(lam)))
        gmax = float(g.max()) if len(g) else 0.0
        return float(lam @ self.master.rhs) / max(1.0, gmax)

    def _pad(self, w: np.ndarray) -> np.ndarray:
        """Weights over every stored column (those not in this LP at 0)."""
        if len(w) == self.store.n_columns:
            return w
        full = np.zeros(self.store.n_columns)
        full[: len(w)] = w
        return full

    def seed(self, w: np.ndarray) -> None:
        """Add the plane at w and make w the best point of the next loop (a good point
        from elsewhere, e.g. the smoothed master, lets Kelley's loop certify early)."""
        w = self._pad(w)[: self.master.n_columns]
        F = self.store.scores(self._pad(w))
        risk, cut = self._oracle(F)
        self._add_cut(cut)
        self.sol = self._solve()
        self.certified = False
        self._start = (float(w.sum() + self.C * risk), np.array(w, dtype=np.float64), risk, F)

    def certify(self, deadline: float | None) -> bool:
        if self.certified:
            return True
        self.sol, self.risk, _ = self._cutting_planes(self.sol, None, deadline)
        if not self._loop_certified:
            return False
        sol = self.sol
        if self.task.dense_outputs and self.store.n_columns:
            if self.lp is None:
                self.lp = NSlackLP(self.task, self.store, self.C)
            orc = self.task.loss_augmented(self.store.scores(sol.w))
            viol = np.flatnonzero(orc.hinge > 0)
            self.lp.add_rows(viol, orc.label[viol])
            self.lp.activate(np.flatnonzero(sol.w > 0))
            self.lp.warm_start(sol.w)
            tol = POLISH_TOL * max(float(self.lp._dense_losses().max()), 1.0)
            ok = self.lp.run(row_tol=tol, col_tol=POLISH_TOL, deadline=deadline, prune=False)
            self.certified = ok
            return ok
        self.certified = True
        return True

    # -- Kelley's loop -------------------------------------------------------------------
    @property
    def t_oracle(self) -> float:
        return self._t_oracle + (self.lp.t_oracle if self.lp is not None else 0.0)

    def _oracle(self, F):
        t0 = time.perf_counter()
        cut = self.task.one_slack_cut(F)
        self._t_oracle += time.perf_counter() - t0
        return cut.risk, cut

    def _add_cut(self, cut: Cut) -> bool:
        st = self.store
        rows = np.zeros(len(cut.pairs.sample), dtype=np.int64)
        # coefficients of the columns this LP holds (the store may already have more)
        coef = st.gains(self.task.weak_weights(cut.pairs))[None, : self.master.n_columns]
        self.ws.add_rows(cut.pairs, rows, 1)
        self.master.add_rows(np.zeros(1, dtype=np.int64), np.array([cut.rhs]), coef)
        return True

    def _solve(self) -> LPSolution:
        sol = self.master.solve()
        age = np.concatenate([self.age, np.zeros(self.master.n_rows - len(self.age), np.int64)])
        age = np.where(sol.row_dual > 0, 0, age + 1)
        stale = np.flatnonzero(age > self.prune_after)
        if self.prune_after and len(stale):
            # inactive planes only: the optimum of the restricted LP is unchanged
            self.master.delete_rows(stale)
            self.ws.delete_rows(stale)
            keep = np.ones(len(age), dtype=bool)
            keep[stale] = False
            age = age[keep]
            sol = LPSolution(sol.w, sol.xi, sol.row_dual[keep], sol.objective)
        self.age = age
        return sol

    def _cutting_planes(self, sol: LPSolution, limit: int | None, deadline: float | None):
        """[Shen2014 Alg. 2] for fixed columns, from the current working set.

        Returns the best point seen (lowest true objective) with the LP's duals.  Stops
        when the LP point passes the test of [Shen2014 Alg. 2 line 10], or when the best point's
        true objective is within ``C * eps_cp`` of the LP value (a lower bound for the current
        columns) -- the same accuracy certificate, reached without waiting for the LP
        point itself to settle.  Each round also queries the oracle at the mid-point
        between the best point and the LP point (in-out stabilisation of Kelley's method)
        and keeps that plane when it cuts off the LP point.  Both only add valid planes.
        """
        C, eps_cp = self.C, self.eps_cp
        n_cp = 0
        best_obj, best_w, best_risk, best_F = np.inf, None, None, None
        if self._start is not None:  # a point handed over by seed()
            best_obj, best_w, best_risk, best_F = self._start
            self._start = None
        stalled = 0  # rounds in a row whose new planes left the LP point unchanged
        while True:
            F = self.store.scores(self._pad(sol.w))
            risk, found = self._oracle(F)
            obj = float(sol.w.sum() + C * risk)
            if obj < best_obj:
                best_obj, best_w, best_risk, best_F = obj, sol.w, risk, F
            query = None
            if self.stabilize and best_F is not F:
                Fq = STAB * best_F + (1.0 - STAB) * F
                risk_q, query = self._oracle(Fq)
                wq = STAB * best_w + (1.0 - STAB) * sol.w
                obj_q = float(wq.sum() + C * risk_q)
                if obj_q < best_obj:
                    best_obj, best_w, best_risk, best_F = obj_q, wq, risk_q, Fq
            done = best_obj - sol.objective <= C * eps_cp
            out_of_time = deadline is not None and time.perf_counter() > deadline
            added = False
            truncate = (
                limit is not None
                and n_cp >= limit
                and best_obj - sol.objective <= self.truncate_gap * abs(best_obj)
            )
            stuck = stalled >= STALL_ROUNDS
            if not done and not out_of_time and not truncate and not stuck:
                if query is not None and self.task.cut_value(F, query) > sol.xi[0] + eps_cp:
                    added = self._add_cut(query)
                if found.risk > sol.xi[0] + eps_cp:
                    added = self._add_cut(found) or added
            if not added:
                # nothing added: certified, or the paper's test ([Shen2014 Alg. 2 l. 10]) held
                self._loop_certified = done or not (out_of_time or truncate or stuck)
                if stuck:
                    warnings.warn(
                        f"cutting planes stalled: {STALL_ROUNDS} rounds of violated planes "
                        "left the LP point unchanged (numerical tolerance, or a task whose "
                        "planes disagree with its risk); stopping this loop",
                        ConvergenceWarning,
                        stacklevel=5,
                    )
                return LPSolution(best_w, sol.xi, sol.row_dual, sol.objective), best_risk, n_cp
            prev = sol
            sol = self._solve()
            same = sol.objective <= prev.objective + 1e-12 * max(1.0, abs(prev.objective))
            stalled = stalled + 1 if same and np.array_equal(sol.w, prev.w) else 0
            n_cp += 1
