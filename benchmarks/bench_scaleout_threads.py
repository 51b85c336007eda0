"""Scale-out on threads (issue 17): the oracles on numba / joblib threads, 1 vs 2 workers.

Processes pay for every call (task dispatch, results pickled back, 20-30 ms per call on
this machine, see benchmarks/NOTEBOOK.md); threads share the data and the answers in memory,
so the short oracle calls of a structured fit can be split too.  On OCR (Taskar et al.
2003; ``load_ocr``):

``--runs R`` runs the sections (but ``cores``) R times into one file (``runs``), and
``speedups`` lists every 1-thread / 2-thread time ratio per section in run order.

1. ``cores``: how many cores were really free (``bench_scaleout.cores_section``);
2. ``ssvm_oracle``: one loss-augmented call with its 1-slack plane of ``StructSVM``'s
   sharded oracle (``ShardedOracle``) on the large fold stacked ``--replicate`` times,
   in-process (``n_jobs=1``) and on joblib's threading backend with 2 threads (the
   numba kernel releases the GIL);
3. ``ssvm_fit``: the 1-slack StructSVM fit (C = 62.6, tol 0, ``--ssvm-iter``
   iterations) with ``n_jobs`` 1 and 2 on the threading backend (bit-identical models);
4. ``chain_oracle``: one smoothed forward-backward (``ChainTask.smoothed_value`` +
   ``complete_smoothed_risk``, what StructBoost's fast master calls per accepted step)
   on the 626 standard training words, ``oracle_threads`` 1 and 2;
5. ``structboost``: ``StructBoost(task=ChainTask(), weak_learner=DecisionTree(max_depth=2),
   C=200)`` with ``--sb-iter`` iterations, ``n_jobs`` None and 2 (bit-identical models),
   with the time in the oracle-bound master and in the rest;
6. ``ranking``: the O(n log n) ranking oracle (``PreferenceGraph.most_violated``, complete
   graph) at ``--rank-n`` (10^7) samples, margin and slack rescaling, 1 and 2 threads
   alternated (median of ``--rank-repeat``), and a ``RankSVM`` fit (slack rescaling,
   ``--rank-iter`` iterations, tol 1e-12) on ``--rank-d`` Gaussian features with ``n_jobs`` 1
   and 2 (bit-identical models).  Synthetic data as in ``bench_ranking_oracle.py``:
   losses uniform on [0, 1) rounded to 1e-6, here made to depend on the features.

Every section records the load average.  Run under ``flock /tmp/maxmargin-bench.lock`` on
the shared 2-core machine, with ``NUMBA_NUM_THREADS=2`` (numba's pool must have two
threads) and ``OPENBLAS_NUM_THREADS=1`` (the defaults set here; the result file records
them).  ``OMP_WAIT_POLICY`` is left to libgomp's default (spin a little after a parallel
region, then sleep) unless set: since StructBoost's column products became numba
kernels, ``PASSIVE`` made the OCR chain fit's 2-thread run slower (mostly 1.68-1.76x
against 1.74-1.93x, median 1.85x, with the default; benchmarks/NOTEBOOK.md).

Usage (from the repository root):
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=2 python benchmarks/bench_scaleout_threads.py \\
        [--replicate 4] [--ssvm-iter 25] [--sb-iter 10] \\
        [--out benchmarks/results/scaleout_threads.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import argparse
import time
import warnings

import joblib
import numpy as np

from _common import run_sections, write_result
from bench_scaleout import OCR, _median_time, cores_section, ocr_folds
from maxmargin import RankSVM, StructBoost, StructSVM
from maxmargin.inference.ranking import PreferenceGraph
from maxmargin.solvers.parallel import ShardedOracle
from maxmargin.tasks.chain import ChainTask
from maxmargin.weak import DecisionTree


def ssvm_oracle_section(X, y, repeat):
    model = ChainTask().bind(X, y).linear_model()
    w = np.random.default_rng(0).normal(size=model.dim) * 0.01
    rows = []
    for n_jobs in (1, 2, 1, 2):  # alternated: the load moves within minutes
        with joblib.parallel_config(backend="threading"):
            with ShardedOracle(model, n_jobs=n_jobs) as orc:
                orc.run(w, plane=True)
                t, ts = _median_time(lambda o=orc: o.run(w, plane=True), repeat)
        rows.append({"n_jobs": n_jobs, "backend": "threading", "sec_per_call": t, "times": ts})
    return {"n_words": len(y), "n_letters": int(model.n_positions), "rows": rows}


def ssvm_fit_section(X, y, iters):
    rows, ref = [], None
    for n_jobs in (1, 2, 1, 2):
        est = StructSVM(
            task=ChainTask(), C=62.6, solver="1-slack", tol=0.0, max_iter=iters, n_jobs=n_jobs
        )
        t = time.perf_counter()
        with warnings.catch_warnings(), joblib.parallel_config(backend="threading"):
            warnings.simplefilter("ignore")
            est.fit(X, y)
        t = time.perf_counter() - t
        ref = est.coef_ if ref is None else ref
        rows.append(
            {
                "n_jobs": n_jobs,
                "backend": "threading",
                "fit_seconds": t,
                "t_oracle": float(sum(h["t_oracle"] for h in est.history_)),
                "iterations": est.n_iter_,
                "bit_identical": bool(np.array_equal(ref, est.coef_)),
                "loadavg": os.getloadavg(),
            }
        )
    return {"solver": "1-slack", "C": 62.6, "max_iter": iters, "rows": rows}


def chain_oracle_section(X, y, repeat):
    task = ChainTask().bind(X, y)
    rng = np.random.default_rng(0)
    F = rng.normal(size=(task.weak_inputs().shape[0], task.n_slots))
    rows = []
    for beta in (1.0, 30.0):
        for threads in (1, 2, 1, 2):
            with task.oracle_threads(threads):

                def call(b=beta):
                    _v, state = task.smoothed_value(F, b)
                    return task.complete_smoothed_risk(F, b, state)

                call()
                t, ts = _median_time(call, repeat)
            rows.append({"beta": beta, "threads": threads, "sec_per_call": t, "times": ts})
    return {"n_words": len(y), "n_letters": len(task.y_), "rows": rows}


def structboost_section(X, y, iters):
    rows, ref = [], None
    for n_jobs in (None, 2):  # warm-up fits (numba compiles or loads its kernels), not timed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            StructBoost(
                task=ChainTask(), C=200.0, weak_learner=DecisionTree(max_depth=2), max_iter=2,
                random_state=0, n_jobs=n_jobs,
            ).fit(X[:50], y[:50])  # fmt: skip
    for n_jobs in (None, 2, None, 2):
        est = StructBoost(
            task=ChainTask(),
            C=200.0,
            weak_learner=DecisionTree(max_depth=2),
            max_iter=iters,
            random_state=0,
            n_jobs=n_jobs,
        )
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        t = time.perf_counter() - t
        ref = est.slot_weights_ if ref is None else ref
        h = est.history_
        rows.append(
            {
                "n_jobs": n_jobs,
                "fit_seconds": t,
                "iterations": est.n_iter_,
                "t_weak": float(sum(r["t_weak"] for r in h)),
                "t_master": float(sum(r["t_master"] for r in h)),
                "bit_identical": bool(np.array_equal(ref, est.slot_weights_)),
                "loadavg": os.getloadavg(),
            }
        )
    return {"C": 200.0, "weak": "DecisionTree(max_depth=2)", "max_iter": iters, "rows": rows}


def ranking_section(n, d, repeat, iters):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    loss = np.round(
        np.clip(0.5 + 0.1 * (X @ rng.normal(size=d)) + 0.1 * rng.normal(size=n), 0, 1), 6
    )
    s = rng.normal(size=n)
    t = time.perf_counter()
    g = PreferenceGraph(loss)
    prepare = time.perf_counter() - t
    oracle = []
    for r in ("margin", "slack"):
        ref = None
        for n_jobs in (1, 2, 1, 2):
            g.most_violated(s, r, n_jobs=n_jobs)
            t, ts = _median_time(lambda r=r, j=n_jobs: g.most_violated(s, r, n_jobs=j), repeat)
            alpha, _ = g.most_violated(s, r, n_jobs=n_jobs)
            ref = alpha if ref is None else ref
            oracle.append(
                {
                    "rescaling": r,
                    "n_jobs": n_jobs,
                    "sec_per_call": t,
                    "times": ts,
                    "bit_identical": bool(np.array_equal(ref, alpha)),
                    "loadavg": os.getloadavg(),
                }
            )
    fits, ref = [], None
    for n_jobs in (1, 2, 1, 2):
        est = RankSVM(
            C=1.0, target="loss", rescaling="slack", tol=1e-12, max_iter=iters, n_jobs=n_jobs
        )
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, loss)
        t = time.perf_counter() - t
        ref = est.coef_ if ref is None else ref
        fits.append(
            {
                "n_jobs": n_jobs,
                "fit_seconds": t,
                "t_oracle": float(sum(h["t_oracle"] for h in est.history_)),
                "iterations": est.n_iter_,
                "bit_identical": bool(np.array_equal(ref, est.coef_)),
                "loadavg": os.getloadavg(),
            }
        )
    return {"n": n, "d": d, "prepare": prepare, "levels": g.n_levels, "oracle": oracle, "fit": fits}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mat", default=str(OCR))
    ap.add_argument(
        "--sections",
        nargs="+",
        default=["cores", "ssvm_oracle", "ssvm_fit", "chain_oracle", "structboost", "ranking"],
    )
    ap.add_argument("--rank-n", type=int, default=10**7)
    ap.add_argument("--rank-d", type=int, default=8)
    ap.add_argument("--rank-repeat", type=int, default=3)
    ap.add_argument("--rank-iter", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--replicate", type=int, default=4)
    ap.add_argument("--ssvm-iter", type=int, default=25)
    ap.add_argument("--sb-iter", type=int, default=10)
    ap.add_argument(
        "--runs",
        type=int,
        default=1,
        help="run the sections (but cores) this many times, one after the other; the "
        "result holds every run (runs[i]) and the 2-thread speed-ups of each (speedups)",
    )
    ap.add_argument("--out", default="benchmarks/results/scaleout_threads.json")
    args = ap.parse_args(argv)
    Xs, ys, _Xl, _yl, Xr, yr = ocr_folds(args.mat, args.replicate)
    res = {
        "cpus": os.cpu_count(),
        "replicate": args.replicate,
        "env": {
            k: os.environ.get(k)
            for k in (
                "OPENBLAS_NUM_THREADS",
                "OMP_NUM_THREADS",
                "NUMBA_NUM_THREADS",
                "OMP_WAIT_POLICY",
            )
        },
    }
    runners = {
        "cores": lambda: cores_section([1, 2]),
        "ssvm_oracle": lambda: ssvm_oracle_section(Xr, yr, args.repeat),
        "ssvm_fit": lambda: ssvm_fit_section(Xr, yr, args.ssvm_iter),
        "chain_oracle": lambda: chain_oracle_section(Xs, ys, args.repeat),
        "structboost": lambda: structboost_section(Xs, ys, args.sb_iter),
        "ranking": lambda: ranking_section(
            args.rank_n, args.rank_d, args.rank_repeat, args.rank_iter
        ),
    }
    if args.runs == 1:
        run_sections(args.sections, runners, res)
    else:
        if "cores" in args.sections:
            run_sections(["cores"], runners, res)
        rest = [s for s in args.sections if s != "cores"]
        res["runs"] = [run_sections(rest, runners, {}) for _ in range(args.runs)]
    res["speedups"] = speedups(res.get("runs", [res]))
    print("wrote", write_result(args.out, res))


def speedups(runs) -> dict:
    """Per section, the 1-thread / 2-thread time of every (1, 2) pair of every run, in
    run order (the figures docs quote as ranges)."""
    out: dict[str, list[float]] = {}

    def pairs(rows, key, jobs="n_jobs", one=(None, 1), label=None):
        for a, b in zip(rows[::2], rows[1::2], strict=False):
            if a[jobs] in one and b[jobs] == 2:
                out.setdefault(label, []).append(a[key] / b[key])

    for r in runs:
        if "ssvm_oracle" in r:
            pairs(r["ssvm_oracle"]["rows"], "sec_per_call", label="ssvm_oracle")
        if "chain_oracle" in r:
            for beta in (1.0, 30.0):
                rows = [x for x in r["chain_oracle"]["rows"] if x["beta"] == beta]
                pairs(rows, "sec_per_call", jobs="threads", label=f"chain_oracle_beta{beta:g}")
        if "structboost" in r:
            pairs(r["structboost"]["rows"], "fit_seconds", label="structboost_fit")
        if "ssvm_fit" in r:
            pairs(r["ssvm_fit"]["rows"], "fit_seconds", label="ssvm_fit")
        if "ranking" in r:
            pairs(r["ranking"]["fit"], "fit_seconds", label="ranksvm_fit")
            for resc in ("margin", "slack"):
                rows = [x for x in r["ranking"]["oracle"] if x["rescaling"] == resc]
                pairs(rows, "sec_per_call", label=f"ranking_oracle_{resc}")
    return out


if __name__ == "__main__":
    main()
