"""Running a tracker over a sequence (the harness of the CLI and the benchmark)."""

from __future__ import annotations

import time

import numpy as np

from maxmargin.apps.tracking.metrics import summary

__all__ = ["track_sequence"]


def track_sequence(tracker, frames, boxes=None, *, n_init: int = 3, first_box=None, progress=None):
    """Track through ``frames`` (a sequence of arrays, or a
    :class:`~maxmargin.apps.tracking.data.Sequence`).

    The first ``n_init`` frames are labelled with ``boxes`` (the paper's protocol: 3
    labelled frames initialise the tracker); without ``boxes``, only ``first_box`` of
    frame 0 is given (``n_init`` = 1).  Returns ``(pred, info)``: predicted boxes for
    every frame (the given boxes for the labelled ones) and a dict with ``fps`` (wall
    clock), ``fps_cpu`` (process CPU time of ``update``, which other jobs on the machine
    do not inflate), timing and, when ``boxes`` covers every frame, the metrics of the
    tracked frames (those after the
    labelled ones).  ``progress(k, n, box, fps, overlap)`` is called after every frame.
    """
    from maxmargin.apps.tracking.data import Sequence

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
    n_init = max(1, min(int(n_init), len(boxes), n))
    labelled = [(get(k), boxes[k]) for k in range(n_init - 1)]
    t0 = time.perf_counter()
    tracker.init(get(n_init - 1), boxes[n_init - 1], labelled=labelled)
    t_init = time.perf_counter() - t0
    pred = np.zeros((n, 4))
    pred[:n_init] = boxes[:n_init]
    t_read = 0.0
    t_track = 0.0
    cpu_track = 0.0  # process CPU seconds in update: the time on one core, load aside
    ov_sum = 0.0
    from maxmargin.tasks.boxes import box_overlap

    for k in range(n_init, n):  # one step per frame
        t1 = time.perf_counter()
        f = get(k)
        t2 = time.perf_counter()
        c2 = time.process_time()
        pred[k] = tracker.update(f)
        cpu_track += time.process_time() - c2
        t3 = time.perf_counter()
        t_read += t2 - t1
        t_track += t3 - t2
        ov = float("nan")
        if len(boxes) == n:
            ov_sum += float(box_overlap(pred[k], boxes[k])[0])
            ov = ov_sum / (k - n_init + 1)
        if progress is not None:
            progress(k, n, pred[k], (k - n_init + 1) / max(t_track, 1e-9), ov)
    n_tracked = n - n_init
    info = {
        "n_frames": n,
        "n_init": n_init,
        "fps": n_tracked / t_track if t_track > 0 else float("nan"),
        "fps_cpu": n_tracked / cpu_track if cpu_track > 0 else float("nan"),
        "seconds_init": t_init,
        "seconds_tracking": t_track,
        "seconds_reading": t_read,
        "timing": dict(getattr(tracker, "timing_", {})),
    }
    if len(boxes) == n and n_tracked > 0:
        info["metrics"] = summary(pred[n_init:], boxes[n_init:])
    return pred, info
