"""StructBoost training: column generation (Alg. 1) around cutting planes (Alg. 2).

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014.

Outer loop (column generation).  The LP duals give mu_(i, y); the task turns mu into
signed sample weights and the weak learner returns the classifier of largest gain
``g(psi) = sum_(i, y) mu_(i, y) dpsi_i(y)``.  In the restricted dual (eq. 10b) every
column must satisfy ``g(psi) <= 1`` (its cost in the primal objective ``1'w``); a column
with ``g > 1`` has negative reduced cost ``1 - g`` and improves the master.  Hence the
stopping test is

    max_psi g(psi) <= 1 + eps_cg,

i.e. no weak learner violates the dual constraint by more than eps_cg.  (The printed
eq. (8), ``<= 1 - eps_cg``, cannot be met once the best weak learner is already in the
master, where its gain is exactly 1 at optimality; see docs/structboost.md.)

Inner loop (cutting planes).  With the columns fixed, the loss-augmented oracle (eq. 12)
finds every example's most violated output; for the 1-slack form (eq. 9) one plane with
c_i = [hinge_i > 0] is added until ``mean(hinge) <= xi + eps_cp`` (Alg. 2 line 10); for
the m-slack form (eq. 3) every example with ``hinge_i > xi_i + eps_cp`` adds its own row.
The working set is kept across boosting iterations (Sec. 2.2).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from maxmargin.solvers.lp_master import LPMaster, LPSolution
from maxmargin.solvers.working_set import WorkingSet
from maxmargin.tasks.base import Cut, DualPairs, StructuredTask
from maxmargin.weak.base import Hypotheses, WeakLearner

__all__ = ["ColumnGenerationResult", "fit_structboost"]

FORMULATIONS = ("1-slack", "m-slack")
STAB = 0.5  # weight of the stability centre in the in-out query point
#: a truncated cutting-plane loop (max_cp_rounds) still goes on while the master's
#: relative gap exceeds this, so weak learners are priced from reasonable duals
TRUNCATE_GAP = 0.1
#: rounds whose planes do not move the LP point before a cutting-plane loop gives up
STALL_ROUNDS = 5


@dataclass
class ColumnGenerationResult:
    hypotheses: Hypotheses  # every weak classifier that entered the master
    column_hyp: np.ndarray  # column -> index into hypotheses
    column_slot: np.ndarray  # column -> slot
    w: np.ndarray  # column weights
    objective: float  # primal objective ||w||_1 + C * mean hinge at the final w
    history: list[dict] = field(default_factory=list)
    w_path: list[np.ndarray] = field(default_factory=list)  # w after each iteration
    converged: bool = False
    stop_reason: str = ""

    def slot_weights(self) -> np.ndarray:
        """Weights as a (n_hypotheses, n_slots) matrix: F(z) = phi(z) @ W."""
        n_slots = int(self.column_slot.max()) + 1 if len(self.column_slot) else 1
        W = np.zeros((len(self.hypotheses), n_slots))
        np.add.at(W, (self.column_hyp, self.column_slot), self.w)
        return W


class _Ensemble:
    """Training-time cache of weak-classifier outputs on the task's weak inputs."""

    def __init__(self, hyp_class, n_features: int, n_z: int, n_slots: int) -> None:
        self.hyps = hyp_class.empty(n_features)
        self.H = np.zeros((0, n_z))
        self.col_hyp = np.zeros(0, dtype=np.int64)
        self.col_slot = np.zeros(0, dtype=np.int64)
        self.n_slots = n_slots

    def add(self, new_hyps: Hypotheses, outputs: np.ndarray, slots_per_hyp) -> tuple:
        first = len(self.hyps)
        self.hyps = self.hyps.concat(new_hyps)
        self.H = np.vstack([self.H, outputs])
        hyp_idx = np.concatenate([np.full(len(s), first + k) for k, s in enumerate(slots_per_hyp)])
        slots = np.concatenate(slots_per_hyp).astype(np.int64)
        self.col_hyp = np.concatenate([self.col_hyp, hyp_idx])
        self.col_slot = np.concatenate([self.col_slot, slots])
        return hyp_idx, slots

    def slot_scores(self, w: np.ndarray) -> np.ndarray:
        W = np.zeros((len(self.hyps), self.n_slots))
        np.add.at(W, (self.col_hyp, self.col_slot), w)
        return self.H.T @ W


def _row_coefficients(task, ens: _Ensemble, pairs: DualPairs, row_of_pair, n_rows) -> np.ndarray:
    """Coefficients (n_rows, n_columns) of the existing columns in new rows."""
    n_cols = len(ens.col_hyp)
    if n_cols == 0:
        return np.zeros((n_rows, 0))
    if n_rows == len(row_of_pair):  # one pair per row (m-slack): direct joint evaluation
        d = task.joint_difference(ens.H[ens.col_hyp], ens.col_slot, pairs) * pairs.value
        out = np.zeros((n_rows, n_cols))
        out[row_of_pair] = d.T
        return out
    # a plane summing many pairs: aggregate them into signed weights A once; then the
    # coefficient of column (h, s) is sum_z phi_h(z) A[z, s] = (H @ A)[h, s]
    out = np.zeros((n_rows, n_cols))
    for r in range(n_rows):
        sel = row_of_pair == r
        A = task.weak_weights(DualPairs(pairs.sample[sel], pairs.label[sel], pairs.value[sel]))
        out[r] = (ens.H @ A)[ens.col_hyp, ens.col_slot]
    return out


def fit_structboost(*args, **kwargs) -> ColumnGenerationResult:
    """Run Alg. 1 with Alg. 2 (or its m-slack counterpart) on a bound task.

    See :func:`_fit_structboost` for the parameters.  BLAS is limited to one thread: the
    products here are small and many, and a multi-threaded BLAS spinning next to numba's
    thread pool made them tens of times slower on two cores.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_structboost(*args, **kwargs)


def _fit_structboost(
    task: StructuredTask,
    weak_learner: WeakLearner,
    *,
    C: float,
    formulation: str = "1-slack",
    eps_cp: float = 0.01,
    eps_cg: float = 1e-6,
    max_iter: int = 200,
    max_time: float | None = None,
    rng: np.random.Generator | None = None,
    callback=None,
    stabilize: bool = True,
    prune_after: int = 50,
    max_cp_rounds: int | None = None,
) -> ColumnGenerationResult:
    """Run Alg. 1 with Alg. 2 (or its m-slack counterpart) on a bound task.

    ``prune_after``: rows whose dual stayed zero for that many consecutive solves are
    deleted from the master (0 disables); ``stabilize``: in-out stabilised planes.
    """
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    if formulation not in task.formulations:
        raise ValueError(
            f"{type(task).__name__} supports formulation {task.formulations}, not {formulation!r}"
        )
    rng = np.random.default_rng() if rng is None else rng
    t_start = time.perf_counter()
    m = task.n_samples
    Z = task.weak_inputs()
    prepared = weak_learner.prepare(Z)
    ens = _Ensemble(weak_learner.hypotheses_class, Z.shape[1], Z.shape[0], task.n_slots)
    one_slack = formulation == "1-slack"
    master = LPMaster([C] if one_slack else np.full(m, C / m))
    ws = WorkingSet()

    def oracle(F):
        """Risk (mean hinge) at slot scores F and what the oracle found there: the most
        violated plane (1-slack) or every example's most violated output (m-slack)."""
        if one_slack:
            cut = task.one_slack_cut(F)
            return cut.risk, cut
        orc = task.loss_augmented(F)
        return float(orc.hinge.mean()), orc

    def add_cut(cut: Cut) -> bool:
        rows = np.zeros(len(cut.pairs.sample), dtype=np.int64)
        coef = _row_coefficients(task, ens, cut.pairs, rows, 1)
        ws.add_rows(cut.pairs, rows, 1)
        master.add_rows(np.zeros(1, dtype=np.int64), np.array([cut.rhs]), coef)
        return True

    def add_violated(found, xi: np.ndarray) -> bool:
        """Add the rows that ``found`` violates by more than eps_cp; False if none."""
        if one_slack:
            return found.risk > xi[0] + eps_cp and add_cut(found)
        c = np.flatnonzero(found.hinge > xi + eps_cp)
        if len(c) == 0:
            return False
        pairs = DualPairs(c, found.label[c], np.ones(len(c)))
        rows = np.arange(len(c))
        coef = _row_coefficients(task, ens, pairs, rows, len(c))
        ws.add_rows(pairs, rows)
        master.add_rows(c, found.loss[c], coef)
        return True

    age = np.zeros(0, dtype=np.int64)  # consecutive solves each row was inactive

    def solve() -> LPSolution:
        nonlocal age
        sol = master.solve()
        age = np.concatenate([age, np.zeros(master.n_rows - len(age), dtype=np.int64)])
        age = np.where(sol.row_dual > 0, 0, age + 1)
        stale = np.flatnonzero(age > prune_after)
        if prune_after and len(stale):
            # inactive planes only: the optimum of the restricted LP is unchanged
            master.delete_rows(stale)
            ws.delete_rows(stale)
            keep = np.ones(len(age), dtype=bool)
            keep[stale] = False
            age = age[keep]
            sol = LPSolution(sol.w, sol.xi, sol.row_dual[keep], sol.objective)
        return sol

    def cutting_planes(sol: LPSolution, limit: int | None = None, timed: bool = True):
        """Alg. 2 (or its m-slack form) for fixed columns, from the current working set.

        Returns the best point seen (lowest true objective) with the LP's duals.  Stops when
        the LP point passes the test of Alg. 2 line 10, or when the best point's true
        objective is within ``C * eps_cp`` of the LP value (a lower bound for the current
        columns) -- the same accuracy certificate, reached without waiting for the LP
        point itself to settle.  1-slack: each round also queries the oracle at the
        mid-point between the best point and the LP point (in-out stabilisation of
        Kelley's method) and keeps that plane when it cuts off the LP point.  Both only
        add valid planes; see docs/structboost.md.
        """
        nonlocal certified
        t_orc = t_mst = 0.0
        n_cp = 0
        best_obj, best_w, best_risk, best_F = np.inf, None, None, None
        stalled = 0  # rounds in a row whose new planes left the LP point unchanged
        while True:
            t0 = time.perf_counter()
            F = ens.slot_scores(sol.w)
            risk, found = oracle(F)
            obj = float(sol.w.sum() + C * risk)
            if obj < best_obj:
                best_obj, best_w, best_risk, best_F = obj, sol.w, risk, F
            query = None
            if one_slack and stabilize and best_F is not F:
                Fq = STAB * best_F + (1.0 - STAB) * F
                risk_q, query = oracle(Fq)
                wq = STAB * best_w + (1.0 - STAB) * sol.w
                obj_q = float(wq.sum() + C * risk_q)
                if obj_q < best_obj:
                    best_obj, best_w, best_risk, best_F = obj_q, wq, risk_q, Fq
            t_orc += time.perf_counter() - t0
            done = best_obj - sol.objective <= C * eps_cp
            out_of_time = (
                timed and max_time is not None and time.perf_counter() - t_start > max_time
            )
            t1 = time.perf_counter()
            added = False
            truncate = (
                limit is not None
                and n_cp >= limit
                and best_obj - sol.objective <= TRUNCATE_GAP * abs(best_obj)
            )
            stuck = stalled >= STALL_ROUNDS
            if not done and not out_of_time and not truncate and not stuck:
                if query is not None and task.cut_value(F, query) > sol.xi[0] + eps_cp:
                    added = add_cut(query)
                added = add_violated(found, sol.xi) or added
            if not added:
                # nothing added: either certified, or the paper's test (Alg. 2 l. 10) held
                certified = done or not (out_of_time or truncate or stuck)
                if stuck:
                    warnings.warn(
                        f"cutting planes stalled: {STALL_ROUNDS} rounds of violated planes "
                        "left the LP point unchanged (numerical tolerance, or a task whose "
                        "planes disagree with its risk); stopping this loop",
                        ConvergenceWarning,
                        stacklevel=4,
                    )
                best = LPSolution(best_w, sol.xi, sol.row_dual, sol.objective)
                return best, best_risk, n_cp, t_orc, t_mst
            prev = sol
            sol = solve()
            same = sol.objective <= prev.objective + 1e-12 * max(1.0, abs(prev.objective))
            stalled = stalled + 1 if same and np.array_equal(sol.w, prev.w) else 0
            t_mst += time.perf_counter() - t1
            n_cp += 1

    # Alg. 1 line 2: start from each example's most violated output at w = 0.
    if one_slack:
        add_cut(task.initial_cut(rng))
    else:
        add_violated(task.initial_violators(rng), np.full(master.n_slacks, -np.inf))
    certified = False  # did the last cutting-plane loop reach its tolerance?
    sol = solve()
    sol, risk, _, _, _ = cutting_planes(sol)

    history: list[dict] = []
    w_path: list[np.ndarray] = []
    converged, reason = False, "max_iter"
    for it in range(1, max_iter + 1):
        t0 = time.perf_counter()
        duals = ws.dual_pairs(sol.row_dual)
        A = task.weak_weights(duals)
        cand, gains = weak_learner.best(prepared, A)
        picks = task.select_columns(gains, 1.0 + eps_cg)
        best_gain = float(np.max(gains)) if len(gains) else 0.0
        if not picks and not certified:
            # the duals came from a truncated cutting-plane loop: finish it and re-price
            sol, risk, _, _, _ = cutting_planes(sol)
            duals = ws.dual_pairs(sol.row_dual)
            cand, gains = weak_learner.best(prepared, task.weak_weights(duals))
            picks = task.select_columns(gains, 1.0 + eps_cg)
            best_gain = float(np.max(gains)) if len(gains) else 0.0
        if not picks:
            converged, reason = True, "converged"
            t_weak = time.perf_counter() - t0
            history.append(
                _record(
                    it,
                    sol,
                    risk,
                    C,
                    ens,
                    ws,
                    best_gain,
                    t_weak,
                    0.0,
                    0.0,
                    time.perf_counter() - t_start,
                    0,
                    converged=True,
                )
            )
            w_path.append(sol.w.copy())
            if callback is not None:
                callback(history[-1])
            break
        new_hyps = cand.take(np.array([p[0] for p in picks]))
        outputs = new_hyps.evaluate(Z)
        t1 = time.perf_counter()
        hyp_idx, slots = ens.add(new_hyps, outputs, [p[1] for p in picks])
        master.add_columns(ws.column_coefficients(task, ens.H, hyp_idx, slots))
        sol = solve()
        t2 = time.perf_counter()
        sol, risk, n_cp, t_orc, t_mst = cutting_planes(sol, max_cp_rounds)
        history.append(
            _record(
                it,
                sol,
                risk,
                C,
                ens,
                ws,
                best_gain,
                t1 - t0,
                t2 - t1 + t_mst,
                t_orc,
                time.perf_counter() - t_start,
                n_cp,
            )
        )
        w_path.append(sol.w.copy())
        if callback is not None:
            callback(history[-1])
        if max_time is not None and time.perf_counter() - t_start > max_time:
            reason = "max_time"
            break

    if not certified and not converged and history:
        # polish the final model: run the last cutting-plane loop to its tolerance
        t0 = time.perf_counter()
        # not bound by max_time: a loop cut short by the clock can leave the last master far
        # from its optimum (usps, 40 s: objective 191 instead of 44), so the returned model
        # is always eps_cp-accurate for its weak learners
        sol, risk, n_cp, t_orc, t_mst = cutting_planes(sol, timed=False)
        rec = _record(
            history[-1]["iteration"],
            sol,
            risk,
            C,
            ens,
            ws,
            history[-1]["gain"],
            history[-1]["t_weak"],
            history[-1]["t_master"] + t_mst,
            history[-1]["t_oracle"] + t_orc,
            time.perf_counter() - t_start,
            history[-1]["n_cp"] + n_cp,
        )
        history[-1] = rec
        w_path[-1] = sol.w.copy()
    objective = float(sol.w.sum() + C * risk)
    return ColumnGenerationResult(
        hypotheses=ens.hyps,
        column_hyp=ens.col_hyp,
        column_slot=ens.col_slot,
        w=sol.w,
        objective=objective,
        history=history,
        w_path=w_path,
        converged=converged,
        stop_reason=reason,
    )


def _record(
    it, sol, xi, C, ens, ws, gain, t_weak, t_master, t_oracle, t_total, n_cp, converged=False
) -> dict:
    return {
        "iteration": it,
        "objective": float(sol.w.sum() + C * xi),
        "lp_objective": float(sol.objective),
        "xi": xi,
        "n_weak": int(
            np.count_nonzero(np.bincount(ens.col_hyp[sol.w > 0], minlength=len(ens.hyps)))
        ),
        "n_columns": len(ens.col_hyp),
        "n_planes": ws.n_rows,
        "n_cp": n_cp,
        "gain": gain,
        "t_weak": t_weak,
        "t_master": t_master,
        "t_oracle": t_oracle,
        "t_total": t_total,
        "converged": converged,
    }
