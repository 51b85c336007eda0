"""StructBoost's 1-slack restricted master: Kelley's cutting planes on the 1-slack LP
([Shen2014 Alg. 2, eq. 9]).

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014 [Shen14].
"""

from __future__ import annotations

import time

import numpy as np

from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.cutting_plane import STALL_ROUNDS, Plane, kelley_loop
from maxmargin.solvers.lp_master import LPMaster, LPSolution, NSlackLP
from maxmargin.solvers.restricted_master import POLISH_TOL, RestrictedMaster
from maxmargin.solvers.working_set import WorkingSet
from maxmargin.tasks.base import Cut

__all__ = ["OneSlackMaster"]

STAB = 0.5  # weight of the stability centre in the in-out query point
#: a truncated cutting-plane loop (max_cp_rounds) still goes on while the master's
#: relative gap exceeds this, so weak learners are priced from reasonable duals
TRUNCATE_GAP = 0.1


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
        """[Shen2014 Alg. 2] for fixed columns, from the current working set: the shared
        :func:`~maxmargin.solvers.cutting_plane.kelley_loop` on the LP master.

        Returns the best point seen (lowest true objective) with the LP's duals.  Stops
        when the LP point passes the test of [Shen2014 Alg. 2 line 10] (no plane violated
        by more than ``eps_cp``), or when the best point's true objective is within
        ``C * eps_cp`` of the LP value (a lower bound for the current columns) -- the
        same accuracy certificate, reached without waiting for the LP point itself to
        settle; in-out stabilised queries and the stall guard are the loop's options.
        """
        problem = _LPPlanes(self, limit, deadline)
        best = None
        if self._start is not None:  # a point handed over by seed()
            obj, w, risk, F = self._start
            best = Plane(b=risk, primal=obj, state=(w, F), payload=risk)
            self._start = None
        sol, best, n_cp, reason = kelley_loop(
            problem,
            sol,
            best=best,
            stabilize=STAB if self.stabilize else None,
            stall_rounds=STALL_ROUNDS,
        )
        # certified: the best point is within C eps_cp of the LP value, or no plane was
        # violated at the LP point ([Shen2014 Alg. 2 line 10])
        self._loop_certified = reason == "converged"
        (best_w, _), best_risk = best.state, best.payload
        return LPSolution(best_w, sol.xi, sol.row_dual, sol.objective), best_risk, n_cp


class _LPPlanes:
    """:class:`~maxmargin.solvers.cutting_plane.PlaneProblem` over the 1-slack LP of
    :class:`OneSlackMaster`: points are ``(w, F)``, ``F`` the slot scores of ``w``."""

    def __init__(self, owner: OneSlackMaster, limit: int | None, deadline: float | None):
        self.o, self.limit, self.deadline = owner, limit, deadline
        self._at = (None, None)  # (sol, its point): the scores are computed once per solve

    def point(self, sol):
        if self._at[0] is not sol:
            self._at = (sol, (sol.w, self.o.store.scores(self.o._pad(sol.w))))
        return self._at[1]

    def mix(self, centre, sol, t):
        (wb, Fb), (w, F) = centre, self.point(sol)
        return t * wb + (1.0 - t) * w, t * Fb + (1.0 - t) * F

    def query(self, point) -> Plane:
        w, F = point
        risk, cut = self.o._oracle(F)
        return Plane(
            b=risk,
            primal=float(w.sum() + self.o.C * risk),
            state=point,
            payload=risk,
            extra={"cut": cut, "F": F},
        )

    def cuts_off(self, plane, sol) -> bool:
        o = self.o
        if plane.state is self.point(sol):  # found at the LP point: its value there is its risk
            return plane.b > sol.xi[0] + o.eps_cp
        return o.task.cut_value(self.point(sol)[1], plane.extra["cut"]) > sol.xi[0] + o.eps_cp

    def stop(self, rnd, best, sol):
        o = self.o
        if best.primal - sol.objective <= o.C * o.eps_cp:
            return "converged"
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return "time"
        if (
            self.limit is not None
            and rnd >= self.limit
            and best.primal - sol.objective <= o.truncate_gap * abs(best.primal)
        ):
            return "truncated"
        return None

    def add(self, plane, sol) -> bool:
        if not self.cuts_off(plane, sol):
            return False
        return self.o._add_cut(plane.extra["cut"])

    def solve(self):
        return self.o._solve()

    def unchanged(self, prev, sol) -> bool:
        same = sol.objective <= prev.objective + 1e-12 * max(1.0, abs(prev.objective))
        return same and np.array_equal(sol.w, prev.w)

    def record(self, rnd, plane, t_oracle, t_master, sol) -> bool:
        return False
