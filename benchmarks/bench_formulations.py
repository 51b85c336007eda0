"""StructBoost's masters side by side: fast (smoothed + exact polish), exact m-slack, exact 1-slack.

All three return the exact LP optimum over their final weak learners; they differ in how
each iteration's duals are obtained, hence in the column sequence and the time.  The exact
masters give the paper's column sequence (Alg. 1 with Alg. 2 / the m-slack master to
``eps_cp``).  Each case fits StructBoostClassifier with every master (same C, iterations,
seed) and reports fit seconds, the final objective (and how far it is from the exact
m-slack run's), the certified gap and the test error.

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_formulations.py [--data-dir ../shared/data]
        [--cases digits:100:100 satimage:100:100 svmguide4:158:200]
        [--masters fast exact:m-slack exact:1-slack]
A case is name:C:iterations.  Writes benchmarks/results/formulations.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from _common import DEFAULT_DATA, load_digits_split, load_multiclass, write_result
from maxmargin import StructBoostClassifier


def load(data_dir: Path, name: str):
    if name == "digits":
        return load_digits_split(0)
    return load_multiclass(data_dir, name, split="official")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument(
        "--cases", nargs="+", default=["digits:100:100", "satimage:100:100", "svmguide4:158:200"]
    )
    ap.add_argument("--masters", nargs="+", default=["fast", "exact:m-slack", "exact:1-slack"])
    ap.add_argument("--out", default="benchmarks/results/formulations.json")
    args = ap.parse_args(argv)
    StructBoostClassifier(max_iter=3).fit(*load_digits_split(0)[:2])  # compile kernels
    out = []
    for case in args.cases:
        name, C, iters = case.split(":")
        Xtr, ytr, Xte, yte = load(args.data_dir, name)
        row = {"data": name, "C": float(C), "max_iter": int(iters), "n_train": len(ytr)}
        for spec in args.masters:
            master, _, form = spec.partition(":")
            clf = StructBoostClassifier(
                C=float(C),
                max_iter=int(iters),
                master=master,
                formulation=form or "auto",
                random_state=0,
            )
            t = time.perf_counter()
            clf.fit(Xtr, ytr)
            row[spec] = {
                "fit_s": time.perf_counter() - t,
                "objective": clf.objective_,
                "gap": clf.gap_,
                "test_error": float(np.mean(clf.predict(Xte) != yte)),
                "n_cp": int(sum(r["n_cp"] for r in clf.history_)),
                "t_master": float(sum(r["t_master"] for r in clf.history_)),
                "t_polish": float(sum(r["t_polish"] for r in clf.history_)),
            }
        out.append(row)
        print(json.dumps(row), flush=True)
    path = write_result(args.out, {"cases": out})
    print(f"wrote {path}")
    ref = "exact:m-slack"
    print("| data | C | iterations | master | fit s | objective (vs exact m-slack) | test error |")
    print("|---|---|---|---|---|---|---|")
    for r in out:
        for spec in args.masters:
            v = r[spec]
            rel = (
                f" ({100 * (v['objective'] / r[ref]['objective'] - 1):+.1f} %)"
                if ref in r and spec != ref
                else ""
            )
            print(
                f"| {r['data']} | {r['C']:g} | {r['max_iter']} | {spec} | {v['fit_s']:.2f} | "
                f"{v['objective']:.3f}{rel} | {v['test_error']:.4f} |"
            )


if __name__ == "__main__":
    main()
