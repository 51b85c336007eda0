"""Threaded pieces of the master's column products and of the sharded oracle's set-up
(issue 17): the same answer for any thread count, and the answer of the plain product."""

import numpy as np
import pytest
import scipy.sparse as sp

from maxmargin.inference import _threads as thr
from maxmargin.inference._threads import product_pieces
from maxmargin.solvers.columns import ColumnStore
from maxmargin.tasks.linear import LinearJointModel, dense_to_csr
from maxmargin.weak import DecisionStump


def _store(rng, n_hyp, n_z, n_slots, threads):
    st = ColumnStore(DecisionStump.hypotheses_class, 3, n_z, n_slots, threads=threads)
    st._grow(n_hyp)
    st._H[:n_hyp] = rng.normal(size=(n_hyp, n_z))
    st._H32[:n_hyp] = st._H[:n_hyp]
    st.n_hyp = n_hyp
    st.col_hyp = np.repeat(np.arange(n_hyp), n_slots)
    st.col_slot = np.tile(np.arange(n_slots), n_hyp)
    return st


def test_product_pieces_depend_on_sizes_only():
    assert product_pieces(10, 100).tolist() == [0, 10]
    b = product_pieces(1001, thr.PRODUCT_MIN_WORK)
    assert b[0] == 0 and b[-1] == 1001 and len(b) == thr.PRODUCT_PIECES + 1
    assert np.all(np.diff(b) > 0)


@pytest.mark.parametrize("small", [True, False])
def test_column_products_bit_identical_for_any_threads(monkeypatch, small):
    if small:  # below the threshold: one piece
        monkeypatch.setattr(thr, "PRODUCT_MIN_WORK", 10**9)
    else:  # force pieces on a small problem
        monkeypatch.setattr(thr, "PRODUCT_MIN_WORK", 1)
    rng = np.random.default_rng(0)
    A = rng.normal(size=(37, 4))
    dw = rng.normal(size=23 * 4)
    out = {}
    for threads in (1, 2, 3):
        st = _store(np.random.default_rng(1), 23, 37, 4, threads)
        out[threads] = (st.gains(A), st.gains(A, fast=True), st.score_change(dw))
    for t in (2, 3):
        for a, b in zip(out[1], out[t]):
            assert np.array_equal(a, b)
    st = _store(np.random.default_rng(1), 23, 37, 4, 1)
    g, g32, sc = out[1]
    np.testing.assert_allclose(g, (st.H @ A)[st.col_hyp, st.col_slot], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g32, (st.H @ A)[st.col_hyp, st.col_slot], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sc, st.H.T @ dw.reshape(23, 4), rtol=1e-4, atol=1e-4)


def test_column_products_really_use_the_pool(monkeypatch):
    monkeypatch.setattr(thr, "PRODUCT_MIN_WORK", 1)
    seen = []
    real = thr._pool

    def spy(threads):
        seen.append(threads)
        return real(threads)

    monkeypatch.setattr(thr, "_pool", spy)
    st = _store(np.random.default_rng(1), 23, 37, 4, 2)
    st.gains(np.ones((37, 4)))
    st.score_change(np.ones(23 * 4))
    assert seen == [2, 2]


@pytest.mark.parametrize("threads", [1, 2])
def test_dense_to_csr_equals_scipy(threads):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 7)) * (rng.random((50, 7)) < 0.4)
    X[3] = 0.0  # an empty row
    X[5, 2] = -0.0  # negative zero is a zero
    M = sp.csr_matrix(X)
    M.sort_indices()
    indptr, indices, data = dense_to_csr(X, threads)
    assert np.array_equal(indptr, M.indptr) and np.array_equal(indices, M.indices)
    assert np.array_equal(data, M.data)
    assert indptr.dtype == indices.dtype == np.int64 and data.dtype == np.float64


@pytest.mark.parametrize("sparse", [False, True])
def test_shard_layout_equals_the_shards_own_model(sparse):
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 5, size=9)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    X = rng.normal(size=(offsets[-1], 6)) * (rng.random((offsets[-1], 6)) < 0.5)
    X = sp.csr_matrix(X) if sparse else X
    y = rng.integers(0, 3, size=offsets[-1])
    m = LinearJointModel(X, offsets, y, np.eye(3), 1 - np.eye(3), pairwise=True)
    for a, b in [(0, 9), (2, 5), (8, 9)]:
        p0, p1 = offsets[a], offsets[b]
        sub = LinearJointModel(
            X[p0:p1], offsets[a : b + 1] - p0, y[p0:p1], np.eye(3), 1 - np.eye(3), True
        )
        for u, v in zip(m.shard_layout(a, b, threads=2), sub.layout()):
            if isinstance(u, np.ndarray):
                assert np.array_equal(u, v)
            else:
                assert u == v


@pytest.mark.parametrize("sparse", [False, True])
def test_row_pieces_bit_identical_and_equal_to_the_products(monkeypatch, sparse):
    from maxmargin.inference._threads import RowPieces

    monkeypatch.setattr(thr, "PRODUCT_MIN_WORK", 1)  # force pieces on small data
    rng = np.random.default_rng(0)
    X = rng.normal(size=(203, 5)) * (rng.random((203, 5)) < 0.6)
    X = sp.csr_matrix(X) if sparse else X
    w, v = rng.normal(size=5), rng.normal(size=203)
    res = {t: (RowPieces(X, t).matvec(w), RowPieces(X, t).rmatvec(v)) for t in (1, 2, 3)}
    assert len(RowPieces(X, 2).pieces) == thr.PRODUCT_PIECES
    for t in (2, 3):
        assert np.array_equal(res[1][0], res[t][0]) and np.array_equal(res[1][1], res[t][1])
    np.testing.assert_allclose(res[1][0], np.asarray(X @ w).ravel(), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(res[1][1], np.asarray(X.T @ v).ravel(), rtol=1e-13, atol=1e-13)


def test_ranksvm_fit_bit_identical_for_any_n_jobs(monkeypatch):
    from maxmargin.inference import ranking as rk
    from maxmargin.inference.ranking import PreferenceGraph
    from maxmargin.solvers.ranking import fit_ranksvm

    monkeypatch.setattr(thr, "PRODUCT_MIN_WORK", 1)
    monkeypatch.setattr(rk, "_PARALLEL_N", 1)  # the threaded tree on small data
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    loss = np.round(rng.random(300), 2)
    g = PreferenceGraph(loss)
    ws = [fit_ranksvm(X, g, C=10.0, max_iter=15, n_jobs=j).w for j in (1, 2)]
    assert np.array_equal(ws[0], ws[1])
