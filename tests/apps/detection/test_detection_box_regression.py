"""Bounding-box regression of the window detector (``HOGSVMDetector(box_regression=)``,
issue 31 goal b): the offsets and their inverse, the ridge fit against scikit-learn's
Ridge on the same windows (an independent solver), the refined detections against the
refinement written out, save / load, corrupt files."""

from __future__ import annotations

import numpy as np
import pytest
from detection_makers import SMALL_FHOG, small_scenes
from sklearn.linear_model import Ridge

import maxmargin
from maxmargin.apps.detection import HOGPyramid, HOGSVMDetector
from maxmargin.apps.detection.detector import _apply_offsets, _box_offsets, _mirrored
from maxmargin.apps.detection.metrics import nms
from maxmargin.tasks.boxes import pairwise_overlap

KW = SMALL_FHOG


def test_offsets_and_their_inverse():
    rng = np.random.default_rng(0)
    w = np.hstack([rng.uniform(10, 40, (50, 2)), rng.uniform(5, 30, (50, 2))])
    b = np.hstack([rng.uniform(10, 40, (50, 2)), rng.uniform(5, 30, (50, 2))])
    t = _box_offsets(w, b)
    # by hand for one pair: centre shift over the window size, log size ratio
    cw, cb = w[0, :2] + w[0, 2:] / 2, b[0, :2] + b[0, 2:] / 2
    np.testing.assert_allclose(t[0], [*(cb - cw) / w[0, 2:], *np.log(b[0, 2:] / w[0, 2:])])
    # inside a large image nothing is clipped: the inverse gives the boxes back
    np.testing.assert_allclose(_apply_offsets(w, t, (1000, 1000)), b, rtol=1e-12, atol=1e-9)
    # clipped to the image otherwise
    out = _apply_offsets(w, t, (30, 35))
    assert np.all(out[:, :2] >= 0) and np.all(out[:, 0] + out[:, 2] <= 35 + 1e-9)
    assert np.all(out[:, 1] + out[:, 3] <= 30 + 1e-9) and np.all(out[:, 2:] >= 1 - 1e-9)
    # with a margin (windows with context): clipped to the image grown by it
    shift = np.array([10.0, 10.0, 0.0, 0.0])
    w2 = w - 2 * shift  # some reach beyond the top-left corner
    out = _apply_offsets(w2, t, (30, 35), margin=10.0)
    np.testing.assert_allclose(out, _apply_offsets(w2 + shift, t, (50, 55)) - shift, atol=1e-12)
    assert np.any(out[:, :2] < 0) and np.all(out[:, :2] >= -10)


@pytest.mark.parametrize("mirror", [False, True])
def test_ridge_fit_equals_sklearn_ridge_on_the_same_windows(mirror):
    imgs, boxes = small_scenes(5, seed=3)
    pen, ov = 0.01, 0.3
    det = HOGSVMDetector(box_regression=pen, regression_overlap=ov, mirror=mirror, **KW)
    det.fit(imgs, boxes)
    # the training windows written out: every pyramid window overlapping a box by >= ov
    # (and those of the mirrored images), target its best box's offsets
    pairs = list(zip(imgs, boxes))
    if mirror:
        pairs += list(zip(*_mirrored(imgs, boxes)))
    X, T = [], []
    for im, b in pairs:
        pyr = HOGPyramid(im, window=(3, 3), features="fhog", aspect_ratios=(1.0,), scale_step=1.2)
        lv, r, c = pyr.windows()
        wb = pyr.boxes(lv, r, c)
        o = pairwise_overlap(wb, np.asarray(b).reshape(-1, 4))
        sel = o.max(axis=1) >= ov
        X.append(pyr.descriptors(lv[sel], r[sel], c[sel]))
        T.append(_box_offsets(wb[sel], np.asarray(b).reshape(-1, 4)[o[sel].argmax(axis=1)]))
    X, T = np.vstack(X).astype(np.float64), np.vstack(T)
    assert det.n_regression_windows_ == len(X)
    # min 1/n ||X A + a - T||^2 + pen ||A||^2  ==  Ridge(alpha = pen n)
    ref = Ridge(alpha=pen * len(X), fit_intercept=True, solver="cholesky", tol=1e-12).fit(X, T)
    A = det.regression_coef_
    scale = np.abs(T).max()
    np.testing.assert_allclose(A[:-1], ref.coef_.T, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(A[-1], ref.intercept_, rtol=0, atol=1e-6 * scale)


def test_refined_detections_are_the_regressed_windows_after_nms():
    imgs, boxes = small_scenes(6, seed=4)
    det = HOGSVMDetector(box_regression=0.01, regression_overlap=0.3, **KW).fit(imgs, boxes)
    plain = HOGSVMDetector(**KW)
    for a in ("coef_", "intercept_", "distribution_", "n_train_images_"):
        setattr(plain, a, getattr(det, a))
    im = imgs[0]
    got_b, got_s = det.detect(im)
    # written out: every window's score, NMS, each kept window moved by its predicted
    # offsets, NMS again
    pyr = HOGPyramid(im, window=(3, 3), features="fhog", aspect_ratios=(1.0,), scale_step=1.2)
    lv, r, c = pyr.windows()
    X = pyr.descriptors(lv, r, c).astype(np.float64)
    s = X @ det.coef_ + det.intercept_
    wb = pyr.boxes(lv, r, c)
    k = nms(wb, s, det.nms_threshold, max_keep=det.max_detections)
    pb, ps = plain.detect(im)
    np.testing.assert_allclose(pb, wb[k])
    np.testing.assert_allclose(ps, s[k], rtol=1e-9, atol=1e-9)
    A = det.regression_coef_
    out = _apply_offsets(wb[k], X[k] @ A[:-1] + A[-1], im.shape)
    k2 = nms(out, s[k], det.nms_threshold, max_keep=det.max_detections)
    np.testing.assert_allclose(got_b, out[k2], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_s, s[k][k2], rtol=1e-9, atol=1e-9)
    assert not np.allclose(got_b[:1], pb[:1])  # the refinement moved the top box


def test_box_regression_saves_loads_and_rejects_a_corrupt_file(tmp_path):
    imgs, boxes = small_scenes(4, seed=5)
    det = HOGSVMDetector(box_regression=0.01, regression_overlap=0.3, **KW).fit(imgs, boxes)
    maxmargin.save(det, tmp_path / "d.npz")
    back = maxmargin.load(tmp_path / "d.npz")
    np.testing.assert_array_equal(back.regression_coef_, det.regression_coef_)
    for a, b in zip(det.detect(imgs[0]), back.detect(imgs[0])):
        np.testing.assert_array_equal(a, b)
    # the same file without its regression: a clear error, not a silent plain detector
    with np.load(tmp_path / "d.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if not k.endswith("regression_coef")}
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="regression_coef"):
        maxmargin.load(tmp_path / "bad.npz")
