"""n-slack working-set training of linear structured SVMs.

[Nowozin2011] "working set training" / Tsochantaridis et al., JMLR 2005
[Tsochantaridis2005 Alg. 1]; [Sun2012] Sec. 2.5.2 ([Sun2012 eqs. 2.106-2.107]); keys of
docs/references.md.  Every example i keeps its own working set of labellings
``y_ic`` with constraints ``<w, a_ic> >= b_ic - xi_i`` where ``a_ic = s_ic dPsi_i(y_ic)``,
``b_ic = Delta(y_i, y_ic)`` and ``s_ic = 1`` (margin rescaling) or ``s_ic = Delta`` (slack
rescaling).  The working-set dual

    max  sum_ic alpha_ic b_ic - 1/2 ||sum_ic alpha_ic a_ic||^2
    s.t. alpha >= 0,  sum_c alpha_ic <= C/n   for every i

is solved by block-coordinate ascent: one block per example, each block solved (to a
small tolerance) by SMO pairwise steps over its constraints plus the slack variable,
with ``w = sum alpha a`` updated in place (a sequential dual method as in Keerthi et al.,
KDD 2008 [Keerthi2008], for Crammer-Singer; the block Gram matrix comes from the per-sequence input
Gram, so constraint vectors are never stored).  The outer loop calls the batch oracle,
records the exact primal, the dual value (feasible alpha, hence a lower bound) and adds
each example's most violated labelling to its working set.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from numba import njit

from maxmargin._validation import as_generator
from maxmargin.inference.viterbi import chain_score
from maxmargin.solvers.cutting_plane import Plane, UnstabilisedPlanes, kelley_loop
from maxmargin.solvers.monitor import GapMonitor, SSVMResult
from maxmargin.solvers.qp_master import capped_simplex_smo_steps, refuse_nonneg
from maxmargin.tasks.linear import (
    LinearJointModel,
    add_dpsi,
    dpsi_dot,
    rescaled_hinge,
    seq_unary,
)

__all__ = ["fit_n_slack"]


class WorkingSetArrays(NamedTuple):
    """Per-example working sets as one numba argument: example i holds ``cnt[i]``
    labellings ``lab[i, c, :T_i]`` with loss ``b[i, c]``, rescaling ``s[i, c]``, Gram
    ``G[i, c, c'] = <a_ic, a_ic'>`` and multiplier ``alpha[i, c]``."""

    lab: np.ndarray
    cnt: np.ndarray
    b: np.ndarray
    s: np.ndarray
    G: np.ndarray
    alpha: np.ndarray


class SequenceGram(NamedTuple):
    """Input Gram matrices of every sequence (flat, ``gram[goff[i]:goff[i+1]]``) and the
    state-coding Gram ``GG = Gamma Gamma^T``: enough for ``<dPsi_i(y), dPsi_i(y')>``."""

    goff: np.ndarray
    gram: np.ndarray
    GG: np.ndarray


@njit(cache=True)
def _add_constraints(idx, labels, loss, slack, L, SG, ws):
    """Append labelling ``labels[offsets[i]:offsets[i+1]]`` to example i's working set.

    Skips duplicates; returns the number added (caller guarantees capacity).
    """
    added = 0
    for i in idx:
        a, b = L.offsets[i], L.offsets[i + 1]
        T = b - a
        yh = labels[a:b]
        yt = L.ytrue[a:b]
        cnt = ws.cnt[i]
        dup = False
        for c in range(cnt):
            same = True
            for t in range(T):
                if ws.lab[i, c, t] != yh[t]:
                    same = False
                    break
            if same:
                dup = True
                break
        if dup:
            continue
        for t in range(T):
            ws.lab[i, cnt, t] = yh[t]
        s = loss[i] if slack else 1.0
        ws.b[i, cnt] = loss[i]
        ws.s[i, cnt] = s
        ws.alpha[i, cnt] = 0.0
        gi = SG.gram[SG.goff[i] : SG.goff[i + 1]]
        for c in range(cnt + 1):
            v = s * ws.s[i, c] * dpsi_dot(gi, T, SG.GG, yt, yh, ws.lab[i, c, :T], L.pairwise)
            ws.G[i, cnt, c] = v
            ws.G[i, c, cnt] = v
        ws.cnt[i] = cnt + 1
        added += 1
    return added


@njit(cache=True)
def _margins(i, w, P, L, ws, U, out):
    """``out[c] = <w, a_ic>`` for the working set of example i."""
    a, b = L.offsets[i], L.offsets[i + 1]
    T = b - a
    W = w[: L.n_unary].reshape((L.n_unary // L.S, L.S))
    seq_unary(L.indptr, L.indices, L.data, a, b, W, L.gamma, L.onehot, U)
    Ui = U[:T]
    st = chain_score(Ui, P, L.ytrue[a:b], L.pairwise)
    for c in range(ws.cnt[i]):
        out[c] = ws.s[i, c] * (st - chain_score(Ui, P, ws.lab[i, c, :T], L.pairwise))


@njit(cache=True)
def _block_pass(order, w, L, ws, Cn, max_steps, tol, gaps):
    """One sweep of block maximisations over the examples in ``order``.

    Each block is the dual of example i's constraints, ``max sum_c alpha_c b_c -
    1/2 ||sum_c alpha_c a_c||^2`` over ``alpha >= 0, sum alpha <= C/n`` with the rest of
    w fixed: the same simplex-constrained QP as the 1-slack master, solved by the same
    SMO steps (:func:`~maxmargin.solvers.qp_master.capped_simplex_smo_steps`).  ``gaps[i]`` receives
    example i's block duality gap before its update; their sum over a sweep estimates
    the working-set duality gap (exact when w does not move).
    """
    cap = ws.b.shape[1]
    Tmax = ws.lab.shape[2]
    U = np.empty((Tmax, L.K))
    P = w[L.n_unary :].reshape((L.K, L.K)) if L.pairwise else np.zeros((L.K, L.K))
    aw = np.empty(cap)
    g = np.empty(cap)
    old = np.empty(cap)
    for i in order:
        cnt = ws.cnt[i]
        if cnt == 0:
            continue
        _margins(i, w, P, L, ws, U, aw)
        lam = ws.alpha[i]
        for c in range(cnt):
            g[c] = aw[c] - ws.b[i, c]
            old[c] = lam[c]
        gaps[i], _, _ = capped_simplex_smo_steps(ws.G[i], g, lam, cnt, Cn, tol, max_steps)
        for c in range(cnt):
            d = lam[c] - old[c]
            if d != 0.0:
                add_dpsi(w, L, i, ws.lab[i, c], d * ws.s[i, c])


@njit(cache=True)
def _ws_hinge(w, L, ws, out):
    """Working-set hinge ``max(0, max_c b_ic - <w, a_ic>)`` of every example."""
    cap = ws.b.shape[1]
    Tmax = ws.lab.shape[2]
    U = np.empty((Tmax, L.K))
    P = w[L.n_unary :].reshape((L.K, L.K)) if L.pairwise else np.zeros((L.K, L.K))
    aw = np.empty(cap)
    for i in range(L.offsets.shape[0] - 1):
        h = 0.0
        if ws.cnt[i] > 0:
            _margins(i, w, P, L, ws, U, aw)
            for c in range(ws.cnt[i]):
                v = ws.b[i, c] - aw[c]
                if v > h:
                    h = v
        out[i] = h


class _WorkingSets:
    """Per-example working sets with growable capacity."""

    def __init__(self, model: LinearJointModel, cap: int = 8):
        n, T = model.n_samples, model.max_length
        self.cnt = np.zeros(n, dtype=np.int64)
        self._alloc(n, cap, T)

    def _alloc(self, n, cap, T):
        self.lab = np.zeros((n, cap, T), dtype=np.int64)
        self.b = np.zeros((n, cap))
        self.s = np.zeros((n, cap))
        self.G = np.zeros((n, cap, cap))
        self.alpha = np.zeros((n, cap))

    def arrays(self) -> WorkingSetArrays:
        return WorkingSetArrays(self.lab, self.cnt, self.b, self.s, self.G, self.alpha)

    def ensure(self, extra: int = 1) -> None:
        cap = self.b.shape[1]
        if self.cnt.max(initial=0) + extra <= cap:
            return
        old = (self.lab, self.b, self.s, self.G, self.alpha)
        n, _, T = self.lab.shape
        self._alloc(n, 2 * cap, T)
        self.lab[:, :cap] = old[0]
        self.b[:, :cap] = old[1]
        self.s[:, :cap] = old[2]
        self.G[:, :cap, :cap] = old[3]
        self.alpha[:, :cap] = old[4]


class _NSlackPlanes(UnstabilisedPlanes):
    """:class:`~maxmargin.solvers.cutting_plane.PlaneProblem` of the n-slack solver: a
    round's "plane" is the batch of every example's most violated labelling; adding it
    grows the per-example working sets where it beats them, and solving runs block
    passes of the dual until the working-set gap meets its target."""

    def __init__(self, model, C, rescaling, tol, max_passes, max_complete, rng, tr):
        self.model, self.C, self.rescaling, self.tol = model, C, rescaling, tol
        self.max_passes, self.rng, self.tr = max_passes, rng, tr
        self.slack = rescaling == "slack"
        self.L = L = model.layout()
        self.SG = SequenceGram(*model.seq_gram(), np.ascontiguousarray(model.gamma @ model.gamma.T))
        self.ws = _WorkingSets(model)
        self.w = np.zeros(model.dim)
        self.wsh = np.zeros(model.n_samples)
        self.t_oracle = self.t_inner = 0.0
        self.added = 0
        self.stopped = False
        # optional (max_complete >= K): start flat tasks from the complete working set
        # (all K-1 wrong labels per example), i.e. a sequential dual method on the full QP
        # as in liblinear's Crammer-Singer solver; measured slower than growing the
        # working sets on digits (docs/ssvm.md), hence off by default
        self.complete = model.max_length == 1 and model.n_states <= max_complete
        if self.complete:
            self.ws.ensure(model.n_states)
            rows = np.arange(model.n_samples)
            for k in range(model.n_states):
                lab = np.full(model.n_samples, k, dtype=np.int64)
                loss = model.loss[model.y, k]
                _add_constraints(
                    rows[model.y != k], lab, loss, self.slack, L, self.SG, self.ws.arrays()
                )

    def point(self, sol):
        return self.w

    def query(self, w) -> Plane:
        t0 = time.perf_counter()
        model, tr = self.model, self.tr
        labels, loss, margin = model.loss_augmented(w, self.rescaling)
        tr.n_oracle += 1
        hinge = rescaled_hinge(loss, margin, self.rescaling)
        tr.offer_primal(model.objective(w, self.C, hinge), w)
        tr.offer_dual(float(np.sum(self.ws.alpha * self.ws.b)) - 0.5 * float(w @ w))
        self.t_oracle += time.perf_counter() - t0
        return Plane(b=0.0, payload=(labels, loss, hinge))

    def stop(self, rnd, best, sol):
        self.stopped = self.tr.converged()
        return "converged" if self.stopped else None

    def add(self, plane, sol) -> bool:
        # add the most violated labelling where it beats the working set
        labels, loss, hinge = plane.payload
        ws, tr = self.ws, self.tr
        _ws_hinge(self.w, self.L, ws.arrays(), self.wsh)
        thresh = 0.1 * self.tol * tr.best_primal / self.C
        idx = np.flatnonzero(hinge > self.wsh + thresh)
        ws.ensure(1)
        self.added = _add_constraints(idx, labels, loss, self.slack, self.L, self.SG, ws.arrays())
        return True  # the inner passes run even when no constraint was new

    def solve(self):
        t1 = time.perf_counter()
        ws, tr, w, L, tol = self.ws, self.tr, self.w, self.L, self.tol
        n = self.model.n_samples
        Cn = self.C / n
        target = max(0.25 * tr.gap, 0.05 * tol * tr.best_primal)
        if self.complete:
            target = 0.5 * tol * min(tr.best_primal, self.C)
        everyone = np.flatnonzero(ws.cnt > 0)
        active = everyone
        gaps = np.zeros(n)
        for _ in range(self.max_passes):
            gaps[active] = 0.0
            _block_pass(
                self.rng.permutation(active), w, L, ws.arrays(), Cn, 100, 1e-3 * tol * Cn, gaps
            )
            if gaps[active].sum() <= target:
                if len(active) < len(everyone):  # unshrink and re-check everything
                    active = everyone
                    continue
                _ws_hinge(w, L, ws.arrays(), self.wsh)
                dual = float(np.sum(ws.alpha * ws.b)) - 0.5 * float(w @ w)
                ws_primal = 0.5 * float(w @ w) + Cn * float(self.wsh.sum())
                if self.complete:
                    target = 0.5 * tol * ws_primal
                if ws_primal - dual <= target:
                    break
            # shrinking: drop examples that are optimal with all multipliers at zero
            keep = (gaps[active] > 1e-3 * target / max(len(active), 1)) | (
                ws.alpha[active].sum(axis=1) > 0
            )
            active = active[keep]
            if len(active) == 0:
                active = everyone
        tr.offer_dual(float(np.sum(ws.alpha * ws.b)) - 0.5 * float(w @ w))
        self.t_inner += time.perf_counter() - t1
        return None

    def record(self, rnd, plane, t_oracle, t_master, sol) -> bool:
        extra = {} if self.stopped else {"n_added": int(self.added)}
        return self.tr.record(
            rnd,
            n_constraints=int(self.ws.cnt.sum()),
            **extra,
            t_oracle=self.t_oracle,
            t_inner=self.t_inner,
        )


def fit_n_slack(
    model: LinearJointModel,
    C: float,
    rescaling: str = "margin",
    tol: float = 1e-3,
    max_iter: int = 200,
    max_time=None,
    max_passes: int = 1000,
    max_complete: int = 0,
    random_state=None,
    callback=None,
    verbose: int = 0,
) -> SSVMResult:
    """Train ``w`` by n-slack working sets; see the module docstring."""
    model.check_rescaling(rescaling)
    refuse_nonneg(model, "n-slack")  # a declared w_j >= 0 is not enforced here
    tr = GapMonitor(tol, max_iter, max_time, callback, verbose, name="n_slack")
    problem = _NSlackPlanes(
        model, C, rescaling, tol, max_passes, max_complete, as_generator(random_state), tr
    )
    with tr.interruptible():
        kelley_loop(problem, None)
    return tr.result(problem.w, n_constraints=int(problem.ws.cnt.sum()))
