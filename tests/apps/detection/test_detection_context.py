"""Windows with context (``HOGSVMDetector(context=)``, issue 31 goal b) on zero-padded
pyramid grids (``HOGPyramid(pad=)``): the padded grid against the grid of the image
padded by edge replication (equal away from the border, the difference stated), the
padded windows' geometry against formulas written out here, the fit against a plain
detector on the padded grids and boxes grown by hand, the detections against that
detector's windows shrunk back by hand, the objects found, save / load."""

from __future__ import annotations

import numpy as np
import pytest
from detection_makers import SMALL_FHOG, small_scenes

import maxmargin
from maxmargin.apps.detection import HOGPyramid, HOGSVMDetector
from maxmargin.apps.detection.detector import _from_context, _grow
from maxmargin.apps.detection.features import fhog_cells
from maxmargin.apps.detection.scan import hog_blocks
from maxmargin.tasks.boxes import pairwise_overlap

KW = SMALL_FHOG
CTX = 1.0
F = (3 + 2 * CTX) / 3  # the growth factor of a 3-cell window with one cell each side
# the padding: the context is CTX * 3 / (3 + 2 CTX) = 0.6 of the window's cells, rounded
# up, plus one cell for the image's last pixels that fill no whole cell
PAD = 2


def grown(boxes, f=F):
    """The boxes grown ``f`` times around their centres, written out."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    cx, cy = b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2
    return np.stack([cx - f * b[:, 2] / 2, cy - f * b[:, 3] / 2, f * b[:, 2], f * b[:, 3]], 1)


@pytest.mark.parametrize("shape", [(45, 61), (48, 64), (61, 83), (37, 50, 3)])
@pytest.mark.parametrize("p", [1, 3])
def test_padded_fhog_grid_equals_the_edge_padded_image_away_from_the_border(shape, p):
    rng = np.random.default_rng(shape[0] + p)
    img = rng.random(shape).astype(np.float32)
    cell = 8
    pyr = HOGPyramid(img, window=(3, 3), features="fhog", scales=[1.0], pad=p, colour=True)
    g = pyr.levels[0]
    Hc, Wc = shape[0] // cell, shape[1] // cell
    assert g.shape == (Hc + 2 * p, Wc + 2 * p, 31)
    ref = fhog_cells(
        np.pad(img, ((p * cell,) * 2, (p * cell,) * 2) + ((0, 0),) * (img.ndim - 2), mode="edge"),
        cell,
    )
    assert ref.shape == g.shape
    # the padding is zeros (FHOG of a region without gradient)
    inner = np.zeros(g.shape[:2], dtype=bool)
    inner[p : p + Hc, p : p + Wc] = True
    assert np.all(g[~inner] == 0)
    np.testing.assert_array_equal(g[inner].reshape(Hc, Wc, 31), fhog_cells(img, cell))
    # equal to the edge-padded image's grid two cells or more inside the image: the
    # image's 1-pixel border has a gradient there (and votes into the cell outside it),
    # which the second ring's normalisation sees
    core = np.zeros_like(inner)
    core[p + 2 : p + Hc - 2, p + 2 : p + Wc - 2] = True
    np.testing.assert_array_equal(g[core], ref[core])
    # the stated differences: the image's outer ring (border gradients), and the padding
    # -- edge replication continues the border rows and columns, whose gradients along
    # the border fill the band beside the image; only the corners are flat
    assert not np.array_equal(g[p, p:-p], ref[p, p:-p])
    assert np.any(ref[0, p : p + Wc] != 0) and np.any(ref[p : p + Hc, 0] != 0)
    # (the top-left one: the image's last pixels that fill no whole cell lie at the
    # bottom and the right)
    assert np.all(ref[: max(p - 1, 0), : max(p - 1, 0)] == 0)
    # pad_mode="edge" is that grid, cell for cell
    edge = HOGPyramid(
        img, window=(3, 3), features="fhog", scales=[1.0], pad=p, colour=True, pad_mode="edge"
    )
    np.testing.assert_array_equal(edge.levels[0], ref)


def test_padded_hog_blocks_equal_the_edge_padded_image_away_from_the_border():
    rng = np.random.default_rng(5)
    img = rng.random((45, 61)).astype(np.float32)
    p, cell = 2, 8
    pyr = HOGPyramid(img, window=(3, 3), scales=[1.0], pad=p)
    g = pyr.levels[0]
    ref = hog_blocks(np.pad(img, p * cell, mode="edge"), cell, 2, 9)
    own = hog_blocks(img, cell, 2, 9)
    nb = own.shape[:2]
    assert g.shape == ref.shape == (nb[0] + 2 * p, nb[1] + 2 * p, 2, 2, 9)
    inner = np.zeros(g.shape[:2], dtype=bool)
    inner[p : p + nb[0], p : p + nb[1]] = True
    assert np.all(g[~inner] == 0)
    np.testing.assert_array_equal(g[inner].reshape(own.shape), own)
    # blocks of cells one or more cells inside the image see the same pixels
    core = np.zeros_like(inner)
    core[p + 1 : p + nb[0] - 1, p + 1 : p + nb[1] - 1] = True
    np.testing.assert_allclose(g[core], ref[core], rtol=0, atol=1e-6)


def test_padded_pyramid_windows_geometry_and_levels():
    img = small_scenes(1, seed=0)[0][0]  # 48 x 64
    plain = HOGPyramid(img, window=(3, 3), features="fhog", scale_step=1.2)
    pyr = HOGPyramid(img, window=(3, 3), features="fhog", scale_step=1.2, pad=PAD)
    # levels continue while the padded grid holds a window and the image is a cell:
    # 48 s >= max(3 - 2 PAD, 1) * 8 = 8, at most 12 levels
    n = sum(1 for k in range(12) if 48 * 1.2**-k >= 8)
    assert len(pyr.levels) == n > len(plain.levels)
    for k in range(len(plain.levels)):
        assert pyr.scales[k] == plain.scales[k]
        nr, nc = plain.positions(k)
        assert pyr.positions(k) == (nr + 2 * PAD, nc + 2 * PAD)
        r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
        r, c, lv = r.ravel(), c.ravel(), np.full(r.size, k)
        # window (r + PAD, c + PAD) of the padded grid is window (r, c) of the image
        np.testing.assert_array_equal(
            pyr.descriptors(lv, r + PAD, c + PAD), plain.descriptors(lv, r, c)
        )
        np.testing.assert_allclose(pyr.boxes(lv, r + PAD, c + PAD), plain.boxes(lv, r, c))
    # a window at (0, 0) starts PAD cells before the image
    sx, sy = pyr.scales[2]
    np.testing.assert_allclose(
        pyr.boxes([2], [0], [0]), [[-PAD * 8 / sx, -PAD * 8 / sy, 24 / sx, 24 / sy]]
    )
    # snap finds the window of a box reaching beyond the image (the grown box of an
    # object at the corner), its cell offset in the padding
    b = grown([[0.0, 0.0, 20.0, 20.0]])
    lv, r, c = pyr.snap(b)
    assert r[0] < PAD and c[0] < PAD
    # by hand: the level of the nearest window size, the window centred on the box
    sc = np.array(pyr.scales)
    k = int(np.argmin(np.log(24 / sc[:, 0] / b[0, 2]) ** 2 + np.log(24 / sc[:, 1] / b[0, 3]) ** 2))
    cx, cy = b[0, 0] + b[0, 2] / 2, b[0, 1] + b[0, 3] / 2
    assert (lv[0], r[0], c[0]) == (
        k,
        round(cy * sc[k, 1] / 8 - 1.5 + PAD),
        round(cx * sc[k, 0] / 8 - 1.5 + PAD),
    )
    with pytest.raises(ValueError, match="pad"):
        HOGPyramid(img, window=(3, 3), pad=-1)
    with pytest.raises(ValueError, match="pad_mode"):
        HOGPyramid(img, window=(3, 3), pad=1, pad_mode="wrap")
    # with pad_mode="edge" every level is the level image edge-padded by PAD cells
    edge = HOGPyramid(img, window=(3, 3), features="fhog", scale_step=1.2, pad=PAD, pad_mode="edge")
    assert edge.scales == pyr.scales
    for k in (0, 3, len(edge.levels) - 1):
        sx, sy = edge.scales[k]
        lv_img = resize_like(img, edge, k)
        ref = fhog_cells(np.pad(lv_img, 8 * PAD, mode="edge"), 8)
        np.testing.assert_array_equal(edge.levels[k], ref)


def resize_like(img, pyr, k):
    """Level ``k``'s image as the pyramid resamples it: each level from the one before."""
    from maxmargin.apps.detection.features import to_float
    from maxmargin.apps.detection.scan import resize

    src = to_float(img, colour=False)
    H, W = src.shape
    for sx, sy in pyr.scales[: k + 1]:
        target = (round(H * sy), round(W * sx))
        if target != src.shape:
            src = resize(src, target)
    return src


@pytest.mark.parametrize("window, ctx, pad", [((3, 3), 1.0, 2), ((7, 7), 3.0, 3), ((7, 5), 2.0, 3)])
def test_grid_pad_covers_every_grown_box_of_a_box_inside_the_image(window, ctx, pad):
    det = HOGSVMDetector(window=window, context=ctx, features="fhog")
    assert det._grid_pad() == pad
    # ceil(ctx w / (w + 2 ctx)) + 1 over the axes, written out: 3/5 -> 2, 21/13 -> 3,
    # (14/11, 10/9) -> 3
    img = np.zeros((50, 70))
    pyr = det._pyramid(img)
    fx, fy = det._context_factors()
    assert (fx, fy) == ((window[0] + 2 * ctx) / window[0], (window[1] + 2 * ctx) / window[1])
    rng = np.random.default_rng(1)
    for k in range(len(pyr.levels)):
        sx, sy = pyr.scales[k]
        # the largest box this level's window describes, at the image's four corners
        w, h = window[0] * 8 / sx / fx, window[1] * 8 / sy / fy
        if w > 70 or h > 50:
            continue
        x = np.array([0.0, 70 - w, 0.0, 70 - w, rng.uniform(0, 70 - w)])
        y = np.array([0.0, 0.0, 50 - h, 50 - h, rng.uniform(0, 50 - h)])
        g = _grow(np.stack([x, y, np.full(5, w), np.full(5, h)], 1), fx, fy)
        nr, nc = pyr.positions(k)
        # the padded grid's extent at this level, in image pixels (its last cell ends
        # before the image's last pixels that fill no whole cell: the extra pad cell)
        x0, y0 = -pad * 8 / sx, -pad * 8 / sy
        x1, y1 = x0 + (nc + window[0] - 1) * 8 / sx, y0 + (nr + window[1] - 1) * 8 / sy
        assert np.all(g[:, 0] >= x0 - 1e-9) and np.all(g[:, 1] >= y0 - 1e-9)
        assert np.all(g[:, 0] + g[:, 2] <= x1 + 1e-9)
        assert np.all(g[:, 1] + g[:, 3] <= y1 + 1e-9)


def test_context_box_geometry():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 40, 20), rng.uniform(0, 20, 20)
    b = np.stack([x, y, rng.uniform(1, 50 - x), rng.uniform(1, 30 - y)], 1)
    b = np.vstack([b, [0, 0, 50, 30]])  # the whole image
    g = _grow(b, F, F)
    np.testing.assert_allclose(g, grown(b), rtol=0, atol=1e-12)
    # and shrinks back to the box
    np.testing.assert_allclose(_from_context(g, (F, F), (30, 50)), b, rtol=0, atol=1e-9)
    # a window reaching outside the image is clipped to it: the window's centre
    # (-5, -5), its size 40 / F = 24, so x and y run from -17 to 7
    out = _from_context([[-25.0, -25.0, 40.0, 40.0]], (F, F), (30, 50))
    np.testing.assert_allclose(out, [[0.0, 0.0, 7.0, 7.0]], atol=1e-12)


class _Padded(HOGSVMDetector):
    """A plain detector (no context) whose pyramids carry ``PAD`` zero cells, trained on
    the boxes grown by :func:`grown` (the formula written out)."""

    def _grid_pad(self):
        return PAD

    def _context_boxes(self, boxes):
        return [grown(b) for b in boxes]


def test_fit_is_the_plain_fit_on_the_padded_grids_and_grown_boxes():
    imgs, boxes = small_scenes(5, seed=3)
    det = HOGSVMDetector(context=CTX, mirror=True, **KW).fit(imgs, boxes)
    plain = _Padded(mirror=True, **KW).fit(imgs, boxes)
    np.testing.assert_array_equal(det.coef_, plain.coef_)
    assert det.intercept_ == plain.intercept_
    assert det.n_positives_ == plain.n_positives_

    class Unpadded(_Padded):
        def _grid_pad(self):
            return 0

    # the padding matters: without it the fit differs
    unpadded = Unpadded(mirror=True, **KW).fit(imgs, boxes)
    assert not np.array_equal(unpadded.coef_, det.coef_)


@pytest.mark.parametrize("window, ctx, pad", [((3, 3), CTX, PAD), ((2, 2), 4.0, 2)])
def test_detections_are_the_padded_windows_shrunk_back(window, ctx, pad):
    # (2, 2) cells with 4 of context: the box is 2 / 10 of its window, so windows near
    # the padded grid's edge stand for boxes wholly outside the image (dropped)
    f = (window[0] + 2 * ctx) / window[0]
    imgs, boxes = small_scenes(6, seed=4)
    kw = {**KW, "window": window}
    det = HOGSVMDetector(context=ctx, **kw).fit(imgs, boxes)
    assert det._grid_pad() == pad

    class Padded(HOGSVMDetector):
        def _grid_pad(self):
            return pad

    plain = Padded(**kw)
    for a in ("coef_", "intercept_", "distribution_", "n_train_images_", "regression_coef_"):
        setattr(plain, a, getattr(det, a))
    dropped = clipped = 0
    for im in imgs[:3]:
        wb, ws = plain.detect(im)
        # the window shrunk f times around its centre, clipped
        cx, cy = wb[:, 0] + wb[:, 2] / 2, wb[:, 1] + wb[:, 3] / 2
        x0, x1 = cx - wb[:, 2] / f / 2, cx + wb[:, 2] / f / 2
        y0, y1 = cy - wb[:, 3] / f / 2, cy + wb[:, 3] / f / 2
        clipped += int(np.sum((x0 < 0) | (y0 < 0) | (x1 > 64) | (y1 > 48)))
        x0, x1, y0, y1 = (
            np.clip(x0, 0, 64),
            np.clip(x1, 0, 64),
            np.clip(y0, 0, 48),
            np.clip(y1, 0, 48),
        )
        # boxes with no area inside the image dropped
        keep = (x1 > x0) & (y1 > y0)
        dropped += int(np.sum(~keep))
        got_b, got_s = det.detect(im)
        want = np.stack([x0, y0, x1 - x0, y1 - y0], 1)[keep]
        np.testing.assert_allclose(got_b, want, atol=1e-9)
        np.testing.assert_array_equal(got_s, ws[keep])
        assert len(got_b) and np.all(got_b[:, 2:] > 0)
    # some boxes reached beyond the image (clipped); with the small window some lay
    # wholly outside it (dropped)
    assert clipped > 0
    assert (dropped > 0) == (window == (2, 2))


def test_context_detector_finds_the_objects_and_saves(tmp_path):
    imgs, boxes = small_scenes(12, seed=6)
    det = HOGSVMDetector(context=CTX, **KW).fit(imgs[:8], boxes[:8])
    hits = []
    for im, b in zip(imgs[8:], boxes[8:]):
        top = det.detect(im)[0][:1]
        hits.append(pairwise_overlap(top, np.asarray(b).reshape(-1, 4)).max() >= 0.5)
    # the boxes are the objects, not the F-times larger windows (IoU 1 / F^2 = 0.36)
    assert np.mean(hits) >= 0.75
    maxmargin.save(det, tmp_path / "d.npz")
    back = maxmargin.load(tmp_path / "d.npz")
    assert back.context == CTX
    for a, b in zip(det.detect(imgs[8]), back.detect(imgs[8])):
        np.testing.assert_array_equal(a, b)


def test_context_with_the_location_prior_and_box_regression():
    imgs, boxes = small_scenes(6, seed=2)
    kw = {**KW, "location_prior": True}
    det = HOGSVMDetector(context=CTX, box_regression=0.01, **kw).fit(imgs, boxes)
    # the prior of the padded windows: the box distribution of the grown boxes at the
    # windows' boxes (which start PAD cells before the image)
    pyr = det._pyramid(imgs[0])
    for k in range(len(pyr.levels)):
        nr, nc = pyr.positions(k)
        r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
        b = pyr.boxes(np.full(r.size, k), r.ravel(), c.ravel())
        np.testing.assert_allclose(
            det._prior_map(pyr, k), det._prior(pyr, b).reshape(nr, nc), rtol=2.0**-23, atol=0
        )
    b, _ = det.detect(imgs[0])
    assert len(b) and np.all(b[:, :2] >= 0) and np.all(b[:, 2:] > 0)
    assert np.all(b[:, 0] + b[:, 2] <= 64 + 1e-9) and np.all(b[:, 1] + b[:, 3] <= 48 + 1e-9)


def test_negative_context_is_rejected():
    imgs, boxes = small_scenes(2, seed=1)
    with pytest.raises(ValueError, match="context"):
        HOGSVMDetector(context=-1.0, **KW).fit(imgs, boxes)


def test_context_nms_box_suppresses_the_boxes_not_the_windows():
    """``context_nms="box"``: NMS over the boxes the windows stand for (shrunk back by
    hand, clipped), against every window's score; "window" differs on some image."""
    from maxmargin.apps.detection import nms

    imgs, boxes = small_scenes(8, seed=7)
    det = HOGSVMDetector(context=CTX, context_nms="box", nms_threshold=0.4, **KW)
    det.fit(imgs[:5], boxes[:5])
    win = HOGSVMDetector(**{**det.get_params(), "context_nms": "window"})
    for a in ("coef_", "intercept_", "distribution_", "n_train_images_", "regression_coef_"):
        setattr(win, a, getattr(det, a))
    win.extent_ = None
    differ = 0
    for im in imgs[5:]:
        pyr = det._pyramid(im)
        lv, r, c = pyr.windows()
        wb = pyr.boxes(lv, r, c)
        ws = np.array([float(d @ det.coef_) for d in pyr.descriptors(lv, r, c)]) + det.intercept_
        cx, cy = wb[:, 0] + wb[:, 2] / 2, wb[:, 1] + wb[:, 3] / 2
        x0, x1 = np.clip(cx - wb[:, 2] / F / 2, 0, 64), np.clip(cx + wb[:, 2] / F / 2, 0, 64)
        y0, y1 = np.clip(cy - wb[:, 3] / F / 2, 0, 48), np.clip(cy + wb[:, 3] / F / 2, 0, 48)
        bx = np.stack([x0, y0, x1 - x0, y1 - y0], 1)
        k = nms(bx, ws, 0.4, max_keep=det.max_detections)
        k = k[(bx[k, 2] > 0) & (bx[k, 3] > 0)]
        got_b, got_s = det.detect(im)
        np.testing.assert_allclose(got_b, bx[k], atol=1e-9)
        np.testing.assert_allclose(got_s, ws[k], rtol=0, atol=1e-4 * np.abs(ws).max())
        wb2, _ = win.detect(im)
        differ += int(len(wb2) != len(got_b) or not np.allclose(wb2, got_b))
    assert differ > 0, "window and box NMS agree on every image: the test sees nothing"
