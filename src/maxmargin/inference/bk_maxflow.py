"""Boykov-Kolmogorov max-flow / min-cut in numba (releases the GIL).

Boykov & Kolmogorov, "An experimental comparison of min-cut/max-flow algorithms for
energy minimization in vision", IEEE TPAMI 26(9), 2004, Sec. 3 [Boykov2004].  Written
from the paper's description: two search trees S (rooted at the source) and T (rooted at
the sink) are grown from the terminals over non-saturated arcs (*growth*); when they
touch, the flow is pushed along the path found (*augmentation*), which saturates some
tree arcs and leaves *orphans*; the orphans look for a new parent in their own tree whose
origin is a terminal, or become free and make their tree neighbours active again
(*adoption*).  The search stops when no active node is left; then S is the set of nodes
reachable from the source in the residual graph and T the set from which the sink can
be reached.  The origin check of the adoption uses the paper's timestamp / distance
marks (Sec. 3.3: a node checked in the current adoption stage carries the stage's
timestamp and its distance to the terminal, so a later check stops there, and the new
parent is the one closest to the terminal).

Graph layout.  ``n`` nodes with terminal residuals ``tr`` (``tr[v] > 0``: an arc
``source -> v`` of that capacity; ``< 0``: ``v -> sink`` of ``-tr[v]``; a node with both
first sends ``min(c_s, c_t)`` straight through and keeps the difference) and a list of
undirected edges ``(p, q)`` with capacities ``p -> q`` and ``q -> p``, stored as arcs
grouped by tail node (CSR: the arcs of node ``v`` are ``first[v]:first[v+1]``; ``head``
is an arc's head, ``sister`` its reverse arc, ``rcap`` its residual capacity).  A node
range ``lo:hi`` closed under the edges (a union of connected components) is solved on
its own, using only the ``lo:hi`` parts of the work arrays -- so the shards of a stack
of graphs can be cut on several threads at once without sharing anything.

Convention (as :func:`maxmargin.inference.graphcut.binary_graphcut`): label 1 is the
sink side, i.e. the nodes of the final T tree; free nodes go to the source side (the
minimal sink set, which is unique: it does not depend on which maximum flow was found).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["BKWork", "arc_capacities", "build_csr", "maxflow", "maxflow_edges", "maxflow_range"]

_FREE = 0
_SRC = 1
_SNK = 2
#: parent codes: the parent is the terminal, an orphan, no parent (a free node)
_TERMINAL = -1
_ORPHAN = -2
_NONE = -3


@njit(cache=True, nogil=True)
def build_csr(n, p, q, first, head, sister, arc_edge):  # pragma: no cover - compiled
    """Arcs of the edges ``(p[e], q[e])`` grouped by tail node, in edge order within a
    node.  The forward arc (``p -> q``) of edge e has ``arc_edge = 2 e``, its sister
    (``q -> p``) ``2 e + 1``.  ``first`` has ``n + 1`` entries, the others 2E."""
    build_csr_range(p, q, 0, n, 0, p.shape[0], first, head, sister, arc_edge)
    first[n] = 2 * p.shape[0]


@njit(cache=True, nogil=True)
def build_csr_range(p, q, n0, n1, e0, e1, first, head, sister, arc_edge):  # pragma: no cover
    """:func:`build_csr` for the nodes ``n0:n1`` and their edges ``e0:e1`` (every edge
    of those nodes, and only those): their arcs are ``2 e0 : 2 e1``, laid out exactly
    as one :func:`build_csr` of the whole graph lays them out; writes ``first[n0:n1]``
    (not ``first[n1]``), so disjoint ranges can be built side by side."""
    m = n1 - n0
    cnt = np.zeros(m + 1, dtype=np.int64)
    for e in range(e0, e1):
        cnt[p[e] - n0 + 1] += 1
        cnt[q[e] - n0 + 1] += 1
    cnt[0] = 2 * e0
    for v in range(m):
        cnt[v + 1] += cnt[v]
    for v in range(m):
        first[n0 + v] = cnt[v]
    for e in range(e0, e1):
        a = cnt[p[e] - n0]
        cnt[p[e] - n0] += 1
        b = cnt[q[e] - n0]
        cnt[q[e] - n0] += 1
        head[a] = q[e]
        head[b] = p[e]
        sister[a] = b
        sister[b] = a
        arc_edge[a] = 2 * e
        arc_edge[b] = 2 * e + 1


@njit(cache=True, nogil=True)
def arc_capacities(arc_edge, cap_pq, cap_qp, rcap):  # pragma: no cover - compiled
    """``rcap[a]`` = ``cap_pq[e]`` for the forward arc of edge e, ``cap_qp[e]`` for its
    sister (``arc_edge`` from :func:`build_csr`)."""
    for a in range(arc_edge.shape[0]):
        e = arc_edge[a]
        rcap[a] = cap_qp[e >> 1] if e & 1 else cap_pq[e >> 1]


@njit(cache=True, nogil=True)
def maxflow_range(first, head, sister, rcap, tr, lo, hi, work, labels):  # pragma: no cover
    """Maximum flow of the nodes ``lo:hi`` (closed under the arcs) by Boykov-Kolmogorov;
    ``rcap`` and ``tr`` become the residual capacities.  Writes the min-cut labels (1 =
    sink side) into ``labels[lo:hi]`` and returns the flow pushed through paths of
    non-terminal arcs (the caller adds what went straight through the terminals)."""
    parent, tree, ts, dist, queue, inq, orphans = work  # BKWork.arrays
    m = hi - lo
    flow = 0.0
    if m <= 0:
        return flow
    # -- initialisation: every node with a terminal arc is an active root
    qh = 0  # active FIFO: queue[lo + (qh + k) % m], k < qn
    qn = 0
    for v in range(lo, hi):
        inq[v] = 0
        ts[v] = 0
        dist[v] = 0
        if tr[v] > 0.0:
            tree[v] = _SRC
        elif tr[v] < 0.0:
            tree[v] = _SNK
        else:
            tree[v] = _FREE
            parent[v] = _NONE
            continue
        parent[v] = _TERMINAL
        dist[v] = 1
        queue[lo + (qh + qn) % m] = v
        qn += 1
        inq[v] = 1
    time = 0
    oh = 0  # orphan FIFO, same layout
    on = 0
    cur = -1
    while True:
        # -- growth: take an active node and scan its arcs for the other tree
        if cur >= 0 and tree[cur] == _FREE:
            cur = -1
        if cur < 0:
            while qn > 0:
                v = queue[lo + qh]
                qh = (qh + 1) % m
                qn -= 1
                inq[v] = 0
                if tree[v] != _FREE:
                    cur = v
                    break
            if cur < 0:
                break  # no active node left: done
        t = tree[cur]
        mid = -1
        for a in range(first[cur], first[cur + 1]):
            c = rcap[a] if t == _SRC else rcap[sister[a]]
            if c <= 0.0:
                continue
            x = head[a]
            tx = tree[x]
            if tx == _FREE:
                tree[x] = t
                parent[x] = sister[a]
                ts[x] = ts[cur]
                dist[x] = dist[cur] + 1
                if inq[x] == 0:
                    queue[lo + (qh + qn) % m] = x
                    qn += 1
                    inq[x] = 1
            elif tx != t:
                mid = a if t == _SRC else sister[a]  # the path's arc, S side -> T side
                break
        if mid < 0:
            cur = -1  # passive: every neighbour is in its tree or unreachable
            continue
        # -- augmentation along source -> ... -> s_end -> t_end -> ... -> sink
        s_end = head[sister[mid]]
        t_end = head[mid]
        f = rcap[mid]
        v = s_end
        while parent[v] != _TERMINAL:
            pa = parent[v]
            if rcap[sister[pa]] < f:
                f = rcap[sister[pa]]
            v = head[pa]
        if tr[v] < f:
            f = tr[v]
        v = t_end
        while parent[v] != _TERMINAL:
            pa = parent[v]
            if rcap[pa] < f:
                f = rcap[pa]
            v = head[pa]
        if -tr[v] < f:
            f = -tr[v]
        rcap[mid] -= f
        rcap[sister[mid]] += f
        v = s_end
        while True:
            pa = parent[v]
            if pa == _TERMINAL:
                tr[v] -= f
                if tr[v] <= 0.0:
                    tr[v] = 0.0
                    parent[v] = _ORPHAN
                    orphans[lo + (oh + on) % m] = v
                    on += 1
                break
            rcap[pa] += f
            rcap[sister[pa]] -= f
            if rcap[sister[pa]] <= 0.0:
                parent[v] = _ORPHAN
                orphans[lo + (oh + on) % m] = v
                on += 1
            v = head[pa]
        v = t_end
        while True:
            pa = parent[v]
            if pa == _TERMINAL:
                tr[v] += f
                if tr[v] >= 0.0:
                    tr[v] = 0.0
                    parent[v] = _ORPHAN
                    orphans[lo + (oh + on) % m] = v
                    on += 1
                break
            rcap[sister[pa]] += f
            rcap[pa] -= f
            if rcap[pa] <= 0.0:
                parent[v] = _ORPHAN
                orphans[lo + (oh + on) % m] = v
                on += 1
            v = head[pa]
        flow += f
        # -- adoption: orphans find a parent whose origin is their terminal, or go free
        time += 1
        while on > 0:
            o = orphans[lo + oh]
            oh = (oh + 1) % m
            on -= 1
            t = tree[o]
            best = -1
            best_d = 1 << 62
            for a in range(first[o], first[o + 1]):
                c = rcap[sister[a]] if t == _SRC else rcap[a]
                if c <= 0.0:
                    continue
                x = head[a]
                if tree[x] != t:
                    continue
                # origin check: walk towards the root until a terminal, an orphan or a
                # node already checked in this stage
                d = 0
                u = x
                ok = False
                while True:
                    if ts[u] == time:
                        d += dist[u]
                        ok = True
                        break
                    pu = parent[u]
                    if pu == _TERMINAL:
                        ts[u] = time
                        dist[u] = 1
                        d += 1
                        ok = True
                        break
                    if pu < 0:  # an orphan (or free): no origin
                        break
                    d += 1
                    u = head[pu]
                if not ok:
                    continue
                if d < best_d:
                    best = a
                    best_d = d
                u = x  # mark the checked path with this stage's time and distances
                while ts[u] != time:
                    ts[u] = time
                    dist[u] = d
                    d -= 1
                    u = head[parent[u]]
            if best >= 0:
                parent[o] = best
                ts[o] = time
                dist[o] = best_d + 1
                continue
            # no parent: o becomes free; its children become orphans, and the tree
            # neighbours that could grow into o again become active
            for a in range(first[o], first[o + 1]):
                x = head[a]
                if tree[x] != t:
                    continue
                c = rcap[sister[a]] if t == _SRC else rcap[a]  # x -> o (S) / o -> x (T)
                if c > 0.0 and inq[x] == 0:
                    queue[lo + (qh + qn) % m] = x
                    qn += 1
                    inq[x] = 1
                px = parent[x]
                if px >= 0 and head[px] == o:
                    parent[x] = _ORPHAN
                    orphans[lo + (oh + on) % m] = x
                    on += 1
            tree[o] = _FREE
            parent[o] = _NONE
    for v in range(lo, hi):
        labels[v] = 1 if tree[v] == _SNK else 0
    return flow


@njit(cache=True, nogil=True)
def maxflow_edges(tr, p, q, cap_pq, cap_qp, work, labels):  # pragma: no cover - compiled
    """:func:`maxflow_range` of a whole graph given as an edge list: the arcs (CSR) and
    their capacities are built here (edges of zero capacity both ways left out), ``tr``
    is copied; returns the flow through non-terminal arcs."""
    n = tr.shape[0]
    E = 0
    for e in range(p.shape[0]):
        if cap_pq[e] > 0.0 or cap_qp[e] > 0.0:
            E += 1
    if E < p.shape[0]:
        p2 = np.empty(E, dtype=np.int64)
        q2 = np.empty(E, dtype=np.int64)
        c1 = np.empty(E)
        c2 = np.empty(E)
        k = 0
        for e in range(p.shape[0]):
            if cap_pq[e] > 0.0 or cap_qp[e] > 0.0:
                p2[k] = p[e]
                q2[k] = q[e]
                c1[k] = cap_pq[e]
                c2[k] = cap_qp[e]
                k += 1
        p, q, cap_pq, cap_qp = p2, q2, c1, c2
    first = np.empty(n + 1, dtype=np.int64)
    head = np.empty(2 * E, dtype=np.int64)
    sister = np.empty(2 * E, dtype=np.int64)
    arc_edge = np.empty(2 * E, dtype=np.int64)
    build_csr(n, p, q, first, head, sister, arc_edge)
    rcap = np.empty(2 * E)
    arc_capacities(arc_edge, cap_pq, cap_qp, rcap)
    return maxflow_range(first, head, sister, rcap, tr.copy(), 0, n, work, labels)


class BKWork:
    """Reusable work arrays of :func:`maxflow_range` for graphs of up to ``n`` nodes
    (grown on demand)."""

    def __init__(self, n: int = 0) -> None:
        self.n = -1
        self.ensure(n)

    def ensure(self, n: int) -> BKWork:
        if n > self.n:
            n = max(int(n), 1)
            self.n = n
            self.parent = np.empty(n, dtype=np.int64)
            self.tree = np.empty(n, dtype=np.int8)
            self.ts = np.empty(n, dtype=np.int64)
            self.dist = np.empty(n, dtype=np.int64)
            self.queue = np.empty(n, dtype=np.int64)
            self.inq = np.empty(n, dtype=np.int8)
            self.orphans = np.empty(n, dtype=np.int64)
        return self

    @property
    def arrays(self) -> tuple:
        """The work arrays as the one tuple the compiled max-flow takes: ``(parent, tree,
        ts, dist, queue, inq, orphans)``."""
        return (self.parent, self.tree, self.ts, self.dist, self.queue, self.inq, self.orphans)


def maxflow(cap_source, cap_sink, edges, cap_pq, cap_qp, work: BKWork | None = None):
    """Maximum flow / minimum cut of a graph with terminal arcs ``source -> v``
    (``cap_source``) and ``v -> sink`` (``cap_sink``) and arcs ``p -> q`` (``cap_pq``)
    and ``q -> p`` (``cap_qp``) for every edge ``(p, q)`` of ``edges``.  All capacities
    must be finite and non-negative.  Returns ``(labels, flow)`` with label 1 for the
    sink side of the minimum cut."""
    cs = np.ascontiguousarray(cap_source, dtype=np.float64).ravel()
    ct = np.ascontiguousarray(cap_sink, dtype=np.float64).ravel()
    n = len(cs)
    if ct.shape != (n,):
        raise ValueError(f"cap_sink must have {n} entries, got {ct.shape}")
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    E = len(edges)
    c1 = np.ascontiguousarray(cap_pq, dtype=np.float64).ravel()
    c2 = np.ascontiguousarray(cap_qp, dtype=np.float64).ravel()
    if c1.shape != (E,) or c2.shape != (E,):
        raise ValueError(f"edge capacities must have {E} entries")
    for name, c in (("cap_source", cs), ("cap_sink", ct), ("cap_pq", c1), ("cap_qp", c2)):
        if not np.all(np.isfinite(c)) or (len(c) and c.min() < 0):
            raise ValueError(f"{name} must be finite and non-negative")
    if E and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"edge endpoints must lie in 0..{n - 1}")
    p = np.ascontiguousarray(edges[:, 0])
    q = np.ascontiguousarray(edges[:, 1])
    w = (work or BKWork()).ensure(n)
    labels = np.empty(n, dtype=np.int64)
    f = maxflow_edges(cs - ct, p, q, c1, c2, w.arrays, labels)
    direct = np.minimum(cs, ct)
    return labels, float(direct.sum()) + f
