"""Graph-cut energy minimisation on arbitrary graphs (binary and alpha-expansion).

Energies are ``E(y) = sum_p theta_p(y_p) + sum_(p,q) theta_pq(y_p, y_q)`` over nodes
``p`` and an edge list ``(p, q)``.  Pairwise terms are given either as one weight per
edge (the *cut* or Potts form ``theta_pq(a, b) = v_pq [a != b]``, the CRF of StructBoost
[Shen2014 eqs. 22/33/34]) or as a full table per edge, shape (E, L, L).

* :func:`binary_graphcut`: the exact minimiser of a submodular binary energy by one
  s-t minimum cut (Kolmogorov & Zabih, "What energy functions can be minimized via graph
  cuts?", IEEE TPAMI 26(2), 2004), computed by the Boykov-Kolmogorov max-flow
  (Boykov & Kolmogorov, "An experimental comparison of min-cut/max-flow algorithms for
  energy minimization in vision", IEEE TPAMI 26(9), 2004): by default our numba
  implementation (:mod:`maxmargin.inference.bk_maxflow`, which releases the GIL), or
  PyMaxflow's with ``backend="pymaxflow"`` (or :data:`DEFAULT_BACKEND`).  The graph is
  built from arrays: no Python loop per node or edge.  Disconnected components (several
  images at once) are solved by one call.
* :func:`loss_augmented_graphcut`: ``argmin_y E(y) - Delta(y*, y)`` for a (weighted)
  Hamming loss, absorbed into the unaries ([Shen2014 eq. 30]).
* :func:`alpha_expansion`: approximate minimisation for more than two labels by
  expansion moves (Boykov, Veksler & Zabih, "Fast approximate energy minimization via
  graph cuts", IEEE TPAMI 23(11), 2001) on general graphs; a move is accepted only if it
  lowers the energy, so the result is never worse than the start.  Non-metric pairwise
  tables are truncated inside a move (Rother et al., "Digital tapestry", CVPR 2005).

Convention: label 1 is the sink side of the cut.
"""

from __future__ import annotations

import threading

import numpy as np

from maxmargin.inference.bk_maxflow import BKWork, maxflow_edges

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "alpha_expansion",
    "binary_graphcut",
    "energy",
    "loss_augmented_graphcut",
]

#: tolerance of the submodularity check (relative to the largest pairwise entry)
SUBMODULAR_TOL = 1e-9

#: max-flow implementations: "numba" (ours, :mod:`maxmargin.inference.bk_maxflow`; no
#: GIL held) and "pymaxflow" (PyMaxflow's C++ Boykov-Kolmogorov, holds the GIL)
BACKENDS = ("numba", "pymaxflow")
#: the max-flow used when ``backend=None``; chosen by measurement (docs/benchmarks.md,
#: "Graph cut"): the numba cut was as fast as or faster than PyMaxflow, graph building
#: included, on the Weizmann horses superpixel graphs and on 200 x 200 pixel grids
DEFAULT_BACKEND = "numba"


def _backend(backend) -> str:
    b = DEFAULT_BACKEND if backend is None else backend
    if b not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    return b


def _check_graph(unary, edges, pairwise, n_labels=None):
    unary = np.asarray(unary, dtype=np.float64)
    if unary.ndim != 2:
        raise ValueError(f"unary must have shape (n_nodes, n_labels), got {unary.shape}")
    if n_labels is not None and unary.shape[1] != n_labels:
        raise ValueError(f"unary must have {n_labels} columns, got {unary.shape[1]}")
    n, L = unary.shape
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"edge endpoints must lie in 0..{n - 1}")
    pairwise = np.asarray(pairwise, dtype=np.float64)
    if pairwise.shape not in ((len(edges),), (len(edges), L, L)):
        raise ValueError(
            f"pairwise must have shape ({len(edges)},) or ({len(edges)}, {L}, {L}), "
            f"got {pairwise.shape}"
        )
    if not (np.all(np.isfinite(unary)) and np.all(np.isfinite(pairwise))):
        raise ValueError("potentials contain NaN or inf")
    return unary, edges, pairwise


def energy(unary, edges, pairwise, labels) -> float:
    """``E(y)`` of one labelling (any number of labels; Potts or table pairwise)."""
    unary, edges, pairwise = _check_graph(unary, edges, pairwise)
    y = np.asarray(labels, dtype=np.int64)
    e = float(unary[np.arange(len(y)), y].sum())
    if len(edges):
        a, b = y[edges[:, 0]], y[edges[:, 1]]
        if pairwise.ndim == 1:
            e += float(pairwise[a != b].sum())
        else:
            e += float(pairwise[np.arange(len(edges)), a, b].sum())
    return e


#: one max-flow graph (PyMaxflow) or work-array set (numba) per thread, reset and refilled
#: by every cut: allocating a fresh PyMaxflow graph per call cost up to 40 % of the cut time
#: in worker processes (docs/benchmarks.md, "Scale-out", CRF).  Both keep the memory of the
#: largest cut their thread has made.
_GRAPHS = threading.local()


def _binary_cut(unary, edges, A, B, C, D, backend=None):
    """Minimum cut of ``sum_p unary[p, y_p] + sum_e table_e(y_p, y_q)`` with table
    entries A=(0,0), B=(0,1), C=(1,0), D=(1,1) (submodular: B + C >= A + D)."""
    backend = _backend(backend)
    n = unary.shape[0]
    p, q = edges[:, 0], edges[:, 1]
    u1 = unary[:, 1] - unary[:, 0]
    if not (A.any() or D.any()) and np.array_equal(B, C):
        # Potts / cut weights: an arc of B[e] each way, the unaries unchanged
        lam = back = np.maximum(B, 0.0)
    else:
        # E = A + (C - A)[y_p = 1] + (D - C)[y_q = 1] + (B + C - A - D)[y_p = 0, y_q = 1]
        u1 = u1 + np.bincount(p, weights=C - A, minlength=n)
        u1 = u1 + np.bincount(q, weights=D - C, minlength=n)
        lam = np.maximum(B + C - A - D, 0.0)
        back = np.zeros(len(lam))
    if backend == "numba":
        return _numba_cut(n, u1, p, q, lam, back)
    import maxflow  # PyMaxflow, imported on first use

    g = getattr(_GRAPHS, "graph", None)
    if g is None:
        g = _GRAPHS.graph = maxflow.Graph[float](n, max(len(edges), 1))
    else:  # reuse the memory of the last cut (no new/delete of the node and arc blocks)
        g.reset()
    nodes = g.add_nodes(n)
    # label 1 (sink side) pays the source capacity, label 0 the sink capacity
    g.add_grid_tedges(np.asarray(nodes), np.maximum(u1, 0.0), np.maximum(-u1, 0.0))
    keep = (lam > 0) | (back > 0)
    if np.any(keep):
        g.add_edges(p[keep], q[keep], lam[keep], back[keep])
    g.maxflow()
    return np.asarray(g.get_grid_segments(np.asarray(nodes)), dtype=np.int64)


def _numba_cut(n, u1, p, q, lam, back):
    """The same cut by :func:`~maxmargin.inference.bk_maxflow.maxflow_edges`: terminal
    residual ``u1`` (> 0: source arc, the price of label 1), arcs ``p -> q`` of ``lam``
    and ``q -> p`` of ``back``."""
    work = getattr(_GRAPHS, "bk", None)
    if work is None:
        work = _GRAPHS.bk = BKWork()
    w = work.ensure(n)
    labels = np.empty(n, dtype=np.int64)
    c = np.ascontiguousarray
    maxflow_edges(
        c(u1, dtype=np.float64), c(p, dtype=np.int64), c(q, dtype=np.int64),
        c(lam, dtype=np.float64), c(back, dtype=np.float64), w.arrays, labels,
    )  # fmt: skip
    return labels


def _tables(pairwise, L):
    """Pairwise as a (E, L, L) table (Potts weights expanded)."""
    if pairwise.ndim == 3:
        return pairwise
    T = np.repeat(pairwise[:, None, None], L, axis=1).repeat(L, axis=2)
    T[:, np.arange(L), np.arange(L)] = 0.0
    return T


def binary_graphcut(unary, edges, pairwise, backend=None) -> tuple[np.ndarray, float]:
    """Exact ``argmin_y E(y)`` of a submodular binary energy; returns ``(labels, E)``.

    Parameters
    ----------
    unary : (n, 2) array
        ``unary[p, l]`` is the cost of label l at node p.
    edges : (E, 2) int array
        Node pairs (any graph; several components are fine).
    pairwise : (E,) or (E, 2, 2) array
        Cut weights ``v_pq >= 0`` (cost ``v_pq [y_p != y_q]``) or full tables with
        ``t(0,1) + t(1,0) >= t(0,0) + t(1,1)`` ([Shen2014 eq. 24]).
    backend : {"numba", "pymaxflow"} or None
        The max-flow implementation (None: :data:`DEFAULT_BACKEND`).  Both return a
        minimiser; on ties (several minimisers) they may return different ones only
        through rounding: in exact arithmetic both return the one with the fewest
        label-1 nodes.

    Raises
    ------
    ValueError
        If the energy is not submodular on some edge.
    """
    unary, edges, pairwise = _check_graph(unary, edges, pairwise, n_labels=2)
    T = _tables(pairwise, 2)
    A, B, C, D = T[:, 0, 0], T[:, 0, 1], T[:, 1, 0], T[:, 1, 1]
    slack = B + C - A - D
    scale = max(1.0, float(np.abs(T).max())) if len(T) else 1.0
    if np.any(slack < -SUBMODULAR_TOL * scale):
        bad = int(np.argmin(slack))
        raise ValueError(
            f"energy is not submodular on edge {bad} (t01 + t10 - t00 - t11 = {slack[bad]:g}); "
            "graph cuts need non-negative cut weights"
        )
    labels = _binary_cut(unary, edges, A, B, C, D, backend)
    return labels, energy(unary, edges, pairwise, labels)


def loss_augmented_graphcut(unary, edges, pairwise, y_true, node_loss=None, backend=None):
    """Exact ``argmin_y E(y) - Delta(y*, y)`` with ``Delta = sum_p l_p [y_p != y*_p]``.

    The loss enters the unaries ([Shen2014 eq. 30]): ``unary[p, l] - l_p [l != y*_p]``.
    ``node_loss`` (default all ones: the Hamming loss of [Shen2014 eq. 26]) gives the weights
    ``l_p``, e.g. superpixel areas.  Returns ``(labels, E(labels), Delta(y*, labels))``.
    """
    unary, edges, pairwise = _check_graph(unary, edges, pairwise, n_labels=2)
    y_true = np.asarray(y_true, dtype=np.int64)
    n = unary.shape[0]
    if y_true.shape != (n,):
        raise ValueError(f"y_true must have shape ({n},), got {y_true.shape}")
    lp = np.ones(n) if node_loss is None else np.asarray(node_loss, dtype=np.float64)
    if lp.shape != (n,) or np.any(lp < 0):
        raise ValueError("node_loss must be a non-negative array with one entry per node")
    aug = unary.copy()
    aug[np.arange(n), 1 - y_true] -= lp
    labels, _ = binary_graphcut(aug, edges, pairwise, backend)
    loss = float(lp[labels != y_true].sum())
    return labels, energy(unary, edges, pairwise, labels), loss


def alpha_expansion(
    unary, edges, pairwise, init=None, max_sweeps: int = 10, backend=None
) -> tuple[np.ndarray, float]:
    """Approximate ``argmin_y E(y)`` over L >= 2 labels by expansion moves.

    Each sweep tries every label alpha once: every node either keeps its label or
    switches to alpha, the best such move is one binary graph cut.  Moves whose energy
    is not lower are rejected, so the energy never increases from ``init`` (default: the
    unary argmin).  ``backend`` picks the max-flow (see :func:`binary_graphcut`).
    Metric pairwise terms (e.g. Potts with non-negative weights) give the
    exact best move and the usual factor-2 guarantee; other tables are truncated inside
    the move.  With L = 2 the first move from an all-0 start is exact.  Returns
    ``(labels, E)``.
    """
    unary, edges, pairwise = _check_graph(unary, edges, pairwise)
    n, L = unary.shape
    T = _tables(pairwise, L)
    rows = np.arange(n)
    erange = np.arange(len(edges))
    p, q = edges[:, 0], edges[:, 1]
    y = np.argmin(unary, axis=1) if init is None else np.asarray(init, dtype=np.int64).copy()
    if y.shape != (n,) or (n and (y.min() < 0 or y.max() >= L)):
        raise ValueError(f"init must be {n} labels in 0..{L - 1}")
    best = energy(unary, edges, pairwise, y)
    for _ in range(int(max_sweeps)):
        improved = False
        for alpha in range(L):
            ub = np.stack([unary[rows, y], unary[:, alpha]], axis=1)
            yp, yq = y[p], y[q]
            A = T[erange, yp, yq]
            B = T[erange, yp, alpha]
            C = T[erange, alpha, yq]
            D = T[erange, alpha, alpha]
            # truncation: lower A where B + C < A + D (only the move's own energy changes)
            A = np.minimum(A, B + C - D)
            move = _binary_cut(ub, edges, A, B, C, D, backend)
            cand = np.where(move == 1, alpha, y)
            e = energy(unary, edges, pairwise, cand)
            if e < best - 1e-12 * max(1.0, abs(best)):
                y, best, improved = cand, e, True
        if not improved:
            break
    return y, best
