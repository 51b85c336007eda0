"""Sparse feature coding (one sort of all stored entries) against a per-column
brute force: np.unique of every column with its implicit zeros, then the greedy
equal-frequency grouping."""

import numpy as np
import pytest
import scipy.sparse as sp

from maxmargin.weak.binning import _group, code_features


def _brute(Z, max_bins):
    Z = sp.csc_matrix(Z)
    Z.sort_indices()
    n, d = Z.shape
    codes, n_bins, zero_bin, los, his = [], [], [], [], []
    for f in range(d):
        data = Z.data[Z.indptr[f] : Z.indptr[f + 1]]
        full = np.zeros(n)
        full[Z.indices[Z.indptr[f] : Z.indptr[f + 1]]] = data
        uniq, inv, counts = np.unique(full, return_inverse=True, return_counts=True)
        if n == 0:
            uniq, counts = np.zeros(1), np.zeros(1, dtype=np.int64)
        grp = _group(counts, n, max_bins)
        rows = Z.indices[Z.indptr[f] : Z.indptr[f + 1]]
        codes.append(grp[inv[rows]] if n else np.zeros(0, np.int64))
        implicit = n - len(rows)
        zero_bin.append(grp[np.searchsorted(uniq, 0.0)] if implicit > 0 else -1)
        nb = int(grp[-1]) + 1
        n_bins.append(nb)
        los.append([uniq[grp == b].min() for b in range(nb)])
        his.append([uniq[grp == b].max() for b in range(nb)])
    return (
        np.concatenate(codes) if codes else np.zeros(0),
        np.array(n_bins),
        np.array(zero_bin),
        np.concatenate(los) if los else np.zeros(0),
        np.concatenate(his) if his else np.zeros(0),
    )


@pytest.mark.parametrize("max_bins", [None, 2, 3, 8])
@pytest.mark.parametrize("seed", range(6))
def test_sparse_codes_equal_per_column_brute_force(seed, max_bins):
    rng = np.random.default_rng(seed)
    n, d = rng.integers(1, 40), rng.integers(1, 12)
    X = rng.integers(-3, 4, size=(n, d)).astype(float) * (rng.random((n, d)) < 0.5)
    X[:, 0] = 0.0  # a column with no stored entry
    if d > 1:
        X[:, 1] = rng.normal(size=n)  # a column with no implicit zero, all distinct
    X[rng.random((n, d)) < 0.1] = -0.0
    Z = sp.csc_matrix(X)
    Z.eliminate_zeros()
    fc = code_features(Z, max_bins)
    codes, n_bins, zero_bin, los, his = _brute(Z, max_bins)
    assert np.array_equal(fc.codes, codes)
    assert np.array_equal(fc.n_bins, n_bins)
    assert np.array_equal(fc.zero_bin, zero_bin)
    assert np.array_equal(fc.lo, los) and np.array_equal(fc.hi, his)
    assert np.array_equal(fc.offsets, np.concatenate([[0], np.cumsum(n_bins)]))


def test_sparse_codes_of_no_samples():
    fc = code_features(sp.csc_matrix((0, 3)), None)
    assert fc.codes.shape == (0,) and np.array_equal(fc.n_bins, [1, 1, 1])
    assert np.array_equal(fc.zero_bin, [-1, -1, -1]) and np.array_equal(fc.lo, np.zeros(3))
