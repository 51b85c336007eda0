"""StructBoost Table 1 (seed 000, Sec. 4.1): AUC maximisation, 1-slack against m-slack.

Protocol of Sec. 4.1: on UCI multi-class data sets one class is the positive class and all
the others are negative (imbalanced binary data); here the class with the smallest label
value (``np.unique(y)[0]``) is positive and is recorded in the results.  Every data set
(train and test files pooled where both exist) is split at random 50% train / 25%
validation / 25% test, stratified on the original class and seeded by the repeat index
(the split of benchmarks/bench_multiclass_table2.py); StructBoostRanker runs 200
column-generation iterations with decision stumps and the cutting-plane tolerance
eps_cp = 0.001; C is chosen on validation AUC from 6 values from 10 to 1000; 5 repeats,
mean and standard deviation of the fit time (of the model with the chosen C; the time over
the whole C grid is recorded too), training AUC and test AUC, for both formulations.

The paper marks m-slack "-" where it did not converge within a memory and time limit (dna,
segment, satimage).  Here m-slack is skipped when the training split has more than
--max-pairs-m-slack (positive, negative) pairs, and every m-slack fit is stopped after
--max-time-m-slack seconds; time-limited fits are recorded and marked in the table.

--figure also draws the paper's Fig. 3 (objective and cumulative time against the iteration,
1-slack and m-slack, at one C) for the first two data sets of the run, from separate fits at
--figure-C on the split of repeat 0.

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_auc_table1.py [--data-dir ../shared/data]
        [--datasets wine glass ...] [--repeats 5] [--max-iter 200]
        [--C 10 25 63 158 398 1000] [--formulations 1-slack m-slack] [--eps-cp 0.001]
        [--max-time-m-slack 1800] [--max-pairs-m-slack 1000000]
        [--figure] [--figure-C 100]
Writes benchmarks/results/auc_table1.json (after every repeat, so partial runs are kept),
prints a markdown table and, with --figure, writes docs/img/auc_objective_time.png.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _common import DEFAULT_DATA, ROOT, load_multiclass, warm_up, write_result
from bench_multiclass_table2 import split
from maxmargin import StructBoostRanker
from maxmargin.metrics import auc

FORMULATIONS = ("m-slack", "1-slack")  # the paper's row order

# Table 1 of the paper: (time s, AUC train, AUC test), each (mean, std); None = "-"
PAPER = {
    "wine": {
        "m-slack": ((13, 1), (1.000, 0.000), (0.994, 0.005)),
        "1-slack": ((3, 1), (1.000, 0.000), (0.994, 0.006)),
    },
    "glass": {
        "m-slack": ((20, 1), (0.967, 0.011), (0.849, 0.028)),
        "1-slack": ((6, 1), (0.955, 0.030), (0.844, 0.039)),
    },
    "svmguide2": {
        "m-slack": ((332, 6), (0.988, 0.003), (0.905, 0.036)),
        "1-slack": ((106, 8), (0.988, 0.003), (0.905, 0.036)),
    },
    "svmguide4": {
        "m-slack": ((564, 79), (1.000, 0.000), (0.982, 0.005)),
        "1-slack": ((106, 13), (1.000, 0.000), (0.982, 0.005)),
    },
    "vowel": {
        "m-slack": ((4051, 116), (0.999, 0.001), (0.968, 0.013)),
        "1-slack": ((952, 139), (0.999, 0.001), (0.967, 0.013)),
    },
    "dna": {
        "m-slack": None,
        "1-slack": ((1598, 643), (0.998, 0.000), (0.992, 0.003)),
    },
    "segment": {
        "m-slack": None,
        "1-slack": ((475, 42), (1.000, 0.000), (0.999, 0.001)),
    },
    "satimage": {
        "m-slack": None,
        "1-slack": ((37769, 6331), (0.999, 0.000), (0.997, 0.002)),
    },
}


def load(data_dir: Path, name: str):
    """All labelled rows of a multi-class data set (train and test files pooled)."""
    return load_multiclass(data_dir, name)


def n_pairs(yb) -> int:
    """(positive, negative) pairs: the m-slack constraints of the AUC problem."""
    p = int(np.count_nonzero(yb > 0))
    return p * (len(yb) - p)


def make_model(C, max_iter, formulation, eps_cp, max_time, seed):
    return StructBoostRanker(
        C=C,
        max_iter=max_iter,
        weak_learner="stump",
        formulation=formulation,
        eps_cp=eps_cp,
        max_time=max_time,
        random_state=seed,
    )


def time_limited(model, max_iter, max_time) -> bool:
    """Stopped by max_time: total time at the limit, or fewer iterations without converging."""
    if max_time is None:
        return False
    h = model.history_
    if h and h[-1]["t_total"] >= max_time:
        return True
    return model.n_iter_ < max_iter and not getattr(model, "converged_", False)


def run_formulation(Xtr, ytr, Xva, yva, Xte, yte, Cs, formulation, args, seed):
    """Fit every C, choose on validation AUC (first best, i.e. the smallest C on ties)."""
    max_time = args.max_time_m_slack if formulation == "m-slack" else args.max_time_1_slack
    best = None
    grid = []
    t_all = 0.0
    warm_up(make_model(Cs[0], 2, formulation, args.eps_cp, None, seed), Xtr, ytr)
    for C in Cs:
        model = make_model(C, args.max_iter, formulation, args.eps_cp, max_time, seed)
        t = time.perf_counter()
        model.fit(Xtr, ytr)
        dt = time.perf_counter() - t
        t_all += dt
        v = auc(yva, model.decision_function(Xva))
        limited = time_limited(model, args.max_iter, max_time)
        grid.append(
            {
                "C": C,
                "val_auc": v,
                "fit_s": dt,
                "n_iter": model.n_iter_,
                "time_limited": limited,
            }
        )
        if best is None or v > best[0]:
            best = (v, C, model, dt, limited)
    v, C, model, dt, limited = best
    h = model.history_
    return {
        "train_auc": auc(ytr, model.decision_function(Xtr)),
        "val_auc": v,
        "test_auc": auc(yte, model.decision_function(Xte)),
        "C": C,
        "fit_s": dt,
        "fit_s_all_C": t_all,
        "time_limited": limited,
        "any_C_time_limited": any(g["time_limited"] for g in grid),
        "objective": float(model.objective_),
        "n_iter": model.n_iter_,
        "n_stumps": len(model.hypotheses_),
        "n_pairs": n_pairs(ytr),
        "t_weak": sum(r["t_weak"] for r in h),
        "t_master": sum(r["t_master"] for r in h),
        "t_oracle": sum(r["t_oracle"] for r in h),
        "n_cp": sum(r["n_cp"] for r in h),
        "n_planes": h[-1]["n_planes"] if h else 0,
        "grid": grid,
    }


def binary_split(X, y, positive, seed):
    """The stratified 50/25/25 split of the multi-class data, then positive-vs-rest labels."""
    Xtr, ytr, Xva, yva, Xte, yte = split(X, y, seed=seed)
    return tuple(
        a if i % 2 == 0 else (a == positive).astype(float)
        for i, a in enumerate((Xtr, ytr, Xva, yva, Xte, yte))
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--datasets", nargs="+", default=list(PAPER))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--C", type=float, nargs="+", default=[10, 25, 63, 158, 398, 1000])
    ap.add_argument(
        "--formulations", nargs="+", choices=FORMULATIONS, default=["1-slack", "m-slack"]
    )
    ap.add_argument("--eps-cp", type=float, default=0.001)
    ap.add_argument(
        "--max-time-m-slack", type=float, default=1800.0, help="seconds per m-slack fit"
    )
    ap.add_argument("--max-time-1-slack", type=float, default=None, help="seconds per 1-slack fit")
    ap.add_argument(
        "--max-pairs-m-slack",
        type=int,
        default=1_000_000,
        help="skip m-slack when the training split has more (positive, negative) pairs",
    )
    ap.add_argument("--figure", action="store_true", help="also draw the paper's Fig. 3")
    ap.add_argument("--figure-C", type=float, default=100.0)
    ap.add_argument(
        "--figure-out", type=Path, default=ROOT / "docs" / "img" / "auc_objective_time.png"
    )
    ap.add_argument("--out", default="benchmarks/results/auc_table1.json")
    args = ap.parse_args(argv)
    unknown = set(args.datasets) - set(PAPER)
    if unknown:
        ap.error(f"unknown data sets {sorted(unknown)}; choose from {list(PAPER)}")

    results = {
        "protocol": vars(args)
        | {
            "data_dir": str(args.data_dir),
            "figure_out": str(args.figure_out),
            "positive_class": "np.unique(y)[0] (smallest label), all other classes negative",
        },
        "datasets": {},
    }

    def save():
        write_result(args.out, results)

    if args.figure:
        results["figure"] = figure_fits(args)
        save()
        plot(results["figure"], args.figure_out)
        print(f"wrote {args.figure_out}", flush=True)

    for name in args.datasets if args.repeats > 0 else []:
        X, y = load(args.data_dir, name)
        classes, counts = np.unique(y, return_counts=True)
        positive = classes[0]
        entry = {
            "n": len(y),
            "d": X.shape[1],
            "K": len(classes),
            "class_counts": {str(c): int(k) for c, k in zip(classes, counts)},
            "positive_class": float(positive),
            "n_positive": int(counts[0]),
            "n_pairs_train": [],
            "formulations": {f: {"runs": []} for f in args.formulations},
        }
        results["datasets"][name] = entry
        for rep in range(args.repeats):
            parts = binary_split(X, y, positive, rep)
            pairs = n_pairs(parts[1])
            entry["n_pairs_train"].append(pairs)
            msg = []
            for f in args.formulations:
                fe = entry["formulations"][f]
                if f == "m-slack" and pairs > args.max_pairs_m_slack:
                    fe["skipped"] = (
                        f"{pairs} training pairs > --max-pairs-m-slack {args.max_pairs_m_slack}"
                    )
                    msg.append(f"{f} skipped ({pairs} pairs)")
                    continue
                r = run_formulation(*parts, args.C, f, args, rep)
                fe["runs"].append(r)
                msg.append(
                    f"{f} C={r['C']:g} train {r['train_auc']:.3f} test {r['test_auc']:.3f} "
                    f"fit {r['fit_s']:.1f}s (grid {r['fit_s_all_C']:.1f}s, "
                    f"{r['n_iter']} iters, {r['n_stumps']} stumps"
                    + (", TIME LIMIT" if r["time_limited"] else "")
                    + ")"
                )
            print(f"{name} rep {rep} ({pairs} pairs): " + "; ".join(msg), flush=True)
            save()
    print(table(results))


def figure_fits(args):
    """Histories of separate fits at --figure-C on the repeat-0 split, first two data sets."""
    out = {}
    for name in args.datasets[:2]:
        X, y = load(args.data_dir, name)
        parts = binary_split(X, y, np.unique(y)[0], 0)
        pairs = n_pairs(parts[1])
        out[name] = {"C": args.figure_C, "n_pairs": pairs}
        for f in args.formulations:
            if f == "m-slack" and pairs > args.max_pairs_m_slack:
                out[name][f] = None
                continue
            mt = args.max_time_m_slack if f == "m-slack" else args.max_time_1_slack
            model = make_model(args.figure_C, args.max_iter, f, args.eps_cp, mt, 0)
            model.fit(parts[0], parts[1])
            h = model.history_
            out[name][f] = {
                "objective": [r["objective"] for r in h],
                "t_total": [r["t_total"] for r in h],
                "time_limited": time_limited(model, args.max_iter, mt),
            }
            print(
                f"figure {name} {f}: objective {model.objective_:.4g}, "
                f"{model.n_iter_} iters, {h[-1]['t_total'] if h else 0:.1f}s",
                flush=True,
            )
    return out


def plot(fig_data, png: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(fig_data)
    fig, axes = plt.subplots(2, len(names), figsize=(5 * len(names), 7), squeeze=False)
    styles = {"1-slack": ("C0", "-"), "m-slack": ("C3", "--")}
    for j, name in enumerate(names):
        d = fig_data[name]
        for f, (color, ls) in styles.items():
            h = d.get(f)
            if not h:
                continue
            it = np.arange(1, len(h["objective"]) + 1)
            label = f + (" (time limit)" if h["time_limited"] else "")
            axes[0, j].plot(it, h["objective"], color=color, ls=ls, label=label)
            axes[1, j].plot(it, h["t_total"], color=color, ls=ls, label=label)
        axes[0, j].set_title(f"{name} (C = {d['C']:g})")
        axes[0, j].set_ylabel("objective")
        axes[1, j].set_ylabel("cumulative time (s)")
        axes[1, j].set_xlabel("column generation iteration")
        for ax in axes[:, j]:
            ax.grid(alpha=0.3)
            ax.legend()
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=90)
    plt.close(fig)


def _ms(a, fmt) -> str:
    a = np.asarray(a, dtype=float)
    return f"{a.mean():{fmt}} ± {a.std():{fmt}}"


def table(results) -> str:
    lines = [
        "| dataset | method | time (s) ours | time paper | AUC train ours | paper "
        "| AUC test ours | paper |",
        "|---" * 8 + "|",
    ]
    notes = []
    for name, d in results["datasets"].items():
        for f in FORMULATIONS:
            if f not in d["formulations"]:
                continue
            fe = d["formulations"][f]
            p = PAPER[name][f]
            if p:
                pt = f"{p[0][0]} ± {p[0][1]}"
                ptr, pte = (f"{m:.3f} ± {s:.3f}" for m, s in p[1:])
            else:
                pt = ptr = pte = "-"
            runs = fe["runs"]
            if not runs:
                why = fe.get("skipped", "not run")
                lines.append(f"| {name} | {f} | - | {pt} | - | {ptr} | - | {pte} |")
                notes.append(f"{name} {f}: {why}")
                continue
            t = _ms([r["fit_s"] for r in runs], ".1f")
            tg = _ms([r["fit_s_all_C"] for r in runs], ".0f")
            n_lim = sum(r["time_limited"] for r in runs)
            mark = " †" if n_lim else ""
            if n_lim:
                notes.append(
                    f"{name} {f}: {n_lim}/{len(runs)} chosen fits stopped by the time limit"
                )
            if len(runs) < results["protocol"]["repeats"]:
                notes.append(f"{name} {f}: {len(runs)} of the repeats done")
            lines.append(
                f"| {name} | {f} | {t} (grid {tg}){mark} | {pt} | "
                f"{_ms([r['train_auc'] for r in runs], '.3f')} | {ptr} | "
                f"{_ms([r['test_auc'] for r in runs], '.3f')} | {pte} |"
            )
    if notes:
        lines.append("")
        lines.extend(f"* {n}" for n in notes)
    return "\n".join(lines)


if __name__ == "__main__":
    main()
