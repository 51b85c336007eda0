"""StructBoost's smoothed restricted master (``master="fast"``) and its certificates.

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014 [Shen14].  Every iteration solves the
log-sum-exp smoothed problem (:class:`~maxmargin.solvers.smoothed_problem.
SmoothedProblem`, projected L-BFGS on a bounded working set); when its duals price no new
column the master is certified: by smoothing continuation to a relative gap
(``certify="gap"``, no LP) or by the exact n-slack LP over the final columns
(``certify="exact"``; [Shen2014 eq. 3]).  docs/structboost.md explains both.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import linprog

from maxmargin.solvers import smoothed_problem
from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.lp_master import LPNumericalError, NSlackLP
from maxmargin.solvers.one_slack_master import OneSlackMaster
from maxmargin.solvers.restricted_master import POLISH_TOL, RestrictedMaster
from maxmargin.solvers.smoothed_problem import SmoothedProblem
from maxmargin.tasks.base import LabelCodingTask

__all__ = ["CERTIFY", "GAP_TOL", "INNER_TOL", "SmoothedMaster", "aggregated_dual_bound"]

#: what ends a fit of the fast master: ``"gap"`` -- smoothing continuation until the
#: certified relative gap is at most ``gap_tol`` (no LP); ``"exact"`` -- the exact LP
#: optimum over the final columns (the m-slack polish); ``"none"`` -- nothing
CERTIFY = ("gap", "exact", "none")
#: the fast master's inner tolerance during the iterations: ``"fixed"`` -- every solve to
#: ``tol``; ``"adaptive"`` -- an inexact master, each solve to a tolerance that follows the
#: outer column-generation gap (``INEXACT_FACTOR`` times it, between ``tol`` and
#: ``INEXACT_MAX_TOL``), then one solve to ``tol`` before the certificate
INNER_TOL = ("fixed", "adaptive")
#: an adaptive solve stops once a step lowers the objective by less than this fraction
#: of the outer gap (relative) ...
INEXACT_FACTOR = 0.003
#: ... but never looser than this
INEXACT_MAX_TOL = 1e-3
#: default relative duality gap of ``certify="gap"``, the same for ``fit_structboost``,
#: ``SmoothedMaster`` and the estimators (StructBoost, StructBoostClassifier,
#: StructBoostRanker); docs/structboost.md ("Scale") says why 1e-2
GAP_TOL = 1e-2
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
#: on label-coding tasks (binary, multi-class, hierarchy) the continuation leaves a beta
#: (sharpens) as soon as its certified gap is below the smoothing's excess ``P_beta(w) -
#: P(w)`` at the current point, instead of solving that beta until no column's gain
#: exceeds ``1 + CONTINUATION_GAIN_TOL`` (False, and every other task: the latter)
EARLY_SHARPEN = True
#: L-BFGS steps of SmoothedMaster_.tighten (when the smoothed duals price nothing new)
TIGHTEN_STEPS = 20
#: L-BFGS steps between two checks of the continuation's certified gap
CONTINUATION_ROUND = 10
#: the continuation's working set: columns with positive weight or a gain above 1 - SCREEN
SCREEN = 0.1
#: dual points (their dual value and every column's gain) kept for the aggregated bound
AGGREGATE_POINTS = 32
#: the aggregated bound's LP runs after each of the continuation's first rounds, then
#: after rounds 32, 64, 128, ... only (a deterministic schedule: with many columns and
#: points one LP costs more than a round of steps; glass at C = 1000 ran 330 rounds)
AGGREGATE_ROUNDS = 16


def aggregated_dual_bound(values, gains) -> float:
    """Best lower bound on the restricted master from a conic combination of dual points.

    ``values[r] = sum mu_r Delta`` and ``gains[r]`` (every column's float64 gain) of
    box-feasible points ``mu_r`` (``mu >= 0``, ``sum_y mu_iy <= C/m``) of the m-slack
    dual.  Any ``mu = sum_r nu_r mu_r`` with ``nu >= 0``, ``sum nu <= 1`` is again in the
    box (a convex set holding 0), its gains are ``sum_r nu_r gains[r]`` (linear in mu),
    so ``sum nu_r values[r] / max(1, max_j sum_r nu_r gains[r, j])`` is a lower bound
    (weak duality, as for one point).  The best ``nu`` is a small LP -- only columns with
    some gain above 1 can bind, since ``sum nu <= 1`` --, solved by HiGHS; its answer is
    then re-scaled by the *exact* largest combined gain (and ``sum nu``), so the bound
    does not rest on the LP solver's tolerances.  The smoothed iterates' duals oscillate
    around the optimum (the column of largest gain changes from round to round), and
    combining them certifies a gap the single points reach only many steps later."""
    d = np.asarray(values, dtype=np.float64)
    G = np.asarray(gains, dtype=np.float64)
    if len(d) == 0 or G.shape[1] == 0:
        return float(np.max(d, initial=-np.inf))
    single = float(np.max(d / np.maximum(1.0, G.max(axis=1))))
    bind = np.flatnonzero(G.max(axis=0) > 1.0)
    if len(d) < 2 or len(bind) == 0:
        return single
    A_ub = np.vstack([G[:, bind].T, np.ones((1, len(d)))])
    res = linprog(-d, A_ub=A_ub, b_ub=np.ones(A_ub.shape[0]), bounds=(0, None), method="highs")
    if res.status != 0 or res.x is None:
        return single
    nu = np.maximum(res.x, 0.0)
    scale = max(1.0, float((nu @ G).max()), float(nu.sum()))
    return max(single, float(nu @ d) / scale)


class SmoothedMaster(RestrictedMaster):
    """Smoothed restricted master every iteration, exact polish on demand.

    ``certify`` first sharpens the smoothing, then solves the restricted master exactly:

    * listed outputs: the m-slack LP (``NSlackLP``) built on the sharpened support -- rows
      (i, y) with softmax weight above ``POLISH_ROWS``, columns with positive weight or a
      reduced cost within 1 % --, started from the smoothed point (HiGHS ``setSolution``),
      with row and column generation to ``POLISH_TOL``;
    * otherwise (ranking): [Shen2014 Alg. 2] on the 1-slack LP (``OneSlackMaster``), seeded with the
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
        inner_tol: str = "fixed",
    ):
        if certify not in CERTIFY:
            raise ValueError(f"certify must be one of {CERTIFY}, got {certify!r}")
        if inner_tol not in INNER_TOL:
            raise ValueError(f"inner_tol must be one of {INNER_TOL}, got {inner_tol!r}")
        self.inner_tol = inner_tol
        #: the outer gap at the last pricing, ``(P(w) - C sum mu Delta / max(1, g*)) /
        #: P(w)`` with the search's largest gain ``g*`` (exact search or not: it only sets
        #: the next solve's tolerance, never a reported bound)
        self._outer_gap = np.inf
        self._loose = False  # the last solve stopped above ``tol``
        #: new columns entered since the last solve (only such a solve may be loose: when
        #: held columns re-open without a new one, the master is solved to ``tol``, or
        #: loose solves could cycle through a small working set)
        self._new_columns = False
        self.task, self.store, self.C = task, store, C
        self.eps_cp, self.rng = eps_cp, rng
        #: "none": the smoothed solution is returned as it is (no certificate)
        self.wants_certificate = certify != "none"
        #: "exact": the LP polish where the task has one; "gap": the continuation
        self.mode = "exact" if certify == "none" else certify
        self.gap_tol = float(gap_tol)
        #: best lower bound on the *full* problem's optimum (every weak classifier the
        #: learner can return) met while pricing: ``C sum mu Delta / max(1, max gain)``
        #: with the exact search's largest gain, valid at every later iteration too
        self._pricing_bound = -np.inf
        self.tightened = False  # tighten() ran since the last columns entered
        self.formulation = "n-slack" if task.dense_outputs else "1-slack"
        self.smooth = SmoothedProblem(
            task, store, C, tol=tol, max_steps=max_steps, working_set=smoothed_problem.WORKING_SET
        )
        self.exact = None  # NSlackLP or OneSlackMaster, once a polish has run
        self._exact_cols = 0  # columns the 1-slack polish already holds
        self.certified = False
        self.failed = False  # the exact LP failed numerically (huge C)
        #: the continuation reached its sharpest beta above CONTINUATION_GAP
        self.stalled = False
        self._base_beta = self.smooth.beta
        self._continuation_bound = -np.inf  # the last continuation's certified bound
        self.continuation_trace: list[tuple[float, float, float, float, float]] = []

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
        self._new_columns = len(cols) > 0
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

    def can_tighten(self) -> bool:
        return self.mode == "gap" and not self.certified and not self.tightened

    def priced_again(self, cols: np.ndarray) -> np.ndarray:
        if self.certified and self._by_continuation:
            # the certificate's bound took every stored column's gain: re-opening one
            # would return to the base smoothing and certify the same columns again
            return np.zeros(0, dtype=np.int64)
        return self.smooth.outside_working_set(cols)

    def reopen(self, cols: np.ndarray) -> None:
        self.smooth.activate(cols)

    def set_start(self, w: np.ndarray) -> None:
        self.smooth.set_weights(w)

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
        self._loose = False
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

    def note_best_gain(self, best_gain: float) -> None:
        s = self.smooth
        P = float(s.objective)
        lb = self.C * s.risk.dual / max(1.0, float(best_gain))
        self._outer_gap = max(P - lb, 0.0) / max(abs(P), 1e-300)

    @property
    def loose(self) -> bool:
        return self._loose

    def _iteration_tol(self) -> float:
        base = self.smooth.tol
        if self.inner_tol != "adaptive" or not self._new_columns:
            return base
        if not np.isfinite(self._outer_gap):
            return base
        return min(max(base, INEXACT_FACTOR * self._outer_gap), max(INEXACT_MAX_TOL, base))

    def solve(self, deadline: float | None) -> dict:
        s = self.smooth
        tol = self._iteration_tol()
        self._new_columns = False
        if tol == s.tol:
            steps = s.solve(deadline)
            self._loose = False
            return {"n_cp": steps}
        base = s.tol
        s.tol = tol
        try:
            steps = s.solve(deadline)
        finally:
            s.tol = base
        self._loose = True
        return {"n_cp": steps}

    def finish(self, deadline: float | None) -> int:
        """The solve the loose iterations left: to ``tol`` over the current columns."""
        if not self._loose or self._exact_done:
            return 0
        self._loose = False
        return self.smooth.solve(deadline)

    def record(self) -> dict:
        if self._exact_done:
            return self.exact.record()
        s = self.smooth
        bound = max(self._pricing_bound, self._continuation_bound)
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

    def exact_scores(self) -> bool:
        if self._exact_done:  # the exact LP's record is already exact
            return False
        return self.smooth.make_exact()

    def certify(self, deadline: float | None) -> bool:
        """Exact optimum over the current columns; False if the deadline stopped it."""
        if self.certified:
            return True
        if self.failed or self.stalled:
            return False
        self._loose = False  # the certificate solves far tighter than tol
        if self._pricing_gap_met():
            # the exact search's bound already certifies gap_tol against the full
            # problem (so against this restricted master): no continuation needed
            self.certified = True
            return True
        if deadline is not None and time.perf_counter() >= deadline:
            return False  # max_time is spent: the last iterate keeps its certified gap
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
        early when beta is large) or -- ``EARLY_SHARPEN``, on label-coding tasks, while a
        sharper beta is left --
        until the gap ``P(w) - D`` is at most the smoothing's excess ``P_beta(w) - P(w)``
        at the current point (then the primal, which only sharpening lowers, is what keeps
        the gap open), until the certified relative gap ``(P(w) - D) / P(w)``
        is at most ``CONTINUATION_GAP``; at the sharpest beta without that gap the master
        is ``stalled`` (the fit stops with ``stop_reason = "stalled"``).
        Every box-feasible ``mu`` met on the way gives a valid lower bound on the same
        restricted master, so ``D`` is the best of them and ``w`` the best primal point.
        The model stays a smoothed one: ``certified`` means "within that gap", not the
        LP vertex.

        ``certify="gap"`` uses the same continuation for every task, to ``gap_tol``.
        The steps move a screened working set -- columns with positive weight or a gain
        within ``SCREEN`` of 1 at the start --, every round's bound takes every column's
        float64 gain, and a column outside the set whose gain exceeds 1 joins it.  The
        bound is also the best conic combination of the rounds' dual points
        (:func:`aggregated_dual_bound`), on the schedule of ``AGGREGATE_ROUNDS``."""
        s = self.smooth
        target = self.gap_tol if self.mode == "gap" else CONTINUATION_GAP
        best_lb = max(s.dual_bound, self._pricing_bound)
        best = (s.objective, s.w.copy())
        s.pin_working_set(np.flatnonzero((s.w > 0) | (s.gains >= 1.0 - SCREEN)))
        # dual points of these columns, from the start point on
        points: list[tuple[float, np.ndarray]] = [(s.C * s.risk.dual, s.store.gains(s.A))]
        n_rounds = 0
        # the early sharpening for the label-coding tasks (binary, multi-class, hierarchy:
        # where it was measured); the others keep converging each beta's gains
        early = EARLY_SHARPEN and isinstance(self.task, LabelCodingTask)
        #: per round: (beta, best primal, best bound, smoothing excess P_beta(w) - P(w),
        #: largest column gain) -- a diagnostic of the last continuation
        trace = self.continuation_trace = []

        def tight_solve():
            nonlocal best_lb, best, n_rounds
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
                    points.append((s.C * s.risk.dual, gains))
                    del points[:-AGGREGATE_POINTS]
                    n_rounds += 1
                    scheduled = n_rounds <= AGGREGATE_ROUNDS or n_rounds & (n_rounds - 1) == 0
                    if gap() > target and len(points) > 1 and scheduled:
                        # the combination of the points met so far (same columns)
                        pv, pg = zip(*points)
                        best_lb = max(best_lb, aggregated_dual_bound(pv, np.vstack(pg)))
                    if s.objective < best[0]:
                        best = (s.objective, s.w.copy())
                    trace.append((s.beta, best[0], best_lb, s.smooth_objective - s.objective, g))
                    if steps == 0 or g <= 1.0 + CONTINUATION_GAIN_TOL or gap() <= target:
                        break
                    if early and can_sharpen() and smoothing_limited():
                        break
                    if deadline is not None and time.perf_counter() >= deadline:
                        break
            finally:
                s.tol, s.max_steps = tol, max_steps

        def gap():
            return (best[0] - best_lb) / max(abs(best[0]), 1e-12)

        def can_sharpen():
            sharper = s.beta * POLISH_SHARPEN
            return sharper <= self._base_beta * CONTINUATION_MAX_SHARPEN * (1 + 1e-9)

        def smoothing_limited():
            # the gap left is below the smoothing's own excess P_beta(w) - P(w) at the
            # current point: more rounds at this beta would mostly lift the bound against
            # a primal that only a sharper beta lowers (docs/structboost.md, "Scale")
            return best[0] - best_lb <= s.smooth_objective - s.objective

        tight_solve()
        timed_out = False
        while gap() > target:
            if deadline is not None and time.perf_counter() >= deadline:
                timed_out = True
                break
            if not can_sharpen():
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
            self.exact = NSlackLP(self.task, self.store, self.C)
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
