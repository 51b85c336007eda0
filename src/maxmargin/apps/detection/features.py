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

**Channel features** (``channels=True``): the aggregated channel features of Dollar,
Appel, Belongie & Perona ("Fast feature pyramids for object detection", TPAMI 36, 2014;
after Dollar, Tu, Perona & Belongie, "Integral channel features", BMVC 2009): per pixel
the gradient magnitude, the magnitude split into ``channel_orientations`` unsigned
orientation bins, and the colour in CIE LUV (grey: the intensity); each channel is
averaged over the HOG cells (:func:`channel_grid`), once per pyramid level, and a
window's channel descriptor is the gather of its ``w x h`` cells -- unnormalised, cheap
single values that a boosted stump can threshold (HOG's block-normalised bins are
contrast-free by design).  ``channel_cells`` adds coarser aggregates: for a size ``s > 1``
the mean of each channel over every ``s x s``-cell square inside the window (stride one
cell), from a box filter of the cell grid computed once per level (cumulative sums, an
integral image of each channel), gathered per window like the cells -- the
multi-size box sums of integral channel features, more robust single values than one
cell's.

**FHOG cells** (``features="fhog"``): the 31 features per cell of Felzenszwalb, Girshick,
McAllester & Ramanan, "Object detection with discriminatively trained part-based
models", IEEE TPAMI 32(9), 2010, Sec. 6 (the features dlib's ``scan_fhog_pyramid``
scans): 18 contrast-sensitive (signed) orientations, 9 contrast-insensitive ones and 4
gradient energies, each cell normalised by the energies of the four 2 x 2-cell blocks
around it (:func:`fhog_cells`).  A window of ``w x h`` cells is the ``h x w x 31``
sub-grid, so the compiled correlation scans it like the HOG block grid.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from maxmargin.apps._image import to_grey

__all__ = [
    "HOGPyramid",
    "box_means",
    "channel_grid",
    "fhog_cells",
    "map_cells",
    "to_float",
    "to_grey",
]

#: FHOG: features per cell (18 signed + 9 unsigned orientations + 4 energies)
FHOG_DIM = 31
#: FHOG's truncation of the normalised histogram entries [Felzenszwalb2010, Sec. 6.1]
FHOG_CLIP = 0.2
#: FHOG's energy-normaliser epsilon, 1e-4 for intensities in [0, 255] (Felzenszwalb et
#: al.'s code), i.e. 1e-4 / 255^2 for our [0, 1] images (energies are squared gradients)
FHOG_EPS = 1e-4 / 255.0**2


def fhog_directions():
    """The 9 unit vectors ``(cos, sin)`` of the orientations ``o pi / 9``; a gradient's
    signed bin is the nearest of them or of their opposites (bins ``o + 9``)."""
    a = np.arange(9) * np.pi / 9
    return np.cos(a), np.sin(a)


@njit(cache=True)
def _fhog_kernel(img, cell, uu, vv, eps):  # pragma: no cover - compiled
    # img: planar (C, H, W), so every per-pixel loop below runs over a contiguous row
    # with the same operations for every x (vectorisable); the per-pixel arithmetic and
    # its order are those of the definition, so the output does not depend on the layout
    C, H, W = img.shape
    Hc, Wc = H // cell, W // cell
    hist = np.zeros((Hc, Wc, 18))
    # the horizontal bilinear weights depend on the column only: cell ix[x] gets
    # 1 - fx[x], cell ix[x] + 1 gets fx[x]
    ix = np.empty(W, np.int64)
    fx = np.empty(W)
    for x in range(W):
        xp = (x + 0.5) / cell - 0.5
        ix[x] = int(np.floor(xp))
        fx[x] = xp - ix[x]
    dx = np.zeros(W)
    dy = np.zeros(W)
    best = np.zeros(W)
    bd = np.zeros(W)
    bo = np.zeros(W, np.int64)
    row = np.zeros((Wc + 3, 18))  # one pixel row's votes; slots 0, Wc + 1, Wc + 2 spill
    for y in range(1, H - 1):
        yp = (y + 0.5) / cell - 0.5
        iy = int(np.floor(yp))
        fy = yp - iy
        if iy + 1 < 0 or iy >= Hc:
            continue
        # centred gradient of the channel with the largest magnitude (the first on ties)
        for ch in range(C):
            p0, p1, p2 = img[ch, y - 1], img[ch, y], img[ch, y + 1]
            for x in range(1, W - 1):
                gx = float(p1[x + 1]) - float(p1[x - 1])
                gy = float(p2[x]) - float(p0[x])
                m2 = gx * gx + gy * gy
                up = ch == 0 or m2 > best[x]
                dx[x] = gx if up else dx[x]
                dy[x] = gy if up else dy[x]
                best[x] = m2 if up else best[x]
        # nearest of the 18 signed directions: the largest |u.g| over the 9 axes, the
        # first on ties, its sign choosing o or o + 9 (as "if d > b ... if -d > b" would)
        for x in range(1, W - 1):
            bd[x] = 0.0
            bo[x] = 0
        for o in range(9):
            u, v = uu[o], vv[o]
            for x in range(1, W - 1):
                d = u * dx[x] + v * dy[x]
                ad = abs(d)
                up = ad > bd[x]
                bo[x] = (o if d > 0 else o + 9) if up else bo[x]
                bd[x] = ad if up else bd[x]
        # bilinear votes to the four surrounding cells: horizontally into one row of
        # cells, then that row into the two cell rows around y
        row[:] = 0.0
        for x in range(1, W - 1):
            m = np.sqrt(best[x])
            c = ix[x] + 1
            row[c, bo[x]] += (1.0 - fx[x]) * m
            row[c + 1, bo[x]] += fx[x] * m
        if iy >= 0:
            wy = 1.0 - fy
            for c in range(Wc):
                for o in range(18):
                    hist[iy, c, o] += wy * row[c + 1, o]
        if iy + 1 < Hc:
            for c in range(Wc):
                for o in range(18):
                    hist[iy + 1, c, o] += fy * row[c + 1, o]
    # energy of every cell (unsigned histogram squared), zero outside the grid
    E = np.zeros((Hc + 2, Wc + 2))
    for r in range(Hc):
        for c in range(Wc):
            e = 0.0
            for o in range(9):
                t = hist[r, c, o] + hist[r, c, o + 9]
                e += t * t
            E[r + 1, c + 1] = e
    out = np.zeros((Hc, Wc, 31), dtype=np.float32)
    for r in range(Hc):
        for c in range(Wc):
            for k in range(4):  # the 2 x 2 blocks with this cell at a corner
                dr, dc = k // 2, k % 2
                s = (
                    E[r + dr, c + dc]
                    + E[r + dr + 1, c + dc]
                    + E[r + dr, c + dc + 1]
                    + E[r + dr + 1, c + dc + 1]
                )
                n = 1.0 / np.sqrt(s + eps)
                t = 0.0
                for o in range(18):
                    h = min(hist[r, c, o] * n, 0.2)
                    out[r, c, o] += 0.5 * h
                    t += h
                for o in range(9):
                    h = min((hist[r, c, o] + hist[r, c, o + 9]) * n, 0.2)
                    out[r, c, 18 + o] += 0.5 * h
                out[r, c, 27 + k] = 0.2357 * t
    return out


def fhog_cells(image, cell: int = 8) -> np.ndarray:
    """FHOG features of one image, shape ``(H // cell, W // cell, 31)`` float32
    [Felzenszwalb2010, Sec. 6]: per cell the 18 contrast-sensitive orientation bins,
    the 9 contrast-insensitive ones and 4 gradient energies.

    Gradients by centred differences (none on the 1-pixel image border), of the colour
    channel with the largest magnitude per pixel; a pixel's magnitude goes to the
    nearest of 18 directions ``o pi / 9`` (``|g| cos`` largest) and, bilinearly, to the
    four cells whose centres surround it.  Cell ``(r, c)`` is normalised four times,
    by ``1 / sqrt(e + eps)`` with ``e`` the summed energies (squared unsigned
    histograms) of each 2 x 2-cell block that has it at a corner (cells outside the
    grid count 0); the normalised entries are clipped at 0.2.  Features: the signed
    and the unsigned bins each averaged over the four normalisations (``0.5 sum``),
    and per normalisation ``0.2357`` times the sum of its clipped signed bins.

    ``image``: float (H, W) or (H, W, C) in [0, 1] (or uint8: divided by 255)."""
    a = np.asarray(image)
    if a.ndim not in (2, 3) or a.size == 0:
        raise ValueError(f"images must be non-empty (H, W) or (H, W, C), got shape {a.shape}")
    img = a.astype(np.float32) / (255.0 if a.dtype == np.uint8 else 1.0)
    if img.ndim == 2:
        img = img[..., None]
    if not np.all(np.isfinite(img)):
        raise ValueError("the image contains NaN or inf")
    cell = int(cell)
    if cell < 1:
        raise ValueError(f"cell must be positive, got {cell}")
    return _fhog_checked(img, cell)


_FHOG_UU, _FHOG_VV = fhog_directions()


def _fhog_checked(img, cell):
    """:func:`fhog_cells` of a float32 (H, W, C) or (H, W) image already checked (the
    pyramid's levels: the input image is checked once)."""
    planar = img[None] if img.ndim == 2 else np.moveaxis(img, -1, 0)
    planar = np.ascontiguousarray(planar, dtype=np.float32)
    return _fhog_kernel(planar, cell, _FHOG_UU, _FHOG_VV, FHOG_EPS)


def map_cells(feature_map, grid) -> np.ndarray:
    """The feature grid ``(rows, cols, ...)`` with every cell mapped by the fitted
    additive-kernel map ``feature_map``
    (:class:`~maxmargin.learners.kernel_approx.AdditiveKernelMap`): ``(rows, cols,
    d (2 n + 1))`` float32, ``d`` the features per cell, ``n + 1`` the map's
    ``sample_steps``.  One vectorised ``transform`` of all the grid's cells (no loop per
    cell); features must be non-negative (the map raises otherwise)."""
    g = np.asarray(grid)
    rows, cols = g.shape[:2]
    d = int(np.prod(g.shape[2:], dtype=np.int64))
    if rows * cols == 0:
        return np.zeros((rows, cols, d * (2 * int(feature_map.sample_steps) - 1)), np.float32)
    flat = g.reshape(rows * cols, d).astype(np.float64)
    return feature_map.transform(flat).astype(np.float32).reshape(rows, cols, -1)


def to_float(image, *, colour: bool = True) -> np.ndarray:
    """A float32 image in [0, 1]: ``(H, W, 3)`` for colour input when ``colour`` (an
    alpha channel is dropped), otherwise grey ``(H, W)`` (:func:`to_grey`)."""
    a = np.asarray(image)
    if not colour or a.ndim == 2:
        return to_grey(a)
    if a.ndim != 3 or a.shape[2] not in (3, 4):
        raise ValueError(f"images must be (H, W) or (H, W, 3) arrays, got shape {a.shape}")
    g = a[..., :3].astype(np.float32)
    if a.dtype == np.uint8:
        g /= 255.0
    return g


def channel_grid(image, cell: int, orientations: int = 6) -> np.ndarray:
    """Aggregated channels of one image, shape ``(H // cell, W // cell, 1 +
    orientations + colours)``: per cell the mean gradient magnitude, the mean magnitude in
    each of ``orientations`` unsigned orientation bins (``[0, pi)``), and the mean colour
    in CIE LUV scaled to about [0, 1] (a grey image is taken as R = G = B, so every
    image has the same channels: ``1 + orientations + 3``).

    ``image``: float (H, W) grey or (H, W, 3) RGB in [0, 1].  Gradients by central
    differences (one-sided at the border) of the grey image (BT.601 luma); CIE LUV by
    scikit-image's ``rgb2luv`` formulas (D65 white).  One compiled pass over the pixels
    in float64 (:func:`~maxmargin.apps.detection.scan.channel_cells`; a test checks it
    against NumPy's gradient and scikit-image's ``rgb2luv``)."""
    from maxmargin.apps.detection.scan import channel_cells

    img = np.asarray(image, dtype=np.float32)
    cell, orientations = int(cell), int(orientations)
    if cell < 1 or orientations < 1:
        raise ValueError("cell and orientations must be positive")
    return channel_cells(img, cell, orientations)


def box_means(grid, size: int) -> np.ndarray:
    """Means over every ``size x size`` square of a cell grid ``(Hc, Wc, C)``, shape
    ``(Hc - size + 1, Wc - size + 1, C)``; entry ``[i, j]`` averages cells ``i .. i + size
    - 1`` x ``j .. j + size - 1``.  One integral image (cumulative sums over both axes)
    and four lookups per square, all whole-array operations."""
    g = np.asarray(grid, dtype=np.float64)
    size = int(size)
    if g.ndim != 3 or size < 1:
        raise ValueError("need a (rows, cols, channels) grid and a positive size")
    Hc, Wc, C = g.shape
    if size > Hc or size > Wc:
        return np.zeros((max(Hc - size + 1, 0), max(Wc - size + 1, 0), C), np.float32)
    ii = np.zeros((Hc + 1, Wc + 1, C))
    ii[1:, 1:] = g.cumsum(axis=0).cumsum(axis=1)
    s = size
    tot = ii[s:, s:] - ii[:-s, s:] - ii[s:, :-s] + ii[:-s, :-s]
    return (tot / (s * s)).astype(np.float32)


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
        window fits (at most ``max_levels`` levels per aspect ratio).
    scale_step : float
    max_levels : int
    aspect_ratios : sequence of float
        Window aspect ratios (width / height) relative to ``window``.  Ratio ``a`` adds
        the levels of the image rescaled by ``s / sqrt(a)`` horizontally and ``s *
        sqrt(a)`` vertically, so the fixed window of cells covers boxes ``a`` times wider
        relative to their height (the window content is warped, as R-CNN warps its
        proposals; one descriptor length, one model).
    colour : bool
        Colour images: gradients of the channel with the largest magnitude per pixel
        (Dalal & Triggs' choice; scikit-image's ``channel_axis``); False: grey.
    channels : bool
        Append the window's aggregated channel features (:func:`channel_grid` of the
        level's image, colour when the input is colour, whatever ``colour`` says) to its
        HOG descriptor: ``w * h * (1 + channel_orientations + 3)`` more features.
    channel_orientations : int
    channel_cells : sequence of int, default (1,)
        Square sizes (in cells) of the channel aggregates: size ``s`` gives, per channel,
        the mean over each ``s x s``-cell square inside the window at stride one cell
        (:func:`box_means`), ``(w - s + 1) (h - s + 1)`` values; ``(1,)``: the cells
        alone.  Only with ``channels``.
    engine : {"numba", "skimage"}, default "numba"
        How the levels are made: ``"numba"`` -- the compiled antialiased bilinear
        :func:`~maxmargin.apps.detection.scan.resize` and
        :func:`~maxmargin.apps.detection.scan.hog_blocks` (scikit-image's HOG, compiled:
        a test checks them equal); ``"skimage"`` -- ``skimage.transform.rescale`` and
        ``skimage.feature.hog``, what detectors saved before the compiled scan used.
    features : {"hog", "fhog"}, default "hog"
        ``"hog"``: Dalal & Triggs' L2-Hys block grid (``block``, ``orientations``);
        ``"fhog"``: the 31 FHOG features per cell (:func:`fhog_cells`; ``block`` and
        ``orientations`` unused), a window being its ``h x w`` cells.
    pad : int, default 0
        Cells of padding around every level's grid (HOG blocks, FHOG cells and channel
        cells alike), so that windows reach ``pad`` cells beyond the image on every side
        (the windows with context of :class:`~maxmargin.apps.detection.HOGSVMDetector`).
        Levels continue while the padded grid holds a window and the level image is at
        least one cell; :meth:`boxes` and :meth:`snap` are in the image's coordinates
        (a window at column ``c`` starts at ``(c - pad) cell / sx``).
    pad_mode : {"zero", "edge"}, default "zero"
        ``"zero"``: zero cells around the grid of the level's image (what FHOG and HOG
        give a region without gradient; the channels see colour 0); two cells or more
        inside the image (FHOG; HOG blocks: one) it equals the grid of the level image
        padded by edge replication, whose padding instead continues the border rows and
        columns -- their gradients along the border -- (a test).  ``"edge"``: that
        grid, the level image padded by ``pad`` cells of edge replication before its
        features (``pad`` cells, not the whole image's size).
    feature_map : fitted :class:`~maxmargin.learners.kernel_approx.AdditiveKernelMap` or None
        An explicit additive-kernel feature map (Vedaldi & Zisserman, TPAMI 2012;
        [Sun2012 eq. 5.34]) applied to every cell of every level's HOG / FHOG grid
        (after the padding; the channel grids are not mapped): the level's ``(rows,
        cols, d)`` grid becomes ``(rows, cols, d (2 n + 1))``, ``n + 1`` the map's
        ``sample_steps``, each cell mapped by the map's ``transform`` (:func:`map_cells`;
        its layout: the ``j = 0`` values of the cell's ``d`` features, then the cos /
        sin pairs of ``j = 1 .. n``).  The map is per value and position-independent,
        so a window's descriptor is the map of its cells and the filter scan stays one
        correlation per level, over the mapped grid.  The map must have been fitted on
        ``d`` features (31 for FHOG; ``block^2 orientations`` for the L2-Hys blocks).
        None: the grids as computed.
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
        aspect_ratios=(1.0,),
        colour: bool = False,
        channels: bool = False,
        channel_orientations: int = 6,
        channel_cells=(1,),
        engine: str = "numba",
        features: str = "hog",
        pad: int = 0,
        pad_mode: str = "zero",
        feature_map=None,
    ) -> None:
        from skimage.feature import hog
        from skimage.transform import rescale

        if engine not in ("numba", "skimage"):
            raise ValueError(f"engine must be 'numba' or 'skimage', got {engine!r}")
        self.engine = engine
        if features not in ("hog", "fhog"):
            raise ValueError(f"features must be 'hog' or 'fhog', got {features!r}")
        self.features = features
        if engine == "numba":
            from maxmargin.apps.detection.scan import hog_blocks, resize

            def rescale(img, scale, anti_aliasing=True, channel_axis=None):
                sy, sx = scale
                return resize(img, (round(img.shape[0] * sy), round(img.shape[1] * sx)))

            def hog(img, orientations, pixels_per_cell, cells_per_block, **_):
                return hog_blocks(img, pixels_per_cell[0], cells_per_block[0], orientations)

        else:
            resize = None
        if features == "fhog":

            def hog(img, orientations, pixels_per_cell, **_):
                return _fhog_checked(img, int(pixels_per_cell[0]))

        img0 = to_float(image, colour=colour)
        if features == "fhog" and not np.all(np.isfinite(img0)):
            raise ValueError("the image contains NaN or inf")
        self.image_shape = img0.shape[:2]
        self.channels = bool(channels)
        self.channel_orientations = int(channel_orientations)
        if self.channel_orientations < 1:
            raise ValueError(f"channel_orientations must be positive, got {channel_orientations}")
        sizes = np.atleast_1d(np.asarray(channel_cells))
        if (
            sizes.ndim != 1
            or len(sizes) == 0
            or not np.issubdtype(sizes.dtype, np.integer)
            or np.any(sizes < 1)
            or len(np.unique(sizes)) != len(sizes)
        ):
            raise ValueError(
                f"channel_cells must be distinct positive integers, got {channel_cells!r}"
            )
        if np.any(sizes > min(int(window[0]), int(window[1]))):
            raise ValueError(f"channel_cells {channel_cells!r} larger than the window {window}")
        self.channel_cells = tuple(int(v) for v in sizes)
        # the channel features see the colour whatever ``colour`` says for HOG
        cimg0 = to_float(image, colour=True) if self.channels else None
        self.grids = []  # per level: {size: box means of its channel_grid} (channels=True)
        self.window = (int(window[0]), int(window[1]))
        self.cell, self.block, self.orientations = int(cell), int(block), int(orientations)
        if features == "hog" and min(self.window) < self.block:
            raise ValueError(f"window {self.window} cells is smaller than a block ({block})")
        ratios = [float(a) for a in np.atleast_1d(np.asarray(aspect_ratios, dtype=np.float64))]
        if not ratios or any(not np.isfinite(a) or a <= 0 for a in ratios):
            raise ValueError(f"aspect_ratios must be positive numbers, got {aspect_ratios!r}")
        if int(pad) != pad or pad < 0:
            raise ValueError(f"pad must be a non-negative integer, got {pad!r}")
        self.pad = p = int(pad)
        if pad_mode not in ("zero", "edge"):
            raise ValueError(f"pad_mode must be 'zero' or 'edge', got {pad_mode!r}")
        self.pad_mode = pad_mode
        edge = p > 0 and pad_mode == "edge"
        pw = p * self.cell

        def edge_pad(a):
            # the level image padded by p cells of edge replication (np.pad's "edge",
            # written with slices: np.pad's overhead is a fifth of a small level's FHOG)
            h, w = a.shape[:2]
            out = np.empty((h + 2 * pw, w + 2 * pw, *a.shape[2:]), dtype=a.dtype)
            out[pw : pw + h, pw : pw + w] = a
            out[:pw, pw : pw + w] = a[:1]
            out[pw + h :, pw : pw + w] = a[-1:]
            out[:, :pw] = out[:, pw : pw + 1]
            out[:, pw + w :] = out[:, pw + w - 1 : pw + w]
            return out

        H, W = self.image_shape
        # the smallest level image: the padded grid holds a window, at least one cell
        wpx = max((self.window[0] - 2 * p) * self.cell, self.cell)
        hpx = max((self.window[1] - 2 * p) * self.cell, self.cell)
        pairs = []
        for a in ratios:
            ra = a**0.5
            if scales is None:
                s, n = 1.0, 0
                while n < max_levels and H * s * ra >= hpx and W * s / ra >= wpx:
                    pairs.append((s / ra, s * ra, a))
                    s /= scale_step
                    n += 1
            else:
                for s in scales:
                    s = float(s)
                    if not s > 0:
                        raise ValueError(f"scales must be positive, got {s}")
                    pairs.append((s / ra, s * ra, a))
        self.scales = []
        self.levels = []
        prev, prev_a = None, None
        for sx, sy, a in pairs:
            target = (round(H * sy), round(W * sx))
            if target[0] < hpx or target[1] < wpx:
                continue
            if sx == 1.0 and sy == 1.0:
                img = img0
            elif engine == "numba":
                # a level from the previous, larger level of its aspect ratio when there
                # is one (as image pyramids are built), else from the image
                src = img0
                if prev is not None and prev_a == a and prev.shape[0] >= target[0]:
                    if prev.shape[1] >= target[1]:
                        src = prev
                img = resize(src, target)
            else:
                img = rescale(
                    img0,
                    (sy, sx),
                    anti_aliasing=min(sx, sy) < 1,
                    channel_axis=-1 if img0.ndim == 3 else None,
                ).astype(np.float32)
            if self.channels:
                if cimg0.ndim == img0.ndim:
                    cimg = img  # the same image (colour HOG, or grey input)
                else:
                    cimg = rescale(
                        cimg0, (sy, sx), anti_aliasing=min(sx, sy) < 1, channel_axis=-1
                    ).astype(np.float32)
                if edge:
                    cg = channel_grid(edge_pad(cimg), self.cell, self.channel_orientations)
                else:
                    cg = channel_grid(cimg, self.cell, self.channel_orientations)
                    if p:
                        cg = np.pad(cg, ((p, p), (p, p), (0, 0)))
                self.grids.append(
                    {k: cg if k == 1 else box_means(cg, k) for k in self.channel_cells}
                )
            g = hog(
                edge_pad(img) if edge else img,
                orientations=self.orientations,
                pixels_per_cell=(self.cell, self.cell),
                cells_per_block=(self.block, self.block),
                feature_vector=False,
                channel_axis=-1 if img.ndim == 3 else None,
            ).astype(np.float32, copy=False)
            if p and not edge:  # zeros around the grid: windows reaching beyond the image
                g = np.pad(g, ((p, p), (p, p)) + ((0, 0),) * (g.ndim - 2))
            if feature_map is not None:
                g = map_cells(feature_map, g)
            # the level's true scale after rounding to whole pixels
            prev, prev_a = img, a
            self.scales.append((img.shape[1] / W, img.shape[0] / H))
            self.levels.append(g)
        if features == "fhog":
            self.n_blocks = (self.window[1], self.window[0])
            self.cell_dim = FHOG_DIM
        else:
            self.n_blocks = (self.window[1] - self.block + 1, self.window[0] - self.block + 1)
            self.cell_dim = self.block**2 * self.orientations
        self.feature_map = feature_map
        if feature_map is not None:
            self.cell_dim *= 2 * int(feature_map.sample_steps) - 1
        self.n_channels = (1 + self.channel_orientations + 3) if self.channels else 0
        w, h = self.window
        self.n_channel_features = self.n_channels * sum(
            (w - k + 1) * (h - k + 1) for k in self.channel_cells
        )

    @property
    def n_hog_features(self) -> int:
        return int(self.n_blocks[0] * self.n_blocks[1] * self.cell_dim)

    @property
    def n_features(self) -> int:
        return self.n_hog_features + self.n_channel_features

    def positions(self, level: int):
        """Number of valid window offsets (rows, cols) at ``level``."""
        g = self.levels[level]
        return g.shape[0] - self.n_blocks[0] + 1, g.shape[1] - self.n_blocks[1] + 1

    def boxes(self, level, row, col) -> np.ndarray:
        """Windows at ``(level, row, col)`` (arrays) as boxes in the original image."""
        level, row, col = (np.asarray(v, dtype=np.int64) for v in (level, row, col))
        sc = np.array(self.scales, dtype=np.float64).reshape(-1, 2)
        sx, sy = sc[level, 0], sc[level, 1]
        c, p = self.cell, self.pad
        return np.stack(
            [
                (col - p) * c / sx,
                (row - p) * c / sy,
                self.window[0] * c / sx,
                self.window[1] * c / sy,
            ],
            1,
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
            nh = self.n_hog_features
            out[sel, :nh] = g[r[:, None, None] + dr[None, :, None], c[:, None, None] + dc].reshape(
                len(sel), -1
            )
            if self.channels:
                # per size s: the window's (h - s + 1) x (w - s + 1) squares of the
                # level's box-mean grid (s = 1: its w x h cells, r .. r + h - 1)
                at = nh
                for s_, cg in self.grids[int(k)].items():
                    wr = np.arange(self.window[1] - s_ + 1)
                    wc = np.arange(self.window[0] - s_ + 1)
                    m = len(wr) * len(wc) * self.n_channels
                    out[sel, at : at + m] = cg[
                        r[:, None, None] + wr[None, :, None], c[:, None, None] + wc
                    ].reshape(len(sel), -1)
                    at += m
        return out

    def filter_scores(self, level: int, coef) -> np.ndarray:
        """Score map ``positions(level)`` of the linear function ``coef`` (length
        ``n_features``) on every window of ``level``: entry ``[r, c]`` equals
        ``descriptors(level, r, c) @ coef`` (float64), computed by correlating the
        filter with the level's block grid (and channel grids) in one compiled pass
        (:func:`~maxmargin.apps.detection.scan.correlate`) -- no window descriptor is
        gathered."""
        from maxmargin.apps.detection.scan import correlate

        w = np.asarray(coef, dtype=np.float64).ravel()
        if w.shape != (self.n_features,):
            raise ValueError(f"coef must have {self.n_features} entries, got {w.shape}")
        g = self.levels[int(level)]
        br, bc = self.n_blocks
        nh = self.n_hog_features
        S = correlate(g.reshape(g.shape[0], g.shape[1], -1), w[:nh].reshape(br, bc, -1))
        if self.channels:
            at = nh
            for s_, cg in self.grids[int(level)].items():
                nr, nc = self.window[1] - s_ + 1, self.window[0] - s_ + 1
                m = nr * nc * self.n_channels
                S += correlate(cg, w[at : at + m].reshape(nr, nc, self.n_channels))
                at += m
        return S

    def scan_scores(self, coef) -> np.ndarray:
        """``filter_scores`` of every level, in the order of :meth:`windows` (step 1)."""
        maps = [self.filter_scores(k, coef).ravel() for k in range(len(self.levels))]
        return np.concatenate(maps) if maps else np.zeros(0)

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
        cx = (b[:, 0] + b[:, 2] / 2) * sc[level, 0] / c - self.window[0] / 2 + self.pad
        cy = (b[:, 1] + b[:, 3] / 2) * sc[level, 1] / c - self.window[1] / 2 + self.pad
        row = np.clip(np.round(cy), 0, npos[level, 0] - 1).astype(np.int64)
        col = np.clip(np.round(cx), 0, npos[level, 1] - 1).astype(np.int64)
        return level, row, col
