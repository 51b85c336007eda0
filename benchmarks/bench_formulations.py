"""1-slack vs m-slack StructBoost masters: fit time and objective on the same data.

Theorem 2.1 says both reach the same optimum; their cost differs (docs/structboost.md).
Each case fits StructBoostClassifier with both formulations (same C, iterations, seed) and
reports fit seconds, the final primal objective and the test error.

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_formulations.py [--data-dir ../shared/data]
        [--cases svmguide4:158:200 digits:100:100 pendigits:100:30]
A case is name:C:iterations. Writes benchmarks/results/formulations.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits, load_svmlight_file
from sklearn.model_selection import train_test_split

from maxmargin import StructBoostClassifier

ROOT = Path(__file__).resolve().parents[1]


def load(data_dir: Path, name: str):
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    mc = data_dir / "multiclass"
    files = {
        "svmguide4": ("svmguide4/svmguide4", "svmguide4/svmguide4.t", 10),
        "pendigits": ("pendigits/pendigits.scale", "pendigits/pendigits.scale.t", 16),
        "satimage": ("satimage/satimage.scale", "satimage/satimage.scale.t", 36),
    }
    tr, te, d = files[name]
    Xtr, ytr = load_svmlight_file(str(mc / tr), n_features=d)
    Xte, yte = load_svmlight_file(str(mc / te), n_features=d)
    return Xtr.toarray(), Xte.toarray(), ytr, yte


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument(
        "--cases", nargs="+", default=["svmguide4:158:200", "digits:100:100", "pendigits:100:30"]
    )
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/formulations.json")
    args = ap.parse_args(argv)
    out = []
    for case in args.cases:
        name, C, iters = case.split(":")
        Xtr, Xte, ytr, yte = load(args.data_dir, name)
        row = {"data": name, "C": float(C), "max_iter": int(iters), "n_train": len(ytr)}
        for form in ("1-slack", "m-slack"):
            clf = StructBoostClassifier(
                C=float(C), max_iter=int(iters), formulation=form, random_state=0
            )
            t = time.perf_counter()
            clf.fit(Xtr, ytr)
            row[form] = {
                "fit_s": time.perf_counter() - t,
                "objective": clf.objective_,
                "test_error": float(np.mean(clf.predict(Xte) != yte)),
                "n_cp": int(sum(r["n_cp"] for r in clf.history_)),
            }
        row["ratio_1slack_over_mslack"] = row["1-slack"]["fit_s"] / row["m-slack"]["fit_s"]
        out.append(row)
        print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print("| data | C | iterations | 1-slack s | m-slack s | ratio | objective 1-slack / m-slack |")
    print("|---|---|---|---|---|---|---|")
    for r in out:
        print(
            f"| {r['data']} | {r['C']:g} | {r['max_iter']} | {r['1-slack']['fit_s']:.1f} | "
            f"{r['m-slack']['fit_s']:.1f} | {r['ratio_1slack_over_mslack']:.2f} | "
            f"{r['1-slack']['objective']:.3f} / {r['m-slack']['objective']:.3f} |"
        )


if __name__ == "__main__":
    main()
