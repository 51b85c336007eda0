"""How many numba threads an inference kernel may use (``n_jobs`` semantics)."""

from __future__ import annotations

from contextlib import contextmanager

import numba


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
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), int(numba.config.NUMBA_NUM_THREADS))))
    try:
        yield
    finally:
        numba.set_num_threads(old)
