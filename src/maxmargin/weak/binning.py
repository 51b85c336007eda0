"""Per-feature integer codes: the one-off presort shared by all stump-like weak learners.

Each feature is sorted once per fit and every sample gets the *rank* of its value among
the feature's distinct values (exact mode) or of its value's bin (histogram mode, at
most ``max_bins`` equal-frequency bins of distinct values, as in LightGBM).  A stump
search is then one histogram of the signed weights over the codes plus a scan over the
bins: reading the codes feature by feature is sequential and the codes are small
(uint8 for <= 256 bins), which is what makes the search fast.

Every split between bin ``b`` and ``b + 1`` has the threshold half-way between the
largest training value of bin ``b`` and the smallest of bin ``b + 1``; with one bin
per distinct value these are exactly the thresholds of the exact stump (LPBoost,
StructBoost Sec. 4.2), so histogram mode is exact whenever a feature has at most
``max_bins`` distinct values.

Sparse input (CSR/CSC) is coded column by column without densifying: only the stored
entries get codes; the implicit zeros form one bin (``zero_bin``) whose weight is the
column total minus the stored entries' weights.

With ``keep_order=True`` (the exact stump) a dense feature with more than
``SORTED_MIN_BINS`` bins also keeps its samples in sorted order (``order``, a stable sort:
equal values in increasing sample index) and the end of every bin in that order
(``bin_end``): its search then walks the samples in order instead of filling a histogram
with one row per distinct value (``maxmargin.weak.stump``).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = ["SORTED_MIN_BINS", "FeatureCodes", "code_features", "dense_columns", "midpoint"]

#: a feature with more bins than this is searched in sorted order (``keep_order``): its
#: histogram (bins x weight columns) would no longer fit the CPU's cache
SORTED_MIN_BINS = 256
#: largest memory (bytes) the sorted orders of a fit may take; features beyond it keep
#: the histogram search
ORDER_BUDGET = 1 << 30


def midpoint(lo, hi):
    """Thresholds strictly separating ``lo < hi`` under the rule ``x > t`` (vectorised)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    t = lo + (hi - lo) / 2.0
    return np.where(t >= hi, lo, t)


@dataclass
class FeatureCodes:
    """Coded features: ``codes`` is (d, n) for dense input, (nnz,) in CSC order for sparse."""

    codes: np.ndarray
    n_bins: np.ndarray  # (d,) bins per feature
    offsets: np.ndarray  # (d + 1,) start of each feature's bins in lo / hi
    lo: np.ndarray  # smallest training value in each bin
    hi: np.ndarray  # largest training value in each bin
    n_samples: int
    n_features: int
    indptr: np.ndarray | None = None  # CSC structure (sparse only)
    indices: np.ndarray | None = None
    zero_bin: np.ndarray | None = None  # (d,) bin of the implicit zeros, -1 if none
    # keep_order (dense only): sorted samples of the features with many bins
    order: np.ndarray | None = None  # (n_sorted, n) int32, stable sort of each such feature
    order_row: np.ndarray | None = None  # (d,) row of ``order`` of each feature, -1 if none
    bin_end: np.ndarray | None = None  # (offsets[-1],) end of each bin in its feature's order

    @property
    def sparse(self) -> bool:
        return self.indptr is not None

    def thresholds(self, feature, split) -> np.ndarray:
        """Threshold of split ``split`` (between bins split, split+1); -inf where split < 0."""
        feature = np.asarray(feature, dtype=np.int64)
        split = np.asarray(split, dtype=np.int64)
        ok = split >= 0
        base = self.offsets[feature] + np.where(ok, split, 0)
        nxt = np.minimum(base + 1, len(self.lo) - 1)
        return np.where(ok, midpoint(self.hi[base], self.lo[nxt]), -np.inf)


def _group(counts: np.ndarray, n: int, max_bins: int | None) -> np.ndarray:
    """Bin of every distinct value: identity, or greedy equal-frequency groups."""
    k = len(counts)
    if max_bins is None or k <= max_bins:
        return np.arange(k)
    before = np.cumsum(counts) - counts
    raw = np.minimum(before * max_bins // max(n, 1), max_bins - 1)
    change = np.concatenate([[0], (np.diff(raw) != 0).astype(np.int64)])
    return np.cumsum(change)


def _code_dtype(max_bins_used: int):
    if max_bins_used <= 256:
        return np.uint8
    if max_bins_used <= 65536:
        return np.uint16
    return np.uint32


def _rank_column(col, stable: bool = False):
    """Distinct values of ``col`` (sorted), their counts, each entry's rank and the sort
    order.  NumPy's sort (vectorised, releases the GIL) and a numba pass without the GIL:
    features can be ranked by several threads at once.  ``stable``: equal values keep
    their sample order."""
    order = np.argsort(col, kind="stable" if stable else None)
    return (*_ranks_from_order(col, order), order)


@njit(nogil=True, cache=True)
def _ranks_from_order(col, order):  # pragma: no cover - compiled
    n = len(col)
    rank = np.empty(n, dtype=np.int64)
    uniq = np.empty(n)
    counts = np.zeros(n, dtype=np.int64)
    k = -1
    prev = 0.0
    for j in range(n):
        v = col[order[j]]
        if k < 0 or v != prev:
            k += 1
            uniq[k] = v
            prev = v
        counts[k] += 1
        rank[order[j]] = k
    return rank, uniq[: k + 1].copy(), counts[: k + 1].copy()


def _presort_threads(work: int) -> int:
    """Threads for the presort: one per core, none for small inputs."""
    return 1 if work < 200_000 else max(1, min(os.cpu_count() or 1, 8))


def code_features(Z, max_bins: int | None = None, keep_order: bool = False) -> FeatureCodes:
    """Sort every feature once and replace values by bin codes (see module docstring).

    ``keep_order``: also keep the sorted order of the dense features with more than
    ``SORTED_MIN_BINS`` bins (within ``ORDER_BUDGET`` bytes), for the exact stump search."""
    if max_bins is not None and not 2 <= int(max_bins) <= 65536:
        raise ValueError(f"max_bins must be in [2, 65536] or None, got {max_bins!r}")
    if sp.issparse(Z):
        return _code_sparse(Z, max_bins)
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError(f"expected a 2-d array, got shape {Z.shape}")
    n, d = Z.shape
    n_bins, los, his = np.zeros(d, dtype=np.int64), [None] * d, [None] * d
    ranks, orders, ends = [None] * d, [None] * d, [None] * d

    def one(f):  # one sort per feature per fit (numba, without the GIL)
        inv, uniq, counts, order = _rank_column(np.ascontiguousarray(Z[:, f]), keep_order)
        grp = _group(counts, n, max_bins)
        nb = int(grp[-1]) + 1 if len(grp) else 1
        ranks[f] = grp[inv] if nb < len(uniq) else inv
        first = np.searchsorted(grp, np.arange(nb), side="left")
        last = np.searchsorted(grp, np.arange(nb), side="right") - 1
        los[f] = uniq[first] if n else np.zeros(1)
        his[f] = uniq[last] if n else np.zeros(1)
        n_bins[f] = nb
        if keep_order and nb > SORTED_MIN_BINS:
            orders[f] = order.astype(np.int32)
            ends[f] = np.cumsum(counts)[last]  # end of every bin in the sorted order

    threads = _presort_threads(n * d)
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(d)))
    else:
        for f in range(d):
            one(f)
    codes = np.empty((d, n), dtype=_code_dtype(int(n_bins.max()) if d else 1))
    for f in range(d):
        codes[f] = ranks[f]
    offsets = np.concatenate([[0], np.cumsum(n_bins)])
    fc = FeatureCodes(codes, n_bins, offsets, _cat(los), _cat(his), n, d)
    if keep_order:
        _attach_order(fc, orders, ends)
    return fc


def _attach_order(fc: FeatureCodes, orders, ends) -> None:
    """Store the kept sorted orders (at most ``ORDER_BUDGET`` bytes, first features first)."""
    fc.order_row = np.full(fc.n_features, -1, dtype=np.int64)
    fc.bin_end = np.zeros(int(fc.offsets[-1]), dtype=np.int64)
    rows = []
    for f in range(fc.n_features):
        if orders[f] is None or (len(rows) + 1) * 4 * fc.n_samples > ORDER_BUDGET:
            continue
        fc.order_row[f] = len(rows)
        rows.append(orders[f])
        fc.bin_end[fc.offsets[f] : fc.offsets[f + 1]] = ends[f]
    fc.order = np.stack(rows) if rows else np.zeros((0, fc.n_samples), dtype=np.int32)


def _cat(parts):
    return np.concatenate(parts) if parts else np.zeros(0)


def _code_sparse(Z, max_bins) -> FeatureCodes:
    """Codes of the stored entries of every column in one sort of all of them (by
    column, then value), with one implicit zero per column that has implicit zeros: no
    per-column Python step (the chain task's pair-indicator columns alone number K^2)."""
    Z = sp.csc_matrix(Z, dtype=np.float64)
    Z.sort_indices()
    n, d = Z.shape
    nnz = Z.nnz
    per_col = np.diff(Z.indptr).astype(np.int64)
    implicit = n - per_col
    zf = np.flatnonzero(implicit > 0)  # columns with implicit zeros: one 0.0 each
    vals = np.concatenate([Z.data, np.zeros(len(zf))])
    feats = np.concatenate([np.repeat(np.arange(d, dtype=np.int64), per_col), zf])
    order = np.lexsort((vals, feats))
    sv, sf = vals[order], feats[order]
    new = np.ones(len(sv), dtype=bool)
    new[1:] = (sf[1:] != sf[:-1]) | (sv[1:] != sv[:-1])
    uid = np.cumsum(new) - 1  # distinct (column, value) number of each sorted entry
    inv = np.empty(len(sv), dtype=np.int64)
    inv[order] = uid
    uniq, ufeat = sv[new], sf[new]
    counts = np.bincount(uid, minlength=len(uniq)).astype(np.int64)
    np.add.at(counts, inv[nnz:], implicit[zf] - 1)  # the sentinel stands for all zeros
    ustart = np.searchsorted(ufeat, np.arange(d + 1))  # column f: ustart[f]:ustart[f+1]
    k_f = np.diff(ustart)
    # bin of every distinct value, local to its column: identity, or greedy
    # equal-frequency groups (``_group``) for columns with more than max_bins values
    has = k_f > 0
    first, k_has = ustart[:-1][has], k_f[has]  # first distinct value of each column
    grp = np.arange(len(uniq), dtype=np.int64) - np.repeat(first, k_has)
    if max_bins is not None and np.any(k_f > max_bins):
        excl = np.cumsum(counts) - counts
        before = excl - np.repeat(excl[first], k_has)  # samples below, within the column
        raw = np.minimum(before * max_bins // max(n, 1), max_bins - 1)
        change = np.ones(len(uniq), dtype=np.int64)
        change[1:] = raw[1:] != raw[:-1]
        g = np.cumsum(change)
        g -= np.repeat(g[first], k_has)
        grp = np.where(np.repeat(k_f > max_bins, k_f), g, grp)
    n_bins = np.ones(d, dtype=np.int64)  # a column without any sample: one bin of 0.0
    n_bins[has] = grp[ustart[1:][has] - 1] + 1
    zero_bin = np.full(d, -1, dtype=np.int64)
    zero_bin[zf] = grp[inv[nnz:]]
    # smallest / largest value of every bin, the bins in column order
    start = np.ones(len(uniq), dtype=bool)
    start[1:] = (ufeat[1:] != ufeat[:-1]) | (grp[1:] != grp[:-1])
    end = np.ones(len(uniq), dtype=bool)
    end[:-1] = start[1:]
    los, his = np.zeros(int(n_bins.sum())), np.zeros(int(n_bins.sum()))
    keep = np.repeat(has, n_bins)
    los[keep], his[keep] = uniq[start], uniq[end]
    dtype = _code_dtype(int(n_bins.max()) if d else 1)
    return FeatureCodes(
        grp[inv[:nnz]].astype(dtype),
        n_bins,
        np.concatenate([[0], np.cumsum(n_bins)]),
        los,
        his,
        n,
        d,
        indptr=Z.indptr.astype(np.int64),
        indices=Z.indices.astype(np.int64),
        zero_bin=zero_bin,
    )


def dense_columns(Z, features) -> np.ndarray:
    """Columns ``features`` of Z as a dense (n, len(features)) array; sparse-safe.

    Only the requested columns are densified, so evaluating a few stumps on a large
    sparse matrix never builds the whole dense matrix.
    """
    features = np.asarray(features, dtype=np.int64)
    if sp.issparse(Z):
        if Z.format != "csc":
            Z = Z.tocsc()
        return np.asarray(Z[:, features].toarray(), dtype=np.float64)
    Z = np.asarray(Z)
    if Z.dtype.kind not in "iuf":
        Z = Z.astype(np.float64)
    return np.ascontiguousarray(Z[:, features], dtype=np.float64)  # only these converted
