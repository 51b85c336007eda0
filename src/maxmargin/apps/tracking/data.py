"""OTB sequence folders: ``img/NNNN.jpg`` frames and ``groundtruth_rect.txt`` boxes.

Wu, Lim & Yang, "Online object tracking: A benchmark", CVPR 2013.  The box file has one
``x,y,w,h`` row per frame in 1-based pixel coordinates, separated by commas, tabs or
spaces; :func:`read_boxes` returns 0-based boxes (``x - 1, y - 1``), the convention of
:mod:`maxmargin.tasks.boxes`, and :func:`write_boxes` writes 1-based rows back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Sequence", "load_sequence", "read_boxes", "write_boxes"]

_IMAGE_EXT = (".jpg", ".jpeg", ".png", ".bmp")


def read_boxes(path) -> np.ndarray:
    """Boxes of an OTB ground-truth file as 0-based ``(x, y, w, h)`` floats, (n, 4)."""
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
    bad = np.flatnonzero((b[:, 2] <= 0) | (b[:, 3] <= 0))
    if len(bad):
        w, h = b[bad[0], 2:]
        raise ValueError(f"{path}: box {bad[0] + 1} has zero or negative size {w:g} x {h:g}")
    b[:, :2] -= 1.0
    return b


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
    """An OTB sequence: frame paths, 0-based ground-truth boxes, the frame size."""

    name: str
    frames: list[Path]
    boxes: np.ndarray
    shape: tuple[int, int]

    def __len__(self) -> int:
        return len(self.frames)

    def frame(self, k: int) -> np.ndarray:
        """Frame ``k``; ValueError naming the file if it cannot be decoded or its size
        differs from the first frame's."""
        from maxmargin._validation import check_image_size, read_image

        img = read_image(self.frames[k], what="frame")
        first = f"the first frame ({self.frames[0].name})"
        check_image_size(img.shape, self.shape, self.frames[k], first, what="frame")
        return img


def load_sequence(path, *, max_frames: int | None = None) -> Sequence:
    """Read an OTB-layout folder (``img/`` + ``groundtruth_rect.txt``).

    Raises ValueError for a missing folder or box file, a folder without frames, a box
    count that does not match the frames, or a box of zero/negative size or outside
    the image.  ``max_frames`` keeps only the first frames.
    """
    from maxmargin._validation import read_image

    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder")
    img = root / "img"
    if not img.is_dir():
        raise ValueError(f"{root} has no img/ folder of frames")
    frames = sorted(p for p in img.iterdir() if p.suffix.lower() in _IMAGE_EXT)
    if not frames:
        raise ValueError(f"{img} holds no frames ({'/'.join(_IMAGE_EXT)})")
    gt = root / "groundtruth_rect.txt"
    if not gt.is_file():
        cands = sorted(root.glob("groundtruth_rect*.txt"))
        if not cands:
            raise ValueError(f"{root} has no groundtruth_rect.txt")
        gt = cands[0]
    boxes = read_boxes(gt)
    if len(boxes) != len(frames):
        raise ValueError(f"{root}: {len(frames)} frames but {len(boxes)} boxes in {gt.name}")
    if max_frames is not None:
        frames, boxes = frames[: int(max_frames)], boxes[: int(max_frames)]
    shape = read_image(frames[0], what="frame").shape[:2]
    for k, b in enumerate(boxes):  # one check per frame (a few hundred)
        check_box(b, shape, what=f"box {k + 1} of {gt.name}")
    return Sequence(root.name, frames, boxes, (int(shape[0]), int(shape[1])))
