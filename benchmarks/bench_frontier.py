"""The accuracy-time frontier (issue 28, benchmark 2): test error against fit time.

Methods, each fitted on the training part and scored on the test part of every set:

* StructBoost (``StructBoostClassifier``) with histogram stumps (``--depths 0``) and
  histogram trees of depth 2-6 (``hist_tree:D``), for every ``--iters`` (max_iter) and
  ``--C``, task sharing ``--sharing`` for trees (default per_class) and
  ``--stump-sharing`` for stumps (default shared, the estimator's default);
* MultiBoost-cw (``MultiBoostCW``, histogram stumps) for every ``--iters``;
* LightGBM with stumps (``max_depth=1``, learning rate 0.3) for every ``--iters``
  rounds, and with its defaults (100 rounds, 31 leaves);
* scikit-learn's ``HistGradientBoostingClassifier`` with its defaults.

Every fit is timed once (``--repeats`` for more, the fastest kept) after a warm-up that
compiles numba's kernels; all methods get ``--threads`` threads (default 1: the machine
is shared).  ``--time-budget`` is StructBoost's and MultiBoost's ``max_time`` per fit.

The goal checked at the end (issue 28): StructBoost with trees within 1 percentage point
of LightGBM-default test error at no more than 10x LightGBM-default fit time, on at
least 4 of the 6 sets.

Data: digits (scikit-learn, 70/30 stratified split, seed 0); satimage, pendigits
(official train / test files); usps (its 2007-row file), dna (both files pooled) and
the 26-class synthetic set (``make_classification``, 20,000 x 16) split 70/30
(stratified, seed 0).  One PNG per set in ``--img-dir`` and one JSON result.

Usage (a quick run):
    flock /tmp/maxmargin-cpu.lock .venv/bin/python benchmarks/bench_frontier.py \\
        --datasets digits dna --iters 100 300 --depths 0 2 3 --C 100 --time-budget 120
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import lightgbm as lgb
import numba
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from _common import (
    DEFAULT_DATA,
    load_digits_split,
    load_multiclass,
    read_result,
    synthetic26,
    write_result,
)
from maxmargin import MultiBoostCW, StructBoostClassifier

ALL = ["digits", "dna", "usps", "satimage", "pendigits", "synthetic26"]  # cheapest first


def load(data_dir: Path, name: str):
    if name == "digits":
        return load_digits_split(0)
    if name in ("satimage", "pendigits"):
        return load_multiclass(data_dir, name, split="official")
    if name == "synthetic26":
        X, y = synthetic26()
    else:
        X, y = load_multiclass(data_dir, name)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    return Xtr, ytr, Xte, yte


def timed(make, Xtr, ytr, repeats):
    best, est = np.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        e = make().fit(Xtr, ytr)
        dt = time.perf_counter() - t
        if dt < best:
            best, est = dt, e
    return est, best


def weak_name(depth: int) -> str:
    return "hist_stump" if depth == 0 else f"hist_tree:{depth}"


def configs(args, K):
    """(method, label, factory, extra) for every point of the grid."""
    out = []
    for depth in args.depths:
        for C in args.C:
            for it in args.iters:
                lab = f"{'stumps' if depth == 0 else f'depth {depth}'}, C={C:g}, {it} it"
                out.append(
                    (
                        "StructBoost stumps" if depth == 0 else f"StructBoost depth {depth}",
                        lab,
                        lambda depth=depth, C=C, it=it: StructBoostClassifier(
                            C=C,
                            max_iter=it,
                            weak_learner=weak_name(depth),
                            sharing=args.stump_sharing if depth == 0 else args.sharing,
                            max_time=args.time_budget,
                            random_state=0,
                        ),
                        {
                            "depth": depth,
                            "C": C,
                            "iters": it,
                            "sharing": args.stump_sharing if depth == 0 else args.sharing,
                        },
                    )
                )
    for it in args.iters:
        out.append(
            (
                "MultiBoost-cw stumps",
                f"{it} it",
                lambda it=it: MultiBoostCW(
                    max_iter=it, weak_learner="hist_stump", max_time=args.time_budget
                ),
                {"iters": it},
            )
        )
        out.append(
            (
                "LightGBM stumps",
                f"{it} rounds ({it * K} stumps)",
                lambda it=it: lgb.LGBMClassifier(
                    n_estimators=it,
                    max_depth=1,
                    num_leaves=2,
                    learning_rate=0.3,
                    n_jobs=args.threads,
                    verbose=-1,
                    random_state=0,
                ),
                {"iters": it},
            )
        )
    out.append(
        (
            "LightGBM default",
            "100 rounds, 31 leaves",
            lambda: lgb.LGBMClassifier(n_jobs=args.threads, verbose=-1, random_state=0),
            {},
        )
    )
    out.append(
        (
            "HistGradientBoosting default",
            "defaults",
            lambda: HistGradientBoostingClassifier(random_state=0),
            {},
        )
    )
    return out


def warm_up(args):
    """Compile numba's kernels (and load LightGBM) outside the timings."""
    Xw, yw, _, _ = load_digits_split(0)
    for depth in sorted(set(args.depths) | {0}):
        for sharing in ("shared", "per_class"):
            StructBoostClassifier(max_iter=3, weak_learner=weak_name(depth), sharing=sharing).fit(
                Xw[:300], yw[:300]
            )
    MultiBoostCW(max_iter=3, weak_learner="hist_stump").fit(Xw[:300], yw[:300])
    lgb.LGBMClassifier(n_estimators=2, verbose=-1, n_jobs=1).fit(Xw[:300], yw[:300])


def plot(name, rows, img_dir: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(7, 4.5))
    methods = sorted({r["method"] for r in rows}, key=lambda m: (not m.startswith("Struct"), m))
    markers = dict(zip(methods, "osD^v<>px*h+", strict=False))
    for m in methods:
        pts = sorted((r["fit_s"], 100 * r["test_error"]) for r in rows if r["method"] == m)
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, marker=markers[m], linestyle="-" if len(xs) > 1 else "", label=m)
    ref = [r for r in rows if r["method"] == "LightGBM default"]
    if ref:
        t0, e0 = ref[0]["fit_s"], 100 * ref[0]["test_error"]
        ax.axhline(e0 + 1.0, color="grey", linestyle=":", linewidth=1)
        ax.axvline(10 * t0, color="grey", linestyle=":", linewidth=1)
        ax.text(10 * t0, e0 + 1.0, " goal: +1 pp, 10x time", fontsize=7, color="grey", va="bottom")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("fit time (s, log scale)")
    ax.set_ylabel("test error (%)")
    ax.set_title(f"{name}: accuracy-time frontier")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    img_dir.mkdir(parents=True, exist_ok=True)
    path = img_dir / f"frontier_{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def goal(rows):
    """Per set: LightGBM default, and the best StructBoost-trees point within 10x its time."""
    ref = [r for r in rows if r["method"] == "LightGBM default"]
    if not ref:
        return None
    t0, e0 = ref[0]["fit_s"], ref[0]["test_error"]
    trees = [r for r in rows if r["method"].startswith("StructBoost depth")]
    inside = [r for r in trees if r["fit_s"] <= 10 * t0]
    best_in = min(inside, key=lambda r: r["test_error"], default=None)
    best_any = min(trees, key=lambda r: r["test_error"], default=None)
    return {
        "lightgbm_default_error": e0,
        "lightgbm_default_s": t0,
        "best_trees_within_10x": best_in
        and {k: best_in[k] for k in ("label", "fit_s", "test_error")},
        "best_trees_any_time": best_any
        and {k: best_any[k] for k in ("label", "fit_s", "test_error")},
        "met": bool(best_in is not None and best_in["test_error"] <= e0 + 0.01),
    }


def save(args, sets):
    keys = ("iters", "depths", "C", "sharing", "stump_sharing", "time_budget")
    grid = {k: getattr(args, k) for k in keys}
    met = [k for k, v in sets.items() if v["goal"] and v["goal"]["met"]]
    return write_result(
        args.out, {"grid": grid, "threads": args.threads, "sets": sets, "goal_met_on": met}
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(DEFAULT_DATA))
    ap.add_argument("--datasets", nargs="+", default=ALL)
    ap.add_argument("--iters", nargs="+", type=int, default=[100, 300, 1000, 2000])
    ap.add_argument("--depths", nargs="+", type=int, default=[0, 2, 3, 4], help="0: stumps")
    ap.add_argument("--C", nargs="+", type=float, default=[100.0, 1000.0])
    ap.add_argument("--sharing", default="per_class", choices=["shared", "per_class"])
    ap.add_argument("--stump-sharing", default="shared", choices=["shared", "per_class"])
    ap.add_argument("--time-budget", type=float, default=None, help="max_time per fit (s)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="only the methods whose name starts with one of these (e.g. 'LightGBM default')",
    )
    ap.add_argument("--img-dir", default="docs/img")
    ap.add_argument("--out", default="benchmarks/results/frontier.json")
    ap.add_argument(
        "--merge", action="store_true", help="add to --out: keep the points not redone here"
    )
    ap.add_argument("--replot", action="store_true", help="only redraw the plots of --out")
    args = ap.parse_args()
    if args.replot:
        for name, v in read_result(args.out).get("sets", {}).items():
            print(plot(name, v["rows"], Path(args.img_dir)))
        return
    numba.set_num_threads(args.threads)
    warm_up(args)
    old = read_result(args.out) if args.merge else {}
    sets = dict(old.get("sets", {}))
    with threadpool_limits(args.threads):
        for name in args.datasets:
            Xtr, ytr, Xte, yte = load(Path(args.data_dir), name)
            K = len(np.unique(ytr))
            rows = []
            for method, label, make, extra in configs(args, K):
                if args.methods and not any(method.startswith(m) for m in args.methods):
                    continue
                est, fit_s = timed(make, Xtr, ytr, args.repeats)
                row = {
                    "method": method,
                    "label": label,
                    **extra,
                    "fit_s": fit_s,
                    "test_error": float(np.mean(est.predict(Xte) != yte)),
                }
                if hasattr(est, "history_") and est.history_:
                    h = est.history_
                    row.update(
                        n_iter=int(est.n_iter_),
                        n_weak=len(est.hypotheses_),
                        t_weak=float(sum(r.get("t_weak", 0.0) for r in h)),
                        t_master=float(sum(r.get("t_master", 0.0) for r in h)),
                        gap=float(getattr(est, "gap_", np.nan)),
                    )
                rows.append(row)
                print(name, row, flush=True)
            if name in sets:  # --merge: keep the earlier points this run did not redo
                new = {(r["method"], r["label"]) for r in rows}
                rows = [
                    r for r in sets[name]["rows"] if (r["method"], r["label"]) not in new
                ] + rows
            img = plot(name, rows, Path(args.img_dir))
            sets[name] = {
                "n_train": len(ytr),
                "n_test": len(yte),
                "d": Xtr.shape[1],
                "classes": K,
                "rows": rows,
                "goal": goal(rows),
                "plot": str(img),
            }
            print(name, "goal", sets[name]["goal"], flush=True)
            path = save(args, sets)  # after every set: a long run leaves its finished sets
    print(f"wrote {path}")
    print(
        "| set | LightGBM default error (s) | best SB trees <= 10x time "
        "| best SB trees any time | met |"
    )
    print("|---|---|---|---|---|")
    for k, v in sets.items():
        g = v["goal"]
        if not g:
            continue
        bi, ba = g["best_trees_within_10x"], g["best_trees_any_time"]

        def fmt(b):
            return (
                "-"
                if b is None
                else f"{100 * b['test_error']:.2f} % in {b['fit_s']:.1f} s ({b['label']})"
            )

        print(
            f"| {k} | {100 * g['lightgbm_default_error']:.2f} % ({g['lightgbm_default_s']:.2f} s) "
            f"| {fmt(bi)} | {fmt(ba)} | {'yes' if g['met'] else 'no'} |"
        )
    met = [k for k, v in sets.items() if v["goal"] and v["goal"]["met"]]
    print(f"goal met on {len(met)} of {len(sets)} sets: {met}")


if __name__ == "__main__":
    main()
