"""n-slack working-set training of linear structured SVMs.

Seed 004 "working set training" / Tsochantaridis et al., JMLR 2005, Alg. 1; seed 002
Sec. 2.5.2 (eq. 2.106-2.107).  Every example i keeps its own working set of labellings
``y_ic`` with constraints ``<w, a_ic> >= b_ic - xi_i`` where ``a_ic = s_ic dPsi_i(y_ic)``,
``b_ic = Delta(y_i, y_ic)`` and ``s_ic = 1`` (margin rescaling) or ``s_ic = Delta`` (slack
rescaling).  The working-set dual

    max  sum_ic alpha_ic b_ic - 1/2 ||sum_ic alpha_ic a_ic||^2
    s.t. alpha >= 0,  sum_c alpha_ic <= C/n   for every i

is solved by block-coordinate ascent: one block per example, each block solved (to a
small tolerance) by SMO pairwise steps over its constraints plus the slack variable,
with ``w = sum alpha a`` updated in place (a sequential dual method as in Keerthi et al.,
KDD 2008, for Crammer-Singer; the block Gram matrix comes from the per-sequence input
Gram, so constraint vectors are never stored).  The outer loop calls the batch oracle,
records the exact primal, the dual value (feasible alpha, hence a lower bound) and adds
each example's most violated labelling to its working set.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from maxmargin._validation import as_generator
from maxmargin.inference.viterbi import chain_score
from maxmargin.solvers.ssvm_base import SSVMResult, Tracker
from maxmargin.tasks.linear import (
    LinearJointModel,
    add_dpsi,
    dpsi_dot,
    rescaled_hinge,
    seq_unary,
)

__all__ = ["fit_n_slack"]


@njit(cache=True)
def _add_constraints(
    idx,
    labels,
    loss,
    slack,
    offsets,
    ytrue,
    goff,
    gram,
    GG,
    pairwise,
    ws_lab,
    ws_cnt,
    ws_b,
    ws_s,
    ws_G,
    alpha,
):
    """Append labelling ``labels[offsets[i]:offsets[i+1]]`` to example i's working set.

    Skips duplicates; returns the number added (caller guarantees capacity).
    """
    added = 0
    for i in idx:
        a, b = offsets[i], offsets[i + 1]
        T = b - a
        yh = labels[a:b]
        yt = ytrue[a:b]
        cnt = ws_cnt[i]
        dup = False
        for c in range(cnt):
            same = True
            for t in range(T):
                if ws_lab[i, c, t] != yh[t]:
                    same = False
                    break
            if same:
                dup = True
                break
        if dup:
            continue
        for t in range(T):
            ws_lab[i, cnt, t] = yh[t]
        s = loss[i] if slack else 1.0
        ws_b[i, cnt] = loss[i]
        ws_s[i, cnt] = s
        alpha[i, cnt] = 0.0
        gi = gram[goff[i] : goff[i + 1]]
        for c in range(cnt + 1):
            v = s * ws_s[i, c] * dpsi_dot(gi, T, GG, yt, yh, ws_lab[i, c, :T], pairwise)
            ws_G[i, cnt, c] = v
            ws_G[i, c, cnt] = v
        ws_cnt[i] = cnt + 1
        added += 1
    return added


@njit(cache=True)
def _margins(
    i,
    w,
    P,
    n_unary,
    S,
    K,
    indptr,
    indices,
    data,
    offsets,
    ytrue,
    gamma,
    onehot,
    pairwise,
    ws_lab,
    ws_cnt,
    ws_s,
    U,
    out,
):
    """``out[c] = <w, a_ic>`` for the working set of example i."""
    a, b = offsets[i], offsets[i + 1]
    T = b - a
    W = w[:n_unary].reshape((n_unary // S, S))
    seq_unary(indptr, indices, data, a, b, W, gamma, onehot, U)
    Ui = U[:T]
    st = chain_score(Ui, P, ytrue[a:b], pairwise)
    for c in range(ws_cnt[i]):
        out[c] = ws_s[i, c] * (st - chain_score(Ui, P, ws_lab[i, c, :T], pairwise))


@njit(cache=True)
def _block_pass(
    order,
    w,
    n_unary,
    S,
    K,
    indptr,
    indices,
    data,
    offsets,
    ytrue,
    gamma,
    onehot,
    pairwise,
    ws_lab,
    ws_cnt,
    ws_b,
    ws_s,
    ws_G,
    alpha,
    Cn,
    max_steps,
    tol,
    gaps,
):
    """One sweep of block maximisations over the examples in ``order``.

    ``gaps[i]`` receives example i's block duality gap before its update; their sum over
    a sweep estimates the working-set duality gap (exact when w does not move).
    """
    cap = ws_b.shape[1]
    Tmax = ws_lab.shape[2]
    U = np.empty((Tmax, K))
    P = w[n_unary:].reshape((K, K)) if pairwise else np.zeros((K, K))
    aw = np.empty(cap)
    g = np.empty(cap)
    old = np.empty(cap)
    for i in order:
        cnt = ws_cnt[i]
        if cnt == 0:
            continue
        _margins(
            i,
            w,
            P,
            n_unary,
            S,
            K,
            indptr,
            indices,
            data,
            offsets,
            ytrue,
            gamma,
            onehot,
            pairwise,
            ws_lab,
            ws_cnt,
            ws_s,
            U,
            aw,
        )
        G = ws_G[i]
        lam = alpha[i]
        lsum = 0.0
        for c in range(cnt):
            g[c] = aw[c] - ws_b[i, c]
            old[c] = lam[c]
            lsum += lam[c]
        for step in range(max_steps):
            lam0 = Cn - lsum
            if lam0 < 0.0:
                lam0 = 0.0
            gmin = 0.0
            for c in range(cnt):
                if g[c] < gmin:
                    gmin = g[c]
            gap = -lam0 * gmin
            for c in range(cnt):
                gap += lam[c] * (g[c] - gmin)
            if step == 0:
                gaps[i] = gap
            if gap <= tol:
                break
            # i: used coordinate (or slack = -1) with the largest gradient
            src = -1
            gs = 0.0 if lam0 > 0.0 else -np.inf
            for c in range(cnt):
                if lam[c] > 0.0 and g[c] > gs:
                    gs = g[c]
                    src = c
            Gss = G[src, src] if src >= 0 else 0.0
            dst = -2
            best = 0.0
            for q in range(-1, cnt):
                gq = g[q] if q >= 0 else 0.0
                diff = gs - gq
                if diff <= 0.0:
                    continue
                if q >= 0:
                    curv = Gss + G[q, q] - 2.0 * (G[src, q] if src >= 0 else 0.0)
                else:
                    curv = Gss
                if curv <= 1e-12 * (1.0 + Gss):
                    curv = 1e-12 * (1.0 + Gss)
                gain = diff * diff / curv
                if gain > best:
                    best = gain
                    dst = q
            if dst == -2:
                break
            gd = g[dst] if dst >= 0 else 0.0
            Gdd = G[dst, dst] if dst >= 0 else 0.0
            Gsd = G[src, dst] if (src >= 0 and dst >= 0) else 0.0
            curv = Gss + Gdd - 2.0 * Gsd
            capv = lam[src] if src >= 0 else lam0
            t = capv if curv <= 0.0 else min(capv, (gs - gd) / curv)
            if t <= 0.0:
                break
            if src >= 0:
                lam[src] -= t
                if lam[src] < 0.0:
                    lam[src] = 0.0
                lsum -= t
                for c in range(cnt):
                    g[c] -= t * G[c, src]
            if dst >= 0:
                lam[dst] += t
                lsum += t
                for c in range(cnt):
                    g[c] += t * G[c, dst]
        a, b = offsets[i], offsets[i + 1]
        T = b - a
        for c in range(cnt):
            d = lam[c] - old[c]
            if d != 0.0:
                add_dpsi(
                    w,
                    n_unary,
                    S,
                    K,
                    indptr,
                    indices,
                    data,
                    a,
                    b,
                    ytrue[a:b],
                    ws_lab[i, c, :T],
                    gamma,
                    onehot,
                    pairwise,
                    d * ws_s[i, c],
                )


@njit(cache=True)
def _ws_hinge(
    w,
    n_unary,
    S,
    K,
    indptr,
    indices,
    data,
    offsets,
    ytrue,
    gamma,
    onehot,
    pairwise,
    ws_lab,
    ws_cnt,
    ws_b,
    ws_s,
    out,
):
    """Working-set hinge ``max(0, max_c b_ic - <w, a_ic>)`` of every example."""
    cap = ws_b.shape[1]
    Tmax = ws_lab.shape[2]
    U = np.empty((Tmax, K))
    P = w[n_unary:].reshape((K, K)) if pairwise else np.zeros((K, K))
    aw = np.empty(cap)
    for i in range(offsets.shape[0] - 1):
        h = 0.0
        if ws_cnt[i] > 0:
            _margins(
                i,
                w,
                P,
                n_unary,
                S,
                K,
                indptr,
                indices,
                data,
                offsets,
                ytrue,
                gamma,
                onehot,
                pairwise,
                ws_lab,
                ws_cnt,
                ws_s,
                U,
                aw,
            )
            for c in range(ws_cnt[i]):
                v = ws_b[i, c] - aw[c]
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
    rng = as_generator(random_state)
    slack = rescaling == "slack"
    n = model.n_samples
    Cn = C / n
    K, S = model.n_states, model.n_slots
    indptr, indices, data = model.csr()
    goff, gram = model.seq_gram()
    GG = np.ascontiguousarray(model.gamma @ model.gamma.T)
    common = (
        model.n_unary,
        S,
        K,
        indptr,
        indices,
        data,
        model.offsets,
        model.y,
        model.gamma,
        model.onehot,
        model.pairwise,
    )
    ws = _WorkingSets(model)
    tr = Tracker(tol, max_iter, max_time, callback, verbose, name="n_slack")
    w = np.zeros(model.dim)
    wsh = np.zeros(n)
    t_oracle = t_inner = 0.0
    # optional (max_complete >= K): start flat tasks from the complete working set (all
    # K-1 wrong labels per example), i.e. a sequential dual method on the full QP as in
    # liblinear's Crammer-Singer solver; measured slower than growing the working sets
    # on digits (docs/ssvm.md), hence off by default
    complete = model.max_length == 1 and model.n_states <= max_complete
    if complete:
        ws.ensure(model.n_states)
        rows = np.arange(n)
        for k in range(model.n_states):
            lab = np.full(n, k, dtype=np.int64)
            loss = model.loss[model.y, k]
            _add_constraints(
                rows[model.y != k],
                lab,
                loss,
                slack,
                model.offsets,
                model.y,
                goff,
                gram,
                GG,
                model.pairwise,
                ws.lab,
                ws.cnt,
                ws.b,
                ws.s,
                ws.G,
                ws.alpha,
            )
    for it in range(max_iter):
        t0 = time.perf_counter()
        labels, loss, margin = model.loss_augmented(w, rescaling)
        tr.n_oracle += 1
        hinge = rescaled_hinge(loss, margin, rescaling)
        tr.offer_primal(model.objective(w, C, hinge), w)
        tr.offer_dual(float(np.sum(ws.alpha * ws.b)) - 0.5 * float(w @ w))
        t1 = time.perf_counter()
        t_oracle += t1 - t0
        if tr.converged():
            tr.record(it, n_constraints=int(ws.cnt.sum()), t_oracle=t_oracle, t_inner=t_inner)
            break
        # add the most violated labelling where it beats the working set
        _ws_hinge(w, *common, ws.lab, ws.cnt, ws.b, ws.s, wsh)
        thresh = 0.1 * tol * tr.best_primal / C
        idx = np.flatnonzero(hinge > wsh + thresh)
        ws.ensure(1)
        added = _add_constraints(
            idx,
            labels,
            loss,
            slack,
            model.offsets,
            model.y,
            goff,
            gram,
            GG,
            model.pairwise,
            ws.lab,
            ws.cnt,
            ws.b,
            ws.s,
            ws.G,
            ws.alpha,
        )
        target = max(0.25 * tr.gap, 0.05 * tol * tr.best_primal)
        if complete:
            target = 0.5 * tol * min(tr.best_primal, C)
        everyone = np.flatnonzero(ws.cnt > 0)
        active = everyone
        gaps = np.zeros(n)
        for _ in range(max_passes):
            gaps[active] = 0.0
            _block_pass(
                rng.permutation(active),
                w,
                *common,
                ws.lab,
                ws.cnt,
                ws.b,
                ws.s,
                ws.G,
                ws.alpha,
                Cn,
                100,
                1e-3 * tol * Cn,
                gaps,
            )
            if gaps[active].sum() <= target:
                if len(active) < len(everyone):  # unshrink and re-check everything
                    active = everyone
                    continue
                _ws_hinge(w, *common, ws.lab, ws.cnt, ws.b, ws.s, wsh)
                dual = float(np.sum(ws.alpha * ws.b)) - 0.5 * float(w @ w)
                ws_primal = 0.5 * float(w @ w) + Cn * float(wsh.sum())
                if complete:
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
        t_inner += time.perf_counter() - t1
        if tr.record(
            it,
            n_constraints=int(ws.cnt.sum()),
            n_added=int(added),
            t_oracle=t_oracle,
            t_inner=t_inner,
        ):
            break
    return tr.result(w, n_constraints=int(ws.cnt.sum()))
