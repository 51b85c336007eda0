"""Windows with context (``HOGSVMDetector(context=)``, issue 31 goal b): the padding and
box geometry against formulas written out here, the fit against a plain detector fitted
on the padded images and grown boxes by hand, the detections against the plain
detector's on the padded image shrunk back by hand, the objects found, save / load."""

from __future__ import annotations

import numpy as np
import pytest

import maxmargin
from maxmargin.apps.detection import HOGSVMDetector
from maxmargin.apps.detection.detector import _context_pad, _from_context, _to_context
from maxmargin.datasets import make_detection_scenes
from maxmargin.tasks.boxes import pairwise_overlap

KW = dict(
    window=(3, 3),
    C=0.1,
    features="fhog",
    location_prior=False,
    aspect_ratios=(1.0,),
    scale_step=1.2,
    max_rounds=2,
    random_state=0,
)
CTX = 1.0
F = (3 + 2 * CTX) / 3  # the growth factor of a 3-cell window with one cell each side


def by_hand(image, boxes):
    """The padded image (edge replication, margin ceil((F - 1) / 2 max(H, W)) + 8) and
    the boxes grown F times around their centres, shifted into it."""
    a = np.asarray(image)
    m = int(np.ceil((F - 1) / 2 * max(a.shape))) + 8
    p = np.pad(a, m, mode="edge")
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    cx, cy = b[:, 0] + b[:, 2] / 2 + m, b[:, 1] + b[:, 3] / 2 + m
    g = np.stack([cx - F * b[:, 2] / 2, cy - F * b[:, 3] / 2, F * b[:, 2], F * b[:, 3]], 1)
    return p, g, m


def test_padding_and_box_geometry():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (30, 50)).astype(np.uint8)
    p, m = _context_pad(img, (F, F), 8)
    ref, _, m_ref = by_hand(img, np.zeros((0, 4)))
    assert m == m_ref
    np.testing.assert_array_equal(p, ref)
    np.testing.assert_array_equal(p[:m, m:-m], np.broadcast_to(img[0], (m, 50)))
    # colour images: the channels are not padded
    assert _context_pad(np.zeros((30, 50, 3)), (F, F), 8)[0].shape == (30 + 2 * m, 50 + 2 * m, 3)
    x, y = rng.uniform(0, 40, 20), rng.uniform(0, 20, 20)
    b = np.stack([x, y, rng.uniform(1, 50 - x), rng.uniform(1, 30 - y)], 1)
    b = np.vstack([b, [0, 0, 50, 30]])  # the whole image
    g = _to_context(b, (F, F), m)
    np.testing.assert_allclose(g, by_hand(img, b)[1], rtol=0, atol=1e-12)
    # every grown box lies inside the padded image
    assert np.all(g[:, :2] >= 0)
    assert np.all(g[:, 0] + g[:, 2] <= p.shape[1]) and np.all(g[:, 1] + g[:, 3] <= p.shape[0])
    # and shrinks back to the box
    np.testing.assert_allclose(_from_context(g, (F, F), m, img.shape), b, rtol=0, atol=1e-9)
    # a window reaching outside the image is clipped to it: margin 25, the window's
    # centre (20, 20) -> (-5, -5), its size 40 / F = 24, so x and y run from -17 to 7
    assert m == 25
    out = _from_context([[0.0, 0.0, 40.0, 40.0]], (F, F), m, img.shape)
    np.testing.assert_allclose(out, [[0.0, 0.0, 7.0, 7.0]], atol=1e-12)


def test_fit_is_the_plain_fit_on_the_padded_images_and_grown_boxes():
    imgs, boxes = make_detection_scenes(5, size=(48, 64), side=24, random_state=3)
    det = HOGSVMDetector(context=CTX, mirror=True, **KW).fit(imgs, boxes)
    hand = [by_hand(im, b) for im, b in zip(imgs, boxes)]
    plain = HOGSVMDetector(mirror=True, **KW).fit([h[0] for h in hand], [h[1] for h in hand])
    np.testing.assert_array_equal(det.coef_, plain.coef_)
    assert det.intercept_ == plain.intercept_
    assert det.n_positives_ == plain.n_positives_


def dropped_some(plain, imgs, m):
    """Whether some window of the padded images lies wholly in the margin (its box has
    no area inside the image), so that the dropping is exercised."""
    for im in imgs[:3]:
        wb = plain.detect(by_hand(im, np.zeros((0, 4)))[0])[0]
        cx, cy = wb[:, 0] + wb[:, 2] / 2 - m, wb[:, 1] + wb[:, 3] / 2 - m
        hw, hh = wb[:, 2] / F / 2, wb[:, 3] / F / 2
        out = (cx + hw <= 0) | (cx - hw >= 64) | (cy + hh <= 0) | (cy - hh >= 48)
        if np.any(out):
            return True
    return False


def test_detections_are_the_padded_windows_shrunk_back():
    imgs, boxes = make_detection_scenes(6, size=(48, 64), side=24, random_state=4)
    det = HOGSVMDetector(context=CTX, **KW).fit(imgs, boxes)
    plain = HOGSVMDetector(**KW)
    for a in ("coef_", "intercept_", "distribution_", "n_train_images_", "regression_coef_"):
        setattr(plain, a, getattr(det, a))
    for im in imgs[:3]:
        p, _, m = by_hand(im, np.zeros((0, 4)))
        wb, ws = plain.detect(p)
        # the window shrunk F times around its centre, shifted back, clipped
        cx, cy = wb[:, 0] + wb[:, 2] / 2 - m, wb[:, 1] + wb[:, 3] / 2 - m
        x0 = np.clip(cx - wb[:, 2] / F / 2, 0, 64)
        x1 = np.clip(cx + wb[:, 2] / F / 2, 0, 64)
        y0 = np.clip(cy - wb[:, 3] / F / 2, 0, 48)
        y1 = np.clip(cy + wb[:, 3] / F / 2, 0, 48)
        # boxes with no area inside the image dropped
        keep = (x1 > x0) & (y1 > y0)
        got_b, got_s = det.detect(im)
        want = np.stack([x0, y0, x1 - x0, y1 - y0], 1)[keep]
        np.testing.assert_allclose(got_b, want, atol=1e-9)
        np.testing.assert_array_equal(got_s, ws[keep])
        assert len(got_b) and np.all(got_b[:, 2:] > 0)
    assert dropped_some(plain, imgs, m)


def test_context_detector_finds_the_objects_and_saves(tmp_path):
    imgs, boxes = make_detection_scenes(12, size=(48, 64), side=24, random_state=6)
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


def test_negative_context_is_rejected():
    imgs, boxes = make_detection_scenes(2, size=(48, 64), side=24, random_state=1)
    with pytest.raises(ValueError, match="context"):
        HOGSVMDetector(context=-1.0, **KW).fit(imgs, boxes)
