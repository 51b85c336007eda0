"""Raccoon detection (issue 13): HOG + linear SVM with hard-negative mining, boosted
cascades (cost-sensitive AdaBoost and LACBoost / FisherBoost stages) with the per-stage
table of thesis Table 4.1, and proposal ranking (RankSVM, per-image groups) against the
unranked pool of random windows from the learned box distribution.

Data: ../shared/data/detection/raccoon (200 images, VOC XML); as its README says, the
first 160 images (natural order raccoon-1 .. raccoon-160) train and the last 40 test.
Images are downscaled to ``--max-side`` pixels (boxes alike); HOG windows of
``--window`` x ``--window`` cells of 8 pixels over a sqrt(2) pyramid.

* AP at overlap 0.5 (PASCAL VOC, all points) of the top 100 detections per test image
  after NMS (0.3), and detection time per test image (HOG pyramid + scoring + NMS).
* Cascade efficiency goal: on the test windows (positives: windows with overlap >= 0.6
  with a raccoon, plus the window nearest to each raccoon; negatives: windows with
  overlap < 0.3), the cascade's recall R and FAR F; a flat Gentle AdaBoost trained on
  exactly the cascade's training windows (``CascadeDetector.training_set``: the same
  features, positives and negative pool, the held-out rows included) is evaluated with
  its first T weak classifiers, thresholded to reach recall R on the test positives;
  T_flat is the smallest T (every T from 1 to ``--flat-weak``) whose FAR is <= F.  The
  goal is met when the cascade's expected weak classifiers per window <= T_flat / 10.
  The JSON also records the flat booster's lowest FAR at recall R and the T reaching it:
  when F is near that floor, T_flat sits on a plateau and is very sensitive to F
  (``T_needed_if_far_times``); the flat booster's FAR at T = the cascade's expected count
  (``equal_cost``); the same comparison for every prefix of the cascade (``prefixes``);
  and how much of a raccoon the false positives left hold (``false_positive_overlap``);
  and the comparison on the test negatives touching no raccoon (``background_only``).
  ``--flat-cache DIR`` keeps the flat booster per set of training windows, so runs that
  share them (e.g. with and without ``--bootstrap``, which starts from the same pool)
  train it once.
* ``--extra-negatives DIR[:STEP[:OFFSET]] ...``: more training negatives for the cascade
  (and so for the flat booster, which trains on the same windows) from images that
  contain no raccoon -- every STEP-th image file of each folder from the OFFSET-th
  (0-based, natural order; STEP 1 and OFFSET 0 if omitted),
  downscaled to ``--max-side`` like the raccoons, passed as
  ``CascadeDetector.fit(..., negative_images=...)``: ``--n-extra-negatives`` of their
  windows (default: as many as ``--n-negatives``) drawn at random by the detector's own
  pyramid and features and added to the raccoon pool, which stays the same draw.  The
  test windows and the metric stay the raccoon test images'.
* ``--test-negatives DIR[:STEP[:OFFSET]] ...``: test images that contain no raccoon (the
  same selection rule), none of them an ``--extra-negatives`` image (an error
  otherwise).  Every window of theirs is a test negative, described exactly as the
  raccoon test windows are (the detector's pyramid, aspect ratios, features and
  location prior).  For each cascade the JSON gets ``test_negatives``: the goal's
  comparison (recall R on the raccoon test positives, FAR F, expected weak classifiers
  per window, T_flat at R and FAR <= F on the same negatives, T_flat at F x 1.05 ..
  1.5, the flat booster's lowest FAR at R) on (a) the raccoon test negatives
  (``raccoon_only``, the numbers above), (b) those and the background windows
  (``raccoon_plus_background``) and (c) the background windows alone
  (``background_only``; per folder in ``background_by_folder``); the top-level
  ``test_negatives`` lists the images and window counts.  Without the option every
  output is as before; the AP stays the 40 raccoon test images'.
* Ranking: ``--candidates`` windows per test image from the box distribution fitted on
  the training boxes; recall at overlap 0.5 and the normalised AUC over [0.5, 1] at 1,
  10, 100 and 1000 windows for every graph x rescaling, and for the unranked pool.

    python benchmarks/bench_detection.py            # about 5 minutes on one core
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, ROOT, read_result, write_result
from benchlib.image_specs import check_disjoint, select_image_files
from maxmargin import BinaryAdaBoost
from maxmargin.apps.detection import (
    CascadeDetector,
    HOGSVMDetector,
    ProposalRanker,
    average_precision,
    load_voc_folder,
    nms,
    recall_overlap,
    recall_overlap_auc,
)


def load_images(files, max_side):
    """The image files, downscaled to ``max_side`` like the raccoons."""
    from maxmargin.apps.detection import load_image, rescale_image

    return [rescale_image(load_image(f), np.zeros((0, 4)), max_side)[0] for f in files]


def load_extra_negatives(specs, max_side):
    """Images of the ``DIR[:STEP[:OFFSET]]`` folders (every STEP-th file in natural order
    from the OFFSET-th), downscaled to ``max_side``; returns ``(images, per-folder
    counts)``."""
    files, counts = select_image_files(specs)
    return load_images(files, max_side), counts


def detect_all(det, images):
    t0 = time.perf_counter()
    res = [det.detect(im) for im in images]
    return res, (time.perf_counter() - t0) / len(images)


def window_set(det, images, boxes):
    """Test windows as in training: positives and negatives of every image, and every
    negative's largest overlap with a ground-truth box."""
    wins = det._windows(images, boxes)
    Xp = det._positives(wins, boxes)
    Xn = np.vstack(
        [
            det._describe(
                pyr, lv[ov < det.neg_overlap], r[ov < det.neg_overlap], c[ov < det.neg_overlap]
            )
            for pyr, lv, r, c, ov in wins
        ]
    )
    ov_n = np.concatenate([ov[ov < det.neg_overlap] for *_, ov in wins])
    return Xp.astype(np.float64), Xn.astype(np.float64), ov_n


def background_windows(det, images):
    """Every window of images without objects (all negatives), described exactly as the
    test images' windows are (:func:`window_set`: the detector's pyramid, aspect ratios,
    features and location prior); returns ``(X, windows per image)``."""
    wins = det._windows(images, [np.zeros((0, 4))] * len(images))
    X, n = [], []
    for pyr, lv, r, c, _ in wins:
        n.append(len(lv))
        if len(lv):
            X.append(det._describe(pyr, lv, r, c).astype(np.float64))
    if not X:
        raise SystemExit("--test-negatives: no window fits in any of the images")
    return np.vstack(X), n


def compare_on_negatives(c, flat, Xp, Xn, max_t):
    """The cascade goal on the negatives ``Xn`` (positives ``Xp``): the cascade's recall R
    and FAR F, its expected weak classifiers per window on ``Xn`` (the same
    ``figure_of_merit`` as everywhere), and the flat booster's T_flat for recall R at FAR
    <= F on the same ``Xn`` (``flat_weak_needed``; thresholds from ``Xp``), its
    sensitivity to F (``flat_sensitivity``), its lowest FAR at R and its FAR at T = the
    cascade's expected count."""
    _SCORES.clear()
    R = float((c.predict(Xp) == 1).mean())
    acc = c.predict(Xn) == 1
    F = float(acc.mean())
    fm = c.figure_of_merit(Xn)
    T, rows, floor = flat_weak_needed(flat, Xp, Xn, R, F, max_t)
    T_eq = max(1, round(fm["expected_weak"]))
    _, far_eq = flat_curve(flat, Xp, Xn, R, T_eq)
    sens = flat_sensitivity(flat, Xp, Xn, R, F, max_t)
    _SCORES.clear()
    n = len(Xn)
    return {
        "n_neg_windows": n,
        "recall": R,
        "far": F,
        "n_false_positives": int(acc.sum()),
        "far_binomial_std_error": float(np.sqrt(F * (1 - F) / max(n, 1))),
        "expected_weak": fm["expected_weak"],
        "expected_distinct_weak": fm["expected_distinct_weak"],
        "entering": fm["entering"],
        "T_needed": T,
        "ratio": None if T is None else fm["expected_weak"] / T,
        "T_needed_far_x1_1": sens["x1.1"],
        "ratio_far_x1_1": None if not sens["x1.1"] else fm["expected_weak"] / sens["x1.1"],
        "T_needed_if_far_times": sens,
        "min_far_at_recall": floor[0],
        "T_at_min_far": floor[1],
        "equal_cost": {"T": T_eq, "flat_far": float(far_eq[-1]), "cascade_far": F},
        "curve": rows,
    }


def overlap_shares(ov, accepted):
    """How much of a raccoon the accepted negatives hold: shares of them by their
    largest overlap with a ground-truth box (0, (0, 0.1), [0.1, 0.2), [0.2, 0.3))."""
    a = ov[accepted]
    edges = [("0", a == 0), ("(0,0.1)", (a > 0) & (a < 0.1))]
    edges += [("[0.1,0.2)", (a >= 0.1) & (a < 0.2)), ("[0.2,0.3)", a >= 0.2)]
    n = max(len(a), 1)
    return {"n": len(a), **{k: float(m.sum() / n) for k, m in edges}}


def fit_flat(X, y, max_iter, cache_dir):
    """The flat Gentle AdaBoost of ``max_iter`` rounds on ``(X, y)``; with ``cache_dir``
    loaded from / saved to a ``maxmargin.save`` file named by a hash of the training
    windows and the rounds (a deterministic fit: the same windows give the same model).
    Returns ``(model, from_cache)``."""
    import hashlib

    import maxmargin

    path = None
    if cache_dir:
        h = hashlib.sha1(np.ascontiguousarray(X).tobytes())
        h.update(np.ascontiguousarray(y).tobytes())
        path = Path(cache_dir) / f"flat_gentle_{max_iter}_{h.hexdigest()[:16]}.npz"
        if path.exists():
            return maxmargin.load(path), True
    flat = BinaryAdaBoost(variant="gentle", max_iter=max_iter).fit(X, y)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        maxmargin.save(flat, path)
    return flat, False


_SCORES: dict = {}


def flat_curve(flat, Xp, Xn, recall, max_t):
    """``(recall, FAR)`` of the flat booster's first T weak classifiers, T = 1 ..
    ``max_t``, each thresholded just below the ``recall`` quantile of the positives'
    scores."""
    key = (id(flat), id(Xp), id(Xn))
    if key not in _SCORES:  # the cumulative scores of every T, once per booster and set
        Hp = np.asarray(flat.hypotheses_.evaluate(Xp)).T * flat.coef_
        Hn = np.asarray(flat.hypotheses_.evaluate(Xn)).T * flat.coef_
        _SCORES.clear()
        _SCORES[key] = (np.cumsum(Hp, axis=1), np.cumsum(Hn, axis=1))
    Fp, Fn = _SCORES[key]
    n_t = min(int(max_t), Fp.shape[1])
    sp = np.sort(Fp[:, :n_t], axis=0)
    k = int(np.floor((1.0 - recall) * len(sp)))
    thr = sp[min(k, len(sp) - 1)] - 1e-12  # (n_t,)
    return (Fp[:, :n_t] > thr).mean(axis=0), (Fn[:, :n_t] > thr).mean(axis=0)


def flat_weak_needed(flat, Xp, Xn, recall, far, max_t):
    """Smallest T in 1 .. ``max_t`` whose first T weak classifiers reach ``recall`` with
    FAR <= ``far`` (threshold just below the recall quantile of the positives' scores);
    None if none does.  Also the curve at a grid of T and the lowest FAR at ``recall``
    over all T with its T."""
    rec, f = flat_curve(flat, Xp, Xn, recall, max_t)
    n_t = len(f)
    ok = np.flatnonzero((rec >= recall - 1e-12) & (f <= far))
    found = int(ok[0]) + 1 if len(ok) else None
    grid = sorted({1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 400, n_t} | {found or 1})
    rows = [
        {"T": int(T), "recall": float(rec[T - 1]), "far": float(f[T - 1])} for T in grid if T <= n_t
    ]
    best = int(np.argmin(np.where(rec >= recall - 1e-12, f, np.inf)))
    return found, rows, (float(f[best]), best + 1)


def flat_sensitivity(flat, Xp, Xn, recall, far, max_t):
    """How T_flat moves when the FAR to reach is a little higher: T for ``far`` times
    1.05, 1.1, 1.25, 1.5; and the range of the flat booster's FAR at ``recall`` over T >=
    50 (its plateau)."""
    out = {
        f"x{m}": flat_weak_needed(flat, Xp, Xn, recall, far * m, max_t)[0]
        for m in (1.05, 1.1, 1.25, 1.5)
    }
    Hp = np.asarray(flat.hypotheses_.evaluate(Xp)).T * flat.coef_
    Hn = np.asarray(flat.hypotheses_.evaluate(Xn)).T * flat.coef_
    Fp, Fn = np.cumsum(Hp, axis=1)[:, 49:max_t], np.cumsum(Hn, axis=1)[:, 49:max_t]
    if Fp.shape[1]:
        sp = np.sort(Fp, axis=0)
        thr = sp[min(int(np.floor((1.0 - recall) * len(sp))), len(sp) - 1)] - 1e-12
        f = (Fn > thr).mean(axis=0)
        out["far_range_T50_up"] = [float(f.min()), float(f.max())]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA / "detection/raccoon")
    ap.add_argument("--max-side", type=int, default=240)
    ap.add_argument("--window", type=int, default=7, help="window side in HOG cells")
    ap.add_argument("--aspect-ratios", default="0.7,1,1.4", help="window aspect ratios")
    ap.add_argument("--colour", action="store_true", help="colour HOG")
    ap.add_argument("--channels", action="store_true", help="aggregated channel features (ACF) too")
    ap.add_argument(
        "--channel-cells", default="1", help="channel aggregate square sizes in cells, e.g. 1,2,4"
    )
    ap.add_argument(
        "--bootstrap",
        action="store_true",
        help="cascade: later stages draw fresh negatives from the full training scan",
    )
    ap.add_argument("--no-location-prior", action="store_true")
    ap.add_argument(
        "--ablation",
        action="store_true",
        help="also train the SVM without the location prior (appearance only)",
    )
    ap.add_argument("--n-train", type=int, default=160)
    ap.add_argument("--n-test", type=int, default=40)
    ap.add_argument("--svm-C", type=float, default=0.03)
    ap.add_argument("--stage-learners", default="gentle,lacboost")
    ap.add_argument("--cost-ratio", type=float, default=1.0)
    ap.add_argument("--rule", default="two-point", choices=["fixed", "one-point", "two-point"])
    ap.add_argument("--fallback", default="recall", choices=["recall", "far"])
    ap.add_argument("--n-stages", type=int, default=10)
    ap.add_argument("--recycle", type=float, default=None, help="recycling lambda* (Alg. 3)")
    ap.add_argument("--chain", action="store_true", help="strong classifier chaining (eq. 4.59)")
    ap.add_argument(
        "--max-weak", default="50", help="weak per stage at most; a comma list: per stage"
    )
    ap.add_argument("--target-recall", type=float, default=0.9)
    ap.add_argument("--target-far", type=float, default=1e-3)
    ap.add_argument("--n-negatives", type=int, default=40000)
    ap.add_argument(
        "--neg-overlap",
        type=float,
        default=0.3,
        help="cascade: negatives are windows overlapping every box by less (training and "
        "the test windows of the goal alike)",
    )
    ap.add_argument(
        "--extra-negatives",
        nargs="*",
        default=[],
        metavar="DIR[:STEP[:OFFSET]]",
        help="cascade: more training negatives from the images of these folders (no "
        "raccoon in them), every STEP-th file from the OFFSET-th",
    )
    ap.add_argument(
        "--n-extra-negatives",
        type=int,
        default=None,
        help="windows drawn from the --extra-negatives images (default: --n-negatives)",
    )
    ap.add_argument(
        "--test-negatives",
        nargs="*",
        default=[],
        metavar="DIR[:STEP[:OFFSET]]",
        help="cascade: test images without raccoons (every STEP-th file from the OFFSET-th, "
        "natural order), every window a test negative; disjoint from --extra-negatives",
    )
    ap.add_argument("--flat-weak", type=int, default=400)
    ap.add_argument(
        "--seed",
        type=int,
        default=0,
        help="cascade: random_state (its negative pool, validation split and stage draws; "
        "the flat booster trains on the same windows)",
    )
    ap.add_argument(
        "--flat-cache",
        default="",
        help="directory keeping flat boosters (maxmargin.save files keyed by a hash of "
        "their training windows), so runs that share the windows train it once",
    )
    ap.add_argument("--rank-windows", type=int, default=200, help="training windows / image")
    ap.add_argument("--candidates", type=int, default=1000)
    ap.add_argument("--rank-C", type=float, default=1.0)
    ap.add_argument("--graphs", default="complete,bipartite,star")
    ap.add_argument("--rescalings", default="margin,slack")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: svm,cascade,rank")
    ap.add_argument("--plot", default="docs/img/detection_recall_overlap.png")
    ap.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=None,
        help="run once per seed (as --seed) into one file: seeds[SEED] holds each run's results",
    )
    ap.add_argument("--out", default="benchmarks/results/detection.json")
    args = ap.parse_args(argv)
    if args.seeds:
        return run_seeds(sys.argv[1:] if argv is None else list(argv), args.seeds, args.out)
    skip = set(filter(None, args.skip.split(",")))

    t0 = time.perf_counter()
    images, boxes, names = load_voc_folder(
        args.data / "images", args.data / "annotations", max_side=args.max_side, clip=True
    )
    tr = slice(0, args.n_train)
    te = slice(len(images) - args.n_test, len(images))
    tri, trb, tei, teb = images[tr], boxes[tr], images[te], boxes[te]
    print(f"loaded {len(images)} images in {time.perf_counter() - t0:.1f} s", flush=True)
    hog = dict(
        window=(args.window, args.window),
        cell=8,
        aspect_ratios=tuple(float(a) for a in args.aspect_ratios.split(",")),
        colour=bool(args.colour),
        channels=bool(args.channels),
        channel_cells=tuple(int(v) for v in args.channel_cells.split(",")),
        location_prior=not args.no_location_prior,
    )
    caps = [int(v) for v in str(args.max_weak).split(",")]
    max_weak = caps[0] if len(caps) == 1 else caps
    out: dict = {
        "dataset": "raccoon",
        "n_train": len(tri),
        "n_test": len(tei),
        "test_images": [names[te][0], names[te][-1]],
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }

    # ---- a detector-free baseline: one box per test image, the median training box
    # relative to its image (the raccoons fill most of their photos)
    rel = np.array(
        [
            [b[0] / im.shape[1], b[1] / im.shape[0], b[2] / im.shape[1], b[3] / im.shape[0]]
            for im, bb in zip(tri, trb)
            for b in np.asarray(bb).reshape(-1, 4)
        ]
    )
    med = np.median(rel, axis=0)
    prior = [np.array([med * np.tile([im.shape[1], im.shape[0]], 2)]) for im in tei]
    ap_prior = average_precision(prior, [np.ones(1)] * len(tei), teb)
    out["prior_box"] = {"ap50": ap_prior, "relative_box": med.tolist()}
    print(f"prior box (median training box, one per image): AP {ap_prior:.3f}", flush=True)

    # ---- how well the pyramid's windows can fit the test boxes at all
    from maxmargin.apps.detection import HOGPyramid
    from maxmargin.tasks.boxes import pairwise_overlap

    cover = {}
    for name, ratios in (("square", (1.0,)), ("aspect_ratios", hog["aspect_ratios"])):
        best = []
        for im, bb in zip(tei, teb):
            pyr = HOGPyramid(im, window=hog["window"], cell=8, aspect_ratios=ratios)
            best.append(pairwise_overlap(pyr.boxes(*pyr.windows()), bb).max(axis=0))
        best = np.concatenate(best)
        cover[name] = {
            "ratios": list(ratios),
            "mean_best_overlap": float(best.mean()),
            "share_above_0.5": float((best > 0.5).mean()),
            "share_above_0.7": float((best > 0.7).mean()),
        }
        print(
            f"window coverage ({name} {list(ratios)}): mean best overlap {best.mean():.3f}, "
            f">0.5 {np.mean(best > 0.5):.3f}, >0.7 {np.mean(best > 0.7):.3f}",
            flush=True,
        )
    out["window_coverage"] = cover

    # ---- HOG + linear SVM with hard-negative mining
    if "svm" not in skip:
        t = time.perf_counter()
        svm = HOGSVMDetector(C=args.svm_C, random_state=0, **hog).fit(tri, trb)
        fit_s = time.perf_counter() - t
        res, per_img = detect_all(svm, tei)
        ap_svm = average_precision([r[0] for r in res], [r[1] for r in res], teb)
        out["svm"] = {
            "ap50": ap_svm,
            "fit_seconds": fit_s,
            "seconds_per_image": per_img,
            "converged": svm.converged_,
            "n_positives": svm.n_positives_,
            "mining": svm.mining_history_,
        }
        print(f"svm: AP {ap_svm:.3f}, fit {fit_s:.1f} s, {per_img * 1e3:.1f} ms/image", flush=True)
        for h in svm.mining_history_:
            print(
                f"  round {h['iteration']}: hard {h['n_hard']} of {h['n_negatives']}, "
                f"+{h['n_new']}, ws {h['working_set']}, objective {h['objective']:.4g}, "
                f"gap {h['gap']:.2g}",
                flush=True,
            )
        if args.ablation:
            t = time.perf_counter()
            blind = HOGSVMDetector(
                C=args.svm_C, random_state=0, **{**hog, "location_prior": False}
            ).fit(tri, trb)
            fit_b = time.perf_counter() - t
            res, per_b = detect_all(blind, tei)
            ap_b = average_precision([r[0] for r in res], [r[1] for r in res], teb)
            out["svm_no_location_prior"] = {
                "ap50": ap_b,
                "fit_seconds": fit_b,
                "seconds_per_image": per_b,
            }
            print(f"svm without location prior: AP {ap_b:.3f}, fit {fit_b:.1f} s", flush=True)

    # ---- boosted cascades
    if "cascade" not in skip:
        out["cascade"] = {}
        extra = None
        bg_files, bg_counts = [], {}
        if args.test_negatives:
            bg_files, bg_counts = select_image_files(args.test_negatives, "--test-negatives")
        if args.extra_negatives:
            t = time.perf_counter()
            x_files, counts = select_image_files(args.extra_negatives)
            check_disjoint(x_files, bg_files)
            extra = load_images(x_files, args.max_side)
            out["extra_negatives"] = {
                "folders": counts,
                "n_images": len(extra),
                "load_seconds": time.perf_counter() - t,
            }
            print(f"extra negative images: {counts} ({len(extra)})", flush=True)
        bg_images = None
        if bg_files:
            t = time.perf_counter()
            bg_images = load_images(bg_files, args.max_side)
            out["test_negatives"] = {
                "folders": bg_counts,
                "n_images": len(bg_images),
                "files": [str(f) for f in bg_files],
                "load_seconds": time.perf_counter() - t,
            }
            print(f"test negative images: {bg_counts} ({len(bg_images)})", flush=True)
        Xp_te = Xn_te = Xbg = None
        flat = None
        for learner in filter(None, args.stage_learners.split(",")):
            t = time.perf_counter()
            cas = CascadeDetector(
                stage_learner=learner,
                cost_ratio=args.cost_ratio,
                rule=args.rule,
                fallback=args.fallback,
                n_stages=args.n_stages,
                max_weak=max_weak,
                target_recall=args.target_recall,
                target_far=args.target_far,
                n_negatives=args.n_negatives,
                neg_overlap=args.neg_overlap,
                recycle=args.recycle,
                chain=bool(args.chain),
                bootstrap=bool(args.bootstrap),
                n_extra_negatives=args.n_extra_negatives,
                random_state=args.seed,
                **hog,
            ).fit(tri, trb, negative_images=extra)
            fit_s = time.perf_counter() - t
            res, per_img = detect_all(cas, tei)
            ap_c = average_precision([r[0] for r in res], [r[1] for r in res], teb)
            if Xp_te is None:
                Xp_te, Xn_te, ov_te = window_set(cas, tei, teb)
            c = cas.cascade_
            fm = c.figure_of_merit(Xn_te)
            R = float((c.predict(Xp_te) == 1).mean())
            F = float((c.predict(Xn_te) == 1).mean())
            out["cascade"][learner] = {
                "ap50": ap_c,
                "fit_seconds": fit_s,
                "seconds_per_image": per_img,
                "test_window_recall": R,
                "test_window_far": F,
                "figure_of_merit": fm,
                "stages": c.stages_,
                "n_test_pos_windows": len(Xp_te),
                "n_test_neg_windows": len(Xn_te),
                "n_bootstrapped": cas.n_bootstrapped_,
                "n_extra_negatives": cas.n_extra_negatives_,
                "n_train_negatives": cas.n_negatives_,
            }
            print(
                f"cascade[{learner}]: AP {ap_c:.3f}, fit {fit_s:.1f} s, {per_img * 1e3:.1f} "
                f"ms/image, window recall {R:.3f} FAR {F:.2g}, expected weak "
                f"{fm['expected_weak']:.2f} (distinct {fm['expected_distinct_weak']:.2f}) "
                f"of {fm['total_weak']}",
                flush=True,
            )
            for k, (s, e) in enumerate(zip(c.stages_, fm["entering"])):
                print(
                    f"  stage {k}: {s['n_weak']} weak, entering {e:.4g}, "
                    f"val recall {s['recall']:.3f} FAR {s['far']:.3g}, "
                    f"{s['n_neg']} negatives ({s.get('n_bootstrapped', 0)} bootstrapped)",
                    flush=True,
                )
            # flat booster at equal recall, trained on exactly the cascade's windows
            # (every cascade here draws the same set: same random_state and settings)
            if flat is None:
                t = time.perf_counter()
                Xtr, ytr, _ = cas.training_set(tri, trb, negative_images=extra)
                flat, cached = fit_flat(Xtr, ytr, args.flat_weak, args.flat_cache)
                out["flat_fit_seconds"] = time.perf_counter() - t
                out["flat_from_cache"] = cached
                out["flat_training_windows"] = [int((ytr == 1).sum()), int((ytr == 0).sum())]
            T, rows, floor = flat_weak_needed(flat, Xp_te, Xn_te, R, F, args.flat_weak)
            ratio = None if T is None else fm["expected_weak"] / T
            # equal cost: the flat booster with as many weak classifiers as the cascade
            # evaluates on average (rounded), at the cascade's recall
            T_eq = max(1, round(fm["expected_weak"]))
            rec_eq, far_eq = flat_curve(flat, Xp_te, Xn_te, R, T_eq)
            # the false positives left: how much of a raccoon they hold (the cascade's,
            # and the flat booster's at its lowest FAR for the cascade's recall)
            acc_c = c.predict(Xn_te) == 1
            flat_curve(flat, Xp_te, Xn_te, R, floor[1])  # fills _SCORES
            Fp_f, Fn_f = _SCORES[(id(flat), id(Xp_te), id(Xn_te))]
            sp_ = np.sort(Fp_f[:, floor[1] - 1])
            thr_f = sp_[min(int(np.floor((1.0 - R) * len(sp_))), len(sp_) - 1)] - 1e-12
            acc_f = Fn_f[:, floor[1] - 1] > thr_f
            out["cascade"][learner]["false_positive_overlap"] = {
                "all_test_negatives": overlap_shares(ov_te, np.ones(len(ov_te), dtype=bool)),
                "cascade": overlap_shares(ov_te, acc_c),
                f"flat_T{floor[1]}": overlap_shares(ov_te, acc_f),
            }
            print(
                f"  false positives by overlap: {out['cascade'][learner]['false_positive_overlap']}"
            )
            out["cascade"][learner]["flat"] = {
                "T_needed": T,
                "ratio": ratio,
                "min_far_at_recall": floor[0],
                "T_at_min_far": floor[1],
                "ratio_at_min_far": fm["expected_weak"] / floor[1],
                "equal_cost": {
                    "T": T_eq,
                    "recall": float(rec_eq[-1]),
                    "far": float(far_eq[-1]),
                    "cascade_far": F,
                },
                "T_needed_if_far_times": flat_sensitivity(flat, Xp_te, Xn_te, R, F, args.flat_weak),
                "curve": rows,
            }
            # every prefix of the cascade (its first K stages) is a cascade too: its
            # recall, FAR, cost and the flat booster's T for them (a diagnostic of where
            # the stages stop paying off; the goal is judged on the whole cascade)
            depth_p, _ = c._depth_scores(Xp_te)
            depth_n, _ = c._depth_scores(Xn_te)
            n_weak = np.array([t["n_weak"] for t in c.stages_])
            prefixes = []
            for K in range(1, c.n_stages_ + 1):
                Rk, Fk = float((depth_p >= K).mean()), float((depth_n >= K).mean())
                Ek = float(sum((depth_n >= j).mean() * n_weak[j] for j in range(K)))
                Tk, _, fl = flat_weak_needed(flat, Xp_te, Xn_te, Rk, Fk, args.flat_weak)
                prefixes.append(
                    {
                        "stages": K,
                        "recall": Rk,
                        "far": Fk,
                        "expected_weak": Ek,
                        "T_needed": Tk,
                        "ratio": None if Tk is None else Ek / Tk,
                        "T_needed_far_x1_1": flat_weak_needed(
                            flat, Xp_te, Xn_te, Rk, 1.1 * Fk, args.flat_weak
                        )[0],
                        "flat_min_far": fl[0],
                    }
                )
            out["cascade"][learner]["flat"]["prefixes"] = prefixes
            # the same comparison on the test negatives that touch no raccoon (overlap
            # 0: background only, the kind of negative the --extra-negatives images
            # add): the cascade's FAR and cost there, and the flat booster's T for that
            # FAR at the cascade's recall R (thresholds from all test positives, as above)
            bg = ov_te == 0
            if bg.any():
                Xb = Xn_te[bg]
                Fb = float((c.predict(Xb) == 1).mean())
                Eb = c.figure_of_merit(Xb)["expected_weak"]
                Tb, _, flb = flat_weak_needed(flat, Xp_te, Xb, R, Fb, args.flat_weak)
                Tb11 = flat_weak_needed(flat, Xp_te, Xb, R, 1.1 * Fb, args.flat_weak)[0]
                _, fb_curve = flat_curve(flat, Xp_te, Xb, R, args.flat_weak)
                out["cascade"][learner]["flat"]["background_only"] = {
                    "n_windows": int(bg.sum()),
                    "cascade_far": Fb,
                    "expected_weak": Eb,
                    "T_needed": Tb,
                    "ratio": None if Tb is None else Eb / Tb,
                    "T_needed_far_x1_1": Tb11,
                    "flat_min_far": flb[0],
                    "T_at_min_far": flb[1],
                    "flat_far_at_T": {
                        int(T): float(fb_curve[T - 1])
                        for T in (1, 2, 5, 10, 20, 30, 50, 100, 200, 300, 400)
                        if T <= len(fb_curve)
                    },
                }
                print(f"  background only: {out['cascade'][learner]['flat']['background_only']}")
                _SCORES.clear()
            # the goal on test negatives dominated by background (--test-negatives):
            # every window of the raccoon-free test images, described as the raccoon
            # test windows are; (a) the raccoon test negatives as above, (b) those and
            # the background windows together, (c) the background windows alone
            if bg_images is not None:
                if Xbg is None:
                    t = time.perf_counter()
                    Xbg, n_per_image = background_windows(cas, bg_images)
                    bounds = np.cumsum([0, *bg_counts.values()])
                    out["test_negatives"].update(
                        n_windows=len(Xbg),
                        windows_per_folder={
                            k: int(sum(n_per_image[a:b]))
                            for k, a, b in zip(bg_counts, bounds[:-1], bounds[1:])
                        },
                        describe_seconds=time.perf_counter() - t,
                    )
                    print(
                        f"test negative windows: {len(Xbg)} from {len(bg_images)} images "
                        f"({out['test_negatives']['windows_per_folder']})",
                        flush=True,
                    )
                t = time.perf_counter()
                tn = {"raccoon_only": compare_on_negatives(c, flat, Xp_te, Xn_te, args.flat_weak)}
                Xall = np.vstack([Xn_te, Xbg])
                tn["raccoon_plus_background"] = compare_on_negatives(
                    c, flat, Xp_te, Xall, args.flat_weak
                )
                del Xall
                tn["background_only"] = compare_on_negatives(c, flat, Xp_te, Xbg, args.flat_weak)
                # (c) by folder (a diagnostic: which kind of background the FAR is made of)
                wb = np.cumsum([0, *out["test_negatives"]["windows_per_folder"].values()])
                tn["background_by_folder"] = {
                    k: compare_on_negatives(c, flat, Xp_te, Xbg[a:b], args.flat_weak)
                    for k, a, b in zip(bg_counts, wb[:-1], wb[1:])
                }
                tn["seconds"] = time.perf_counter() - t
                out["cascade"][learner]["test_negatives"] = tn
                rows_ = [(k, tn[k]) for k in ("raccoon_only", "raccoon_plus_background")]
                rows_ += [("background_only", tn["background_only"])]
                rows_ += [(f"background {k}", r) for k, r in tn["background_by_folder"].items()]
                for name, r in rows_:
                    print(
                        f"  test negatives {name}: {r['n_neg_windows']} windows, recall "
                        f"{r['recall']:.3f} FAR {r['far']:.4g} ({r['n_false_positives']} FP), "
                        f"expected weak {r['expected_weak']:.2f}, T_flat {r['T_needed']} "
                        f"(F x1.1: {r['T_needed_far_x1_1']}), ratio {r['ratio']}, flat's "
                        f"lowest FAR {r['min_far_at_recall']:.4g} (T = {r['T_at_min_far']})",
                        flush=True,
                    )
            for row in prefixes:
                print(
                    "  prefix {stages}: recall {recall:.3f} FAR {far:.4f} weak {expected_weak:.1f}"
                    " T_flat {T_needed} (x1.1: {T_needed_far_x1_1}) ratio {ratio}".format(**row),
                    flush=True,
                )
            print(
                f"  flat Gentle AdaBoost needs T = {T} weak for recall {R:.3f} at FAR <= "
                f"{F:.3g}; cascade/flat = {ratio}; its lowest FAR at that recall "
                f"{floor[0]:.3g} (T = {floor[1]}); at equal cost (T = {T_eq}) its FAR "
                f"{far_eq[-1]:.3g}",
                flush=True,
            )

    # ---- proposal ranking
    if "rank" not in skip:
        ks = (1, 10, 100, 1000)
        rank: dict = {}
        curves = {}
        pool = None
        for graph in filter(None, args.graphs.split(",")):
            for resc in filter(None, args.rescalings.split(",")):
                t = time.perf_counter()
                pr = ProposalRanker(
                    C=args.rank_C,
                    graph=graph,
                    rescaling=resc,
                    n_train_windows=args.rank_windows,
                    n_candidates=args.candidates,
                    random_state=0,
                    window=(4, 4),
                ).fit(tri, trb)
                fit_s = time.perf_counter() - t
                t = time.perf_counter()
                proposed = [pr.propose(im, rng=1000 + k) for k, im in enumerate(tei)]
                ranked = [p[0] for p in proposed]
                per_img = (time.perf_counter() - t) / len(tei)
                # the ranker as a detector: its top 10 windows after NMS 0.3, ranking scores
                keep = [nms(b, sc, 0.3)[:10] for b, sc in proposed]
                ap_rank = average_precision(
                    [b[k] for (b, _), k in zip(proposed, keep)],
                    [sc[k] for (_, sc), k in zip(proposed, keep)],
                    teb,
                )
                if pool is None:
                    pool = [pr.candidates(im, rng=1000 + k) for k, im in enumerate(tei)]
                    rank["unranked"] = {
                        "recall50": {
                            k: float(recall_overlap(pool, teb, k, [0.5])[1][0]) for k in ks
                        },
                        "auc": {k: recall_overlap_auc(pool, teb, k) for k in ks},
                    }
                    curves["unranked, 100"] = recall_overlap(pool, teb, 100)
                name = f"{graph}/{resc}"
                rank[name] = {
                    "recall50": {k: float(recall_overlap(ranked, teb, k, [0.5])[1][0]) for k in ks},
                    "auc": {k: recall_overlap_auc(ranked, teb, k) for k in ks},
                    "ap50_top10_nms03": ap_rank,
                    "fit_seconds": fit_s,
                    "seconds_per_image": per_img,
                    "rank_iterations": pr.ranker_.n_iter_,
                    "converged": pr.ranker_.converged_,
                }
                curves[f"{name}, 100 ({rank[name]['auc'][100]:.3f})"] = recall_overlap(
                    ranked, teb, 100
                )
                print(
                    f"ranking {name}: AUC@1/10/100/1000 "
                    + " ".join(f"{rank[name]['auc'][k]:.3f}" for k in ks)
                    + "  recall@0.5 "
                    + " ".join(f"{rank[name]['recall50'][k]:.3f}" for k in ks)
                    + f"  AP(top 10) {ap_rank:.3f}  fit {fit_s:.1f} s",
                    flush=True,
                )
        print(
            "unranked: AUC "
            + " ".join(f"{rank['unranked']['auc'][k]:.3f}" for k in ks)
            + "  recall@0.5 "
            + " ".join(f"{rank['unranked']['recall50'][k]:.3f}" for k in ks),
            flush=True,
        )
        out["ranking"] = rank
        if args.plot:
            from maxmargin.cli.plots import plot_recall_overlap

            path = Path(args.plot)
            plot_recall_overlap(
                path if path.is_absolute() else ROOT / path,
                curves,
                title="raccoon test: recall vs overlap, top 100 windows",
            )
    out["total_seconds"] = time.perf_counter() - t0
    path = write_result(args.out, out)
    print(f"wrote {path} ({out['total_seconds']:.0f} s)")


def run_seeds(argv: list[str], seeds: list[int], out_path: str) -> None:
    """``main`` once per seed (the same arguments, ``--seed SEED``), one after the other,
    into one file: ``{"seeds": {"SEED": that run's results}}`` with this command's
    provenance (each run's own file is a temporary one)."""
    rest, skip = [], False
    for a in argv:  # drop --seeds and its values, and --out
        if a in ("--seeds", "--out"):
            skip = a
            continue
        if skip == "--seeds" and a.lstrip("-").isdigit():
            continue
        if skip == "--out":
            skip = False
            continue
        skip = False
        if a.startswith(("--seeds=", "--out=")):
            continue
        rest.append(a)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            one = Path(tmp) / f"seed{seed}.json"
            main([*rest, "--seed", str(seed), "--out", str(one)])
            runs[str(seed)] = read_result(one)
    path = write_result(out_path, {"seeds": runs})
    print(f"wrote {path} (seeds {seeds})")


if __name__ == "__main__":
    main()
