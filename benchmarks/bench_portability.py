"""The same benchmark models fitted with numba's host target and its generic x86-64 target.

Issue 33: results must not depend on the CPU beyond a documented tolerance.  Each model
below is fitted twice, in two fresh processes: one with numba's default (host) target and
this machine's thread count, one with ``NUMBA_CPU_NAME=generic`` (no host-specific
instructions: SIMD width and FMA change the order and rounding of reductions) and one
numba thread, each with its own numba cache.  Reported per model: both objectives, their
relative difference, and the tolerance the model documents:

* StructBoost (``certify="gap"``): the certified relative gap ``gap_tol`` -- two runs may
  stop at different points of the same certified band, so their objectives may differ by
  up to about ``gap_tol`` (both within ``gap_tol`` of the optimum);
* StructBoost (``certify="exact"``) and the structured / linear SVMs: their convergence
  tolerance (``1e-9`` relative LP polish; ``tol`` relative duality gap); MultiBoost: its
  FCD tolerance ``tol`` (default 1e-6);
* AdaBoost.MH (no optimiser with a tolerance: exact comparisons of float64 sums in a
  fixed order): bit-identical objectives are expected; any difference is reported.

The models are small versions of the benchmark configurations on data shipped with
scikit-learn (digits), so the script needs no ``../shared``.

Usage: python benchmarks/bench_portability.py [--out benchmarks/results/portability.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from _common import write_result

#: name -> (constructor expression, the documented relative tolerance of its objective)
MODELS = {
    "StructBoostClassifier gap": (
        "StructBoostClassifier(C=100, max_iter=100, random_state=0)",
        1e-2,
    ),
    "StructBoostClassifier exact": (
        "StructBoostClassifier(C=100, max_iter=100, certify='exact', random_state=0)",
        1e-9,
    ),
    "SSVMClassifier n-slack": (
        "SSVMClassifier(C=100, solver='n-slack', tol=1e-3, random_state=0)",
        1e-3,
    ),
    "SSVMClassifier 1-slack": ("SSVMClassifier(C=100, solver='1-slack', tol=1e-3)", 1e-3),
    "SVMClassifier": ("SVMClassifier(C=1.0, tol=1e-4)", 1e-4),
    "MultiBoost": ("MultiBoost(max_iter=50, random_state=0)", 1e-6),
    "AdaBoostMH": ("AdaBoostMH(max_iter=50)", 0.0),
}

CHILD = r"""
import json, sys, warnings
import numpy as np
from sklearn.datasets import load_digits
from maxmargin import *  # noqa
X, y = load_digits(return_X_y=True)
X = X / 16.0
out = {}
for name, expr in json.loads(sys.argv[1]).items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = eval(expr).fit(X, y)
    obj = getattr(m, "objective_", None)
    if obj is None:
        obj = m.history_[-1]["objective"]
    out[name] = {"objective": float(obj), "n_iter": int(len(getattr(m, "history_", [])))}
print(json.dumps(out))
"""


def run(env_extra: dict) -> dict:
    exprs = {k: v[0] for k, v in MODELS.items()}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, **env_extra}
        res = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(exprs)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/portability.json")
    args = ap.parse_args()
    host = run({})
    generic = run({"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": "", "NUMBA_NUM_THREADS": "1"})
    rows = []
    for name, (expr, tol) in MODELS.items():
        a, b = host[name]["objective"], generic[name]["objective"]
        rel = abs(a - b) / max(abs(a), 1e-300)
        rows.append(
            {
                "model": name,
                "estimator": expr,
                "objective_host": a,
                "objective_generic": b,
                "n_iter_host": host[name]["n_iter"],
                "n_iter_generic": generic[name]["n_iter"],
                "relative_difference": rel,
                "documented_tolerance": tol,
                "within": bool(rel <= tol) if tol > 0 else bool(a == b),
            }
        )
    print(
        "| model | objective host | objective generic | relative difference | tolerance | within |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['objective_host']:.10g} | {r['objective_generic']:.10g} | "
            f"{r['relative_difference']:.2e} | {r['documented_tolerance']:g} | {r['within']} |"
        )
    path = write_result(args.out, {"data": "sklearn digits / 16", "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
