"""Scale-out (issue 17): the sharded oracle and the blocked stump search at 1, 2, 4 workers.

On the OCR chain (Taskar et al. 2003; ``load_ocr``):

1. ``oracle``: seconds per loss-augmented oracle call (1-slack plane included) on the
   large fold (6251 words / 47535 letters used as training set; ``--replicate R``
   stacks R copies of it), for the single-process
   batch path (``n_jobs=None``), the sharded oracle at n_jobs = 1, 2, 4 (loky processes)
   and on a dask.distributed LocalCluster of 2 processes; bytes moved per call;
2. ``ssvm``: StructSVM fits on the large fold with a fixed number of iterations (tol=0,
   so every run does the same work; integer n_jobs give bit-identical models);
3. ``stumps``: one stump search (27 weight columns) over the chain's weak inputs of the
   large fold, serial vs blocked at 1, 2, 4 workers;
4. ``flat``: StructBoostClassifier on the letters of the large fold as independent
   samples (47535 x 129, 26 classes; the stump search dominates), fixed iterations;
   ``structboost``: StructBoost chain fits on the standard fold (626 training words),
   fixed iterations, n_jobs None / 1 / 2 / 4 (the 1-slack LP master dominates);
5. ``accuracy``: test letter error of the SSVM chain (n-slack, C = 62.6, tol 1e-3) and
   of the StructBoost chain on the standard 626 / 6251 split.

Every section records ``os.getloadavg()`` before and after it: the machine is shared.
``cores`` measures how many cores were really free (the same pure-CPU task in 1, 2, 4
processes at once).

Usage (from the repository root):
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_scaleout.py
        [--mat ../shared/data/sequence_labeling/ocr_taskar/ocr_taskar.mat]
        [--sections oracle ssvm stumps structboost accuracy] [--workers 1 2 4]
        [--sb-iter 150] [--sb-time 300] [--out benchmarks/results/scaleout.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import time
import warnings

import numpy as np

from _common import DEFAULT_DATA, run_sections, write_result
from maxmargin import StructBoost, StructSVM
from maxmargin.datasets.ocr import load_ocr
from maxmargin.solvers.parallel import ShardedOracle
from maxmargin.solvers.parallel_weak import BlockedStumpSearch
from maxmargin.tasks.chain import ChainTask
from maxmargin.weak import DecisionStump

OCR = DEFAULT_DATA / "sequence_labeling/ocr_taskar/ocr_taskar.mat"


def _median_time(fn, repeat):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), [round(x, 4) for x in ts]


def _dask_cluster(n):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,
    )
    return cluster, Client(cluster)


def _busy(seconds_hint):
    """A fixed amount of pure-CPU work (no memory traffic, no GIL)."""
    t = time.perf_counter()
    x = 0.0
    for k in range(int(seconds_hint * 2e7)):
        x += (k % 7) * 1e-9
    return time.perf_counter() - t


def cores_section(workers):
    """How many cores were really free: the same CPU-bound task once in one process and
    once per worker in n processes at the same time; free cores ~= n t_1 / t_n."""
    from joblib import Parallel, delayed

    rows = []
    t1 = None
    for n in workers:
        with Parallel(n_jobs=n, batch_size=1) as par:
            par(delayed(_busy)(0.05) for _ in range(n))  # start the workers
            t = time.perf_counter()
            par(delayed(_busy)(1.0) for _ in range(n))
            t = time.perf_counter() - t
        t1 = t if n == 1 else t1
        rows.append({"processes": n, "seconds": t, "effective_cores": n * t1 / t})
    return {"rows": rows}


def oracle_section(X, y, workers, repeat):
    import joblib

    model = ChainTask().bind(X, y).linear_model()
    w = np.random.default_rng(0).normal(size=model.dim) * 0.01
    rows = []

    def batch():
        labels, _, _ = model.loss_augmented(w)
        model.plane(labels, np.ones(model.n_samples))

    model.loss_augmented(w)
    t, ts = _median_time(batch, repeat)
    rows.append({"path": "batch (n_jobs=None)", "sec_per_call": t, "times": ts})

    def sharded(n_jobs, label):
        with ShardedOracle(model, n_jobs=n_jobs) as orc:
            orc.run(w, plane=True)  # warm-up: workers start, shards placed / loaded
            sent0, recv0 = orc.bytes_sent, orc.bytes_received
            t, ts = _median_time(lambda: orc.run(w, plane=True), repeat)
            rows.append(
                {
                    "path": label,
                    "n_jobs": n_jobs,
                    "sec_per_call": t,
                    "times": ts,
                    "n_shards": orc.n_shards,
                    "bytes_placed_once": orc.bytes_placed,
                    "bytes_sent_per_call": (orc.bytes_sent - sent0) / repeat,
                    "bytes_received_per_call": (orc.bytes_received - recv0) / repeat,
                }
            )

    for n in workers:
        sharded(n, f"sharded, loky n_jobs={n}")
    cluster, client = _dask_cluster(2)
    try:
        with joblib.parallel_config(backend="dask"):
            sharded(2, "sharded, dask LocalCluster 2 processes")
    finally:
        client.close()
        cluster.close()
    base = next(r["sec_per_call"] for r in rows if r.get("n_jobs") == 1)
    for r in rows:
        r["speedup_vs_sharded_1"] = base / r["sec_per_call"]
    return {"n_words": len(y), "n_letters": int(model.n_positions), "rows": rows}


def ssvm_section(X, y, workers, iters):
    import joblib

    rows = []
    ref = None

    def fit(n_jobs, label):
        nonlocal ref
        est = StructSVM(
            task=ChainTask(), C=62.6, solver="1-slack", tol=0.0, max_iter=iters, n_jobs=n_jobs
        )
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        t = time.perf_counter() - t
        t_or = float(sum(h["t_oracle"] for h in est.history_))
        same = None
        if n_jobs is not None:
            if ref is None:
                ref = est.coef_
            same = bool(np.array_equal(ref, est.coef_))
        rows.append(
            {
                "path": label,
                "n_jobs": n_jobs,
                "fit_seconds": t,
                "t_oracle": t_or,
                "iterations": est.n_iter_,
                "objective": est.objective_,
                "bit_identical_to_n_jobs_1": same,
            }
        )

    fit(None, "n_jobs=None")
    for n in workers:
        fit(n, f"loky n_jobs={n}")
    cluster, client = _dask_cluster(2)
    try:
        with joblib.parallel_config(backend="dask"):
            fit(2, "dask LocalCluster 2 processes")
    finally:
        client.close()
        cluster.close()
    base = next(r["fit_seconds"] for r in rows if r["n_jobs"] == 1)
    for r in rows:
        r["speedup_vs_n_jobs_1"] = base / r["fit_seconds"]
    return {"solver": "1-slack", "C": 62.6, "max_iter": iters, "rows": rows}


def stumps_section(X, y, workers, repeat):
    task = ChainTask().bind(X, y)
    Z = task.weak_inputs()
    weights = {
        "A dense (random normal)": np.random.default_rng(1).normal(size=(Z.shape[0], 27)),
        # the signed weights of the first chain plane: non-zero on the violators' rows
        "A of a chain plane (sparse)": task.weak_weights(task.initial_cut(None).pairs),
    }
    weak = DecisionStump()
    prep = weak.prepare(Z)
    out = {}
    for name, A in weights.items():
        rows = []
        t, ts = _median_time(lambda A=A: weak.best(prep, A), repeat)
        rows.append(
            {"path": "DecisionStump (serial, 1 numba thread)", "sec_per_search": t, "times": ts}
        )
        for n in workers:
            with BlockedStumpSearch(weak, n_jobs=n) as blocked:
                bp = blocked.prepare(Z)
                blocked.best(bp, A)  # warm-up: blocks coded on the workers
                s0, r0 = blocked.bytes_sent, blocked.bytes_received
                t, ts = _median_time(lambda b=blocked, p=bp, A=A: b.best(p, A), repeat)
                rows.append(
                    {
                        "path": f"blocked, loky n_jobs={n}",
                        "n_jobs": n,
                        "sec_per_search": t,
                        "times": ts,
                        "bytes_sent_per_call": (blocked.bytes_sent - s0) / repeat,
                        "bytes_received_per_call": (blocked.bytes_received - r0) / repeat,
                    }
                )
        base = next(r["sec_per_search"] for r in rows if r.get("n_jobs") == 1)
        for r in rows:
            r["speedup_vs_blocked_1"] = base / r["sec_per_search"]
        out[name] = {"nnz_A": int(np.count_nonzero(A)), "rows": rows}
    return {"weak_inputs": list(Z.shape), "nnz": int(Z.nnz), "slots": task.n_slots, **out}


def structboost_section(X, y, workers, iters):
    rows = []
    ref = None
    for n in [None, *workers]:
        est = StructBoost(task=ChainTask(), C=62.6, max_iter=iters, random_state=0, n_jobs=n)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        t = time.perf_counter() - t
        h = est.history_
        same = None
        if ref is None:
            ref = est.slot_weights_
        else:
            same = bool(np.array_equal(ref, est.slot_weights_))
        rows.append(
            {
                "n_jobs": n,
                "fit_seconds": t,
                "iterations": est.n_iter_,
                "t_weak": float(sum(r["t_weak"] for r in h)),
                "t_master": float(sum(r["t_master"] for r in h)),
                "t_oracle": float(sum(r["t_oracle"] for r in h)),
                "bit_identical_to_serial": same,
            }
        )
    return {"C": 62.6, "max_iter": iters, "rows": rows}


def flat_section(X, y, workers, iters):
    """StructBoostClassifier on the letters as independent samples (weak-search bound)."""
    from maxmargin import StructBoostClassifier

    Xf, yf = np.vstack(X), np.concatenate(y)
    rows = []
    ref = None
    for n in [None, *workers]:
        est = StructBoostClassifier(C=100.0, max_iter=iters, random_state=0, n_jobs=n)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(Xf, yf)
        t = time.perf_counter() - t
        h = est.history_
        same = None
        if ref is None:
            ref = est.slot_weights_
        else:
            same = bool(np.array_equal(ref, est.slot_weights_))
        rows.append(
            {
                "n_jobs": n,
                "fit_seconds": t,
                "iterations": est.n_iter_,
                "t_weak": float(sum(r["t_weak"] for r in h)),
                "t_master": float(sum(r["t_master"] for r in h)),
                "bit_identical_to_serial": same,
            }
        )
    return {"samples": list(Xf.shape), "classes": 26, "max_iter": iters, "rows": rows}


def accuracy_section(X, y, Xt, yt, sb_iter, sb_time):
    out = []
    for name, est in [
        (
            "StructSVM n-slack",
            StructSVM(task=ChainTask(), C=62.6, solver="n-slack", tol=1e-3, random_state=0),
        ),
        (
            "StructBoost (stumps)",
            StructBoost(
                task=ChainTask(), C=62.6, max_iter=sb_iter, max_time=sb_time, random_state=0
            ),
        ),
    ]:
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        t = time.perf_counter() - t
        err = est.task_.hamming(yt, est.predict(Xt))
        rec = {
            "learner": name,
            "fit_seconds": t,
            "test_letter_error": err,
            "iterations": est.n_iter_,
            "gap": est.history_[-1]["gap"],
        }
        if hasattr(est, "hypotheses_"):
            rec["n_weak"] = len(est.hypotheses_)
        out.append(rec)
    return out


def ocr_folds(mat, replicate: int):
    """OCR's standard training fold (626 words), its large fold (6251 words) and the
    large fold stacked ``replicate`` times: ``(Xs, ys, Xl, yl, Xr, yr)``."""
    Xs, ys = load_ocr(mat, "train")
    Xl, yl = load_ocr(mat, "test")
    return Xs, ys, Xl, yl, Xl * replicate, yl * replicate


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mat", default=str(OCR))
    ap.add_argument(
        "--sections",
        nargs="+",
        default=["cores", "oracle", "ssvm", "stumps", "structboost", "accuracy"],
    )
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--replicate",
        type=int,
        default=1,
        help="copies of the large fold for the oracle / ssvm / stumps sections",
    )
    ap.add_argument("--ssvm-iter", type=int, default=40)
    ap.add_argument("--sb-bench-iter", type=int, default=5)
    ap.add_argument("--sb-iter", type=int, default=150)
    ap.add_argument("--sb-time", type=float, default=300.0)
    ap.add_argument("--flat-iter", type=int, default=10)
    ap.add_argument("--out", default="benchmarks/results/scaleout.json")
    args = ap.parse_args(argv)
    Xs, ys, Xl, yl, Xr, yr = ocr_folds(args.mat, args.replicate)
    res = {"cpus": os.cpu_count(), "workers": args.workers, "replicate": args.replicate}
    runners = {
        "cores": lambda: cores_section(args.workers),
        "oracle": lambda: oracle_section(Xr, yr, args.workers, args.repeat),
        "ssvm": lambda: ssvm_section(Xr, yr, args.workers, args.ssvm_iter),
        "stumps": lambda: stumps_section(Xr, yr, args.workers, args.repeat),
        "structboost": lambda: structboost_section(Xs, ys, args.workers, args.sb_bench_iter),
        "accuracy": lambda: {"rows": accuracy_section(Xs, ys, Xl, yl, args.sb_iter, args.sb_time)},
        "flat": lambda: flat_section(Xl, yl, args.workers, args.flat_iter),
    }
    run_sections(args.sections, runners, res)
    path = write_result(args.out, res)
    print("wrote", path)


if __name__ == "__main__":
    main()
