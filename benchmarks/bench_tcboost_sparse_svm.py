"""Totally-corrective boosting and the sparse kernel SVM against peers (issue 14).

1. TC boosting (TCBoostClassifier: exp / L1, exp / L2, hinge / L1 = LPBoost; stumps)
   against stage-wise BinaryAdaBoost (discrete, gentle) and LightGBM (stumps: num_leaves=2)
   at equal numbers of weak learners T: test error and fit time.
2. SparseKernelSVM against SVC (RBF, C=1): test accuracy with n_basis = 1 %, 5 %, 10 % of
   SVC's support vectors, and fit times.

Binary problems: dna class 3 vs rest and satimage class 1 vs rest (official splits).

    PYTHONPATH=src python benchmarks/bench_tcboost_sparse_svm.py [--data ../shared/data]
        [--out benchmarks/results/tcboost_sparse_svm.json] [--T 50]
"""

from __future__ import annotations

import argparse
import time
import warnings

import lightgbm as lgb
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from _common import DEFAULT_DATA, load_multiclass, write_result
from maxmargin import BinaryAdaBoost, SparseKernelSVM, TCBoostClassifier

SETS = {"dna": 3, "satimage": 1}


def timed_fit(est, X, y):
    t = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--out", default="benchmarks/results/tcboost_sparse_svm.json")
    ap.add_argument("--T", type=int, default=50)
    args = ap.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    T = args.T
    results = {}
    for name, pos in SETS.items():
        Xtr, ytr, Xte, yte = load_multiclass(args.data, name, split="official")
        ytr, yte = (ytr == pos).astype(int), (yte == pos).astype(int)
        boost = {
            "tc_exp_l1": TCBoostClassifier(loss="exp", penalty="l1", C=100.0, max_iter=T),
            "tc_exp_l2": TCBoostClassifier(loss="exp", penalty="l2", C=100.0, max_iter=T),
            "lpboost": TCBoostClassifier(loss="hinge", penalty="l1", C=100.0, max_iter=T),
            "adaboost_discrete": BinaryAdaBoost(variant="discrete", max_iter=T),
            "adaboost_gentle": BinaryAdaBoost(variant="gentle", max_iter=T),
            "lightgbm": lgb.LGBMClassifier(
                n_estimators=T, num_leaves=2, learning_rate=0.5, verbose=-1, n_jobs=1
            ),
        }
        rows = {}
        for key, est in boost.items():
            t = timed_fit(est, Xtr, ytr)
            n_weak = len(est.coef_) if hasattr(est, "coef_") else T
            rows[key] = {"time": t, "test_error": 1 - est.score(Xte, yte), "n_weak": n_weak}
        svc = SVC(C=1.0)
        t_svc = timed_fit(svc, Xtr, ytr)
        n_sv = len(svc.support_)
        sparse = {"svc": {"time": t_svc, "accuracy": svc.score(Xte, yte), "n_sv": n_sv}}
        for frac in (0.01, 0.05, 0.10):
            k = max(1, round(frac * n_sv))
            est = SparseKernelSVM(n_basis=k, C=1.0, n_candidates=1000, random_state=0)
            t = timed_fit(est, Xtr, ytr)
            sparse[f"{frac:.0%}"] = {"time": t, "accuracy": est.score(Xte, yte), "n_basis": k}
        results[name] = {"boosting": rows, "sparse_kernel_svm": sparse}
        print(f"{name} (T = {T}):")
        for key, r in rows.items():
            print(f"  {key:18s} test error {r['test_error']:.4f}  {r['time']:.2f}s  {r['n_weak']}")
        for key, r in sparse.items():
            print(f"  SVM {key:5s} accuracy {r['accuracy']:.4f} {r['time']:.2f}s")
    print(write_result(args.out, {"T": T, "results": results}))


if __name__ == "__main__":
    main()
