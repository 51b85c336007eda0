"""Multi-class boosting comparison (Lin et al. ACCV 2012, Figs. 1-2): test error vs iteration.

CW (MultiBoost-cw, FCD), CW-1 (stage-wise, C = 1e8), MultiBoost (shared, L-BFGS-B),
AdaBoost.ECC, AdaBoost.MH, AdaBoost.MO (time-capped as in the paper) and LightGBM with
stumps at the same stump budget (K trees of 2 leaves per round = K stumps, as CW).

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_multiclass_boosting.py [--data-dir ../shared/data]
        [--iters 200] [--max-time 120] [--datasets vowel usps pendigits mnist1000]
        [--methods CW ...] [--select-C] [--timing-repeats 5]
        [--out benchmarks/results/multiclass_boosting.json] [--plot docs/img/multiboost_error.png]
Merges its data sets into --out (each entry stamped with the run that wrote it) and draws
--plot.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small BLAS calls: threads only spin
os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # single-threaded, like LightGBM below

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from _common import DEFAULT_DATA, ROOT, load_multiclass, provenance, read_result, write_result
from maxmargin.learners.adaboost import AdaBoostECC, AdaBoostMH, AdaBoostMO
from maxmargin.learners.multiboost import MultiBoost, MultiBoostCW


def load_dataset(name: str, seed: int = 0, data_dir: Path = DEFAULT_DATA):
    """Train/test split used in the benchmarks (75/25 random split unless a test file exists)."""
    if name == "pendigits":
        Xtr, ytr, Xte, yte = load_multiclass(data_dir, name, split="official")
        return Xtr, ytr.astype(int), Xte, yte.astype(int)
    # usps: only the LIBSVM test file is available, split it; vowel: LIBSVM's vowel.scale
    # (ESL vowel.train scaled to [-1, 1])
    sets = {"usps": "usps", "vowel": "vowel_scale", "mnist1000": "mnist1000"}
    if name not in sets:
        raise ValueError(name)
    X, y = load_multiclass(data_dir, sets[name])
    Xtr, Xte, ytr, yte = train_test_split(
        X, y.astype(int), test_size=0.25, random_state=seed, stratify=y
    )
    return Xtr, ytr, Xte, yte


C_GRID = (1e2, 1e3, 1e4, 1e5)


def select_C(Xtr, ytr, T):
    """C for CW from C_GRID by the error on a held-out quarter of the training set."""
    Xa, Xb, ya, yb = train_test_split(Xtr, ytr, test_size=0.25, random_state=1, stratify=ytr)
    errs = {
        C: 1.0 - MultiBoostCW(C=C, max_iter=T, tol=0, random_state=0).fit(Xa, ya).score(Xb, yb)
        for C in C_GRID
    }
    return min(errs, key=errs.get), errs


def methods(T: int, max_time: float, C_cw: float = 1e4):
    return {
        "CW": lambda: MultiBoostCW(C=C_cw, tau_max=2, max_iter=T, tol=0, random_state=0),
        "CW-1": lambda: MultiBoostCW(C=1e8, tau_max=1, max_iter=T, tol=0),
        "CW hist_stump": lambda: MultiBoostCW(
            C=C_cw, tau_max=2, max_iter=T, tol=0, weak_learner="hist_stump", random_state=0
        ),
        "MultiBoost": lambda: MultiBoost(C=1e4, max_iter=T, tol=0, max_time=max_time),
        "AdaBoost.ECC": lambda: AdaBoostECC(max_iter=T, random_state=0),
        "AdaBoost.MH": lambda: AdaBoostMH(max_iter=T),
        "AdaBoost.MO": lambda: AdaBoostMO(max_iter=T, random_state=0, max_time=max_time),
    }


def run_lightgbm(Xtr, ytr, Xte, yte, T):
    import lightgbm as lgb

    classes = np.unique(ytr)  # encode labels 0..K-1 (the eval labels are not re-encoded)
    ytr, yte = np.searchsorted(classes, ytr), np.searchsorted(classes, yte)
    params = dict(
        objective="multiclass",
        n_estimators=T,
        num_leaves=2,
        learning_rate=0.3,
        n_jobs=1,
        verbose=-1,
    )  # min_child_samples=1 diverged on usps
    t0 = time.perf_counter()
    lgb.LGBMClassifier(**params).fit(Xtr, ytr)
    fit_s = time.perf_counter() - t0
    clf = lgb.LGBMClassifier(**params).fit(
        Xtr, ytr, eval_X=(Xte,), eval_y=(yte,), eval_metric="multi_error"
    )
    err = clf.evals_result_["valid_0"]["multi_error"]
    return {
        "fit_seconds": fit_s,
        "test_error": list(map(float, err)),
        "n_stumps": T * len(np.unique(ytr)),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--max-time", type=float, default=120.0)
    ap.add_argument("--datasets", nargs="+", default=["vowel", "usps", "pendigits", "mnist1000"])
    ap.add_argument("--methods", nargs="+", default=None)
    ap.add_argument(
        "--timing-repeats",
        type=int,
        default=0,
        help="also time CW, CW-1 and LightGBM fits best-of-n, interleaved",
    )
    ap.add_argument(
        "--select-C",
        action="store_true",
        help="pick CW's C in 1e2..1e5 on a hold-out quarter of the training set",
    )
    ap.add_argument("--out", default="benchmarks/results/multiclass_boosting.json")
    ap.add_argument("--plot", type=Path, default=ROOT / "docs/img/multiboost_error.png")
    args = ap.parse_args(argv)
    results = read_result(args.out)
    for ds in args.datasets:
        Xtr, ytr, Xte, yte = load_dataset(ds, data_dir=args.data_dir)
        K = len(np.unique(ytr))
        res = results.setdefault(
            ds, {"n_train": len(ytr), "n_test": len(yte), "K": K, "d": Xtr.shape[1]}
        )
        res["provenance"] = provenance()  # of the run that last wrote this entry
        C_cw = res.get("CW", {}).get("C") or 1e4
        if args.select_C and (not args.methods or "CW" in args.methods):
            C_cw, errs = select_C(Xtr, ytr, args.iters)
            res["CW_C_selection"] = {
                "chosen": C_cw,
                "holdout_error": {str(k): v for k, v in errs.items()},
            }
            print(f"{ds:10s} CW: C = {C_cw:g} (hold-out errors {errs})", flush=True)
        for name, make in methods(args.iters, args.max_time, C_cw).items():
            if args.methods and name not in args.methods:
                continue
            make().set_params(max_iter=2).fit(Xtr[:60], ytr[:60])  # numba cache load
            est = make()
            t0 = time.perf_counter()
            est.fit(Xtr, ytr, eval_set=(Xte, yte))
            fit_s = time.perf_counter() - t0
            h = est.history_
            res[name] = {
                "fit_seconds": fit_s,
                "n_iter": est.n_iter_,
                "C": getattr(est, "C", None),
                "test_error": [r["val_error"] for r in h],
                "train_error": [r["train_error"] for r in h],
                "objective": [r["objective"] for r in h],
                "seconds": [r["t_total"] for r in h],
                "master_seconds": float(sum(r.get("t_master", 0.0) for r in h)),
                "n_stumps": int(h[-1]["n_weak"]),
            }
            print(
                f"{ds:10s} {name:13s} iters {est.n_iter_:4d} stumps {h[-1]['n_weak']:5d} "
                f"fit {fit_s:7.2f}s  test error {h[-1]['val_error']:.4f}",
                flush=True,
            )
        if not args.methods or "LightGBM" in args.methods:
            res["LightGBM"] = run_lightgbm(Xtr, ytr, Xte, yte, args.iters)
            print(
                f"{ds:10s} LightGBM      iters {args.iters:4d} stumps "
                f"{res['LightGBM']['n_stumps']:5d} fit {res['LightGBM']['fit_seconds']:7.2f}s"
                f"  test error {res['LightGBM']['test_error'][-1]:.4f}",
                flush=True,
            )
        if args.timing_repeats:
            timing(res, Xtr, ytr, args, C_cw)
        write_result(args.out, results)
    plot(results, args.plot)


def timing(res, Xtr, ytr, args, C_cw):
    """Best-of-n fit seconds without eval_set, interleaved (the machine is shared)."""
    import lightgbm as lgb

    classes = np.unique(ytr)
    y_enc = np.searchsorted(classes, ytr)
    makers = {
        k: v
        for k, v in methods(args.iters, args.max_time, C_cw).items()
        if k in ("CW", "CW-1", "CW hist_stump")
    }
    makers["LightGBM"] = lambda: lgb.LGBMClassifier(
        objective="multiclass",
        n_estimators=args.iters,
        num_leaves=2,
        learning_rate=0.3,
        n_jobs=1,
        verbose=-1,
    )
    best = dict.fromkeys(makers, np.inf)
    for _ in range(args.timing_repeats):
        for name, make in makers.items():
            t0 = time.perf_counter()
            make().fit(Xtr, y_enc if name == "LightGBM" else ytr)
            best[name] = min(best[name], time.perf_counter() - t0)
    res["fit_seconds_best_of"] = {"repeats": args.timing_repeats, **best}
    print(
        "  best-of fit seconds: "
        + ", ".join(f"{k} {v:.3f}" for k, v in best.items())
        + f"; CW/LightGBM {best['CW'] / best['LightGBM']:.2f}x",
        flush=True,
    )


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    for ax, ds in zip(axes[0], names):
        for name, r in results[ds].items():
            if isinstance(r, dict) and "test_error" in r:
                err = r["test_error"]
                ax.plot(np.arange(1, len(err) + 1), err, label=f"{name} {err[-1]:.3f}")
        ax.set_title(ds)
        ax.set_xlabel("iteration")
        ax.set_ylabel("test error")
        ax.set_ylim(
            0,
            min(1.0, 2.5 * max(results[ds]["CW"]["test_error"][-1], 0.05))
            if "CW" in results[ds]
            else None,
        )
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
