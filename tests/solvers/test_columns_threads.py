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


def _store(rng, n_hyp, n_z, n_slots, threads, every_slot=True):
    """Classifiers in every slot (multi-class: the dense products) or each in one slot
    (chains, trackers: the column kernels)."""
    st = ColumnStore(DecisionStump.hypotheses_class, 3, n_z, n_slots, threads=threads)
    st._grow(n_hyp)
    st._H[:n_hyp] = rng.normal(size=(n_hyp, n_z))
    st._H32[:n_hyp] = st._H[:n_hyp]
    st.n_hyp = n_hyp
    if every_slot:
        st.col_hyp = np.repeat(np.arange(n_hyp), n_slots)
        st.col_slot = np.tile(np.arange(n_slots), n_hyp)
    else:
        st.col_hyp = np.arange(n_hyp)
        st.col_slot = np.arange(n_hyp) % n_slots
    assert st._sparse_slots() == (not every_slot)
    return st


def test_product_pieces_depend_on_sizes_only():
    assert product_pieces(10, 100).tolist() == [0, 10]
    b = product_pieces(1001, thr.PRODUCT_MIN_WORK)
    assert b[0] == 0 and b[-1] == 1001 and len(b) == thr.PRODUCT_PIECES + 1
    assert np.all(np.diff(b) > 0)


@pytest.mark.parametrize("every_slot", [True, False])
@pytest.mark.parametrize("small", [True, False])
def test_column_products_bit_identical_for_any_threads(monkeypatch, small, every_slot):
    from maxmargin.solvers import columns as cs

    if small:  # below the thresholds: one piece, one thread
        monkeypatch.setattr(thr, "PRODUCT_MIN_WORK", 10**9)
    else:  # force pieces and threads on a small problem
        monkeypatch.setattr(thr, "PRODUCT_MIN_WORK", 1)
        monkeypatch.setattr(cs, "_PARALLEL_WORK", 1)
    rng = np.random.default_rng(0)
    n_z = 3 * cs._BLOCK + 37  # several blocks of weak inputs, the last one partial
    A = rng.normal(size=(n_z, 4))
    F = rng.normal(size=(n_z, 4))
    n_cols = 23 * 4 if every_slot else 23
    dw = rng.normal(size=n_cols)
    dw[::5] = 0.0  # columns that do not move are skipped
    out = {}
    for threads in (1, 2, 3):
        st = _store(np.random.default_rng(1), 23, n_z, 4, threads, every_slot)
        out[threads] = (st.gains(A), st.gains(A, fast=True), st.shifted_scores(F, dw))
    for t in (2, 3):
        for a, b in zip(out[1], out[t]):
            assert np.array_equal(a, b)
    st = _store(np.random.default_rng(1), 23, n_z, 4, 1, every_slot)
    g, g32, sc = out[1]
    H32 = st.H32.astype(np.float64)  # the fast products read the float32 outputs
    A32 = A.astype(np.float32).astype(np.float64)
    exact = (st.H @ A)[st.col_hyp, st.col_slot]
    np.testing.assert_allclose(g, exact, rtol=1e-12, atol=1e-12)
    tol = 1e-4 if every_slot else 1e-11  # dense: float32 BLAS sums; kernels: float64 sums
    np.testing.assert_allclose(g32, (H32 @ A32)[st.col_hyp, st.col_slot], rtol=tol, atol=tol)
    np.testing.assert_allclose(sc, F + H32.T @ st.weight_matrix(dw), rtol=tol, atol=tol)


def test_fast_column_products_use_only_the_columns_slots():
    """A classifier in one slot: the other slots' weights must not leak into its gain,
    and a column's weight change moves only its own slot's scores."""
    rng = np.random.default_rng(3)
    st = _store(rng, 5, 300, 8, 1, every_slot=False)
    st.col_hyp = np.array([0, 1, 2, 3, 4, 4])
    st.col_slot = np.array([2, 0, 1, 2, 0, 1])
    A = rng.normal(size=(300, 8))
    H = st.H32.astype(np.float64)
    ref = np.array([H[h] @ A.astype(np.float32)[:, s] for h, s in zip(st.col_hyp, st.col_slot)])
    np.testing.assert_allclose(st.gains(A, fast=True), ref, rtol=1e-12)
    dw = np.zeros(6)
    dw[3] = 2.0  # classifier 3 in slot 2
    F = np.zeros((300, 8))
    out = st.shifted_scores(F, dw)
    np.testing.assert_allclose(out[:, 2], 2.0 * H[3], rtol=1e-12)
    assert not np.delete(out, 2, axis=1).any()
    with pytest.raises(ValueError, match="shape"):
        st.gains(A[:, :2], fast=True)
    with pytest.raises(ValueError, match="match"):
        st.shifted_scores(F, dw[:5])


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
    st.gains(np.ones((37, 4)), fast=True)
    st.shifted_scores(np.zeros((37, 4)), np.ones(23 * 4))
    assert seen == [2, 2, 2]


def test_fast_column_kernels_run_on_the_stores_threads(monkeypatch):
    from maxmargin.solvers import columns as cs

    monkeypatch.setattr(cs, "_PARALLEL_WORK", 1)
    seen = []
    real = cs.numba_threads

    def spy(n):
        seen.append(n)
        return real(n)

    monkeypatch.setattr(cs, "numba_threads", spy)
    st = _store(np.random.default_rng(1), 23, 37, 4, 2, every_slot=False)
    st.gains(np.ones((37, 4)), fast=True)
    st.shifted_scores(np.zeros((37, 4)), np.ones(23))
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


def test_shard_threads_hand_out_shards_one_at_a_time_and_restore():
    import numba

    from maxmargin.inference._threads import shard_threads

    before = numba.get_parallel_chunksize()
    with shard_threads(2):
        inside = numba.get_parallel_chunksize()
        threads = numba.get_num_threads()
    assert numba.get_parallel_chunksize() == before
    if threads > 1:  # NUMBA_NUM_THREADS >= 2: dynamic hand-out of single shards
        assert inside == 1
    with shard_threads(1):  # one thread: nothing to schedule
        assert numba.get_parallel_chunksize() == before
