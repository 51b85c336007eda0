"""The truncation gap of StructBoost's cutting-plane loops (``TRUNCATE_GAP``), 1-slack.

A truncated loop (``max_cp_rounds``) only stops once the master's relative gap is below
``TRUNCATE_GAP``.  This script compares gaps two ways on multi-class data (C = 100, stumps,
``formulation="1-slack"``, ``random_state=0``):

* equal iterations: ``--iters`` boosting iterations, wall time / objective / test error;
* equal time: ``max_time`` per data set and gap chosen (``--budgets``) so that the runs end,
  final polish included, at about the same wall time; the objective reached.

Data: satimage and pendigits train files (tested on their .t files), usps (its 2007-row file,
70/30 split).  Usage (from the repository root):
    .venv/bin/python benchmarks/bench_truncate_gap.py [--data-dir ../shared/data]
        [--datasets satimage pendigits usps] [--gaps 0.05 0.1] [--iters 60]
        [--out benchmarks/results/truncate_gap.json]
Writes benchmarks/results/truncate_gap.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from _common import DEFAULT_DATA, load_multiclass, write_result
from maxmargin.solvers.column_generation import fit_structboost
from maxmargin.solvers.one_slack_master import TRUNCATE_GAP
from maxmargin.tasks import MultiClassTask
from maxmargin.weak import DecisionStump

# max_time per (data set, gap) that makes the two settings end together (polish included)
BUDGETS = {
    "satimage": {0.05: 7.6, 0.1: 6.0},
    "pendigits": {0.05: 82.0, 0.1: 60.0},
    "usps": {0.05: 46.0, 0.1: 40.0},
}


def load(data_dir: Path, name: str):
    """(Xtr, Xte, ytr, yte): the set's own train / test files, usps a 70/30 split."""
    if name == "usps":
        X, y = load_multiclass(data_dir, name)
        return train_test_split(X, y, train_size=0.7, random_state=0, stratify=y)
    Xtr, ytr, Xte, yte = load_multiclass(data_dir, name, split="official")
    return Xtr, Xte, ytr, yte


def run(gap, Xtr, Xte, ytr, yte, max_iter, max_time):
    """StructBoostClassifier(formulation="1-slack", master="exact") with the truncation
    gap set: the solver function is called directly (the estimator has no such knob)."""
    t = time.perf_counter()
    task = MultiClassTask().bind(Xtr, ytr)
    res = fit_structboost(
        task,
        DecisionStump(),
        C=100.0,
        master="exact",
        formulation="1-slack",
        max_iter=max_iter,
        max_time=max_time,
        max_cp_rounds=10,
        truncate_gap=gap,
        rng=np.random.default_rng(0),
    )
    scores = res.hypotheses.evaluate(Xte).T @ res.slot_weights() if len(res.w) else None
    pred = task.decode(task.predict_codes(scores))
    return {
        "gap": gap,
        "wall_s": time.perf_counter() - t,
        "iterations": len(res.history),
        "objective": res.objective,
        "test_error": float(np.mean(pred != yte)),
        "cp_rounds": int(sum(r["n_cp"] for r in res.history)),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--datasets", nargs="+", default=list(BUDGETS))
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.05, 0.1])
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--out", default="benchmarks/results/truncate_gap.json")
    args = ap.parse_args(argv)
    default = TRUNCATE_GAP
    results = {"protocol": vars(args) | {"data_dir": str(args.data_dir)}}
    results["default_gap"] = default
    results["datasets"] = {}
    for name in args.datasets:
        parts = load(args.data_dir, name)
        rows = {"equal_iterations": [], "equal_time": []}
        for gap in args.gaps:
            rows["equal_iterations"].append(run(gap, *parts, args.iters, None))
            budget = BUDGETS.get(name, {}).get(gap)
            if budget is not None:
                rows["equal_time"].append(run(gap, *parts, 100_000, budget))
        results["datasets"][name] = rows
        for kind, rs in rows.items():
            for r in rs:
                print(
                    f"{name} {kind} gap {r['gap']}: {r['wall_s']:.1f} s, "
                    f"{r['iterations']} iterations, objective {r['objective']:.3f}, "
                    f"test error {r['test_error']:.4f}, {r['cp_rounds']} rounds",
                    flush=True,
                )
        write_result(args.out, results)


if __name__ == "__main__":
    main()
