"""Box-task learners without drift: train on ground-truth frames, predict the next ones.

Separates the quality of the learned box scorer from the online loop (where every
predicted box becomes a training label): StructBoost (stumps) and the linear 1-slack SSVM
are trained on the candidate sets of frames ``[start, start + n_train)`` labelled with the
ground truth, and each of the following ``n_test`` frames is predicted from the
ground-truth box of the frame before it (2000 grid candidates within 30 px).

Usage: python benchmarks/bench_tracking_offline.py [--sequence Coke] [--C 3.16 31.6]
Writes benchmarks/results/tracking_offline.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import time
import warnings

import numpy as np

from _common import DEFAULT_DATA, write_result
from maxmargin.apps.tracking import PatchFeatures, load_sequence, to_grey
from maxmargin.learners.structboost import StructBoost
from maxmargin.solvers.ssvm import solve_ssvm
from maxmargin.tasks.boxes import BoxCandidates, BoxTask, box_overlap, sample_boxes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequence", default="Coke")
    ap.add_argument("--data", default=str(DEFAULT_DATA / "tracking"))
    ap.add_argument("--n-train", type=int, default=60)
    ap.add_argument("--n-test", type=int, default=30)
    ap.add_argument("--C", type=float, nargs="+", default=[10**0.5, 10**1.5])
    ap.add_argument("--ssvm-C", type=float, nargs="+", default=[1.0, 100.0])
    ap.add_argument("--out", default="benchmarks/results/tracking_offline.json")
    args = ap.parse_args()
    n = args.n_train + args.n_test
    seq = load_sequence(os.path.join(args.data, args.sequence), max_frames=n)
    pf = PatchFeatures("raw+hog")
    rng = np.random.default_rng(0)
    frames, data = [], []
    for k in range(n):  # one step per frame
        f = to_grey(seq.frame(k))
        frames.append(f)
        c = sample_boxes(seq.boxes[k], 200, 60.0, f.shape, method="polar", rng=rng)
        data.append(BoxCandidates(c, pf(f, c)))
    y = np.zeros(args.n_train, dtype=np.int64)
    tests = []
    for k in range(args.n_train, n):
        c = sample_boxes(seq.boxes[k - 1], 2000, 30.0, frames[k].shape)
        tests.append((c, pf(frames[k], c), seq.boxes[k]))

    def evaluate(score):
        return float(np.mean([box_overlap(c[np.argmax(score(Z))], t)[0] for c, Z, t in tests]))

    rows = []
    for C in args.C:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = StructBoost(
                task=BoxTask(), C=C, weak_learner="hist_stump", max_iter=300, random_state=0
            ).fit(data[: args.n_train], y)
        w, H = m.slot_weights_[:, 0], m.hypotheses_
        rows.append(
            {
                "learner": "structboost",
                "C": C,
                "overlap": evaluate(lambda Z, w=w, H=H: w @ H.evaluate(Z)),
                "n_weak": len(H),
                "train_hinge": m.history_[-1]["xi"],
                "seconds": time.perf_counter() - t0,
            }
        )
        print(rows[-1], flush=True)
    for C in args.ssvm_C:
        t0 = time.perf_counter()
        model = BoxTask().bind(data[: args.n_train], y).linear_model()
        r = solve_ssvm(model, C, "1-slack", tol=1e-3, max_iter=300)
        rows.append(
            {
                "learner": "ssvm",
                "C": C,
                "overlap": evaluate(lambda Z, w=r.w: Z @ w),
                "converged": bool(r.converged),
                "seconds": time.perf_counter() - t0,
            }
        )
        print(rows[-1], flush=True)
    path = write_result(
        args.out,
        {"sequence": args.sequence, "n_train": args.n_train, "n_test": args.n_test, "rows": rows},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
