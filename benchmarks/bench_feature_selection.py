"""Feature-selection curves (issue 14): forward selection by column generation against RFE
and L1-regularised LinearSVC.

For k in K, the test accuracy of a LinearSVC (C=1) retrained on the k selected features.
Forward selection (ForwardFeatureSelector, L2 hinge, C=1, one feature per round) runs once
to max(K) and its nested prefixes give every k; RFE (LinearSVC(C=1), step 10 %) runs once
per k; L1-LinearSVC sweeps C and reports (number of non-zero features, accuracy).  Multi-
class sets (one-vs-rest, columns shared by the classes): dna (official split) and
mnist1000 (stratified 70/30).

    PYTHONPATH=src python benchmarks/bench_feature_selection.py [--data ../shared/data]
        [--out benchmarks/results/feature_selection.json] [--sets dna,mnist1000]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import RFE
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

from _common import DEFAULT_DATA, load_multiclass, write_result
from maxmargin import ForwardFeatureSelector

K = (5, 10, 20, 40, 80)


def split(data_dir, name):
    if name == "dna":
        return load_multiclass(data_dir, name, split="official")
    X, y = load_multiclass(data_dir, name)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    return Xtr, ytr, Xte, yte


def accuracy(Xtr, ytr, Xte, yte, cols):
    clf = LinearSVC(C=1.0, max_iter=5000).fit(Xtr[:, cols], ytr)
    return float(clf.score(Xte[:, cols], yte))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--out", default="benchmarks/results/feature_selection.json")
    ap.add_argument("--sets", default="dna,mnist1000")
    args = ap.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    results = {}
    for name in args.sets.split(","):
        Xtr, ytr, Xte, yte = split(args.data, name)
        t = time.perf_counter()
        ffs = ForwardFeatureSelector(n_features_to_select=max(K), C=1.0, inner_tol=1e-4)
        ffs.fit(Xtr, ytr)
        t_ffs = time.perf_counter() - t
        curve_ffs = {k: accuracy(Xtr, ytr, Xte, yte, ffs.order_[:k]) for k in K}
        t = time.perf_counter()  # the same with 5 features per round (k are multiples of 5)
        ffs5 = ForwardFeatureSelector(
            n_features_to_select=max(K), C=1.0, inner_tol=1e-4, features_per_step=5
        ).fit(Xtr, ytr)
        t_ffs5 = time.perf_counter() - t
        curve_ffs5 = {k: accuracy(Xtr, ytr, Xte, yte, ffs5.order_[:k]) for k in K}
        curve_rfe, t_rfe = {}, 0.0
        for k in K:
            t = time.perf_counter()
            rfe = RFE(LinearSVC(C=1.0, max_iter=5000), n_features_to_select=k, step=0.1)
            rfe.fit(Xtr, ytr)
            t_rfe += time.perf_counter() - t
            curve_rfe[k] = accuracy(Xtr, ytr, Xte, yte, np.flatnonzero(rfe.support_))
        l1, t_l1 = [], 0.0
        for C in (0.003, 0.01, 0.03, 0.1, 0.3):
            t = time.perf_counter()
            clf = LinearSVC(C=C, penalty="l1", dual=False, max_iter=5000).fit(Xtr, ytr)
            t_l1 += time.perf_counter() - t
            cols = np.flatnonzero(np.any(clf.coef_ != 0, axis=0))
            if len(cols):
                l1.append((len(cols), accuracy(Xtr, ytr, Xte, yte, cols)))
        full = accuracy(Xtr, ytr, Xte, yte, np.arange(Xtr.shape[1]))
        results[name] = {
            "n_train": int(Xtr.shape[0]),
            "d": int(Xtr.shape[1]),
            "all_features": full,
            "ffs": {"time": t_ffs, "accuracy": curve_ffs},
            "ffs_5_per_step": {"time": t_ffs5, "accuracy": curve_ffs5},
            "rfe": {"time": t_rfe, "accuracy": curve_rfe},
            "l1_linearsvc": {"time": t_l1, "points": l1},
        }
        print(f"{name}: n={Xtr.shape[0]} d={Xtr.shape[1]} all features {full:.3f}")
        print("  k      " + " ".join(f"{k:6d}" for k in K))
        print("  FFS    " + " ".join(f"{curve_ffs[k]:6.3f}" for k in K) + f"   {t_ffs:.1f}s")
        print("  FFS-5  " + " ".join(f"{curve_ffs5[k]:6.3f}" for k in K) + f"   {t_ffs5:.1f}s")
        print("  RFE    " + " ".join(f"{curve_rfe[k]:6.3f}" for k in K) + f"   {t_rfe:.1f}s")
        print(f"  L1-SVC (n_features, acc) {l1}   {t_l1:.1f}s")
    print(write_result(args.out, {"k": list(K), "results": results}))


if __name__ == "__main__":
    main()
