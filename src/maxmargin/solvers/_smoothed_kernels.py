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


@njit(cache=True)
def _lse_value(F, gamma, identity, y, delta, beta, P):  # pragma: no cover - compiled
    """``P <- softmax(beta a)`` (entries below 1e-30 flushed to 0) for the coded margins
    ``a_ik = delta[y_i, k] + G_ik - G_(i, y_i)``, ``G = F Gamma'``; returns ``(sum_i
    max_k a_ik, sum_i LSE_i)``."""
    G = _label_scores(F, gamma, identity)
    m, K = P.shape
    hinge = 0.0
    lse = 0.0
    for i in range(m):
        yi = y[i]
        own = G[i, yi]
        a = -np.inf
        for k in range(K):
            v = delta[yi, k] + G[i, k] - own
            P[i, k] = v
            if v > a:
                a = v
        z = 0.0
        for k in range(K):
            e = np.exp(beta * (P[i, k] - a))
            P[i, k] = e
            z += e
        inv = 1.0 / z
        for k in range(K):
            p = P[i, k] * inv
            P[i, k] = p if p > 1e-30 else 0.0
        hinge += a
        lse += a + np.log(z) / beta
    return hinge, lse


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
):  # pragma: no cover - compiled
    """Up to ``n_steps`` projected L-BFGS steps on the working set ``ws`` (see
    ``SmoothedProblem.solve``).  ``w_all``, ``g_ws`` (the working set's gradient ``1 -
    gain``), ``S``, ``Y`` (L-BFGS pairs, oldest first, ``n_pairs`` of them) are updated in
    place.  ``HwsT`` / ``Hws``: float32 outputs of the working set's classifiers (n_z,
    n_rows) / (n_rows, n_z); column ``ws[j]`` is classifier ``row[j]`` of them in slot
    ``slot[j]``.  ``f0``: the current smoothed objective.  ``gains_ws`` gets the working
    set's gains at the last accepted point.  ``stats`` (int64, 2) counts the line
    search's trial points and its failures (added to what it holds).

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
    Pt = np.empty((m, K))
    w = np.empty(n)
    dW = np.zeros((n_rows, n_slots), dtype=np.float32)
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
        accepted = False
        ft = 0.0
        Ft = F
        wt = w
        dw = w
        for _ in range(40):
            stats[0] += 1
            wt = np.maximum(w + t * d, 0.0)
            dw = wt - w
            dW[:] = 0
            for j in range(n):
                if dw[j] != 0.0:
                    dW[row[j], slot[j]] = np.float32(dw[j])
            change = np.dot(HwsT, dW)
            Ft = F + change
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
        for j in range(n):
            w_all[ws[j]] = wt[j]
        F = Ft
        P = Pt.copy()
        A = _weights(P, y, gamma, gamma_true, identity, 1.0 / m, C)
        gains = np.empty(n)
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
