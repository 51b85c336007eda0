"""Choosing the HOG + SVM detector's settings on raccoon without the test images
(issue 13): train on raccoon-1 .. raccoon-120, measure AP at overlap 0.5 on raccoon-121
.. raccoon-160 (the last 40 training images), for a grid of window size, image size, C,
aspect ratios, colour and the location prior.  The test images (161-200) are never read.

    python benchmarks/bench_detection_tuning.py      # about 15 minutes on one core
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, write_result
from maxmargin.apps.detection import HOGSVMDetector, average_precision, load_voc_folder

A3 = (0.7, 1.0, 1.4)
A5 = (0.6, 0.8, 1.0, 1.25, 1.6)
# (max_side, window, C, aspect_ratios, colour, location_prior)
GRID = [
    (200, 5, 0.1, (1.0,), False, True),
    (200, 5, 0.03, A3, False, True),
    (200, 5, 0.1, A3, False, True),
    (200, 5, 0.3, A3, False, True),
    (200, 5, 0.03, A3, True, True),
    (200, 5, 0.03, A5, False, True),
    (200, 6, 0.01, A3, False, True),
    (200, 6, 0.03, A3, False, True),
    (200, 6, 0.03, A5, False, True),
    (200, 7, 0.03, A3, False, True),
    (240, 6, 0.03, A3, False, True),
    (240, 7, 0.03, A3, False, True),
    (240, 8, 0.03, A3, False, True),
    (320, 8, 0.03, A3, False, True),
    (240, 7, 0.03, A3, False, False),
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA / "detection/raccoon")
    ap.add_argument("--out", default="benchmarks/results/detection_tuning.json")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    cache = {}
    for ms, win, C, ratios, colour, prior in GRID:
        if ms not in cache:
            images, boxes, _ = load_voc_folder(
                args.data / "images", args.data / "annotations", max_side=ms, clip=True
            )
            cache[ms] = (images[:120], boxes[:120], images[120:160], boxes[120:160])
        tri, trb, vai, vab = cache[ms]
        t = time.perf_counter()
        det = HOGSVMDetector(
            window=(win, win),
            C=C,
            aspect_ratios=ratios,
            colour=colour,
            location_prior=prior,
            random_state=0,
        ).fit(tri, trb)
        fit_s = time.perf_counter() - t
        res = [det.detect(im) for im in vai]
        ap50 = average_precision([r[0] for r in res], [r[1] for r in res], vab)
        row = {
            "max_side": ms,
            "window": win,
            "C": C,
            "aspect_ratios": list(ratios),
            "colour": colour,
            "location_prior": prior,
            "val_ap50": ap50,
            "fit_seconds": fit_s,
        }
        rows.append(row)
        print(
            f"max_side {ms} window {win} C {C} ratios {list(ratios)} colour {colour} "
            f"prior {prior}: validation AP {ap50:.3f} (fit {fit_s:.0f} s)",
            flush=True,
        )
    best = max(rows, key=lambda r: r["val_ap50"])
    out = {"split": "train 1-120, validate 121-160", "rows": rows, "best": best}
    out["total_seconds"] = time.perf_counter() - t0
    print(f"wrote {write_result(args.out, out)}")


if __name__ == "__main__":
    main()
