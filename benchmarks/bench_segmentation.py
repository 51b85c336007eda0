"""Weizmann horses figure/ground segmentation: StructBoost-CRF vs SSVM-CRF vs unary only.

The protocol of StructBoost Sec. 4.5 / Table 6 (Shen et al., TPAMI 2014) on the Weizmann
horses (Borenstein & Ullman, ECCV 2002) instead of Graz-02: odd-numbered images train,
even-numbered test; colour photos resized to their masks; one shared set of superpixels,
features and cross-fitted AdaBoost unaries (:class:`maxmargin.apps.segmentation.Segmenter`);
C of each CRF learner chosen from 6 values in 0.1..1000 on a validation cut (the last
quarter of the training images, scored by area-weighted superpixel mean IoU), then
refitted on all training images.  Reports the Table 6 measures at pixel level, training
time of the CRF (and of the shared features + unaries), and seconds per test image.

    NUMBA_NUM_THREADS=1 python benchmarks/bench_segmentation.py --n-train 150 --n-test 150
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import copy
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, write_result
from maxmargin.apps.segmentation import Segmenter, load_image_folder
from maxmargin.metrics import segmentation_scores

C_GRID = np.logspace(-1, 3, 6)


def sp_iou(graphs, labels, pred):
    """Area-weighted superpixel mean IoU (validation score for choosing C)."""
    a = np.concatenate([g.area for g in graphs])
    t = np.concatenate(labels).astype(bool)
    p = np.concatenate(pred).astype(bool)
    fg = a[t & p].sum() / max(a[t | p].sum(), 1e-12)
    bg = a[~t & ~p].sum() / max(a[~t | ~p].sum(), 1e-12)
    return 0.5 * (fg + bg)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA / "segmentation/weizmann_horses")
    ap.add_argument("--n-train", type=int, default=150)
    ap.add_argument("--n-test", type=int, default=150)
    ap.add_argument("--n-segments", type=int, default=150)
    ap.add_argument("--unary-iter", type=int, default=100)
    ap.add_argument("--max-iter", type=int, default=50, help="StructBoost iterations")
    ap.add_argument("--max-time", type=float, default=None, help="time limit per CRF fit (s)")
    ap.add_argument("--out", default="benchmarks/results/segmentation.json")
    args = ap.parse_args(argv)

    odd = [f"horse{k:03d}" for k in range(1, 301, 2)][: args.n_train]
    even = [f"horse{k:03d}" for k in range(2, 301, 2)][: args.n_test]
    dirs = (args.data / "rgb", args.data / "figure_ground")
    Xtr, Mtr, _ = load_image_folder(*dirs, names=odd, resize_to_mask=True)
    Xte, Mte, _ = load_image_folder(*dirs, names=even, resize_to_mask=True)

    seg = Segmenter(
        learner="unary",
        n_segments=args.n_segments,
        unary_iter=args.unary_iter,
        max_iter=args.max_iter,
        random_state=0,
    )
    t0 = time.perf_counter()
    seg.fit(Xtr, Mtr)
    t_unary = time.perf_counter() - t0
    print(f"features + cross-fitted unaries: {t_unary:.1f}s", flush=True)
    G, L = seg.train_graphs_, seg.train_labels_
    cut = round(0.75 * len(G))
    models = {"AdaBoost (unary only)": seg}
    chosen, train_time = {}, {"AdaBoost (unary only)": t_unary}
    for learner, name in (("ssvm", "SSVM-CRF"), ("structboost", "StructBoost-CRF")):
        val = {}
        for C in C_GRID:
            m = copy.deepcopy(seg).set_params(learner=learner, C=float(C))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit_crf(G[:cut], L[:cut])
            val[float(C)] = sp_iou(G[cut:], L[cut:], m.crf_predict(G[cut:]))
            print(f"{name} C={C:g}: validation mean IoU {val[float(C)]:.4f}", flush=True)
        best = max(val, key=val.get)
        m = copy.deepcopy(seg).set_params(learner=learner, C=best)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit_crf(G, L)
        train_time[name] = time.perf_counter() - t0
        chosen[name] = {"C": best, "validation_mean_iou": val}
        models[name] = m

    preds = {k: [] for k in models}
    scores = {k: [] for k in models}
    t_feat, t_inf = 0.0, dict.fromkeys(models, 0.0)
    for x in Xte:
        t0 = time.perf_counter()
        feats, F = seg._unaries(x)
        graph = seg._graph(feats, F)
        t_feat += time.perf_counter() - t0
        for k, m in models.items():
            t0 = time.perf_counter()
            lab = (F[:, -1] > 0).astype(np.int64) if m.crf_ is None else m.crf_predict([graph])[0]
            t_inf[k] += time.perf_counter() - t0
            preds[k].append(lab[feats.superpixels].astype(bool))
            scores[k].append((lab + 0.49 * np.clip(F[:, -1], -1, 1))[feats.superpixels])
    rows = []
    for k in models:
        r = segmentation_scores(Mte, preds[k], scores[k])
        r.update(
            method=k,
            train_seconds=train_time[k],
            seconds_per_image=(t_feat + t_inf[k]) / len(Xte),
            inference_seconds_per_image=t_inf[k] / len(Xte),
            **chosen.get(k, {}),
        )
        if getattr(models[k], "pairwise_active_", None) is not None:
            r["pairwise_active"] = models[k].pairwise_active_.tolist()
        rows.append(r)
        print(
            f"{k:24s} mean IoU {100 * r['mean_iou']:.1f} ({100 * r['iou_fg']:.1f}, "
            f"{100 * r['iou_bg']:.1f})  pixel acc {100 * r['class_accuracy']:.1f} "
            f"({100 * r['accuracy_fg']:.1f}, {100 * r['accuracy_bg']:.1f})  "
            f"P=R {100 * r['precision_recall']:.1f}  train {r['train_seconds']:.1f}s  "
            f"{r['seconds_per_image']:.3f} s/image",
            flush=True,
        )
    path = write_result(
        args.out,
        {
            "dataset": "weizmann_horses",
            "n_train": len(Xtr),
            "n_test": len(Xte),
            "settings": {
                "n_segments": args.n_segments,
                "unary_iter": args.unary_iter,
                "structboost_max_iter": args.max_iter,
                "C_grid": C_GRID.tolist(),
                "max_time_per_crf_fit": args.max_time,
            },
            "features_and_unaries_seconds": t_unary,
            "rows": rows,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
