"""HOG features of many windows, computed once per image and scale.

Dalal & Triggs, "Histograms of oriented gradients for human detection", CVPR 2005.
scikit-image's :func:`skimage.feature.hog` with ``feature_vector=False`` returns the grid
of normalised blocks of a whole image, shape ``(block rows, block cols, c, c,
orientations)``.  A window of ``w x h`` cells at cell offset ``(row, col)`` is described
by the blocks ``row .. row + h - c`` x ``col .. col + w - c``, in the order
``hog(window, feature_vector=True)`` would list them, so a window descriptor is one
gather from the block grid: :meth:`HOGPyramid.descriptors` does it for all windows at
once with fancy indexing (no loop per window).  One grid per pyramid level (the image
rescaled by each scale) serves every window of that scale -- the sliding windows and any
other box, which :meth:`HOGPyramid.snap` maps to the nearest level and cell offset.

(Gradients at a window's border are taken from the surrounding image, as in the usual
scanning detectors, so a descriptor differs slightly from ``hog`` of the cropped window.)
"""

from __future__ import annotations

import numpy as np

__all__ = ["HOGPyramid", "to_grey"]


def to_grey(image) -> np.ndarray:
    """A float32 grey image in [0, 1] from a grey or RGB(A) uint8 / float image."""
    a = np.asarray(image)
    if a.ndim == 3:
        if a.shape[2] not in (3, 4):
            raise ValueError(f"colour images must have 3 or 4 channels, got {a.shape}")
        g = a[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    elif a.ndim == 2:
        g = a.astype(np.float32)
    else:
        raise ValueError(f"images must be (H, W) or (H, W, 3) arrays, got shape {a.shape}")
    if a.dtype == np.uint8:
        g /= 255.0
    return g


class HOGPyramid:
    """Block grids of an image at several scales and the windows they describe.

    Parameters
    ----------
    image : array (H, W) or (H, W, 3)
    window : (w, h)
        Window size in cells.
    cell : int
        Pixels per cell.
    block : int
        Cells per block (side).
    orientations : int
    scales : sequence of float or None
        Image scale factors; None: ``1, 1/scale_step, 1/scale_step^2, ...`` while the
        window fits (at most ``max_levels`` levels).
    scale_step : float
    max_levels : int
    """

    def __init__(
        self,
        image,
        *,
        window=(6, 6),
        cell: int = 8,
        block: int = 2,
        orientations: int = 9,
        scales=None,
        scale_step: float = 2**0.5,
        max_levels: int = 12,
    ) -> None:
        from skimage.feature import hog
        from skimage.transform import rescale

        grey = to_grey(image)
        self.image_shape = grey.shape
        self.window = (int(window[0]), int(window[1]))
        self.cell, self.block, self.orientations = int(cell), int(block), int(orientations)
        if min(self.window) < self.block:
            raise ValueError(f"window {self.window} cells is smaller than a block ({block})")
        H, W = grey.shape
        wpx, hpx = self.window[0] * self.cell, self.window[1] * self.cell
        if scales is None:
            scales = []
            s = 1.0
            while len(scales) < max_levels and H * s >= hpx and W * s >= wpx:
                scales.append(s)
                s /= scale_step
        self.scales = []
        self.levels = []
        for s in scales:
            s = float(s)
            if s <= 0:
                raise ValueError(f"scales must be positive, got {s}")
            if round(H * s) < hpx or round(W * s) < wpx:
                continue
            img = grey if s == 1.0 else rescale(grey, s, anti_aliasing=s < 1).astype(np.float32)
            g = hog(
                img,
                orientations=self.orientations,
                pixels_per_cell=(self.cell, self.cell),
                cells_per_block=(self.block, self.block),
                feature_vector=False,
            ).astype(np.float32)
            # the level's true scale after rounding to whole pixels
            self.scales.append((img.shape[1] / W, img.shape[0] / H))
            self.levels.append(g)
        self.n_blocks = (self.window[1] - self.block + 1, self.window[0] - self.block + 1)

    @property
    def n_features(self) -> int:
        return int(self.n_blocks[0] * self.n_blocks[1] * self.block**2 * self.orientations)

    def positions(self, level: int):
        """Number of valid window offsets (rows, cols) at ``level``."""
        g = self.levels[level]
        return g.shape[0] - self.n_blocks[0] + 1, g.shape[1] - self.n_blocks[1] + 1

    def boxes(self, level, row, col) -> np.ndarray:
        """Windows at ``(level, row, col)`` (arrays) as boxes in the original image."""
        level, row, col = (np.asarray(v, dtype=np.int64) for v in (level, row, col))
        sc = np.array(self.scales, dtype=np.float64).reshape(-1, 2)
        sx, sy = sc[level, 0], sc[level, 1]
        c = self.cell
        return np.stack(
            [col * c / sx, row * c / sy, self.window[0] * c / sx, self.window[1] * c / sy], 1
        )

    def windows(self, step: int = 1):
        """All sliding windows, every ``step`` cells: ``(level, row, col)`` int arrays."""
        ls, rs, cs = [], [], []
        for k in range(len(self.levels)):
            nr, nc = self.positions(k)
            if nr <= 0 or nc <= 0:
                continue
            r, c = np.meshgrid(np.arange(0, nr, step), np.arange(0, nc, step), indexing="ij")
            ls.append(np.full(r.size, k))
            rs.append(r.ravel())
            cs.append(c.ravel())
        if not ls:
            z = np.zeros(0, dtype=np.int64)
            return z, z, z
        return np.concatenate(ls), np.concatenate(rs), np.concatenate(cs)

    def descriptors(self, level, row, col) -> np.ndarray:
        """HOG descriptors (n, n_features) of the windows ``(level, row, col)``."""
        level, row, col = (np.asarray(v, dtype=np.int64).ravel() for v in (level, row, col))
        out = np.empty((len(level), self.n_features), dtype=np.float32)
        br, bc = self.n_blocks
        dr, dc = np.arange(br), np.arange(bc)
        for k in np.unique(level):  # one gather per pyramid level
            sel = np.flatnonzero(level == k)
            nr, nc = self.positions(int(k))
            r, c = row[sel], col[sel]
            if np.any((r < 0) | (r >= nr) | (c < 0) | (c >= nc)):
                raise ValueError(f"window offsets outside level {k} ({nr} x {nc} positions)")
            g = self.levels[int(k)]
            out[sel] = g[r[:, None, None] + dr[None, :, None], c[:, None, None] + dc].reshape(
                len(sel), -1
            )
        return out

    def snap(self, boxes):
        """Nearest window ``(level, row, col)`` of every box: the level whose window size
        is closest to the box's in log scale, the nearest cell offset (clipped)."""
        b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        if not self.levels:
            raise ValueError("the image is smaller than one window: no pyramid levels")
        sc = np.array(self.scales, dtype=np.float64)  # (L, 2)
        c = self.cell
        # window size at level k in original pixels: window * c / s
        lw = np.log(self.window[0] * c / sc[:, 0])[None] - np.log(np.maximum(b[:, 2:3], 1e-9))
        lh = np.log(self.window[1] * c / sc[:, 1])[None] - np.log(np.maximum(b[:, 3:4], 1e-9))
        level = np.argmin(lw**2 + lh**2, axis=1)
        npos = np.array([self.positions(k) for k in range(len(self.levels))])
        # centre the window on the box centre
        cx = (b[:, 0] + b[:, 2] / 2) * sc[level, 0] / c - self.window[0] / 2
        cy = (b[:, 1] + b[:, 3] / 2) * sc[level, 1] / c - self.window[1] / 2
        row = np.clip(np.round(cy), 0, npos[level, 0] - 1).astype(np.int64)
        col = np.clip(np.round(cx), 0, npos[level, 1] - 1).astype(np.int64)
        return level, row, col
