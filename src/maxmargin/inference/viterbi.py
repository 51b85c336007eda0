"""Exact MAP inference on linear chains (Viterbi) and its loss-augmented variants.

A chain labelling ``y = (y_0, ..., y_{T-1})`` over ``K`` states scores

    s(y) = sum_t U[t, y_t] + sum_{t < T-1} P[y_t, y_{t+1}]

with unary scores ``U`` (T, K) and transition scores ``P`` (K, K).  The structured SVM
needs three maximisations (Tsochantaridis et al., JMLR 2005 [Tsochantaridis2005];
[Nowozin2011] "working set training"; keys of docs/references.md):

* prediction, ``argmax_y s(y)`` (:func:`viterbi`);
* margin-rescaled loss-augmented inference ``argmax_y Delta(y*, y) + s(y)`` with a loss that
  decomposes over positions, ``Delta = sum_t L[y*_t, y_t]`` -- the loss folds into the
  unaries (``_loss_aug_into``, batched by :func:`batch_loss_augmented`);
* slack-rescaled inference ``argmax_y Delta(y*, y) (1 - s(y*) + s(y))`` with the Hamming
  loss.  The product does not decompose, but for a fixed number of errors ``e`` the best
  labelling is a Viterbi problem, so a DP over (position, state, errors so far) solves it
  exactly in O(T^2 K^2) (``_slack_into``, batched by :func:`batch_loss_augmented`).

StructBoost's fast master smooths the hinge: the log-sum-exp over all labellings is the
forward pass of the loss-augmented Gibbs chain and its gradient the forward-backward
marginals (:func:`sharded_chain_forward`, :func:`sharded_chain_complete`).

Ties are broken towards the lowest state index.  All kernels are numba-compiled
(``cache=True``); the ``batch_*`` and ``sharded_*`` kernels walk concatenated sequences given by
``offsets`` (sequence i occupies rows ``offsets[i]:offsets[i+1]``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = [
    "batch_evaluate",
    "batch_loss_augmented",
    "batch_viterbi",
    "chain_score",
    "chain_true_scores",
    "sequence_shards",
    "sharded_chain_complete",
    "sharded_chain_forward",
    "sharded_loss_augmented",
    "viterbi",
]


@njit(cache=True)
def _viterbi_into(U, P, pairwise, out):
    """Viterbi on (U, P) writing the argmax into ``out``; returns the best score."""
    T, K = U.shape
    V = U[0].copy()
    if T == 1 or not pairwise:
        for t in range(T):
            best = U[t, 0]
            arg = 0
            for k in range(1, K):
                if U[t, k] > best:
                    best = U[t, k]
                    arg = k
            out[t] = arg
        s = 0.0
        for t in range(T):
            s += U[t, out[t]]
        return s
    bp = np.empty((T, K), dtype=np.int64)
    newV = np.empty(K)
    for t in range(1, T):
        for m in range(K):
            best = V[0] + P[0, m]
            arg = 0
            for k in range(1, K):
                v = V[k] + P[k, m]
                if v > best:
                    best = v
                    arg = k
            newV[m] = best + U[t, m]
            bp[t, m] = arg
        V[:] = newV
    arg = 0
    for k in range(1, K):
        if V[k] > V[arg]:
            arg = k
    out[T - 1] = arg
    for t in range(T - 1, 0, -1):
        out[t - 1] = bp[t, out[t]]
    return V[arg]


@njit(cache=True)
def chain_score(U, P, y, pairwise=True):
    """Score ``s(y)`` of one labelling."""
    s = 0.0
    T = U.shape[0]
    for t in range(T):
        s += U[t, y[t]]
    if pairwise:
        for t in range(T - 1):
            s += P[y[t], y[t + 1]]
    return s


@njit(cache=True)
def viterbi(U, P):
    """MAP labelling ``argmax_y s(y)`` and its score."""
    out = np.empty(U.shape[0], dtype=np.int64)
    s = _viterbi_into(U, P, True, out)
    return out, s


@njit(cache=True)
def _loss_aug_into(U, P, ytrue, L, pairwise, out):
    T, K = U.shape
    A = np.empty((T, K))
    for t in range(T):
        for k in range(K):
            A[t, k] = U[t, k] + L[ytrue[t], k]
    return _viterbi_into(A, P, pairwise, out)


@njit(cache=True)
def _slack_into(U, P, ytrue, L, pairwise, out):
    """Slack-rescaled oracle writing into ``out``; returns the rescaled hinge value.

    ``T == 1``: enumerates the K outputs with an arbitrary loss matrix ``L``.
    ``T > 1``: Hamming loss (``L`` must be ``1 - I``), DP over the error count.
    """
    T, K = U.shape
    s_true = chain_score(U, P, ytrue, pairwise)
    if T == 1:
        best = 0.0
        arg = ytrue[0]
        for k in range(K):
            v = L[ytrue[0], k] * (1.0 - s_true + U[0, k])
            if v > best:
                best = v
                arg = k
        out[0] = arg
        return best
    E = T + 1
    NEG = -np.inf
    V = np.full((K, E), NEG)
    newV = np.empty((K, E))
    bp = np.zeros((T, K, E), dtype=np.int64)
    for k in range(K):
        e = 0 if k == ytrue[0] else 1
        V[k, e] = U[0, k]
    for t in range(1, T):
        newV[:, :] = NEG
        for m in range(K):
            d = 0 if m == ytrue[t] else 1
            for e in range(t + 1):
                best = NEG
                arg = 0
                for k in range(K):
                    v = V[k, e]
                    if v == NEG:
                        continue
                    if pairwise:
                        v += P[k, m]
                    if v > best:
                        best = v
                        arg = k
                if best > NEG:
                    newV[m, e + d] = best + U[t, m]
                    bp[t, m, e + d] = arg
        V[:, :] = newV
    best_val = 0.0
    best_e = 0
    best_k = -1
    for e in range(1, E):
        for k in range(K):
            if V[k, e] == NEG:
                continue
            v = e * (1.0 - s_true + V[k, e])
            if v > best_val:
                best_val = v
                best_e = e
                best_k = k
    if best_k < 0:
        for t in range(T):
            out[t] = ytrue[t]
        return 0.0
    out[T - 1] = best_k
    e = best_e
    for t in range(T - 1, 0, -1):
        k = bp[t, out[t], e]
        if out[t] != ytrue[t]:
            e -= 1
        out[t - 1] = k
    return best_val


@njit(cache=True)
def _seq_loss(ytrue, y, L):
    s = 0.0
    for t in range(len(y)):
        s += L[ytrue[t], y[t]]
    return s


@njit(cache=True)
def batch_loss_augmented(U, P, offsets, ytrue, L, pairwise, slack, labels, loss, margin):
    """Loss-augmented inference for every sequence (margin or slack rescaling).

    Writes the violators into ``labels`` (concatenated), their losses into ``loss`` and
    ``margin[i] = s(y*_i) - s(yhat_i)``.
    """
    _loss_augmented_range(
        U, P, offsets, ytrue, L, pairwise, slack, labels, loss, margin, 0, offsets.shape[0] - 1
    )


@njit(cache=True)
def _loss_augmented_range(U, P, offsets, ytrue, L, pairwise, slack, labels, loss, margin, i0, i1):
    """:func:`batch_loss_augmented` for sequences ``i0 .. i1 - 1``."""
    for i in range(i0, i1):
        a, b = offsets[i], offsets[i + 1]
        Ui = U[a:b]
        yt = ytrue[a:b]
        out = labels[a:b]
        if slack:
            _slack_into(Ui, P, yt, L, pairwise, out)
        else:
            _loss_aug_into(Ui, P, yt, L, pairwise, out)
        loss[i] = _seq_loss(yt, out, L)
        margin[i] = chain_score(Ui, P, yt, pairwise) - chain_score(Ui, P, out, pairwise)


@njit(cache=True)
def batch_evaluate(U, P, offsets, ytrue, labels, L, pairwise, loss, margin):
    """Loss and margin of given labellings of every sequence."""
    n = offsets.shape[0] - 1
    for i in range(n):
        a, b = offsets[i], offsets[i + 1]
        loss[i] = _seq_loss(ytrue[a:b], labels[a:b], L)
        margin[i] = chain_score(U[a:b], P, ytrue[a:b], pairwise) - chain_score(
            U[a:b], P, labels[a:b], pairwise
        )


@njit(cache=True)
def batch_viterbi(U, P, offsets, pairwise, labels):
    """MAP labelling of every sequence, written into ``labels``."""
    n = offsets.shape[0] - 1
    for i in range(n):
        a, b = offsets[i], offsets[i + 1]
        _viterbi_into(U[a:b], P, pairwise, labels[a:b])


# ------------------------------------------------------------------ forward-backward
# Numerics of the scaled forward-backward.  Subnormal floats make products ~100x slower
# on x86 and a sharp smoothing (large beta) produces them everywhere, so:
#: scaled factors ``exp(x)`` with ``x`` below this (about 1e-100) are set to 0, keeping
#: every product of two factors a normal float;
_FLUSH = -230.0
#: a scaled sum below this is recomputed in log space (the terms dropped by _FLUSH are
#: then at most K 1e-100, 1e-20 K relative to the sum -- below double rounding);
_TINY = 1e-80
#: in the log-space sums (largest term exp(0) = 1) terms below exp(-50) = 2e-22 are
#: skipped, below double rounding for any K < 1e5.
_SKIP = -50.0


@njit(cache=True)
def _flushed_exp(x):  # pragma: no cover - compiled
    return np.exp(x) if x > _FLUSH else 0.0


@njit(cache=True)
def _chain_factors(P, pairwise, beta):  # pragma: no cover - compiled
    """``beta P`` and its exponentials scaled per column and per row:
    ``Ec[j, k] = exp(beta P[j, k] - cmax[k])``, ``Er[j, k] = exp(beta P[j, k] - rmax[j])``
    (each entry <= 1, each column / row has a 1)."""
    K = P.shape[0]
    BP = np.zeros((K, K))
    if pairwise:
        for j in range(K):
            for k in range(K):
                BP[j, k] = beta * P[j, k]
    cmax = np.empty(K)
    rmax = np.empty(K)
    for k in range(K):
        cmax[k] = BP[0, k]
        rmax[k] = BP[k, 0]
    for j in range(K):
        for k in range(K):
            if BP[j, k] > cmax[k]:
                cmax[k] = BP[j, k]
            if BP[j, k] > rmax[j]:
                rmax[j] = BP[j, k]
    Ec = np.empty((K, K))
    Er = np.empty((K, K))
    for j in range(K):
        for k in range(K):
            Ec[j, k] = _flushed_exp(BP[j, k] - cmax[k])
            Er[j, k] = _flushed_exp(BP[j, k] - rmax[j])
    return BP, cmax, Ec, rmax, Er


@njit(cache=True)
def _forward_range(U, offsets, ytrue, L, beta, fa, logz, i0, i1, BP, cmax, Ec):
    """Forward algorithm of the loss-augmented Gibbs chain, sequences ``i0 .. i1 - 1``:
    ``fa[t, k] = log sum_{z_0..z_t, z_t = k} exp(beta (Delta(y*, z) + s(z)))`` restricted
    to the prefix (N, K), and ``logz[i] = log sum_z exp(beta (Delta(y*_i, z) + s(z)))``.

    Each step is a scaled matrix-vector product, ``fa[t, k] = V[t, k] + m + cmax[k] +
    log sum_j exp(fa[t-1, j] - m) Ec[j, k]`` with ``m = max_j fa[t-1, j]`` (K exponentials
    per position instead of K^2; ``BP``, ``cmax``, ``Ec`` from :func:`_chain_factors`);
    where the scaled sum falls below ``_TINY`` (only for very sharp smoothing) that entry
    is recomputed by an exact log-sum-exp.
    """
    K = U.shape[1]
    a = np.empty(K)
    s = np.empty(K)
    for i in range(i0, i1):
        a0, b0 = offsets[i], offsets[i + 1]
        for k in range(K):
            fa[a0, k] = beta * (U[a0, k] + L[ytrue[a0], k])
        for r in range(a0 + 1, b0):
            m = fa[r - 1, 0]
            for j in range(1, K):
                if fa[r - 1, j] > m:
                    m = fa[r - 1, j]
            for k in range(K):
                s[k] = 0.0
            for j in range(K):
                a[j] = _flushed_exp(fa[r - 1, j] - m)
                for k in range(K):
                    s[k] += a[j] * Ec[j, k]
            yt = ytrue[r]
            for k in range(K):
                v = beta * (U[r, k] + L[yt, k])
                if s[k] > _TINY:
                    fa[r, k] = v + m + cmax[k] + np.log(s[k])
                else:
                    mx = fa[r - 1, 0] + BP[0, k]
                    for j in range(1, K):
                        if fa[r - 1, j] + BP[j, k] > mx:
                            mx = fa[r - 1, j] + BP[j, k]
                    acc = 0.0
                    for j in range(K):
                        e = fa[r - 1, j] + BP[j, k] - mx
                        if e > _SKIP:
                            acc += np.exp(e)
                    fa[r, k] = v + mx + np.log(acc)
        m = fa[b0 - 1, 0]
        for k in range(1, K):
            if fa[b0 - 1, k] > m:
                m = fa[b0 - 1, k]
        acc = 0.0
        for k in range(K):
            acc += np.exp(fa[b0 - 1, k] - m)
        logz[i] = m + np.log(acc)


@njit(cache=True)
def _marginals_range(
    U, offsets, ytrue, L, pairwise, beta, fa, logz, marg, pm, i0, i1, BP, rmax, Er
):  # pragma: no cover - compiled
    """Backward pass after :func:`_forward_range`, sequences ``i0 .. i1 - 1``: the Gibbs
    marginals ``marg[t, k] = P(z_t = k)`` (N, K), and the transition marginals summed over
    their positions added to ``pm[j, k]`` (K, K) in sequence order.

    With ``b[k] = beta (U + L)[t+1, k] + fb[t+1, k]`` (``fb`` the backward messages) and
    ``S[j] = sum_k Er[j, k] exp(b[k] - max b)``: ``fb[t, j] = max b + rmax[j] + log S[j]``,
    and the pair marginal is the marginal of ``z_t = j`` times the conditional
    ``P(z_(t+1) = k | z_t = j) = Er[j, k] exp(b[k] - max b) / S[j]``; entries whose
    ``S[j]`` falls below ``_TINY`` are recomputed in log space.
    """
    K = U.shape[1]
    fb = np.empty(K)
    b = np.empty(K)
    c = np.empty(K)
    for i in range(i0, i1):
        a0, b0 = offsets[i], offsets[i + 1]
        lz = logz[i]
        for k in range(K):
            fb[k] = 0.0
            marg[b0 - 1, k] = _flushed_exp(fa[b0 - 1, k] - lz)
        for r in range(b0 - 2, a0 - 1, -1):
            yt = ytrue[r + 1]
            mb = -np.inf
            for k in range(K):
                b[k] = beta * (U[r + 1, k] + L[yt, k]) + fb[k]
                if b[k] > mb:
                    mb = b[k]
            for k in range(K):
                c[k] = _flushed_exp(b[k] - mb)
            for j in range(K):
                sj = 0.0
                for k in range(K):
                    sj += Er[j, k] * c[k]
                if sj > _TINY:
                    fb[j] = mb + rmax[j] + np.log(sj)
                    mj = _flushed_exp(fa[r, j] + fb[j] - lz)
                    marg[r, j] = mj
                    if pairwise:
                        q = mj / sj
                        for k in range(K):
                            pm[j, k] += q * Er[j, k] * c[k]
                else:
                    mx = BP[j, 0] + b[0]
                    for k in range(1, K):
                        if BP[j, k] + b[k] > mx:
                            mx = BP[j, k] + b[k]
                    acc = 0.0
                    for k in range(K):
                        e = BP[j, k] + b[k] - mx
                        if e > _SKIP:
                            acc += np.exp(e)
                    fb[j] = mx + np.log(acc)
                    marg[r, j] = _flushed_exp(fa[r, j] + fb[j] - lz)
                    if pairwise:
                        for k in range(K):
                            e = fa[r, j] + BP[j, k] + b[k] - lz
                            if e > _FLUSH:
                                pm[j, k] += np.exp(e)


# ------------------------------------------------------------------ sharded (threads)
# The same kernels over fixed shards of the sequences, the shards run by numba's thread
# pool.  A sequence's rows are written by one shard only, and the one reduction (the
# transition marginals) is summed per shard and then over the shards in shard order, so
# the answers do not depend on the number of threads -- bit for bit.
def sequence_shards(offsets, n_shards: int = 64) -> np.ndarray:
    """Fixed shard bounds over the sequences of ``offsets``: at most ``n_shards``
    contiguous runs of sequences holding about equal numbers of positions (a function of
    the data only, never of the thread count)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    S = max(1, min(int(n_shards), n))
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], S + 1)[1:-1])
    return np.unique(np.concatenate([[0], np.clip(cuts, 0, n), [n]])).astype(np.int64)


@njit(cache=True, parallel=True)
def sharded_loss_augmented(U, P, offsets, ytrue, L, pairwise, slack, labels, loss, margin, bounds):
    """:func:`batch_loss_augmented` over the shards ``bounds`` in parallel (same answers)."""
    for c in prange(bounds.shape[0] - 1):
        _loss_augmented_range(
            U, P, offsets, ytrue, L, pairwise, slack, labels, loss, margin, bounds[c], bounds[c + 1]
        )


@njit(cache=True, parallel=True)
def sharded_chain_forward(U, P, offsets, ytrue, L, pairwise, beta, fa, logz, bounds):
    """:func:`_forward_range` (the forward pass of the loss-augmented Gibbs chain) over
    the shards ``bounds`` in parallel: ``fa`` (N, K) and ``logz`` per sequence, the same
    answers for any thread count.  ``logz[i] / beta`` is the smoothed hinge's log-sum-exp
    (within ``T_i log K / beta`` of the hinge plus ``s(y*_i)``): StructBoost's fast master
    runs only this pass in a line-search trial."""
    BP, cmax, Ec, _rmax, _Er = _chain_factors(P, pairwise, beta)
    for c in prange(bounds.shape[0] - 1):
        _forward_range(U, offsets, ytrue, L, beta, fa, logz, bounds[c], bounds[c + 1], BP, cmax, Ec)


@njit(cache=True)
def _sum_shards(pm, out):  # pragma: no cover - compiled
    """``out = pm[0] + pm[1] + ...``, the shards' (K, K) sums added in shard order."""
    S, K, _ = pm.shape
    for j in range(K):
        for k in range(K):
            acc = 0.0
            for c in range(S):
                acc += pm[c, j, k]
            out[j, k] = acc


@njit(cache=True)
def _gradient_range(marg, ytrue, L, offsets, inv_m, A, i0, i1):  # pragma: no cover
    """The rows of the signed weights ``A`` for the positions of sequences ``i0 .. i1 -
    1`` (see :func:`sharded_chain_complete`); returns their part of the dual."""
    K = marg.shape[1]
    S = A.shape[1]
    acc = 0.0
    for t in range(offsets[i0], offsets[i1]):
        yt = ytrue[t]
        for k in range(K):
            mk = marg[t, k]
            A[t, k] = -mk * inv_m
            acc += mk * L[yt, k]
        A[t, yt] += inv_m
        for k in range(K, S):
            A[t, k] = 0.0
    return acc * inv_m


@njit(cache=True, parallel=True)
def sharded_chain_complete(
    chain, beta, fa, logz, inv_m, smooth, hard, bounds
):  # pragma: no cover - compiled  # fmt: skip
    """One parallel pass per shard for the rest of the smoothed chain risk after the
    forward pass: the backward pass :func:`_marginals_range` on the shard (its
    Gibbs and transition marginals), the shard's rows of the signed weights ``A[t, k] = ([y_t = k] -
    marg[t, k]) inv_m`` (0 in the slots after the K state slots) and its part of the
    dual ``dual_parts[c] = inv_m sum_t sum_k marg[t, k] L[y_t, k]``
    (:func:`_gradient_range`), and :func:`sharded_loss_augmented` (its hard
    loss-augmented labellings, margin rescaling) -- in one fork-join instead of three.
    One shard writes each row; the transition marginals and the dual parts are summed
    over the shards in shard order, so the answers do not depend on the threads.

    The arguments come bundled: ``chain = (U, P, offsets, ytrue, L, pairwise)`` (as
    :func:`sharded_chain_forward` takes them one by one), ``fa``, ``logz`` from it, and
    the outputs ``smooth = (marg, pair_marg, A, dual_parts)`` and ``hard = (labels, loss,
    margin)``; they are unpacked here, so the per-range kernels take their arrays one by
    one (bundling those too was 3-6 % slower, paired locked runs, issue 29)."""
    U, P, offsets, ytrue, L, pairwise = chain
    marg, pair_marg, A, dual_parts = smooth
    labels, loss, margin = hard
    BP, _cmax, _Ec, rmax, Er = _chain_factors(P, pairwise, beta)
    S = bounds.shape[0] - 1
    K = U.shape[1]
    pm = np.zeros((S, K, K))
    for c in prange(S):
        i0, i1 = bounds[c], bounds[c + 1]
        _marginals_range(
            U, offsets, ytrue, L, pairwise, beta, fa, logz, marg, pm[c], i0, i1, BP, rmax, Er
        )
        dual_parts[c] = _gradient_range(marg, ytrue, L, offsets, inv_m, A, i0, i1)
        _loss_augmented_range(
            U, P, offsets, ytrue, L, pairwise, False, labels, loss, margin, i0, i1
        )
    _sum_shards(pm, pair_marg)


@njit(cache=True)
def chain_true_scores(U, P, offsets, ytrue, pairwise, out):  # pragma: no cover - compiled
    """``out[i] = s(y*_i)``: the score of every sequence's true labelling."""
    for i in range(offsets.shape[0] - 1):
        a, b = offsets[i], offsets[i + 1]
        acc = 0.0
        for t in range(a, b):
            acc += U[t, ytrue[t]]
            if pairwise and t + 1 < b:
                acc += P[ytrue[t], ytrue[t + 1]]
        out[i] = acc
