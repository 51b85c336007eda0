"""Threads for the kernels and products of a fit (``n_jobs`` semantics).

``resolve_threads`` / ``numba_threads``: how many numba threads an inference kernel may
use.  ``product_pieces`` / ``run_pieces`` / :class:`RowPieces`: large NumPy / SciPy products
cut into fixed pieces of rows (fixed by the sizes, never by the thread count), run in
order or on a pool of Python threads (BLAS and SciPy's sparse kernels release the GIL),
so that the result is the same, bit for bit, for any thread count.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numba
import numpy as np
from threadpoolctl import ThreadpoolController

_THREADPOOLS: ThreadpoolController | None = None


def blas_one_thread():
    """``threadpool_limits(1, "blas")`` with the loaded libraries scanned once per
    process (the scan costs milliseconds, which an online tracker re-training every
    other frame would pay each time).  The fits' products are small and many: a
    multi-threaded BLAS spinning next to numba's pool, or next to other processes on a
    busy machine, made them 10-50 times slower (a 1,257 x 65 by 65 x 10 product: 16 ms
    instead of 0.3 ms on two busy cores)."""
    global _THREADPOOLS
    if _THREADPOOLS is None:
        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="blas")


def resolve_threads(n_jobs) -> int:
    """``n_jobs`` as a numba thread count: None -> 1, -1 -> every numba thread, k -> k
    (at most ``NUMBA_NUM_THREADS``, the size of numba's pool)."""
    cap = int(numba.config.NUMBA_NUM_THREADS)
    if n_jobs is None:
        return 1
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        return max(1, cap + 1 + n_jobs)
    return max(1, min(n_jobs, cap))


@contextmanager
def numba_threads(n: int):
    """Run the numba kernels called inside with ``n`` threads (restored after)."""
    n = max(1, min(int(n), int(numba.config.NUMBA_NUM_THREADS)))
    old = numba.get_num_threads()
    if old == n:  # nothing to change (the per-step kernels of a fit call this often)
        yield
        return
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)


@contextmanager
def shard_threads(n: int):
    """:func:`numba_threads` for a kernel whose ``prange`` runs over fixed shards of
    uneven, large cost (images for the CRF's graph cuts, the SSVM oracle's shards: a
    millisecond or more each): the shards are handed out one at a time to the next free
    thread (``numba.parallel_chunksize(1)``) instead of in one contiguous block per
    thread.  Not for short shards: on the chain oracle's 64 shards of about 0.1 ms each
    the hand-out made StructBoost's OCR fit on 2 threads twice as slow
    (benchmarks/NOTEBOOK.md).  Each shard still writes only its own outputs and the shards'
    sums are added in shard order afterwards, so the answers do not depend on who ran
    which shard."""
    with numba_threads(n):
        if numba.get_num_threads() == 1:
            yield
            return
        old = numba.get_parallel_chunksize()
        numba.set_parallel_chunksize(1)
        try:
            yield
        finally:
            numba.set_parallel_chunksize(old)


#: fixed number of pieces a large product is cut into (independent of the threads)
PRODUCT_PIECES = 4
#: entries of ``H`` from which a product is cut into pieces
PRODUCT_MIN_WORK = 1 << 19

_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def product_pieces(n_rows: int, n_entries: int) -> np.ndarray:
    """Bounds of the fixed row pieces of a product with ``n_rows`` result rows over a
    matrix of ``n_entries`` entries (one piece below ``PRODUCT_MIN_WORK``)."""
    k = PRODUCT_PIECES if n_entries >= PRODUCT_MIN_WORK and n_rows >= PRODUCT_PIECES else 1
    return np.linspace(0, n_rows, k + 1).round().astype(np.intp)


def _pool(threads: int) -> ThreadPoolExecutor:
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = ThreadPoolExecutor(threads, "maxmargin-products")
        return pool


def run_pieces(fn, bounds: np.ndarray, threads: int) -> None:
    """``fn(a, b)`` for every piece ``[a, b)``: in order, or on ``threads`` threads."""
    pieces = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
    if threads <= 1 or len(pieces) == 1:
        for a, b in pieces:
            fn(a, b)
        return
    pool = _pool(threads)
    for f in [pool.submit(fn, a, b) for a, b in pieces]:
        f.result()


class RowPieces:
    """``X @ w`` and ``X.T @ v`` over fixed row pieces of ``X`` (dense or CSR), on
    ``threads`` threads; the pieces (views, made once) depend on the shape only, and the
    pieces' partial ``X.T @ v`` are added in piece order, so any ``threads`` gives the
    same numbers.  Below ``PRODUCT_MIN_WORK`` entries there is one piece: the plain
    products."""

    def __init__(self, X, threads: int = 1) -> None:
        import scipy.sparse as sp

        self.X = X
        self.threads = max(1, int(threads))
        n = X.shape[0]
        size = X.nnz if sp.issparse(X) else X.size
        self.bounds = product_pieces(n, size)
        if sp.issparse(X) and len(self.bounds) > 2:
            X = sp.csr_matrix(X)
            ip, ind, dat = X.indptr, X.indices, X.data
            self.pieces = []
            for a, b in zip(self.bounds[:-1], self.bounds[1:]):
                q0, q1 = ip[a], ip[b]
                self.pieces.append(
                    sp.csr_matrix(
                        (dat[q0:q1], ind[q0:q1], ip[a : b + 1] - q0),
                        shape=(b - a, X.shape[1]),
                        copy=False,
                    )
                )
        else:
            self.pieces = [X[a:b] for a, b in zip(self.bounds[:-1], self.bounds[1:])]

    def _each(self, piece) -> None:
        """``piece(k)`` for every piece number k, in order or on the threads."""
        run_pieces(lambda k, _next: piece(k), np.arange(len(self.pieces) + 1), self.threads)

    def matvec(self, w: np.ndarray) -> np.ndarray:
        """``X @ w`` as a 1-d float64 array."""
        if len(self.pieces) == 1:
            return np.asarray(self.X @ w, dtype=np.float64).ravel()
        out = np.empty(self.X.shape[0])

        def piece(k):
            a, b = self.bounds[k], self.bounds[k + 1]
            out[a:b] = np.asarray(self.pieces[k] @ w).ravel()

        self._each(piece)
        return out

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """``X.T @ v`` as a 1-d float64 array (partial sums added in piece order)."""
        if len(self.pieces) == 1:
            return np.asarray(self.X.T @ v, dtype=np.float64).ravel()
        parts = [None] * len(self.pieces)

        def piece(k):
            a, b = self.bounds[k], self.bounds[k + 1]
            parts[k] = np.asarray(self.pieces[k].T @ v[a:b], dtype=np.float64).ravel()

        self._each(piece)
        total = parts[0].copy()
        for p in parts[1:]:
            total += p
        return total
