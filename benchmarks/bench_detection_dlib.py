"""Raccoon detection against dlib (issue 31): dlib's max-margin HOG object detector
(``dlib.train_simple_object_detector``: a structural SVM over all windows of a HOG
pyramid, King, "Max-margin object detection", arXiv 1502.00046, 2015) trained on exactly
our split, scored by our AP code over its full score range, and scanning time per image
of dlib and of our detectors measured in the same run.

Data: ../shared/data/detection/raccoon, images 1-160 train, 161-200 test (natural
order), downscaled to ``--max-side`` px (boxes alike).

* **Constant box**: the median training box relative to its image, once per test image
  (no learning).
* **dlib**: ``simple_object_detector_training_options`` with ``num_threads=1``,
  ``add_left_right_image_flips`` (``--dlib-flips``) and C chosen on a validation split
  of the training images (train on 1-120, AP on 121-160, C in ``--dlib-C``), then
  retrained on all 160 with that C.  dlib scans one window shape (the training boxes'
  mean aspect ratio) and refuses a training set with a box it cannot match with overlap
  > 0.5 ("impossible set of object boxes"); such images are dropped from dlib's
  training set (their number and names are recorded), the test set is never changed.
  Test detections: ``detector.run(image, 0, adjust_threshold)`` with
  ``--dlib-adjust`` (default -3: far below its decision threshold 0, so the whole
  score range enters the AP); AP at its default threshold too.
* **Ours**: ``HOGSVMDetector`` variants given as ``--svm NAME:key=value,...`` (values
  as Python literals), AP at overlap 0.5 of the top 100 detections per image after NMS.
* **Scanning time per test image** (all 40, ``--repeat`` passes, the best pass): dlib's
  ``run`` (pyramid, HOG, filter, its NMS) and our ``detect`` (pyramid, HOG, filter
  correlation, NMS; the cascades: pyramid, HOG, the compiled cascade walk with early
  exit, NMS), both single-threaded, in this process one after the other.
  ``--cpu-lock PATH``: the timing section (only it, not the training) holds that
  ``flock`` lock, so one unlocked command trains and then times under the lock (the
  ``detection_scan_time`` entry); the load average before and after is recorded.  With
  a single ``--dlib-C`` value dlib is trained with it (no validation).
* ``--extent 'WEIGHT/OVERLAP;...'``: every SVM fitted with an extent filter
  (``extent=``) also scored with those ``extent_weight`` / ``extent_overlap`` (the
  filters kept; ``ap50_by_extent``).
* ``--time-image-padding``: each SVM with context is timed a second time as the previous
  round scanned it (the whole image edge-padded by ``(f - 1) / 2`` of its larger side
  plus a cell, the filter scanned over it without grid padding), beside the padded grids.
* ``--cascade-fhog`` / ``--cascade-fhog-prior``: a :class:`CascadeDetector` over FHOG
  cells (the same pyramid as the ``fhog`` SVM: one aspect ratio, step 1.2), without /
  with the location prior.

    python benchmarks/bench_detection_dlib.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import ast
import copy
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, write_result
from maxmargin.apps.detection import (
    CascadeDetector,
    HOGSVMDetector,
    average_precision,
    load_voc_folder,
)
from maxmargin.tasks.boxes import pairwise_overlap


def parse_variant(spec):
    """``NAME:key=value,key=value`` -> (name, dict); values are Python literals."""
    name, _, rest = spec.partition(":")
    params = {}
    for part in filter(None, rest.split(";")):
        k, _, v = part.partition("=")
        params[k.strip()] = ast.literal_eval(v.strip())
    return name, params


def u8(image):
    a = np.asarray(image)
    if a.dtype != np.uint8:
        a = np.clip(np.round(a * 255 if a.max() <= 1 else a), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(a)


def time_per_image(fn, images, repeat):
    """Best of ``repeat`` passes over all images: seconds per image."""
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        for im in images:
            fn(im)
        best = min(best, (time.perf_counter() - t) / len(images))
    return best


def top1_kind(b, t, ov):
    """What an image's top detection ``b`` is against its best-overlapping truth box
    ``t`` (overlap ``ov``): "hit" (>= 0.5), "background" (< 0.1), "part" (smaller than
    the truth, 70 % of it inside), "larger" (larger, 70 % of the truth inside it), else
    "offset"."""
    if ov >= 0.5:
        return "hit"
    if ov < 0.1:
        return "background"
    iw = min(b[0] + b[2], t[0] + t[2]) - max(b[0], t[0])
    ih = min(b[1] + b[3], t[1] + t[3]) - max(b[1], t[1])
    inter = max(iw, 0.0) * max(ih, 0.0)
    ab, at = b[2] * b[3], t[2] * t[3]
    if ab < at and inter > 0.7 * ab:
        return "part"
    if ab > at and inter > 0.7 * at:
        return "larger"
    return "offset"


def image_padded_detect(det):
    """The previous round's scan of a detector with context, for timing beside the
    padded grids: the whole image padded by edge replication (a margin of ``ceil((f - 1)
    / 2 max(H, W)) + cell`` pixels, ``f`` the larger growth factor), the same filter
    scanned over it without grid padding, the windows shrunk back."""
    from maxmargin.apps.detection.detector import _from_context

    plain = HOGSVMDetector(**{**det.get_params(), "context": 0.0})
    for a in ("coef_", "intercept_", "distribution_", "n_train_images_", "regression_coef_"):
        setattr(plain, a, getattr(det, a, None))
    f = det._context_factors()

    def detect(image):
        a = np.asarray(image)
        m = int(np.ceil((max(f) - 1) / 2 * max(a.shape[:2]))) + int(det.cell)
        padded = np.pad(a, ((m, m), (m, m)) + ((0, 0),) * (a.ndim - 2), mode="edge")
        b, s = plain.detect(padded)
        b[:, :2] -= m
        b = _from_context(b, f, a.shape)
        keep = (b[:, 2] > 0) & (b[:, 3] > 0)
        return b[keep], s[keep]

    return detect


def ap_of(res, truth):
    return average_precision([r[0] for r in res], [r[1] for r in res], truth)


# ---------------------------------------------------------------------------- dlib
def dlib_rects(dlib, b):
    return [
        dlib.rectangle(round(x), round(y), round(x + w) - 1, round(y + h) - 1)
        for x, y, w, h in np.asarray(b).reshape(-1, 4)
    ]


def dlib_window(boxes, area):
    """dlib's window shape: the training boxes' mean width and height scaled to ``area``
    pixels (its ``detection_window_size``)."""
    allb = np.vstack([np.asarray(b).reshape(-1, 4) for b in boxes])
    mw, mh = allb[:, 2].mean(), allb[:, 3].mean()
    sc = np.sqrt(area / (mw * mh))
    return mw * sc, mh * sc


def dlib_reach(boxes, window, step=6 / 5):
    """Best overlap of each box with a window of dlib's shape centred on it, over dlib's
    pyramid without upsampling (window sizes ``window * (6/5)^k``, k >= 0)."""
    ww, hh = window[0] * step ** np.arange(30), window[1] * step ** np.arange(30)
    out = []
    for b in boxes:
        b = np.asarray(b).reshape(-1, 4)
        best = np.zeros(len(b))
        for k, (x, y, w, h) in enumerate(b):
            cx, cy = x + w / 2, y + h / 2
            cand = np.stack([cx - ww / 2, cy - hh / 2, ww, hh], 1)
            best[k] = pairwise_overlap(cand, b[k : k + 1]).max()
        out.append(best)
    return out


def dlib_train(dlib, images, boxes, C, flips, names, area, path):
    """Train dlib's detector (window of ``area`` pixels, no upsampling) and save it to
    ``path``; the images with a box it cannot match are dropped, tightening the reach
    margin until dlib accepts the set.  Returns (``fhog_object_detector``, dropped
    names, margin)."""
    reach = dlib_reach(boxes, dlib_window(boxes, area))
    for margin in (0.03, 0.06, 0.09, 0.12, 0.15, 0.2, 0.25, 0.3):
        keep = [k for k, r in enumerate(reach) if len(r) and r.min() > 0.5 + margin]
        opt = dlib.simple_object_detector_training_options()
        opt.C = float(C)
        opt.add_left_right_image_flips = bool(flips)
        opt.num_threads = 1
        opt.be_verbose = False
        opt.detection_window_size = int(area)
        opt.upsample_limit = 0
        try:
            det = dlib.train_simple_object_detector(
                [u8(images[k]) for k in keep], [dlib_rects(dlib, boxes[k]) for k in keep], opt
            )
        except RuntimeError as e:
            if "impossible" not in str(e):
                raise
            continue
        if det.upsampling_amount != 0:
            raise RuntimeError("dlib upsampled the images although upsample_limit = 0")
        det.save(str(path))
        dropped = [names[k] for k in range(len(images)) if k not in set(keep)]
        return dlib.fhog_object_detector(str(path)), dropped, margin
    raise RuntimeError("dlib refused every reduced training set")


def dlib_detect(det, image, adjust):
    rects, scores, _ = det.run(u8(image), 0, float(adjust))
    b = np.array(
        [[r.left(), r.top(), r.right() - r.left() + 1, r.bottom() - r.top() + 1] for r in rects],
        dtype=np.float64,
    ).reshape(-1, 4)
    return b, np.asarray(scores, dtype=np.float64)


def time_only(args):
    """Scanning time per test image of the saved detectors (dlib first), one after the
    other in this process; merged into the training run's result file."""
    import json

    import maxmargin

    images, boxes, _ = load_voc_folder(
        args.data / "images", args.data / "annotations", max_side=args.max_side, clip=True
    )
    tei = images[len(images) - args.n_test :]
    teb = boxes[len(images) - args.n_test :]
    out_path = Path(args.out)
    prev = json.loads(out_path.read_text()) if out_path.exists() else {}
    ap_prov = prev.pop("provenance", None)
    timing, ap, weak = {}, {}, {}
    if (args.models / "dlib.svm").exists():
        import dlib

        det = dlib.fhog_object_detector(str(args.models / "dlib.svm"))
        adjust = float(args.dlib_adjust)
        ap["dlib"] = ap_of([dlib_detect(det, im, adjust) for im in tei], teb)
        timing["dlib"] = time_per_image(lambda im: det.run(u8(im), 0, adjust), tei, args.repeat)
    for f in sorted(args.models.glob("*.npz")):
        det = maxmargin.load(f)
        key = f"svm {f.stem[4:]}" if f.stem.startswith("svm_") else f.stem
        # one untimed pass (compiles): AP of the loaded model, and for a cascade the
        # weak classifiers its scan evaluated per window (counted by the scan)
        res, n_weak, n_win = [], 0, 0
        for im in tei:
            res.append(det.detect(im))
            if hasattr(det, "last_scan_weak_"):
                pyr = det._pyramid(im)
                n_weak += det.last_scan_weak_
                n_win += sum(int(np.prod(pyr.positions(k))) for k in range(len(pyr.levels)))
        ap[key] = ap_of(res, teb)
        if n_win:
            weak[key] = n_weak / n_win
        timing[key] = time_per_image(det.detect, tei, args.repeat)
    for k, v in timing.items():
        ratio = f" ({v / timing['dlib']:.2f} x dlib)" if "dlib" in timing else ""
        print(f"time {k}: {v * 1e3:.2f} ms/image{ratio}", flush=True)
    # the training run's provenance (kept when this file was timed before)
    prev.setdefault("ap_run_provenance", ap_prov)
    prev["seconds_per_image"] = timing
    prev["timing_note"] = (
        "seconds_per_image: --time-only on the saved models (timing_settings.models), "
        "dlib first, one process, best of `repeat` passes over the test images; AP and "
        "fit figures above it: the training run (ap_run_provenance)"
    )
    if "dlib" in timing:
        prev["time_ratio_to_dlib"] = {k: v / timing["dlib"] for k, v in timing.items()}
    prev["timing_settings"] = {
        "repeat": args.repeat,
        "n_images": len(tei),
        "models": sorted(p.name for p in args.models.iterdir()),
    }
    # AP of each timed model on the test images (from the loaded file) and, for the
    # cascades, the weak classifiers evaluated per window by the scan
    prev["timed_models_ap50"] = ap
    prev["cascade_weak_per_window"] = weak
    path = write_result(args.out, prev)
    print(f"wrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA / "detection/raccoon")
    ap.add_argument("--max-side", type=int, default=240)
    ap.add_argument("--n-train", type=int, default=160)
    ap.add_argument("--n-test", type=int, default=40)
    ap.add_argument("--n-val", type=int, default=40, help="validation images for dlib's C")
    ap.add_argument("--dlib-C", default="1,3,10,30,100")
    ap.add_argument("--dlib-flips", type=int, default=1)
    ap.add_argument("--dlib-adjust", type=float, default=-3.0)
    ap.add_argument(
        "--dlib-window",
        type=int,
        default=56,
        help="dlib's detection_window_size is this squared (56: our 7 x 7 cells of 8 px)",
    )
    ap.add_argument(
        "--svm",
        action="append",
        default=None,
        help="NAME:key=value;key=value (HOGSVMDetector parameters), repeatable",
    )
    ap.add_argument(
        "--nms",
        default="",
        help="extra NMS settings to score every SVM variant with, after fitting: "
        "'THRESHOLD/COVER;...' (COVER 'none' for the overlap alone)",
    )
    ap.add_argument(
        "--regress",
        default="",
        help="box regressions to score every SVM variant with, after fitting (the SVM "
        "kept): 'PENALTY/OVERLAP;...' (HOGSVMDetector box_regression / regression_overlap)",
    )
    ap.add_argument(
        "--extent",
        default="",
        help="extent re-scorings to score every SVM fitted with an extent filter with, "
        "after fitting: 'WEIGHT/OVERLAP;...' (HOGSVMDetector extent_weight / extent_overlap)",
    )
    ap.add_argument(
        "--cascade",
        action="store_true",
        help="also train and time the HOG-only cascade without the location prior",
    )
    ap.add_argument(
        "--cascade-prior",
        action="store_true",
        help="also train and time the HOG cascade with the location prior (cascade_hogprior)",
    )
    ap.add_argument(
        "--cascade-fhog",
        action="store_true",
        help="also train and time the FHOG-cell cascade without the location prior",
    )
    ap.add_argument(
        "--cascade-fhog-prior",
        action="store_true",
        help="also train and time the FHOG-cell cascade with the location prior",
    )
    ap.add_argument(
        "--cpu-lock",
        default=None,
        help="hold this flock lock file during the timing section (not the training)",
    )
    ap.add_argument(
        "--time-image-padding",
        action="store_true",
        help="also time each SVM with context as the previous round scanned it: the whole "
        "image edge-padded, the filter scanned without grid padding (timing only)",
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-dlib", action="store_true")
    ap.add_argument(
        "--validate",
        action="store_true",
        help="model selection: train on the first n_train - n_val images, test on the "
        "last n_val training images (the test images are not read); no dlib (its "
        "validation APs on the same split are in the main run's dlib.validation)",
    )
    ap.add_argument(
        "--models",
        type=Path,
        default=None,
        help="folder to save the trained detectors in (and to load them from with --time-only)",
    )
    ap.add_argument(
        "--time-only",
        action="store_true",
        help="load the detectors of --models and only time them on the test images; the "
        "timing is added to the --out file of the run that trained them (its provenance "
        "kept as ap_run_provenance). Run this one under the CPU lock.",
    )
    ap.add_argument(
        "--out",
        default=None,
        help="result file (default benchmarks/results/detection_dlib.json, with "
        "--validate benchmarks/results/detection_dlib_validation.json)",
    )
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = "benchmarks/results/detection_dlib" + (
            "_validation.json" if args.validate else ".json"
        )
    if args.time_only:
        return time_only(args)
    variants = [parse_variant(s) for s in (args.svm or ["default:"])]

    images, boxes, names = load_voc_folder(
        args.data / "images", args.data / "annotations", max_side=args.max_side, clip=True
    )
    tri, trb, trn = images[: args.n_train], boxes[: args.n_train], names[: args.n_train]
    te = slice(len(images) - args.n_test, len(images))
    if args.validate:
        nv = args.n_train - args.n_val
        te = slice(nv, args.n_train)
        tri, trb, trn = images[:nv], boxes[:nv], names[:nv]
        args.skip_dlib = True
    tei, teb = images[te], boxes[te]
    out: dict = {
        "dataset": "raccoon",
        "n_train": len(tri),
        "n_test": len(tei),
        "test_images": [names[te][0], names[te][-1]],
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }

    # ---- constant box
    rel = np.array(
        [
            [b[0] / im.shape[1], b[1] / im.shape[0], b[2] / im.shape[1], b[3] / im.shape[0]]
            for im, bb in zip(tri, trb)
            for b in np.asarray(bb).reshape(-1, 4)
        ]
    )
    med = np.median(rel, axis=0)
    const = [np.array([med * np.tile([im.shape[1], im.shape[0]], 2)]) for im in tei]
    out["constant_box"] = {
        "ap50": average_precision(const, [np.ones(1)] * len(tei), teb),
        "relative_box": med.tolist(),
    }
    print(f"constant box: AP {out['constant_box']['ap50']:.3f}", flush=True)

    # ---- dlib
    dlib_det = None
    if not args.skip_dlib:
        import tempfile
        from importlib import metadata

        import dlib

        nv = args.n_train - args.n_val
        area = args.dlib_window**2
        tmp = Path(args.models) if args.models is not None else Path(tempfile.mkdtemp())
        tmp.mkdir(parents=True, exist_ok=True)
        val = {}
        Cs = [float(c) for c in args.dlib_C.split(",")]
        for C in Cs if len(Cs) > 1 else []:
            t = time.perf_counter()
            det, dropped, _ = dlib_train(
                dlib, tri[:nv], trb[:nv], C, args.dlib_flips, trn[:nv], area, tmp / "val.svm"
            )
            vres = [dlib_detect(det, im, args.dlib_adjust) for im in tri[nv:]]
            val[C] = {
                "ap50": ap_of(vres, trb[nv:]),
                "n_dropped": len(dropped),
                "fit_seconds": time.perf_counter() - t,
            }
            print(f"dlib C={C}: validation AP {val[C]['ap50']:.3f}", flush=True)
        C = max(val, key=lambda c: val[c]["ap50"]) if val else Cs[0]
        t = time.perf_counter()
        dlib_det, dropped, margin = dlib_train(
            dlib, tri, trb, C, args.dlib_flips, trn, area, tmp / "dlib.svm"
        )
        fit_s = time.perf_counter() - t
        res = [dlib_detect(dlib_det, im, args.dlib_adjust) for im in tei]
        res0 = [dlib_detect(dlib_det, im, 0.0) for im in tei]
        out["dlib"] = {
            "version": metadata.version("dlib-bin"),
            "C": C,
            "validation": {str(k): v for k, v in val.items()},
            "ap50": ap_of(res, teb),
            "ap50_default_threshold": ap_of(res0, teb),
            "boxes_per_image": float(np.mean([len(r[0]) for r in res])),
            "boxes_per_image_default_threshold": float(np.mean([len(r[0]) for r in res0])),
            "dropped_training_images": dropped,
            "reach_margin": margin,
            "fit_seconds": fit_s,
            "window_pixels": list(dlib_window(trb, area)),
        }
        print(
            f"dlib (C={C}, {len(dropped)} training images dropped): AP {out['dlib']['ap50']:.3f}"
            f" (default threshold {out['dlib']['ap50_default_threshold']:.3f}), "
            f"fit {fit_s:.1f} s",
            flush=True,
        )

    # ---- ours
    dets = {}
    out["svm"] = {}
    for name, params in variants:
        p = {"window": (7, 7), "C": 0.03, "random_state": 0, **params}
        t = time.perf_counter()
        det = HOGSVMDetector(**p).fit(tri, trb)
        fit_s = time.perf_counter() - t
        res = [det.detect(im) for im in tei]
        dets[name] = det
        out["svm"][name] = {
            "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in p.items()},
            "ap50": ap_of(res, teb),
            "fit_seconds": fit_s,
            "converged": det.converged_,
            "n_positives": det.n_positives_,
            "mining_rounds": len(det.mining_history_),
        }
        if getattr(det, "structural", None) is not None:
            # structural constraints: their number and the share of training objects
            # whose most violated one (loss-augmented inference) is still violated
            out["svm"][name]["n_structural_pairs"] = det.n_structural_pairs_
            out["svm"][name]["structural_violated"] = det.structural_violated_
            out["svm"][name]["n_working_set"] = int(det.mining_history_[-1]["working_set"])
        nms_ap = {}
        for spec in filter(None, args.nms.split(";")):
            thr, _, cov = spec.partition("/")
            cov = None if cov.strip().lower() in ("", "none") else float(cov)
            d2 = HOGSVMDetector(
                **{**det.get_params(), "nms_threshold": float(thr), "nms_cover": cov}
            )
            for a in ("coef_", "intercept_", "distribution_", "n_train_images_"):
                setattr(d2, a, getattr(det, a))
            d2.extent_ = getattr(det, "extent_", None)
            nms_ap[spec] = ap_of([d2.detect(im) for im in tei], teb)
            print(f"  nms {spec}: AP {nms_ap[spec]:.3f}", flush=True)
        if nms_ap:
            out["svm"][name]["ap50_by_nms"] = nms_ap
        reg_ap = {}
        for spec in filter(None, args.regress.split(";")):
            pen, _, ov = spec.partition("/")
            d2 = HOGSVMDetector(
                **{
                    **det.get_params(),
                    "box_regression": float(pen),
                    "regression_overlap": float(ov or 0.5),
                }
            )
            for a in ("coef_", "intercept_", "distribution_", "n_train_images_"):
                setattr(d2, a, getattr(det, a))
            # with context: the regression of the windows with context (boxes grown)
            d2._fit_regression(tri, d2._context_boxes(trb))
            reg_ap[spec] = ap_of([d2.detect(im) for im in tei], teb)
            print(f"  box regression {spec}: AP {reg_ap[spec]:.3f}", flush=True)
        if reg_ap:
            out["svm"][name]["ap50_by_box_regression"] = reg_ap
        ext_ap = {}
        for spec in filter(None, args.extent.split(";")) if det.extent is not None else ():
            wt, _, ov = spec.partition("/")
            d2 = copy.copy(det).set_params(extent_weight=float(wt), extent_overlap=float(ov or 0.5))
            ext_ap[spec] = ap_of([d2.detect(im) for im in tei], teb)
            print(f"  extent {spec}: AP {ext_ap[spec]:.3f}", flush=True)
        if ext_ap:
            out["svm"][name]["ap50_by_extent"] = ext_ap
        # what the top detection of each image is: its overlap with the truth and its
        # area relative to the best-matching truth box
        top = []
        kinds = dict.fromkeys(("hit", "part", "larger", "offset", "background"), 0)
        for (b, _), t in zip(res, teb):
            if len(b) and len(t):
                ov = pairwise_overlap(b[:1], t)[0]
                j = int(np.argmax(ov))
                top.append((ov[j], b[0, 2] * b[0, 3] / (t[j, 2] * t[j, 3])))
                kinds[top1_kind(b[0], t[j], ov[j])] += 1
        top = np.array(top).reshape(-1, 2)
        out["svm"][name]["top1_kinds"] = kinds
        out["svm"][name]["top1_overlap_median"] = float(np.median(top[:, 0]))
        out["svm"][name]["top1_hit_rate"] = float(np.mean(top[:, 0] >= 0.5))
        out["svm"][name]["top1_area_ratio_median"] = float(np.median(top[:, 1]))
        print(
            f"svm {name}: AP {out['svm'][name]['ap50']:.3f}, fit {fit_s:.1f} s, top-1 hit "
            f"{np.mean(top[:, 0] >= 0.5):.2f}, top-1 area / truth {np.median(top[:, 1]):.2f}",
            flush=True,
        )
    cascades = {}
    cas = None
    if args.cascade:
        t = time.perf_counter()
        # HOG only and no location prior: the features the compiled scan reads straight
        # from the HOG grid, the same windows as the linear "noprior" detector
        cas = CascadeDetector(
            window=(7, 7),
            n_stages=10,
            target_far=1e-3,
            n_negatives=40000,
            channels=False,
            location_prior=False,
            random_state=0,
        ).fit(tri, trb)
        out["cascade"] = {"ap50": ap_of([cas.detect(im) for im in tei], teb)}
        out["cascade"]["fit_seconds"] = time.perf_counter() - t
        print(f"cascade: AP {out['cascade']['ap50']:.3f}", flush=True)
    cas_p = None
    if args.cascade_prior:
        t = time.perf_counter()
        # the same with the location prior among the features (its first stage rejects
        # most windows by the prior alone)
        cas_p = CascadeDetector(
            window=(7, 7),
            n_stages=10,
            target_far=1e-3,
            n_negatives=40000,
            channels=False,
            location_prior=True,
            random_state=0,
        ).fit(tri, trb)
        out["cascade_hogprior"] = {"ap50": ap_of([cas_p.detect(im) for im in tei], teb)}
        out["cascade_hogprior"]["fit_seconds"] = time.perf_counter() - t
        print(f"cascade_hogprior: AP {out['cascade_hogprior']['ap50']:.3f}", flush=True)
    if cas is not None:
        cascades["cascade"] = cas
    if cas_p is not None:
        cascades["cascade_hogprior"] = cas_p
    for name, flag, prior in (
        ("cascade_fhog", args.cascade_fhog, False),
        ("cascade_fhog_prior", args.cascade_fhog_prior, True),
    ):
        if not flag:
            continue
        t = time.perf_counter()
        # over FHOG cells, the pyramid of the "fhog" SVM (one aspect ratio, step 1.2):
        # the same features the linear filter is correlated with, read by the stumps
        # in place (scan.cascade_scan)
        c_ = CascadeDetector(
            window=(7, 7),
            n_stages=10,
            target_far=1e-3,
            n_negatives=40000,
            channels=False,
            features="fhog",
            aspect_ratios=(1.0,),
            scale_step=1.2,
            location_prior=prior,
            random_state=0,
        ).fit(tri, trb)
        fit_s = time.perf_counter() - t
        out[name] = {
            "ap50": ap_of([c_.detect(im) for im in tei], teb),
            "fit_seconds": fit_s,
            "stages": [
                {k: v for k, v in st.items() if k in ("n_weak", "recall", "far", "attained")}
                for st in c_.cascade_.stages_
            ],
        }
        cascades[name] = c_
        print(f"{name}: AP {out[name]['ap50']:.3f}, fit {fit_s:.1f} s", flush=True)
    # weak classifiers per window of each cascade's scan on the test images (counted by
    # the scan itself)
    for name, c_ in cascades.items():
        n_weak = n_win = 0
        for im in tei:
            c_.detect(im)
            pyr = c_._pyramid(im)
            n_weak += c_.last_scan_weak_
            n_win += sum(int(np.prod(pyr.positions(k))) for k in range(len(pyr.levels)))
        out[name]["weak_per_window"] = n_weak / n_win

    if args.models is not None:
        import maxmargin

        args.models.mkdir(parents=True, exist_ok=True)
        for name, det in dets.items():
            maxmargin.save(det, args.models / f"svm_{name}.npz")
        for name, c_ in cascades.items():
            maxmargin.save(c_, args.models / f"{name}.npz")

    # ---- scanning time, one after the other in this process (under the lock with
    # --cpu-lock: only this section)
    lock = None
    if args.cpu_lock:
        import fcntl

        lock = open(args.cpu_lock, "a")  # held until the timing ends
        t = time.perf_counter()
        fcntl.flock(lock, fcntl.LOCK_EX)
        out["cpu_lock"] = {
            "path": args.cpu_lock,
            "held_for_timing": True,
            "waited_seconds": time.perf_counter() - t,
        }
    load_before = os.getloadavg()
    timing = {}
    if dlib_det is not None:
        timing["dlib"] = time_per_image(
            lambda im: dlib_det.run(u8(im), 0, float(args.dlib_adjust)), tei, args.repeat
        )
    for name, det in dets.items():
        timing[f"svm {name}"] = time_per_image(det.detect, tei, args.repeat)
        if args.time_image_padding and det.context:
            timing[f"svm {name} (image padded)"] = time_per_image(
                image_padded_detect(det), tei, args.repeat
            )
    for name, c_ in cascades.items():
        timing[name] = time_per_image(c_.detect, tei, args.repeat)
    out["timing_load_average"] = {"before": load_before, "after": os.getloadavg()}
    if lock is not None:
        lock.close()  # releases the lock
    out["seconds_per_image"] = timing
    if "dlib" in timing:
        out["time_ratio_to_dlib"] = {k: v / timing["dlib"] for k, v in timing.items()}
    for k, v in timing.items():
        ratio = f" ({v / timing['dlib']:.2f} x dlib)" if "dlib" in timing else ""
        print(f"time {k}: {v * 1e3:.2f} ms/image{ratio}", flush=True)
    path = write_result(args.out, out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
