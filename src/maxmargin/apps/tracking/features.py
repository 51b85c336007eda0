"""Patch features for thousands of boxes per frame, from integral images.

Every feature of a box is a sum over a rectangle of the box's cell grid, so one integral
image per channel, computed once per frame on the region the boxes cover, gives all the
boxes' features by four look-ups per cell (Viola & Jones, "Rapid object detection using
a boosted cascade of simple features", CVPR 2001; Porikli, "Integral histogram", CVPR
2005).  The integral images (grey level and its square; one channel per HOG orientation,
channel-last so a cell's orientations are adjacent in memory) are built in one compiled
pass over the region's pixels, and the look-ups, normalisations and Haar differences in
one compiled pass over the boxes (numba); :meth:`PatchFeatures.prepare` builds a frame's
integral images once for several sets of boxes (a tracker's prediction and training
candidates).

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

from dataclasses import dataclass

import numpy as np
from numba import njit

from maxmargin.apps._image import to_grey

__all__ = ["FeatureQuantizer", "PatchFeatures", "to_grey"]

KINDS = ("raw", "hog", "haar")


def _edges(start, length, n_cells) -> np.ndarray:
    """Integer cell edges (n_boxes, n_cells + 1) splitting [start, start + length)."""
    t = np.arange(n_cells + 1) / n_cells
    return np.round(start[:, None] + length[:, None] * t[None, :]).astype(np.intp)


@njit(cache=True)
def _grey_integrals(roi, out):  # pragma: no cover - compiled
    # integral images of the grey level and its square into out (H+1, W+1, 2), zero
    # first row/col
    h, w = roi.shape
    out[0, :, :] = 0.0
    out[:, 0, :] = 0.0
    for y in range(h):
        r1 = 0.0
        r2 = 0.0
        for x in range(w):
            v = np.float64(roi[y, x])
            r1 += v
            r2 += v * v
            out[y + 1, x + 1, 0] = out[y, x + 1, 0] + r1
            out[y + 1, x + 1, 1] = out[y, x + 1, 1] + r2
    return out


@njit(cache=True)
def _hog_integrals(roi, out):  # pragma: no cover - compiled
    # integral histogram of oriented gradients into out (H+1, W+1, nb): central
    # differences (zero on the border rows / columns), unsigned orientation hard-binned
    # into nb bins, gradient magnitude accumulated (float32 per pixel as the NumPy form,
    # float64 sums)
    h, w = roi.shape
    nb = out.shape[2]
    out[0, :, :] = 0.0
    out[:, 0, :] = 0.0
    row = np.zeros(nb)
    pi32 = np.float32(np.pi)
    scale = np.float32(nb / np.pi)
    zero = np.float32(0.0)
    for y in range(h):
        row[:] = 0.0
        for x in range(w):
            gx = roi[y, x + 1] - roi[y, x - 1] if 0 < x < w - 1 else zero
            gy = roi[y + 1, x] - roi[y - 1, x] if 0 < y < h - 1 else zero
            mag = np.float32(np.sqrt(gx * gx + gy * gy))
            a = np.float32(np.arctan2(gy, gx))
            if a < 0:  # unsigned orientation: a mod pi (pi itself is 0)
                a = np.float32(a + pi32)
            if a >= pi32:
                a = np.float32(a - pi32)
            b = int(np.float32(a * scale))
            if b > nb - 1:
                b = nb - 1
            row[b] += mag
            for c in range(nb):
                out[y + 1, x + 1, c] = out[y, x + 1, c] + row[c]
    return out


@njit(cache=True, inline="always")
def _box_sum(II, y0, y1, x0, x1, c):  # pragma: no cover - compiled
    """Sum of channel c over rows y0:y1 and columns x0:x1, from the integral image II."""
    return II[y1, x1, c] - II[y0, x1, c] - II[y1, x0, c] + II[y0, x0, c]


@njit(cache=True)
def _hog_into(II, xe, ye, out, col):  # pragma: no cover - compiled
    # the channels of II (H+1, W+1, C) summed over every box's cells (cell edges xe, ye
    # (n, g+1)), cell by cell with the C channels adjacent, L2-normalised (+1e-6),
    # written to out[:, col : col + g*g*C]
    n = xe.shape[0]
    g = xe.shape[1] - 1
    C = II.shape[2]
    k = g * g * C
    for i in range(n):
        j = col
        for cy in range(g):
            y0 = ye[i, cy]
            y1 = ye[i, cy + 1]
            for cx in range(g):
                x0 = xe[i, cx]
                x1 = xe[i, cx + 1]
                for c in range(C):
                    out[i, j] = _box_sum(II, y0, y1, x0, x1, c)
                    j += 1
        s = 0.0
        for j in range(col, col + k):
            s += out[i, j] * out[i, j]
        s = np.sqrt(s) + 1e-6
        for j in range(col, col + k):
            out[i, j] /= s


@njit(cache=True)
def _grey_into(II, xe, ye, haar, out, col):  # pragma: no cover - compiled
    # cell means of the grey level (channel 0 of II, channel 1 its square) over every
    # box's g x g grid divided by the patch's std + 1e-3; the patch is the whole grid
    # [xe[0], xe[g]) x [ye[0], ye[g]).  raw (haar False): the means minus the patch mean,
    # g*g values; haar: the two-rectangle (horizontal, vertical) and four-rectangle
    # (diagonal) differences of adjacent cells, g(g-1) + (g-1)g + (g-1)^2 values, in
    # that order; written to out[:, col:]
    n = xe.shape[0]
    g = xe.shape[1] - 1
    M = np.empty((g, g))
    for i in range(n):
        x0, x1, y0, y1 = xe[i, 0], xe[i, g], ye[i, 0], ye[i, g]
        area = (x1 - x0) * (y1 - y0)
        s1 = _box_sum(II, y0, y1, x0, x1, 0)
        s2 = _box_sum(II, y0, y1, x0, x1, 1)
        mean = s1 / area
        std = np.sqrt(max(s2 / area - mean * mean, 0.0)) + 1e-3
        m = 0.0 if haar else mean
        for cy in range(g):
            a0 = ye[i, cy]
            a1 = ye[i, cy + 1]
            for cx in range(g):
                b0 = xe[i, cx]
                b1 = xe[i, cx + 1]
                c = max((a1 - a0) * (b1 - b0), 1)
                v = _box_sum(II, a0, a1, b0, b1, 0)
                M[cy, cx] = (v / c - m) / std
        j = col
        if not haar:
            for cy in range(g):
                for cx in range(g):
                    out[i, j] = M[cy, cx]
                    j += 1
            continue
        for cy in range(g):
            for cx in range(g - 1):
                out[i, j] = M[cy, cx + 1] - M[cy, cx]
                j += 1
        for cy in range(g - 1):
            for cx in range(g):
                out[i, j] = M[cy + 1, cx] - M[cy, cx]
                j += 1
        for cy in range(g - 1):
            for cx in range(g - 1):
                out[i, j] = M[cy + 1, cx + 1] + M[cy, cx] - M[cy + 1, cx] - M[cy, cx + 1]
                j += 1


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
        self._scratch: dict[str, np.ndarray] = {}

    @property
    def n_features(self) -> int:
        g = self.haar_cells
        size = {
            "raw": self.raw_cells**2,
            "hog": self.hog_cells**2 * self.hog_bins,
            "haar": 2 * g * (g - 1) + (g - 1) ** 2,
        }
        return sum(size[p] for p in self.parts)

    def __call__(self, frame, boxes, out=None) -> np.ndarray:
        """Features of ``boxes`` (n, 4) ``(x, y, w, h)`` (inside the frame), (n, d);
        ``out`` as in :meth:`extract`."""
        grey = frame if (np.ndim(frame) == 2 and frame.dtype == np.float32) else to_grey(frame)
        b = self._check_boxes(grey.shape, boxes)
        if len(b) == 0:
            return np.zeros((0, self.n_features))
        return self.extract(self.prepare(grey, _cover(b), scratch=True), b, out=out)

    def _check_boxes(self, shape, boxes) -> np.ndarray:
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        H, W = shape
        b = np.round(boxes).astype(np.intp)
        b[:, 2:] = np.maximum(b[:, 2:], 1)
        if len(b) and (
            b[:, 0].min() < 0
            or b[:, 1].min() < 0
            or (b[:, 0] + b[:, 2]).max() > W
            or (b[:, 1] + b[:, 3]).max() > H
        ):
            raise ValueError("boxes must lie inside the frame")
        return b

    def prepare(self, frame, region, *, scratch: bool = False) -> FrameIntegrals:
        """The integral images of ``frame`` over ``region = (x0, y0, x1, y1)`` (pixels
        ``[x0, x1) x [y0, y1)``, clipped to the frame; one pixel of border is added for
        the gradients), for :meth:`extract` of any boxes inside the region: a tracker
        computes them once per frame for its prediction and training candidates.
        ``scratch``: in buffers this object reuses (valid until its next call with
        ``scratch``; what ``__call__`` uses)."""
        grey = frame if (np.ndim(frame) == 2 and frame.dtype == np.float32) else to_grey(frame)
        H, W = grey.shape
        x0, y0, x1, y1 = (int(np.floor(v)) for v in region)
        x0, y0 = max(x0 - 1, 0), max(y0 - 1, 0)
        x1, y1 = min(x1 + 1, W), min(y1 + 1, H)
        if not (x1 > x0 and y1 > y0):
            raise ValueError(f"region {tuple(region)} does not overlap the frame")
        roi = np.ascontiguousarray(grey[y0:y1, x0:x1])
        need_grey = any(p in ("raw", "haar") for p in self.parts)
        shape = (roi.shape[0] + 1, roi.shape[1] + 1)
        G = Hg = None
        if need_grey:
            G = self._buffer("grey", (*shape, 2)) if scratch else np.empty((*shape, 2))
            _grey_integrals(roi, G)
        if "hog" in self.parts:
            nb = self.hog_bins
            Hg = self._buffer("hog", (*shape, nb)) if scratch else np.empty((*shape, nb))
            _hog_integrals(roi, Hg)
        return FrameIntegrals((x0, y0, x1, y1), (H, W), G, Hg)

    def _buffer(self, name, shape) -> np.ndarray:
        """A C-contiguous float64 array of ``shape`` in a scratch buffer kept across calls
        (a fresh multi-megabyte array per frame costs its page faults every time)."""
        size = int(np.prod(shape))
        buf = self._scratch.get(name)
        if buf is None or len(buf) < size:
            buf = self._scratch[name] = np.empty(max(size, 2 * len(buf) if buf is not None else 0))
        return buf[:size].reshape(shape)

    def extract(self, pre: FrameIntegrals, boxes, out=None) -> np.ndarray:
        """Features (n, d) of ``boxes`` from :meth:`prepare`'s integral images; boxes
        outside the prepared region raise ValueError.  ``out``: a float64 (n, d) array
        to write them to (a caller scoring many boxes every frame can reuse one buffer
        instead of a fresh allocation per call)."""
        H, W = pre.frame_shape
        b = self._check_boxes((H, W), boxes)
        n = len(b)
        if n == 0:
            return np.zeros((0, self.n_features))
        x0, y0, x1, y1 = pre.region
        # one pixel of border on each side for the gradients, unless at the frame edge
        if (
            b[:, 0].min() - 1 < x0 - (x0 == 0)
            or b[:, 1].min() - 1 < y0 - (y0 == 0)
            or (b[:, 0] + b[:, 2]).max() + 1 > x1 + (x1 == W)
            or (b[:, 1] + b[:, 3]).max() + 1 > y1 + (y1 == H)
        ):
            raise ValueError("boxes must lie inside the prepared region")
        rb = b.astype(np.float64)
        rb[:, 0] -= x0
        rb[:, 1] -= y0
        if out is None:
            out = np.empty((n, self.n_features))
        elif out.shape != (n, self.n_features) or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 ({n}, {self.n_features}) array")
        col = 0
        for p in self.parts:  # each kind written into its columns of out
            g = {"hog": self.hog_cells, "raw": self.raw_cells, "haar": self.haar_cells}[p]
            xe = _edges(rb[:, 0], rb[:, 2], g)
            ye = _edges(rb[:, 1], rb[:, 3], g)
            if p == "hog":
                _hog_into(pre.hog, xe, ye, out, col)
                col += g * g * self.hog_bins
            else:
                _grey_into(pre.grey, xe, ye, p == "haar", out, col)
                col += g * g if p == "raw" else 2 * g * (g - 1) + (g - 1) ** 2
        return out


def _cover(b) -> tuple[int, int, int, int]:
    """The region (x0, y0, x1, y1) the integer boxes b cover."""
    return (
        int(b[:, 0].min()),
        int(b[:, 1].min()),
        int((b[:, 0] + b[:, 2]).max()),
        int((b[:, 1] + b[:, 3]).max()),
    )


@dataclass
class FrameIntegrals:
    """Integral images of one frame's region (:meth:`PatchFeatures.prepare`)."""

    region: tuple  # (x0, y0, x1, y1) of the integral images, in frame pixels
    frame_shape: tuple  # (H, W)
    grey: np.ndarray | None  # (h+1, w+1, 2): grey level and its square
    hog: np.ndarray | None  # (h+1, w+1, hog_bins): gradient magnitude per orientation


@njit(cache=True)
def _quantize(ZT, edges, out):  # pragma: no cover - compiled
    # branchless bisection: edges (d, 2**p) padded with +inf; code = #edges < v.  The
    # bisection steps run in lock-step over all values of a feature (independent loads
    # in flight instead of one chain of dependent loads per value)
    d, n = ZT.shape
    k = edges.shape[1]
    lo = np.empty(n, dtype=np.intp)
    for f in range(d):
        e = edges[f]
        z = ZT[f]
        lo[:] = 0
        step = k >> 1
        while step > 0:
            for i in range(n):
                lo[i] += step * (e[lo[i] + step - 1] < z[i])
            step >>= 1
        o = out[f]
        for i in range(n):
            o[i] = lo[i]


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
