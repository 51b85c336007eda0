"""Upper bound of a fixed-size tracker's mean Pascal overlap on OTB sequences.

The StructBoost tracker keeps the box size of its initial (third labelled) frame, as the
paper's fixed-size boxes.  This places that box exactly on every tracked frame's true
centre and reports the mean overlap with the ground truth over the tracked frames (the 3
labelled ones excluded, as in bench_tracking.py): no fixed-size tracker can do better.

Usage: python benchmarks/tracking_fixed_size_bound.py [--sequences Coke Tiger1 Girl]
Writes benchmarks/results/tracking_fixed_size_bound.json (or --out).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from _common import DEFAULT_DATA, write_result
from maxmargin.apps.tracking import read_boxes
from maxmargin.tasks.boxes import box_overlap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", nargs="+", default=["Coke", "Tiger1", "Girl"])
    ap.add_argument("--data", default=str(DEFAULT_DATA / "tracking"))
    ap.add_argument("--n-init", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/tracking_fixed_size_bound.json")
    args = ap.parse_args()
    rows = []
    for name in args.sequences:
        b = read_boxes(os.path.join(args.data, name, "groundtruth_rect.txt"))
        k0 = args.n_init - 1
        w, h = np.round(b[k0, 2]), np.round(b[k0, 3])
        c = b[:, :2] + b[:, 2:] / 2
        fixed = np.stack(
            [c[:, 0] - w / 2, c[:, 1] - h / 2, np.full(len(b), w), np.full(len(b), h)], 1
        )
        ov = box_overlap(fixed[args.n_init :], b[args.n_init :])
        rows.append(
            {
                "sequence": name,
                "box_size": [float(w), float(h)],
                "true_width_range": [float(b[:, 2].min()), float(b[:, 2].max())],
                "true_height_range": [float(b[:, 3].min()), float(b[:, 3].max())],
                "mean_overlap_bound": float(ov.mean()),
            }
        )
        print(f"{name:7s} fixed {w:.0f}x{h:.0f} at the true centre: mean overlap {ov.mean():.3f}")
    print(f"wrote {write_result(args.out, {'n_init': args.n_init, 'results': rows})}")


if __name__ == "__main__":
    main()
