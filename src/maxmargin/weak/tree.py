"""Depth-limited decision trees with leaves in {-1, +1}, grown greedily on the linear gain.

For signed weights ``a`` a tree with leaf outputs ``sign(sum_{k in leaf} a_k)`` has gain
``sum_leaves |sum_{k in leaf} a_k|``, the largest gain of any {-1, +1} labelling of its
leaves.  Growing splits one level at a time, every node takes the split (first feature,
first threshold on ties) that maximises ``|sum_left| + |sum_right|``; splitting never
lowers the gain, and the root split is the best stump's, so the tree's gain is at least
the best stump's.  A node without an improving split passes all samples to its left
child (threshold ``+inf``).  The search is the stump's histogram scan
(:mod:`maxmargin.weak.stump`) with one histogram per node, in parallel over features.
StructBoost Sec. 4 uses stumps and trees as weak learners.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from maxmargin.weak.base import Hypotheses, WeakLearner, check_loaded
from maxmargin.weak.binning import code_features, dense_columns
from maxmargin.weak.stump import check_weights, threads_for

__all__ = ["DecisionTree", "Trees"]

_REL_TOL = 1e-12  # a split must beat the unsplit node by more than rounding


@njit(parallel=True, cache=True)
def _eval_trees(cols, fmap, thr, leaf, depth):  # pragma: no cover - compiled
    n = cols.shape[0]
    T = thr.shape[0]
    out = np.empty((n, T))
    for k in prange(n):
        for t in range(T):
            node = 0
            for _ in range(depth):
                if cols[k, fmap[t, node]] > thr[t, node]:
                    node = 2 * node + 2
                else:
                    node = 2 * node + 1
            out[k, t] = leaf[t, node - (2**depth - 1)]
    return out


class Trees(Hypotheses):
    """Batch of complete binary trees of one depth in heap layout.

    ``feature``/``threshold``: (T, 2**depth - 1) internal nodes (children of node i are
    2i+1 for ``x <= t`` and 2i+2 for ``x > t``); ``leaf``: (T, 2**depth) outputs.
    """

    def __init__(self, feature, threshold, leaf, depth: int, n_features: int) -> None:
        self.depth = int(depth)
        n_int = 2**self.depth - 1
        self.feature = np.asarray(feature, dtype=np.int64).reshape(-1, n_int)
        self.threshold = np.asarray(threshold, dtype=np.float64).reshape(-1, n_int)
        self.leaf = np.asarray(leaf, dtype=np.float64).reshape(-1, n_int + 1)
        self.n_features = int(n_features)

    def __len__(self) -> int:
        return self.feature.shape[0]

    def evaluate(self, Z) -> np.ndarray:
        n = Z.shape[0]
        T = len(self)
        if T == 0:
            return np.zeros((0, n))
        if not sp.issparse(Z):
            Z = np.asarray(Z, dtype=np.float64)
        block = T if not sp.issparse(Z) else max(1, 256 // (2**self.depth - 1))
        out = np.empty((T, n))
        for t0 in range(0, T, block):
            sl = slice(t0, t0 + block)
            uf, fmap = np.unique(self.feature[sl], return_inverse=True)
            cols = dense_columns(Z, uf)
            with threads_for(n * len(cols) * self.depth):
                out[sl] = _eval_trees(
                    cols,
                    fmap.reshape(self.feature[sl].shape).astype(np.int64),
                    self.threshold[sl],
                    self.leaf[sl],
                    self.depth,
                ).T
        return out

    def take(self, index) -> Trees:
        return Trees(
            self.feature[index],
            self.threshold[index],
            self.leaf[index],
            self.depth,
            self.n_features,
        )

    def concat(self, other: Hypotheses) -> Trees:
        if not isinstance(other, Trees):
            raise TypeError("can only concatenate Trees with Trees")
        if len(self) == 0 or len(other) == 0:  # an empty batch adopts the other's depth
            return other.take(slice(None)) if len(self) == 0 else self.take(slice(None))
        if other.depth != self.depth:
            raise TypeError("can only concatenate Trees of the same depth")
        return Trees(
            np.vstack([self.feature, other.feature]),
            np.vstack([self.threshold, other.threshold]),
            np.vstack([self.leaf, other.leaf]),
            self.depth,
            self.n_features,
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "feature": self.feature,
            "threshold": self.threshold,
            "leaf": self.leaf,
            "depth": np.array(self.depth),
            "n_features": np.array(self.n_features),
        }

    @classmethod
    def from_arrays(cls, arrays) -> Trees:
        depth = int(arrays["depth"])
        if not 1 <= depth <= 16:
            raise ValueError(f"trees: depth {depth} out of range")
        n_int = 2**depth - 1
        shapes = [np.shape(arrays[k])[1:] for k in ("feature", "threshold", "leaf")]
        if shapes != [(n_int,), (n_int,), (n_int + 1,)]:
            raise ValueError(f"trees: node arrays do not match depth {depth}")
        out = cls(
            arrays["feature"],
            arrays["threshold"],
            arrays["leaf"],
            depth,
            int(arrays["n_features"]),
        )
        T = len(out)
        check_loaded(
            "trees",
            out.n_features,
            np.asarray(arrays["feature"]),
            (out.leaf,),
            thresholds=(out.threshold,),
            rows=T,
        )
        if (
            out.feature.shape != (T, n_int)
            or out.threshold.shape != (T, n_int)
            or out.leaf.shape != (T, n_int + 1)
        ):
            raise ValueError(f"trees: node arrays do not match depth {depth}")
        return out

    @classmethod
    def empty(cls, n_features: int, depth: int = 2) -> Trees:
        n_int = 2**depth - 1
        return cls(
            np.zeros((0, n_int), np.int64),
            np.zeros((0, n_int)),
            np.zeros((0, n_int + 1)),
            depth,
            n_features,
        )


@njit(cache=True)
def _scan_nodes(hist, nb, node_tot, f, gain, split):  # pragma: no cover - compiled
    n_nodes, _, S = hist.shape
    for j in range(n_nodes):
        for s in range(S):
            tot = node_tot[j, s]
            best = abs(tot)
            bsplit = -1
            cum = 0.0
            for b in range(nb - 1):
                cum += hist[j, b, s]
                g = abs(cum) + abs(tot - cum)
                if g > best + _REL_TOL * g:
                    best = g
                    bsplit = b
            gain[f, j, s] = best
            split[f, j, s] = bsplit


@njit(parallel=True, cache=True)
def _level_dense(codes, n_bins, A, node, node_tot):  # pragma: no cover - compiled
    d, n = codes.shape
    n_nodes, S = node_tot.shape
    gain = np.empty((d, n_nodes, S))
    split = np.empty((d, n_nodes, S), dtype=np.int64)
    for f in prange(d):
        nb = n_bins[f]
        hist = np.zeros((n_nodes, nb, S))
        if nb > 1:
            for k in range(n):
                c = codes[f, k]
                for s in range(S):
                    hist[node[k, s], c, s] += A[k, s]
        _scan_nodes(hist, nb, node_tot, f, gain, split)
    return gain, split


@njit(parallel=True, cache=True)
def _level_sparse(indptr, indices, codes, zero_bin, n_bins, A, node, node_tot):  # pragma: no cover
    d = len(n_bins)
    n_nodes, S = node_tot.shape
    gain = np.empty((d, n_nodes, S))
    split = np.empty((d, n_nodes, S), dtype=np.int64)
    for f in prange(d):
        nb = n_bins[f]
        hist = np.zeros((n_nodes, nb, S))
        zb = zero_bin[f]
        if nb > 1:
            if zb >= 0:
                for j in range(n_nodes):
                    for s in range(S):
                        hist[j, zb, s] = node_tot[j, s]
            for p in range(indptr[f], indptr[f + 1]):
                c = codes[p]
                r = indices[p]
                for s in range(S):
                    hist[node[r, s], c, s] += A[r, s]
                    if zb >= 0:
                        hist[node[r, s], zb, s] -= A[r, s]
        _scan_nodes(hist, nb, node_tot, f, gain, split)
    return gain, split


class DecisionTree(WeakLearner):
    """Greedy depth-limited tree (depth 1-4) maximising ``sum_k a_k phi(z_k)``.

    ``max_bins``: histogram bins per feature (default 255, LightGBM-style); None for
    exact thresholds (memory grows as n_nodes * n_distinct per feature).
    """

    hypotheses_class = Trees

    def __init__(self, max_depth: int = 2, max_bins: int | None = 255) -> None:
        self.max_depth = max_depth
        self.max_bins = max_bins

    def _depth(self) -> int:
        if isinstance(self.max_depth, bool) or self.max_depth not in (1, 2, 3, 4):
            raise ValueError(f"max_depth must be 1, 2, 3 or 4, got {self.max_depth!r}")
        return int(self.max_depth)

    def prepare(self, Z):
        self._depth()
        if sp.issparse(Z):
            Z = sp.csc_matrix(Z, dtype=np.float64)
        else:
            Z = np.asarray(Z, dtype=np.float64)
        return {"codes": code_features(Z, self.max_bins), "Z": Z}

    def best(self, prepared, A):
        fc, Z = prepared["codes"], prepared["Z"]
        A = check_weights(fc, A)
        D = self._depth()
        n, S = A.shape
        feat = np.zeros((S, 2**D - 1), dtype=np.int64)
        thr = np.full((S, 2**D - 1), np.inf)
        node = np.zeros((n, S), dtype=np.int64)
        cols = np.arange(S)
        for level in range(D):
            n_nodes = 2**level
            tot = self._node_totals(node, A, n_nodes)
            if fc.n_features == 0:
                continue
            with threads_for((len(fc.codes) if fc.sparse else fc.codes.size) * S * n_nodes):
                if fc.sparse:
                    gain, split = _level_sparse(
                        fc.indptr, fc.indices, fc.codes, fc.zero_bin, fc.n_bins, A, node, tot
                    )
                else:
                    gain, split = _level_dense(fc.codes, fc.n_bins, A, node, tot)
            f = np.argmax(gain, axis=0)  # (n_nodes, S): first feature on ties
            b = np.take_along_axis(split, f[None], axis=0)[0]
            t = fc.thresholds(f.ravel(), b.ravel()).reshape(f.shape)
            t[b < 0] = np.inf  # no improving split: everyone goes left
            heap = n_nodes - 1 + np.arange(n_nodes)
            feat[:, heap] = f.T
            thr[:, heap] = t.T
            fk, tk = f[node, cols], t[node, cols]  # (n, S) per-sample split of its node
            # the features in use and each entry's place among them (np.unique's answer,
            # by a presence table instead of a sort of all n * S entries)
            used = np.zeros(fc.n_features, dtype=bool)
            used[fk.ravel()] = True
            uf = np.flatnonzero(used)
            place = np.zeros(fc.n_features, dtype=np.int64)
            place[uf] = np.arange(len(uf))
            x = dense_columns(Z, uf)[np.arange(n)[:, None], place[fk]]
            node = 2 * node + (x > tk)
        tot = self._node_totals(node, A, 2**D)
        leaf = np.where(tot >= 0, 1.0, -1.0).T
        gains = np.abs(tot).sum(axis=0)
        return Trees(feat, thr, leaf, D, fc.n_features), gains

    @staticmethod
    def _node_totals(node, A, n_nodes) -> np.ndarray:
        S = A.shape[1]
        return np.stack(
            [np.bincount(node[:, s], weights=A[:, s], minlength=n_nodes) for s in range(S)], axis=1
        )
