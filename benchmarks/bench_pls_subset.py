"""PLS feature-subset search for AdaBoost (thesis Sec. 3.4, Figs. 3.9-3.10), side by side.

Discrete AdaBoost with stumps, T rounds, each round's stump searched over

* every feature (``full``);
* a PLS-drawn subset of ``--size`` features refreshed every 25 rounds (``pls-25``) and
  every round (``pls-1``);
* a uniform random subset of the same size refreshed every 25 rounds (``random-25``) and
  every round (``random-1``; the thesis's strongest baseline).

Reports the training exponential loss after 25 / 50 / T rounds (the thesis's figures plot
it against rounds), test error and fit time, for one-vs-rest problems of mnist1000 (784
pixel features) and usps (256), a random 50/50 split.

    PYTHONPATH=src python benchmarks/bench_pls_subset.py [--data ../shared/data]
        [--out benchmarks/results/pls_subset.json] [--T 100] [--size 40]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import DEFAULT_DATA, load_multiclass, write_result
from maxmargin import BinaryAdaBoost

SETS = {"mnist1000": 0, "usps": 1}


def run(Xtr, ytr, Xte, yte, T, subset):
    est = BinaryAdaBoost(variant="discrete", max_iter=T, feature_subset=subset)
    t = time.perf_counter()
    est.fit(Xtr, ytr)
    seconds = time.perf_counter() - t
    loss = [r["objective"] for r in est.history_]
    return {
        "fit_seconds": round(seconds, 3),
        "train_exp_loss": {str(k): loss[k - 1] for k in (25, 50, T) if k <= len(loss)},
        "test_error": float(np.mean(est.predict(Xte) != yte)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--out", default="benchmarks/results/pls_subset.json")
    ap.add_argument("--T", type=int, default=100)
    ap.add_argument("--size", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    results = {}
    for name, pos in SETS.items():
        X, y = load_multiclass(args.data, name)
        y = (y == pos).astype(int)
        rows = {}
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            perm = rng.permutation(len(y))
            tr, te = perm[: len(y) // 2], perm[len(y) // 2 :]
            configs = {
                "full": None,
                "pls-25": {"size": args.size, "refresh": 25, "random_state": seed},
                "pls-1": {"size": args.size, "refresh": 1, "random_state": seed},
                "random-25": {
                    "size": args.size, "refresh": 25, "method": "random", "random_state": seed,
                },
                "random-1": {
                    "size": args.size, "refresh": 1, "method": "random", "random_state": seed,
                },
            }  # fmt: skip
            for key, subset in configs.items():
                rows.setdefault(key, []).append(run(X[tr], y[tr], X[te], y[te], args.T, subset))
        summary = {}
        for key, runs in rows.items():
            summary[key] = {
                "fit_seconds": float(np.mean([r["fit_seconds"] for r in runs])),
                "test_error": float(np.mean([r["test_error"] for r in runs])),
                "train_exp_loss": {
                    k: float(np.mean([r["train_exp_loss"][k] for r in runs]))
                    for k in runs[0]["train_exp_loss"]
                },
            }
            print(name, key, summary[key], flush=True)
        results[name] = {"n_features": int(X.shape[1]), "positive_class": pos, **summary}
    write_result(
        args.out,
        {"T": args.T, "size": args.size, "seeds": args.seeds, "results": results},
    )


if __name__ == "__main__":
    main()
