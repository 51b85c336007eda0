"""AUC StructBoost (1-slack) against LightGBM stumps and a linear RankSVM, Table 1 protocol.

Same data, positive class and 50/25/25 splits as benchmarks/bench_auc_table1.py.  Models:

* StructBoostRanker (1-slack, eq. 14, stumps, at most 200 iterations, eps_cp 0.001), C on
  validation AUC from {10, 25, 63, 158, 398, 1000};
* LightGBM binary classifier with decision stumps (max_depth 1, 200 rounds -- at least as many
  stumps as StructBoost may use), learning rate on validation AUC from {0.05, 0.1, 0.3};
* RankSVM (linear, bipartite = AUC hinge), C on validation AUC from {0.1, 1, 10, 100, 1000}.

Reports mean ± std test AUC and the fit time of the chosen model; all in one process, one
thread each.  Usage (from the repository root):
    .venv/bin/python benchmarks/bench_auc_peers.py [--data-dir ../shared/data]
        [--datasets wine ...] [--repeats 5] [--out benchmarks/results/auc_peers.json]
Writes benchmarks/results/auc_peers.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from _common import DEFAULT_DATA, warm_up, write_result
from bench_auc_table1 import PAPER, binary_split, load
from maxmargin import RankSVM, StructBoostRanker
from maxmargin.metrics import auc


def choose(make, grid, parts):
    """Fit every grid value, keep the best validation AUC; returns (test AUC, fit s, value)."""
    Xtr, ytr, Xva, yva, Xte, yte = parts
    best = None
    warm_up(make(grid[0]), Xtr, ytr)  # compiled kernels loaded before any fit is timed
    for v in grid:
        model = make(v)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(Xtr, ytr)
        dt = time.perf_counter() - t
        score = _scores(model, Xva)
        a = auc(yva, score)
        if best is None or a > best[0]:
            best = (a, dt, v, model)
    a, dt, v, model = best
    return {"test_auc": auc(yte, _scores(model, Xte)), "fit_s": dt, "chosen": v, "val_auc": a}


def _scores(model, X):
    if hasattr(model, "predict_proba") and not isinstance(model, StructBoostRanker):
        return model.predict_proba(X)[:, 1]
    return model.decision_function(X)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--datasets", nargs="+", default=list(PAPER))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/auc_peers.json")
    args = ap.parse_args(argv)
    import lightgbm as lgb

    models = {
        "StructBoostRanker 1-slack": (
            lambda C: StructBoostRanker(C=C, max_iter=200, eps_cp=0.001, random_state=0),
            [10, 25, 63, 158, 398, 1000],
        ),
        "LightGBM stumps (200 rounds)": (
            lambda lr: lgb.LGBMClassifier(
                n_estimators=200,
                max_depth=1,
                num_leaves=2,
                learning_rate=lr,
                min_child_samples=1,
                n_jobs=1,
                verbose=-1,
                random_state=0,
            ),
            [0.05, 0.1, 0.3],
        ),
        "RankSVM linear (bipartite)": (
            lambda C: RankSVM(C=C, graph="bipartite", tol=1e-4, max_iter=500),
            [0.1, 1, 10, 100, 1000],
        ),
    }
    results = {"protocol": vars(args) | {"data_dir": str(args.data_dir)}}
    results["datasets"] = {}
    for name in args.datasets:
        X, y = load(args.data_dir, name)
        positive = np.unique(y)[0]
        runs = {m: [] for m in models}
        for rep in range(args.repeats):
            parts = binary_split(X, y, positive, rep)
            for m, (make, grid) in models.items():
                runs[m].append(choose(make, grid, parts))
        results["datasets"][name] = runs
        line = ", ".join(
            f"{m}: AUC {np.mean([r['test_auc'] for r in rs]):.3f} "
            f"fit {np.mean([r['fit_s'] for r in rs]):.2f}s"
            for m, rs in runs.items()
        )
        print(f"{name}: {line}", flush=True)
        write_result(args.out, results)
    print(table(results, list(models)))


def table(results, names) -> str:
    head = "| dataset | " + " | ".join(f"{m} test AUC | fit (s)" for m in names) + " |"
    rows = [head, "|---" * (1 + 2 * len(names)) + "|"]
    for name, runs in results["datasets"].items():
        cells = []
        for m in names:
            a = np.array([r["test_auc"] for r in runs[m]])
            t = np.array([r["fit_s"] for r in runs[m]])
            cells += [f"{a.mean():.3f} ± {a.std():.3f}", f"{t.mean():.2f}"]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
