"""FCD vs L-BFGS-B on the MultiBoost-cw master (Lin et al. ACCV 2012, Fig. 6), C = 1e4.

A. Column generation run with each master solver (FCD with tau_max in {1, 2, 5},
   L-BFGS-B with scipy's default tolerances): objective vs cumulative solver time.
B. Same weak learners for everybody (the final working set of the L-BFGS-B run, from
   w = 0): time for FCD (eps from 1e-1 down to 1e-5) and L-BFGS-B to reach the
   L-BFGS-B optimum.

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_fcd.py [--data-dir ../shared/data] [--iters 100]
        [--extra 2] [--datasets vowel usps pendigits] [--solvers FCD-1 FCD-2 FCD-5 L-BFGS-B]
        [--out benchmarks/results/fcd.json] [--plot docs/img/multiboost_fcd.png]
Data and splits of benchmarks/bench_multiclass_boosting.py.  Merges its data sets into
--out (each entry stamped with the run that wrote it) and draws --plot.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small BLAS calls: threads only spin
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import time
from pathlib import Path

import numpy as np

from _common import DEFAULT_DATA, ROOT, provenance, read_result, write_result
from bench_multiclass_boosting import load_dataset
from maxmargin.learners.multiboost import MultiBoostCW
from maxmargin.solvers.fcd import ExpLossMaster

C = 1e4
SOLVERS = {
    "FCD-1": dict(solver="fcd", tau_max=1),
    "FCD-2": dict(solver="fcd", tau_max=2),
    "FCD-5": dict(solver="fcd", tau_max=5),
    "L-BFGS-B": dict(solver="lbfgs"),
    # not in the paper: tighter KKT tolerance than its eps = 0.1
    "FCD-5 eps=1e-2": dict(solver="fcd", tau_max=5, eps=1e-2),
    "FCD-20 eps=1e-3": dict(solver="fcd", tau_max=20, eps=1e-3),
}
DEFAULT = ["FCD-1", "FCD-2", "FCD-5", "L-BFGS-B"]


def fixed_set(est, Xtr, ytr):
    """Master problem over the weak learners of a fitted model, at w = 0."""
    K = len(est.classes_)
    y = np.searchsorted(est.classes_, ytr)
    mp = ExpLossMaster(y, K, C)
    sel = est.var_hyp_ >= 0
    hidx = mp.add_hypotheses(est.hypotheses_.evaluate(Xtr))
    mp.add_variables(hidx[est.var_hyp_[sel]], est.var_out_[sel])
    return mp


def lbfgs_solve(mp):
    """L-BFGS-B with scipy's default tolerances from w = 0: seconds and objective."""
    mp.set_weights(np.zeros(mp.n_vars))
    t = time.perf_counter()
    mp.solve_lbfgs()
    return time.perf_counter() - t, mp.objective()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument(
        "--extra",
        type=int,
        default=2,
        help="FCD runs get extra x iters iterations to reach L-BFGS-B's objective",
    )
    ap.add_argument("--datasets", nargs="+", default=["vowel", "usps", "pendigits"])
    ap.add_argument("--solvers", nargs="+", default=DEFAULT, choices=list(SOLVERS))
    ap.add_argument("--out", default="benchmarks/results/fcd.json")
    ap.add_argument("--plot", type=Path, default=ROOT / "docs/img/multiboost_fcd.png")
    args = ap.parse_args(argv)
    results = read_result(args.out)
    for ds in args.datasets:
        Xtr, ytr, _, _ = load_dataset(ds, data_dir=args.data_dir)
        res = results.setdefault(
            ds,
            {
                "n_train": len(ytr),
                "K": len(np.unique(ytr)),
                "C": C,
                "iters": args.iters,
                "column_generation": {},
            },
        )
        res["provenance"] = provenance()  # of the run that last wrote this entry
        fits = {}
        for name in args.solvers:
            kw = SOLVERS[name]
            iters = args.iters if name == "L-BFGS-B" else args.extra * args.iters
            MultiBoostCW(C=C, max_iter=2, **kw).fit(Xtr[:60], ytr[:60])  # numba cache load
            est = MultiBoostCW(C=C, max_iter=iters, tol=0, random_state=0, **kw)
            t0 = time.perf_counter()
            est.fit(Xtr, ytr)
            fit_s = time.perf_counter() - t0
            h = est.history_
            res["column_generation"][name] = {
                "objective": [r["objective"] for r in h],
                "solver_seconds": np.cumsum([r["t_master"] for r in h]).tolist(),
                "seconds": [r["t_total"] for r in h],
                "fit_seconds": fit_s,
            }
            fits[name] = est
            print(
                f"{ds:9s} {name:8s} obj {h[-1]['objective']:.6g}  solver "
                f"{sum(r['t_master'] for r in h):7.2f}s  fit {fit_s:7.2f}s",
                flush=True,
            )
        cg = res["column_generation"]
        print(f"{ds:9s} time to L-BFGS-B's objective at {args.iters} iterations:", flush=True)
        target = cg["L-BFGS-B"]["objective"][-1]
        t_lb = cg["L-BFGS-B"]["solver_seconds"][-1]
        speed = {}
        for name in [n for n in cg if n.startswith("FCD")]:
            obj = np.array(cg[name]["objective"])
            hit = np.flatnonzero(obj <= target)
            at = cg[name]["objective"][args.iters - 1]
            speed[name] = {"objective_at_iters": at, "rel_gap_at_iters": (at - target) / target}
            if len(hit):
                k = hit[0]
                speed[name].update(
                    {
                        "iteration": int(k) + 1,
                        "solver_seconds": cg[name]["solver_seconds"][k],
                        "total_seconds": cg[name]["seconds"][k],
                        "solver_speedup": t_lb / max(cg[name]["solver_seconds"][k], 1e-12),
                        "total_speedup": cg["L-BFGS-B"]["seconds"][-1] / cg[name]["seconds"][k],
                    }
                )
        res["cg_time_to_lbfgs_final_objective"] = speed
        for name, r in speed.items():
            print(f"   {name}: {r}", flush=True)
        write_result(args.out, results)
        if "L-BFGS-B" not in fits:
            continue
        # B: one master problem on fixed weak learners
        mp = fixed_set(fits["L-BFGS-B"], Xtr, ytr)
        t_lb, f_lb = lbfgs_solve(mp)
        fixed = {
            "n_vars": int(mp.n_vars),
            "lbfgs_seconds": t_lb,
            "lbfgs_objective": f_lb,
            "fcd": [],
        }
        for eps in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5):
            mp.set_weights(np.zeros(mp.n_vars))
            t0 = time.perf_counter()
            info = mp.solve_fcd(None, eps=eps, tau_max=10**6, rng=0)
            fixed["fcd"].append(
                {
                    "eps": eps,
                    "seconds": time.perf_counter() - t0,
                    "objective": mp.objective(),
                    "tau": info["tau"],
                    "max_theta": info["max_theta"],
                }
            )
        reach = [r for r in fixed["fcd"] if r["objective"] <= f_lb * (1 + 1e-6)]
        fixed["fcd_speedup_to_lbfgs_objective"] = (t_lb / reach[0]["seconds"]) if reach else None
        res["fixed_weak_learners"] = fixed
        print(
            f"{ds:9s} fixed set ({mp.n_vars} vars): L-BFGS-B {t_lb:.2f}s obj {f_lb:.8g}; "
            + "; ".join(
                f"FCD eps={r['eps']:g} {r['seconds']:.3f}s obj {r['objective']:.8g}"
                for r in fixed["fcd"]
            ),
            flush=True,
        )
        write_result(args.out, results)
    plot(results, args.plot)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    for ax, ds in zip(axes[0], names):
        for name, r in results[ds]["column_generation"].items():
            ax.plot(np.array(r["solver_seconds"]) + 1e-4, r["objective"], label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{ds} (C = 1e4)")
        ax.set_xlabel("cumulative solver seconds")
        ax.set_ylabel("objective (2)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
