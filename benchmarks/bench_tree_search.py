"""One tree search on all K class columns: HistogramTree.best() vs LightGBM's tree growth.

Both sides get the same gradients, the multi-class softmax gradients at F = 0
(``A = onehot(y) - 1/K``, LightGBM's first round), and build trees of the same depth:
ours one ``HistogramTree(max_depth=D).best(prepared, A)`` call (K trees, one per column
of A, ``grow="per_slot"``; and one joint tree for all columns, ``grow="joint"``), LightGBM
one boosting round of a custom multi-class objective returning ``-A`` as gradient and 1
as hessian (K trees of ``max_depth=D``, ``num_leaves=2**D``, ``min_data_in_leaf=1``,
255 bins, no regularisation).  Binning is outside both timings (our ``prepare``,
LightGBM's ``Dataset.construct``).  LightGBM's round is timed two ways: one
``lgb.train`` call of 1 round (includes its booster set-up), and the marginal cost of a
round, (time of 1 + R rounds - time of 1 round) / R.  Both use ``--threads`` threads
(default 1: the machine is shared, and one thread each is the fairest comparison there);
best of ``--repeats`` after one warm-up.

Data: pendigits (official training file, 7494 x 16, 10 classes) and a 26-class
synthetic set (make_classification, 20,000 x 16, the issue-28 stand-in).

Usage: flock /tmp/maxmargin-cpu.lock .venv/bin/python benchmarks/bench_tree_search.py
    [--depths 2 3 4 6] [--repeats 5] [--data-dir ../shared/data]
    [--out benchmarks/results/tree_search.json]
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import lightgbm as lgb
import numba
import numpy as np

from _common import DEFAULT_DATA, load_multiclass, synthetic26, write_result
from maxmargin.weak.hist_tree import HistogramTree


def best_of(fn, repeats):
    fn()  # warm-up (numba compilation, caches)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def lgb_round(X, y, A, D, rounds, threads):
    K = A.shape[1]
    ds_params = {"max_bin": 255, "verbose": -1, "min_data_in_leaf": 1, "feature_pre_filter": False}
    ds = lgb.Dataset(X, label=y, params=ds_params, free_raw_data=False)
    ds.construct()

    def fobj(preds, data):
        return -A, np.ones_like(A)

    params = {
        "objective": fobj,
        "num_class": K,
        "max_depth": D,
        "num_leaves": 2**D,
        "min_data_in_leaf": 1,
        "min_sum_hessian_in_leaf": 0.0,
        "lambda_l2": 0.0,
        "min_gain_to_split": 0.0,
        "learning_rate": 1.0,
        "num_threads": threads,
        "force_col_wise": True,
        "verbose": -1,
    }
    return lambda r=rounds: lgb.train(params, ds, num_boost_round=r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(DEFAULT_DATA))
    ap.add_argument("--depths", nargs="+", type=int, default=[2, 3, 4, 6])
    ap.add_argument("--datasets", nargs="+", default=["pendigits", "synthetic26"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--extra-rounds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="threads for both sides")
    ap.add_argument("--out", default="benchmarks/results/tree_search.json")
    args = ap.parse_args()
    threads = args.threads
    numba.set_num_threads(threads)
    rows = []
    for name in args.datasets:
        if name == "synthetic26":
            X, y = synthetic26()
        else:
            X, y, _, _ = load_multiclass(Path(args.data_dir), name, split="official")
        classes, yi = np.unique(y, return_inverse=True)
        K = len(classes)
        A = np.eye(K)[yi] - 1.0 / K
        for D in args.depths:
            row = {"data": name, "n": len(y), "d": X.shape[1], "classes": K, "depth": D}
            for grow in ("per_slot", "joint"):
                wl = HistogramTree(max_depth=D, grow=grow)
                prep = wl.prepare(X)
                row[f"ours_{grow}_s"] = best_of(partial(wl.best, prep, A), args.repeats)
                row[f"gain_{grow}"] = float(wl.best(prep, A)[1].sum())
            train = lgb_round(X, yi, A, D, 1, threads)
            one = best_of(train, args.repeats)
            more = best_of(partial(train, 1 + args.extra_rounds), max(1, args.repeats // 2))
            row["lightgbm_train1_s"] = one
            row["lightgbm_round_s"] = max((more - one) / args.extra_rounds, 1e-9)
            row["ratio_vs_train1"] = row["ours_per_slot_s"] / one
            row["ratio_vs_round"] = row["ours_per_slot_s"] / row["lightgbm_round_s"]
            rows.append(row)
            print(row, flush=True)
    path = write_result(args.out, {"threads": threads, "rows": rows})
    print(f"wrote {path}")
    print(
        "| data | depth | ours per-slot (K trees) s | ours joint s | LightGBM 1-round train s "
        "| LightGBM marginal round s | ratio per-slot / train | ratio per-slot / round |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['data']} ({r['n']} x {r['d']}, K={r['classes']}) | {r['depth']} | "
            f"{r['ours_per_slot_s'] * 1e3:.1f} ms | {r['ours_joint_s'] * 1e3:.1f} ms | "
            f"{r['lightgbm_train1_s'] * 1e3:.1f} ms | {r['lightgbm_round_s'] * 1e3:.1f} ms | "
            f"{r['ratio_vs_train1']:.2f} | {r['ratio_vs_round']:.2f} |"
        )


if __name__ == "__main__":
    main()
