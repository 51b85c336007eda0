"""Candidate windows: sliding windows over scales and random windows from a learned box
distribution.

Boxes are 0-based ``(x, y, w, h)`` as in :mod:`maxmargin.tasks.boxes`, whose
:func:`~maxmargin.tasks.boxes.box_overlap` / :func:`~maxmargin.tasks.boxes.pairwise_overlap`
give the Pascal overlap used throughout this package.

The box distribution follows the random-window stage of Rahtu, Kannala & Blaschko,
"Learning a category independent object detection cascade", ICCV 2011, used by Blaschko,
Mittal & Rahtu, "An O(n log n) cutting plane algorithm for structured output ranking",
GCPR 2014, Sec. 5: windows are drawn from a density fitted to the training boxes.  Here
the density is a Gaussian kernel density estimate in the normalised parameters
``(cx / W, cy / H, log(w / W), log(h / H))`` with Scott's bandwidth per dimension; a draw
picks a training box at random and adds the kernel's noise, and is then clipped into the
image.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["BoxDistribution", "sliding_windows"]


def sliding_windows(image_shape, window, *, scales=(1.0,), step: int = 8) -> np.ndarray:
    """Every window of size ``window = (w, h)`` pixels on a grid of ``step`` pixels in
    the image rescaled by each of ``scales``, mapped back to the original image.

    Returns (n, 4) boxes; a scale at which the window does not fit adds nothing.
    """
    H, W = int(image_shape[0]), int(image_shape[1])
    ww, wh = float(window[0]), float(window[1])
    if ww <= 0 or wh <= 0:
        raise ValueError(f"window must have positive size, got {tuple(window)}")
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")
    out = []
    for s in np.atleast_1d(np.asarray(scales, dtype=np.float64)):
        if s <= 0:
            raise ValueError(f"scales must be positive, got {s}")
        Hs, Ws = int(np.floor(H * s)), int(np.floor(W * s))
        if Ws < ww or Hs < wh:
            continue
        xs = np.arange(0, Ws - ww + 1, step)
        ys = np.arange(0, Hs - wh + 1, step)
        gx, gy = np.meshgrid(xs, ys)
        n = gx.size
        out.append(
            np.stack([gx.ravel() / s, gy.ravel() / s, np.full(n, ww / s), np.full(n, wh / s)], 1)
        )
    return np.concatenate(out) if out else np.zeros((0, 4))


def _params(boxes, shapes):
    b = np.asarray(boxes, dtype=np.float64)
    H, W = shapes[:, 0], shapes[:, 1]
    return np.stack(
        [
            (b[:, 0] + b[:, 2] / 2) / W,
            (b[:, 1] + b[:, 3] / 2) / H,
            np.log(b[:, 2] / W),
            np.log(b[:, 3] / H),
        ],
        axis=1,
    )


class BoxDistribution:
    """A density over boxes relative to the image, fitted to training boxes.

    Parameters
    ----------
    bandwidth : float or None
        Kernel width as a multiple of each parameter's standard deviation; None: Scott's
        rule ``n ** (-1 / 8)`` (4 dimensions).
    """

    def __init__(self, bandwidth: float | None = None) -> None:
        self.bandwidth = bandwidth

    def fit(self, boxes, image_shapes) -> BoxDistribution:
        """``boxes``: list of (n_i, 4) arrays (one per image); ``image_shapes``: their
        images' shapes ``(H, W, ...)``."""
        boxes = [np.asarray(b, dtype=np.float64).reshape(-1, 4) for b in boxes]
        if len(boxes) != len(image_shapes):
            raise ValueError(f"{len(boxes)} box lists but {len(image_shapes)} image shapes")
        shapes = (
            np.concatenate(
                [np.tile([s[0], s[1]], (len(b), 1)) for b, s in zip(boxes, image_shapes)]
            ).astype(np.float64)
            if boxes
            else np.zeros((0, 2))
        )
        allb = np.concatenate(boxes) if boxes else np.zeros((0, 4))
        if len(allb) < 2:
            raise ValueError("need at least two training boxes to fit a box distribution")
        if np.any(allb[:, 2:] <= 0):
            raise ValueError("training boxes must have positive width and height")
        self.params_ = _params(allb, shapes)
        self.__dict__.pop("_grid_cache", None)  # the detectors' prior maps of the old fit
        n = len(allb)
        h = n ** (-1.0 / 8.0) if self.bandwidth is None else float(self.bandwidth)
        self.scale_ = h * np.maximum(self.params_.std(axis=0), 1e-6)
        return self

    def sample(self, n: int, image_shape, rng=None) -> np.ndarray:
        """``n`` boxes inside an image of ``image_shape``, each at least 2 x 2 pixels."""
        rng = np.random.default_rng(rng)
        H, W = float(image_shape[0]), float(image_shape[1])
        k = rng.integers(0, len(self.params_), size=int(n))
        p = self.params_[k] + rng.normal(size=(int(n), 4)) * self.scale_
        w = np.clip(np.exp(p[:, 2]) * W, 2.0, W)
        h = np.clip(np.exp(p[:, 3]) * H, 2.0, H)
        x = np.clip(p[:, 0] * W - w / 2, 0.0, W - w)
        y = np.clip(p[:, 1] * H - h / 2, 0.0, H - h)
        return np.stack([x, y, w, h], axis=1)

    def grid_log_density(self, image_shape, cell, sx, sy, window, n_rows, n_cols, pad=0):
        """:meth:`log_density` of the sliding windows of one pyramid level, shape
        ``(n_rows, n_cols)``: entry ``[r, c]`` is the box ``((c - pad) cell / sx, (r -
        pad) cell / sy, window[0] cell / sx, window[1] cell / sy)``
        (:meth:`HOGPyramid.boxes`, ``pad`` its padding in cells).  The
        kernel factorises over the grid (every box of a level has the same size, its
        centre moves along rows and columns), so the density is one product of a
        (rows x boxes) and a (boxes x columns) matrix of exponentials; sums of positive
        terms, so it equals :meth:`log_density` to float64 rounding wherever the log
        density is above -700 (below, both are far under any clipping of it)."""
        return _grid_log_kde(
            np.ascontiguousarray(self.params_, dtype=np.float64),
            np.ascontiguousarray(self.scale_, dtype=np.float64),
            float(image_shape[0]),
            float(image_shape[1]),
            int(cell),
            float(sx),
            float(sy),
            int(window[0]),
            int(window[1]),
            int(n_rows),
            int(n_cols),
            int(pad),
        )

    def log_density(self, boxes, image_shape) -> np.ndarray:
        """Log kernel density of boxes in an image of ``image_shape`` (up to a constant)."""
        b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        shapes = np.tile([image_shape[0], image_shape[1]], (len(b), 1)).astype(np.float64)
        q = _params(b, shapes)
        return _log_kde(
            np.ascontiguousarray(q, dtype=np.float64),
            np.ascontiguousarray(self.params_, dtype=np.float64),
            np.ascontiguousarray(self.scale_, dtype=np.float64),
        )


@njit(cache=True)
def _log_kde(q, params, scale):  # pragma: no cover - compiled
    """Per row of ``q``: log mean_j exp(-|(q - params_j) / scale|^2 / 2), stabilised by
    the largest exponent (one pass per row, no (n, m, 4) temporaries)."""
    n, m = q.shape[0], params.shape[0]
    out = np.empty(n)
    e = np.empty(m)
    for i in range(n):
        top = -np.inf
        for j in range(m):
            s = 0.0
            for k in range(4):
                z = (q[i, k] - params[j, k]) / scale[k]
                s += z * z
            e[j] = -0.5 * s
            top = max(top, e[j])
        tot = 0.0
        for j in range(m):
            tot += math.exp(e[j] - top)
        out[i] = top + math.log(tot / m)
    return out


@njit(cache=True)
def _grid_log_kde(params, scale, H, W, cell, sx, sy, win_w, win_h, nr, nc, pad):  # pragma: no cover
    """log mean_j exp(-|(q_rc - params_j) / scale|^2 / 2) for the boxes q_rc of one
    pyramid level (see :meth:`BoxDistribution.grid_log_density`): exp(e) factorises into
    a column, a row and a size factor per training box."""
    m = params.shape[0]
    w = win_w * cell / sx
    h = win_h * cell / sy
    A = np.empty((m, nr))
    B = np.empty((m, nc))
    for j in range(m):
        zw = (math.log(w / W) - params[j, 2]) / scale[2]
        zh = (math.log(h / H) - params[j, 3]) / scale[3]
        size = zw * zw + zh * zh
        for r in range(nr):
            z = (((r - pad) * cell / sy + h / 2) / H - params[j, 1]) / scale[1]
            A[j, r] = math.exp(-0.5 * (z * z + size))
        for c in range(nc):
            z = (((c - pad) * cell / sx + w / 2) / W - params[j, 0]) / scale[0]
            B[j, c] = math.exp(-0.5 * z * z)
    D = np.zeros((nr, nc))
    for r in range(nr):
        d = D[r]
        for j in range(m):
            a = A[j, r]
            b = B[j]
            for c in range(nc):
                d[c] += a * b[c]
    out = np.empty((nr, nc))
    for r in range(nr):
        for c in range(nc):
            out[r, c] = math.log(D[r, c] / m) if D[r, c] > 0.0 else -np.inf
    return out
