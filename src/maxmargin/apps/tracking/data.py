"""Tracking sequences: OTB folders and MIL-track folders with sparse ground truth.

OTB (Wu, Lim & Yang, "Online object tracking: A benchmark", CVPR 2013): ``img/NNNN.jpg``
frames and ``groundtruth_rect.txt``, one ``x,y,w,h`` row per frame in 1-based pixel
coordinates, separated by commas, tabs or spaces.  :func:`read_boxes` returns 0-based
boxes (``x - 1, y - 1``), the convention of :mod:`maxmargin.tasks.boxes`, and
:func:`write_boxes` writes 1-based rows back.

MIL-track (Babenko, Yang & Belongie, "Visual tracking with online multiple instance
learning", CVPR 2009) annotates only some frames (every 5th): its ``<seq>_gt.txt`` has one
0-based row per frame with ``0,0,0,0`` on frames that were not annotated.  Such rows are
read as *unlabelled* -- a row of NaN -- and every metric
(:mod:`maxmargin.apps.tracking.metrics`) scores only the labelled frames.  Accepted
layouts: ``groundtruth_rect.txt`` (1-based, ``0,0,0,0`` rows unlabelled),
``groundtruth_labelled.txt`` (``frame, x, y, w, h``, 1-based frame numbers and
coordinates, only the labelled frames), or the MIL files themselves (``<seq>_gt.txt``,
0-based, with ``<seq>_frames.txt`` giving the first and last frame of ``imgs/``), at the
top of the folder or in ``mil_original/``.  Frames may be JPEG, PNG or BMP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "Sequence",
    "labelled_mask",
    "load_sequence",
    "read_boxes",
    "read_labelled_boxes",
    "write_boxes",
]

_IMAGE_EXT = (".jpg", ".jpeg", ".png", ".bmp")


def read_boxes(path, *, one_based: bool = True) -> np.ndarray:
    """Boxes of a ground-truth file as 0-based ``(x, y, w, h)`` floats, (n, 4).

    One ``x,y,w,h`` row per frame (1-based as in OTB unless ``one_based=False``, as in
    MIL-track's ``*_gt.txt``).  A row ``0,0,0,0`` marks a frame without annotation and
    becomes a row of NaN (see :func:`labelled_mask`); any other box of zero or negative
    size is an error.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no box file {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a text file of boxes ({exc.reason})") from None
    rows = []
    for k, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s:
            continue
        parts = [p for p in re.split(r"[,\s]+", s) if p]
        try:
            vals = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"{path}:{k}: not numbers: {line!r}") from None
        if len(vals) != 4:
            raise ValueError(f"{path}:{k}: expected 4 values x,y,w,h, got {len(vals)}")
        rows.append(vals)
    if not rows:
        raise ValueError(f"{path} holds no boxes")
    b = np.array(rows)
    if not np.all(np.isfinite(b)):
        raise ValueError(f"{path}: boxes must be finite")
    blank = np.all(b == 0, axis=1)  # MIL-track: 0,0,0,0 = not annotated
    bad = np.flatnonzero(((b[:, 2] <= 0) | (b[:, 3] <= 0)) & ~blank)
    if len(bad):
        w, h = b[bad[0], 2:]
        raise ValueError(f"{path}: box {bad[0] + 1} has zero or negative size {w:g} x {h:g}")
    if blank.all():
        raise ValueError(f"{path}: no frame is annotated (every row is 0,0,0,0)")
    if one_based:
        b[:, :2] -= 1.0
    b[blank] = np.nan
    return b


def read_labelled_boxes(path, n_frames: int) -> np.ndarray:
    """A ``groundtruth_labelled.txt`` file (rows ``frame, x, y, w, h``, 1-based frame
    numbers and coordinates, labelled frames only) as (n_frames, 4) 0-based boxes with
    NaN rows on the frames it does not list."""
    path = Path(path)
    rows = []
    for k, line in enumerate(path.read_text().splitlines(), start=1):
        s = line.strip()
        if not s:
            continue
        parts = [p for p in re.split(r"[,\s]+", s) if p]
        try:
            vals = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"{path}:{k}: not numbers: {line!r}") from None
        if len(vals) != 5:
            raise ValueError(f"{path}:{k}: expected 5 values frame,x,y,w,h, got {len(vals)}")
        rows.append(vals)
    if not rows:
        raise ValueError(f"{path} holds no boxes")
    a = np.array(rows)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{path}: values must be finite")
    frame = a[:, 0]
    if np.any(frame != np.round(frame)) or np.any(frame < 1) or np.any(frame > n_frames):
        k = int(np.flatnonzero((frame != np.round(frame)) | (frame < 1) | (frame > n_frames))[0])
        raise ValueError(f"{path}:{k + 1}: frame number {a[k, 0]:g} is not one of 1..{n_frames}")
    if len(np.unique(frame)) != len(frame):
        raise ValueError(f"{path}: a frame is listed twice")
    bad = np.flatnonzero((a[:, 3] <= 0) | (a[:, 4] <= 0))
    if len(bad):
        raise ValueError(f"{path}:{bad[0] + 1}: zero or negative size {tuple(a[bad[0], 3:])}")
    b = np.full((n_frames, 4), np.nan)
    b[frame.astype(np.intp) - 1] = a[:, 1:] - np.array([1.0, 1.0, 0.0, 0.0])
    return b


def labelled_mask(boxes) -> np.ndarray:
    """Which rows of a ground-truth array are annotated (finite), shape (n,)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return np.all(np.isfinite(b), axis=1)


def write_boxes(path, boxes) -> None:
    """Write 0-based boxes as 1-based OTB rows ``x,y,w,h``."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
    b[:, :2] += 1.0
    lines = [",".join(f"{v:g}" for v in row) for row in b]
    from maxmargin.io import atomic_write_text

    atomic_write_text(path, "\n".join(lines) + "\n")


def check_box(box, image_shape, what="box") -> np.ndarray:
    """A 0-based box that has positive size and overlaps the image, else ValueError."""
    b = np.asarray(box, dtype=np.float64).ravel()
    if b.shape != (4,) or not np.all(np.isfinite(b)):
        raise ValueError(f"{what} must be 4 finite numbers (x, y, w, h), got {box!r}")
    shown = "(" + ", ".join(f"{v:g}" for v in b) + ")"
    if b[2] <= 0 or b[3] <= 0:
        raise ValueError(f"{what} has zero or negative size: {shown}")
    H, W = int(image_shape[0]), int(image_shape[1])
    if b[0] >= W or b[1] >= H or b[0] + b[2] <= 0 or b[1] + b[3] <= 0:
        raise ValueError(f"{what} {shown} lies outside the {W}x{H} image")
    return b


@dataclass
class Sequence:
    """A sequence: frame paths, 0-based ground-truth boxes (NaN rows on frames without
    annotation), the frame size."""

    name: str
    frames: list[Path]
    boxes: np.ndarray
    shape: tuple[int, int]

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def labelled(self) -> np.ndarray:
        """Boolean mask of the annotated frames."""
        return labelled_mask(self.boxes)

    def frame(self, k: int) -> np.ndarray:
        """Frame ``k``; ValueError naming the file if it cannot be decoded or its size
        differs from the first frame's."""
        from maxmargin._validation import check_image_size, read_image

        img = read_image(self.frames[k], what="frame")
        first = f"the first frame ({self.frames[0].name})"
        check_image_size(img.shape, self.shape, self.frames[k], first, what="frame")
        return img


def _frames_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in _IMAGE_EXT)


def load_sequence(path, *, max_frames: int | None = None) -> Sequence:
    """Read a sequence folder: OTB (``img/`` + ``groundtruth_rect.txt``) or MIL-track
    (see the module docstring; unannotated frames get NaN boxes).

    Raises ValueError for a missing folder or box file, a folder without frames, a box
    count that does not match the frames, a box of zero/negative size or outside the
    image, or a first frame without a box (a tracker starts from it).  ``max_frames``
    keeps only the first frames.
    """
    from maxmargin._validation import read_image

    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder")
    img = root / "img"
    mil_gt = sorted(root.glob("*_gt.txt")) or sorted(root.glob("mil_original/*_gt.txt"))
    if not img.is_dir() and (root / "imgs").is_dir() and mil_gt:
        img = root / "imgs"  # MIL-track's own layout
    if not img.is_dir():
        raise ValueError(f"{root} has no img/ folder of frames")
    frames = _frames_in(img)
    if not frames:
        raise ValueError(f"{img} holds no frames ({'/'.join(_IMAGE_EXT)})")
    gt = root / "groundtruth_rect.txt"
    if not gt.is_file():
        cands = sorted(root.glob("groundtruth_rect*.txt"))
        gt = cands[0] if cands else None
    if gt is not None:
        boxes = read_boxes(gt)
    elif (root / "groundtruth_labelled.txt").is_file():
        gt = root / "groundtruth_labelled.txt"
        boxes = read_labelled_boxes(gt, len(frames))
    elif mil_gt:
        gt = mil_gt[0]
        boxes = read_boxes(gt, one_based=False)
        span = gt.with_name(gt.name[: -len("_gt.txt")] + "_frames.txt")
        if img.name == "imgs" and span.is_file():  # MIL layout: frames first..last of imgs/
            vals = [int(float(v)) for v in re.split(r"[,\s]+", span.read_text().strip()) if v]
            if len(vals) != 2:
                raise ValueError(f"{span}: expected 'first,last'")
            nums = [int(m.group()) if (m := re.search(r"\d+", p.stem)) else -1 for p in frames]
            frames = [p for p, k in zip(frames, nums) if vals[0] <= k <= vals[1]]
    else:
        raise ValueError(
            f"{root} has no groundtruth_rect.txt, groundtruth_labelled.txt or *_gt.txt"
        )
    if len(boxes) != len(frames):
        raise ValueError(f"{root}: {len(frames)} frames but {len(boxes)} boxes in {gt.name}")
    if max_frames is not None:
        frames, boxes = frames[: int(max_frames)], boxes[: int(max_frames)]
    if not labelled_mask(boxes[:1]).all():
        raise ValueError(f"{gt.name}: the first frame has no box (a tracker starts there)")
    shape = read_image(frames[0], what="frame").shape[:2]
    for k in np.flatnonzero(labelled_mask(boxes)):  # one check per labelled frame
        check_box(boxes[k], shape, what=f"box {k + 1} of {gt.name}")
    return Sequence(root.name, frames, boxes, (int(shape[0]), int(shape[1])))
