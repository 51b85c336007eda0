"""The fast restricted master of StructBoost: log-sum-exp smoothed hinge, projected L-BFGS.

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured Output
Variables", IEEE TPAMI 36(10), 2014.

For a task whose outputs can be listed (binary, multi-class, hierarchy, label-augmented,
pairwise ranking, sampled boxes ...), the restricted master over the current columns --
[Shen2014 eq. 3], equivalently [Shen2014 eq. 9] by Theorem 2.1 -- is, with the slacks eliminated,

    min_{w >= 0}  P(w) = 1'w + (C/m) sum_i max_y a_iy(w),   a_iy = Delta(y_i, y) - w.dPsi_i(y),

where ``a_(i, y_i) = 0``, so the max is the hinge.  Replacing the max by
``(1/beta) log sum_y exp(beta a_iy)`` gives a smooth convex ``P_beta`` with

    P(w) <= P_beta(w) <= P(w) + C log(K) / beta,

whose gradient is ``1 - gain_j(mu)`` with ``mu_iy = (C/m) softmax_y(beta a_i)_y``.  These
``mu`` are feasible for the box constraints of the m-slack dual (``mu >= 0``,
``sum_y mu_iy <= C/m``), so they go straight to the weak learners as signed weights
([Shen2014 eq. 11]), and every iterate carries a lower bound: for *any* box-feasible mu,

    D(mu) = sum_iy mu_iy Delta(y_i, y) / max(1, max_j gain_j(mu))  <=  min P

(scaling mu down by the largest column gain makes it dual feasible).  Each column-
generation iteration warm-starts from the previous w (new columns at 0) and takes
projected L-BFGS steps until the smoothed objective's relative decrease falls below
``tol``; the exact LP optimum over the final columns is then found by the m-slack polish
(:class:`maxmargin.solvers.lp_master.NSlackLP`).  The smoothing and its derivation are
in docs/structboost.md ("the fast master").

For label-coding tasks (binary, multi-class, hierarchy) whose classifiers fill most slots,
the steps run compiled (:mod:`maxmargin.solvers._smoothed_kernels`): the same two-loop
recursion, projection, line search and log-sum-exp risk, without Python's per-step
overhead.  Other tasks (ranking, chains, tasks with their own smoothed risk) take the
Python steps of :meth:`SmoothedProblem.solve`.
"""

from __future__ import annotations

import time

import numpy as np

from maxmargin.solvers._smoothed_kernels import (
    NEWTON_MIN_EXP,
    SPARSE_FILL,
    coded_smoothed_steps,
)
from maxmargin.solvers.columns import ColumnStore
from maxmargin.tasks.base import LabelCodingTask, StructuredTask
from maxmargin.tasks.smoothing import SmoothedRisk

__all__ = ["SmoothedProblem"]

#: smoothing sharpness in units of 1 / (largest loss): the LSE is within
#: log(K) / beta of the max, i.e. 2 % of the loss range per example at worst
BETA = 50.0
ARMIJO = 1e-4
#: scores are updated in float32 by each step and recomputed exactly after this many
REFRESH_STEPS = 100
#: classifiers whose columns the L-BFGS steps move between two full refreshes (the
#: working set): the newest ones and those with the largest projected gradient at the
#: last refresh.  A step then costs O(WORKING_SET * n) products instead of the whole
#: model's, and a full refresh (every column's gain) is made once the iterations since
#: the last one times WORKING_SET reach the number of classifiers -- amortised, the same
#: O(WORKING_SET * n) per iteration, so a fit's cost is linear in its iterations.
WORKING_SET = 64


class SmoothedProblem:
    """Projected L-BFGS on the smoothed restricted master, warm-started across columns.

    Parameters
    ----------
    task : StructuredTask with ``smooth_master`` (its :meth:`smoothed_risk`)
    store : ColumnStore
    C : float
    tol : float
        Inner loop stops when one step lowers the smoothed objective by less than
        ``tol`` relative to its value.
    max_steps : int
        At most this many L-BFGS steps per call of :meth:`solve`.
    memory : int
        Number of L-BFGS correction pairs kept (across column additions).
    """

    def __init__(
        self,
        task: StructuredTask,
        store: ColumnStore,
        C: float,
        *,
        tol: float = 1e-5,
        max_steps: int = 100,
        memory: int = 10,
        beta: float = BETA,
        working_set: int | None = WORKING_SET,
    ) -> None:
        self.task, self.store, self.C = task, store, float(C)
        self.m = task.n_samples
        self.beta = float(beta) / task.smoothing_scale()
        self.tol, self.max_steps, self.memory = float(tol), int(max_steps), int(memory)
        self.working_set = None if working_set is None else max(1, int(working_set))
        self.ws = np.zeros(0, dtype=np.int64)  # columns the steps move (sorted)
        self._since_refresh = 0  # column additions since the last full refresh
        self._pinned = False  # a working set set from outside (the certificate's)
        self.n_refresh = 0
        self.w = np.zeros(0)
        self.gains = np.zeros(0)
        self.F = np.zeros((store.n_z, store.n_slots))
        self._pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.t_oracle = 0.0  # seconds in the task's smoothed risk
        self._accept(self.w, self.F, self._evaluate(self.F))
        self._steps_since_exact = 0
        self.n_steps_total = 0
        #: the compiled steps' line search: trial points, failures (diagnostics)
        #: and the Newton flag: 1 when the next step starts from the Newton step length
        #: (``line_search="newton"``: after new columns, a new working set or new weights,
        #: and after a step that backtracked or started below 1)
        self.ls_stats = np.array([0, 0, 1], dtype=np.int64)
        #: take the steps in the compiled kernel when the task allows it (False: always
        #: the Python steps, e.g. to compare the two)
        self.compiled = True
        #: the compiled steps' first line-search trial: "halving" -- t = 1, then halved;
        #: "newton" -- the Newton step length along the direction (a power of two <= 1)
        self.line_search = "newton"
        #: the compiled steps may take their products column by column when the working
        #: set holds few of its classifiers' (classifier, slot) pairs
        #: (``_smoothed_kernels.SPARSE_FILL``; False: always the dense products)
        self.sparse_products = True
        #: the last compiled call's working-set outputs (:meth:`_ws_outputs`)
        self._ws_cache: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None

    # -- the objective -------------------------------------------------------------------
    def _evaluate(self, F: np.ndarray) -> float:
        """Smoothed restricted objective without the 1'w term (the risk is kept)."""
        t0 = time.perf_counter()
        value, self._trial = self.task.smoothed_value(F, self.beta)
        self.t_oracle += time.perf_counter() - t0
        return self.C * value

    def _accept(self, w: np.ndarray, F: np.ndarray, loss_term: float) -> None:
        """Make (w, F) current (``loss_term`` from :meth:`_evaluate` at F): duals, signed
        weights, gradient, objective values."""
        self.w, self.F, self._loss_term = w, F, loss_term
        t0 = time.perf_counter()
        self.risk = self.task.complete_smoothed_risk(F, self.beta, self._trial)
        self.t_oracle += time.perf_counter() - t0
        self._trial = None
        self.xi = self.risk.risk
        self.A = self.C * self.risk.weights
        if len(self.ws) == self.store.n_columns:
            self.gains = self.store.gains(self.A, fast=True)
        else:  # the working set's gains; the others keep those of the last refresh
            self._pad_gains()
            self.gains[self.ws] = self.store.gains_of(self.A, self.ws, fast=True)
        self.grad = 1.0 - self.gains
        self.smooth_objective = float(w.sum()) + self._loss_term
        self.objective = float(w.sum()) + self.C * self.xi

    @property
    def P(self):
        """The task's smoothing support at the current point (the softmax for listed
        outputs)."""
        return self.risk.support

    @property
    def dual_bound(self) -> float:
        """Lower bound on the restricted master's optimum from the current mu (gains
        recomputed in float64, so the bound is exact)."""
        gains = self.store.gains(self.A)
        g = float(gains.max()) if len(gains) else 0.0
        return self.C * self.risk.dual / max(1.0, g)

    # -- columns -------------------------------------------------------------------------
    def add_columns(self, cols: np.ndarray) -> None:
        """New columns enter at w = 0; their gradient comes from the current duals."""
        k = len(cols)
        if k == 0:
            return
        st = self.store
        hs, ss = st.col_hyp[cols], st.col_slot[cols]
        g_new = np.empty(k)
        for s in np.unique(ss):  # one product per slot (not per column)
            at = np.flatnonzero(ss == s)
            h = hs[at]
            if h[-1] - h[0] == len(h) - 1 and np.all(np.diff(h) == 1):
                rows = st.H[h[0] : h[-1] + 1]  # consecutive classifiers: a view, no copy
            else:
                rows = st.H[h]
            g_new[at] = rows @ self.A[:, s]
        self.w = np.concatenate([self.w, np.zeros(k)])
        self.gains = np.concatenate([self.gains, g_new])
        self.grad = 1.0 - self.gains
        z = np.zeros(k)
        self._pairs = [(np.concatenate([s, z]), np.concatenate([y, z])) for s, y in self._pairs]
        self.ws = np.concatenate([self.ws, np.asarray(cols, dtype=np.int64)])
        self._since_refresh += 1
        self._pinned = False
        self.ls_stats[2] = 1

    def outside_working_set(self, cols) -> np.ndarray:
        """The columns of ``cols`` that the steps do not move now."""
        cols = np.asarray(cols, dtype=np.int64)
        if len(self.ws) == self.store.n_columns:
            return cols[:0]
        return cols[~np.isin(cols, self.ws)]

    def activate(self, cols) -> None:
        """Stored columns whose weights were held join the working set (priced again:
        their gain under the current duals exceeds 1).  Their gains are recomputed; the
        L-BFGS pairs get zeros at the new positions."""
        cols = self.outside_working_set(cols)
        if len(cols) == 0:
            return
        self._pad_gains()
        self.gains[cols] = self.store.gains_of(self.A, cols, fast=True)
        self.grad = 1.0 - self.gains
        self.ws = np.concatenate([self.ws, cols])
        self.ls_stats[2] = 1
        z = np.zeros(len(cols))
        self._pairs = [(np.concatenate([s, z]), np.concatenate([y, z])) for s, y in self._pairs]
        self._pinned = False
        if len(self.ws) == self.store.n_columns:  # every column: the natural order
            self.ws = np.arange(self.store.n_columns)
            self._pairs = []

    def pin_working_set(self, cols) -> None:
        """Move exactly the columns ``cols`` (with every gain current) until columns are
        added; the L-BFGS memory is dropped."""
        self.ws = np.unique(np.asarray(cols, dtype=np.int64))
        self._pinned = True
        self._pairs = []
        self.ls_stats[2] = 1

    def _pad_gains(self) -> None:
        n = self.store.n_columns
        if len(self.gains) < n:
            self.gains = np.concatenate([self.gains, np.zeros(n - len(self.gains))])

    # -- the working set -----------------------------------------------------------------
    def _ws_hyps(self) -> int:
        return len(np.unique(self.store.col_hyp[self.ws])) if len(self.ws) else 0

    def _maybe_refresh(self) -> None:
        """Full refresh when due: every column's gain from the current duals, and a new
        working set (no-op while the model has at most ``working_set`` classifiers)."""
        st, cap = self.store, self.working_set
        if self._pinned:
            return
        if cap is None or st.n_hyp <= cap:
            if len(self.ws) != st.n_columns or not np.array_equal(self.ws, np.arange(st.n_columns)):
                self.ws = np.arange(st.n_columns)
                self.gains = st.gains(self.A, fast=True)
                self.grad = 1.0 - self.gains
                self._pairs = []
            return
        due = self._since_refresh * cap >= st.n_hyp or self._ws_hyps() > 2 * cap
        if len(self.ws) == st.n_columns or due:
            self.refresh()

    def refresh(self) -> None:
        """Every column's gain from the current duals; the working set becomes the
        ``working_set`` classifiers with the largest projected gradient (summed over their
        columns).  The L-BFGS memory is dropped (its pairs
        saw only the old working set's gradient)."""
        st = self.store
        self.gains = st.gains(self.A, fast=True)
        self.grad = 1.0 - self.gains
        self.n_refresh += 1
        self._since_refresh = 0
        self._pairs = []
        self.ls_stats[2] = 1
        cap = self.working_set
        if cap is None or st.n_hyp <= cap:
            self.ws = np.arange(st.n_columns)
            return
        pg = np.where(self.w > 0, np.abs(self.grad), np.maximum(-self.grad, 0.0))
        score = np.bincount(st.col_hyp, weights=pg, minlength=st.n_hyp)
        order = np.argsort(-score, kind="stable")[:cap]  # ties: the older classifier
        chosen = order[score[order] > 0]
        self.ws = np.flatnonzero(np.isin(st.col_hyp, chosen))

    def set_weights(self, w: np.ndarray, keep_memory: bool = False) -> None:
        """Restart from given weights (e.g. the exact LP solution after a polish); the
        scores are recomputed in float64."""
        w = np.maximum(np.asarray(w, dtype=np.float64), 0.0)
        n_old = len(self.w)
        if len(w) > n_old:  # columns the master has not seen yet join the working set
            self.ws = np.concatenate([self.ws, np.arange(n_old, len(w))])
            self._pinned = False
            keep_memory = False
        F = self.store.scores(w)
        self._accept(w, F, self._evaluate(F))
        self._steps_since_exact = 0
        if not keep_memory:
            self.ls_stats[2] = 1
        if not keep_memory:
            self._pairs = []

    def make_exact(self) -> bool:
        """Recompute the scores at the current ``w`` in float64, so that ``objective`` and
        ``xi`` are the true primal at ``w`` (the steps update the scores from the float32
        outputs, about 1e-8 relative off after many steps); True if they were stale."""
        if self._steps_since_exact == 0:
            return False
        self.set_weights(self.w, keep_memory=True)
        return True

    def sharpen(self, factor: float, deadline: float | None = None) -> int:
        """Re-solve with ``beta * factor`` to a tight tolerance (a sharper smoothing is
        closer to the LP's vertex, so fewer rows and simplex steps are left to the exact
        polish), then return to the normal beta at the new point.  Returns the steps."""
        beta, tol, max_steps = self.beta, self.tol, self.max_steps
        self.beta, self.tol, self.max_steps = beta * factor, 1e-6, 2 * max_steps
        try:
            self.set_weights(self.w)
            steps = self.solve(deadline)
        finally:
            self.beta, self.tol, self.max_steps = beta, tol, max_steps
        self._sharp_P = self.P  # the sharper support, for the polish's starting rows
        self.set_weights(self.w)
        return steps

    # -- projected L-BFGS ----------------------------------------------------------------
    def _direction(self, g: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Two-loop recursion on the free coordinates."""
        q = g.copy()
        used = []
        for s, y in reversed(self._pairs):
            sf, yf = s * free, y * free
            sy = float(sf @ yf)
            if sy <= 1e-12 * max(float(sf @ sf), 1e-300) ** 0.5 * max(float(yf @ yf), 0) ** 0.5:
                continue
            a = float(sf @ q) / sy
            q -= a * yf
            used.append((a, sy, sf, yf))
        if used:
            _, sy, _, yf = used[0]
            q *= sy / float(yf @ yf)
        else:
            q /= max(float(np.abs(g).max()), 1e-300)
        for a, sy, sf, yf in reversed(used):
            b = float(yf @ q) / sy
            q += (a - b) * sf
        return -q * free

    def _coded(self) -> bool:
        """Whether the compiled steps apply: a label-coding task that keeps the base
        class's smoothed risk (log-sum-exp over its coded margins) and classifiers in most
        slots (the dense products of :class:`ColumnStore`)."""
        return self.compiled and self._coded_task()

    def _coded_task(self) -> bool:
        """:meth:`_coded` without the ``compiled`` switch (the tasks where the Newton
        step length of ``line_search="newton"`` applies, on either path)."""
        task = self.task
        if not isinstance(task, LabelCodingTask):
            return False
        cls = type(task)
        for name in ("dense_margins", "dense_weak_weights", "slot_scores_to_label_scores"):
            if getattr(cls, name) is not getattr(LabelCodingTask, name):
                return False
        for name in ("smoothed_risk", "smoothed_value", "complete_smoothed_risk"):
            if getattr(cls, name) is not getattr(StructuredTask, name):
                return False
        return self.store.n_columns > 0 and not self.store._sparse_slots()

    def _column_products(self, n_cols: int, n_hyps: int) -> bool:
        """Whether the compiled steps take their products column by column: the working
        set's ``n_cols`` columns are at most ``1 / SPARSE_FILL`` of its ``n_hyps``
        classifiers' (classifier, slot) pairs (the certificate's screened set: columns of
        positive weight, a few slots of each shared stump), so the dense products would
        do several times the needed work."""
        return self.sparse_products and SPARSE_FILL * n_cols <= n_hyps * self.store.n_slots

    def _ws_outputs(self, hs: np.ndarray, transposed: bool) -> tuple[np.ndarray, np.ndarray]:
        """``(Hws, HwsT)``: the float32 outputs of the classifiers ``hs`` (sorted), as
        contiguous (len(hs), n_z) and -- if ``transposed``, else an empty array -- (n_z,
        len(hs)) copies for the compiled steps.  The store only appends classifiers, so the
        last call's copies are reused when ``hs`` is the same (the certificate's rounds,
        ``tighten``) or extends it at the end (an iteration's new classifier): then only the
        new rows are copied and transposed, not the whole working set's."""
        st = self.store
        cached = self._ws_cache
        n0 = 0
        if cached is not None:
            hs0, Hws0, HwsT0 = cached
            k = len(hs0)
            if k <= len(hs) and np.array_equal(hs0, hs[:k]):
                n0 = k
        if n0 == 0:
            Hws = np.ascontiguousarray(st.H32[hs])
            HwsT0 = None
        elif n0 == len(hs):
            Hws = Hws0
        else:
            Hws = np.concatenate([Hws0, st.H32[hs[n0:]]])
        if not transposed:
            HwsT = np.empty((0, 0), dtype=np.float32)
        elif n0 == 0 or HwsT0 is None or HwsT0.shape[1] != n0:
            HwsT = np.ascontiguousarray(Hws.T)
        elif n0 == len(hs):
            HwsT = HwsT0
        else:
            HwsT = np.empty((Hws.shape[1], len(hs)), dtype=np.float32)
            HwsT[:, :n0] = HwsT0
            HwsT[:, n0:] = Hws[n0:].T
        self._ws_cache = (hs, Hws, HwsT if transposed else None)
        return Hws, HwsT

    def _solve_coded(self, deadline: float | None) -> int:
        """The steps of :meth:`solve` in :func:`coded_smoothed_steps` (one compiled call
        per step when a deadline is set, else one for all of them)."""
        st, task = self.store, self.task
        ws = np.ascontiguousarray(self.ws, dtype=np.int64)
        n = len(ws)
        hs, row = np.unique(st.col_hyp[ws], return_inverse=True)
        sparse = self._column_products(n, len(hs))
        Hws, HwsT = self._ws_outputs(hs, not sparse)
        slot = np.ascontiguousarray(st.col_slot[ws], dtype=np.int64)
        row = np.ascontiguousarray(row.reshape(-1), dtype=np.int64)
        S = np.zeros((self.memory, n))
        Y = np.zeros((self.memory, n))
        pairs = self._pairs[-self.memory :]
        for p, (s, y) in enumerate(pairs):
            S[p], Y[p] = s, y
        n_pairs = len(pairs)
        w_all = np.array(self.w, dtype=np.float64)
        g_ws = np.ascontiguousarray(self.grad[ws], dtype=np.float64)
        F = np.ascontiguousarray(self.F, dtype=np.float64)
        gamma = np.ascontiguousarray(task.gamma_, dtype=np.float64)
        gamma_true = np.ascontiguousarray(task._gamma_true, dtype=np.float64)
        y = np.ascontiguousarray(task.y_, dtype=np.int64)
        delta = np.ascontiguousarray(task.delta_, dtype=np.float64)
        f0 = self.smooth_objective
        gains_ws = np.empty(n)
        steps = 0
        P = None
        P0 = np.ascontiguousarray(self.P, dtype=np.float64)  # the softmax at the current w
        while steps < self.max_steps:
            chunk = self.max_steps - steps if deadline is None else 1
            t0 = time.perf_counter()
            k, n_pairs, stop, F, Pk, hinge, lse, f0 = coded_smoothed_steps(
                w_all, ws, F, g_ws, HwsT, Hws, row, slot, len(hs), gamma, gamma_true,
                bool(task._identity_coding), y, delta, self.beta, self.C, self.tol, chunk,
                S, Y, n_pairs, f0, gains_ws, self.ls_stats, P0, self.line_search == "newton",
                sparse,
            )  # fmt: skip
            self.t_oracle += time.perf_counter() - t0
            if k:
                P, steps = Pk, steps + k
                P0 = Pk
                self._steps_since_exact += k
            if stop or (deadline is not None and time.perf_counter() > deadline):
                break
        self._pairs = [(S[p].copy(), Y[p].copy()) for p in range(n_pairs)]
        if P is not None:  # the state at the last accepted point, as _accept makes it
            m = self.m
            dual = float(np.einsum("ij,ij->", P, task._dense_losses_cached())) / m
            self.risk = SmoothedRisk(hinge / m, lse / m, task.dense_weak_weights(P / m), dual, P)
            self.w, self.F, self._loss_term = w_all, F, self.C * (lse / m)
            self.xi = self.risk.risk
            self.A = self.C * self.risk.weights
            self._pad_gains()
            self.gains[ws] = gains_ws
            self.grad = 1.0 - self.gains
            self.smooth_objective = float(w_all.sum()) + self._loss_term
            self.objective = float(w_all.sum()) + self.C * self.xi
        self.n_steps_total += steps
        return steps

    def _curvature(self, cd: np.ndarray) -> float:
        """``d'Hd`` of the smoothed objective at the current point for a direction whose
        slot-score change is ``cd = H'd`` (label-coding tasks): ``(beta C / m) sum_i
        (sum_k p_ik u_ik^2 - (sum_k p_ik u_ik)^2)``, ``u`` the change of the coded
        margins, ``p`` the current softmax -- the log-sum-exp's Hessian ``beta (diag p -
        p p')`` per example."""
        task = self.task
        V = task.slot_scores_to_label_scores(cd)
        m = self.m
        u = V - V[np.arange(m), task.y_][:, None]
        P = self.P
        q = float(((P * u * u).sum(axis=1) - (P * u).sum(axis=1) ** 2).sum())
        return q * self.beta * self.C / m

    def _newton_length(self, d, gf, d_all):
        """``(t, H'd)``: the Newton step length along ``d`` of
        :func:`~maxmargin.solvers._smoothed_kernels._newton_length` (the same quantity on
        the Python path; ``(1.0, None)`` when ``g'd >= 0``)."""
        gd = float(gf @ d)
        if not gd < 0.0:
            return 1.0, None
        cd = self.store.shifted_scores(np.zeros_like(self.F), d_all)
        q = self._curvature(cd)
        if not q > 0.0:
            return 1.0, cd
        tn = -gd / q
        if tn >= 1.0:
            return 1.0, cd
        e = max(float(np.round(np.log2(tn))), -float(NEWTON_MIN_EXP))
        return 2.0**e, cd

    def solve(self, deadline: float | None = None) -> int:
        """Projected L-BFGS steps from the current w over the working set (the other
        columns keep their weights); returns the number of steps.  Vectors and the
        L-BFGS pairs live on the working set's columns, in its order."""
        st = self.store
        if self._steps_since_exact >= REFRESH_STEPS:  # float32 updates drift slowly
            self.set_weights(self.w, keep_memory=True)
        self._maybe_refresh()
        if self._coded():
            return self._solve_coded(deadline)
        ws = self.ws
        full = len(ws) == st.n_columns
        newton = self.line_search == "newton" and self._coded_task()
        steps = 0
        while steps < self.max_steps:
            w_all = self.w
            w, g = (w_all, self.grad) if full else (w_all[ws], self.grad[ws])
            free = (w > 0) | (g < 0)
            if not free.any():
                break
            gf = np.where(free, g, 0.0)
            d = self._direction(gf, free)
            if float(d @ gf) >= 0.0:  # not a descent direction: drop the memory
                self._pairs = []
                d = self._direction(gf, free)
            f0 = self.smooth_objective
            t = 1.0
            accepted = False
            dw_all = np.zeros(st.n_columns) if not full else None
            cd = None  # H'd, when the Newton step length was computed
            if newton and (self.ls_stats[2] or not self._pairs):
                d_all = d if full else np.zeros(st.n_columns)
                if not full:
                    d_all[ws] = d
                t, cd = self._newton_length(d, gf, d_all)
            t_first, n_trials = t, 0
            for _ in range(40):
                n_trials += 1
                wt = w + t * d
                scaled = cd is not None and wt.min() >= 0.0
                if scaled:  # nothing clipped: the step is t d, its product t H'd
                    dw = t * d
                else:
                    wt = np.maximum(wt, 0.0)
                    dw = wt - w
                if full:
                    dw_all = dw
                else:
                    dw_all[ws] = dw
                Ft = self.F + cd * t if scaled else st.shifted_scores(self.F, dw_all)
                loss_t = self._evaluate(Ft)
                ft = float(w_all.sum() + dw.sum()) + loss_t
                if ft <= f0 + ARMIJO * float(g @ dw):
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                break
            self.ls_stats[2] = int(n_trials > 1 or t_first != 1.0)
            if full:
                wt_all = wt
            else:
                wt_all = w_all.copy()
                wt_all[ws] = wt
            self._accept(wt_all, Ft, loss_t)
            steps += 1
            self._steps_since_exact += 1
            s, y = dw, (self.grad if full else self.grad[ws]) - g
            if float(s @ y) > 1e-12:
                self._pairs.append((s, y))
                if len(self._pairs) > self.memory:
                    self._pairs.pop(0)
            if f0 - ft <= self.tol * max(abs(ft), 1e-12):
                break
            if deadline is not None and time.perf_counter() > deadline:
                break
        self.n_steps_total += steps
        return steps
