"""``maxmargin segment fit|predict``: figure/ground segmentation with a learned
superpixel CRF (:mod:`maxmargin.apps.segmentation`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from maxmargin.cli.output import (
    EXIT_OK,
    check_distinct_stems,
    folder_files,
    image_paths,
    model_key,
    print_json,
    print_kv_table,
)


def _overlay(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """uint8 RGB image with the foreground tinted red and its boundary drawn."""
    from maxmargin.apps.segmentation.features import as_rgb

    rgb = as_rgb(image)
    out = rgb.copy()
    out[mask] = 0.5 * rgb[mask] + 0.5 * np.array([1.0, 0.0, 0.0])
    edge = np.zeros_like(mask)
    edge[:-1] |= mask[:-1] != mask[1:]
    edge[:, :-1] |= mask[:, :-1] != mask[:, 1:]
    out[edge] = (1.0, 1.0, 0.0)
    return np.clip(np.rint(out * 255), 0, 255).astype(np.uint8)


def cmd_segment_fit(args: argparse.Namespace) -> int:
    import warnings

    from maxmargin.apps.segmentation import Segmenter, load_image_folder
    from maxmargin.cli.commands import _check_output_path
    from maxmargin.io import save

    _check_output_path(args.output, tuple(folder_files(args.images, args.masks)))
    model_key()  # an empty key is an error before the work, not after
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        images, masks, _names = load_image_folder(
            args.images, args.masks, threshold=args.threshold, resize_to_mask=args.resize_to_mask
        )
    _print_warnings(caught)
    seg = Segmenter(
        learner=args.learner,
        C=args.C,
        max_iter=args.max_iter,
        n_segments=args.n_segments,
        unary_iter=args.unary_iter,
        max_time=args.max_time,
        random_state=args.seed,
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seg.fit(images, masks)
    seconds = time.perf_counter() - t0
    save(seg, args.output, key=model_key())
    summary = {
        "model": str(args.output),
        "learner": args.learner,
        "n_images": len(images),
        "fit_seconds": seconds,
    }
    if args.json:
        print_json(summary)
    else:
        print_kv_table("segmenter", summary)
    return EXIT_OK


def _print_warnings(caught: list) -> None:
    import sys

    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)


def _encode_png(array: np.ndarray) -> bytes:
    import imageio.v3 as iio

    return iio.imwrite("<bytes>", array, extension=".png")


def cmd_segment_predict(args: argparse.Namespace) -> int:
    import warnings

    from maxmargin.apps.segmentation.data import binary_mask, load_image
    from maxmargin.io import atomic_write_bytes, load
    from maxmargin.metrics import segmentation_scores

    model = load(args.model, key=model_key())
    if type(model).__name__ != "Segmenter":
        raise ValueError(f"{args.model} is a {type(model).__name__}, not a Segmenter model")
    paths = image_paths(args.images, "no images to segment")
    mask_files: dict[str, Path] = {}
    if args.masks is not None:
        mpaths = _mask_paths(args.masks)
        if not mpaths:
            raise ValueError(f"no masks in {args.masks}")
        mask_files = {q.stem: q for q in mpaths}
        missing = [p for p in paths if p.stem not in mask_files]
        if missing:  # scores over a subset would be reported as the whole set's
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise ValueError(
                f"{missing[0]}: no mask named {missing[0].stem}.* in {args.masks}{more}; "
                "give every image a mask to score, or leave out --masks"
            )
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    inputs = [*paths, *mask_files.values(), Path(args.model)]
    check_distinct_stems(paths, "_mask.png")

    written, pred_list, true_list, score_list = [], [], [], []
    for p in paths:
        img = load_image(p)
        truth = None
        if args.masks is not None:
            q = mask_files[p.stem]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                truth = binary_mask(load_image(q, what="mask"), args.threshold, q)
            _print_warnings(caught)
            if truth.shape != img.shape[:2]:
                raise ValueError(
                    f"{q}: the mask is {truth.shape[1]} x {truth.shape[0]} pixels but its "
                    f"image {p.name} is {img.shape[1]} x {img.shape[0]}; masks must have "
                    "their image's size"
                )
        mask = model.predict(img)
        atomic_write_bytes(
            out / f"{p.stem}_mask.png", _encode_png(mask.astype(np.uint8) * 255), inputs=inputs
        )
        atomic_write_bytes(
            out / f"{p.stem}_overlay.png", _encode_png(_overlay(img, mask)), inputs=inputs
        )
        written.append(str(out / f"{p.stem}_overlay.png"))
        if truth is not None:
            pred_list.append(mask)
            true_list.append(truth)
            score_list.append(model.decision_function(img))
    result: dict[str, Any] = {"n_images": len(paths), "output": str(out)}
    if pred_list:
        result["metrics"] = segmentation_scores(true_list, pred_list, score_list)
    if args.json:
        print_json({**result, "overlays": written})
    else:
        print_kv_table("segmentation", {"images": len(paths), "written to": str(out)})
        if pred_list:
            print_kv_table("pixel scores", result["metrics"])
    return EXIT_OK


def _mask_paths(folder: str) -> list[Path]:
    from maxmargin.apps._image import IMAGE_SUFFIXES

    if not Path(folder).is_dir():
        raise ValueError(f"not a folder: {folder}")
    return sorted(q for q in Path(folder).iterdir() if q.suffix.lower() in IMAGE_SUFFIXES)


def add_parser(sub, parents=()) -> None:
    """Add ``segment fit|predict`` to the ``maxmargin`` subparsers."""
    json_opt = argparse.ArgumentParser(add_help=False)
    json_opt.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    segment = sub.add_parser(
        "segment",
        parents=list(parents),
        help="figure/ground image segmentation with a learned superpixel CRF",
        description="Train a Segmenter (superpixel CRF learned by StructBoost or an SSVM) "
        "on image/mask folders, or segment images with one and write mask and overlay PNGs.",
    )
    seg_sub = segment.add_subparsers(dest="segment_command", metavar="ACTION")
    sfit = seg_sub.add_parser(
        "fit",
        parents=[*parents, json_opt],
        help="train on IMAGES and MASKS folders (matched by file name)",
    )
    sfit.add_argument("images", metavar="IMAGES", help="folder of training images")
    sfit.add_argument("masks", metavar="MASKS", help="folder of masks with the same names")
    sfit.add_argument("-o", "--output", metavar="MODEL", required=True, help="model file")
    sfit.add_argument("--learner", choices=["structboost", "ssvm", "unary"], default="structboost")
    sfit.add_argument("--C", type=float, default=10.0, help="CRF regularisation (10)")
    sfit.add_argument("--max-iter", type=int, default=50, help="StructBoost iterations (50)")
    sfit.add_argument("--n-segments", type=int, default=150, help="superpixels per image")
    sfit.add_argument("--unary-iter", type=int, default=100, help="AdaBoost rounds (100)")
    sfit.add_argument("--threshold", type=int, default=128, help="mask threshold (128)")
    sfit.add_argument(
        "--resize-to-mask", action="store_true", help="resize images to their masks' size"
    )
    sfit.add_argument("--max-time", type=float, default=None, help="CRF time budget (s)")
    sfit.add_argument("--seed", type=int, default=0, help="random_state (0)")
    sfit.set_defaults(handler=cmd_segment_fit)
    spred = seg_sub.add_parser(
        "predict",
        parents=[*parents, json_opt],
        help="segment images; write <name>_mask.png and <name>_overlay.png",
    )
    spred.add_argument("model", metavar="MODEL")
    spred.add_argument("images", metavar="IMAGE", nargs="+", help="image files or folders")
    spred.add_argument("-o", "--output", metavar="DIR", required=True, help="output folder")
    spred.add_argument(
        "--masks",
        metavar="DIR",
        default=None,
        help="true masks with the images' names and sizes (one per image): report scores",
    )
    spred.add_argument("--threshold", type=int, default=128, help="mask threshold (128)")
    spred.set_defaults(handler=cmd_segment_predict)
