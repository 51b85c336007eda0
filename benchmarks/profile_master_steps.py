"""How many steps the fast master takes, where, and how the final certificate's time splits.

For each set and iteration count of ``bench_fit_vs_lightgbm.py`` (C = 100, the default
estimator), one fit of ``StructBoostClassifier`` with timers wrapped around the smoothed
master's pieces (the fit itself is unchanged: the wrappers only count and time).  Per fit:

* the iterations' L-BFGS steps (``history_[k]["n_cp"]``): in the first ``WORKING_SET``
  iterations (while the working set is the whole model) and after, the iterations that
  take one step, and the largest count;
* the solves' wall time in the iterations and in the certificate;
* the certificate (``SmoothedMaster.certify``): its continuation rounds
  (``continuation_trace``) and L-BFGS steps, and its time in the steps, in every
  column's gain (the refresh at its start, then one float64 product per round for the
  bound), in the aggregated bound's LPs and in the rest (pinning, final scores).

Scratch diagnostics (printed; ``--out`` writes them as JSON too).  Timings are only
comparable inside one run under the CPU lock.

Usage: python benchmarks/profile_master_steps.py [--datasets pendigits syn26]
    [--max-iter 100 200 500] [--data-dir ../shared/data] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from _common import DEFAULT_DATA
from bench_fit_vs_lightgbm import load
from maxmargin import StructBoostClassifier
from maxmargin.solvers import smoothed_master, smoothed_problem
from maxmargin.solvers.columns import ColumnStore


class Timers:
    """Wall time and calls of the wrapped pieces, by phase ("iter" or "cert")."""

    def __init__(self):
        self.phase = "iter"
        self.t = defaultdict(float)
        self.n = defaultdict(int)
        self.masters = []

    def wrap(self, owner, name, key, phase=None, keep=False):
        orig = getattr(owner, name)

        def wrapped(*args, **kwargs):
            if keep:
                self.masters.append(args[0])
            prev = self.phase
            if phase is not None:
                self.phase = phase
            t0 = time.perf_counter()
            try:
                out = orig(*args, **kwargs)
            finally:
                k = f"{key}_{self.phase}"
                self.t[k] += time.perf_counter() - t0
                self.n[k] += 1
                if key == "solve":
                    self.n[f"steps_{self.phase}"] += int(out)
                self.phase = prev
            return out

        setattr(owner, name, wrapped)
        return orig


def profile(Xtr, ytr, max_iter):
    timers = Timers()
    originals = [
        (smoothed_problem.SmoothedProblem, "solve", timers.wrap(
            smoothed_problem.SmoothedProblem, "solve", "solve")),
        (smoothed_master.SmoothedMaster, "certify", timers.wrap(
            smoothed_master.SmoothedMaster, "certify", "certify", phase="cert", keep=True)),
        (ColumnStore, "gains", timers.wrap(ColumnStore, "gains", "gains")),
        (smoothed_master, "aggregated_dual_bound", timers.wrap(
            smoothed_master, "aggregated_dual_bound", "aggregated_lp")),
    ]  # fmt: skip
    try:
        t0 = time.perf_counter()
        clf = StructBoostClassifier(C=100, max_iter=max_iter, random_state=0).fit(Xtr, ytr)
        fit_s = time.perf_counter() - t0
    finally:
        for owner, name, orig in originals:
            setattr(owner, name, orig)
    h = clf.history_
    steps = np.array([r["n_cp"] for r in h], dtype=np.int64)
    ws = smoothed_problem.WORKING_SET
    t, n = timers.t, timers.n
    cert_s = t["certify_cert"]
    trace = timers.masters[-1].continuation_trace if timers.masters else []
    return clf, {
        "fit_s": fit_s,
        "t_weak": float(sum(r["t_weak"] for r in h)),
        "t_master": float(sum(r["t_master"] for r in h)),
        "iterations": len(h),
        "iteration_steps": int(steps.sum()),
        "steps_first_working_set": int(steps[:ws].sum()),
        "steps_after": int(steps[ws:].sum()),
        "one_step_iterations": int(np.sum(steps == 1)),
        "max_steps_per_iteration": int(steps.max()) if len(steps) else 0,
        "iteration_solve_s": t["solve_iter"],
        "certify_calls": n["certify_cert"],
        "certify_s": cert_s,
        "certify_share": cert_s / fit_s,
        "cert_rounds": len(trace),
        "cert_steps": n["steps_cert"],
        "cert_solve_s": t["solve_cert"],
        "cert_gains_s": t["gains_cert"],
        "cert_aggregated_lp_s": t["aggregated_lp_cert"],
        "cert_aggregated_lps": n["aggregated_lp_cert"],
        "cert_other_s": cert_s - t["solve_cert"] - t["gains_cert"] - t["aggregated_lp_cert"],
        "cert_first_beta_rounds": sum(1 for r in trace if r[0] == trace[0][0]) if trace else 0,
        "objective": float(clf.objective_),
        "gap": float(clf.gap_),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(DEFAULT_DATA))
    ap.add_argument("--datasets", nargs="+", default=["pendigits", "syn26"])
    ap.add_argument("--max-iter", type=int, nargs="+", default=[100, 200, 500])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    for name in args.datasets:
        Xtr, ytr, Xte, yte = load(Path(args.data_dir), name)
        for it in args.max_iter:
            clf, row = profile(Xtr, ytr, it)
            row.update(data=name, max_iter=it)
            if len(yte):
                row["test_error"] = float(np.mean(clf.predict(Xte) != yte))
            rows.append(row)
            print(
                f"{name:9s} {it:4d}  fit {row['fit_s']:.2f} s (weak {row['t_weak']:.2f}, "
                f"master {row['t_master']:.2f}); iteration steps {row['iteration_steps']} "
                f"(first {smoothed_problem.WORKING_SET}: {row['steps_first_working_set']}, "
                f"after: {row['steps_after']}, one-step iterations "
                f"{row['one_step_iterations']}/{row['iterations']}, max "
                f"{row['max_steps_per_iteration']}) in {row['iteration_solve_s']:.2f} s; "
                f"certificate {row['certify_s']:.3f} s ({100 * row['certify_share']:.1f} %): "
                f"{row['cert_rounds']} rounds ({row['cert_first_beta_rounds']} at the base "
                f"beta), {row['cert_steps']} steps {row['cert_solve_s']:.3f} s, all columns' gains "
                f"{row['cert_gains_s']:.3f} s, {row['cert_aggregated_lps']} "
                f"aggregated LPs {row['cert_aggregated_lp_s']:.3f} s, other "
                f"{row['cert_other_s']:.3f} s",
                flush=True,
            )
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
