"""The fast restricted master of StructBoost: log-sum-exp smoothed hinge, projected L-BFGS.

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured Output
Variables", IEEE TPAMI 36(10), 2014.

For a task whose outputs can be listed (binary, multi-class, hierarchy, label-augmented,
pairwise ranking, sampled boxes ...), the restricted master over the current columns --
eq. (3), equivalently eq. (9) by Theorem 2.1 -- is, with the slacks eliminated,

    min_{w >= 0}  P(w) = 1'w + (C/m) sum_i max_y a_iy(w),   a_iy = Delta(y_i, y) - w.dPsi_i(y),

where ``a_(i, y_i) = 0``, so the max is the hinge.  Replacing the max by
``(1/beta) log sum_y exp(beta a_iy)`` gives a smooth convex ``P_beta`` with

    P(w) <= P_beta(w) <= P(w) + C log(K) / beta,

whose gradient is ``1 - gain_j(mu)`` with ``mu_iy = (C/m) softmax_y(beta a_i)_y``.  These
``mu`` are feasible for the box constraints of the m-slack dual (``mu >= 0``,
``sum_y mu_iy <= C/m``), so they go straight to the weak learners as signed weights
(eq. 11), and every iterate carries a lower bound: for *any* box-feasible mu,

    D(mu) = sum_iy mu_iy Delta(y_i, y) / max(1, max_j gain_j(mu))  <=  min P

(scaling mu down by the largest column gain makes it dual feasible).  Each column-
generation iteration warm-starts from the previous w (new columns at 0) and takes
projected L-BFGS steps until the smoothed objective's relative decrease falls below
``tol``; the exact LP optimum over the final columns is then found by the m-slack polish
(:class:`maxmargin.solvers.lp_master.MSlackLP`).  The smoothing and its derivation are
in docs/structboost.md ("the fast master").
"""

from __future__ import annotations

import time

import numpy as np

from maxmargin.solvers.columns import ColumnStore
from maxmargin.tasks.base import StructuredTask

__all__ = ["SmoothedMaster"]

#: smoothing sharpness in units of 1 / (largest loss): the LSE is within
#: log(K) / beta of the max, i.e. 2 % of the loss range per example at worst
BETA = 50.0
ARMIJO = 1e-4
#: scores are updated in float32 by each step and recomputed exactly after this many
REFRESH_STEPS = 100


class SmoothedMaster:
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
    ) -> None:
        self.task, self.store, self.C = task, store, float(C)
        self.m = task.n_samples
        self.beta = float(beta) / task.smoothing_scale()
        self.tol, self.max_steps, self.memory = float(tol), int(max_steps), int(memory)
        self.w = np.zeros(0)
        self.F = np.zeros((store.n_z, store.n_slots))
        self._pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.t_oracle = 0.0  # seconds in the task's smoothed risk
        self._accept(self.w, self.F, self._evaluate(self.F))
        self._steps_since_exact = 0
        self.n_steps_total = 0

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
        self.gains = self.store.gains(self.A, fast=True)
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

    def set_weights(self, w: np.ndarray, keep_memory: bool = False) -> None:
        """Restart from given weights (e.g. the exact LP solution after a polish); the
        scores are recomputed in float64."""
        w = np.maximum(np.asarray(w, dtype=np.float64), 0.0)
        F = self.store.scores(w)
        self._accept(w, F, self._evaluate(F))
        self._steps_since_exact = 0
        if not keep_memory:
            self._pairs = []

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

    def solve(self, deadline: float | None = None) -> int:
        """Projected L-BFGS steps from the current w; returns the number of steps."""
        st = self.store
        if self._steps_since_exact >= REFRESH_STEPS:  # float32 updates drift slowly
            self.set_weights(self.w, keep_memory=True)
        steps = 0
        while steps < self.max_steps:
            w, g = self.w, self.grad
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
            for _ in range(40):
                wt = np.maximum(w + t * d, 0.0)
                dw = wt - w
                Ft = st.shifted_scores(self.F, dw)
                loss_t = self._evaluate(Ft)
                ft = float(wt.sum()) + loss_t
                if ft <= f0 + ARMIJO * float(g @ dw):
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                break
            self._accept(wt, Ft, loss_t)
            steps += 1
            self._steps_since_exact += 1
            s, y = dw, self.grad - g
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
