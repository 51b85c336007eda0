"""Time of the most-violated-constraint oracle vs n (Blaschko et al., GCPR 2014).

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_ranking_oracle.py [--min-exp 3] [--max-exp 7]
        [--brute-max-exp 4] [--repeats 3] [--out benchmarks/results/ranking_oracle.json]
        [--plot docs/img/ranking_oracle.png]
    .venv/bin/python benchmarks/bench_ranking_oracle.py --memory 50000000  # peak RSS of a fit

Synthetic data: losses uniform on [0, 1) rounded to 1e-6 (some ties), scores
standard normal, complete preference graph.  Times are the best of ``repeats``
calls of ``PreferenceGraph.most_violated`` (includes sorting the scores); the
one-off preparation (sorting the losses, building the recursion tree) is
reported separately.  Writes benchmarks/results/ranking_oracle.json and
docs/img/ranking_oracle.png; ``--memory`` writes ranking_memory.json next to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from _common import ROOT, write_result
from maxmargin.inference.ranking import PreferenceGraph, brute_force_constraint


def best_of(f, repeats):
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def memory_run(n, d=6, iters=2):
    """Fit RankSVM for a few iterations on n samples and report peak RSS (GB)."""
    import warnings

    from maxmargin.learners.ranksvm import RankSVM

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    loss = np.round(rng.random(n), 6)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = RankSVM(C=1.0, target="loss", rescaling="slack", max_iter=iters).fit(X, loss)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    return {
        "n": n,
        "d": d,
        "iterations": m.n_iter_,
        "seconds": time.perf_counter() - t0,
        "oracle_seconds": [h["t_oracle"] for h in m.history_],
        "peak_rss_gb": rss,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-exp", type=int, default=3)
    ap.add_argument("--max-exp", type=int, default=7)
    ap.add_argument("--brute-max-exp", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--memory", type=int, default=0, help="run only the peak-RSS fit at this n")
    ap.add_argument("--out", default="benchmarks/results/ranking_oracle.json")
    ap.add_argument("--plot", default=str(ROOT / "docs" / "img" / "ranking_oracle.png"))
    args = ap.parse_args(argv)
    if args.memory:
        res = memory_run(args.memory)
        print(json.dumps(res))
        write_result(Path(args.out).with_name("ranking_memory.json"), res)
        return
    rng = np.random.default_rng(0)
    # compile outside the timings
    g = PreferenceGraph(rng.random(100))
    for r in ("margin", "slack"):
        g.most_violated(rng.normal(size=100), r, n_jobs=1)
        g.most_violated(rng.normal(size=100), r, n_jobs=2)
    rows = []
    for e in range(args.min_exp, args.max_exp + 1):
        n = 10**e
        loss = np.round(rng.random(n), 6)
        s = rng.normal(size=n)
        t0 = time.perf_counter()
        g = PreferenceGraph(loss)
        row = {"n": n, "prepare": time.perf_counter() - t0, "levels": g.n_levels}
        rep = args.repeats if n <= 10**6 else 1
        for r in ("slack", "margin"):
            for jobs, tag in ((1, "1core"), (2, "2threads")):
                row[f"{r}_{tag}"] = best_of(
                    lambda r=r, g=g, s=s, j=jobs: g.most_violated(s, r, n_jobs=j), rep
                )
            if e <= args.brute_max_exp:
                row[f"{r}_brute"] = best_of(
                    lambda r=r, s=s, lo=loss: brute_force_constraint(lo, s, "complete", r), 1
                )
        print(json.dumps(row), flush=True)
        rows.append(row)
    write_result(args.out, {"rows": rows})  # machine, Python and load: in the provenance

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = np.array([r["n"] for r in rows], float)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for key, lab, sty in [
        ("slack_1core", "Alg. 2, slack, 1 core", "o-"),
        ("margin_1core", "Alg. 2, margin, 1 core", "s-"),
        ("slack_2threads", "Alg. 2, slack, 2 threads", "o--"),
        ("slack_brute", "brute force O(n^2), slack", "x:"),
    ]:
        pts = [(r["n"], r[key]) for r in rows if key in r]
        if pts:
            ax.loglog(*zip(*pts), sty, label=lab)
    ref = n * np.log2(n)
    ax.loglog(
        n, ref * rows[-1]["slack_1core"] / ref[-1], "k-", lw=0.7, alpha=0.5, label="c n log n"
    )
    ax.set_xlabel("n (samples)")
    ax.set_ylabel("seconds per oracle call")
    ax.set_title("Most violated constraint, complete graph")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)


if __name__ == "__main__":
    main()
