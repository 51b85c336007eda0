"""Full fit at equal stump budget: StructBoost (1-slack / m-slack) vs LightGBM stumps.

StructBoost multi-class with shared stumps adds one stump (with one weight per class)
per column-generation iteration; LightGBM's multi-class boosting with ``max_depth=1``
adds one stump per class per round.  At equal budget LightGBM gets
``ceil(n_stumps / n_classes)`` rounds for the ``n_stumps`` distinct stumps StructBoost
used.  Reported: fit seconds, their ratio, test error, and StructBoost's time split into
weak-learner search, master LP and oracle (sums of history_ t_weak / t_master / t_oracle).

Data: satimage and pendigits use their official train/test files; usps is only
available as its 2007-sample test file here, so it is split 70/30 (stratified, seed 0).

Usage: python benchmarks/bench_fit_vs_lightgbm.py [--max-iter 100] [--data-dir ...]
Writes benchmarks/results/fit_vs_lightgbm.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import train_test_split

from maxmargin import StructBoostClassifier

ROOT = Path(__file__).resolve().parents[1]


def load(data_dir: Path, name: str):
    mc = data_dir / "multiclass"
    if name == "satimage":
        Xtr, ytr = load_svmlight_file(str(mc / "satimage/satimage.scale"), n_features=36)
        Xte, yte = load_svmlight_file(str(mc / "satimage/satimage.scale.t"), n_features=36)
    elif name == "pendigits":
        Xtr, ytr = load_svmlight_file(str(mc / "pendigits/pendigits.scale"), n_features=16)
        Xte, yte = load_svmlight_file(str(mc / "pendigits/pendigits.scale.t"), n_features=16)
    else:
        X, y = load_svmlight_file(str(mc / "usps/usps.t.bz2"), n_features=256)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    return Xtr.toarray(), ytr, Xte.toarray(), yte


def run_structboost(Xtr, ytr, Xte, yte, weak, formulation, max_iter, C, max_time):
    clf = StructBoostClassifier(
        C=C,
        max_iter=max_iter,
        weak_learner=weak,
        formulation=formulation,
        random_state=0,
        max_time=max_time,
    )
    t = time.perf_counter()
    clf.fit(Xtr, ytr)
    fit_s = time.perf_counter() - t
    h = clf.history_
    return {
        "fit_s": fit_s,
        "test_error": float(np.mean(clf.predict(Xte) != yte)),
        "n_iter": clf.n_iter_,
        "n_stumps": len(clf.hypotheses_),
        "t_weak": float(sum(r["t_weak"] for r in h)),
        "t_master": float(sum(r["t_master"] for r in h)),
        "t_oracle": float(sum(r["t_oracle"] for r in h)),
    }


def run_lightgbm(Xtr, ytr, Xte, yte, n_stumps, n_classes):
    rounds = max(1, int(np.ceil(n_stumps / n_classes)))
    clf = lgb.LGBMClassifier(
        n_estimators=rounds,
        max_depth=1,
        num_leaves=2,
        learning_rate=0.3,
        n_jobs=2,
        verbose=-1,
        random_state=0,
    )
    t = time.perf_counter()
    clf.fit(Xtr, ytr)
    fit_s = time.perf_counter() - t
    return {
        "fit_s": fit_s,
        "test_error": float(np.mean(clf.predict(Xte) != yte)),
        "rounds": rounds,
        "n_stumps": rounds * n_classes,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--C", type=float, default=100.0)
    ap.add_argument("--max-time", type=float, default=150.0)
    ap.add_argument("--datasets", nargs="+", default=["satimage", "pendigits", "usps"])
    ap.add_argument(
        "--configs", nargs="+", default=["stump:1-slack", "hist_stump:1-slack", "stump:m-slack"]
    )
    args = ap.parse_args()
    rows = []
    for name in args.datasets:
        Xtr, ytr, Xte, yte = load(Path(args.data_dir), name)
        K = len(np.unique(ytr))
        for cfg in args.configs:
            weak, form = cfg.split(":")
            sb = run_structboost(
                Xtr, ytr, Xte, yte, weak, form, args.max_iter, args.C, args.max_time
            )
            lg = run_lightgbm(Xtr, ytr, Xte, yte, sb["n_stumps"], K)
            row = {
                "data": name,
                "n_train": len(ytr),
                "d": Xtr.shape[1],
                "classes": K,
                "weak_learner": weak,
                "formulation": form,
                "structboost": sb,
                "lightgbm": lg,
                "time_ratio": sb["fit_s"] / lg["fit_s"],
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h"], capture_output=True, text=True
    ).stdout.strip()
    out = {"commit": commit, "max_iter": args.max_iter, "C": args.C, "rows": rows}
    (ROOT / "benchmarks/results/fit_vs_lightgbm.json").write_text(json.dumps(out, indent=1))
    print(
        "| data | weak | form | SB fit s (weak/master/oracle) | SB iters / stumps | "
        "LGBM fit s (rounds) | ratio | test err SB / LGBM |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        sb, lg = r["structboost"], r["lightgbm"]
        print(
            f"| {r['data']} | {r['weak_learner']} | {r['formulation']} | {sb['fit_s']:.2f} "
            f"({sb['t_weak']:.2f}/{sb['t_master']:.2f}/{sb['t_oracle']:.2f}) | "
            f"{sb['n_iter']} / {sb['n_stumps']} | {lg['fit_s']:.2f} ({lg['rounds']}) | "
            f"{r['time_ratio']:.1f}x | {sb['test_error']:.4f} / {lg['test_error']:.4f} |"
        )


if __name__ == "__main__":
    main()
