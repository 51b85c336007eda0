"""RankSVM and StructBoostRanker vs LightGBM lambdarank on LETOR 4.0 MQ2008 (5 folds),
NDCG@10 and MAP.

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_mq2008.py [--data-dir ../shared/data]
        [--folds 1 2 3 4 5] [--models ranksvm structboost lightgbm] [--grid 0.1 1 10 100]
        [--sb-grid 10 100] [--sb-iter 200] [--sb-rescalings unit margin]
        [--out benchmarks/results/mq2008.json]
Writes benchmarks/results/mq2008.json (--out).  C is chosen per fold on the validation
subset (NDCG@10) from a small grid.  StructBoostRanker: 1-slack, stumps, pairs inside each
query (complete graph over relevance grades), eq. (14) "unit" hinge or margin rescaling.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from _common import DEFAULT_DATA, write_result
from maxmargin.learners.ranksvm import RankSVM
from maxmargin.learners.structboost_ranker import StructBoostRanker
from maxmargin.metrics import mean_average_precision, ndcg_at_k

FOLDS = {
    1: ([1, 2, 3], 4, 5),
    2: ([2, 3, 4], 5, 1),
    3: ([3, 4, 5], 1, 2),
    4: ([4, 5, 1], 2, 3),
    5: ([5, 1, 2], 3, 4),
}


def load_subset(d, i):
    X, y, q = load_svmlight_file(str(d / f"S{i}.txt"), query_id=True, n_features=46)
    return X.toarray(), y, q


def concat(parts):
    return tuple(np.concatenate(v) for v in zip(*parts))


def evaluate(rel, s, q):
    return {
        "ndcg@10": ndcg_at_k(rel, s, k=10, group=q),
        "map": mean_average_precision(rel, s, group=q),
    }


MODELS = {
    "RankSVM bipartite/query (margin)": dict(graph="bipartite", rescaling="margin"),
    "RankSVM complete/query graded (margin)": dict(graph="complete", rescaling="margin"),
    "RankSVM complete/query graded (slack)": dict(graph="complete", rescaling="slack"),
}
SB_MODELS = {
    "StructBoostRanker complete/all pairs graded (unit, eq. 14)": dict(rescaling="unit"),
    "StructBoostRanker complete/query graded (unit)": dict(rescaling="unit", normalize="query"),
    "StructBoostRanker complete/query graded (margin)": dict(rescaling="margin", normalize="query"),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--grid", type=float, nargs="+", default=[0.1, 1.0, 10.0, 100.0])
    ap.add_argument("--models", nargs="+", default=["ranksvm", "structboost", "lightgbm"])
    ap.add_argument("--sb-grid", type=float, nargs="+", default=[10.0, 100.0])
    ap.add_argument("--sb-iter", type=int, default=200)
    ap.add_argument(
        "--sb-rescalings", nargs="+", default=["unit", "margin"], choices=["unit", "margin"]
    )
    ap.add_argument("--out", default="benchmarks/results/mq2008.json")
    args = ap.parse_args(argv)
    d = args.data_dir / "ranking" / "MQ2008"
    subsets = {i: load_subset(d, i) for i in range(1, 6)}
    results = {
        "folds": {},
        "grid": args.grid,
        "sb_grid": args.sb_grid,
        "sb_iter": args.sb_iter,
        "metric_notes": "NDCG@10 exp gain, queries without relevant docs count 0; "
        "MAP with rel>0 relevant",
    }
    for f in args.folds:
        tr, va, te = FOLDS[f]
        Xtr, ytr, qtr = concat([subsets[i] for i in tr])
        Xva, yva, qva = subsets[va]
        Xte, yte, qte = subsets[te]
        res = {}
        runs = []
        if "ranksvm" in args.models:
            runs += [
                (
                    n,
                    lambda C, kw=kw: RankSVM(C=C, normalize="query", tol=1e-4, max_iter=300, **kw),
                    args.grid,
                )
                for n, kw in MODELS.items()
            ]
        if "structboost" in args.models:
            runs += [
                (
                    n,
                    lambda C, kw=kw: StructBoostRanker(
                        C=C, max_iter=args.sb_iter, random_state=0, **kw
                    ),
                    args.sb_grid,
                )
                for n, kw in SB_MODELS.items()
                if kw["rescaling"] in args.sb_rescalings
            ]
        for name, make, grid in runs:
            best = None
            t0 = time.perf_counter()
            for C in grid:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = make(C)
                    m.fit(Xtr, ytr, qtr)
                v = ndcg_at_k(yva, m.decision_function(Xva), k=10, group=qva)
                if best is None or v > best[0]:
                    best = (v, C, m)
            v, C, m = best
            res[name] = {
                "C": C,
                "vali_ndcg@10": v,
                "iters": m.n_iter_,
                "grid_seconds": time.perf_counter() - t0,
                **evaluate(yte, m.decision_function(Xte), qte),
            }
            print(f"fold {f} {name}: {res[name]}", flush=True)
        if "lightgbm" in args.models:
            try:
                import lightgbm as lgb

                t0 = time.perf_counter()
                _, cnt_tr = np.unique(qtr, return_counts=True)
                _, cnt_va = np.unique(qva, return_counts=True)
                m = lgb.LGBMRanker(
                    objective="lambdarank",
                    n_estimators=500,
                    learning_rate=0.05,
                    num_leaves=31,
                    min_child_samples=20,
                    n_jobs=1,
                    verbose=-1,
                    random_state=0,
                )
                # svmlight files keep queries contiguous, as LightGBM's group sizes assume
                m.fit(
                    Xtr,
                    ytr,
                    group=cnt_tr,
                    eval_set=[(Xva, yva)],
                    eval_group=[cnt_va],
                    eval_at=[10],
                    callbacks=[lgb.early_stopping(50, verbose=False)],
                )
                res["LightGBM lambdarank"] = {
                    "best_iter": int(m.best_iteration_),
                    "seconds": time.perf_counter() - t0,
                    **evaluate(yte, m.predict(Xte), qte),
                }
                print(f"fold {f} lightgbm: {res['LightGBM lambdarank']}", flush=True)
            except ImportError:
                print("lightgbm not installed, skipped")
        results["folds"][f] = res
    names = list(next(iter(results["folds"].values())).keys())
    results["mean"] = {
        n: {
            k: float(np.mean([results["folds"][f][n][k] for f in results["folds"]]))
            for k in ("ndcg@10", "map")
        }
        for n in names
    }
    print(json.dumps(results["mean"], indent=1))
    write_result(args.out, results)


if __name__ == "__main__":
    main()
