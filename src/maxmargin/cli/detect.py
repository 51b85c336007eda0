"""``maxmargin detect fit|predict``: object detection and proposal ranking on VOC-style
folders (:mod:`maxmargin.apps.detection`).

``fit IMAGES ANNOTATIONS -o MODEL --model svm|cascade|ranker`` trains a HOG + linear SVM
with hard-negative mining, a boosted cascade or a proposal ranker; ``predict MODEL
IMAGE... -o DIR`` writes ``<name>_boxes.png`` (boxes drawn on the image) and
``<name>_boxes.txt`` (``x y w h score`` per line, 0-based) for every image and, with
``--annotations``, reports average precision (detectors) or recall-overlap figures
(ranker) and writes their plot.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

import numpy as np

from maxmargin.cli.parser import positive_list

__all__ = ["add_parser"]

MODELS = {"svm": "HOGSVMDetector", "cascade": "CascadeDetector", "ranker": "ProposalRanker"}


def _pair(text: str) -> tuple[int, int]:
    vals = positive_list(text, "--window", int)
    if len(vals) != 2:
        raise ValueError(f"--window must be two positive integers w,h (cells), got {text!r}")
    return tuple(vals)


def _caps(text: str):
    vals = positive_list(text, "--max-weak", int)
    return vals[0] if len(vals) == 1 else vals


def add_parser(sub, parents=()) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "detect",
        parents=list(parents),
        help="object detection (HOG + SVM with hard negatives, boosted cascade) and "
        "proposal ranking on VOC folders",
        description="Train a detector or a proposal ranker on an image folder and a folder "
        "of PASCAL VOC XML annotations, or run one on images and draw the boxes.",
    )
    dsub = p.add_subparsers(dest="detect_command", metavar="ACTION")
    fit = dsub.add_parser("fit", parents=list(parents), help="train on IMAGES + ANNOTATIONS")
    fit.add_argument("images", metavar="IMAGES", help="folder of training images")
    fit.add_argument("annotations", metavar="ANNOTATIONS", help="folder of VOC XML files")
    fit.add_argument("-o", "--output", metavar="MODEL", required=True, help="model file")
    fit.add_argument("--model", choices=sorted(MODELS), default="svm")
    fit.add_argument("--label", default=None, help="only objects with this <name>")
    fit.add_argument("--clip", action="store_true", help="clip boxes that leave the image")
    fit.add_argument("--max-side", type=int, default=None, help="downscale images to N px")
    fit.add_argument("--limit", type=int, default=None, help="only the first N images")
    fit.add_argument("--window", default="6,6", help="window in HOG cells w,h (6,6)")
    fit.add_argument("--cell", type=int, default=8, help="pixels per HOG cell (8)")
    fit.add_argument("--C", type=float, default=None, help="SVM / RankSVM C")
    fit.add_argument(
        "--aspect-ratios",
        default="0.7,1,1.4",
        help="svm/cascade: window aspect ratios w/h relative to --window (0.7,1,1.4)",
    )
    fit.add_argument("--colour", action="store_true", help="svm/cascade: colour HOG")
    fit.add_argument(
        "--channels",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="svm/cascade: aggregated channel features (gradient, orientations, LUV) too "
        "(default: on for the cascade, off for the svm)",
    )
    fit.add_argument(
        "--no-location-prior",
        action="store_true",
        help="svm/cascade: no box-distribution feature",
    )
    fit.add_argument(
        "--stage-learner",
        choices=["discrete", "real", "gentle", "lacboost", "fisherboost"],
        default="gentle",
    )
    fit.add_argument("--rule", choices=["fixed", "one-point", "two-point"], default="two-point")
    fit.add_argument("--n-stages", type=int, default=10)
    fit.add_argument(
        "--max-weak",
        default="2,5,10,20,50",
        help="weak classifiers per stage at most; a comma list a,b,... caps stage by stage "
        "(the last repeats; default 2,5,10,20,50)",
    )
    fit.add_argument("--target-recall", type=float, default=0.9)
    fit.add_argument("--target-far", type=float, default=1e-4)
    fit.add_argument("--recycle", type=float, default=None, help="recycling lambda*")
    fit.add_argument(
        "--chain",
        action="store_true",
        help="cascade: every stage starts from the score of the stages before it (eq. 4.59)",
    )
    fit.add_argument(
        "--bootstrap",
        action="store_true",
        help="cascade: each stage draws fresh negatives from a full scan of the training "
        "images (and --negative-images)",
    )
    fit.add_argument(
        "--negative-images",
        metavar="PATH",
        nargs="+",
        default=None,
        help="cascade: images or folders without the object; their windows are extra "
        "training negatives (CascadeDetector.fit(..., negative_images=...))",
    )
    fit.add_argument("--graph", choices=["complete", "bipartite", "star"], default="complete")
    fit.add_argument("--rescaling", choices=["margin", "slack"], default="margin")
    fit.add_argument("--plot", metavar="PNG", default=None, help="cascade: per-stage plot")
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument("--json", action="store_true", help="one JSON line on stdout")
    fit.set_defaults(handler=cmd_detect_fit)
    pred = dsub.add_parser("predict", parents=list(parents), help="detect / propose boxes")
    pred.add_argument("model", metavar="MODEL")
    pred.add_argument("images", metavar="IMAGE", nargs="+", help="image files or folders")
    pred.add_argument("-o", "--output", metavar="DIR", required=True, help="output folder")
    pred.add_argument(
        "--annotations",
        metavar="DIR",
        default=None,
        help="VOC XML, one per image (<size> must match the image): evaluate",
    )
    pred.add_argument("--max-side", type=int, default=None, help="downscale images to N px")
    pred.add_argument("--top", type=int, default=10, help="boxes drawn per image (10)")
    pred.add_argument("--seed", type=int, default=0, help="ranker: candidate sampling seed")
    pred.add_argument("--json", action="store_true", help="one JSON line on stdout")
    pred.set_defaults(handler=cmd_detect_predict)
    return p


def cmd_detect_fit(args: argparse.Namespace) -> int:
    from maxmargin.apps.detection import (
        CascadeDetector,
        HOGSVMDetector,
        ProposalRanker,
        load_voc_folder,
    )
    from maxmargin.cli.commands import _check_output_path
    from maxmargin.cli.output import folder_files, image_paths, model_key
    from maxmargin.io import save

    inputs = [*folder_files(args.images, args.annotations), args.plot]
    if args.negative_images:
        inputs += [*folder_files(*args.negative_images), *args.negative_images]
    _check_output_path(args.output, tuple(inputs))
    model_key()  # an empty key is an error before the work, not after
    images, boxes, names = load_voc_folder(
        args.images,
        args.annotations,
        labels=None if args.label is None else [args.label],
        clip=args.clip,
        max_side=args.max_side,
    )
    if args.limit is not None:
        images, boxes, names = images[: args.limit], boxes[: args.limit], names[: args.limit]
    window = _pair(args.window)
    look = dict(
        aspect_ratios=tuple(positive_list(args.aspect_ratios, "--aspect-ratios")),
        colour=bool(args.colour),
        channels=args.model == "cascade" if args.channels is None else bool(args.channels),
        location_prior=not args.no_location_prior,
    )
    if args.model == "svm":
        est = HOGSVMDetector(
            window=window, cell=args.cell, C=args.C or 0.01, random_state=args.seed, **look
        )
    elif args.model == "cascade":
        est = CascadeDetector(
            window=window,
            cell=args.cell,
            **look,
            stage_learner=args.stage_learner,
            rule=args.rule,
            n_stages=args.n_stages,
            max_weak=_caps(args.max_weak),
            target_recall=args.target_recall,
            target_far=args.target_far,
            recycle=args.recycle,
            chain=bool(args.chain),
            bootstrap=bool(args.bootstrap),
            random_state=args.seed,
        )
    else:
        est = ProposalRanker(
            window=window,
            cell=args.cell,
            C=args.C or 1.0,
            graph=args.graph,
            rescaling=args.rescaling,
            random_state=args.seed,
        )
    fit_params = {}
    for flag in ("chain", "bootstrap"):
        if getattr(args, flag) and args.model != "cascade":
            raise ValueError(f"--{flag} is a cascade option (--model cascade)")
    if args.negative_images is not None:
        if args.model != "cascade":
            raise ValueError("--negative-images is a cascade option (--model cascade)")
        from maxmargin.apps.detection.data import load_image, rescale_image

        fit_params["negative_images"] = [
            rescale_image(load_image(q), np.zeros((0, 4)), args.max_side)[0]
            for q in image_paths(args.negative_images)
        ]
    t0 = time.perf_counter()
    est.fit(images, boxes, **fit_params)
    seconds = time.perf_counter() - t0
    save(est, args.output, key=model_key())
    result = {
        "model": str(args.output),
        "kind": type(est).__name__,
        "n_images": len(images),
        "n_boxes": int(sum(len(b) for b in boxes)),
        "fit_seconds": round(seconds, 3),
    }
    if fit_params:
        result["n_negative_images"] = len(fit_params["negative_images"])
    if args.model == "svm":
        result["mining"] = [
            {k: h[k] for k in ("iteration", "n_hard", "n_new", "working_set", "objective")}
            for h in est.mining_history_
        ]
        result["converged"] = est.converged_
    elif args.model == "cascade":
        result["stages"] = [
            {k: s[k] for k in ("n_weak", "n_new_weak", "recall", "far", "attained")}
            for s in est.cascade_.stages_
        ]
        if args.plot:
            from maxmargin.cli.plots import plot_stage_rejection

            fm = _train_merit(est)
            plot_stage_rejection(Path(args.plot), est.cascade_.stages_, fm["entering"])
            result["plot"] = args.plot
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        print(
            f"{result['kind']} on {result['n_images']} images ({result['n_boxes']} boxes) "
            f"in {seconds:.1f} s -> {args.output}"
        )
        for row in result.get("mining", []):
            print(
                f"  round {row['iteration']}: {row['n_hard']} hard negatives, "
                f"+{row['n_new']}, working set {row['working_set']}"
            )
        for k, row in enumerate(result.get("stages", [])):
            print(
                f"  stage {k}: {row['n_weak']} weak ({row['n_new_weak']} new), "
                f"recall {row['recall']:.3f}, FAR {row['far']:.3g}"
            )
    return 0


def _train_merit(est):
    """Share of negatives entering each stage, estimated as the product of the earlier
    stages' validation FARs (the training windows are not kept in the model)."""
    c = est.cascade_
    ent, alive = [], 1.0
    for s in c.stages_:
        ent.append(alive)
        alive *= s["far"]
    return {"entering": ent}


def cmd_detect_predict(args: argparse.Namespace) -> int:
    from maxmargin.apps.detection import (
        average_precision,
        load_image,
        read_voc,
        recall_overlap,
        recall_overlap_auc,
        rescale_image,
    )
    from maxmargin.cli.output import check_distinct_stems, folder_files, image_paths, model_key
    from maxmargin.cli.segment import _encode_png
    from maxmargin.cli.track import draw_box
    from maxmargin.io import atomic_write_bytes, load

    model = load(args.model, key=model_key())
    kind = type(model).__name__
    # a face cascade (HaarCascadeDetector, trained in Python or by
    # benchmarks/bench_face_cascade.py) scans and draws like the others
    if kind not in (*MODELS.values(), "HaarCascadeDetector"):
        raise ValueError(f"{args.model} is a {kind}, not a detection model")
    if args.top < 1:
        raise ValueError("--top must be at least 1")
    paths = image_paths(args.images)
    check_distinct_stems(paths, "_boxes.*")
    if args.annotations is not None and not Path(args.annotations).is_dir():
        raise ValueError(f"not a folder: {args.annotations}")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    inputs = [*paths, Path(args.model), *folder_files(args.annotations)]

    dets, scores, truths, files = [], [], [], []
    t_total = 0.0
    for k, p in enumerate(paths):
        img = load_image(p)
        truth = np.zeros((0, 4))
        if args.annotations is not None:
            xml = Path(args.annotations) / f"{p.stem}.xml"
            if not xml.is_file():
                raise ValueError(
                    f"{p}: no annotation {xml.name} in {args.annotations}; give every image "
                    "its VOC file to evaluate, or leave out --annotations"
                )
            ann = read_voc(xml, clip=True)
            if img.shape[:2] != (ann.height, ann.width):
                raise ValueError(
                    f"{xml}: <size> {ann.width} x {ann.height} does not match image {p.name} "
                    f"({img.shape[1]} x {img.shape[0]}); fix the annotation or the image"
                )
            truth = ann.boxes
        img, truth, f = rescale_image(img, truth, args.max_side)
        t0 = time.perf_counter()
        if kind == "ProposalRanker":
            b, s = model.propose(img, rng=args.seed + k)
        else:
            b, s = model.detect(img)
        t_total += time.perf_counter() - t0
        dets.append(b)
        scores.append(s)
        truths.append(truth)
        rgb = np.repeat(img[:, :, None], 3, axis=2) if img.ndim == 2 else img.copy()
        rgb = np.ascontiguousarray(rgb[:, :, :3]).astype(np.uint8)
        width = max(1, round(max(rgb.shape[:2]) / 200))
        for t in truth:
            draw_box(rgb, t, (0, 200, 0), width=width)
        for bb in b[: args.top][::-1]:
            draw_box(rgb, bb, (230, 0, 0), width=width)
        atomic_write_bytes(out / f"{p.stem}_boxes.png", _encode_png(rgb), inputs=inputs)
        rows = np.column_stack([b / f, s]) if len(b) else np.zeros((0, 5))
        buf = io.BytesIO()
        np.savetxt(buf, rows, fmt="%.6g")
        atomic_write_bytes(out / f"{p.stem}_boxes.txt", buf.getvalue(), inputs=inputs)
        files.append(str(out / f"{p.stem}_boxes.png"))
    result: dict = {
        "kind": kind,
        "n_images": len(paths),
        "seconds_per_image": t_total / len(paths),
        "output": str(out),
    }
    if args.annotations is not None:
        if kind == "ProposalRanker":
            ks = [k for k in (1, 10, 100, 1000) if k <= max(len(d) for d in dets)]
            result["recall_at_0.5"] = {
                str(k): float(recall_overlap(dets, truths, k, [0.5])[1][0]) for k in ks
            }
            result["auc"] = {str(k): recall_overlap_auc(dets, truths, k) for k in ks}
            from maxmargin.cli.plots import plot_recall_overlap

            curves = {f"{k} windows": recall_overlap(dets, truths, k) for k in ks}
            plot_recall_overlap(out / "recall_overlap.png", curves)
            files.append(str(out / "recall_overlap.png"))
        else:
            result["average_precision"] = average_precision(dets, scores, truths)
    if args.json:
        sys.stdout.write(json.dumps({**result, "files": files}) + "\n")
    else:
        print(
            f"{kind}: {len(paths)} images, {result['seconds_per_image'] * 1000:.1f} ms per "
            f"image -> {out}"
        )
        for key in ("average_precision", "recall_at_0.5", "auc"):
            if key in result:
                print(f"  {key}: {result[key]}")
    return 0
