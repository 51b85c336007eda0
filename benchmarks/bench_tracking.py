"""Visual tracking: StructBoost vs AdaBoost vs a linear SSVM tracker vs OpenCV's CSRT, KCF,
MIL and dlib's DSST (StructBoost, Shen et al., TPAMI 2014, Sec. 4.4, Tables 4 and 5;
issue 30), side by side in one process through the same harness and metrics code.

Sequences: OTB's Coke, Tiger1, Girl (``<data>/<name>``) and MIL-track's david, tiger2
(``<data>/miltrack/<name>``, ground truth on every 5th frame: only labelled frames are
scored).  Every tracker starts from the first ``n_init`` labelled frames (``--n-init 1 3``:
one labelled frame, and the paper's three; peers get the last of them) and tracks the
rest; the metrics are over the tracked, labelled frames.  Reports mean Pascal overlap
(Table 4), centre error (Table 5), OTB success AUC and precision@20, frames per second of
``update`` (frame decoding excluded; a timing is a result only under the CPU lock) and
where the time goes.  Our trackers run once per seed; the peers are deterministic and
run once.  ``--struck DIR`` adds Struck's stored OTB result boxes (``<seq>_Struck.txt``,
1-based rows, or OTB's ``.mat``) where present.  ``--shift PX`` starts every tracker from
the first box moved by PX pixels (robustness to the first box).  ``--alias LABEL=TRACKER``
runs a variant of one of our trackers under its own label (its parameters by ``--set
LABEL.key=value``), e.g. two settings of StructBoost beside each other in one run.

Usage: python benchmarks/bench_tracking.py [--sequences Coke Tiger1 Girl david tiger2]
       [--trackers structboost ssvm adaboost csrt kcf kcf_thresh0 mil dlib_dsst]
       [--n-init 1 3] [--frames N] [--seeds 0 1 2 3 4] [--set key=value ...]
       [--struck DIR] [--shift PX] [--true-labels] [--traces] [--alias LABEL=TRACKER ...]
       [--out FILE]
Writes benchmarks/results/tracking.json (or --out): every run, and ``summary`` with the
mean and standard deviation over seeds per (sequence, tracker, n_init) and the means over
the sequences.  ``--true-labels`` is a diagnostic: each tracked frame is trained with its
ground-truth box instead of the tracker's own prediction.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # "one core", as the speed goal

import argparse
import ast
import dataclasses
import functools
import hashlib
import time

import numpy as np

from _common import DEFAULT_DATA, write_result
from maxmargin.apps.tracking import load_sequence, make_tracker, summary, track_sequence

#: the paper's Table 4 (overlap) / Table 5 (centre error, px): StructBoost, AdaBoost, Struck50
PAPER = {
    "Coke": {"structboost": (0.79, 3.7), "adaboost": (0.47, 9.3), "struck50": (0.55, 8.3)},
    "Tiger1": {"structboost": (0.75, 5.4), "adaboost": (0.64, 7.8), "struck50": (0.68, 7.8)},
    "Girl": {"structboost": (0.74, 14.3), "adaboost": (0.41, 47.1), "struck50": (0.80, 10.1)},
    "david": {"structboost": (0.86, 5.2), "adaboost": (0.34, 43.0), "struck50": (0.82, 7.7)},
    "tiger2": {"structboost": (0.74, 5.2), "adaboost": (0.46, 12.7), "struck50": (0.59, 8.7)},
}


def _seq_path(data: str, name: str) -> str:
    p = os.path.join(data, name)
    return p if os.path.isdir(p) else os.path.join(data, "miltrack", name)


def main() -> None:
    from bench_tracking_peers import PEERS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", nargs="+", default=["Coke", "Tiger1", "Girl", "david", "tiger2"])
    ap.add_argument(
        "--trackers",
        nargs="+",
        default=["structboost", "ssvm", "adaboost", *PEERS],
    )
    ap.add_argument("--n-init", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--frames", type=int, default=None, help="only the first N frames")
    ap.add_argument("--data", "--data-dir", default=str(DEFAULT_DATA / "tracking"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument(
        "--baseline-seeds",
        type=int,
        nargs="+",
        default=None,
        help="seeds of the ssvm / adaboost baselines (default: --seeds)",
    )
    ap.add_argument("--struck", default=None, help="folder of Struck's stored result boxes")
    ap.add_argument("--shift", type=float, default=0.0, help="move the first box by PX px")
    ap.add_argument(
        "--true-labels", action="store_true", help="diagnostic: train on ground-truth boxes"
    )
    ap.add_argument(
        "--traces",
        action="store_true",
        help="keep every run's per-frame overlap and the frame where the target is lost",
    )
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="TRACKER.KEY=VALUE",
        help="tracker parameters, e.g. adaboost.n_estimators=100 structboost.C=100",
    )
    ap.add_argument(
        "--alias",
        nargs="*",
        default=[],
        metavar="LABEL=TRACKER",
        help="a named variant of one of our trackers (its own --set LABEL.key=value), run "
        "beside the others, e.g. structboost_grid=structboost",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="runs in this many worker processes (accuracy runs on a shared machine; "
        "the fps of parallel runs is not a timing)",
    )
    ap.add_argument("--out", default="benchmarks/results/tracking.json")
    args = ap.parse_args()
    aliases = dict(item.split("=", 1) for item in args.alias)
    overrides: dict[str, dict] = {}
    for item in args.set:
        key, val = item.split("=", 1)
        name, param = key.split(".", 1)
        overrides.setdefault(name, {})[param] = ast.literal_eval(val)

    names = list(args.trackers) + (["struck_stored"] if args.struck else [])
    jobs = []  # (sequence, n_init, tracker label, seed), in the order of the results
    for sname in args.sequences:
        for n_init, tname in [(n, t) for n in args.n_init for t in names]:
            ours = tname not in PEERS and tname != "struck_stored"
            base = aliases.get(tname, tname)  # the tracker a variant's label names
            seeds = args.seeds
            if base in ("ssvm", "adaboost") and args.baseline_seeds is not None:
                seeds = args.baseline_seeds
            jobs += [(sname, n_init, tname, seed) for seed in (seeds if ours else [None])]
    run = functools.partial(_run_one, args, overrides, aliases)
    if args.jobs > 1:  # independent runs in worker processes, results in job order
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
            rows = list(pool.map(run, jobs))
    else:
        rows = [run(job) for job in jobs]
    rows = [r for r in rows if r is not None]
    keys = ("overlap", "success_auc", "precision_20", "centre_error", "fps", "fps_cpu")
    summ = []
    for n_init in args.n_init:
        for tname in names:
            per_seq = []
            for sname in args.sequences:
                rs = [
                    r
                    for r in rows
                    if r["sequence"] == sname and r["tracker"] == tname and r["n_init"] == n_init
                ]
                if not rs:
                    continue
                e = {"sequence": sname, "tracker": tname, "n_init": n_init}
                e["seeds"] = [r["seed"] for r in rs]
                for key in keys:
                    v = np.array([r[key] for r in rs], dtype=np.float64)
                    e[key + "_mean"], e[key + "_std"] = float(v.mean()), float(v.std())
                    e[key + "_min"], e[key + "_max"] = float(v.min()), float(v.max())
                per_seq.append(e)
                summ.append(e)
                print(
                    f"{sname:7s} {tname:12s} n_init {n_init} over seeds {e['seeds']}: overlap "
                    f"{e['overlap_mean']:.3f} +- {e['overlap_std']:.3f} [{e['overlap_min']:.3f}, "
                    f"{e['overlap_max']:.3f}]  AUC {e['success_auc_mean']:.3f} +- "
                    f"{e['success_auc_std']:.3f}  P@20 {e['precision_20_mean']:.3f}  centre "
                    f"{e['centre_error_mean']:.1f} px  {e['fps_mean']:.1f} fps",
                    flush=True,
                )
            if len(per_seq) == len(args.sequences) and per_seq:
                e = {"sequence": "mean", "tracker": tname, "n_init": n_init}
                for key in keys:
                    e[key + "_mean"] = float(np.mean([p[key + "_mean"] for p in per_seq]))
                e["max_seed_std_overlap"] = float(max(p["overlap_std"] for p in per_seq))
                e["max_seed_std_auc"] = float(max(p["success_auc_std"] for p in per_seq))
                summ.append(e)
                print(
                    f"MEAN    {tname:12s} n_init {n_init}: overlap {e['overlap_mean']:.3f}  "
                    f"AUC {e['success_auc_mean']:.3f}  P@20 {e['precision_20_mean']:.3f}  "
                    f"centre {e['centre_error_mean']:.1f} px  (largest seed std: overlap "
                    f"{e['max_seed_std_overlap']:.3f}, AUC {e['max_seed_std_auc']:.3f})",
                    flush=True,
                )
    path = write_result(
        args.out,
        {
            "frames_limit": args.frames,
            "true_labels": bool(args.true_labels),
            "shift": args.shift,
            "paper": PAPER,
            "peer_versions": _peer_versions(),
            "results": rows,
            "summary": summ,
        },
    )
    print(f"wrote {path}")


_SEQUENCES: dict = {}


def _run_one(args, overrides, aliases, job):
    """One tracker on one sequence from ``n_init`` labelled frames at one seed: its result
    row (None: a stored track that does not apply)."""
    from bench_tracking_peers import PEERS, StoredTrack, make_peer, stored_boxes

    sname, n_init, tname, seed = job
    if sname not in _SEQUENCES:  # one load per sequence and process
        _SEQUENCES.clear()
        _SEQUENCES[sname] = load_sequence(_seq_path(args.data, sname), max_frames=args.frames)
    seq = _SEQUENCES[sname]
    truth = seq.boxes.copy()
    start_boxes = truth.copy()
    start_boxes[0, :2] += args.shift
    ours = tname not in PEERS and tname != "struck_stored"
    base = aliases.get(tname, tname)
    if ours:
        tracker = make_tracker(base, random_state=seed, **overrides.get(tname, {}))
        # every parameter, the sampling protocol's as sampling__<name>
        params = {
            k: dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v  # scale_filter
            for k, v in tracker.get_params(deep=True).items()
            if k != "sampling"
        }
        if args.true_labels:
            lab = np.flatnonzero(seq.labelled)
            _train_on_truth(tracker, seq.boxes, int(lab[min(n_init, len(lab)) - 1]) + 1)
    elif tname == "struck_stored":
        b = stored_boxes(args.struck, sname)
        if b is None or len(b) != len(seq) or n_init != 1:
            return None  # stored tracks start from frame 0's box only
        tracker, params = StoredTrack(b, "struck"), {"file": args.struck}
    else:
        tracker = make_peer(tname)
        params = tracker.get_params()
    t0 = time.perf_counter()
    _pred, info = track_sequence(tracker, seq, start_boxes, n_init=n_init)
    wall = time.perf_counter() - t0
    m = summary(_pred[info["init_frames"][-1] + 1 :], truth[info["init_frames"][-1] + 1 :])
    paper_key = "struck50" if base == "ssvm" else base
    paper = PAPER.get(sname, {}).get(paper_key, (None, None))
    row = {
        "sequence": sname,
        "tracker": tname,
        "base_tracker": base,
        "n_init": n_init,
        "seed": seed,
        "shift": args.shift,
        "true_labels": bool(args.true_labels),
        "params": params,
        "frames": len(seq),
        # the decoded first frame's digest: JPEG decoders (pillow's bundled libjpeg) can
        # differ across installs by a grey level here and there, which the self-labelled
        # loop amplifies; two files whose digests differ did not track the same pixels
        "first_frame_sha256": _first_frame_digest(sname, seq),
        "scored_frames": m["n_frames"],
        "overlap": m["overlap"],
        "overlap_std": m["overlap_std"],
        "centre_error": m["centre_error"],
        "centre_error_std": m["centre_error_std"],
        "success_auc": m["success_auc"],
        "precision_20": m["precision_20"],
        "fps": info["fps"],
        "fps_cpu": info["fps_cpu"],
        "seconds_init": info["seconds_init"],
        "seconds_per_frame": {
            k: v / max(len(seq) - info["init_frames"][-1] - 1, 1) for k, v in info["timing"].items()
        },
        "wall_seconds": wall,
        "paper_overlap": paper[0],
        "paper_centre_error": paper[1],
    }
    if args.traces:
        row.update(overlap_trace(_pred, truth, info["init_frames"][-1] + 1))
    spf = row["seconds_per_frame"]
    print(
        f"{sname:7s} {tname:12s} n_init {n_init} seed {seed}: overlap "
        f"{m['overlap']:.3f} (paper {paper[0]})  centre {m['centre_error']:6.1f} px  "
        f"AUC {m['success_auc']:.3f}  P@20 {m['precision_20']:.3f}  "
        f"{info['fps']:.1f} fps (CPU {info['fps_cpu']:.1f})  ms/frame: "
        + " ".join(f"{k} {1e3 * v:.1f}" for k, v in spf.items()),
        flush=True,
    )
    return row


#: a run has lost the target from the first scored frame whose overlap, and that of the
#: next LOST_RUN - 1 scored frames, is below LOST_OVERLAP
LOST_OVERLAP, LOST_RUN = 0.1, 10


def overlap_trace(pred, truth, start: int) -> dict:
    """Per-frame overlap of the tracked frames ``start..`` (None where the frame has no
    ground truth), the first scored frame below 0.5, and ``lost_at``: the first scored
    frame from which ``LOST_RUN`` scored frames in a row overlap less than
    ``LOST_OVERLAP`` (None: never lost)."""
    from maxmargin.tasks.boxes import box_overlap

    ok = np.all(np.isfinite(truth), axis=1) & np.all(np.isfinite(pred), axis=1)
    ok[:start] = False
    ov = np.full(len(truth), np.nan)
    ov[ok] = box_overlap(pred[ok], truth[ok])
    idx = np.flatnonzero(ok)
    low = ov[idx] < LOST_OVERLAP
    run = np.convolve(low.astype(np.int64), np.ones(LOST_RUN, dtype=np.int64), "valid")
    lost = np.flatnonzero(run == LOST_RUN)
    below = np.flatnonzero(ov[idx] < 0.5)
    return {
        "trace_start": int(start),
        "overlap_trace": [None if np.isnan(v) else round(float(v), 4) for v in ov[start:]],
        "first_below_half": int(idx[below[0]]) if len(below) else None,
        "lost_at": int(idx[lost[0]]) if len(lost) else None,
    }


_DIGESTS: dict = {}


def _first_frame_digest(sname, seq) -> str:
    if sname not in _DIGESTS:
        img = np.ascontiguousarray(seq.frame(0))
        head = f"{img.dtype.str}{img.shape}".encode()
        _DIGESTS[sname] = hashlib.sha256(head + img.tobytes()).hexdigest()
    return _DIGESTS[sname]


def _peer_versions() -> dict:
    from importlib import metadata

    out = {}
    for name in ("opencv-contrib-python-headless", "dlib-bin"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _train_on_truth(tracker, boxes, first: int) -> None:
    """Diagnostic: the frame added after each ``update`` gets its ground-truth box where
    it has one (``first``: the first tracked frame; ``init``'s frames are labelled)."""
    from maxmargin.tasks.boxes import sample_boxes

    add = tracker._add

    def add_truth(grey, box, into=None, conf=None):
        if tracker.n_frames_ > 0:
            k = first + tracker.n_frames_ - 1
            if k < len(boxes) and np.all(np.isfinite(boxes[k])):
                box = sample_boxes(boxes[k], 1, 0.0, grey.shape)[0]
        return add(grey, box, into, conf=conf)

    tracker._add = add_truth


if __name__ == "__main__":
    main()
