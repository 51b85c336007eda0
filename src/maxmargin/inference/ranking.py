"""Most violated 1-slack constraints for structured output ranking.

Implements Blaschko, Mittal & Rahtu, "An O(n log n) cutting plane algorithm for
structured output ranking", GCPR 2014:

* [Blaschko2014 Alg. 1] -- one linear sweep over score-sorted samples for a complete
  bipartite preference graph (every "top" sample above every "rest" sample);
* [Blaschko2014 Alg. 2] -- divide and conquer over loss-sorted halves for the complete
  preference graph, re-using the score order of the parent (a stable partition,
  no re-sorting), so one iteration costs O(n log n) in total (the initial sort).

Both rescalings of the hinge bound are supported.  For an edge (i, j), i.e.
``loss[i] < loss[j]`` so that i should score higher, with ``d = loss[j] - loss[i]``:

* margin rescaling ([Blaschko2014 eq. 3]): violated iff ``s[j] + loss[j] > s[i] + loss[i]``,
  contribution ``d - (s[i] - s[j])``;
* slack rescaling ([Blaschko2014 eq. 4]): violated iff ``s[j] + 1 > s[i]``, contribution
  ``d * (1 - (s[i] - s[j]))``;
* ``"unit"``: violated iff ``s[j] + 1 > s[i]``, contribution ``1 - (s[i] - s[j])``
  whatever the loss gap -- the pairwise hinge of ordinal regression / AUC in
  StructBoost (Shen et al., TPAMI 2014, [Shen2014 eq. 14]), where every ordered pair needs a
  unit margin and counts once.

Summing the contributions of all violated edges gives the most violated
constraint ``delta - <w, sum_i alpha_i phi_i> <= xi`` with
``delta = sum d`` (the number of violated edges for "unit") and ``alpha_i`` =
(sum over violated edges where i is the upper end) minus (sum where i is the lower
end) of ``d`` (slack) or ``1`` (margin, unit).  Edges whose hinge is exactly zero
are *not* counted (strict comparison); pairs with equal losses are never edges,
because the risk ([Blaschko2014 eq. 1]) weights a pair by ``|loss[j] - loss[i]|``.  See
docs/ranking.md.

Preference graphs, all restricted to pairs inside one group (query / image id)
when ``group`` is given:

* ``"complete"``: every pair with different losses;
* ``"bipartite"``: the ``top_k`` lowest-loss samples (extended by samples tied
  with the k-th loss) above all others; ``top_k=None`` means every sample with a
  loss below the group's maximum above the samples at the maximum (relevant vs
  non-relevant for graded relevance);
* ``"star"``: the samples at the group's minimum loss (the ground truth) above
  all others.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from maxmargin._validation import check_vector
from maxmargin.inference._threads import numba_threads, resolve_threads

__all__ = [
    "GRAPHS",
    "NORMALIZATIONS",
    "RESCALINGS",
    "PreferenceGraph",
    "brute_force_constraint",
    "check_options",
    "most_violated_constraint",
]

GRAPHS = ("complete", "bipartite", "star")
RESCALINGS = ("margin", "slack", "unit")
_MODE = {"margin": 0, "slack": 1, "unit": 2}
NORMALIZATIONS = ("pairs", "query")


def check_options(graph="complete", rescaling="margin", normalize="pairs"):
    """Raise ValueError naming an unknown graph, rescaling or hinge normalisation."""
    if graph not in GRAPHS:
        raise ValueError(f"graph must be one of {GRAPHS}, got {graph!r}")
    if rescaling not in RESCALINGS:
        raise ValueError(f"rescaling must be one of {RESCALINGS}, got {rescaling!r}")
    if normalize not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {normalize!r}")


_KIND = {"complete": 0, "bipartite": 1, "star": 2}


class LossTree(NamedTuple):
    """The recursion tree of [Blaschko2014 Alg. 2] over the samples sorted by (group, loss); it
    depends on the losses only, so it is built once per fit.

    Node ``k`` relates the positions ``lo[k]:t[k]`` (upper side, lower losses) to
    ``t[k]:hi[k]``; level ``l`` holds the nodes ``level_off[l]:level_off[l + 1]``; group
    ``g`` holds the positions ``group_starts[g]:group_starts[g + 1]``; ``loss`` is the
    sorted loss vector.
    """

    loss: np.ndarray
    lo: np.ndarray
    t: np.ndarray
    hi: np.ndarray
    level_off: np.ndarray
    group_starts: np.ndarray


class ViolationRule(NamedTuple):
    """When an edge counts as violated and what it contributes (see the module doc):
    key gap ``margin`` (0 with margin rescaling, whose keys carry the loss; else 1),
    ``mode`` 0 margin / 1 slack / 2 unit, ``strict`` comparison."""

    margin: float
    mode: int
    strict: bool


# --------------------------------------------------------------------------- #
# tree of bipartite subproblems (depends on the losses only)
# --------------------------------------------------------------------------- #
@njit(cache=True)
def _split(loss, lo, hi, kind, top_k):
    """Split position t (lo < t < hi) with loss[lo:t] < loss[t:hi], or -1 if none."""
    if hi - lo < 2 or loss[lo] == loss[hi - 1]:
        return -1
    if kind == 0:  # complete: boundary between distinct losses nearest the middle
        mid = lo + (hi - lo) // 2
        if loss[mid - 1] != loss[mid]:
            return mid
        a = mid
        while a > lo and loss[a - 1] == loss[mid]:
            a -= 1
        b = mid
        while b < hi and loss[b] == loss[mid]:
            b += 1
        if a == lo:
            return b
        if b == hi:
            return a
        return a if mid - a <= b - mid else b
    if kind == 1:
        if top_k < 0:  # everything below the maximum vs the maximum
            t = hi - 1
            while t > lo and loss[t - 1] == loss[hi - 1]:
                t -= 1
            return t
        k = min(top_k, hi - lo)
        if k <= 0:
            return -1
        t = lo + k
        while t < hi and loss[t] == loss[t - 1]:
            t += 1
        return t if t < hi else -1
    # star: minimum-loss block vs the rest
    t = lo + 1
    while t < hi and loss[t] == loss[lo]:
        t += 1
    return t if t < hi else -1


@njit(cache=True)
def _build_tree(loss, group_starts, kind, top_k):
    """Breadth-first list of bipartite nodes (lo, t, hi) and level offsets."""
    n = loss.shape[0]
    cap = max(n, 1)
    node_lo = np.empty(cap, np.int64)
    node_t = np.empty(cap, np.int64)
    node_hi = np.empty(cap, np.int64)
    level_off = np.empty(cap + 1, np.int64)
    m = 0
    for g in range(group_starts.shape[0] - 1):
        lo = group_starts[g]
        hi = group_starts[g + 1]
        t = _split(loss, lo, hi, kind, top_k)
        if t >= 0:
            node_lo[m] = lo
            node_t[m] = t
            node_hi[m] = hi
            m += 1
    level_off[0] = 0
    n_levels = 0
    start = 0
    while start < m:
        n_levels += 1
        level_off[n_levels] = m
        if kind != 0:
            break
        end = m
        for k in range(start, end):
            lo, t, hi = node_lo[k], node_t[k], node_hi[k]
            for a, b in ((lo, t), (t, hi)):
                tt = _split(loss, a, b, 0, 0)
                if tt >= 0:
                    node_lo[m] = a
                    node_t[m] = tt
                    node_hi[m] = b
                    m += 1
        start = end
    return (
        node_lo[:m].copy(),
        node_t[:m].copy(),
        node_hi[:m].copy(),
        level_off[: n_levels + 1].copy(),
    )


# --------------------------------------------------------------------------- #
# [Blaschko2014 Alg. 1] (sweep) and [Blaschko2014 Alg. 2] (levels of the recursion)
# --------------------------------------------------------------------------- #
@njit(cache=True)
def _sweep(sq, sk, sl, ca, lo, t, hi, margin, mode, strict):
    """[Blaschko2014 Alg. 1] on one bipartite node; returns its delta, accumulates alpha.

    ``sq[lo:hi]`` holds the positions lo..hi-1 sorted by ascending key, with
    their keys ``sk`` and losses ``sl`` carried alongside (sequential memory
    access); the alpha contributions are accumulated into ``ca`` in the same
    order; positions < t form the upper ("plus") side.  A minus sample j
    violates every plus sample i with key[i] < key[j] + margin (<= if not
    strict); by transitivity these form a growing prefix of the plus samples
    in key order, so one pass suffices.  ``mode``: 0 margin rescaling (alpha counts
    edges, delta sums loss gaps), 1 slack rescaling (both weighted by the loss gap),
    2 unit (both count edges).
    """
    tot_m = 0.0
    for idx in range(lo, hi):
        if sq[idx] >= t:
            tot_m += sl[idx]
    n_m = hi - t
    ip = lo
    cnt_p = 0
    sum_p = 0.0
    pre_cnt = 0
    pre_sum = 0.0
    delta = 0.0
    for idx in range(lo, hi):
        if sq[idx] < t:
            continue
        kj = sk[idx] + margin
        lj = sl[idx]
        while ip < hi:
            if sq[ip] >= t:
                ip += 1
                continue
            ki = sk[ip]
            if ki < kj or (not strict and ki == kj):
                li = sl[ip]
                if mode == 1:
                    ca[ip] += (tot_m - pre_sum) - (n_m - pre_cnt) * li
                else:
                    ca[ip] += n_m - pre_cnt
                cnt_p += 1
                sum_p += li
                ip += 1
            else:
                break
        c = cnt_p * lj - sum_p
        delta += cnt_p if mode == 2 else c
        if mode == 1:
            ca[idx] -= c
        else:
            ca[idx] -= cnt_p
        pre_cnt += 1
        pre_sum += lj
    return delta


@njit(cache=True)
def _place(tree, p, key, l0, cq, ck, cl):  # pragma: no cover - compiled
    """The key order of level ``l0``: the global order ``p`` scattered into the level's
    node segments (positions, keys and losses side by side); slots outside the level's
    nodes get position -1 (inert)."""
    loss, node_lo, node_hi, level_off = tree.loss, tree.lo, tree.hi, tree.level_off
    n = loss.shape[0]
    a, b = level_off[l0], level_off[l0 + 1]
    if b - a == 1 and node_lo[a] == 0 and node_hi[a] == n:
        for i in range(n):
            q = p[i]
            cq[i] = q
            ck[i] = key[q]
            cl[i] = loss[q]
        return
    owner = np.full(n, -1, np.int64)
    cursor = np.empty(b - a, np.int64)
    for k in range(a, b):
        cursor[k - a] = node_lo[k]
        for q in range(node_lo[k], node_hi[k]):
            owner[q] = k - a
    for i in range(n):
        q = p[i]
        k = owner[q]
        if k >= 0:
            j = cursor[k]
            cq[j] = q
            ck[j] = key[q]
            cl[j] = loss[q]
            cursor[k] = j + 1
    for i in range(n):
        if owner[i] < 0:
            cq[i] = -1


@njit(cache=True)
def _level_buffers(n):  # pragma: no cover - compiled
    """The current and the next level's positions, keys, losses and running alpha."""
    return (
        np.empty(n, np.int64), np.empty(n), np.empty(n), np.zeros(n),
        np.empty(n, np.int64), np.empty(n), np.empty(n), np.empty(n),
    )  # fmt: skip


@njit(cache=True)
def _run_levels(tree, p, key, l0, l1, rule, alpha, delta_g):
    """Process tree levels l0..l1-1 ([Blaschko2014 Alg. 2] without recursion).

    The key order of level l0 is obtained by scattering the global order ``p``
    into the node segments (:func:`_place`); each further level is a stable partition
    of the previous one (lines 6/8 of [Blaschko2014 Alg. 2]), never a re-sort
    (:func:`_node_step`).  Position, key, loss and the running alpha of every sample
    travel together through the partitions, so the hot loops only touch memory
    sequentially; alpha is scattered back once at the end.
    """
    node_lo, level_off, group_starts = tree.lo, tree.level_off, tree.group_starts
    margin, mode, strict = rule.margin, rule.mode, rule.strict
    n = tree.loss.shape[0]
    if l0 >= l1:
        return
    cq, ck, cl, ca, nq, nk, nl, na = _level_buffers(n)
    _place(tree, p, key, l0, cq, ck, cl)
    for lev in range(l0, l1):
        last = lev == l1 - 1
        k0, k1 = level_off[lev], level_off[lev + 1]
        for k in range(k0, k1):
            d = _node_step(
                cq, ck, cl, ca, nq, nk, nl, na, tree.lo, tree.t, tree.hi, k, k0, k1, last,
                margin, mode, strict,
            )  # fmt: skip
            g = np.searchsorted(group_starts, node_lo[k], side="right") - 1
            delta_g[g] += d
        if not last:
            cq, nq = nq, cq
            ck, nk = nk, ck
            cl, nl = nl, cl
            ca, na = na, ca
    for i in range(n):
        q = cq[i]
        if q >= 0:
            alpha[q] += ca[i]


@njit(cache=True, inline="always")
def _node_step(
    cq, ck, cl, ca, nq, nk, nl, na, node_lo, node_t, node_hi, k, k0, k1, last, margin, mode, strict
):  # pragma: no cover - compiled
    """One node of a level of :func:`_run_tree`: its sweep (returns the node's delta)
    and, unless ``last``, the stable partition of its range into the next buffers plus
    the inactive gap before it (and, for the level's last node, after it)."""
    n = cq.shape[0]
    lo, t, hi = node_lo[k], node_t[k], node_hi[k]
    d = _sweep(cq, ck, cl, ca, lo, t, hi, margin, mode, strict)
    if last:
        return d
    g0 = node_hi[k - 1] if k > k0 else 0
    for j in range(g0, lo):
        nq[j] = cq[j]
        na[j] = ca[j]
    if k == k1 - 1:
        for j in range(hi, n):
            nq[j] = cq[j]
            na[j] = ca[j]
    ia = lo
    ib = t
    for idx in range(lo, hi):
        q = cq[idx]
        if q < t:
            j = ia
            ia += 1
        else:
            j = ib
            ib += 1
        nq[j] = q
        nk[j] = ck[idx]
        nl[j] = cl[idx]
        na[j] = ca[idx]
    return d


@njit(cache=True, parallel=True)
def _run_tree(tree, p, key, rule, alpha, delta_g):  # pragma: no cover - compiled
    """:func:`_run_levels` over all levels with the nodes of each level on numba's
    threads (the nodes of a level cover disjoint position ranges, so each one sweeps and
    partitions its own range).  Every node does the arithmetic the serial loop does, and
    the node deltas are added to ``delta_g`` in node order after each level, so the answer
    is the same, bit for bit, for any number of threads.
    """
    loss, node_lo, node_t, node_hi = tree.loss, tree.lo, tree.t, tree.hi
    level_off, group_starts = tree.level_off, tree.group_starts
    margin, mode, strict = rule.margin, rule.mode, rule.strict
    n = loss.shape[0]
    L = level_off.shape[0] - 1
    if L == 0:
        return
    cq, ck, cl, ca, nq, nk, nl, na = _level_buffers(n)
    if level_off[1] - level_off[0] == 1 and node_lo[0] == 0 and node_hi[0] == n:
        for i in prange(n):  # one root over all samples: _place's gather, on the threads
            q = p[i]
            cq[i] = q
            ck[i] = key[q]
            cl[i] = loss[q]
    else:
        _place(tree, p, key, 0, cq, ck, cl)
    dnode = np.zeros(node_lo.shape[0])
    for lev in range(L):
        last = lev == L - 1
        k0, k1 = level_off[lev], level_off[lev + 1]
        for k in prange(k0, k1):
            dnode[k] = _node_step(
                cq, ck, cl, ca, nq, nk, nl, na, node_lo, node_t, node_hi, k, k0, k1, last,
                margin, mode, strict,
            )  # fmt: skip
        for k in range(k0, k1):
            g = np.searchsorted(group_starts, node_lo[k], side="right") - 1
            delta_g[g] += dnode[k]
        if not last:
            cq, nq = nq, cq
            ck, nk = nk, ck
            cl, nl = nl, cl
            ca, na = na, ca
    for i in prange(n):
        q = cq[i]
        if q >= 0:
            alpha[q] += ca[i]


@njit(cache=True, parallel=True)
def _gather_add(x, idx, add, with_add, out):  # pragma: no cover - compiled
    """``out = x[idx] (+ add)``: the same numbers for any thread count."""
    for i in prange(idx.shape[0]):
        out[i] = x[idx[i]] + add[i] if with_add else x[idx[i]]


@njit(cache=True, parallel=True)
def _scatter(x, idx, out):  # pragma: no cover - compiled
    """``out[idx] = x``."""
    for i in prange(idx.shape[0]):
        out[idx[i]] = x[i]


#: below this many samples the oracle runs on one thread (waking the pool costs more)
_PARALLEL_N = 200_000
#: the sort of the keys is cut into this many fixed pieces above _PIECEWISE_N samples
_SORT_PIECES = 4
_PIECEWISE_N = 1 << 20


def sorted_order(key, threads: int = 1, stable: bool = False) -> np.ndarray:
    """``argsort(key)`` as int64, the same permutation for any ``threads``.

    ``stable``: the stable order (ties by index), which is unique, so one thread sorts
    in one call and more threads sort the fixed pieces stably and merge them (ties from
    the left piece first keep it stable) -- the same permutation either way.

    Above ``_PIECEWISE_N`` samples the keys are cut into ``_SORT_PIECES`` fixed pieces,
    each sorted by NumPy's argsort (which releases the GIL, so the pieces sort on
    ``threads`` Python threads), and the pieces are merged pairwise, ties taken from
    the left piece first (:func:`_merge_sorted`, split over the threads by co-rank).
    The pieces do not depend on ``threads``, so neither does the permutation.
    """
    n = key.shape[0]
    kind = "stable" if stable else None
    if n < _PIECEWISE_N or (stable and threads <= 1):
        return np.argsort(key, kind=kind).astype(np.int64, copy=False)
    bounds = np.linspace(0, n, _SORT_PIECES + 1).astype(np.int64)

    def piece(c):
        lo = bounds[c]
        return np.argsort(key[lo : bounds[c + 1]], kind=kind).astype(np.int64, copy=False) + lo

    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=threads) as ex:
            parts = list(ex.map(piece, range(_SORT_PIECES)))
    else:
        parts = [piece(c) for c in range(_SORT_PIECES)]
    with numba_threads(threads):
        while len(parts) > 1:
            merged = []
            for c in range(0, len(parts) - 1, 2):
                out = np.empty(len(parts[c]) + len(parts[c + 1]), np.int64)
                _merge_sorted(key, parts[c], parts[c + 1], out, max(1, 4 * threads))
                parts[c] = parts[c + 1] = None  # free the runs as they are merged
                merged.append(out)
            if len(parts) % 2:
                merged.append(parts[-1])
            parts = merged
    return parts[0]


@njit(cache=True)
def _co_rank(key, A, B, k):  # pragma: no cover - compiled
    """How many of the first ``k`` merged elements come from ``A`` (ties: A first)."""
    na, nb = A.shape[0], B.shape[0]
    lo = max(0, k - nb)
    hi = min(k, na)
    while lo < hi:
        i = (lo + hi) // 2
        j = k - i
        if j > 0 and key[A[i]] <= key[B[j - 1]]:
            lo = i + 1
        else:
            hi = i
    return lo


@njit(cache=True, parallel=True)
def _merge_sorted(key, A, B, out, n_segments):  # pragma: no cover - compiled
    """Merge index arrays ``A`` and ``B`` (each sorted by ``key``) into ``out``, taking
    ``A``'s element first on equal keys; the output is cut into ``n_segments`` ranges
    merged in parallel (the result does not depend on ``n_segments``)."""
    na, nb = A.shape[0], B.shape[0]
    n = na + nb
    S = max(1, min(n_segments, n))
    for s in prange(S):
        k0 = n * s // S
        k1 = n * (s + 1) // S
        i = _co_rank(key, A, B, k0)
        j = k0 - i
        for k in range(k0, k1):
            if j >= nb or (i < na and key[A[i]] <= key[B[j]]):
                out[k] = A[i]
                i += 1
            else:
                out[k] = B[j]
                j += 1


# --------------------------------------------------------------------------- #
# Huber-smoothed pairwise hinge over the same tree (StructBoost's fast master)
# --------------------------------------------------------------------------- #
@njit(cache=True)
def _prefix(x, w):  # pragma: no cover - compiled
    """Prefix sums of w, w x and w x^2 (length len(x) + 1)."""
    n = x.shape[0]
    p0 = np.zeros(n + 1)
    p1 = np.zeros(n + 1)
    p2 = np.zeros(n + 1)
    for k in range(n):
        p0[k + 1] = p0[k] + w[k]
        p1[k + 1] = p1[k] + w[k] * x[k]
        p2[k + 1] = p2[k] + w[k] * x[k] * x[k]
    return p0, p1, p2


@njit(cache=True)
def _huber_tree(tree, a, b, om, delta, slack, margin_dual):
    """Sums of the Huber-smoothed hinge h(b_j - a_i) over every edge (i upper, j lower)
    of every node of ``tree``, in sorted coordinates (``c`` = the sorted losses); see
    :meth:`PreferenceGraph.smoothed_hinge`.

    ``h(u) = 0`` (u <= 0), ``u^2 / (2 delta)`` (0 < u < delta), ``u - delta / 2`` above.
    Edge weight ``om_i`` (``* (c_j - c_i)`` if ``slack``).  Returns (A, risk, smooth,
    dual): ``A = -d smooth / d key`` per position (upper: the a side, lower: the b side),
    risk the same sum with the plain hinge, dual ``sum om h'(u) d`` (``d = c_j - c_i`` if
    ``slack`` or ``margin_dual``, else 1).
    """
    node_lo, node_t, node_hi, c = tree.lo, tree.t, tree.hi, tree.loss
    n = a.shape[0]
    A = np.zeros(n)
    risk = 0.0
    smooth = 0.0
    dual = 0.0
    ones = np.ones(n)
    for node in range(node_lo.shape[0]):
        lo, t, hi = node_lo[node], node_t[node], node_hi[node]
        if t <= lo or hi <= t:
            continue
        # ---- upper side: for each i, sums over the lower keys b_j
        ordL = np.argsort(b[t:hi])
        ref = b[t + ordL[(hi - t) // 2]]
        x = b[t:hi][ordL] - ref
        cl = c[t:hi][ordL]
        nL = x.shape[0]
        p0, p1, p2 = _prefix(x, ones[:nL])
        q0, q1, q2 = _prefix(x, cl)
        for i in range(lo, t):
            ai = a[i] - ref
            k1 = np.searchsorted(x, ai, side="right")  # first b_j > a_i
            k2 = np.searchsorted(x, ai + delta, side="left")  # first b_j >= a_i + delta
            # weight 1
            nw, sw, qw = p0[k2] - p0[k1], p1[k2] - p1[k1], p2[k2] - p2[k1]
            na, sa = p0[nL] - p0[k2], p1[nL] - p1[k2]
            H0 = (qw - 2.0 * ai * sw + ai * ai * nw) / (2.0 * delta) + sa - (ai + 0.5 * delta) * na
            D0 = (sw - ai * nw) / delta + na
            R0 = sw + sa - ai * (nw + na)
            # weight c_j
            nw, sw, qw = q0[k2] - q0[k1], q1[k2] - q1[k1], q2[k2] - q2[k1]
            na, sa = q0[nL] - q0[k2], q1[nL] - q1[k2]
            H1 = (qw - 2.0 * ai * sw + ai * ai * nw) / (2.0 * delta) + sa - (ai + 0.5 * delta) * na
            D1 = (sw - ai * nw) / delta + na
            R1 = sw + sa - ai * (nw + na)
            w = om[i]
            ci = c[i]
            if slack:
                smooth += w * (H1 - ci * H0)
                risk += w * (R1 - ci * R0)
                g = w * (D1 - ci * D0)
                A[i] += g
                dual += g
            else:
                smooth += w * H0
                risk += w * R0
                A[i] += w * D0
                dual += w * (D1 - ci * D0) if margin_dual else w * D0
        # ---- lower side: for each j, sums of h'(b_j - a_i) over the upper keys a_i
        ordU = np.argsort(a[lo:t])
        ref = a[lo + ordU[(t - lo) // 2]]
        y = a[lo:t][ordU] - ref
        cu = c[lo:t][ordU]
        nU = y.shape[0]
        r0, r1, _ = _prefix(y, ones[:nU])
        s0, s1, _ = _prefix(y, cu)
        for j in range(t, hi):
            bj = b[j] - ref
            k2 = np.searchsorted(y, bj - delta, side="right")  # a_i <= b_j - delta: h' = 1
            k1 = np.searchsorted(y, bj, side="left")  # a_i < b_j: in the window
            E0 = r0[k2] + (bj * (r0[k1] - r0[k2]) - (r1[k1] - r1[k2])) / delta
            w = om[j]
            if slack:
                E1 = s0[k2] + (bj * (s0[k1] - s0[k2]) - (s1[k1] - s1[k2])) / delta
                A[j] -= w * (c[j] * E0 - E1)
            else:
                A[j] -= w * E0
    return A, risk, smooth, dual


# --------------------------------------------------------------------------- #
# public API
# --------------------------------------------------------------------------- #
class PreferenceGraph:
    """Losses, groups and graph kind, prepared once for many oracle calls.

    Sorting the samples by (group, loss) and building the recursion tree of
    [Blaschko2014 Alg. 2] depend only on the losses, so they are done here; each call
    of :meth:`most_violated` then costs one sort of the scores plus a linear
    pass per tree level.

    Parameters
    ----------
    loss : array of shape (n,)
        Structured losses Delta_i (lower is better).
    graph : {"complete", "bipartite", "star"}
    group : array of shape (n,) or None
        Query / image ids; edges exist only inside a group.
    top_k : int or None
        Size of the upper side of the "bipartite" graph per group.
    n_jobs : int or None
        Threads for sorting the losses (ungrouped, above ``_PARALLEL_N`` samples); the
        order is the stable one for any value.
    """

    def __init__(self, loss, graph="complete", group=None, top_k=None, n_jobs=None):
        loss = check_vector("loss", loss)
        n = loss.shape[0]
        if graph not in _KIND:
            raise ValueError(f"graph must be one of {GRAPHS}, got {graph!r}")
        if top_k is not None:
            if graph != "bipartite":
                raise ValueError("top_k is only used with graph='bipartite'")
            if int(top_k) != top_k or top_k < 1:
                raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        if group is None:
            gid = np.zeros(n, np.int64)
        else:
            group = np.asarray(group)
            if group.shape != (n,):
                raise ValueError(f"group has shape {group.shape}, expected ({n},)")
            _, gid = np.unique(group, return_inverse=True)
            gid = gid.astype(np.int64).ravel()
        self.n = n
        self.graph = graph
        self.top_k = top_k
        # the stable order of the losses is unique: the same for any n_jobs
        threads = resolve_threads(n_jobs) if n >= _PARALLEL_N else 1
        if group is not None:
            order = np.lexsort((loss, gid))
        else:
            order = sorted_order(loss, threads, stable=True)
        self.order = order.astype(np.int64)
        self.loss_sorted = np.empty(n)
        with numba_threads(threads):
            _gather_add(loss, self.order, loss, False, self.loss_sorted)
        G = int(gid.max()) + 1 if n else 0
        counts = np.bincount(gid, minlength=G) if n else np.zeros(0, np.int64)
        self.group_starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.n_groups = G
        k = -1 if top_k is None else int(top_k)
        self.node_lo, self.node_t, self.node_hi, self.level_off = _build_tree(
            self.loss_sorted, self.group_starts, _KIND[graph], k
        )
        self.tree = LossTree(
            self.loss_sorted,
            self.node_lo,
            self.node_t,
            self.node_hi,
            self.level_off,
            self.group_starts,
        )
        self.n_levels = self.level_off.shape[0] - 1
        self.edges_per_group = self._count_edges()
        self.pairs_per_group = self._count_pairs()

    def _count_edges(self):
        """Number of edges (pairs with different losses joined by the graph) per group.

        The nodes of the tree have disjoint edge sets whose union is the graph's
        edge set, so this is the sum of |upper| * |lower| over nodes."""
        e = (self.node_t - self.node_lo) * (self.node_hi - self.node_t)
        g = np.searchsorted(self.group_starts, self.node_lo, side="right") - 1
        return np.bincount(g, weights=e.astype(np.float64), minlength=self.n_groups)

    def _count_pairs(self):
        """Unordered pairs the graph relates, per group (normaliser of [Blaschko2014 eq. 1])."""
        if self.graph == "complete":
            m = np.diff(self.group_starts).astype(np.float64)
            return m * (m - 1) / 2
        # bipartite / star: |top| * |rest| (all such pairs have different losses)
        return self.edges_per_group.copy()

    def hinge_weights(self, normalize="pairs"):
        """Weights ``(w_group, w_sample)`` that average pairwise hinges.

        ``"pairs"``: every edge weighs ``1/|E|`` (average over all edges);
        ``"query"``: an edge of group g weighs ``1/(G' |E_g|)`` with G' the number of groups
        that have edges (average inside each group, then over groups).  ``w_sample`` is
        ``w_group`` of each sample's group, in the original sample order.
        """
        edges = self.edges_per_group
        if normalize == "pairs":
            w_group = np.full(self.n_groups, 1.0 / max(edges.sum(), 1.0))
        else:
            check_options(normalize=normalize)
            has = edges > 0
            w_group = np.where(has, 1.0 / (max(has.sum(), 1) * np.maximum(edges, 1)), 0.0)
        gid = np.empty(self.n, np.int64)
        gid[self.order] = np.repeat(np.arange(self.n_groups), np.diff(self.group_starts))
        return w_group, w_group[gid]

    def _threads(self, n_jobs) -> int:
        """numba threads for a call: one below ``_PARALLEL_N`` samples."""
        return resolve_threads(n_jobs) if self.n >= _PARALLEL_N else 1

    def _run(self, key_sorted, rule, n_jobs):
        threads = resolve_threads(n_jobs)
        p = sorted_order(key_sorted, threads)
        alpha = np.zeros(self.n)
        delta_g = np.zeros(self.n_groups)
        if threads == 1 or self.n < _PARALLEL_N:
            _run_levels(self.tree, p, key_sorted, 0, self.n_levels, rule, alpha, delta_g)
        else:
            with numba_threads(threads):
                _run_tree(self.tree, p, key_sorted, rule, alpha, delta_g)
        return alpha, delta_g

    def most_violated(self, scores, rescaling="margin", n_jobs=1):
        """Most violated constraint for the current scores.

        Returns
        -------
        alpha : ndarray of shape (n,)
            Coefficients in the original sample order.
        delta_per_group : ndarray of shape (n_groups,)
            The constant term split by group (sum it for the paper's delta).
        """
        if rescaling not in RESCALINGS:
            raise ValueError(f"rescaling must be one of {RESCALINGS}, got {rescaling!r}")
        scores = check_vector("scores", scores, self.n)
        threads = self._threads(n_jobs)
        key = np.empty(self.n)
        margin = 0.0 if rescaling == "margin" else 1.0
        with numba_threads(threads):  # the key in sorted order: s[order] (+ loss)
            _gather_add(scores, self.order, self.loss_sorted, rescaling == "margin", key)
        rule = ViolationRule(float(margin), _MODE[rescaling], True)
        alpha_s, delta_g = self._run(key, rule, n_jobs)
        alpha = np.empty(self.n)
        with numba_threads(threads):
            _scatter(alpha_s, self.order, alpha)
        return alpha, delta_g

    def smoothed_hinge(self, scores, delta, rescaling="unit", weights=None):
        """Huber-smoothed weighted pairwise hinge, its true value and its gradient.

        Every edge (i above j) contributes ``omega_i * kappa * h(t_ij)`` with the hinge
        argument ``t = 1 - s_i + s_j`` ("unit", "slack") or ``d - s_i + s_j`` ("margin",
        ``d = loss_j - loss_i``), ``kappa = d`` for "slack" and 1 otherwise, ``omega``
        per sample (its group's edge weight; default 1) and ``h`` the Huber hinge of
        width ``delta`` (:mod:`maxmargin.tasks.smoothing`).  Each bipartite node of the
        tree is one sort and prefix sums: O(n log^2 n) in all.

        Returns ``(risk, smooth, grad_weights, dual)``: the sum with the plain hinge, the
        smoothed sum, ``-d smooth / d scores`` (original order) and ``sum omega h' d``
        (``d`` = 1 for "unit"), the dual value of the pair weights ``h'``.
        """
        if rescaling not in RESCALINGS:
            raise ValueError(f"rescaling must be one of {RESCALINGS}, got {rescaling!r}")
        if not delta > 0:
            raise ValueError(f"delta must be > 0, got {delta!r}")
        s = check_vector("scores", scores, self.n)[self.order]
        if rescaling == "margin":
            a = b = np.ascontiguousarray(s + self.loss_sorted)
        else:
            a, b = np.ascontiguousarray(s - 1.0), np.ascontiguousarray(s)
        om = np.ones(self.n) if weights is None else check_vector("weights", weights, self.n)
        A_s, risk, smooth, dual = _huber_tree(
            self.tree,
            a,
            b,
            np.ascontiguousarray(om[self.order]),
            float(delta),
            rescaling == "slack",
            rescaling == "margin",
        )
        A = np.empty(self.n)
        A[self.order] = A_s
        return float(risk), float(smooth), A, float(dual)

    def misordered_weight(self, scores, strict=True, weighted=True):
        """Per group sum of ``loss[j] - loss[i]`` (of 1 if not ``weighted``) over edges
        with ``s[i] < s[j]`` (``<=`` if not strict); the building block of the risk
        ([Blaschko2014 eq. 1])."""
        s = np.ascontiguousarray(check_vector("scores", scores, self.n)[self.order])
        _, delta_g = self._run(s, ViolationRule(0.0, 1 if weighted else 2, bool(strict)), 1)
        return delta_g


def most_violated_constraint(
    loss, scores, graph="complete", rescaling="margin", group=None, top_k=None, n_jobs=1
):
    """Most violated 1-slack ranking constraint ``(alpha, delta)`` ([Blaschko2014 Algs. 1/2] of
    Blaschko et al., GCPR 2014); ``n_jobs > 1`` runs tree levels in parallel."""
    g = PreferenceGraph(loss, graph=graph, group=group, top_k=top_k)
    alpha, delta_g = g.most_violated(scores, rescaling=rescaling, n_jobs=n_jobs)
    return alpha, float(delta_g.sum())


# --------------------------------------------------------------------------- #
# O(n^2) reference
# --------------------------------------------------------------------------- #
def _upper_side(loss_g, graph, top_k):
    """Boolean mask of the upper side of a bipartite / star graph inside one group."""
    if graph == "star":
        return loss_g == loss_g.min()
    if top_k is None:
        return loss_g < loss_g.max()
    k = min(int(top_k), loss_g.shape[0])
    kth = np.sort(loss_g)[k - 1]
    return loss_g <= kth


def brute_force_constraint(
    loss, scores, graph="complete", rescaling="margin", group=None, top_k=None, block=2048
):
    """O(n^2) reference for :func:`most_violated_constraint`: enumerates all pairs."""
    loss = check_vector("loss", loss)
    n = loss.shape[0]
    s = check_vector("scores", scores, n)
    if group is None:
        group = np.zeros(n, np.int64)
    group = np.asarray(group)
    slack = rescaling == "slack"
    unit = rescaling == "unit"
    key = s + loss if rescaling == "margin" else s
    margin = 0.0 if rescaling == "margin" else 1.0
    alpha = np.zeros(n)
    delta = 0.0
    for gv in np.unique(group):
        idx = np.flatnonzero(group == gv)
        lg, kg = loss[idx], key[idx]
        up = np.ones(idx.shape[0], bool) if graph == "complete" else _upper_side(lg, graph, top_k)
        for b0 in range(0, idx.shape[0], block):
            r = slice(b0, b0 + block)
            # rows: upper end i, columns: lower end j
            d = lg[None, :] - lg[r, None]
            edge = d > 0
            if graph != "complete":
                edge &= up[r, None] & ~up[None, :]
            viol = edge & (kg[None, :] + margin > kg[r, None])
            w = np.where(viol, d if slack else 1.0, 0.0)
            delta += float(viol.sum()) if unit else float(np.where(viol, d, 0.0).sum())
            np.add.at(alpha, idx[r], w.sum(axis=1))
            alpha[idx] -= w.sum(axis=0)
    return alpha, delta
