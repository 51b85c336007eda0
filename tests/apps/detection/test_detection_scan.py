"""The compiled scanning kernels (issue 31): HOG equals scikit-image's, the resampling
equals its dense-matrix definition, and the filter scan equals the window-by-window dot
products at every pyramid level."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data as skdata
from skimage.feature import hog

from maxmargin.apps.detection import HOGPyramid, HOGSVMDetector
from maxmargin.apps.detection.scan import correlate, hog_blocks, resize
from maxmargin.datasets import make_detection_scenes

# float32 results of float64 computations that differ only in summation order and in
# sqrt(a^2 + b^2) against hypot: a few float32 ulps at values <= 1 (HOG values are
# L2-Hys normalised, so <= 1): 1e-6 is ~8 ulps.
F32_TOL = 1e-6


@pytest.mark.parametrize("orientations", [9, 7, 6])
@pytest.mark.parametrize("shape", [(37, 53), (64, 64), (16, 40)])
def test_hog_blocks_equal_skimage_on_random_images(shape, orientations):
    rng = np.random.default_rng(0)
    im = rng.random(shape).astype(np.float32)
    ref = hog(
        im,
        orientations=orientations,
        pixels_per_cell=(8, 8),
        cells_per_block=(2, 2),
        feature_vector=False,
    )
    got = hog_blocks(im, 8, 2, orientations)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=F32_TOL)


@pytest.mark.parametrize("colour", [False, True])
def test_hog_blocks_equal_skimage_on_a_photo(colour):
    img = skdata.astronaut()[::3, ::3].astype(np.float32) / 255
    if not colour:
        img = img @ np.array([0.299, 0.587, 0.114], np.float32)
    kw = {"channel_axis": -1} if colour else {}
    for cell, block in ((8, 2), (6, 3)):
        ref = hog(
            img,
            orientations=9,
            pixels_per_cell=(cell, cell),
            cells_per_block=(block, block),
            feature_vector=False,
            **kw,
        )
        np.testing.assert_allclose(hog_blocks(img, cell, block, 9), ref, rtol=0, atol=F32_TOL)


def _tent_matrix(n_in, n_out):
    """Dense resampling matrix: row i holds the tent weights around (i + 1/2) n_in / n_out
    - 1/2 with half-width max(1, n_in / n_out), normalised."""
    f = n_in / n_out
    support = max(1.0, f)
    centre = (np.arange(n_out) + 0.5) * f - 0.5
    w = np.maximum(0.0, 1 - np.abs(np.arange(n_in)[None, :] - centre[:, None]) / support)
    return w / w.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("out_shape", [(20, 31), (45, 33), (13, 9), (80, 100)])
def test_resize_equals_its_dense_matrix_definition(out_shape):
    rng = np.random.default_rng(1)
    img = rng.random((45, 66, 3)).astype(np.float32)
    Ry, Rx = _tent_matrix(45, out_shape[0]), _tent_matrix(66, out_shape[1])
    ref = np.einsum("ij,jkc,lk->ilc", Ry, img.astype(np.float64), Rx)
    got = resize(img, out_shape)
    assert got.shape == (*out_shape, 3)
    # float32 output of float64 sums of <= 1 values: float32 rounding
    np.testing.assert_allclose(got, ref, rtol=0, atol=F32_TOL)
    np.testing.assert_allclose(resize(img[..., 0], out_shape), ref[..., 0], rtol=0, atol=F32_TOL)


def test_correlate_equals_a_loop():
    rng = np.random.default_rng(2)
    G = rng.normal(size=(9, 11, 5)).astype(np.float32)
    W = rng.normal(size=(3, 4, 5))
    got = correlate(G, W)
    ref = np.array(
        [
            [np.sum(G[r : r + 3, c : c + 4].astype(np.float64) * W) for c in range(8)]
            for r in range(7)
        ]
    )
    assert got.shape == (7, 8)
    # float64 sums of 60 products in different orders: <= 60 eps |terms|
    bound = 60 * np.finfo(np.float64).eps * np.abs(G).max() * np.abs(W).sum()
    np.testing.assert_allclose(got, ref, rtol=0, atol=bound)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"aspect_ratios": (0.7, 1.0, 1.4)},
        {"channels": True, "channel_cells": (1, 2)},
        {"engine": "skimage", "colour": True},
    ],
)
def test_filter_scan_equals_window_dot_products_at_every_level(kw):
    img = skdata.astronaut()[::4, ::4]
    pyr = HOGPyramid(img, window=(5, 4), **kw)
    assert len(pyr.levels) >= 3
    w = np.random.default_rng(3).normal(size=pyr.n_features)
    for k in range(len(pyr.levels)):
        nr, nc = pyr.positions(k)
        r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
        X = pyr.descriptors(np.full(r.size, k), r.ravel(), c.ravel()).astype(np.float64)
        ref = (X @ w).reshape(nr, nc)
        got = pyr.filter_scores(k, w)
        bound = X.shape[1] * np.finfo(np.float64).eps * (np.abs(X) @ np.abs(w)).max()
        np.testing.assert_allclose(got, ref, rtol=0, atol=bound)
    lv, r, c = pyr.windows()
    X = pyr.descriptors(lv, r, c).astype(np.float64)
    np.testing.assert_allclose(pyr.scan_scores(w), X @ w, rtol=0, atol=1e-9)


@pytest.mark.parametrize("aspect", [0.8, 1.0, 1.25])
def test_numba_pyramid_levels_equal_skimage_hog_of_the_resized_image(aspect):
    from maxmargin.apps.detection.features import to_float

    img = skdata.astronaut()[::4, ::4]
    pyr = HOGPyramid(img, window=(4, 4), aspect_ratios=(aspect,))
    assert len(pyr.levels) >= 3
    g = to_float(img, colour=False)
    H, W = g.shape
    src = g
    for (sx, sy), lev in zip(pyr.scales, pyr.levels):
        # each level is resampled from the one before it (the first from the image)
        target = (round(H * sy), round(W * sx))
        if target != src.shape:
            src = resize(src, target)
        ref = hog(
            src,
            orientations=9,
            pixels_per_cell=(8, 8),
            cells_per_block=(2, 2),
            feature_vector=False,
        )
        np.testing.assert_allclose(lev, ref, rtol=0, atol=F32_TOL)


@pytest.mark.parametrize("prior", [False, True])
def test_detector_scan_equals_scoring_gathered_windows(prior):
    images, boxes = make_detection_scenes(6, random_state=0)
    det = HOGSVMDetector(
        window=(3, 3), C=0.1, location_prior=prior, random_state=0, max_rounds=3
    ).fit(images, boxes)
    for im in images[:3]:
        pyr = det._pyramid(im)
        lv, r, c = pyr.windows()
        prior_col = det._prior(pyr, pyr.boxes(lv, r, c))
        ref = det._score_windows(pyr, lv, r, c, prior=prior_col)
        got = det._scan(pyr, lv, r, c, prior=prior_col)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9)


def test_engine_is_checked():
    with pytest.raises(ValueError, match="engine"):
        HOGPyramid(np.zeros((40, 40)), window=(3, 3), engine="fast")


@pytest.mark.parametrize(
    "kw",
    [
        {"channels": True, "channel_cells": (1, 2), "location_prior": True, "chain": True},
        {"channels": False, "location_prior": False, "stage_learner": "lacboost"},
    ],
)
def test_compiled_cascade_scan_equals_the_cascade_on_gathered_windows(kw):
    from maxmargin.apps.detection import CascadeDetector

    images, boxes = make_detection_scenes(8, random_state=1)
    det = CascadeDetector(
        window=(3, 3), n_stages=3, max_weak=(2, 4), n_negatives=1000, random_state=0, **kw
    ).fit(images, boxes)
    for im in images[:3]:
        pyr = det._pyramid(im)
        lv, r, c = pyr.windows()
        prior_col = det._prior(pyr, pyr.boxes(lv, r, c))
        ref = det._score_windows(pyr, lv, r, c, prior=prior_col)
        got = det._scan(pyr, lv, r, c, prior=prior_col)
        # the same stumps on the same float32 feature values, summed in the same order
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
        # the weak classifiers evaluated: a direct count from the stages each window
        # entered, as figure_of_merit counts them
        X = det._describe(pyr, lv, r, c, prior=prior_col).astype(np.float64)
        fom = det.cascade_.figure_of_merit(X)
        assert det.last_scan_weak_ == round(fom["expected_weak"] * len(X))


@pytest.mark.parametrize(
    "kw",
    [
        {"features": "fhog", "channels": False, "location_prior": False},
        {"features": "fhog", "channels": False, "location_prior": True, "chain": True},
        {"features": "fhog", "channels": True, "location_prior": True},
        {"features": "hog", "channels": False, "location_prior": True},
    ],
)
def test_cascade_scan_equals_the_window_by_window_walk_at_every_level(kw):
    """Brute force, level by level: every window's descriptor gathered and walked through
    the stages one window at a time (``BoostedCascade._walk``) against the compiled
    scan over the level's grids -- the same float32 feature values compared with the
    same thresholds and summed in the same order, so equal bit for bit: depth, margin,
    score and the count of weak classifiers (the stages each window entered)."""
    from maxmargin import BoostedCascade
    from maxmargin.apps.detection import CascadeDetector

    images, boxes = make_detection_scenes(8, random_state=1)
    det = CascadeDetector(
        window=(3, 3),
        n_stages=3,
        max_weak=(2, 4),
        n_negatives=1000,
        aspect_ratios=(0.8, 1.25),
        scale_step=1.2,
        random_state=0,
        **kw,
    ).fit(images, boxes)
    cas = det.cascade_
    if kw["location_prior"]:
        # these scenes do not need the prior, so the boosting need not pick it: the
        # first stump of every stage is made to read it (the last column), split at the
        # median prior of the first image's windows -- the scan must still equal the walk
        pyr = det._pyramid(images[0])
        med = float(np.median(det._prior_map(pyr, 0)))
        for st in cas.stumps_:
            st.feature[0], st.threshold[0] = cas.n_features_in_ - 1, med
    layout, _ = det._compiled_cascade(det._pyramid(images[0]))
    assert (layout[0] < 0).any() == kw["location_prior"]  # stumps on the prior
    assert (layout[0] > 0).any() == kw["channels"]  # stumps on a channel grid
    varied = 0
    for im in images[:2]:
        pyr = det._pyramid(im)
        assert len(pyr.levels) >= 4
        for k in range(len(pyr.levels)):
            nr, nc = pyr.positions(k)
            if nr <= 0 or nc <= 0:
                continue
            pm = det._prior_map(pyr, k)
            depth, margin, n_eval, score = det._level_walk(pyr, k, pm)
            r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
            lv = np.full(r.size, k)
            X = det._describe(
                pyr, lv, r.ravel(), c.ravel(), prior=None if pm is None else pm.ravel()
            )
            X = X.astype(np.float64)
            d_ref = np.empty(len(X), dtype=np.int64)
            m_ref = np.empty(len(X))
            for i in range(len(X)):  # one window at a time
                d, m, _ = BoostedCascade._walk(
                    cas.stumps_, cas.thresholds_, X[i : i + 1], cas.chain_
                )
                d_ref[i], m_ref[i] = d[0], m[0]
            np.testing.assert_array_equal(depth.ravel(), d_ref)
            np.testing.assert_array_equal(margin.ravel(), m_ref)
            # the score is sigmoid(margin) (+ d - K) by the same formula, but the compiled
            # tanh (libm) and NumPy's may differ by an ulp each (|tanh| <= 1): <= 2 eps
            # apart, halved by the sigmoid, then d - K (|.| <= K) added: one more
            # rounding of a value <= K
            K = len(cas.stumps_)
            bound = (1.0 + K) * np.finfo(np.float64).eps
            np.testing.assert_allclose(score.ravel(), cas.decision_function(X), rtol=0, atol=bound)
            n_weak = np.array([len(st) for st in cas.stumps_])
            entered = np.minimum(d_ref + 1, len(n_weak))  # stages each window entered
            assert n_eval == int(np.cumsum(n_weak)[entered - 1].sum())
            varied += int(np.any(np.diff(d_ref) != 0))
    # the test must exercise windows that leave at different stages
    assert varied > 0


def test_box_log_density_equals_the_dense_formula():
    from maxmargin.apps.detection import BoxDistribution
    from maxmargin.apps.detection.windows import _params

    rng = np.random.default_rng(0)
    tb = [rng.uniform(5, 60, (2, 4)) for _ in range(30)]
    d = BoxDistribution().fit(tb, [(100, 120)] * 30)
    b = rng.uniform(1, 80, (500, 4))
    got = d.log_density(b, (100, 120))
    q = _params(b, np.tile([100.0, 120.0], (500, 1)))
    e = -0.5 * (((q[:, None, :] - d.params_[None]) / d.scale_) ** 2).sum(axis=2)
    m = e.max(axis=1, keepdims=True)
    ref = m[:, 0] + np.log(np.exp(e - m).mean(axis=1))
    # sums of 60 terms in another order, then a log: a few hundred float64 epsilons
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


def test_files_from_before_the_compiled_pyramid_load_with_scikit_image(tmp_path):
    import maxmargin

    images, boxes = make_detection_scenes(6, random_state=0)
    kw = dict(window=(3, 3), C=0.1, location_prior=False, random_state=0, max_rounds=3)
    d = HOGSVMDetector(hog_engine="skimage", **kw).fit(images, boxes)
    meta, arrays = d._get_state()
    del meta["params"]["hog_engine"], meta["params"]["mirror"], meta["params"]["nms_cover"]
    old = HOGSVMDetector._from_state(meta, arrays)
    assert old.hog_engine == "skimage" and not old.mirror and old.nms_cover is None
    b0, s0 = old.detect(images[0])
    b1, s1 = d.detect(images[0])
    np.testing.assert_array_equal(b0, b1)
    np.testing.assert_array_equal(s0, s1)
    # a new file keeps the engine and the options
    m = HOGSVMDetector(mirror=True, nms_cover=0.8, **kw).fit(images, boxes)
    back = maxmargin.load(maxmargin.save(m, tmp_path / "m.npz"))
    assert back.hog_engine == "numba" and back.mirror and back.nms_cover == 0.8
    np.testing.assert_array_equal(back.detect(images[1])[1], m.detect(images[1])[1])
    # mirrored positives: those of the images plus those of their mirror images (the
    # cell grid of a mirror image need not mirror the original's, so not exactly twice)
    plain = HOGSVMDetector(**kw).fit(images, boxes)
    fimgs = [np.ascontiguousarray(np.asarray(im)[:, ::-1]) for im in images]
    fboxes = [
        np.c_[im.shape[1] - b[:, 0] - b[:, 2], b[:, 1:]]
        for im, b in zip(fimgs, (np.asarray(b, float).reshape(-1, 4) for b in boxes))
    ]
    flipped = HOGSVMDetector(**kw).fit(fimgs, fboxes)
    assert m.n_positives_ == plain.n_positives_ + flipped.n_positives_


def _channels_reference(img, cell, n_or):
    """channel_grid in NumPy and scikit-image, float64 throughout: numpy.gradient of the
    BT.601 grey image, arctan2 binning, skimage.color.rgb2luv, reshape-mean per cell."""
    from skimage.color import rgb2luv

    img = np.asarray(img, np.float64)
    grey = img @ np.array([0.299, 0.587, 0.114]) if img.ndim == 3 else img
    H, W = grey.shape
    Hc, Wc = H // cell, W // cell
    gy, gx = np.gradient(grey)
    mag = np.hypot(gx, gy)
    ang = np.mod(np.arctan2(gy, gx), np.pi)
    b = np.minimum((ang * (n_or / np.pi)).astype(np.int64), n_or - 1)
    ch = np.zeros((H, W, n_or))
    np.put_along_axis(ch, b[..., None], mag[..., None], axis=2)
    rgb = img if img.ndim == 3 else np.repeat(img[..., None], 3, axis=2)
    luv = rgb2luv(np.clip(rgb, 0, 1))
    col = luv * np.array([1 / 100, 1 / 270, 1 / 270]) + np.array([0, 100 / 270, 140 / 270])
    allc = np.concatenate([mag[..., None], ch, col], axis=2)[: Hc * cell, : Wc * cell]
    return allc.reshape(Hc, cell, Wc, cell, -1).mean(axis=(1, 3))


@pytest.mark.parametrize("which", ["random colour", "random grey", "photo"])
def test_compiled_channels_equal_numpy_and_skimage(which):
    from maxmargin.apps.detection.features import channel_grid
    from maxmargin.apps.detection.scan import channel_cells

    rng = np.random.default_rng(4)
    img = {
        "random colour": rng.random((37, 53, 3)),
        "random grey": rng.random((40, 30)),
        "photo": skdata.astronaut()[::3, ::3] / 255.0,
    }[which].astype(np.float32)
    ref = _channels_reference(img, 8, 6)
    for got in (channel_cells(img, 8, 6), channel_grid(img, 8, 6)):
        assert got.shape == ref.shape and got.dtype == np.float32
        # the same float64 formulas summed in another order (differences ~1e-15), then
        # rounded to float32 (relative error <= 2^-24): within 2^-23 relative
        np.testing.assert_allclose(got, ref, rtol=2.0**-23, atol=1e-12)


def test_grid_prior_equals_the_log_density_of_the_window_boxes():
    images, boxes = make_detection_scenes(6, random_state=0)
    det = HOGSVMDetector(window=(3, 3), C=0.1, location_prior=True, max_rounds=2).fit(images, boxes)
    pyr = det._pyramid(images[0])
    for k in range(len(pyr.levels)):
        nr, nc = pyr.positions(k)
        r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
        b = pyr.boxes(np.full(r.size, k), r.ravel(), c.ravel())
        ref = det.distribution_.log_density(b, pyr.image_shape).reshape(nr, nc)
        got = det.distribution_.grid_log_density(
            pyr.image_shape, pyr.cell, *pyr.scales[k], pyr.window, nr, nc
        )
        # sums of <= 60 positive terms in another order, then a log: float64 rounding
        # relative to the density, absolute after the log
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
        # the prior feature (clipped, / 10, float32): at most one float32 rounding apart
        pm = det._prior_map(pyr, k)
        np.testing.assert_allclose(pm, det._prior(pyr, b).reshape(nr, nc), rtol=2.0**-23, atol=0)


@pytest.mark.parametrize("prior", [False, True])
def test_detect_equals_nms_of_the_gathered_window_scores(prior):
    from maxmargin.apps.detection.metrics import nms

    images, boxes = make_detection_scenes(6, random_state=2)
    det = HOGSVMDetector(
        window=(3, 3), C=0.1, location_prior=prior, random_state=0, max_rounds=3
    ).fit(images, boxes)
    for im in images[:3]:
        pyr = det._pyramid(im)
        lv, r, c = pyr.windows()
        b = pyr.boxes(lv, r, c)
        s = det._score_windows(pyr, lv, r, c, prior=det._prior(pyr, b))
        keep = nms(b, s, det.nms_threshold, max_keep=det.max_detections)
        got_b, got_s = det.detect(im)
        np.testing.assert_array_equal(got_b, b[keep])
        # gathered descriptors against the correlation: float64 sums in another order
        np.testing.assert_allclose(got_s, s[keep], rtol=0, atol=1e-9)


def test_cascade_detect_counts_the_weak_classifiers_it_evaluates():
    from maxmargin.apps.detection import CascadeDetector

    images, boxes = make_detection_scenes(8, random_state=1)
    det = CascadeDetector(
        window=(3, 3), n_stages=3, max_weak=(2, 4), n_negatives=1000, random_state=0
    ).fit(images, boxes)  # the defaults: channels and the location prior
    for im in images[:3]:
        _, got_s = det.detect(im)
        pyr = det._pyramid(im)
        lv, r, c = pyr.windows()
        b = pyr.boxes(lv, r, c)
        X = det._describe(pyr, lv, r, c, prior=det._prior(pyr, b)).astype(np.float64)
        # a direct count: the weak classifiers of every stage each window entered
        fom = det.cascade_.figure_of_merit(X)
        assert det.last_scan_weak_ == round(fom["expected_weak"] * len(X))
        s = det.cascade_.decision_function(X)
        keep = s > det.score_threshold
        assert len(got_s) <= keep.sum()
        np.testing.assert_array_equal(np.sort(got_s)[::-1], got_s)
