"""Where a StructBoost tracker's time goes once its 60-frame window is full.

Tracks Coke from the 3 labelled frames to frame ``--frames`` and reports, over the frames
after ``--skip`` (window full), frames per second (wall clock and process CPU time) and
the milliseconds per frame in sampling, features, prediction and re-training.  Frames
are decoded before timing.  Run it against another checkout to compare, e.g.
``PYTHONPATH=/path/to/other/src python benchmarks/profile_tracking.py``.

Usage: python benchmarks/profile_tracking.py [--frames 130] [--skip 70] [--set key=value]
Writes benchmarks/results/tracking_profile.json (or --out).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import ast
import time

from _common import DEFAULT_DATA, write_result
from maxmargin.apps.tracking import load_sequence, make_tracker
from maxmargin.tasks.boxes import box_overlap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequence", default="Coke")
    ap.add_argument("--data", default=str(DEFAULT_DATA / "tracking"))
    ap.add_argument("--frames", type=int, default=130)
    ap.add_argument("--skip", type=int, default=70)
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="benchmarks/results/tracking_profile.json")
    args = ap.parse_args()
    params = {"random_state": 0}
    for item in args.set:
        k, v = item.split("=", 1)
        params[k] = ast.literal_eval(v)
    seq = load_sequence(os.path.join(args.data, args.sequence), max_frames=args.frames)
    frames = [seq.frame(k) for k in range(len(seq))]
    tr = make_tracker("structboost", **params)  # (flat Sampling fields allowed)
    b = seq.boxes
    tr.init(frames[2], b[2], labelled=[(frames[0], b[0]), (frames[1], b[1])])
    for k in range(3, args.skip):
        tr.update(frames[k])
    tr.timing_ = dict.fromkeys(tr.timing_, 0.0)
    ov = []
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(args.skip, len(frames)):  # one step per frame
        ov.append(float(box_overlap(tr.update(frames[k]), b[k])[0]))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(frames) - args.skip
    row = {
        "label": args.label,
        "params": {k: repr(v) for k, v in params.items()},
        "frames_timed": n,
        "fps": n / wall,
        "fps_cpu": n / cpu,
        "ms_per_frame": {k: 1e3 * v / n for k, v in tr.timing_.items()},
        "overlap_timed_frames": sum(ov) / n,
    }
    print(
        f"{args.label or 'run'}: {row['fps']:.1f} fps (CPU time {row['fps_cpu']:.1f}), "
        "ms/frame " + " ".join(f"{k} {v:.1f}" for k, v in row["ms_per_frame"].items()),
        flush=True,
    )
    write_result(args.out, {"sequence": args.sequence, "skip": args.skip, "row": row})


if __name__ == "__main__":
    main()
