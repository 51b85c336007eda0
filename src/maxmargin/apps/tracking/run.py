"""Running a tracker over a sequence (the harness of the CLI and the benchmark)."""

from __future__ import annotations

import time

import numpy as np

from maxmargin.apps.tracking.metrics import summary

__all__ = ["track_sequence"]


def track_sequence(tracker, frames, boxes=None, *, n_init: int = 3, first_box=None, progress=None):
    """Track through ``frames`` (a sequence of arrays, or a
    :class:`~maxmargin.apps.tracking.data.Sequence`).

    The first ``n_init`` labelled frames are given with their ``boxes`` (the paper's
    protocol: 3 labelled frames initialise the tracker); tracking starts after the last
    of them.  With ground truth on every frame these are frames ``0 .. n_init - 1``; with
    sparse ground truth (NaN rows, e.g. MIL-track's every 5th frame) they are the first
    ``n_init`` annotated frames, the frames between them are skipped (neither tracked
    nor scored).  Without ``boxes``, only ``first_box`` of frame 0 is given (``n_init`` =
    1).  Returns ``(pred, info)``: predicted boxes for every frame (the given boxes for the
    labelled ones, NaN for skipped frames) and a dict with ``fps`` (wall clock),
    ``fps_cpu`` (process CPU time of ``update``, which other jobs on the machine do not
    inflate), timing and, when ``boxes`` has a row per frame, the metrics of the tracked
    frames over those with a labelled box.  ``progress(k, n, box, fps, overlap)`` is
    called after every frame.
    """
    from maxmargin.apps.tracking.data import Sequence, labelled_mask
    from maxmargin.tasks.boxes import box_overlap

    if isinstance(frames, Sequence):
        boxes = frames.boxes if boxes is None else boxes
        get, n = frames.frame, len(frames)
    else:
        get, n = (lambda k: frames[k]), len(frames)
    if n == 0:
        raise ValueError("the sequence has no frames")
    if boxes is None:
        if first_box is None:
            raise ValueError("give the boxes of the first frames or first_box")
        boxes = np.asarray(first_box, dtype=np.float64).reshape(1, 4)
        n_init = 1
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    known = np.flatnonzero(labelled_mask(boxes[:n]))
    if len(known) == 0 or known[0] != 0:
        raise ValueError("the first frame has no box to start from")
    init_frames = known[: max(1, min(int(n_init), len(known)))]
    if init_frames[-1] >= n - 1 and len(init_frames) > 1:  # keep a frame to track
        init_frames = init_frames[:-1]
    start = int(init_frames[-1]) + 1
    labelled = [(get(int(k)), boxes[k]) for k in init_frames[:-1]]
    t0 = time.perf_counter()
    tracker.init(get(int(init_frames[-1])), boxes[init_frames[-1]], labelled=labelled)
    t_init = time.perf_counter() - t0
    pred = np.full((n, 4), np.nan)
    pred[init_frames] = boxes[init_frames]
    t_read = 0.0
    t_track = 0.0
    cpu_track = 0.0  # process CPU seconds in update: the time on one core, load aside
    ov_sum, ov_n = 0.0, 0
    full = len(boxes) == n
    for k in range(start, n):  # one step per frame
        t1 = time.perf_counter()
        f = get(k)
        t2 = time.perf_counter()
        c2 = time.process_time()
        pred[k] = tracker.update(f)
        cpu_track += time.process_time() - c2
        t3 = time.perf_counter()
        t_read += t2 - t1
        t_track += t3 - t2
        if full and np.all(np.isfinite(boxes[k])):
            ov_sum += float(box_overlap(pred[k], boxes[k])[0])
            ov_n += 1
        ov = ov_sum / ov_n if ov_n else float("nan")
        if progress is not None:
            progress(k, n, pred[k], (k - start + 1) / max(t_track, 1e-9), ov)
    n_tracked = n - start
    info = {
        "n_frames": n,
        "n_init": len(init_frames),
        "init_frames": [int(k) for k in init_frames],
        "fps": n_tracked / t_track if t_track > 0 else float("nan"),
        "fps_cpu": n_tracked / cpu_track if cpu_track > 0 else float("nan"),
        "seconds_init": t_init,
        "seconds_tracking": t_track,
        "seconds_reading": t_read,
        "timing": dict(getattr(tracker, "timing_", {})),
    }
    if full and n_tracked > 0:
        info["metrics"] = summary(pred[start:], boxes[start:n])
    return pred, info
