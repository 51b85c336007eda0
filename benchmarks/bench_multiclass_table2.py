"""StructBoost Table 2 (seed 000, Sec. 4.2): multi-class test error with stumps, against
LightGBM and HistGradientBoosting at the same number of stumps.

Protocol of Sec. 4.2: every data set (train and test files pooled where both exist) is split
at random 50% train / 25% validation / 25% test; StructBoost runs a fixed number of
column-generation iterations (200 in the paper) with decision stumps; C is chosen on the
validation split from a grid (the paper: 6 values from 10 to 1000); test error of the chosen
model; repeated with different splits (5 in the paper), mean and standard deviation.

Peers at the same stump budget: StructBoost (sharing="shared") uses one stump per iteration
with one weight per class, so after T iterations it holds at most T distinct stumps.
LightGBM / HistGradientBoosting multi-class boosting grows one depth-1 tree per class per
round: "same stumps" gives them ceil(T / K) rounds; we also report T rounds (T * K stumps,
a budget K times larger) so the comparison is not one-sided.  Their learning rate is tuned
on the same validation split (0.05, 0.1, 0.3).

Time: every (data set, repeat) unit -- StructBoost at every C, then the peers -- runs in
one of ``--jobs`` processes (one thread each: numba, BLAS, OpenMP); the wall-clock time of
the run and, per unit, the StructBoost seconds at every C with their split (weak-learner
search, master, certificate) are recorded.  The result file is written after every unit;
``--resume`` keeps the units already in it and runs only the missing ones, so a long
protocol can run in pieces (each piece's wall time up to its last finished unit, its
units and the machine load are recorded under ``pieces``).

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_multiclass_table2.py [--data-dir ../shared/data]
        [--datasets glass vowel ...] [--repeats 5] [--max-iter 200] [--C 10 25 63 158 398 1000]
        [--master auto|fast|exact] [--formulation auto|1-slack|m-slack]
        [--weak-learner auto] [--jobs 2] [--resume]
Writes benchmarks/results/multiclass_table2.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

from _common import DEFAULT_DATA, load_multiclass, read_result, write_result
from maxmargin import StructBoostClassifier

# Table 2 of the paper, "StructBoost-stump" row: test error % (mean, std)
PAPER = {
    "glass": (35.8, 6.2),
    "svmguide2": (21.0, 3.9),
    "svmguide4": (20.1, 2.9),
    "vowel": (17.5, 2.2),
    "dna": (6.2, 0.7),
    "segment": (2.9, 0.7),
    "satimage": (12.1, 0.7),
    "usps": (6.9, 0.6),
    "pendigits": (3.9, 0.4),
    "mnist1000": (12.5, 0.4),
}


def split(X, y, seed):
    Xtr, Xrest, ytr, yrest = train_test_split(X, y, train_size=0.5, random_state=seed, stratify=y)
    Xva, Xte, yva, yte = train_test_split(
        Xrest, yrest, train_size=0.5, random_state=seed, stratify=yrest
    )
    return Xtr, ytr, Xva, yva, Xte, yte


def err(model, X, y) -> float:
    return float(np.mean(model.predict(X) != y))


def _split_times(clf) -> dict:
    h = clf.history_
    return {
        "t_weak": sum(r["t_weak"] for r in h),
        "t_master": sum(r["t_master"] for r in h),
        "t_polish": sum(r["t_polish"] for r in h),
    }


def run_structboost(
    Xtr, ytr, Xva, yva, Xte, yte, Cs, max_iter, master, formulation, seed, weak="auto"
):
    best = None
    t_all = 0.0
    per_C = []
    for C in Cs:
        clf = StructBoostClassifier(
            C=C,
            max_iter=max_iter,
            master=master,
            formulation=formulation,
            weak_learner=weak,
            random_state=seed,
        )
        t = time.perf_counter()
        clf.fit(Xtr, ytr)
        dt = time.perf_counter() - t
        t_all += dt
        v = err(clf, Xva, yva)
        per_C.append(
            {"C": C, "fit_s": dt, "val_error": v, "n_iter": clf.n_iter_, **_split_times(clf)}
        )
        if best is None or v < best[0]:
            best = (v, C, clf, dt)
    v, C, clf, dt = best
    h = clf.history_
    return {
        "weak_learner": clf.weak_learner_,
        "per_C": per_C,
        "test_error": err(clf, Xte, yte),
        "val_error": v,
        "C": C,
        "fit_s": dt,
        "fit_s_all_C": t_all,
        "n_stumps": len(clf.hypotheses_),
        "n_iter": clf.n_iter_,
        "objective": float(clf.objective_),
        "gap": float(clf.gap_),
        "t_weak": sum(r["t_weak"] for r in h),
        "t_master": sum(r["t_master"] for r in h),
        "t_polish": sum(r["t_polish"] for r in h),
        "t_oracle": sum(r["t_oracle"] for r in h),
    }


def run_gbm(kind, rounds, Xtr, ytr, Xva, yva, Xte, yte, seed):
    best = None
    for lr in (0.05, 0.1, 0.3):
        if kind == "lightgbm":
            import lightgbm as lgb

            model = lgb.LGBMClassifier(
                n_estimators=rounds,
                max_depth=1,
                num_leaves=2,
                learning_rate=lr,
                min_child_samples=1,
                random_state=seed,
                verbose=-1,
                n_jobs=1,
            )
        else:
            model = HistGradientBoostingClassifier(
                max_iter=rounds,
                max_depth=1,
                learning_rate=lr,
                early_stopping=False,
                min_samples_leaf=1,
                random_state=seed,
            )
        t = time.perf_counter()
        model.fit(Xtr, ytr)
        dt = time.perf_counter() - t
        v = err(model, Xva, yva)
        if best is None or v < best[0]:
            best = (v, lr, model, dt)
    v, lr, model, dt = best
    return {
        "test_error": err(model, Xte, yte),
        "val_error": v,
        "learning_rate": lr,
        "fit_s": dt,
        "rounds": rounds,
    }


def _one_thread():
    """Workers (and a serial run) on one thread: numba, BLAS and OpenMP (HistGB)."""
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(1)
    threadpool_limits(1)
    os.environ["OMP_NUM_THREADS"] = "1"


def run_unit(args, name, rep):
    """One repeat of one data set: StructBoost at every C, then the peers."""
    t0 = time.perf_counter()
    X, y = load_multiclass(args.data_dir, name)
    K = len(np.unique(y))
    parts = split(X, y, seed=rep)
    row = {
        "structboost": run_structboost(
            *parts, args.C, args.max_iter, args.master, args.formulation, rep, args.weak_learner
        )
    }
    t_peers = time.perf_counter()
    T = args.max_iter
    for kind in () if args.no_peers else ("lightgbm", "histgb"):
        row[f"{kind}_same_stumps"] = run_gbm(kind, math.ceil(T / K), *parts, rep)
        row[f"{kind}_T_rounds"] = run_gbm(kind, T, *parts, rep)
    row["peers_s"] = time.perf_counter() - t_peers
    row["unit_s"] = time.perf_counter() - t0
    return name, rep, (len(y), X.shape[1], K), row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--datasets", nargs="+", default=list(PAPER))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--C", type=float, nargs="+", default=[10, 25, 63, 158, 398, 1000])
    ap.add_argument("--master", default="auto")
    ap.add_argument("--formulation", default="auto")
    ap.add_argument("--weak-learner", default="auto")
    ap.add_argument("--jobs", type=int, default=1, help="processes for the (set, repeat) units")
    ap.add_argument(
        "--no-peers", action="store_true", help="StructBoost only (time the protocol proper)"
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help="keep --out's units and run only the missing ones (a protocol in pieces)",
    )
    ap.add_argument("--out", default="benchmarks/results/multiclass_table2.json")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    results = read_result(args.out) if args.resume else {}
    protocol = vars(args) | {"data_dir": str(args.data_dir)}
    for piece_only in ("resume", "jobs"):  # recorded per piece
        protocol.pop(piece_only)
    if results.get("protocol", {}).get("datasets"):
        protocol["datasets"] = list(
            dict.fromkeys(results["protocol"]["datasets"] + list(args.datasets))
        )
    results["protocol"] = protocol
    results.setdefault("datasets", {})
    results.setdefault("pieces", [])
    have = {(name, r.get("repeat")) for name, d in results["datasets"].items() for r in d["runs"]}
    units = [
        (name, rep)
        for name in args.datasets
        for rep in range(args.repeats)
        if (name, rep) not in have
    ]
    # the longest sets first, so the last unit does not run alone
    order = {n: i for i, n in enumerate(reversed(list(PAPER)))}
    units.sort(key=lambda u: (order.get(u[0], -1), u[1]))
    piece = {
        "datasets": list(args.datasets),
        "jobs": args.jobs,
        "units": [],
        "wall_s": 0.0,
        "structboost_s": 0.0,
        "peers_s": 0.0,
        "load_average_start": list(os.getloadavg()),
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
    }
    results["pieces"].append(piece)

    def record(unit):
        """Store one finished unit and write the file (a piece stopped by a timeout
        keeps every unit it finished; its wall time counts up to the last of them)."""
        name, rep, (n, d, K), row = unit
        entry = results["datasets"].setdefault(name, {"n": n, "d": d, "K": K, "runs": []})
        entry["runs"] = [r for r in entry["runs"] if r.get("repeat") != rep]
        entry["runs"].append({"repeat": rep, **row})
        entry["runs"].sort(key=lambda r: r.get("repeat", 0))
        piece["units"].append([name, rep])
        piece["wall_s"] = time.perf_counter() - t_start
        piece["structboost_s"] += row["structboost"]["fit_s_all_C"]
        piece["peers_s"] += row["peers_s"]
        piece["load_average_end"] = list(os.getloadavg())
        protocol["repeats"] = max(len(e["runs"]) for e in results["datasets"].values())
        results["structboost_protocol_seconds"] = sum(
            r["structboost"]["fit_s_all_C"] for e in results["datasets"].values() for r in e["runs"]
        )
        results["protocol_wall_seconds"] = sum(p["wall_s"] for p in results["pieces"])
        write_result(args.out, results)
        print(
            f"{name} rep {rep} ({piece['wall_s']:.0f} s): "
            + ", ".join(
                f"{k} {v['test_error']:.3f} ({v['fit_s']:.1f}s)"
                for k, v in row.items()
                if isinstance(v, dict)
            ),
            flush=True,
        )

    if args.jobs > 1 and units:  # spawned workers (OpenMP, numba's pool: no fork)
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.jobs, mp_context=ctx, initializer=_one_thread) as pool:
            futures = [pool.submit(run_unit, args, name, rep) for name, rep in units]
            for fut in as_completed(futures):
                record(fut.result())
    else:
        _one_thread()
        for name, rep in units:
            record(run_unit(args, name, rep))
    print(table(results))
    print(
        f"this run: {time.perf_counter() - t_start:.0f} s wall on {args.jobs} process(es), "
        f"{len(units)} units; StructBoost fits, whole protocol so far: "
        f"{results.get('structboost_protocol_seconds', 0):.0f} s (serial seconds); "
        f"wall time of the pieces: {results.get('protocol_wall_seconds', 0):.0f} s"
    )


def table(results) -> str:
    methods = [
        "structboost",
        "lightgbm_same_stumps",
        "histgb_same_stumps",
        "lightgbm_T_rounds",
        "histgb_T_rounds",
    ]
    lines = [
        "| data | n | K | paper StructBoost-stump | "
        + " | ".join(methods)
        + " | fit s (StructBoost / LightGBM same stumps) |",
        "|---" * (len(methods) + 5) + "|",
    ]
    for name, d in results["datasets"].items():
        cells = []
        for m in methods:
            if any(m not in r for r in d["runs"]):  # --no-peers
                cells.append("-")
                continue
            e = 100 * np.array([r[m]["test_error"] for r in d["runs"]])
            cells.append(f"{e.mean():.1f} ± {e.std():.1f}")
        tsb = np.mean([r["structboost"]["fit_s"] for r in d["runs"]])
        none = {"fit_s": np.nan}
        tlg = np.mean([r.get("lightgbm_same_stumps", none)["fit_s"] for r in d["runs"]])
        p = PAPER.get(name)
        lines.append(
            f"| {name} | {d['n']} | {d['K']} | "
            + (f"{p[0]} ± {p[1]}" if p else "-")
            + " | "
            + " | ".join(cells)
            + f" | {tsb:.1f} / {tlg:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
