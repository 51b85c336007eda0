"""StructBoost's per-step column products: the column kernels against the dense BLAS route.

``ColumnStore.gains(A, fast=True)`` (the gain of every column) and
``ColumnStore.shifted_scores(F, dw)`` (``F + H' dW``) take the compiled kernels over the
columns when the classifiers sit in few slots, dense single-precision BLAS products
otherwise (``ColumnStore._sparse_slots``).  This script times both routes side by side in
one process on random outputs of the sizes of the OCR chain (300 classifiers, 5700 weak
inputs, 27 slots, one slot each) and of a multi-class store (every classifier in all of
10 slots, 40000 inputs), and checks that the two routes agree to float32 rounding.

Usage (from the repository root; one thread, as in the 1-thread fits):
    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_column_kernels.py \\
        [--out benchmarks/results/column_kernels.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time

import numpy as np

from _common import write_result
from maxmargin.solvers.columns import ColumnStore
from maxmargin.weak import DecisionStump


def _store(rng, n_hyp, n_z, n_slots, every_slot):
    st = ColumnStore(DecisionStump.hypotheses_class, 3, n_z, n_slots, threads=1)
    st._grow(n_hyp)
    st._H[:n_hyp] = np.sign(rng.normal(size=(n_hyp, n_z)))
    st._H32[:n_hyp] = st._H[:n_hyp]
    st.n_hyp = n_hyp
    if every_slot:
        st.col_hyp = np.repeat(np.arange(n_hyp), n_slots)
        st.col_slot = np.tile(np.arange(n_slots), n_hyp)
    else:
        st.col_hyp = np.arange(n_hyp)
        st.col_slot = rng.integers(0, n_slots, n_hyp)
    return st


def _best_ms(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return 1e3 * min(ts), 1e3 * float(np.median(ts))


def case(name, n_hyp, n_z, n_slots, every_slot, repeat):
    rng = np.random.default_rng(0)
    st = _store(rng, n_hyp, n_z, n_slots, every_slot)
    F = rng.normal(size=(n_z, n_slots))
    A = rng.normal(size=(n_z, n_slots))
    dw = rng.normal(size=st.n_columns)
    H32 = st.H32

    def dense_gains():  # the dense route: H A over every slot, then the columns' entries
        return (H32 @ A.astype(np.float32))[st.col_hyp, st.col_slot].astype(np.float64)

    def dense_shift():
        return F + (H32.T @ st.weight_matrix(dw).astype(np.float32)).astype(np.float64)

    kernel_gains = (lambda: st.gains(A, fast=True)) if st._sparse_slots() else None
    kernel_shift = (lambda: st.shifted_scores(F, dw)) if st._sparse_slots() else None
    if kernel_gains is None:  # the store takes the dense route itself: time the kernels anyway
        from maxmargin.solvers import columns as cs

        def kernel_gains():
            AT = np.empty((n_slots, n_z), dtype=np.float32)
            out = np.empty(st.n_columns)
            cs._transpose(A, AT)
            cs._column_dots(H32, AT, st.col_hyp, st.col_slot, out)
            return out

        def kernel_shift():
            out = np.empty_like(F)
            cs._shifted_scores(F, H32, st.col_hyp, st.col_slot, dw, np.flatnonzero(dw), out)
            return out

    route = "kernels" if st._sparse_slots() else "dense"
    row = dict(case=name, n_hyp=n_hyp, n_z=n_z, n_slots=n_slots, n_columns=st.n_columns)
    row["store_route"] = route
    fns = {
        "gains_kernel": kernel_gains,
        "gains_dense": dense_gains,
        "shift_kernel": kernel_shift,
        "shift_dense": dense_shift,
    }
    for key, fn in fns.items():
        row[key + "_ms"] = _best_ms(fn, repeat)
    scale = float(np.abs(dense_gains()).max())
    row["gains_max_rel_diff"] = float(np.abs(kernel_gains() - dense_gains()).max() / scale)
    sd = dense_shift()
    row["shift_max_rel_diff"] = float(np.abs(kernel_shift() - sd).max() / np.abs(sd).max())
    print(row, flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--out", default="benchmarks/results/column_kernels.json")
    args = ap.parse_args()
    rows = [
        case("chain-like: one slot each", 300, 5700, 27, False, args.repeat),
        case("multi-class-like: one slot each", 300, 40000, 10, False, args.repeat // 4),
        case("multi-class: every slot", 100, 40000, 10, True, args.repeat // 4),
    ]
    payload = {"numba_threads": os.environ.get("NUMBA_NUM_THREADS"), "times": "best, median ms"}
    print(write_result(args.out, {**payload, "rows": rows}))


if __name__ == "__main__":
    main()
