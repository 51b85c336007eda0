"""Feature-selection curves (issue 14): forward selection by column generation against RFE
and L1-regularised LinearSVC.

For k in K, the test accuracy of a LinearSVC (C=1) retrained on the k selected features.
The forward row (issue 14's goal): every k from ONE fit, ForwardFeatureSelector(k_path=K,
overselect=3, loss="squared_hinge", backward_step=0.2) -- forward to 3 max(K) features
(all of dna's), one backward pass down to min(K), per k the better of the two sets; the
restricted problems by compiled Newton rounds.  Then forward selection (L2 hinge, C=1)
run once to max(K), its nested prefixes giving every k: with its default rounds
(``features_per_step="auto"``: one feature per round up to 10, then 10 % more per
round), one feature per round, and five per round; the last round's restricted problem
is solved to a relative duality gap of ``inner_tol`` (1e-3; the default rounds also with
1e-4, and with one dual CD epoch per pricing round, ``pricing_epochs=1``, instead of
five).  With ``overselect=3``
(forward to 3k features, then backward elimination to k, the set of smaller restricted
objective kept) the sets are not nested: one fit per k, total time, as RFE.  RFE
(LinearSVC(C=1), step 10 %) runs once per k (total time); L1-LinearSVC sweeps C and
reports (number of non-zero features, accuracy).  Multi-class sets (one-vs-rest,
columns shared by the classes): dna (official split) and mnist1000 (stratified 70/30).

Times are the fastest of REPEATS runs (wall clock; CPU time recorded too), with BLAS
limited to one thread for every method (the machine is shared: a multi-threaded BLAS on
a busy 2-core machine made a 700 x 784 matrix-vector product 40x slower) and numba's
kernels compiled before timing.

    PYTHONPATH=src python benchmarks/bench_feature_selection.py [--data ../shared/data]
        [--out benchmarks/results/feature_selection.json] [--sets dna,mnist1000]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import RFE
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from _common import DEFAULT_DATA, load_multiclass, write_result
from maxmargin import ForwardFeatureSelector

K = (5, 10, 20, 40, 80)
REPEATS = 5
#: forward-selection variants: (name, keyword arguments)
VARIANTS = (
    # the goal's configuration: every k from one fit, squared hinge (compiled Newton
    # rounds), forward to 3 max(K), one backward pass removing a fifth per round
    ("ffs_path_3_sqhinge_b02", {"inner_tol": 1e-3, "overselect": 3.0, "k_path": K,
                                "loss": "squared_hinge", "backward_step": 0.2}),
    ("ffs_auto", {"inner_tol": 1e-3}),
    ("ffs_auto_inner_1e-4", {"inner_tol": 1e-4}),
    ("ffs_auto_pricing_1", {"inner_tol": 1e-3, "pricing_epochs": 1}),
    ("ffs_1_per_step", {"inner_tol": 1e-3, "features_per_step": 1}),
    ("ffs_5_per_step", {"inner_tol": 1e-3, "features_per_step": 5}),
    # forward to ceil(3 k), backward to k, the better set kept: one fit per k (as RFE)
    ("ffs_overselect_3", {"inner_tol": 1e-3, "overselect": 3.0}),
    # every k from one fit (k_path): forward to 3 max(K) (all columns on dna), one backward
    # pass down to min(K), per k the better of the forward prefix and the backward set
    ("ffs_path_3", {"inner_tol": 1e-3, "overselect": 3.0, "k_path": K}),
    # the same with the squared hinge, a tenth of the columns removed per backward round
    ("ffs_path_3_sqhinge", {"inner_tol": 1e-3, "overselect": 3.0, "k_path": K,
                            "loss": "squared_hinge"}),
)  # fmt: skip


def timed_min(fn):
    """(result of the last run, fastest wall time, fastest CPU time) of REPEATS runs."""
    walls, cpus = [], []
    for _ in range(REPEATS):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return out, min(walls), min(cpus)


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
    with threadpool_limits(limits=1):
        results = run(args)
    payload = {"k": list(K), "repeats": REPEATS, "blas_threads": 1, "results": results}
    print(write_result(args.out, payload))


def run(args):
    rng = np.random.default_rng(0)  # compile numba's dual CD (dense and CSR) before timing
    Xw = rng.normal(size=(60, 8))
    for Xc in (Xw, sp.csc_matrix(Xw * (rng.random((60, 8)) < 0.1))):
        ForwardFeatureSelector(n_features_to_select=4).fit(Xc, np.arange(60) % 3)
    # ... and the squared hinge's compiled Newton rounds
    ForwardFeatureSelector(k_path=(2, 4), overselect=2.0, loss="squared_hinge").fit(
        Xw, np.arange(60) % 3
    )
    results = {}
    for name in args.sets.split(","):
        Xtr, ytr, Xte, yte = split(args.data, name)
        res = {"n_train": int(Xtr.shape[0]), "d": int(Xtr.shape[1])}
        for key, kw in VARIANTS:
            path = "k_path" in kw  # one fit records every k's set
            per_k = kw.get("overselect", 1.0) > 1.0 and not path  # the sets are not nested

            def fit(kw=kw, X=Xtr, y=ytr, per_k=per_k, path=path):
                if path:
                    return ForwardFeatureSelector(C=1.0, **kw).fit(X, y)
                if per_k:
                    return [
                        ForwardFeatureSelector(n_features_to_select=k, C=1.0, **kw).fit(X, y)
                        for k in K
                    ]
                return ForwardFeatureSelector(n_features_to_select=max(K), C=1.0, **kw).fit(X, y)

            ffs, wall, cpu = timed_min(fit)
            if per_k:
                sels = [np.flatnonzero(f.support_) for f in ffs]
                rounds = [int(f.n_iter_) for f in ffs]
                extra = {"selected_by": [f.selected_by_ for f in ffs]}
            elif path:
                sels = [ffs.get_support_at(k, indices=True) for k in K]
                rounds = int(ffs.n_iter_)
                extra = {"selected_by": [e["selected_by"] for e in ffs.path_]}
            else:
                sels = [ffs.order_[:k] for k in K]
                rounds, extra = int(ffs.n_iter_), {}
            res[key] = {
                "params": kw,
                "one_fit_per_k": per_k,
                "time": wall,
                "cpu_time": cpu,
                "rounds": rounds,
                "accuracy": {k: accuracy(Xtr, ytr, Xte, yte, c) for k, c in zip(K, sels)},
                **extra,
            }

        def rfe_all(X=Xtr, y=ytr):
            svc = LinearSVC(C=1.0, max_iter=5000)
            return [RFE(svc, n_features_to_select=k, step=0.1).fit(X, y) for k in K]

        rfes, wall, cpu = timed_min(rfe_all)
        res["rfe"] = {
            "time": wall,
            "cpu_time": cpu,
            "accuracy": {
                k: accuracy(Xtr, ytr, Xte, yte, np.flatnonzero(r.support_)) for k, r in zip(K, rfes)
            },
        }
        l1, t_l1 = [], 0.0
        for C in (0.003, 0.01, 0.03, 0.1, 0.3):
            t = time.perf_counter()
            clf = LinearSVC(C=C, penalty="l1", dual=False, max_iter=5000).fit(Xtr, ytr)
            t_l1 += time.perf_counter() - t
            cols = np.flatnonzero(np.any(clf.coef_ != 0, axis=0))
            if len(cols):
                l1.append((len(cols), accuracy(Xtr, ytr, Xte, yte, cols)))
        res["l1_linearsvc"] = {"time": t_l1, "points": l1}
        res["all_features"] = accuracy(Xtr, ytr, Xte, yte, np.arange(Xtr.shape[1]))
        results[name] = res
        rt = res["rfe"]["time"]
        print(f"{name}: n={Xtr.shape[0]} d={Xtr.shape[1]} all features {res['all_features']:.3f}")
        print("  k                      " + " ".join(f"{k:6d}" for k in K))
        for key in [v[0] for v in VARIANTS] + ["rfe"]:
            r = res[key]
            acc = " ".join(f"{r['accuracy'][k]:6.3f}" for k in K)
            print(
                f"  {key:22s} {acc}   {r['time']:.3f}s ({r['time'] / rt:.3f}x RFE), "
                f"CPU {r['cpu_time']:.3f}s ({r['cpu_time'] / res['rfe']['cpu_time']:.3f}x)"
            )
        print(f"  L1-SVC (n_features, acc) {l1}   {t_l1:.1f}s")
    return results


if __name__ == "__main__":
    main()
