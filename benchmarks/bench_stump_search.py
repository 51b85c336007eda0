"""Stump search alone: maxmargin exact / histogram stumps vs scikit-learn's depth-1 tree.

A stump maximising ``sum_k a_k phi(x_k)`` is the weighted binary problem with labels
``sign(a_k)`` and weights ``|a_k|``; scikit-learn's ``DecisionTreeClassifier(max_depth=1)``
is fitted on exactly that problem and its gain ``sum_k a_k pred_k`` is reported next to
ours (ours is the maximum, so it is >= sklearn's Gini stump).  Each size is timed in the
same run on the same machine; ``prepare`` (sorting / binning, once per boosting fit) is
reported apart from ``best`` (one search, once per boosting iteration).

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_stump_search.py [--data-dir ../shared/data] [--quick]
        [--out benchmarks/results/stump_search.json]
Writes benchmarks/results/stump_search.json (with --quick, one small synthetic size, only
--out if given) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from _common import DEFAULT_DATA, load_multiclass, write_result
from maxmargin.weak import DecisionStump, HistogramStump


def mnist_tiled(data_dir: Path, n: int) -> np.ndarray:
    X, _ = load_multiclass(data_dir, "mnist1000")
    return np.tile(X, (int(np.ceil(n / X.shape[0])), 1))[:n]


def weights(X: np.ndarray, S: int, rng) -> np.ndarray:
    """Signed weights correlated with a few features (like boosting duals) plus noise."""
    n, d = X.shape
    cols = rng.choice(d, size=(S, 3))
    A = np.stack([X[:, c].sum(axis=1) - np.median(X[:, c].sum(axis=1)) for c in cols], 1)
    return (A + rng.standard_normal((n, S)) * A.std(axis=0).clip(1e-3)) / n


def timeit(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def bench_case(name, X, rng, repeat_sk):
    a = weights(X, 1, rng)
    A10 = weights(X, 10, rng)
    row = {"data": name, "n": X.shape[0], "d": X.shape[1]}
    for label, learner in (("exact", DecisionStump()), ("hist", HistogramStump())):
        t_prep, prep = timeit(lambda learner=learner: learner.prepare(X), 1)
        learner.best(prep, a)  # warm-up (numba cache load)
        t_best, (_, g) = timeit(lambda learner=learner, prep=prep: learner.best(prep, a), 5)
        t10, _ = timeit(lambda learner=learner, prep=prep: learner.best(prep, A10), 3)
        row.update(
            {
                f"{label}_prepare_s": t_prep,
                f"{label}_best_s": t_best,
                f"{label}_best_S10_s": t10,
                f"{label}_gain": float(g[0]),
            }
        )
    y, w = np.where(a[:, 0] > 0, 1, -1), np.abs(a[:, 0])
    sk = DecisionTreeClassifier(max_depth=1, random_state=0)
    t_sk, sk = timeit(lambda: sk.fit(X, y, sample_weight=w), repeat_sk)
    row["sklearn_fit_s"] = t_sk
    row["sklearn_gain"] = float(sk.predict(X) @ a[:, 0])
    row["speedup_exact"] = t_sk / row["exact_best_s"]
    row["speedup_hist"] = t_sk / row["hist_best_s"]
    row["speedup_exact_incl_prepare"] = t_sk / (row["exact_best_s"] + row["exact_prepare_s"])
    row["speedup_hist_incl_prepare"] = t_sk / (row["hist_best_s"] + row["hist_prepare_s"])
    print(json.dumps(row), flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="default benchmarks/results/stump_search.json")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    sizes = [(6000, 784), (60000, 784)] if not args.quick else [(2000, 100)]
    rows = []
    for n, d in sizes:
        repeat = 3 if n * d <= 5e6 else 1
        X = rng.standard_normal((n, d))
        rows.append(bench_case("synthetic gaussian", X, rng, repeat))
        if d == 784:
            rows.append(bench_case("mnist1000 tiled", mnist_tiled(args.data_dir, n), rng, repeat))
    out = args.out or (None if args.quick else "benchmarks/results/stump_search.json")
    if out:
        write_result(out, {"rows": rows})  # commit and machine: in the provenance
    print(
        "| data | n x d | sklearn fit | exact best (prep) | hist best (prep) | "
        "speed-up exact / hist | exact S=10 | gain ours / sklearn |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['data']} | {r['n']} x {r['d']} | {r['sklearn_fit_s']:.2f} s | "
            f"{r['exact_best_s'] * 1e3:.0f} ms ({r['exact_prepare_s']:.2f} s) | "
            f"{r['hist_best_s'] * 1e3:.0f} ms ({r['hist_prepare_s']:.2f} s) | "
            f"{r['speedup_exact']:.0f}x / {r['speedup_hist']:.0f}x | "
            f"{r['exact_best_S10_s'] * 1e3:.0f} ms | "
            f"{r['exact_gain']:.4g} / {r['sklearn_gain']:.4g} |"
        )


if __name__ == "__main__":
    main()
