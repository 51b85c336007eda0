"""The extent filter of a detector with context (``HOGSVMDetector(context=, extent=)``,
issue 31 goal b): the context filter proposes, a second filter at the object's own
extent re-places and re-scores every detection.  The filter against a plain detector
fitted on the same boxes, the re-scoring against a brute force over every window of the
extent filter's pyramid (window-by-window dot products, overlaps written out here),
the corner cases (weight 0, no candidate window), save / load and the checks."""

from __future__ import annotations

import numpy as np
import pytest
from detection_makers import SMALL_FHOG, iou, small_scenes

import maxmargin
from maxmargin.apps.detection import HOGSVMDetector, nms

KW = SMALL_FHOG
CTX = 1.0


def brute_force(det, image):
    """The re-scored detections by loops: the context detections, then per detection
    every window of the extent filter's pyramid, its descriptor dotted with the filter."""
    e = det.extent_
    saved, det.extent_ = det.extent_, None
    b, s = det.detect(image)  # the context filter's detections, shrunk back
    det.extent_ = saved
    pyr = e._pyramid(image)
    lv, r, c = pyr.windows()
    wb = pyr.boxes(lv, r, c)
    ws = np.array(
        [
            float(pyr.descriptors(lv[i : i + 1], r[i : i + 1], c[i : i + 1])[0] @ e.coef_)
            + e.intercept_
            for i in range(len(lv))
        ]
    )
    out_b, out_s = [], []
    for box, score in zip(b, s):
        best, at = -np.inf, None
        for i in range(len(wb)):
            if iou(box, wb[i]) >= det.extent_overlap and ws[i] > best:
                best, at = ws[i], i
        if at is None:
            out_b.append(box)
            out_s.append(score + det.extent_weight * ws.min())
        else:
            out_b.append(wb[at])
            out_s.append(score + det.extent_weight * best)
    out_b, out_s = np.array(out_b).reshape(-1, 4), np.array(out_s)
    k = nms(out_b, out_s, det.nms_threshold, max_keep=det.max_detections)
    return out_b[k], out_s[k], b, s


@pytest.fixture(scope="module")
def fitted():
    imgs, boxes = small_scenes(8, seed=5)
    det = HOGSVMDetector(context=CTX, extent={}, **KW).fit(imgs[:6], boxes[:6])
    return det, imgs, boxes


def test_the_extent_filter_is_the_plain_detector_on_the_same_boxes(fitted):
    det, imgs, boxes = fitted
    plain = HOGSVMDetector(**KW).fit(imgs[:6], boxes[:6])
    np.testing.assert_array_equal(det.extent_.coef_, plain.coef_)
    assert det.extent_.intercept_ == plain.intercept_
    assert det.extent_.context == 0.0 and det.extent_.extent is None
    # its settings updated by the dict
    d2 = HOGSVMDetector(context=CTX, extent={"neg_overlap": 0.5, "C": 1.0}, **KW)
    p = d2._extent_params()
    assert p["neg_overlap"] == 0.5 and p["C"] == 1.0 and p["context"] == 0.0
    assert p["box_regression"] is None and p["window"] == KW["window"]


@pytest.mark.parametrize("weight, overlap", [(1.0, 0.5), (0.5, 0.3), (2.0, 0.7)])
def test_rescoring_equals_the_brute_force(fitted, weight, overlap):
    det, imgs, _ = fitted
    det = det.set_params(extent_weight=weight, extent_overlap=overlap)
    moved = 0
    for im in imgs[6:]:
        want_b, want_s, b0, _ = brute_force(det, im)
        got_b, got_s = det.detect(im)
        np.testing.assert_allclose(got_b, want_b, atol=1e-9)
        # the extent scores: compiled correlation against float64 dot products of the
        # float32 descriptors; bound: the descriptor length times float32's epsilon
        np.testing.assert_allclose(got_s, want_s, rtol=0, atol=1e-4 * np.abs(want_s).max())
        moved += int(len(b0) and not np.allclose(got_b[: len(b0)], b0[: len(got_b)]))
    assert moved > 0, "the extent filter re-placed no box: the test sees nothing"
    det.set_params(extent_weight=1.0, extent_overlap=0.5)


def test_weight_zero_keeps_the_ranking_and_no_candidate_keeps_the_box(fitted):
    det, imgs, _ = fitted
    im = imgs[6]
    saved, det.extent_ = det.extent_, None
    b0, s0 = det.detect(im)
    det.extent_ = saved
    # weight 0: the context filter's scores (the same ranking, NMS may drop boxes that
    # became duplicates)
    det.set_params(extent_weight=0.0)
    b, s = det.detect(im)
    assert set(np.round(s, 12)) <= set(np.round(s0, 12))
    np.testing.assert_array_equal(s, np.sort(s)[::-1])
    # an overlap of 1 that no window reaches: every box kept, every score shifted by
    # the image's lowest extent score
    det.set_params(extent_weight=1.0, extent_overlap=1.0)
    pyr = det.extent_._pyramid(im)
    lv, r, c = pyr.windows()
    low = det.extent_._scan(pyr, lv, r, c).min()
    b, s = det.detect(im)
    k = nms(b0, s0 + low, det.nms_threshold, max_keep=det.max_detections)
    np.testing.assert_allclose(b, b0[k], atol=0)
    np.testing.assert_allclose(s, (s0 + low)[k], rtol=1e-12)
    det.set_params(extent_weight=1.0, extent_overlap=0.5)


def test_save_load_keeps_the_extent_filter(fitted, tmp_path):
    det, imgs, _ = fitted
    maxmargin.save(det, tmp_path / "d.npz")
    back = maxmargin.load(tmp_path / "d.npz")
    assert back.extent_ is not None and back.extent == {}
    np.testing.assert_array_equal(back.extent_.coef_, det.extent_.coef_)
    for a, b in zip(det.detect(imgs[7]), back.detect(imgs[7])):
        np.testing.assert_array_equal(a, b)


def test_extent_needs_context_and_known_parameters():
    imgs, boxes = small_scenes(3, seed=1)
    with pytest.raises(ValueError, match="context"):
        HOGSVMDetector(extent={}, **KW).fit(imgs, boxes)
    with pytest.raises(ValueError, match="not a HOGSVMDetector parameter"):
        HOGSVMDetector(context=CTX, extent={"bogus": 1}, **KW).fit(imgs, boxes)
    with pytest.raises(ValueError, match="no context"):
        HOGSVMDetector(context=CTX, extent={"context": 1.0}, **KW).fit(imgs, boxes)
