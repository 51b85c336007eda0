"""Compiled projected L-BFGS steps of the fast master for label-coding tasks.

:class:`~maxmargin.solvers.smoothed_problem.SmoothedProblem` takes its projected L-BFGS
steps on the working set's sub-vectors; for tasks with ``Psi(x, y) = Phi(x) (x) Gamma(y)``
(binary, multi-class, hierarchy: :class:`~maxmargin.tasks.base.LabelCodingTask`) whose
columns fill most slots, the whole step -- two-loop recursion, projection, backtracking
line search, the log-sum-exp smoothed risk, its gradient and the working set's gains --
runs here, in one compiled call per batch of steps.  The mathematics is that of the
Python path in ``SmoothedProblem.solve`` line by line (same products in the same
precision: float32 outputs times float32 weights through BLAS, scores and softmax in
float64); only the order of some floating-point sums differs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["coded_smoothed_steps"]

ARMIJO = 1e-4


@njit(cache=True)
def _label_scores(F, gamma, identity):  # pragma: no cover - compiled
    if identity:
        return F
    return np.dot(F, np.ascontiguousarray(gamma.T))


#: ``exp`` on ``[EXP_SKIP, 0]`` as ``p(r) 2^n``: ``n = round(x / ln 2)``, ``r = x - n ln 2``
#: (Cody-Waite: ``ln 2`` split in a high part exact in ``n * _LN2_HI`` and a low part),
#: ``|r| <= ln(2) / 2``, and ``p`` the Taylor polynomial of degree 12 (truncation below
#: ``0.35^13 / 13! < 1.8e-16`` relative); branch-free, so the row loop runs without a
#: call to libm's ``exp`` per entry
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_C2, _C3, _C4 = 1.0 / 2, 1.0 / 6, 1.0 / 24
_C5, _C6, _C7, _C8 = 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320
_C9, _C10, _C11, _C12 = 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600


@njit(cache=True, inline="always")
def _exp_parts(x):  # pragma: no cover - compiled
    """``(p, n)`` with ``exp(x) = p 2^n`` to about 2 ulp (``x`` in ``[EXP_SKIP - 1, 0]``,
    so ``2^n`` is a normal float and the product with it exact)."""
    n = np.floor(x * _LOG2E + 0.5)
    r = (x - n * _LN2_HI) - n * _LN2_LO
    p = _C12 * r + _C11
    p = p * r + _C10
    p = p * r + _C9
    p = p * r + _C8
    p = p * r + _C7
    p = p * r + _C6
    p = p * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _C2
    p = p * r + 1.0
    p = p * r + 1.0
    return p, n


@njit(cache=True)
def _exp(x):  # pragma: no cover - compiled
    """``exp(x)`` for ``x`` in ``[EXP_SKIP - 1, 0]`` as the softmax rows compute it."""
    p, n = _exp_parts(x)
    return p * 2.0**n


#: ``exp(x)`` for ``x < EXP_SKIP`` is below 1e-30 (exp(-70) = 4e-31): such an entry's
#: softmax weight ``e / z`` (``z >= 1``, the row maximum's own term) is flushed to 0
#: anyway, and adding it to ``z >= 1`` cannot change ``z`` in float64 (it is below
#: ``2^-53 z``), so its exponential is not computed -- the same result, fewer ``exp``
EXP_SKIP = -70.0


@njit(cache=True)
def _lse_value(F, gamma, identity, y, delta, beta, P):  # pragma: no cover - compiled
    """``P <- softmax(beta a)`` (entries below 1e-30 flushed to 0) for the coded margins
    ``a_ik = delta[y_i, k] + G_ik - G_(i, y_i)``, ``G = F Gamma'``; returns ``(sum_i
    max_k a_ik, sum_i LSE_i)``."""
    G = _label_scores(F, gamma, identity)
    return _lse_rows(G, y, delta, beta, P)


@njit(cache=True)
def _lse_rows(G, y, delta, beta, P):  # pragma: no cover - compiled
    """The row passes of :func:`_lse_value` on the label scores ``G``."""
    none = np.empty((0, 0))
    none32 = np.empty((0, 0), dtype=np.float32)
    return _lse_blocks(G, none, none32, 1.0, y, delta, beta, P, none32, 0.0, 0.0)


#: rows per block of :func:`_lse_blocks` (a block's margins, exponentials and powers of
#: two, K x BLOCK_ROWS float64 each, stay in the L1 / L2 cache)
BLOCK_ROWS = 128
#: ``n + MAGIC`` (``n`` an integer, ``|n| < 2^51``) holds ``n`` in the low bits of its
#: float64 pattern: ``bits(n + MAGIC) - bits(MAGIC) = n``, the exponent of ``2^n``
#: without a float-to-int conversion (which AVX2 has no vector instruction for)
MAGIC = 6755399441055744.0  # 1.5 * 2^52
MAGIC_BITS = np.int64(0x4338000000000000)


@njit(cache=True)
def _lse_blocks(G, F, change, tscale, y, delta, beta, P, A32, m_inv, C):  # pragma: no cover
    """The log-sum-exp row passes over blocks of ``BLOCK_ROWS`` rows; returns ``(sum_i
    max_k a_ik, sum_i LSE_i)`` and leaves ``P`` the softmax of the coded margins ``a_ik =
    delta[y_i, k] + G_ik - G_(i, y_i)`` (entries below 1e-30 flushed to 0).

    A non-empty ``F``: first ``G <- F + tscale change`` row by row (float32 change, the
    float64 sum of NumPy's ``F + change`` when ``tscale = 1``).  A non-empty ``A32``
    (one-hot coding): it also gets ``float32(C A)`` of :func:`_onehot_weights32` from
    the same rows (``m_inv = 1 / m``).

    Every entry takes the operations of the plain row loop in the same order (margin,
    row maximum, ``max(beta (a - max), EXP_SKIP - 1)``, :func:`_exp_parts`, ``p 2^n`` or
    0 below ``EXP_SKIP``, the row sum ``z`` over ``k = 0 .. K-1``, ``p / z`` through
    ``1 / z``, the flush, ``max + log(z) / beta`` summed over the rows in order), so the
    results are bit for bit those of the row loop; only the layout differs: a block's
    margins are stored class-major (``k * rows + r``), so the exponentials, the powers of
    two and the row sums run over contiguous rows (vectorised), and ``2^n`` is built
    from the float pattern of ``n + MAGIC`` with integer operations."""
    m, K = P.shape
    shift = F.shape[0] > 0
    weights = A32.shape[0] > 0
    mt = np.empty(BLOCK_ROWS * K)  # margins, then exponentials (class-major)
    nn = np.empty(BLOCK_ROWS * K)  # n + MAGIC, then 2^n (or 0)
    nbits = nn.view(np.int64)
    arow = np.empty(BLOCK_ROWS)
    zrow = np.empty(BLOCK_ROWS)
    lo = EXP_SKIP - 1.0
    skip = MAGIC - 1023.0  # its pattern gives the exponent field 0: the float 0.0
    hinge = 0.0
    lse = 0.0
    for b0 in range(0, m, BLOCK_ROWS):
        nb = min(m, b0 + BLOCK_ROWS) - b0
        for r in range(nb):
            i = b0 + r
            yi = y[i]
            a = -np.inf
            if shift:  # the shifted scores and the margins in one pass over the row
                own = F[i, yi] + np.float64(change[i, yi]) * tscale
                for k in range(K):
                    g = F[i, k] + np.float64(change[i, k]) * tscale
                    G[i, k] = g
                    v = delta[yi, k] + g - own
                    mt[k * nb + r] = v
                    a = v if v > a else a  # a select, not a branch (the same maximum)
            else:
                own = G[i, yi]
                for k in range(K):
                    v = delta[yi, k] + G[i, k] - own
                    mt[k * nb + r] = v
                    a = v if v > a else a
            arow[r] = a
            hinge += a
        for k in range(K):
            base = k * nb
            for r in range(nb):
                x = max(beta * (mt[base + r] - arow[r]), lo)
                p, n = _exp_parts(x)
                mt[base + r] = p
                nn[base + r] = n + MAGIC if x >= EXP_SKIP else skip
        L = nb * K
        for j in range(L):
            nbits[j] = (nbits[j] - MAGIC_BITS + 1023) << 52
        for j in range(L):
            mt[j] = mt[j] * nn[j]
        for r in range(nb):
            zrow[r] = 0.0
        for k in range(K):
            base = k * nb
            for r in range(nb):
                zrow[r] += mt[base + r]
        for r in range(nb):
            i = b0 + r
            z = zrow[r]
            inv = 1.0 / z
            for k in range(K):
                p = mt[k * nb + r] * inv
                P[i, k] = p if p > 1e-30 else 0.0
            lse += arow[r] + np.log(z) / beta
            if weights:
                t = 0.0
                yi = y[i]
                for k in range(K):  # no branch: the true class's entry is set after
                    mu = P[i, k] * m_inv
                    t += mu
                    A32[i, k] = np.float32(-mu * C)
                A32[i, yi] = np.float32((-(P[i, yi] * m_inv) + t) * C)
    return hinge, lse


@njit(cache=True)
def _shifted_lse(F, change, tscale, Ft, y, delta, beta, P):  # pragma: no cover - compiled
    """One-hot coding: ``Ft <- F + tscale change`` (float32 change, the float64 sum of
    NumPy's ``F + change`` when ``tscale = 1``) and :func:`_lse_value` of ``Ft`` in the
    same row pass."""
    none = np.empty((0, 0), dtype=np.float32)
    return _lse_blocks(Ft, F, change, tscale, y, delta, beta, P, none, 0.0, 0.0)


@njit(cache=True)
def _shifted_lse_weights(
    F, change, tscale, Ft, y, delta, beta, P, A32, m_inv, C
):  # pragma: no cover - compiled
    """:func:`_shifted_lse` and, from the same rows, ``A32 <- float32(C A)`` of
    :func:`_onehot_weights32` (``m_inv = 1 / m``)."""
    return _lse_blocks(Ft, F, change, tscale, y, delta, beta, P, A32, m_inv, C)


@njit(cache=True)
def _weights(P, y, gamma, gamma_true, identity, m_inv, C):  # pragma: no cover - compiled
    """``A = C (sum_k Mu_ik) Gamma[y_i] - C Mu Gamma`` with ``Mu = P / m``."""
    m, K = P.shape
    if identity:
        A = np.empty((m, K))
        for i in range(m):
            t = 0.0
            for k in range(K):
                mu = P[i, k] * m_inv
                t += mu
                A[i, k] = -mu
            A[i, y[i]] += t
        return A * C
    Mu = P * m_inv
    A = Mu.sum(axis=1).reshape((m, 1)) * gamma_true - np.dot(Mu, gamma)
    return A * C


@njit(cache=True)
def _ws_gains(Hws, A, row, slot, out):  # pragma: no cover - compiled
    """Gains of the working set's columns from the float32 outputs (BLAS sgemm)."""
    G = np.dot(Hws, A.astype(np.float32))
    for j in range(len(row)):
        out[j] = np.float64(G[row[j], slot[j]])


@njit(cache=True)
def _onehot_weights32(P, y, m_inv, C, A32):  # pragma: no cover - compiled
    """``A32 <- float32(C A)`` of :func:`_weights` for the one-hot coding (the same
    float64 operations, then the cast :func:`_ws_gains` makes), in one pass."""
    m, K = P.shape
    for i in range(m):
        t = 0.0
        yi = y[i]
        for k in range(K):
            mu = P[i, k] * m_inv
            t += mu
            if k != yi:
                A32[i, k] = np.float32(-mu * C)
        A32[i, yi] = np.float32((-(P[i, yi] * m_inv) + t) * C)


@njit(cache=True)
def _direction(g, free, S, Y, n_pairs):  # pragma: no cover - compiled
    """Two-loop recursion on the free coordinates (pairs oldest first in S, Y)."""
    n = len(g)
    q = g.copy()
    fr = np.empty(n)
    for j in range(n):
        fr[j] = 1.0 if free[j] else 0.0
    alphas = np.zeros(n_pairs)
    sys_ = np.zeros(n_pairs)
    used = np.zeros(n_pairs, dtype=np.bool_)
    first = -1
    for p in range(n_pairs - 1, -1, -1):
        sf = S[p] * fr
        yf = Y[p] * fr
        sy = np.dot(sf, yf)
        ss = max(np.dot(sf, sf), 1e-300)
        yy = max(np.dot(yf, yf), 0.0)
        if sy <= 1e-12 * ss**0.5 * yy**0.5:
            continue
        a = np.dot(sf, q) / sy
        q -= a * yf
        alphas[p], sys_[p], used[p] = a, sy, True
        if first < 0:
            first = p
    if first >= 0:
        yf = Y[first] * fr
        q *= sys_[first] / np.dot(yf, yf)
    else:
        q /= max(np.abs(g).max(), 1e-300)
    for p in range(n_pairs):
        if not used[p]:
            continue
        sf = S[p] * fr
        yf = Y[p] * fr
        b = np.dot(yf, q) / sys_[p]
        q += (alphas[p] - b) * sf
    return -q * fr


#: the products run over the working set's columns (not the dense (classifier x slot)
#: matrix of its classifiers) when at most 1 / SPARSE_FILL of those pairs are columns --
#: the certificate's screened set, e.g. 701 columns of 407 shared stumps x 10 slots
SPARSE_FILL = 4

_FAST = {"reassoc", "contract", "nsz"}  # reassociation: the dot products vectorise


@njit(cache=True, fastmath=_FAST)
def _column_gains(Hws, AT, row, slot, out):  # pragma: no cover - compiled
    """``out[j] = sum_z Hws[row[j], z] AT[slot[j], z]``: the working set's gains one
    column at a time, float32 products summed in float64 (the sparse route of
    :func:`coded_smoothed_steps`)."""
    n_z = Hws.shape[1]
    for j in range(len(row)):
        h, s = row[j], slot[j]
        acc = 0.0
        for z in range(n_z):
            acc += np.float64(Hws[h, z]) * np.float64(AT[s, z])
        out[j] = acc


@njit(cache=True)
def _column_change(dw, Hws, row, slot, changeT, change):  # pragma: no cover - compiled
    """``change <- H' dW`` one column at a time (the sparse route): the float32 products
    of the float32 weights ``dw`` summed in float32 in the working set's order, through
    the (n_slots, n_z) buffer ``changeT``."""
    n_slots, n_z = changeT.shape
    changeT[:] = 0
    for j in range(len(dw)):
        if dw[j] != 0.0:
            c = np.float32(dw[j])
            s, h = slot[j], row[j]
            for z in range(n_z):
                changeT[s, z] += c * Hws[h, z]
    for z in range(n_z):
        for s in range(n_slots):
            change[z, s] = changeT[s, z]


@njit(cache=True)
def _direction_change(dw, row, slot, HwsT, Hws, dW, changeT, change, sparse):  # pragma: no cover
    """``change <- H' dW`` for the working set's weight change ``dw`` (float32): the
    dense product with the classifiers' outputs, or column by column (``sparse``)."""
    if sparse:
        _column_change(dw, Hws, row, slot, changeT, change)
        return
    dW[:] = 0
    for j in range(len(dw)):
        if dw[j] != 0.0:
            dW[row[j], slot[j]] = np.float32(dw[j])
    np.dot(HwsT, dW, change)


@njit(cache=True)
def _curvature_rows(V, P, y):  # pragma: no cover - compiled
    """``sum_i (sum_k p_ik u_ik^2 - (sum_k p_ik u_ik)^2)`` with ``u_ik = V_ik - V_(i, y_i)``
    (``V`` float32 or float64, each entry taken as float64): the per-example sum of
    :func:`_newton_length`'s ``d'Hd``.  Branch-free: an entry with ``p_ik = 0`` (most of
    a sharp softmax's, flushed) adds ``(0 u) = +-0`` and then ``(0 u) u = +-0`` to sums
    that start at +0 and so are never -0 -- for finite ``u`` the same sums, bit for bit,
    as skipping it, without a mispredicted branch per entry."""
    m, K = P.shape
    q = 0.0
    for i in range(m):
        own = np.float64(V[i, y[i]])
        s1 = 0.0
        s2 = 0.0
        for k in range(K):
            p = P[i, k]
            u = np.float64(V[i, k]) - own
            s1 += p * u
            s2 += p * u * u
        q += s2 - s1 * s1
    return q


#: the Newton step length is rounded to a power of two in [2^-NEWTON_MIN_EXP, 1]
NEWTON_MIN_EXP = 30


@njit(cache=True)
def _newton_length(
    d, gf, row, slot, HwsT, Hws, dW, changeT, change, sparse, P, y, gamma, identity, scale
):  # pragma: no cover - compiled
    """``(t, done)``: the first trial step of the line search, ``t = -g'd / d'Hd`` (the
    minimiser of the smoothed objective's second-order model along ``d``), rounded to
    the nearest power of two and capped at 1 (1 when the curvature is not positive).

    ``d'Hd = scale sum_i (sum_k p_ik u_ik^2 - (sum_k p_ik u_ik)^2)``: ``u`` is the change
    of the coded margins along ``d`` (``u_ik = v_ik - v_(i, y_i)``, ``v = (H'd)
    Gamma'``), ``p`` the softmax at the current point, ``scale = beta C / m`` -- the
    log-sum-exp's Hessian ``beta (diag p - p p')`` per example.  One product with the
    working set's outputs and one pass over (m, K), no exponential.  ``done``: ``change``
    holds ``H'd`` (float32 products of the float32 direction), which a trial ``w + t d``
    with no coordinate clipped at 0 reuses as ``t H'd`` (t a power of two, so that is
    exactly the product of the float32 ``t d``).
    """
    gd = np.dot(gf, d)
    if not gd < 0.0:
        return 1.0, False
    _direction_change(d, row, slot, HwsT, Hws, dW, changeT, change, sparse)
    if identity:  # the float32 change read as float64 in the pass (no float64 copy)
        q = _curvature_rows(change, P, y)
    else:
        q = _curvature_rows(np.dot(change.astype(np.float64), np.ascontiguousarray(gamma.T)), P, y)
    q *= scale
    if not q > 0.0:
        return 1.0, True
    tn = -gd / q
    if tn >= 1.0:
        return 1.0, True
    e = np.round(np.log2(tn))
    if e < -NEWTON_MIN_EXP:
        e = -NEWTON_MIN_EXP
    return 2.0**e, True


@njit(cache=True)
def coded_smoothed_steps(
    w_all,
    ws,
    F,
    g_ws,
    HwsT,
    Hws,
    row,
    slot,
    n_rows,
    gamma,
    gamma_true,
    identity,
    y,
    delta,
    beta,
    C,
    tol,
    n_steps,
    S,
    Y,
    n_pairs,
    f0,
    gains_ws,
    stats,
    P0,
    newton,
    sparse,
):  # pragma: no cover - compiled
    """Up to ``n_steps`` projected L-BFGS steps on the working set ``ws`` (see
    ``SmoothedProblem.solve``).  ``w_all``, ``g_ws`` (the working set's gradient ``1 -
    gain``), ``S``, ``Y`` (L-BFGS pairs, oldest first, ``n_pairs`` of them) are updated in
    place.  ``HwsT`` / ``Hws``: float32 outputs of the working set's classifiers (n_z,
    n_rows) / (n_rows, n_z); column ``ws[j]`` is classifier ``row[j]`` of them in slot
    ``slot[j]``.  ``f0``: the current smoothed objective.  ``gains_ws`` gets the working
    set's gains at the last accepted point.  ``sparse``: the products run column by
    column (:func:`_column_change`, :func:`_column_gains`; ``HwsT`` is then not used)
    instead of through the dense (classifier, slot) matrices.  ``stats`` (int64, 3) counts the line
    search's trial points and its failures (added to what it holds); ``stats[2]`` is the
    Newton flag (with ``newton``: 1 -- the next step starts from the Newton step length,
    set by the caller when columns or the working set change and here after a step
    that backtracked or started below 1).

    Returns ``(steps, n_pairs, stop, F, P, hinge, lse, f)``: ``stop`` is 1 when the
    solve is over (no free coordinate, line search failed, or relative decrease below
    ``tol``), 0 when ``n_steps`` were taken; ``F``, ``P`` (softmax), ``hinge``, ``lse``
    (sums over examples) and ``f`` (smoothed objective) at the last accepted point
    (``P`` is empty when no step was accepted).
    """
    n = len(ws)
    m, K = F.shape[0], delta.shape[1]
    n_slots = F.shape[1]
    memory = S.shape[0]
    P = np.empty((0, K))
    hinge = lse = 0.0
    # buffers reused by every trial (the caller's F is never written): two score and
    # two softmax buffers, swapped when a trial is accepted
    Fbuf = (np.empty((m, n_slots)), np.empty((m, n_slots)))
    Pbuf = (np.empty((m, K)), np.empty((m, K)))
    change = np.empty((m, n_slots), dtype=np.float32)
    cdir = np.empty((m, n_slots), dtype=np.float32) if newton else change
    # the one-hot duals in float32, written by each trial's row pass (swapped with it)
    A32buf = (np.empty((m, K), dtype=np.float32), np.empty((m, K), dtype=np.float32))
    A32 = A32buf[0]
    Gws = np.empty((n_rows, K), dtype=np.float32)
    nxt = 0  # the buffers the next trial writes
    Pc = P0  # the softmax at the current point
    w = np.empty(n)
    dW = np.zeros((n_rows, n_slots), dtype=np.float32)
    changeT = np.empty((n_slots, m) if sparse else (0, 0), dtype=np.float32)
    A32T = np.empty((n_slots, m) if sparse else (0, 0), dtype=np.float32)
    gains = np.empty(n)
    steps = 0
    stop = 0
    while steps < n_steps:
        for j in range(n):
            w[j] = w_all[ws[j]]
        free = np.empty(n, dtype=np.bool_)
        anyfree = False
        for j in range(n):
            free[j] = w[j] > 0 or g_ws[j] < 0
            anyfree = anyfree or free[j]
        if not anyfree:
            stop = 1
            break
        gf = np.where(free, g_ws, 0.0)
        d = _direction(gf, free, S, Y, n_pairs)
        if np.dot(d, gf) >= 0.0:  # not a descent direction: drop the memory
            n_pairs = 0
            d = _direction(gf, free, S, Y, n_pairs)
        w_sum = w_all.sum()
        t = 1.0
        have_dir = False
        if newton and (stats[2] != 0 or n_pairs == 0):
            # first trial: the Newton step length along d, a power of two <= 1 (only where
            # the L-BFGS scaling is in doubt: no memory, new columns or a changed working
            # set, or a last step that did not take t = 1 at its first trial)
            t, have_dir = _newton_length(
                d, gf, row, slot, HwsT, Hws, dW, changeT, cdir, sparse, Pc, y, gamma,
                identity, beta * C / m,
            )  # fmt: skip
        accepted = False
        ft = 0.0
        Ft = Fbuf[nxt]
        Pt = Pbuf[nxt]
        At = A32buf[nxt]
        wt = w
        dw = w
        t_first = t
        n_trials = 0
        for _ in range(40):
            stats[0] += 1
            n_trials += 1
            wt = w + t * d
            if have_dir and wt.min() >= 0.0:  # nothing clipped: the step is t d exactly
                dw = t * d
                src, tscale = cdir, t
            else:
                wt = np.maximum(wt, 0.0)
                dw = wt - w
                _direction_change(dw, row, slot, HwsT, Hws, dW, changeT, change, sparse)
                src, tscale = change, 1.0
            if identity:
                h_t, lse_t = _shifted_lse_weights(
                    F, src, tscale, Ft, y, delta, beta, Pt, At, 1.0 / m, C
                )
            else:
                for i in range(m):
                    for k in range(n_slots):
                        Ft[i, k] = F[i, k] + np.float64(src[i, k]) * tscale
                h_t, lse_t = _lse_value(Ft, gamma, identity, y, delta, beta, Pt)
            ft = (w_sum + dw.sum()) + C * (lse_t / m)
            if ft <= f0 + ARMIJO * np.dot(g_ws, dw):
                accepted = True
                hinge, lse = h_t, lse_t
                break
            t *= 0.5
        if not accepted:
            stats[1] += 1
            stop = 1
            break
        stats[2] = 1 if (n_trials > 1 or t_first != 1.0) else 0
        for j in range(n):
            w_all[ws[j]] = wt[j]
        F = Ft
        P = Pt
        Pc = Pt
        A32 = At
        nxt = 1 - nxt
        if sparse:
            if identity:  # A32: the trial's row pass wrote the duals
                for i in range(m):
                    for k in range(n_slots):
                        A32T[k, i] = A32[i, k]
            else:
                A = _weights(P, y, gamma, gamma_true, identity, 1.0 / m, C)
                for i in range(m):
                    for k in range(n_slots):
                        A32T[k, i] = np.float32(A[i, k])
            _column_gains(Hws, A32T, row, slot, gains)
        elif identity:
            np.dot(Hws, A32, Gws)
            for j in range(n):
                gains[j] = np.float64(Gws[row[j], slot[j]])
        else:
            A = _weights(P, y, gamma, gamma_true, identity, 1.0 / m, C)
            _ws_gains(Hws, A, row, slot, gains)
        gains_ws[:] = gains
        g_new = 1.0 - gains
        yv = g_new - g_ws
        g_ws[:] = g_new
        steps += 1
        f_prev = f0
        f0 = ft
        if np.dot(dw, yv) > 1e-12:
            if n_pairs == memory:
                for p in range(memory - 1):
                    S[p] = S[p + 1]
                    Y[p] = Y[p + 1]
                n_pairs -= 1
            S[n_pairs] = dw
            Y[n_pairs] = yv
            n_pairs += 1
        if f_prev - ft <= tol * max(abs(ft), 1e-12):
            stop = 1
            break
    return steps, n_pairs, stop, F, P, hinge, lse, f0
