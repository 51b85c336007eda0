"""Seconds per call of the chain forward-backward behind StructBoost's fast master on OCR.

The forward-backward (forward + backward + marginals) and the forward pass alone (the
line-search trial), both serial over all words, and ``batch_loss_augmented`` (Viterbi)
for scale.  Older commits (b53be6b among them) have the first two as public kernels,
``batch_smoothed_loss_augmented`` and (where it exists) ``batch_chain_forward``, so that
this script also times them (run it with ``PYTHONPATH`` at their ``src``); newer ones run
the same compiled code through the per-range parts of the sharded kernels
(``_chain_factors``, ``_forward_range``, ``_marginals_range`` over all words: the same
arithmetic in two to four compiled calls).  Inputs: the 626 OCR training words (4617
letters, K = 26), random scores ``N(0, s^2)`` at the master's base beta (``50 / max T``)
and at the continuation's sharpest (``4^5`` times that).  Minimum of
``--repeat`` calls after one warm-up call; one numba thread.

    flock /tmp/maxmargin-bench.lock env NUMBA_NUM_THREADS=1 \\
        python benchmarks/bench_chain_smoothing.py --out benchmarks/results/chain_smoothing.json
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time

import numpy as np

from _common import DEFAULT_DATA, write_result
from maxmargin.datasets.ocr import load_ocr
from maxmargin.inference import viterbi
from maxmargin.tasks.chain import stack_sequences

OCR = DEFAULT_DATA / "sequence_labeling/ocr_taskar/ocr_taskar.mat"


def best_of(fn, args, repeat):
    fn(*args)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t)
    return float(min(ts))


def smoothed_loss_augmented(U, P, offsets, ytrue, L, pairwise, beta, marg, pair, lse):
    """Forward + backward + marginals over all words (``lse = logz / beta``)."""
    if hasattr(viterbi, "batch_smoothed_loss_augmented"):
        return viterbi.batch_smoothed_loss_augmented(
            U, P, offsets, ytrue, L, pairwise, beta, marg, pair, lse
        )
    n = offsets.shape[0] - 1
    fa, logz = np.empty(U.shape), np.empty(n)
    chain_forward(U, P, offsets, ytrue, L, pairwise, beta, fa, logz)
    BP, _cmax, _Ec, rmax, Er = viterbi._chain_factors(P, pairwise, beta)
    pair[:] = 0.0
    viterbi._marginals_range(
        U, offsets, ytrue, L, pairwise, beta, fa, logz, marg, pair, 0, n, BP, rmax, Er
    )
    lse[:] = logz / beta
    return None


def chain_forward(U, P, offsets, ytrue, L, pairwise, beta, fa, logz):
    """The forward pass over all words (``fa``, ``logz``)."""
    if hasattr(viterbi, "batch_chain_forward"):
        return viterbi.batch_chain_forward(U, P, offsets, ytrue, L, pairwise, beta, fa, logz)
    BP, cmax, Ec, _rmax, _Er = viterbi._chain_factors(P, pairwise, beta)
    n = offsets.shape[0] - 1
    viterbi._forward_range(U, offsets, ytrue, L, beta, fa, logz, 0, n, BP, cmax, Ec)
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mat", default=str(OCR))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out", default="benchmarks/results/chain_smoothing.json")
    args = ap.parse_args(argv)
    X, y = load_ocr(args.mat, "train")
    _, offsets = stack_sequences(X)
    ytrue = np.unique(np.concatenate(y), return_inverse=True)[1].astype(np.int64)
    N, K, m = int(offsets[-1]), 26, len(X)
    L = 1.0 - np.eye(K)
    base = 50.0 / float(np.diff(offsets).max())
    rng = np.random.default_rng(0)
    rows = []
    for scale in (0.5, 3.0):
        U = rng.normal(size=(N, K)) * scale
        P = rng.normal(size=(K, K)) * scale
        for name, beta in (("base", base), ("sharpest (x4^5)", base * 4.0**5)):
            marg, pair, lse = np.empty((N, K)), np.zeros((K, K)), np.empty(m)
            row = {"score_scale": scale, "beta": name, "beta_value": beta}
            row["forward_backward"] = best_of(
                smoothed_loss_augmented,
                (U, P, offsets, ytrue, L, True, beta, marg, pair, lse),
                args.repeat,
            )
            if hasattr(viterbi, "batch_chain_forward") or hasattr(viterbi, "_forward_range"):
                fa, lz = np.empty((N, K)), np.empty(m)
                row["forward_only"] = best_of(
                    chain_forward,
                    (U, P, offsets, ytrue, L, True, beta, fa, lz),
                    args.repeat,
                )
            lab, lo, ma = np.empty(N, dtype=np.int64), np.empty(m), np.empty(m)
            row["viterbi_loss_augmented"] = best_of(
                viterbi.batch_loss_augmented,
                (U, P, offsets, ytrue, L, True, False, lab, lo, ma),
                args.repeat,
            )
            rows.append(row)
            print(row, flush=True)
    print(
        "wrote",
        write_result(
            args.out,
            {
                "data": "OCR 626 training words",
                "n_letters": N,
                "viterbi_module": viterbi.__file__,
                "loadavg": os.getloadavg(),
                "rows": rows,
            },
        ),
    )


if __name__ == "__main__":
    main()
