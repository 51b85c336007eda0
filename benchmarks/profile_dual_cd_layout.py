"""Dual CD's data layout (issue 14): dense rows against CSR on the binary problems of
bench_svm_solvers.py, and a CSR dot product compiled with and without fastmath.

Sets ``maxmargin.solvers.svm.DENSE_FILL`` to 0.01 (dense rows) and 2.0 (CSR) around the
same ``fit_dual_cd`` calls (hinge, C=1, tol 1e-3, seed 0) and reports the fastest CPU
time of REPEATS runs; then times one pass of a numba CSR dot-product loop over a random
2000 x 181 matrix of 26 % fill (dna's shape and fill) compiled both ways.  BLAS limited to
one thread.

    NUMBA_NUM_THREADS=1 PYTHONPATH=src python benchmarks/profile_dual_cd_layout.py
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from numba import njit
from threadpoolctl import threadpool_limits

import maxmargin.solvers.svm as S
from _common import DEFAULT_DATA
from bench_svm_solvers import datasets

REPEATS = 7


def _csr_pass(indptr, indices, data, w, n):
    tot = 0.0
    for i in range(n):
        g = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            g += w[indices[k]] * data[k]
        tot += g
    return tot


csr_plain = njit(_csr_pass)
csr_fastmath = njit(fastmath=True)(_csr_pass)


def fastest(fn):
    best = np.inf
    for _ in range(REPEATS):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main():
    threadpool_limits(limits=1)
    rng = np.random.default_rng(0)
    for X in (rng.normal(size=(40, 3)), sp.random(40, 10, density=0.1, format="csr")):
        S.fit_dual_cd(X, np.where(np.arange(40) % 2, 1.0, -1.0), 1.0, max_iter=3)
    for name, X, y in datasets(DEFAULT_DATA, ["dna", "mnist1000"]):
        Xa = np.hstack([X, np.ones((X.shape[0], 1))])
        s = np.where(y == 1, 1.0, -1.0)
        fill = np.count_nonzero(Xa) / Xa.size
        times = {}
        for layout, value in (("dense", 0.01), ("csr", 2.0)):
            S.DENSE_FILL = value
            times[layout] = fastest(lambda X=Xa, s=s: S.fit_dual_cd(X, s, 1.0, tol=1e-3, rng=0))
        print(
            f"{name} ({fill:.0%} non-zero): dense rows {times['dense'] * 1e3:.1f} ms CPU, "
            f"CSR {times['csr'] * 1e3:.1f} ms CPU"
        )
    M = sp.random(2000, 181, density=0.26, format="csr", random_state=0)
    M.sort_indices()
    w = rng.random(181)
    for name, f in (("plain", csr_plain), ("fastmath", csr_fastmath)):
        f(M.indptr, M.indices, M.data, w, 2000)
        t = fastest(lambda f=f: [f(M.indptr, M.indices, M.data, w, 2000) for _ in range(100)])
        print(f"CSR dot-product pass, {name}: {t / 100 * 1e6:.0f} us")


if __name__ == "__main__":
    main()
