"""PASCAL VOC annotations and images for object detection.

Everingham et al., "The PASCAL Visual Object Classes (VOC) challenge", IJCV 88 (2010).
A VOC XML file holds ``<size>`` (width, height) and ``<object>`` elements with a
``<name>`` and a ``<bndbox>`` of 1-based inclusive pixel coordinates
``xmin, ymin, xmax, ymax``.  :func:`read_voc` returns 0-based ``(x, y, w, h)`` boxes
(``x = xmin - 1``, ``w = xmax - xmin + 1``), the convention of
:mod:`maxmargin.tasks.boxes` and :mod:`maxmargin.apps.tracking`.

Bad input raises ``ValueError`` naming the file: XML that does not parse, a missing
``<size>`` or coordinate, non-numeric or inverted coordinates, boxes that leave the image
(``clip=True`` clips them into the image instead -- some annotation tools write
``xmax = width + 1``), and images that cannot be decoded.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from maxmargin.apps._image import IMAGE_SUFFIXES

__all__ = ["Annotation", "load_image", "load_voc_folder", "read_voc", "rescale_image"]


@dataclass
class Annotation:
    """One VOC file: image file name, image size and the object boxes."""

    filename: str
    width: int
    height: int
    boxes: np.ndarray  # (n, 4) 0-based (x, y, w, h)
    labels: list[str] = field(default_factory=list)


def _number(node, tag: str, path) -> float:
    el = node.find(tag)
    if el is None or el.text is None or not el.text.strip():
        raise ValueError(f"{path}: missing <{tag}>")
    try:
        v = float(el.text.strip())
    except ValueError:
        raise ValueError(f"{path}: <{tag}> is not a number: {el.text.strip()!r}") from None
    if not np.isfinite(v):
        raise ValueError(f"{path}: <{tag}> is not finite")
    return v


def read_voc(path, *, labels=None, clip: bool = False) -> Annotation:
    """Read one VOC XML file.

    ``labels``: keep only objects with these names (None: all).  ``clip``: clip boxes
    that extend beyond the image into it (a box entirely outside is still an error);
    otherwise such boxes raise ``ValueError``.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no annotation file {path}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{path}: corrupt XML ({exc})") from None
    size = root.find("size")
    if size is None:
        raise ValueError(f"{path}: missing <size>")
    W, H = _number(size, "width", path), _number(size, "height", path)
    if W <= 0 or H <= 0:
        raise ValueError(f"{path}: image size must be positive, got {W:g} x {H:g}")
    fn = root.findtext("filename") or ""
    rows, names = [], []
    for k, obj in enumerate(root.findall("object"), start=1):
        name = (obj.findtext("name") or "").strip()
        if labels is not None and name not in labels:
            continue
        bb = obj.find("bndbox")
        if bb is None:
            raise ValueError(f"{path}: object {k} has no <bndbox>")
        x0, y0 = _number(bb, "xmin", path), _number(bb, "ymin", path)
        x1, y1 = _number(bb, "xmax", path), _number(bb, "ymax", path)
        if x1 < x0 or y1 < y0:
            raise ValueError(f"{path}: object {k} has xmax < xmin or ymax < ymin")
        box = np.array([x0 - 1.0, y0 - 1.0, x1 - x0 + 1.0, y1 - y0 + 1.0])
        outside = box[0] < 0 or box[1] < 0 or box[0] + box[2] > W or box[1] + box[3] > H
        if outside:
            if not clip:
                raise ValueError(
                    f"{path}: object {k} box (xmin {x0:g}, ymin {y0:g}, xmax {x1:g}, "
                    f"ymax {y1:g}) lies outside the {W:g} x {H:g} image "
                    "(pass clip=True to clip it)"
                )
            xa, ya = max(box[0], 0.0), max(box[1], 0.0)
            xb, yb = min(box[0] + box[2], W), min(box[1] + box[3], H)
            if xb <= xa or yb <= ya:
                raise ValueError(f"{path}: object {k} box lies entirely outside the image")
            box = np.array([xa, ya, xb - xa, yb - ya])
        rows.append(box)
        names.append(name)
    boxes = np.array(rows, dtype=np.float64).reshape(-1, 4)
    return Annotation(fn, int(W), int(H), boxes, names)


def load_image(path) -> np.ndarray:
    """An image file as an (H, W) or (H, W, 3) uint8 array; ValueError if it cannot be
    decoded (alpha channels are dropped)."""
    import imageio.v3 as iio

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no image file {path}")
    try:
        img = np.asarray(iio.imread(path))
    except Exception as exc:  # imageio raises many types for undecodable data
        raise ValueError(f"{path}: cannot decode image ({type(exc).__name__}: {exc})") from None
    if img.ndim == 3 and img.shape[2] == 4:
        img = img[..., :3]
    if img.ndim not in (2, 3) or img.size == 0 or (img.ndim == 3 and img.shape[2] != 3):
        raise ValueError(f"{path}: not a grey or RGB image (shape {img.shape})")
    if img.dtype != np.uint8:
        a = img.astype(np.float64)
        hi = a.max() if a.size else 1.0
        img = np.clip(a / (hi if hi > 255 else 255.0) * 255.0, 0, 255).astype(np.uint8)
    return img


def rescale_image(image, boxes, max_side: int | None):
    """Downscale ``image`` so that its longer side is at most ``max_side`` (None: keep),
    scaling ``boxes`` alike; returns ``(image, boxes, factor)``."""
    img = np.asarray(image)
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    H, W = img.shape[:2]
    if max_side is None or max(H, W) <= max_side:
        return img, b.copy(), 1.0
    from skimage.transform import resize

    f = max_side / max(H, W)
    shape = (max(1, round(H * f)), max(1, round(W * f)), *img.shape[2:])
    out = resize(img, shape, anti_aliasing=True, preserve_range=True).astype(img.dtype)
    fx, fy = shape[1] / W, shape[0] / H
    return out, b * np.array([fx, fy, fx, fy]), f


def _natural_key(p: Path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.stem)]


def load_voc_folder(
    image_dir, annotation_dir, *, labels=None, clip=False, max_side=None, names=None
):
    """Images and boxes of a VOC-style pair of folders, matched by file stem and sorted
    in natural order (``x-2`` before ``x-10``).

    Returns ``(images, boxes, stems)``: lists of arrays, (n_i, 4) box arrays and names.
    ``max_side``: downscale each image (and its boxes) to at most this many pixels on
    its longer side.  The annotation's ``<size>`` must match the decoded image.
    """
    image_dir, annotation_dir = Path(image_dir), Path(annotation_dir)
    for d in (image_dir, annotation_dir):
        if not d.is_dir():
            raise ValueError(f"not a folder: {d}")
    imgs = {p.stem: p for p in image_dir.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES}
    xmls = sorted(annotation_dir.glob("*.xml"), key=_natural_key)
    if not xmls:
        raise ValueError(f"no .xml annotations in {annotation_dir}")
    if names is not None:
        wanted = list(names)
        by_stem = {p.stem: p for p in xmls}
        missing = [s for s in wanted if s not in by_stem]
        if missing:
            raise ValueError(f"no annotation named {missing[0]!r} in {annotation_dir}")
        xmls = [by_stem[s] for s in wanted]
    images, boxes, stems = [], [], []
    for xp in xmls:
        ann = read_voc(xp, labels=labels, clip=clip)
        ip = imgs.get(xp.stem)
        if ip is None and ann.filename:
            from maxmargin._validation import contained_path

            # a file named inside another file never leaves its folder
            cand = contained_path(image_dir, ann.filename, source=xp)
            ip = cand if cand.is_file() else None
        if ip is None:
            raise ValueError(f"no image for annotation {xp.name} in {image_dir}")
        img = load_image(ip)
        if img.shape[:2] != (ann.height, ann.width):
            raise ValueError(
                f"{xp}: <size> {ann.width} x {ann.height} does not match image {ip.name} "
                f"({img.shape[1]} x {img.shape[0]})"
            )
        img, b, _ = rescale_image(img, ann.boxes, max_side)
        images.append(img)
        boxes.append(b)
        stems.append(xp.stem)
    return images, boxes, stems
