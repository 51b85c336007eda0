"""Patch features for thousands of boxes per frame, from integral images.

Every feature of a box is a sum over a rectangle of the box's cell grid, so one integral
image per channel, computed once per frame on the region the boxes cover, gives all the
boxes' features by four look-ups per cell (Viola & Jones, "Rapid object detection using
a boosted cascade of simple features", CVPR 2001; Porikli, "Integral histogram", CVPR
2005).  No loop per box or per pixel: the look-ups are one fancy-indexing gather over
(boxes, cell edges).

Feature kinds (combine with ``+``, e.g. ``"raw+hog"``, the paper's choice, Sec. 4.4):

* ``raw`` -- down-scaled grey-scale pixels: the mean grey level of each cell of a
  ``raw_cells x raw_cells`` grid over the box (area resampling), normalised per patch
  to zero mean and unit variance (illumination changes).
* ``hog`` -- histograms of oriented gradients (Dalal & Triggs, "Histograms of oriented
  gradients for human detection", CVPR 2005) in the integral-histogram form: unsigned
  gradient orientation in ``hog_bins`` bins with hard assignment, magnitude-weighted
  sums over a ``hog_cells x hog_cells`` grid, the whole descriptor L2-normalised.  This
  is not scikit-image's HOG (no orientation interpolation, no overlapping-block
  normalisation): scikit-image works patch by patch, about 2 ms per box, far too slow
  for 2000 candidates a frame (see docs/tracking.md).
* ``haar`` -- Haar-like features (as Struck uses, Hare et al., ICCV 2011): differences
  of horizontally, vertically and diagonally adjacent cell means of a ``haar_cells``
  grid, i.e. two- and four-rectangle features at one scale, normalised by the patch's
  standard deviation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["FeatureQuantizer", "PatchFeatures", "to_grey"]

KINDS = ("raw", "hog", "haar")


def to_grey(frame) -> np.ndarray:
    """A float grey image in [0, 1] from a grey (H, W) or colour (H, W, 3/4) frame."""
    a = np.asarray(frame)
    if a.ndim == 3:
        if a.shape[2] not in (3, 4):
            raise ValueError(f"colour frames must have 3 or 4 channels, got {a.shape}")
        a = a[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    elif a.ndim != 2:
        raise ValueError(f"frames must be (H, W) or (H, W, 3) arrays, got shape {a.shape}")
    a = a.astype(np.float32)
    if np.asarray(frame).dtype == np.uint8:
        a /= 255.0
    return a


def _integral(img: np.ndarray) -> np.ndarray:
    """Integral image(s) with a zero first row and column; works on (..., H, W)."""
    out = np.zeros((*img.shape[:-2], img.shape[-2] + 1, img.shape[-1] + 1), np.float64)
    np.cumsum(np.cumsum(img, axis=-2, dtype=np.float64), axis=-1, out=out[..., 1:, 1:])
    return out


def _edges(start, length, n_cells) -> np.ndarray:
    """Integer cell edges (n_boxes, n_cells + 1) splitting [start, start + length)."""
    t = np.arange(n_cells + 1) / n_cells
    return np.round(start[:, None] + length[:, None] * t[None, :]).astype(np.intp)


def _cell_sums(II: np.ndarray, boxes: np.ndarray, n_cells: int) -> np.ndarray:
    """Sums over an ``n_cells`` x ``n_cells`` grid of every box: (C, n, g, g) for
    integral images II (C, H+1, W+1) and boxes in II's coordinates."""
    xe = _edges(boxes[:, 0], boxes[:, 2], n_cells)
    ye = _edges(boxes[:, 1], boxes[:, 3], n_cells)
    G = II[:, ye[:, :, None], xe[:, None, :]]  # (C, n, g+1, g+1)
    return G[:, :, 1:, 1:] - G[:, :, :-1, 1:] - G[:, :, 1:, :-1] + G[:, :, :-1, :-1]


def _cell_areas(boxes, n_cells) -> np.ndarray:
    xe = _edges(boxes[:, 0], boxes[:, 2], n_cells)
    ye = _edges(boxes[:, 1], boxes[:, 3], n_cells)
    return np.maximum(np.diff(ye, axis=1)[:, :, None] * np.diff(xe, axis=1)[:, None, :], 1)


class PatchFeatures:
    """Feature vectors of many boxes of one frame (see the module docstring).

    Parameters
    ----------
    kind : str, default="raw+hog"
        ``+``-separated subset of ``raw``, ``hog``, ``haar``.
    raw_cells, hog_cells, hog_bins, haar_cells : int
        Grid sizes: ``raw_cells**2`` raw values, ``hog_cells**2 * hog_bins`` HOG values,
        ``2 * haar_cells * (haar_cells - 1) + (haar_cells - 1)**2`` Haar values.
    """

    def __init__(
        self,
        kind: str = "raw+hog",
        *,
        raw_cells: int = 12,
        hog_cells: int = 4,
        hog_bins: int = 9,
        haar_cells: int = 6,
    ) -> None:
        parts = [p.strip() for p in str(kind).split("+") if p.strip()]
        bad = [p for p in parts if p not in KINDS]
        if not parts or bad:
            raise ValueError(f"feature kind must combine {KINDS} with '+', got {kind!r}")
        for name, v in (("raw_cells", raw_cells), ("hog_cells", hog_cells)):
            if int(v) < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        if int(hog_bins) < 2 or int(haar_cells) < 2:
            raise ValueError("hog_bins and haar_cells must be >= 2")
        self.kind = kind
        self.parts = parts
        self.raw_cells, self.hog_cells = int(raw_cells), int(hog_cells)
        self.hog_bins, self.haar_cells = int(hog_bins), int(haar_cells)

    @property
    def n_features(self) -> int:
        g = self.haar_cells
        size = {
            "raw": self.raw_cells**2,
            "hog": self.hog_cells**2 * self.hog_bins,
            "haar": 2 * g * (g - 1) + (g - 1) ** 2,
        }
        return sum(size[p] for p in self.parts)

    def __call__(self, frame, boxes) -> np.ndarray:
        """Features of ``boxes`` (n, 4) ``(x, y, w, h)`` (inside the frame), (n, d)."""
        grey = frame if (np.ndim(frame) == 2 and frame.dtype == np.float32) else to_grey(frame)
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        if len(boxes) == 0:
            return np.zeros((0, self.n_features))
        H, W = grey.shape
        b = np.round(boxes).astype(np.intp)
        b[:, 2:] = np.maximum(b[:, 2:], 1)
        if (
            b[:, 0].min() < 0
            or b[:, 1].min() < 0
            or (b[:, 0] + b[:, 2]).max() > W
            or (b[:, 1] + b[:, 3]).max() > H
        ):
            raise ValueError("boxes must lie inside the frame")
        # integral images on the region the boxes cover only (1 px border for gradients)
        x0 = max(int(b[:, 0].min()) - 1, 0)
        y0 = max(int(b[:, 1].min()) - 1, 0)
        x1 = min(int((b[:, 0] + b[:, 2]).max()) + 1, W)
        y1 = min(int((b[:, 1] + b[:, 3]).max()) + 1, H)
        roi = grey[y0:y1, x0:x1]
        rb = b.astype(np.float64)
        rb[:, 0] -= x0
        rb[:, 1] -= y0
        out = []
        need_grey = any(p in ("raw", "haar") for p in self.parts)
        if need_grey:
            II = _integral(roi)[None]
            II2 = _integral(roi.astype(np.float64) ** 2)
            # patch mean and std from the integral images of the box itself
            whole = _cell_sums(np.stack([II[0], II2]), rb, 1)[:, :, 0, 0]  # (2, n)
            area = rb[:, 2] * rb[:, 3]
            mean = whole[0] / area
            std = np.sqrt(np.maximum(whole[1] / area - mean**2, 0.0)) + 1e-3
        for p in self.parts:
            if p == "raw":
                M = _cell_sums(II, rb, self.raw_cells)[0] / _cell_areas(rb, self.raw_cells)
                M = (M - mean[:, None, None]) / std[:, None, None]
                out.append(M.reshape(len(rb), -1))
            elif p == "haar":
                g = self.haar_cells
                M = _cell_sums(II, rb, g)[0] / _cell_areas(rb, g) / std[:, None, None]
                h = M[:, :, 1:] - M[:, :, :-1]
                v = M[:, 1:, :] - M[:, :-1, :]
                d = M[:, 1:, 1:] + M[:, :-1, :-1] - M[:, 1:, :-1] - M[:, :-1, 1:]
                out.append(np.concatenate([a.reshape(len(rb), -1) for a in (h, v, d)], axis=1))
            else:
                out.append(self._hog(roi, rb))
        return np.concatenate(out, axis=1)

    def _hog(self, roi, rb) -> np.ndarray:
        gx = np.zeros_like(roi)
        gy = np.zeros_like(roi)
        gx[:, 1:-1] = roi[:, 2:] - roi[:, :-2]
        gy[1:-1, :] = roi[2:, :] - roi[:-2, :]
        mag = np.hypot(gx, gy)
        ang = np.mod(np.arctan2(gy, gx), np.pi)
        nb = self.hog_bins
        bins = np.minimum((ang * (nb / np.pi)).astype(np.intp), nb - 1)
        chans = np.zeros((nb, *roi.shape), np.float32)
        r, c = np.indices(roi.shape)
        chans[bins, r, c] = mag
        S = _cell_sums(_integral(chans), rb, self.hog_cells)  # (nb, n, g, g)
        v = np.moveaxis(S, 0, -1).reshape(len(rb), -1)
        return v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-6)


@njit(cache=True)
def _quantize(ZT, edges, out):  # pragma: no cover - compiled
    # branchless bisection: edges (d, 2**p) padded with +inf; code = #edges < v
    d, n = ZT.shape
    k = edges.shape[1]
    for f in range(d):
        e = edges[f]
        z = ZT[f]
        o = out[f]
        for i in range(n):
            v = z[i]
            lo = 0
            step = k >> 1
            while step > 0:
                lo += step * (e[lo + step - 1] < v)
                step >>= 1
            o[i] = lo


class FeatureQuantizer:
    """Per-feature equal-frequency bin codes with edges fixed once (``fit``).

    A tracker codes each frame's features once, when the frame arrives, and keeps the
    codes; the stumps (:class:`~maxmargin.weak.CodedStump`) then train on codes without
    re-sorting the whole window at every re-training.  ``fit`` takes the ``n_bins - 1``
    inner quantiles of every feature as edges; ``transform`` gives each value the number
    of edges strictly below it (uint8 codes in ``0 .. n_bins - 1``; values beyond the
    fitted range fall in the end bins).
    """

    def __init__(self, n_bins: int = 256) -> None:
        if not 2 <= int(n_bins) <= 256:
            raise ValueError(f"n_bins must be in [2, 256], got {n_bins!r}")
        self.n_bins = int(n_bins)

    def fit(self, Z) -> FeatureQuantizer:
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2 or len(Z) == 0:
            raise ValueError(f"need a non-empty (n, d) array, got shape {Z.shape}")
        if not np.all(np.isfinite(Z)):
            raise ValueError("features contain NaN or inf")
        q = np.arange(1, self.n_bins) / self.n_bins
        self.edges_ = np.ascontiguousarray(np.quantile(Z, q, axis=0).T)  # (d, n_bins - 1)
        k = 1 << int(np.ceil(np.log2(self.n_bins)))  # padded to a power of two
        self._padded = np.full((len(self.edges_), k), np.inf)
        self._padded[:, : self.n_bins - 1] = self.edges_
        return self

    def transform(self, Z) -> np.ndarray:
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != self.edges_.shape[0]:
            raise ValueError(f"expected (n, {self.edges_.shape[0]}) features, got {Z.shape}")
        out = np.empty(Z.shape[::-1], dtype=np.uint8)
        _quantize(np.ascontiguousarray(Z.T), self._padded, out)
        return out.T
