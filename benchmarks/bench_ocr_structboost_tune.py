"""StructBoost chain vs SSVM chain on OCR with C (and the weak learner) chosen on a
validation split of the training words (issue 17, "StructBoost chain at least as
accurate as the SSVM chain").

Data: OCR (Taskar et al. 2003), the standard fold: 626 training words, 6251 test words.
The training words are split once (fixed permutation, ``--seed``) into a fit part and a
validation part (``--val-frac``); the test words are used only by ``--stage test``.

* ``--stage val``: every (learner, weak learner, C) on the grid is fitted on the fit part
  and scored (letter error) on the validation part;
* ``--stage test``: the given settings are refitted on all 626 training words and
  scored on the 6251 test words.

Both learners are tuned the same way (the SSVM's C too: n-slack, tol 1e-3, margin
rescaling, Hamming loss).  Each invocation merges its rows into ``--out`` (one row per
setting and stage, a later run of the same setting replaces the earlier row), each row
with the command that produced it.  Timing: run under ``flock /tmp/maxmargin-bench.lock``
on the shared 2-core machine; each row records the load average.

Usage (from the repository root):
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/bench_ocr_structboost_tune.py \\
        --stage val --learner structboost --weak stump --C 62.6 200 600 --max-time 240
    ... --stage test --learner structboost --weak stump --C 200 --max-time 600
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import shlex
import sys
import time
import warnings

import numpy as np

from _common import DEFAULT_DATA, provenance, read_result, write_result
from maxmargin import StructBoost, StructSVM
from maxmargin.datasets.ocr import load_ocr
from maxmargin.tasks.chain import ChainTask
from maxmargin.weak import DecisionTree

OCR = DEFAULT_DATA / "sequence_labeling/ocr_taskar/ocr_taskar.mat"


def split_words(n: int, val_frac: float, seed: int):
    """Fixed (fit, validation) index split of n training words."""
    perm = np.random.default_rng(seed).permutation(n)
    n_val = round(val_frac * n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def weak_learner(name: str):
    if name.startswith("tree"):  # "tree3": depth 3
        depth = int(name[4:] or 2)
        return DecisionTree(max_depth=depth)
    return name


def fit_one(learner, weak, C, max_time, max_iter, X, y, Xe, ye):
    if learner == "ssvm":
        est = StructSVM(task=ChainTask(), C=C, solver="n-slack", tol=1e-3, random_state=0)
    else:
        est = StructBoost(
            task=ChainTask(),
            C=C,
            weak_learner=weak_learner(weak),
            max_iter=max_iter,
            max_time=max_time,
            random_state=0,
        )
    before = os.getloadavg()
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    t = time.perf_counter() - t
    err = est.task_.hamming(ye, est.predict(Xe))
    row = {
        "learner": learner,
        "weak": weak if learner == "structboost" else None,
        "C": C,
        "max_time": max_time if learner == "structboost" else None,
        "fit_seconds": t,
        "letter_error": err,
        "iterations": est.n_iter_,
        "loadavg_before": before,
        "loadavg_after": os.getloadavg(),
    }
    if learner == "structboost":
        last = est.history_[-1]
        row.update(
            gap=last["gap"],
            certified=bool(last["certified"]),
            converged=bool(est.converged_),
            n_weak=len(est.hypotheses_),
            objective=last["objective"],
            t_oracle=float(sum(r["t_oracle"] for r in est.history_)),
        )
    else:
        row.update(gap=est.history_[-1].get("gap") if est.history_ else None)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mat", default=str(OCR))
    ap.add_argument("--stage", choices=["val", "test"], required=True)
    ap.add_argument("--learner", choices=["structboost", "ssvm"], default="structboost")
    ap.add_argument("--weak", nargs="+", default=["stump"])
    ap.add_argument("--C", nargs="+", type=float, default=[62.6])
    ap.add_argument("--max-time", type=float, default=240.0)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--val-frac", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/ocr_structboost_tune.json")
    args = ap.parse_args(argv)

    X, y = load_ocr(args.mat, "train")
    fit_idx, val_idx = split_words(len(X), args.val_frac, args.seed)
    if args.stage == "val":
        Xf, yf = [X[i] for i in fit_idx], [y[i] for i in fit_idx]
        Xe, ye = [X[i] for i in val_idx], [y[i] for i in val_idx]
    else:
        Xf, yf = X, y
        Xe, ye = load_ocr(args.mat, "test")
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    commit = provenance().get("commit")
    res = read_result(args.out)
    rows = res.get("rows", [])
    weaks = args.weak if args.learner == "structboost" else [None]
    for weak in weaks:
        for C in args.C:
            row = fit_one(args.learner, weak, C, args.max_time, args.max_iter, Xf, yf, Xe, ye)
            row.update(
                stage=args.stage,
                n_fit_words=len(Xf),
                n_eval_words=len(Xe),
                command=command,
                commit=commit,
            )
            print(row, flush=True)
            key = ("stage", "learner", "weak", "C", "max_time")
            rows = [r for r in rows if any(r.get(k) != row[k] for k in key)] + [row]
    res.update(
        data="OCR (Taskar et al. 2003) standard fold, 626 training / 6251 test words",
        split={"val_frac": args.val_frac, "seed": args.seed, "n_fit": len(fit_idx),
               "n_val": len(val_idx)},
        rows=rows,
    )  # fmt: skip
    print("wrote", write_result(args.out, res))


if __name__ == "__main__":
    main()
