"""Histogram decision trees of depth 1-6 for many slots at once (LightGBM-style search).

The weak learner of :mod:`maxmargin.weak.tree` (leaves in {-1, +1}, grown greedily on
the linear gain ``sum_leaves |sum_{k in leaf} a_k|``) rebuilt for speed on the
(n, S) signed-weight matrix ``A`` of a multi-class StructBoost iteration:

* features are binned once per fit (:mod:`maxmargin.weak.binning`, <= 255
  equal-frequency bins, uint8 codes); splits are searched on bin boundaries only;
* the tree grows level by level; at every level ONE pass over the codes builds the
  (bins, S) histograms of every node of every slot column (numba, parallel over
  features);
* histogram subtraction: of two sibling nodes only the one with fewer samples is
  accumulated, the other is its parent's histogram minus it (Ke et al., "LightGBM: A
  Highly Efficient Gradient Boosting Decision Tree", NIPS 2017, Sec. 2 and 3), so a
  level after the root adds at most half of the weights (the saving is less than 2x:
  the accumulated samples are gathered from a packed per-slot list);
* samples are routed to the next level on their codes (``code > split bin``), never on
  the raw values.

Two ways to grow (``grow=``):

``"per_slot"`` (default)
    one independent tree per column of ``A``, the greedy best for that column, exactly
    the contract of :class:`~maxmargin.weak.base.WeakLearner`.  This serves both task
    sharings: ``sharing="per_class"`` enters every slot's tree in its own slot,
    ``sharing="shared"`` enters the tree of the slot with the largest gain in all slots.
``"joint"``
    one partition for all columns, each split chosen for its total gain over the slots
    ``sum_s (|L_s| + |R_s|)``, and each slot's leaf signs ``sign(sum_{k in leaf} a_{k,s})``
    (a multi-output tree).  The S returned trees share their splits and differ in their
    leaves.  Meant for ``sharing="per_class"``: one structure per iteration, every slot's
    tree enters its own slot.  Its per-slot gain is at most the per-slot tree's.

A node with no split that beats the unsplit node (by more than rounding, see
``_REL_TOL``) sends all its samples left (threshold ``+inf``).  Ties go to the first
feature and the first bin, as in :class:`~maxmargin.weak.tree.DecisionTree`; with one
bin per distinct value (``max_bins=None``) the two learners search the same trees.
Trees are stored as :class:`~maxmargin.weak.tree.Trees` (heap layout), so model files
need nothing new.  StructBoost (Shen et al., "StructBoost: Boosting Methods for
Predicting Structured Output Variables", TPAMI 2014) Sec. 4 uses stumps and trees.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from maxmargin.weak.base import WeakLearner
from maxmargin.weak.binning import FeatureCodes, code_features
from maxmargin.weak.stump import check_weights, threads_for
from maxmargin.weak.tree import Trees

__all__ = ["HistogramTree"]

#: a split must beat the unsplit node by more than this fraction of the node's absolute
#: weight: histogram subtraction and summation order move a node's sums by at most
#: ~n * 2**-52 of that weight, far below 1e-10 for any n this library handles
_REL_TOL = 1e-10
#: largest stored histogram (bytes) for which sibling subtraction is used; above it every
#: node's histogram is accumulated per feature in a thread-local buffer
_SUBTRACT_BYTES = 1 << 28
MAX_DEPTH = 6
#: largest dense code matrix built from sparse input
_DENSE_CODES_BYTES = 1 << 30


# -- per-slot trees: nodeT[s, k] is sample k's node in slot s's tree ----------------------
# Arrays are slot-major (A transposed to (S, n)), so that one slot's pass over the samples
# reads contiguous memory and adds into one small (bins, nodes) block of the histogram.
@njit(parallel=True, cache=True)
def _node_stats(nodeT, AT, n_nodes):  # pragma: no cover - compiled
    S, n = AT.shape
    tot = np.zeros((S, n_nodes))
    mass = np.zeros((S, n_nodes))
    cnt = np.zeros((S, n_nodes), dtype=np.int64)
    for s in prange(S):
        for k in range(n):
            j = nodeT[s, k]
            tot[s, j] += AT[s, k]
            mass[s, j] += abs(AT[s, k])
            cnt[s, j] += 1
    return tot, mass, cnt


@njit(cache=True)
def _build_lists(nodeT, AT, build):  # pragma: no cover - compiled
    """The samples of the nodes to accumulate, per slot, packed: sample idx, node nd and
    weight av at [ptr[s], ptr[s + 1]) (ascending samples), so that the histogram pass
    reads them sequentially."""
    S, n = nodeT.shape
    ptr = np.zeros(S + 1, dtype=np.int64)
    for s in range(S):
        c = 0
        for k in range(n):
            if build[s, nodeT[s, k]]:
                c += 1
        ptr[s + 1] = ptr[s] + c
    idx = np.empty(ptr[S], dtype=np.int32)
    nd = np.empty(ptr[S], dtype=np.int32)
    av = np.empty(ptr[S])
    for s in range(S):
        p = ptr[s]
        for k in range(n):
            j = nodeT[s, k]
            if build[s, j]:
                idx[p] = k
                nd[p] = j
                av[p] = AT[s, k]
                p += 1
    return idx, nd, av, ptr


@njit(parallel=True, cache=True)
def _hist_slots(codes, offsets, n_bins, idx, nd, av, ptr, H):  # pragma: no cover
    """H[s, offsets[f] + b, j] += a over the packed samples of slot s (code b, node j,
    weight a); features in parallel."""
    d = codes.shape[0]
    S = len(ptr) - 1
    for f in prange(d):
        if n_bins[f] < 2:
            continue
        off = offsets[f]
        for s in range(S):
            for p in range(ptr[s], ptr[s + 1]):
                H[s, off + codes[f, idx[p]], nd[p]] += av[p]


@njit(parallel=True, cache=True)
def _hist_slots_all(codes, offsets, n_bins, AT, nodeT, H):  # pragma: no cover
    """As :func:`_hist_slots` over every sample (the root level)."""
    d, n = codes.shape
    S = AT.shape[0]
    for f in prange(d):
        if n_bins[f] < 2:
            continue
        off = offsets[f]
        for s in range(S):
            for k in range(n):
                H[s, off + codes[f, k], nodeT[s, k]] += AT[s, k]


@njit(cache=True)
def _scan_one(H, s, off, nb, j, t, tol):  # pragma: no cover - compiled
    best = abs(t)
    bsplit = -1
    cum = 0.0
    for b in range(nb - 1):
        cum += H[s, off + b, j]
        g = abs(cum) + abs(t - cum)
        if g > best + tol:
            best = g
            bsplit = b
    return best, bsplit


@njit(parallel=True, cache=True)
def _scan_slots(H, P, build, offsets, n_bins, tot, mass, gain, split):  # pragma: no cover
    """Derive the histograms not built (parent minus sibling), then the best split of
    every node for every slot and feature: gain[f, s, j], split[f, s, j] (-1: none)."""
    d = len(n_bins)
    S, n_nodes = tot.shape
    for f in prange(d):
        off = offsets[f]
        nb = n_bins[f]
        for s in range(S):
            for j in range(n_nodes):
                if not build[s, j]:
                    for b in range(nb):
                        H[s, off + b, j] = P[s, off + b, j >> 1] - H[s, off + b, j ^ 1]
                g, b = _scan_one(H, s, off, nb, j, tot[s, j], _REL_TOL * mass[s, j])
                gain[f, s, j] = g
                split[f, s, j] = b


@njit(parallel=True, cache=True)
def _level_local_slots(codes, n_bins, AT, nodeT, tot, mass, gain, split):  # pragma: no cover
    """Without stored histograms: every node accumulated in a per-feature buffer."""
    d, n = codes.shape
    S, n_nodes = tot.shape
    for f in prange(d):
        nb = n_bins[f]
        hist = np.zeros((S, nb, n_nodes))
        if nb > 1:
            for s in range(S):
                for k in range(n):
                    hist[s, codes[f, k], nodeT[s, k]] += AT[s, k]
        for s in range(S):
            for j in range(n_nodes):
                g, b = _scan_one(hist, s, 0, nb, j, tot[s, j], _REL_TOL * mass[s, j])
                gain[f, s, j] = g
                split[f, s, j] = b


@njit(parallel=True, cache=True)
def _route_slots(codes, nodeT, bf, bb):  # pragma: no cover - compiled
    S, n = nodeT.shape
    out = np.empty_like(nodeT)
    for s in prange(S):
        for k in range(n):
            j = nodeT[s, k]
            b = bb[s, j]
            right = 0
            if b >= 0 and codes[bf[s, j], k] > b:
                right = 1
            out[s, k] = 2 * j + right
    return out


# -- joint trees: one partition, node[k] ---------------------------------------------------
@njit(cache=True)
def _node_stats_joint(node, A, n_nodes):  # pragma: no cover - compiled
    n, S = A.shape
    tot = np.zeros((n_nodes, S))
    mass = np.zeros(n_nodes)
    cnt = np.zeros(n_nodes, dtype=np.int64)
    for k in range(n):
        j = node[k]
        cnt[j] += 1
        for s in range(S):
            tot[j, s] += A[k, s]
            mass[j] += abs(A[k, s])
    return tot, mass, cnt


@njit(parallel=True, cache=True)
def _hist_joint(codes, offsets, n_bins, A, node, build, H):  # pragma: no cover - compiled
    d, n = codes.shape
    S = A.shape[1]
    for f in prange(d):
        if n_bins[f] < 2:
            continue
        off = offsets[f]
        for k in range(n):
            j = node[k]
            if build[j]:
                c = off + codes[f, k]
                for s in range(S):
                    H[c, j, s] += A[k, s]


@njit(cache=True)
def _scan_joint_node(hist, nb, tot, mass_j, j, cum):  # pragma: no cover - compiled
    """Best split of node j on one feature's histogram hist[b, j, :] (b < nb)."""
    S = tot.shape[1]
    best = 0.0
    for s in range(S):
        best += abs(tot[j, s])
        cum[s] = 0.0
    tol = _REL_TOL * mass_j
    bsplit = -1
    for b in range(nb - 1):
        g = 0.0
        for s in range(S):
            cum[s] += hist[b, j, s]
            g += abs(cum[s]) + abs(tot[j, s] - cum[s])
        if g > best + tol:
            best = g
            bsplit = b
    return best, bsplit


@njit(parallel=True, cache=True)
def _scan_joint(H, P, build, offsets, n_bins, tot, mass, gain, split):  # pragma: no cover
    d = len(n_bins)
    n_nodes, S = tot.shape
    for f in prange(d):
        off = offsets[f]
        nb = n_bins[f]
        view = H[off : off + nb]
        cum = np.empty(S)
        for j in range(n_nodes):
            if not build[j]:
                for b in range(nb):
                    for s in range(S):
                        view[b, j, s] = P[off + b, j >> 1, s] - view[b, j ^ 1, s]
            g, b = _scan_joint_node(view, nb, tot, mass[j], j, cum)
            gain[f, j] = g
            split[f, j] = b


@njit(parallel=True, cache=True)
def _level_local_joint(codes, n_bins, A, node, tot, mass, gain, split):  # pragma: no cover
    d, n = codes.shape
    n_nodes, S = tot.shape
    for f in prange(d):
        nb = n_bins[f]
        hist = np.zeros((nb, n_nodes, S))
        cum = np.empty(S)
        if nb > 1:
            for k in range(n):
                c = codes[f, k]
                j = node[k]
                for s in range(S):
                    hist[c, j, s] += A[k, s]
        for j in range(n_nodes):
            g, b = _scan_joint_node(hist, nb, tot, mass[j], j, cum)
            gain[f, j] = g
            split[f, j] = b


@njit(parallel=True, cache=True)
def _route_joint(codes, node, bf, bb):  # pragma: no cover - compiled
    n = len(node)
    out = np.empty_like(node)
    for k in prange(n):
        j = node[k]
        b = bb[j]
        right = 0
        if b >= 0 and codes[bf[j], k] > b:
            right = 1
        out[k] = 2 * j + right
    return out


class HistogramTree(WeakLearner):
    """Greedy depth-limited histogram tree (depth 1-6), all slot columns in one pass.

    Parameters
    ----------
    max_depth : int, default=3
        Depth of every tree (1 = a stump written as a tree), at most 6.
    max_bins : int or None, default=255
        Bins per feature (equal-frequency, LightGBM-style); None: one bin per distinct
        value (exact thresholds, as :class:`~maxmargin.weak.tree.DecisionTree` with
        ``max_bins=None``).
    grow : {"per_slot", "joint"}, default="per_slot"
        One independent tree per slot column, or one partition for all slot columns with
        per-slot leaf signs (see the module docstring).

    Sparse input is binned column by column (:func:`~maxmargin.weak.binning.code_features`)
    and then stored as dense (d, n) bin codes, one byte per entry; inputs whose code
    matrix would exceed 1 GiB are refused (use ``weak_learner="tree"``).
    """

    hypotheses_class = Trees

    def __init__(self, max_depth: int = 3, max_bins: int | None = 255, grow: str = "per_slot"):
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.grow = grow

    def _check(self) -> int:
        D = self.max_depth
        if isinstance(D, bool) or not isinstance(D, (int, np.integer)) or not 1 <= D <= MAX_DEPTH:
            raise ValueError(f"max_depth must be an integer in [1, {MAX_DEPTH}], got {D!r}")
        if self.grow not in ("per_slot", "joint"):
            raise ValueError(f"grow must be 'per_slot' or 'joint', got {self.grow!r}")
        return int(D)

    def prepare(self, Z) -> FeatureCodes:
        self._check()
        fc = code_features(Z, self.max_bins)
        if not fc.sparse:
            return fc
        # sparse input: binned sparsely, then one dense code per entry (n * d small codes)
        n, d = fc.n_samples, fc.n_features
        if n * d * fc.codes.itemsize > _DENSE_CODES_BYTES:
            raise ValueError(
                f"HistogramTree needs {n} x {d} dense bin codes for this sparse input "
                f"(over {_DENSE_CODES_BYTES >> 20} MiB); use weak_learner='tree'"
            )
        codes = np.repeat(np.maximum(fc.zero_bin, 0).astype(fc.codes.dtype)[:, None], n, axis=1)
        col = np.repeat(np.arange(d), np.diff(fc.indptr))
        codes[col, fc.indices] = fc.codes
        return FeatureCodes(codes, fc.n_bins, fc.offsets, fc.lo, fc.hi, n, d)

    def best(self, prepared: FeatureCodes, A):
        fc = prepared
        D = self._check()
        A = check_weights(fc, A)
        if self.grow == "joint":
            return self._grow_joint(fc, A, D)
        return self._grow_per_slot(fc, A, D)

    # -- growing ----------------------------------------------------------------------
    @staticmethod
    def _store(fc, D, S) -> bool:
        """Whether the histograms of the deepest split level fit the subtraction budget."""
        total_bins = int(fc.offsets[-1])
        last = 2 ** (D - 1)
        return D > 1 and 8 * total_bins * S * (last + last // 2) <= _SUBTRACT_BYTES

    def _grow_per_slot(self, fc, A, D):
        n, S = A.shape
        d = fc.n_features
        feat = np.zeros((S, 2**D - 1), dtype=np.int64)
        thr = np.full((S, 2**D - 1), np.inf)
        AT = np.ascontiguousarray(A.T)
        nodeT = np.zeros((S, n), dtype=np.int32)
        subtract = self._store(fc, D, S)
        offsets = fc.offsets.astype(np.int64)
        P = None
        work = fc.codes.size * S
        for level in range(D):
            n_nodes = 2**level
            with threads_for(n * S * 8):
                tot, mass, cnt = _node_stats(nodeT, AT, n_nodes)
            if d == 0:
                nodeT = 2 * nodeT
                continue
            gain = np.empty((d, S, n_nodes))
            split = np.empty((d, S, n_nodes), dtype=np.int64)
            with threads_for(work if level == 0 or not subtract else work // 2):
                if subtract:
                    H = np.zeros((S, int(offsets[-1]), n_nodes))
                    if level == 0:
                        build = np.ones((S, 1), dtype=np.bool_)
                        _hist_slots_all(fc.codes, offsets, fc.n_bins, AT, nodeT, H)
                    else:  # the child with fewer samples is accumulated, ties: left
                        c2 = cnt.reshape(S, n_nodes // 2, 2)
                        left = c2[:, :, 0] <= c2[:, :, 1]
                        build = np.stack([left, ~left], axis=2).reshape(S, n_nodes)
                        idx, nd, av, ptr = _build_lists(nodeT, AT, build)
                        _hist_slots(fc.codes, offsets, fc.n_bins, idx, nd, av, ptr, H)
                    Pp = H if P is None else P
                    _scan_slots(H, Pp, build, offsets, fc.n_bins, tot, mass, gain, split)
                    P = H
                else:
                    _level_local_slots(fc.codes, fc.n_bins, AT, nodeT, tot, mass, gain, split)
            f = np.argmax(gain, axis=0)  # (S, n_nodes): first feature on ties
            b = np.take_along_axis(split, f[None], axis=0)[0]
            t = fc.thresholds(f.ravel(), b.ravel()).reshape(f.shape)
            t[b < 0] = np.inf  # no improving split: everyone goes left
            heap = n_nodes - 1 + np.arange(n_nodes)
            feat[:, heap] = f
            thr[:, heap] = t
            with threads_for(n * S * 8):
                nodeT = _route_slots(fc.codes, nodeT, f.astype(np.int64), b.astype(np.int64))
        with threads_for(n * S * 8):
            tot, _, _ = _node_stats(nodeT, AT, 2**D)
        leaf = np.where(tot >= 0, 1.0, -1.0)
        gains = np.abs(tot).sum(axis=1)
        return Trees(feat, thr, leaf, D, d), gains

    def _grow_joint(self, fc, A, D):
        n, S = A.shape
        d = fc.n_features
        feat = np.zeros(2**D - 1, dtype=np.int64)
        thr = np.full(2**D - 1, np.inf)
        node = np.zeros(n, dtype=np.int32)
        subtract = self._store(fc, D, S)
        offsets = fc.offsets.astype(np.int64)
        P = None
        work = fc.codes.size * S
        for level in range(D):
            n_nodes = 2**level
            tot, mass, cnt = _node_stats_joint(node, A, n_nodes)
            if d == 0:
                node = 2 * node
                continue
            gain = np.empty((d, n_nodes))
            split = np.empty((d, n_nodes), dtype=np.int64)
            with threads_for(work if level == 0 or not subtract else work // 2):
                if subtract:
                    if level == 0:
                        build = np.ones(1, dtype=np.bool_)
                    else:
                        c2 = cnt.reshape(n_nodes // 2, 2)
                        left = c2[:, 0] <= c2[:, 1]
                        build = np.stack([left, ~left], axis=1).ravel()
                    H = np.zeros((int(offsets[-1]), n_nodes, S))
                    _hist_joint(fc.codes, offsets, fc.n_bins, A, node, build, H)
                    Pp = H if P is None else P
                    _scan_joint(H, Pp, build, offsets, fc.n_bins, tot, mass, gain, split)
                    P = H
                else:
                    _level_local_joint(fc.codes, fc.n_bins, A, node, tot, mass, gain, split)
            f = np.argmax(gain, axis=0)  # (n_nodes,)
            b = split[f, np.arange(n_nodes)]
            t = fc.thresholds(f, b)
            t[b < 0] = np.inf
            heap = n_nodes - 1 + np.arange(n_nodes)
            feat[heap] = f
            thr[heap] = t
            node = _route_joint(fc.codes, node, f.astype(np.int64), b.astype(np.int64))
        tot, _, _ = _node_stats_joint(node, A, 2**D)
        leaf = np.where(tot >= 0, 1.0, -1.0).T  # (S, leaves)
        gains = np.abs(tot).sum(axis=0)
        return Trees(np.tile(feat, (S, 1)), np.tile(thr, (S, 1)), leaf, D, d), gains
