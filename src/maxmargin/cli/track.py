"""``maxmargin track SEQ_DIR``: run a tracker over an OTB-layout sequence folder.

Self-contained (argument definitions and handler) so the CLI only registers it:
``add_parser(subparsers)``.  Writes the boxes in OTB format, a per-frame overlap
and centre-error plot and, with ``--gif``, an animated GIF of the track.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from maxmargin.cli.parser import positive_list

__all__ = ["add_parser", "cmd_track", "draw_box", "write_gif", "write_plot"]


def add_parser(sub, parents=()) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "track",
        parents=list(parents),
        help="track an object through an OTB sequence folder (StructBoost, AdaBoost, SSVM)",
        description="Track the object of the first ground-truth box through SEQ_DIR "
        "(img/NNNN.jpg + groundtruth_rect.txt), print overlap / centre error / fps and "
        "write the boxes (OTB format), a per-frame plot and optionally a GIF to --out.",
    )
    p.add_argument("seq_dir", metavar="SEQ_DIR", help="sequence folder in OTB layout")
    p.add_argument("--tracker", choices=["structboost", "adaboost", "ssvm"], default="structboost")
    p.add_argument("--out", default=None, metavar="DIR", help="write boxes, plot (and GIF)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    p.add_argument("--max-frames", type=int, default=None, help="only the first N frames")
    p.add_argument("--n-init", type=int, default=3, help="labelled frames used to initialise (3)")
    p.add_argument("--scales", default="1", help="comma-separated box scales searched (1)")
    p.add_argument(
        "--features",
        default=None,
        help="raw, hog, haar joined by + (default: the tracker's, hog+haar for "
        "structboost, raw+hog for the baselines)",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (0)")
    p.add_argument("--gif", action="store_true", help="also write an animated GIF overlay")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(handler=cmd_track)
    return p


def cmd_track(args: argparse.Namespace) -> int:
    from maxmargin.apps.tracking import load_sequence, make_tracker, track_sequence, write_boxes
    from maxmargin.apps.tracking.metrics import centre_errors, overlaps

    if args.max_frames is not None and args.max_frames < 2:
        raise ValueError("--max-frames must be at least 2")
    if args.n_init < 1:
        raise ValueError("--n-init must be at least 1")
    seq = load_sequence(args.seq_dir, max_frames=args.max_frames)
    extra = {} if args.features is None else {"features": args.features}
    tracker = make_tracker(
        args.tracker,
        random_state=args.seed,
        scales=tuple(positive_list(args.scales, "--scales")),
        **extra,
    )
    show = not args.quiet and sys.stderr.isatty()

    def progress(k, n, box, fps, ov):
        if not args.quiet and (show or (k + 1) % 50 == 0 or k + 1 == n):
            end = "\r" if show and k + 1 < n else "\n"
            sys.stderr.write(f"frame {k + 1}/{n}  {fps:6.1f} fps  running overlap {ov:.3f}   {end}")
            sys.stderr.flush()

    pred, info = track_sequence(tracker, seq, n_init=args.n_init, progress=progress)
    m = info.get("metrics", {})
    result = {
        "sequence": seq.name,
        "tracker": args.tracker,
        "frames": len(seq),
        "n_init": info["n_init"],
        **{k: m.get(k) for k in ("overlap", "centre_error", "success_auc", "precision_20")},
        "fps": info["fps"],
        "seconds": {k: round(v, 3) for k, v in info["timing"].items()},
    }
    if args.out is not None:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{seq.name}_{args.tracker}"
        from maxmargin.io import check_distinct_output

        inputs = [*seq.frames, *Path(args.seq_dir).glob("groundtruth_rect*.txt")]
        for suffix in (".txt", ".png", ".gif"):
            check_distinct_output(out / f"{stem}{suffix}", inputs)
        write_boxes(out / f"{stem}.txt", pred)
        files = [out / f"{stem}.txt"]
        write_plot(
            out / f"{stem}.png",
            overlaps(pred, seq.boxes),
            centre_errors(pred, seq.boxes),
            f"{seq.name}: {args.tracker}",
            n_init=info["n_init"],
        )
        files.append(out / f"{stem}.png")
        if args.gif:
            write_gif(out / f"{stem}.gif", seq, pred)
            files.append(out / f"{stem}.gif")
        result["files"] = [str(f) for f in files]
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        print(
            f"{seq.name} ({len(seq)} frames, {info['n_init']} labelled) with {args.tracker}: "
            f"overlap {result['overlap']:.3f}  centre error {result['centre_error']:.1f} px  "
            f"success AUC {result['success_auc']:.3f}  precision@20 "
            f"{result['precision_20']:.3f}  {result['fps']:.1f} fps"
        )
        t = info["timing"]
        print("time (s): " + "  ".join(f"{k} {v:.2f}" for k, v in t.items()))
        for f in result.get("files", []):
            print(f"wrote {f}")
    return 0


def write_plot(path, ov, ce, title, n_init=0) -> None:
    """Per-frame overlap and centre error (as in the paper's Fig. 5)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = np.arange(1, len(ov) + 1)
    fig, (a, b) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    a.plot(k, ov, lw=1)
    a.set_ylabel("Pascal overlap")
    a.set_ylim(0, 1.02)
    a.set_title(title)
    b.plot(k, ce, lw=1, color="C1")
    b.set_ylabel("centre error (px)")
    b.set_xlabel("frame")
    for ax in (a, b):
        ax.axvspan(0.5, n_init + 0.5, color="0.9", lw=0)
    fig.tight_layout()
    from maxmargin.cli.plots import save_figure

    try:
        save_figure(fig, path, dpi=100)
    finally:
        plt.close(fig)


def draw_box(img: np.ndarray, box, colour, width: int = 2) -> None:
    """Draw a rectangle outline in place (array slicing, no per-pixel loop)."""
    H, W = img.shape[:2]
    b = np.round(np.asarray(box, dtype=np.float64)).astype(int)
    x0, y0 = int(b[0]), int(b[1])
    x1, y1 = int(b[0] + b[2]) - 1, int(b[1] + b[3]) - 1
    x0, x1 = np.clip([x0, x1], 0, W - 1)
    y0, y1 = np.clip([y0, y1], 0, H - 1)
    c = np.asarray(colour, dtype=img.dtype)
    img[y0 : y0 + width, x0 : x1 + 1] = c
    img[max(y1 - width + 1, 0) : y1 + 1, x0 : x1 + 1] = c
    img[y0 : y1 + 1, x0 : x0 + width] = c
    img[y0 : y1 + 1, max(x1 - width + 1, 0) : x1 + 1] = c


def write_gif(path, seq, pred, max_side: int = 320, every: int = 1) -> None:
    """Animated GIF: ground truth in green, the track in red (frames down-sampled)."""
    import imageio.v3 as iio

    H, W = seq.shape
    step = max(1, int(np.ceil(max(H, W) / max_side)))
    frames = []
    for k in range(0, len(seq), every):  # one step per frame
        f = seq.frame(k)
        if f.ndim == 2:
            f = np.repeat(f[:, :, None], 3, axis=2)
        f = np.ascontiguousarray(f[:, :, :3]).copy()
        for b, colour in ((seq.boxes[k], (0, 200, 0)), (pred[k], (230, 0, 0))):
            if np.all(np.isfinite(b)):  # unlabelled / untracked frames have NaN boxes
                draw_box(f, b, colour, width=max(1, step))
        frames.append(f[::step, ::step])
    from maxmargin.io import atomic_write_bytes

    data = iio.imwrite("<bytes>", np.stack(frames), extension=".gif", duration=40, loop=0)
    atomic_write_bytes(path, data)
