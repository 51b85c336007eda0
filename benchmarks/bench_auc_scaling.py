"""How AUC StructBoost (1-slack, O(n log n) planes) scales with n, where m-slack cannot go.

Synthetic binary data (20 Gaussian features, a non-linear positive region with noise, about
30 % positives), 50 boosting iterations at C = 100, for n = 10^4 .. 10^6: fit time split
into weak-learner search, LP master and ranking oracle, the number of pairs |S| (the rows the
m-slack form would need), and training AUC.  Exact stumps and histogram stumps.

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_auc_scaling.py [--n 10000 100000 1000000]
        [--weak stump hist_stump] [--max-iter 50] [--out benchmarks/results/auc_scaling.json]
Writes benchmarks/results/auc_scaling.json.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from _common import warm_up, write_result
from maxmargin import StructBoostRanker
from maxmargin.metrics import auc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--weak", nargs="+", default=["stump", "hist_stump"])
    ap.add_argument("--max-iter", type=int, default=50)
    ap.add_argument("--out", default="benchmarks/results/auc_scaling.json")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for n in args.n:
        X = rng.normal(size=(n, 20))
        y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=n) > 1.0).astype(float)
        for weak in args.weak:
            warm_up(StructBoostRanker(C=100, weak_learner=weak), X, y)  # compile before timing
            t = time.perf_counter()
            r = StructBoostRanker(C=100, max_iter=args.max_iter, weak_learner=weak).fit(X, y)
            fit = time.perf_counter() - t
            h = r.history_
            row = {
                "n": n,
                "weak": weak,
                "pairs": r.n_pairs_,
                "fit_s": fit,
                "t_weak": sum(x["t_weak"] for x in h),
                "t_master": sum(x["t_master"] for x in h),
                "t_oracle": sum(x["t_oracle"] for x in h),
                "n_cp": sum(x["n_cp"] for x in h),
                "n_iter": r.n_iter_,
                "train_auc": auc(y, r.decision_function(X)),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
            write_result(args.out, {"protocol": vars(args), "rows": rows})
    print("| n | weak | pairs | fit (s) | weak (s) | master (s) | oracle (s) | train AUC |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['n']:,} | {r['weak']} | {r['pairs']:.2e} | {r['fit_s']:.1f} | "
            f"{r['t_weak']:.1f} | {r['t_master']:.1f} | {r['t_oracle']:.1f} | "
            f"{r['train_auc']:.4f} |"
        )


if __name__ == "__main__":
    main()
