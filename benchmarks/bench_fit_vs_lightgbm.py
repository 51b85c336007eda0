"""Full fit at equal stump budget: StructBoost vs LightGBM stumps, with StructBoost's time split.

StructBoost multi-class with shared stumps adds one stump (with one weight per class) per
column-generation iteration; LightGBM's multi-class boosting with ``max_depth=1`` adds one
stump per class per round.  At equal budget LightGBM gets ``ceil(n_stumps / n_classes)``
rounds for the ``n_stumps`` distinct stumps StructBoost holds.  Both run on ``--threads``
threads (numba's kernels / LightGBM ``n_jobs``; default 1, the issue-28 protocol).  Each
fit is repeated and the fastest time kept (the machine may be shared); the test error and
the objective come from the first repeat (all repeats are identical fits).

Reported per configuration ``weak:master:certify[:inner_tol[:columns_per_iter]]`` and
iteration count: fit seconds and
their ratio to LightGBM's, test error of both, StructBoost's objective and certified
duality gap, and its time split: weak-learner search (t_weak), master (t_master;
includes t_polish, the final certificate -- continuation or exact LP) and the oracle
inside the master (t_oracle); the master's L-BFGS steps over the fit (inner_steps); and
``doubling``: the fit time at this iteration count over the time at the previous
(smaller) count of the same configuration.  ``inner_tol`` ``adaptive`` is the inexact
master (each iteration's solve to a tolerance following the outer gap, one solve to
``tol`` before the certificate); configurations listed together run one after the other
in the same process, per set and iteration count (a paired comparison).  The fifth
field, ``columns_per_iter`` (default 1), is how many weak classifiers may enter per
iteration (one master solve for all; ``max_iter`` still counts weak learners).

Data: satimage, pendigits and dna use their official train/test files; usps (only its
2007-row test file is available) and scikit-learn's digits are split 70/30 (stratified,
seed 0); ``syn26`` is ``make_classification(n_samples=20000, n_features=16,
n_informative=12, n_redundant=0, n_classes=26, n_clusters_per_class=1,
random_state=0)`` split 70/30 (stratified, seed 0): the issue's 26-class stand-in;
``syn26_20k`` is the same set with all 20,000 rows for training (the issue's 20,000-row,
1,000-iteration fit), so it has no test rows and no test error (``null``).

Usage: .venv/bin/python benchmarks/bench_fit_vs_lightgbm.py [--max-iter 100 200 500]
    [--C 100] [--datasets digits satimage pendigits usps dna syn26]
    [--configs auto:fast:gap stump:fast:gap hist_stump:fast:gap stump:fast:exact
               auto:fast:gap:adaptive auto:fast:gap:fixed:4]
    [--threads 1] [--repeats 3]
    [--data-dir ../shared/data] [--out benchmarks/results/fit_vs_lightgbm.json]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import lightgbm as lgb
import numba
import numpy as np
from sklearn.model_selection import train_test_split

from _common import DEFAULT_DATA, load_digits_split, load_multiclass, synthetic26, write_result
from maxmargin import StructBoostClassifier


def load(data_dir: Path, name: str):
    if name == "digits":
        return load_digits_split(0)
    if name == "syn26_20k":  # every row trains (the 20,000-row fit): no test rows
        X, y = synthetic26()
        return X, y, X[:0], y[:0]
    if name == "syn26":
        X, y = synthetic26()
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
        return Xtr, ytr, Xte, yte
    if name in ("satimage", "pendigits", "dna"):
        return load_multiclass(data_dir, name, split="official")
    X, y = load_multiclass(data_dir, name)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    return Xtr, ytr, Xte, yte


def test_error(clf, Xte, yte):
    return float(np.mean(clf.predict(Xte) != yte)) if len(yte) else None


def timed(fit, repeats):
    times, first = [], None
    for r in range(repeats):
        t = time.perf_counter()
        est = fit()
        times.append(time.perf_counter() - t)
        if r == 0:
            first = est
    return first, min(times), times


def run_structboost(
    Xtr, ytr, Xte, yte, weak, master, certify, max_iter, C, repeats, inner_tol="fixed", q=1
):
    clf, fit_s, times = timed(
        lambda: StructBoostClassifier(
            C=C,
            max_iter=max_iter,
            weak_learner=weak,
            master=master,
            certify=certify,
            inner_tol=inner_tol,
            columns_per_iter=q,
            random_state=0,
        ).fit(Xtr, ytr),
        repeats,
    )
    h = clf.history_
    return {
        "fit_s": fit_s,
        "fit_s_all": times,
        "test_error": test_error(clf, Xte, yte),
        "objective": float(clf.objective_),
        "gap": float(clf.gap_),
        "n_iter": clf.n_iter_,
        "converged": bool(clf.converged_),
        "n_stumps": len(clf.hypotheses_),
        "weak_learner_used": clf.weak_learner_,  # "auto" resolved
        "t_weak": float(sum(r["t_weak"] for r in h)),
        "t_master": float(sum(r["t_master"] for r in h)),
        "t_polish": float(sum(r["t_polish"] for r in h)),
        "t_oracle": float(sum(r["t_oracle"] for r in h)),
        "inner_steps": int(sum(r["n_cp"] for r in h)),  # the master's L-BFGS steps
    }


def run_lightgbm(Xtr, ytr, Xte, yte, n_stumps, n_classes, repeats, threads):
    rounds = max(1, int(np.ceil(n_stumps / n_classes)))
    clf, fit_s, times = timed(
        lambda: lgb.LGBMClassifier(
            n_estimators=rounds,
            max_depth=1,
            num_leaves=2,
            learning_rate=0.3,
            n_jobs=threads,
            verbose=-1,
            random_state=0,
        ).fit(Xtr, ytr),
        repeats,
    )
    return {
        "fit_s": fit_s,
        "fit_s_all": times,
        "test_error": test_error(clf, Xte, yte),
        "rounds": rounds,
        "n_stumps": rounds * n_classes,
    }


def fmt(err):
    return "-" if err is None else f"{err:.4f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(DEFAULT_DATA))
    ap.add_argument("--max-iter", type=int, nargs="+", default=[100, 200, 500])
    ap.add_argument("--C", type=float, default=100.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--datasets",
        nargs="+",
        default=["digits", "satimage", "pendigits", "usps", "dna", "syn26"],
    )
    # "auto": the estimator's default (exact stumps up to 5000 rows, binned above); an
    # optional fourth field is the fast master's inner_tol ("fixed", the default, or
    # "adaptive": the inexact master); an optional fifth is columns_per_iter (default 1)
    ap.add_argument("--configs", nargs="+", default=["auto:fast:gap"])
    ap.add_argument("--out", default="benchmarks/results/fit_vs_lightgbm.json")
    args = ap.parse_args()
    numba.set_num_threads(args.threads)
    # compile the numba kernels outside the timings
    Xw, yw, _, _ = load_digits_split(0)
    Xc = np.random.default_rng(0).standard_normal((400, 4))  # > 256 values: sorted path
    for certify in ("gap", "exact"):
        for weak in ("stump", "hist_stump"):
            StructBoostClassifier(max_iter=3, certify=certify, weak_learner=weak).fit(
                Xw[:200], yw[:200]
            )
            StructBoostClassifier(max_iter=3, certify=certify, weak_learner=weak).fit(Xc, yw[:400])
    rows = []
    for name in args.datasets:
        Xtr, ytr, Xte, yte = load(Path(args.data_dir), name)
        K = len(np.unique(ytr))
        for cfg in args.configs:
            weak, master, *rest = cfg.split(":")
            certify = rest[0] if rest else "gap"
            inner_tol = rest[1] if len(rest) > 1 else "fixed"
            q = int(rest[2]) if len(rest) > 2 else 1
            prev = None
            for max_iter in sorted(args.max_iter):
                sb = run_structboost(
                    Xtr, ytr, Xte, yte, weak, master, certify, max_iter, args.C, args.repeats,
                    inner_tol, q,
                )  # fmt: skip
                lg = run_lightgbm(Xtr, ytr, Xte, yte, sb["n_stumps"], K, args.repeats, args.threads)
                rows.append(
                    {
                        "data": name,
                        "n_train": len(ytr),
                        "d": Xtr.shape[1],
                        "classes": K,
                        "weak_learner": weak,
                        "master": master,
                        "certify": certify,
                        "inner_tol": inner_tol,
                        "columns_per_iter": q,
                        "max_iter": max_iter,
                        "structboost": sb,
                        "lightgbm": lg,
                        "time_ratio": sb["fit_s"] / lg["fit_s"],
                        "doubling": None if prev is None else sb["fit_s"] / prev,
                        "certificate_share": sb["t_polish"] / sb["fit_s"],
                    }
                )
                prev = sb["fit_s"]
                print(rows[-1], flush=True)
    path = write_result(
        args.out,
        {"max_iter": args.max_iter, "C": args.C, "threads": args.threads, "rows": rows},
    )
    print(f"wrote {path}")
    print(
        "| data | weak:master:certify | iters | SB fit s (weak / master / certificate) | "
        "SB stumps | objective (gap) | LightGBM fit s (rounds) | ratio | time vs previous "
        "iters | test error SB / LightGBM |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        sb, lg = r["structboost"], r["lightgbm"]
        dbl = "" if r["doubling"] is None else f"{r['doubling']:.2f}x"
        print(
            f"| {r['data']} | {r['weak_learner']}:{r['master']}:{r['certify']}"
            f"{'' if r['columns_per_iter'] == 1 else ':q' + str(r['columns_per_iter'])} | "
            f"{r['max_iter']} | {sb['fit_s']:.2f} "
            f"({sb['t_weak']:.2f} / {sb['t_master']:.2f} / {sb['t_polish']:.2f}) | "
            f"{sb['n_stumps']} | {sb['objective']:.3f} ({sb['gap']:.0e}) | "
            f"{lg['fit_s']:.3f} ({lg['rounds']}) | {r['time_ratio']:.0f}x | {dbl} | "
            f"{fmt(sb['test_error'])} / {fmt(lg['test_error'])} |"
        )


if __name__ == "__main__":
    main()
