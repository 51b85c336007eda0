"""Hierarchical classification: a Table 3 analogue (StructBoost, TPAMI 2014, Sec. 4.3).

SUN is not available, so UCI/StatLog data with the taxonomies of benchmarks/taxonomies/.
Per data set and repeat: a stratified 50/25/25 train/validation/test split; every method
picks its hyper-parameter on the validation part by the loss it is trained for (tree
loss for the tree-loss methods, 0/1 error for the flat ones), and is scored on the test
part by the 0/1 error and the mean tree loss (height of the lowest common ancestor).

Methods (decision stumps everywhere, equal stump budget T = --max-iter):
  StructBoost-tree   HierarchyTask (ancestor coding, height loss), C on the grid
  StructBoost-aug    LabelAugmentedTask (x'_y = x (x) Gamma(y), single w), C on the grid
  StructBoost-flat   MultiClassTask (one-hot, 0/1 loss), C on the grid
  SSVM-tree / -flat  linear StructSVM (one_slack) with HierarchyTask / MultiClassTask,
                     a constant feature appended as the bias, C on --ssvm-grid
  AdaBoost.MH/.ECC   T rounds of one stump each (no hyper-parameter)
  LightGBM           stumps (num_leaves=2), T // K rounds of K stumps = T stumps;
                     learning rate on {0.1, 0.3, 1.0}

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_hierarchy.py [--data-dir ../shared/data]
        [--datasets glass ...] [--repeats 5] [--max-iter 100] [--max-total N]
        [--methods ...] [--tag SUFFIX] [--out benchmarks/results/hierarchy.json]
Results of several invocations (one per data set) are merged into the output JSON, each
data-set entry stamped with the run that wrote it.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from _common import (
    DEFAULT_DATA,
    ROOT,
    load_multiclass,
    provenance,
    read_result,
    warm_up,
    write_result,
)
from maxmargin.learners.structboost import StructBoost
from maxmargin.tasks.classification import MultiClassTask
from maxmargin.tasks.hierarchy import HierarchyTask, LabelAugmentedTask
from maxmargin.tasks.taxonomy import Taxonomy

DATA = {  # name -> (multi-class set of _common, taxonomy file); train and test files pooled
    "glass": ("glass", "glass.json"),
    "glass_float": ("glass", "glass_float.json"),
    "satimage": ("satimage", "satimage.json"),
    "segment": ("segment", "segment.json"),
}


def load(data_dir: Path, name: str, max_total: int | None, seed: int = 0):
    data, tax_file = DATA[name]
    X, y = load_multiclass(data_dir, data)
    y = y.astype(np.int64)
    if max_total is not None and len(y) > max_total:  # stratified subsample, fixed seed
        X, _, y, _ = train_test_split(X, y, train_size=max_total, stratify=y, random_state=seed)
    return X, y, Taxonomy.from_json(ROOT / "benchmarks" / "taxonomies" / tax_file)


def optional_learners():
    """The SSVM and AdaBoost baselines, if those modules exist in this checkout."""
    found = {}
    try:
        from maxmargin.learners.ssvm import StructSVM

        found["StructSVM"] = StructSVM
    except ImportError:
        pass
    try:
        from maxmargin.learners.adaboost import AdaBoostECC, AdaBoostMH

        found["AdaBoostMH"], found["AdaBoostECC"] = AdaBoostMH, AdaBoostECC
    except ImportError:
        pass
    return found


def structboost_predict(est, X):
    """Works with and without the prediction-inputs hook of the StructBoost patch."""
    task = est.task_
    Z = task.prediction_inputs(X) if hasattr(task, "prediction_inputs") else X
    if len(est.hypotheses_) == 0:
        F = np.zeros((Z.shape[0], task.n_slots))
    else:
        F = est.hypotheses_.evaluate(Z).T @ est.slot_weights_
    return task.decode(task.predict_codes(F))


def run_method(name, make, grid, select_by, Xtr, ytr, Xva, yva, Xte, yte, tax, predict):
    """Fit on the grid, keep the best on validation (ties: first), score on test."""
    best = None
    warm_up(make(grid[0]), Xtr, ytr)  # compiled kernels loaded before anything is timed
    t0 = time.perf_counter()
    for g in grid:
        est = make(g).fit(Xtr, ytr)
        pv = predict(est, Xva)
        val = {
            "zero_one": float(np.mean(pv != yva)),
            "tree": float(tax.loss(tax.index(yva), tax.index(pv), "height").mean()),
        }
        if best is None or val[select_by] < best[0][select_by]:
            best = (val, g, est)
    val, g, est = best
    pt = predict(est, Xte)
    it, ip = tax.index(yte), tax.index(pt)
    out = {
        "param": g,
        "val": val,
        "zero_one": float(np.mean(pt != yte)),
        "tree": float(tax.loss(it, ip, "height").mean()),
        "half_path": float(tax.loss(it, ip, "half_path").mean()),
        "seconds": time.perf_counter() - t0,
    }
    print(
        f"  {name:18s} param={g:<8g} 0/1={out['zero_one']:.3f} tree={out['tree']:.3f} "
        f"({out['seconds']:.0f}s)",
        flush=True,
    )
    return out


def methods(tax, K, T, args, extra):
    """name -> (factory(param), grid, selection loss, predict)."""
    sb = dict(max_iter=T, formulation=args.formulation, random_state=0)
    sbp = structboost_predict
    out = {
        "StructBoost-tree": (
            lambda C: StructBoost(task=HierarchyTask(tax), C=C, **sb),
            args.grid,
            "tree",
            sbp,
        ),
        "StructBoost-aug": (
            lambda C: StructBoost(task=LabelAugmentedTask(tax), C=C, **sb),
            args.grid,
            "tree",
            sbp,
        ),
        "StructBoost-flat": (
            lambda C: StructBoost(task=MultiClassTask(), C=C, **sb),
            args.grid,
            "zero_one",
            sbp,
        ),
    }
    if "StructSVM" in extra:
        SVM = extra["StructSVM"]

        def ssvm(task):
            return lambda C: SVM(task=task, C=C, solver="1-slack", max_iter=1000)

        def plain(est, X):  # X already carries the constant (bias) feature
            return est.predict(X)

        out["SSVM-tree"] = (ssvm(HierarchyTask(tax)), args.ssvm_grid, "tree", plain)
        out["SSVM-flat"] = (ssvm(MultiClassTask()), args.ssvm_grid, "zero_one", plain)
    if "AdaBoostMH" in extra:
        for nm in ("AdaBoostMH", "AdaBoostECC"):
            cls = extra[nm]
            out[nm] = (
                lambda _, cls=cls: cls(max_iter=T, random_state=0),
                [0],
                "zero_one",
                lambda est, X: est.predict(X),
            )
    import lightgbm as lgb

    def lgbm(lr):
        return lgb.LGBMClassifier(
            num_leaves=2,
            max_depth=1,
            n_estimators=max(1, T // K),
            learning_rate=lr,
            min_child_samples=5,
            verbose=-1,
            random_state=0,
            n_jobs=1,
        )

    out["LightGBM"] = (lgbm, [0.1, 0.3, 1.0], "zero_one", lambda est, X: est.predict(X))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument(
        "--datasets", nargs="+", default=["glass", "satimage", "segment"], choices=sorted(DATA)
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-iter", type=int, default=100, help="stump budget T")
    ap.add_argument("--grid", type=float, nargs="+", default=[10.0, 100.0, 1000.0])
    ap.add_argument("--ssvm-grid", type=float, nargs="+", default=[10.0, 100.0, 1000.0, 1e4])
    ap.add_argument("--formulation", default="m-slack", choices=["1-slack", "m-slack"])
    ap.add_argument(
        "--max-total",
        type=int,
        default=None,
        help="stratified subsample of each data set before splitting",
    )
    ap.add_argument("--methods", nargs="+", default=None, help="subset of method names")
    ap.add_argument("--tag", default="", help="suffix of the result keys (e.g. '_n3000')")
    ap.add_argument("--out", default="benchmarks/results/hierarchy.json")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
    extra = optional_learners()
    results = read_result(args.out) or {"datasets": {}}
    for name in args.datasets:
        X, y, tax = load(args.data_dir, name, args.max_total)
        K = len(np.unique(y))
        meths = methods(tax, K, args.max_iter, args, extra)
        if args.methods:
            meths = {k: v for k, v in meths.items() if k in args.methods}
        runs = {m: [] for m in meths}
        print(f"{name}: n={len(y)} d={X.shape[1]} K={K} {tax!r}", flush=True)
        for r in range(args.repeats):
            Xtr, Xrest, ytr, yrest = train_test_split(
                X, y, train_size=0.5, stratify=y, random_state=r
            )
            Xva, Xte, yva, yte = train_test_split(
                Xrest, yrest, train_size=0.5, stratify=yrest, random_state=r
            )
            print(f" repeat {r}: train {len(ytr)} val {len(yva)} test {len(yte)}", flush=True)
            for m, (make, grid, sel, predict) in meths.items():
                data = (Xtr, ytr, Xva, yva, Xte, yte)
                if m.startswith("SSVM"):  # constant feature = bias of the linear model
                    data = tuple(
                        np.hstack([a, np.ones((len(a), 1))]) if i % 2 == 0 else a
                        for i, a in enumerate(data)
                    )
                runs[m].append(run_method(m, make, grid, sel, *data, tax, predict))
        summary = {
            m: {
                k: [float(np.mean([r[k] for r in v])), float(np.std([r[k] for r in v]))]
                for k in ("zero_one", "tree", "half_path", "seconds")
            }
            for m, v in runs.items()
        }
        results["datasets"][name + args.tag] = {
            "provenance": provenance(),
            "n": len(y),
            "n_features": int(X.shape[1]),
            "n_classes": K,
            "taxonomy": DATA[name][1],
            "repeats": args.repeats,
            "max_iter": args.max_iter,
            "grid": args.grid,
            "ssvm_grid": args.ssvm_grid,
            "formulation": args.formulation,
            "max_total": args.max_total,
            "summary": summary,
            "runs": runs,
            "missing": [m for m in ("SSVM", "AdaBoost") if not any(k.startswith(m) for k in meths)],
        }
        print(f"{name} summary (mean over {args.repeats} repeats):")
        for m, s in summary.items():
            print(
                f"  {m:18s} 0/1 {s['zero_one'][0]:.3f}±{s['zero_one'][1]:.3f}  "
                f"tree {s['tree'][0]:.3f}±{s['tree'][1]:.3f}"
            )
        write_result(args.out, results)


if __name__ == "__main__":
    main()
