"""StructBoost training: column generation (Alg. 1) around a restricted master.

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014.

Outer loop (column generation, Alg. 1, :func:`fit_structboost`).  The master's duals give
mu_(i, y); the task turns mu into signed sample weights and the weak learner returns the
classifier of largest gain ``g(psi) = sum_(i, y) mu_(i, y) dpsi_i(y)``.  In the restricted
dual (eq. 10b) every column must satisfy ``g(psi) <= 1`` (its cost in the primal
objective ``1'w``); a column with ``g > 1`` has negative reduced cost ``1 - g`` and
improves the master.  Hence the stopping test is

    max_psi g(psi) <= 1 + eps_cg,

i.e. no weak learner violates the dual constraint by more than eps_cg.  (The printed
eq. (8), ``<= 1 - eps_cg``, cannot be met once the best weak learner is already in the
master, where its gain is exactly 1 at optimality; see docs/structboost.md.)  The test is
only applied to *exact* duals: a master whose duals are approximate (smoothed, or from a
truncated cutting-plane loop) is first solved exactly ("certified") and the weak learners
re-priced before convergence is declared.

Masters (the restricted problem over the current columns):

* ``"fast"`` -- :class:`FastMaster`: the log-sum-exp smoothed hinge solved by projected
  L-BFGS (:mod:`maxmargin.solvers.smooth_master`) every iteration, and the exact m-slack LP
  (:class:`~maxmargin.solvers.lp_master.MSlackLP`) as the final polish.  Tasks whose
  outputs can be listed (``task.dense_outputs``).
* ``"exact"``, m-slack -- :class:`MSlackMaster`: the m-slack LP (eq. 3) with row
  generation (rows violated by more than ``eps_cp``, Alg. 2's test) every iteration; the
  paper's column sequence.
* ``"exact"``, 1-slack -- :class:`OneSlackMaster`: Alg. 2, Kelley's cutting planes on the
  1-slack LP (eq. 9); the only master for tasks with a joint 1-slack oracle only
  (:class:`~maxmargin.tasks.ranking.RankingTask`).

Every master ends with the exact LP optimum over its final columns when the task's outputs
can be listed (the m-slack polish, rows and reduced costs to 1e-9), and every record in
the history carries an independently computed duality gap (primal at w from the oracle,
dual from box-feasible multipliers scaled by the largest column gain).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import ThreadpoolController

from maxmargin.inference._threads import resolve_threads
from maxmargin.solvers import smooth_master
from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.lp_master import LPMaster, LPNumericalError, LPSolution, MSlackLP
from maxmargin.solvers.parallel import ShardedOracle
from maxmargin.solvers.parallel_weak import BlockedStumpSearch, supports_blocks
from maxmargin.solvers.smooth_master import SmoothedMaster
from maxmargin.solvers.working_set import WorkingSet
from maxmargin.tasks.base import Cut, StructuredTask
from maxmargin.tasks.crf import CRFTask
from maxmargin.weak.base import Hypotheses, WeakLearner
from maxmargin.weak.hist_stump import CodedStump

__all__ = [
    "FORMULATIONS",
    "FORMULATION_ALIASES",
    "MASTERS",
    "ColumnGenerationResult",
    "FastMaster",
    "MSlackMaster",
    "OneSlackMaster",
    "fit_structboost",
]

FORMULATIONS = ("1-slack", "n-slack")
#: the StructBoost paper calls the per-example form "m-slack"
FORMULATION_ALIASES = {"m-slack": "n-slack"}
MASTERS = ("fast", "exact")
#: what ends a fit of the fast master: ``"gap"`` -- smoothing continuation until the
#: certified relative gap is at most ``gap_tol`` (no LP); ``"exact"`` -- the exact LP
#: optimum over the final columns (the m-slack polish); ``"none"`` -- nothing
CERTIFY = ("gap", "exact", "none")
#: default relative duality gap of ``certify="gap"``
GAP_TOL = 1e-3
STAB = 0.5  # weight of the stability centre in the in-out query point
#: a truncated cutting-plane loop (max_cp_rounds) still goes on while the master's
#: relative gap exceeds this, so weak learners are priced from reasonable duals
TRUNCATE_GAP = 0.1
#: rounds whose planes do not move the LP point before a cutting-plane loop gives up
STALL_ROUNDS = 5
#: row and reduced-cost tolerance of the exact polish (relative to the loss / unit cost)
POLISH_TOL = 1e-9
#: smoothed-support threshold: rows (i, y) with softmax weight above this start the polish
POLISH_ROWS = 0.05
#: before the polish the smoothing is sharpened by this factor (docs/structboost.md)
POLISH_SHARPEN = 4.0
#: relative gap at which the smoothing continuation of tasks without an exact polish stops
CONTINUATION_GAP = 1e-3
#: the continuation's optimality test on the columns' gains (projected gradient); after a
#: continuation certificate, pricing adds a weak learner only above ``1 +`` this (a column
#: the continuation accepted as optimal would otherwise be priced again forever)
CONTINUATION_GAIN_TOL = 1e-3
#: the continuation sharpens beta to at most this multiple of the master's base beta
#: (4^5); beyond it the smoothed master needs ever more steps for ever less
CONTINUATION_MAX_SHARPEN = POLISH_SHARPEN**5
#: L-BFGS steps of FastMaster.tighten (when the smoothed duals price nothing new)
TIGHTEN_STEPS = 20
#: L-BFGS steps between two checks of the continuation's certified gap
CONTINUATION_ROUND = 10
#: the continuation's working set: columns with positive weight or a gain above 1 - SCREEN
SCREEN = 0.1
#: share of max_time kept for the final polish of the fast master
POLISH_RESERVE = 0.1


@dataclass
class ColumnGenerationResult:
    hypotheses: Hypotheses  # every weak classifier that entered the master
    column_hyp: np.ndarray  # column -> index into hypotheses
    column_slot: np.ndarray  # column -> slot
    w: np.ndarray  # column weights
    objective: float  # primal objective ||w||_1 + C * mean hinge at the final w
    dual_bound: float = -np.inf  # certified lower bound on the restricted master
    history: list[dict] = field(default_factory=list)
    w_path: list[np.ndarray] = field(default_factory=list)  # w after each iteration
    converged: bool = False
    certified: bool = False  # the final w is the exact optimum over its columns
    stop_reason: str = ""

    @property
    def gap(self) -> float:
        return _relative_gap(self.objective, self.dual_bound)

    def slot_weights(self, n_slots: int | None = None) -> np.ndarray:
        """Weights as a (n_hypotheses, n_slots) matrix: F(z) = phi(z) @ W.  ``n_slots``:
        the task's slot count (default: the largest slot any column uses, plus one)."""
        if n_slots is None:
            n_slots = int(self.column_slot.max()) + 1 if len(self.column_slot) else 1
        W = np.zeros((len(self.hypotheses), n_slots))
        np.add.at(W, (self.column_hyp, self.column_slot), self.w)
        return W


def _relative_gap(primal: float, dual: float) -> float:
    return float(max(primal - dual, 0.0) / max(abs(primal), 1e-300))


# ---------------------------------------------------------------------------------------
# masters
# ---------------------------------------------------------------------------------------
class FastMaster:
    """Smoothed restricted master every iteration, exact polish on demand.

    ``certify`` first sharpens the smoothing, then solves the restricted master exactly:

    * listed outputs: the m-slack LP (``MSlackLP``) built on the sharpened support -- rows
      (i, y) with softmax weight above ``POLISH_ROWS``, columns with positive weight or a
      reduced cost within 1 % --, started from the smoothed point (HiGHS ``setSolution``),
      with row and column generation to ``POLISH_TOL``;
    * otherwise (ranking): Alg. 2 on the 1-slack LP (``OneSlackMaster``), seeded with the
      plane at the smoothed point and that point as its best point, to ``eps_cp``.

    The smoothed master continues from the exact weights if more columns enter.
    """

    def __init__(
        self,
        task,
        store: ColumnStore,
        C: float,
        *,
        tol,
        max_steps,
        eps_cp,
        rng,
        certify: str = "exact",
        gap_tol: float = GAP_TOL,
    ):
        self.task, self.store, self.C = task, store, C
        self.eps_cp, self.rng = eps_cp, rng
        #: "exact": the LP polish where the task has one; "gap": the continuation
        self.mode = certify
        self.gap_tol = float(gap_tol)
        #: best lower bound on the *full* problem's optimum (every weak classifier the
        #: learner can return) met while pricing: ``C sum mu Delta / max(1, max gain)``
        #: with the exact search's largest gain, valid at every later iteration too
        self._pricing_bound = -np.inf
        self.tightened = False  # tighten() ran since the last columns entered
        self.formulation = "n-slack" if task.dense_outputs else "1-slack"
        self.smooth = SmoothedMaster(
            task, store, C, tol=tol, max_steps=max_steps, working_set=smooth_master.WORKING_SET
        )
        self.exact = None  # MSlackLP or OneSlackMaster, once a polish has run
        self._exact_cols = 0  # columns the 1-slack polish already holds
        self.certified = False
        self.failed = False  # the exact LP failed numerically (huge C)
        #: the continuation reached its sharpest beta above CONTINUATION_GAP
        self.stalled = False
        self._base_beta = self.smooth.beta

    @property
    def t_oracle(self) -> float:
        return self.smooth.t_oracle + (self.exact.t_oracle if self.exact is not None else 0.0)

    # state of the current iterate
    @property
    def _exact_done(self) -> bool:
        return self.certified and self.exact is not None

    @property
    def w(self) -> np.ndarray:
        return self.exact.w if self._exact_done else self.smooth.w

    def weak_weights(self) -> np.ndarray:
        return self.exact.weak_weights() if self._exact_done else self.smooth.A

    def add_columns(self, cols: np.ndarray) -> None:
        if self._exact_done:  # continue from the exact weights (new columns start at 0)
            w = np.zeros(self.store.n_columns)
            w[: len(self.exact.w)] = self.exact.w
            self.smooth.set_weights(w)
        elif self.smooth.beta != self._base_beta:  # after a continuation: back to the
            # base smoothing (the next certificate sharpens from there again)
            w = np.zeros(self.store.n_columns)
            w[: len(self.smooth.w)] = self.smooth.w
            self.smooth.beta = self._base_beta
            self.smooth.set_weights(w)
        else:
            self.smooth.add_columns(cols)
        self.certified = False
        self.stalled = False
        self.tightened = False
        self._continuation_bound = -np.inf  # a bound for fewer columns is no bound now

    @property
    def _by_continuation(self) -> bool:
        return self.mode == "gap" or not self.task.exact_polish

    @property
    def pricing_threshold(self) -> float | None:
        """Gain a new weak learner must exceed after a continuation certificate (None:
        the caller's ``1 + eps_cg``)."""
        if (self.certified or self.stalled) and self._by_continuation:
            return 1.0 + CONTINUATION_GAIN_TOL
        return None

    def tighten(self, deadline: float | None) -> int:
        """``TIGHTEN_STEPS`` more L-BFGS steps on the working set at a tight inner
        tolerance (the per-iteration solves stop at ``tol``), once per column addition:
        re-pricing at the tighter duals usually finds columns again, which a full
        certificate would find at many times the cost."""
        s = self.smooth
        tol, max_steps = s.tol, s.max_steps
        s.tol, s.max_steps = 1e-9, TIGHTEN_STEPS
        try:
            steps = s.solve(deadline)
        finally:
            s.tol, s.max_steps = tol, max_steps
        self.tightened = True
        return steps

    def full_gap_met(self) -> bool:
        """After a ``certify="gap"`` certificate: whether the certified relative gap to
        the *full* problem -- the objective against the pricing bound, which covers every
        weak classifier -- is within ``gap_tol``.  Then column generation has converged to
        that tolerance (new columns could lower the objective by at most that much), and
        re-opening the master for columns of gain just above 1 would only repeat the
        certificate again and again."""
        return self.certified and self._pricing_gap_met()

    def _pricing_gap_met(self) -> bool:
        if not (self.mode == "gap" and np.isfinite(self._pricing_bound)):
            return False
        P = self.smooth.objective
        return (P - self._pricing_bound) <= self.gap_tol * abs(P)

    def note_pricing(self, best_gain: float) -> None:
        """The exact weak-learner search found ``best_gain`` as the largest gain of any
        weak classifier under the current duals: a lower bound on the full problem
        (and so on every restricted master).  The search's float64 prefix sums may
        differ from the column products by rounding; the gain is taken 1e-9 larger."""
        s = self.smooth
        g = max(1.0, float(best_gain) * (1.0 + 1e-9))
        self._pricing_bound = max(self._pricing_bound, self.C * s.risk.dual / g)

    def solve(self, deadline: float | None) -> dict:
        steps = self.smooth.solve(deadline)
        return {"n_cp": steps}

    def record(self) -> dict:
        if self._exact_done:
            return self.exact.record()
        s = self.smooth
        bound = max(self._pricing_bound, getattr(self, "_continuation_bound", -np.inf))
        if not np.isfinite(self._pricing_bound) or len(s.ws) == self.store.n_columns:
            # no exact search to price with, or a model small enough that every
            # column's float64 gain is cheap: the restricted master's own bound
            bound = max(bound, s.dual_bound)
        return {
            "objective": s.objective,
            "dual_bound": bound,
            "master_objective": s.smooth_objective,
            "xi": s.xi,
            "n_planes": 0,
        }

    def certify(self, deadline: float | None) -> bool:
        """Exact optimum over the current columns; False if the deadline stopped it."""
        if self.certified:
            return True
        if self.failed or self.stalled:
            return False
        if self._pricing_gap_met():
            # the exact search's bound already certifies gap_tol against the full
            # problem (so against this restricted master): no continuation needed
            self.certified = True
            return True
        self.smooth.refresh()  # every column's gain at the current point
        if self._by_continuation:
            return self._certify_by_continuation(deadline)
        self.smooth.sharpen(POLISH_SHARPEN, deadline)
        try:
            if self.task.dense_outputs:
                ok = self._polish_lp(deadline)
            else:
                ok = self._polish_one_slack(deadline)
        except LPNumericalError:  # keep the smoothed solution and its certified gap
            self.exact, self.failed = None, True
            return False
        self.certified = ok
        return ok

    def _certify_by_continuation(self, deadline) -> bool:
        """For tasks whose exact master is impractical (chains: Kelley's planes need
        hundreds of rounds per solve): sharpen the smoothing (beta x4, up to
        ``CONTINUATION_MAX_SHARPEN`` times the base beta; new columns return the master to
        the base beta), each time solving until no current column's gain exceeds 1 by
        more than ``CONTINUATION_GAIN_TOL`` (the projected-gradient test; the decrease test stops
        early when beta is large), until the certified relative gap ``(P(w) - D) / P(w)``
        is at most ``CONTINUATION_GAP``; at the sharpest beta without that gap the master
        is ``stalled`` (the fit stops with ``stop_reason = "stalled"``).
        Every box-feasible ``mu`` met on the way gives a valid lower bound on the same
        restricted master, so ``D`` is the best of them and ``w`` the best primal point.
        The model stays a smoothed one: ``certified`` means "within that gap", not the
        LP vertex.

        ``certify="gap"`` uses the same continuation for every task, to ``gap_tol``.
        The steps move a screened working set -- columns with positive weight or a gain
        within ``SCREEN`` of 1 at the start --, every round's bound takes every column's
        float64 gain, and a column outside the set whose gain exceeds 1 joins it."""
        s = self.smooth
        target = self.gap_tol if self.mode == "gap" else CONTINUATION_GAP
        best_lb = max(s.dual_bound, self._pricing_bound)
        best = (s.objective, s.w.copy())
        s.pin_working_set(np.flatnonzero((s.w > 0) | (s.gains >= 1.0 - SCREEN)))

        def tight_solve():
            nonlocal best_lb, best
            tol, max_steps = s.tol, s.max_steps
            # short rounds: the bound is checked every CONTINUATION_ROUND steps, and the
            # solve ends as soon as the target gap is certified
            s.tol, s.max_steps = 1e-9, CONTINUATION_ROUND
            try:
                for _ in range(40 * max(1, max_steps // CONTINUATION_ROUND)):
                    steps = s.solve(deadline)
                    gains = s.store.gains(s.A)  # float64: the bound below is exact
                    g = float(gains.max()) if len(gains) else 0.0
                    out = np.flatnonzero(gains > 1.0 + CONTINUATION_GAIN_TOL)
                    if len(out) and not np.all(np.isin(out, s.ws)):
                        s.pin_working_set(np.union1d(s.ws, out))
                    best_lb = max(best_lb, s.C * s.risk.dual / max(1.0, g))  # = s.dual_bound
                    if s.objective < best[0]:
                        best = (s.objective, s.w.copy())
                    if steps == 0 or g <= 1.0 + CONTINUATION_GAIN_TOL or gap() <= target:
                        break
                    if deadline is not None and time.perf_counter() >= deadline:
                        break
            finally:
                s.tol, s.max_steps = tol, max_steps

        def gap():
            return (best[0] - best_lb) / max(abs(best[0]), 1e-12)

        tight_solve()
        timed_out = False
        while gap() > target:
            if deadline is not None and time.perf_counter() >= deadline:
                timed_out = True
                break
            if s.beta * POLISH_SHARPEN > self._base_beta * CONTINUATION_MAX_SHARPEN * (1 + 1e-9):
                break
            s.beta *= POLISH_SHARPEN
            s.set_weights(s.w)
            tight_solve()
        if s.objective > best[0]:
            s.set_weights(best[1])
        self._continuation_bound = best_lb
        self.certified = bool(gap() <= target)
        self.stalled = not self.certified and not timed_out
        return self.certified

    def _polish_lp(self, deadline) -> bool:
        s = self.smooth
        if self.exact is None:
            self.exact = MSlackLP(self.task, self.store, self.C)
        lp = self.exact
        ri, ry = np.nonzero(s._sharp_P > POLISH_ROWS)
        keep = lp._dense_losses()[ri, ry] > 0  # the true output's row is 0 >= 0 - xi
        lp.add_rows(ri[keep], ry[keep])
        lp.activate(np.flatnonzero((s.w > 0) | (s.gains >= 1.0 - 1e-2)))
        lp.warm_start(s.w)
        return lp.run(
            row_tol=POLISH_TOL * max(float(lp._dense_losses().max()), 1.0),
            col_tol=POLISH_TOL,
            deadline=deadline,
            prune=False,
        )

    def _polish_one_slack(self, deadline) -> bool:
        if self.exact is None:
            self.exact = OneSlackMaster(
                self.task, self.store, self.C, eps_cp=self.eps_cp, rng=self.rng
            )
        k = self.exact
        new = np.arange(self._exact_cols, self.store.n_columns)
        if len(new):
            k.add_columns(new)
            self._exact_cols = self.store.n_columns
        k.seed(self.smooth.w)
        return k.certify(deadline)


class MSlackMaster:
    """The paper's m-slack master (eq. 3): rows violated by more than ``eps_cp`` added
    each iteration (row generation), zero columns and rows dropped from the LP."""

    formulation = "n-slack"

    @property
    def t_oracle(self) -> float:
        return self.lp.t_oracle

    def __init__(self, task, store: ColumnStore, C: float, *, eps_cp: float, eps_cg: float, rng):
        self.task, self.store, self.C = task, store, C
        self.eps_cp, self.eps_cg = eps_cp, eps_cg
        self.lp = MSlackLP(task, store, C)
        init = task.initial_violators(rng)  # Alg. 1 line 2
        self.lp.add_rows(np.arange(task.n_samples), init.label)
        self.lp.run(row_tol=eps_cp, col_tol=eps_cg)
        self.certified = False

    @property
    def w(self) -> np.ndarray:
        return self.lp.w

    def weak_weights(self) -> np.ndarray:
        return self.lp.weak_weights()

    def add_columns(self, cols: np.ndarray) -> None:
        self.lp.activate(cols)
        self.certified = False

    def solve(self, deadline: float | None) -> dict:
        n0 = self.lp.n_solves
        self.lp.run(row_tol=self.eps_cp, col_tol=self.eps_cg, deadline=deadline)
        return {"n_cp": self.lp.n_solves - n0}

    def record(self) -> dict:
        return self.lp.record()

    def certify(self, deadline: float | None) -> bool:
        if not self.certified:
            tol = POLISH_TOL * max(float(self.lp._dense_losses().max()), 1.0)
            self.certified = self.lp.run(row_tol=tol, col_tol=POLISH_TOL, deadline=deadline)
        return self.certified


class OneSlackMaster:
    """Alg. 2: Kelley's cutting planes on the 1-slack LP (eq. 9), working set kept.

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
        self.lp: MSlackLP | None = None  # the exact polish, for listable outputs
        self.certified = False
        self._t_oracle = 0.0
        self._start = None
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
                self.lp = MSlackLP(self.task, self.store, self.C)
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
        """Alg. 2 for fixed columns, from the current working set.

        Returns the best point seen (lowest true objective) with the LP's duals.  Stops
        when the LP point passes the test of Alg. 2 line 10, or when the best point's true
        objective is within ``C * eps_cp`` of the LP value (a lower bound for the current
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
                # nothing added: either certified, or the paper's test (Alg. 2 l. 10) held
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


# ---------------------------------------------------------------------------------------
# Alg. 1
# ---------------------------------------------------------------------------------------
def _interrupted(store, history, w_path) -> ColumnGenerationResult:
    """Ctrl-C during a fit: the model of the last completed iteration (columns added
    since keep weight 0; no final polish, so not certified)."""
    if not history:
        raise KeyboardInterrupt  # interrupted before the first iteration: nothing to keep
    w = np.zeros(store.n_columns)
    if w_path:
        w[: len(w_path[-1])] = w_path[-1]
    last = history[-1]
    return ColumnGenerationResult(
        hypotheses=store.hyps,
        column_hyp=store.col_hyp,
        column_slot=store.col_slot,
        w=w,
        objective=float(last["objective"]),
        dual_bound=float(last["dual_bound"]),
        history=history,
        w_path=w_path,
        converged=False,
        certified=False,
        stop_reason="interrupted",
    )


_THREADPOOLS: ThreadpoolController | None = None


def _blas_one_thread():
    """``threadpool_limits(1, "blas")`` with the loaded libraries scanned once per
    process (the scan costs milliseconds, which an online tracker re-training every
    other frame would pay each time)."""
    global _THREADPOOLS
    if _THREADPOOLS is None:
        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="blas")


def fit_structboost(*args, **kwargs) -> ColumnGenerationResult:
    """Run Alg. 1 on a bound task (see :func:`_fit_structboost` for the parameters).

    BLAS is limited to one thread: the products here are small and many, and a
    multi-threaded BLAS spinning next to numba's thread pool made them tens of times
    slower on two cores.
    """
    n_jobs = kwargs.pop("n_jobs", None)
    with _blas_one_thread():
        if n_jobs is None:
            return _fit_structboost(*args, **kwargs)
        task = args[0]
        if isinstance(task, CRFTask):  # the graph cuts on fixed shards of the images
            with ShardedOracle(task.linear_model(), n_jobs=n_jobs) as oracle:
                task.attach_sharded_oracle(oracle)
                try:
                    return _fit_with_search(n_jobs, *args, **kwargs)
                finally:
                    task.attach_sharded_oracle(None)
        # tasks with their own sharded kernels (chains): the oracle on n_jobs threads
        with task.oracle_threads(n_jobs):
            return _fit_with_search(n_jobs, *args, **kwargs)


def _fit_with_search(n_jobs, task, weak, *args, **kwargs) -> ColumnGenerationResult:
    kwargs["product_threads"] = resolve_threads(n_jobs)  # the master's column products
    if not supports_blocks(weak):  # trees, perceptrons, ...: a serial search
        return _fit_structboost(task, weak, *args, **kwargs)
    with BlockedStumpSearch(weak, n_jobs=n_jobs) as blocked:  # feature blocks on workers
        return _fit_structboost(task, blocked, *args, **kwargs)


def _picked_columns(store: ColumnStore, picks, new_cols) -> np.ndarray:
    """Column numbers of the priced (classifier, slot) pairs that were already stored."""
    rows = store.last_rows
    cols = np.array(
        [store.index[rows[k], s] for k, (_, slots) in enumerate(picks) for s in slots],
        dtype=np.int64,
    )
    return np.setdiff1d(cols[cols >= 0], new_cols)


def _seed_columns(mst, store: ColumnStore, Z, hyps: Hypotheses, W0, deadline) -> None:
    """Warm start: earlier weak classifiers enter as columns, the master is solved."""
    W0 = np.asarray(W0, dtype=np.float64).reshape(len(hyps), store.n_slots)
    keep = np.flatnonzero(np.any(W0 > 0, axis=1))
    if len(keep) == 0:
        return
    hyps, W0 = hyps.take(keep), W0[keep]
    out = hyps.evaluate(Z)
    slots = [np.flatnonzero(row > 0) for row in W0]
    cols = store.add(hyps, out, slots)
    if len(cols) == 0:
        return
    rows = store.last_rows  # the stored classifier of each earlier one
    w = np.zeros(store.n_columns)
    for k in range(len(hyps)):  # one step per earlier weak classifier (not per sample)
        h = rows[k]
        for s in slots[k]:
            w[store.index[h, s]] += W0[k, s]
    mst.add_columns(cols)
    if isinstance(mst, FastMaster):
        mst.smooth.set_weights(w)
    mst.solve(deadline)


def _fit_structboost(
    task: StructuredTask,
    weak_learner: WeakLearner,
    *,
    C: float,
    master: str = "fast",
    formulation: str = "n-slack",
    eps_cp: float = 0.01,
    eps_cg: float = 1e-6,
    tol: float = 1e-4,
    max_iter: int = 200,
    max_time: float | None = None,
    rng: np.random.Generator | None = None,
    callback=None,
    stabilize: bool = True,
    prune_after: int = 50,
    max_cp_rounds: int | None = None,
    max_inner: int = 100,
    truncate_gap: float = TRUNCATE_GAP,
    init_hypotheses: Hypotheses | None = None,
    init_slot_weights: np.ndarray | None = None,
    polish: bool = True,
    certify: str = "exact",
    gap_tol: float = GAP_TOL,
    product_threads: int = 1,
) -> ColumnGenerationResult:
    """Alg. 1: column generation over weak structured learners around a master.

    ``master="fast"`` (tasks with ``dense_outputs``): smoothed master with inner tolerance
    ``tol`` (relative decrease per L-BFGS step) and at most ``max_inner`` steps per
    iteration.  ``master="exact"``: the ``formulation`` LP ("n-slack": row generation to
    ``eps_cp``; "1-slack": Alg. 2 with ``eps_cp``, ``max_cp_rounds``, ``stabilize``,
    ``prune_after``, ``truncate_gap``).  Every run ends with the exact optimum over its
    final columns (``certified``) unless ``max_time`` ran out first; ``max_time`` covers
    that final solve too.

    Warm start: ``init_hypotheses`` (weak classifiers of an earlier model) with
    ``init_slot_weights`` (their (n, n_slots) weights) enter the master as columns before
    the first pricing step -- re-evaluated on this task's weak inputs, one column per
    slot of positive weight -- and the master is solved over them first (the fast master
    starting from the given weights), so column generation only adds what the new data
    needs (e.g. an online tracker re-trained on a sliding window of frames).

    ``certify`` (fast master only): how the fit ends once the smoothed duals price no new
    column (or at ``max_iter``).  ``"exact"``: the exact LP optimum over the final columns
    (the m-slack polish; tasks without one use the continuation to ``CONTINUATION_GAP``).
    ``"gap"``: smoothing continuation on a screened working set until the certified
    relative gap ``(P(w) - D) / P(w)`` is at most ``gap_tol`` -- no LP, so its cost grows
    with the model like one iteration's, not like the LP's rows.  ``"none"`` (or the
    legacy ``polish=False``): no certificate work at all -- the smoothed solution is
    returned with its certified gap (``certified`` False); for frequent warm
    re-trainings.

    Every iteration's ``dual_bound`` is a certified lower bound on the restricted master:
    with an exact weak-learner search (stumps) the best of ``C sum mu Delta / max(1,
    g*)`` over the iterations so far, ``g*`` the search's largest gain (a bound on the
    full problem, so on every restricted one), otherwise -- or while the model has at
    most ``WORKING_SET`` classifiers -- also the restricted master's own bound from every
    column's gain.

    ``product_threads``: threads for the fixed pieces of the master's column products
    (:class:`~maxmargin.solvers.columns.ColumnStore`; bit-identical for any count).
    """
    if master not in MASTERS:
        raise ValueError(f"master must be one of {MASTERS}, got {master!r}")
    if certify not in CERTIFY:
        raise ValueError(f"certify must be one of {CERTIFY}, got {certify!r}")
    if not (np.isfinite(gap_tol) and gap_tol > 0):
        raise ValueError(f"gap_tol must be a positive number, got {gap_tol!r}")
    if not polish:
        certify = "none"
    formulation = FORMULATION_ALIASES.get(formulation, formulation)
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    if master == "fast" and not task.smooth_master:
        raise ValueError(
            f"{type(task).__name__} has no listable outputs and no smoothed risk; the fast "
            "master needs one of them (use master='exact')"
        )
    if master == "exact" and formulation not in task.formulations:
        raise ValueError(
            f"{type(task).__name__} supports formulation {task.formulations}, not {formulation!r}"
        )
    if master == "exact" and formulation == "n-slack" and not task.dense_outputs:
        raise ValueError(f"{type(task).__name__} supports only formulation='1-slack'")
    rng = np.random.default_rng() if rng is None else rng
    t_start = time.perf_counter()
    final_deadline = None if max_time is None else t_start + max_time
    t_polish = 0.0  # longest certify so far: the iterations leave room for one more

    def loop_deadline():
        if final_deadline is None:
            return None
        return final_deadline - max(POLISH_RESERVE * max_time, 1.5 * t_polish)

    Z = task.weak_inputs()
    prepared = weak_learner.prepare(Z)
    store = ColumnStore(
        weak_learner.hypotheses_class, Z.shape[1], Z.shape[0], task.n_slots, product_threads
    )
    if master == "fast":
        mst = FastMaster(
            task,
            store,
            C,
            tol=tol,
            max_steps=max_inner,
            eps_cp=eps_cp,
            rng=rng,
            certify="exact" if certify == "none" else certify,
            gap_tol=gap_tol,
        )
    elif formulation == "n-slack":
        mst = MSlackMaster(task, store, C, eps_cp=eps_cp, eps_cg=eps_cg, rng=rng)
    else:
        mst = OneSlackMaster(
            task,
            store,
            C,
            eps_cp=eps_cp,
            rng=rng,
            stabilize=stabilize,
            prune_after=prune_after,
            max_cp_rounds=max_cp_rounds,
            truncate_gap=truncate_gap,
        )

    history: list[dict] = []
    w_path: list[np.ndarray] = []
    if init_hypotheses is not None and len(init_hypotheses):
        _seed_columns(mst, store, Z, init_hypotheses, init_slot_weights, loop_deadline())

    t_oracle_seen = 0.0

    def record(it, gain, t_weak, t_master, n_cp, converged=False, t_polish=0.0):
        nonlocal t_oracle_seen
        rec = {"iteration": it, **mst.record()}
        t_oracle, t_oracle_seen = mst.t_oracle - t_oracle_seen, mst.t_oracle
        rec["gap"] = _relative_gap(rec["objective"], rec["dual_bound"])
        rec.update(
            n_weak=int(
                np.count_nonzero(np.bincount(store.col_hyp[mst.w > 0], minlength=store.n_hyp))
            ),
            n_columns=store.n_columns,
            n_cp=n_cp,
            gain=gain,
            t_weak=t_weak,
            t_master=t_master,
            t_polish=t_polish,
            t_oracle=t_oracle,
            t_total=time.perf_counter() - t_start,
            certified=bool(mst.certified),
            converged=converged,
        )
        return rec

    skip_polish = certify == "none" and isinstance(mst, FastMaster)
    exact_search = bool(getattr(weak_learner, "exact_search", False))
    base = getattr(weak_learner, "base", weak_learner)
    if (
        init_hypotheses is not None
        and len(init_hypotheses)
        and not (getattr(base, "max_bins", None) is None or isinstance(base, CodedStump))
    ):
        # earlier classifiers' thresholds need not be bin boundaries of this data: the
        # binned search no longer covers every column
        exact_search = False
    converged, reason = False, "max_iter"
    it = 0
    t_weak = t_cert = 0.0
    try:
        while it < max_iter:
            t0 = time.perf_counter()
            cand, gains = weak_learner.best(prepared, mst.weak_weights())
            threshold = getattr(mst, "pricing_threshold", None) or 1.0 + eps_cg
            picks = task.select_columns(gains, threshold)
            if picks and isinstance(mst, FastMaster) and mst.full_gap_met():
                picks = []  # the certified point is within gap_tol of the full problem
            best_gain = float(np.max(gains)) if len(gains) else 0.0
            if exact_search and isinstance(mst, FastMaster):
                mst.note_pricing(best_gain)
            new_cols = old_cols = np.zeros(0, dtype=np.int64)
            if picks:
                new_hyps = cand.take(np.array([p[0] for p in picks]))
                new_cols = store.add(new_hyps, new_hyps.evaluate(Z), [p[1] for p in picks])
                if isinstance(mst, FastMaster):
                    # stored columns that price again but sit outside the working set
                    # (their weights were held): they re-enter it
                    old_cols = mst.smooth.outside_working_set(
                        _picked_columns(store, picks, new_cols)
                    )
            t_weak += time.perf_counter() - t0
            if len(new_cols) == 0 and len(old_cols) == 0:
                if getattr(mst, "stalled", False):
                    # the continuation stalled and its duals price nothing new either
                    reason = "stalled"
                    break
                if (
                    isinstance(mst, FastMaster)
                    and mst.mode == "gap"
                    and not mst.certified
                    and not skip_polish
                    and not mst.tightened
                ):
                    # the smoothed duals priced nothing new: first a few more steps on the
                    # working set (cheap), then re-price; the certificate only if that
                    # prices nothing either
                    t1 = time.perf_counter()
                    mst.tighten(final_deadline)
                    t_cert += time.perf_counter() - t1
                    continue
                if not mst.certified and not skip_polish:
                    # approximate duals priced nothing new: solve exactly, then re-price
                    t1 = time.perf_counter()
                    ok = mst.certify(final_deadline)
                    t_cert += time.perf_counter() - t1
                    t_polish = max(t_polish, time.perf_counter() - t1)
                    if ok or getattr(mst, "stalled", False):
                        continue  # re-price at the certified (or best reached) point
                    reason = "numerical" if getattr(mst, "failed", False) else "max_time"
                    break
                converged, reason = True, "converged"
                history.append(
                    record(it + 1, best_gain, t_weak, t_cert, 0, converged=True, t_polish=t_cert)
                )
                w_path.append(mst.w.copy())
                if callback is not None:
                    callback(history[-1])
                break
            it += 1
            t1 = time.perf_counter()
            mst.add_columns(new_cols)
            if len(old_cols):
                mst.smooth.activate(old_cols)
            info = mst.solve(loop_deadline())
            t_master = time.perf_counter() - t1 + t_cert
            history.append(record(it, best_gain, t_weak, t_master, info["n_cp"], t_polish=t_cert))
            t_weak = t_cert = 0.0
            w_path.append(mst.w.copy())
            if callback is not None:
                callback(history[-1])
            if final_deadline is not None and time.perf_counter() > loop_deadline():
                reason = "max_time"
                break
    except KeyboardInterrupt:
        return _interrupted(store, history, w_path)

    if not mst.certified and history and not skip_polish:
        # the final polish: the exact optimum over the final columns, inside max_time
        t1 = time.perf_counter()
        try:
            mst.certify(final_deadline)
        except KeyboardInterrupt:
            return _interrupted(store, history, w_path)
        last = history[-1]
        rec = record(last["iteration"], last["gain"], last["t_weak"], 0.0, last["n_cp"])
        dt = time.perf_counter() - t1
        rec["t_polish"] = last["t_polish"] + dt
        rec["t_master"] = last["t_master"] + dt
        rec["t_oracle"] += last["t_oracle"]
        rec["converged"] = converged
        history[-1] = rec
        w_path[-1] = mst.w.copy()
        if callback is not None:  # the final record replaces the last iteration's
            callback(rec)
    if not history:  # no iteration at all (max_time already spent)
        history.append(record(0, 0.0, 0.0, 0.0, 0))
        w_path.append(mst.w.copy())
    final = history[-1]
    return ColumnGenerationResult(
        hypotheses=store.hyps,
        column_hyp=store.col_hyp,
        column_slot=store.col_slot,
        w=np.array(mst.w, dtype=np.float64),
        objective=float(final["objective"]),
        dual_bound=float(final["dual_bound"]),
        history=history,
        w_path=w_path,
        converged=converged,
        certified=bool(mst.certified),
        stop_reason=reason,
    )
