"""The separate scale filter fed the true centres: how well can it size the box at all.

Issue 30, thirteenth session.  For every sequence, a
:class:`~maxmargin.apps.tracking.ScaleFilter` (after Danelljan et al., BMVC 2014) is
started on frame 0's true box and then, on every later labelled frame, asked for the size
at the true centre (``estimate``) and updated there (``update``) -- the tracker's loop
with perfect translation.  Per setting and sequence: the mean and root-mean-square of the
log error ``log(s) - log(s_true)`` (``s`` the estimated size relative to frame 0's box,
``s_true`` the square root of the true box's area relative to frame 0's), and the mean
over frames of ``exp(-2 |error|)``, the overlap of two concentric boxes of one aspect
whose sides differ by that factor: the overlap the size alone leaves a tracker that
centres every box exactly.  The same figure for the fixed size (the default tracker's
box) is the row ``fixed size``.  Deterministic (no seeds).

Usage: python benchmarks/tracking_scale_filter_truth.py [--sequences Coke Tiger1 Girl
       david tiger2] [--data DIR] [--out FILE]
Writes benchmarks/results/tracking_scale_filter_truth.json (or --out).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from _common import DEFAULT_DATA, write_result
from maxmargin.apps.tracking import ScaleFilter, load_sequence, to_grey

#: (label, ScaleFilter fields) of the settings measured
SETTINGS = [
    ("default", {}),
    ("features=hog", {"features": "hog"}),
    ("features=raw", {"features": "raw"}),
    ("lam=1", {"lam": 1.0}),
    ("learning_rate=1e-9 (first frame only)", {"learning_rate": 1e-9}),
    ("learning_rate=0.01", {"learning_rate": 0.01}),
    ("prior=0.001", {"prior": 0.001}),
    ("prior=0.002", {"prior": 0.002}),
    ("prior=0.003", {"prior": 0.003}),
]


def _seq_path(data: str, name: str) -> str:
    p = os.path.join(data, name)
    return p if os.path.isdir(p) else os.path.join(data, "miltrack", name)


def run_filter(frames, boxes, cfg: ScaleFilter) -> tuple[np.ndarray, np.ndarray]:
    """Estimated and true relative sizes on the labelled frames after frame 0."""
    b0 = boxes[0]
    m = cfg.start(frames[0], b0)
    est, tru = [], []
    for k in range(1, len(frames)):  # one step per frame: the tracker's loop
        t = boxes[k]
        if not np.all(np.isfinite(t)):
            continue
        c = t[:2] + t[2:] / 2
        est.append(m.estimate(frames[k], c))
        m.update(frames[k], c)
        tru.append(np.sqrt(t[2] * t[3] / (b0[2] * b0[3])))
    return np.array(est), np.array(tru)


def errors(est, tru) -> dict:
    e = np.log(est) - np.log(tru)
    return {
        "mean_log_error": float(e.mean()),
        "rms_log_error": float(np.sqrt(np.mean(e**2))),
        "size_overlap": float(np.mean(np.exp(-2 * np.abs(e)))),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", nargs="+", default=["Coke", "Tiger1", "Girl", "david", "tiger2"])
    ap.add_argument("--data", "--data-dir", default=str(DEFAULT_DATA / "tracking"))
    ap.add_argument("--out", default="benchmarks/results/tracking_scale_filter_truth.json")
    args = ap.parse_args()
    rows = []
    for name in args.sequences:
        seq = load_sequence(_seq_path(args.data, name))
        frames = [to_grey(seq.frame(k)) for k in range(len(seq))]
        first = True
        for label, fields in SETTINGS:
            est, tru = run_filter(frames, seq.boxes, ScaleFilter(**fields))
            if first:  # the fixed size: s = 1 on every frame
                rows.append(
                    {"sequence": name, "setting": "fixed size", **errors(np.ones_like(tru), tru)}
                )
                first = False
            r = {"sequence": name, "setting": label, "fields": fields, **errors(est, tru)}
            r["n_frames"] = len(est)
            rows.append(r)
            print(
                f"{name:7s} {label:40s} log error {r['mean_log_error']:+.3f} rms "
                f"{r['rms_log_error']:.3f}  size overlap {r['size_overlap']:.3f}",
                flush=True,
            )
    means = []
    for label in ["fixed size"] + [s for s, _ in SETTINGS]:
        rs = [r for r in rows if r["setting"] == label]
        if len(rs) == len(args.sequences):
            means.append(
                {
                    "setting": label,
                    "size_overlap_mean": float(np.mean([r["size_overlap"] for r in rs])),
                    "rms_log_error_mean": float(np.mean([r["rms_log_error"] for r in rs])),
                }
            )
            print(f"MEAN    {label:40s} size overlap {means[-1]['size_overlap_mean']:.3f}")
    path = write_result(args.out, {"sequences": args.sequences, "results": rows, "mean": means})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
