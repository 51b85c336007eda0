"""Cost of the tracker's patch features per frame and per box (docs/tracking.md).

On one Coke frame (640x480): the ~2000 prediction candidates (grid, radius 30 px) and the
~200 training candidates (polar, radius 60 px) of the tracker, every feature kind.  Each
kind is timed over ``--repeat`` frames' worth of calls (integral images + look-ups, i.e.
what the tracker pays per frame); the median and the fastest call are reported.

Usage: python benchmarks/tracking_feature_cost.py [--repeat 50]
Writes benchmarks/results/tracking_feature_cost.json (or --out).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import time

import numpy as np

from _common import DEFAULT_DATA, write_result
from maxmargin.apps.tracking import PatchFeatures, load_sequence, to_grey
from maxmargin.tasks.boxes import sample_boxes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA / "tracking"))
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--out", default="benchmarks/results/tracking_feature_cost.json")
    args = ap.parse_args()
    seq = load_sequence(os.path.join(args.data, "Coke"), max_frames=5)
    grey = to_grey(seq.frame(4))
    box = seq.boxes[4]
    pred = sample_boxes(box, 2000, 30.0, grey.shape)
    train = sample_boxes(box, 200, 60.0, grey.shape, method="polar", rng=0)
    rows = []
    for kind in ("raw", "hog", "haar", "hog+haar", "raw+hog"):
        pf = PatchFeatures(kind)
        pf(grey, pred)  # compile
        ts = []
        for _ in range(args.repeat):  # one step per timed frame
            t0 = time.perf_counter()
            pf(grey, pred)
            pf(grey, train)
            ts.append(time.perf_counter() - t0)
        n = len(pred) + len(train)
        row = {
            "kind": kind,
            "n_features": pf.n_features,
            "boxes_per_frame": n,
            "ms_per_frame_median": 1e3 * float(np.median(ts)),
            "ms_per_frame_min": 1e3 * float(np.min(ts)),
            "us_per_box_median": 1e6 * float(np.median(ts)) / n,
        }
        rows.append(row)
        print(
            f"{kind:9s} ({pf.n_features:3d} values): {row['ms_per_frame_median']:.2f} ms per "
            f"frame ({n} boxes; fastest {row['ms_per_frame_min']:.2f}), "
            f"{row['us_per_box_median']:.2f} us per box",
            flush=True,
        )
    print(f"wrote {write_result(args.out, {'results': rows})}")


if __name__ == "__main__":
    main()
