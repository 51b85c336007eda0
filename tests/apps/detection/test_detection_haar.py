"""Haar-like features, the compiled Haar cascade scan and the face detector (issue 31)."""

from __future__ import annotations

import numpy as np
import pytest
from detection_makers import _face, _scene
from sklearn.base import clone

from maxmargin import BoostedCascade
from maxmargin.apps.detection.haar import (
    HaarCascadeDetector,
    HaarFeatures,
    compile_cascade,
    haar_cascade_scan,
    haar_table,
    integral_images,
    window_std_map,
)
from maxmargin.apps.detection.scan import resize
from maxmargin.tasks.boxes import pairwise_overlap


def _brute(win, rects):
    """Feature values of one window by summing its pixels rectangle by rectangle."""
    w = np.asarray(win, dtype=np.float64)
    sd = max(w.std(), 1.0 / 255.0)
    out = np.zeros(len(rects))
    for f, rs in enumerate(rects):
        for x, y, rw, rh, wt in rs:
            if wt:
                out[f] += wt * w[y : y + rh, x : x + rw].sum()
    return out / (w.size * sd)


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    faces = np.stack([_face(rng) for _ in range(300)])
    negs = [_scene(rng) for _ in range(30)]
    casc = BoostedCascade(n_stages=4, target_recall=0.95, target_far=1e-3, max_weak=(2, 5, 10, 20))
    det = HaarCascadeDetector(
        cascade=casc, n_features=300, n_negatives=400, random_state=0, keep_negatives=True
    )
    return det.fit(faces, negs), rng


def test_table_has_viola_jones_count():
    # Viola & Jones' 24 x 24 window: 162,336 features of the five types
    assert len(haar_table(24)) == 162336
    t = haar_table(8, types=("edge_h",))
    # edge_h of width 2u, height v: (8 - 2u + 1)(8 - v + 1) positions
    assert len(t) == sum((9 - 2 * u) * (9 - v) for u in range(1, 5) for v in range(1, 9))
    with pytest.raises(ValueError, match="unknown Haar type"):
        haar_table(24, types=("nope",))


def test_compiled_features_equal_brute_force_pixel_sums():
    rng = np.random.default_rng(1)
    img = rng.random((50, 61)).astype(np.float32)
    img[10:40, 30:55] = 0.5  # a flat patch: the std floor
    hf = HaarFeatures(24, n_features=800, random_state=0)
    II = integral_images(img)
    ys, xs = np.array([0, 7, 26, 12]), np.array([0, 11, 37, 31])
    F = hf.windows(II, ys, xs)
    crops = np.stack([img[y : y + 24, x : x + 24] for y, x in zip(ys, xs)])
    for k in range(len(ys)):
        B = _brute(crops[k], hf.rects)
        # float32 output (half an ulp, 2^-24 relative) plus float64 sums (far smaller)
        np.testing.assert_allclose(F[k], B, rtol=2.0**-23, atol=1e-9)
    # window-size crops, one integral image each: the same features
    np.testing.assert_allclose(hf.transform(crops), F, rtol=2.0**-23, atol=1e-9)
    # uint8 crops are scaled to [0, 1]
    u8 = (crops * 255).round().astype(np.uint8)
    np.testing.assert_allclose(
        hf.transform(u8), hf.transform(u8.astype(np.float32) / 255), rtol=1e-6, atol=1e-7
    )
    with pytest.raises(ValueError, match="outside"):
        hf.windows(II, [27], [0])
    with pytest.raises(ValueError, match="crops must have shape"):
        hf.transform(np.zeros((2, 20, 20)))


def test_features_ignore_brightness_and_contrast():
    rng = np.random.default_rng(2)
    crops = rng.random((5, 24, 24)).astype(np.float32) * 0.5
    hf = HaarFeatures(24, n_features=500, random_state=1)
    a, b = hf.transform(crops), hf.transform(crops * 1.5 + 0.2)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_from_rects_checks_the_window():
    hf = HaarFeatures(24, n_features=10, random_state=0)
    assert HaarFeatures.from_rects(hf.rects, 24).n_features == 10
    with pytest.raises(ValueError, match="outside"):
        HaarFeatures.from_rects(hf.rects, 8)


def test_figure_of_merit_equals_direct_count(fitted):
    det, rng = fitted
    cas = det.cascade_
    assert cas.n_stages_ >= 2
    img = _scene(rng, 70, 90)
    img[21:45, 30:54] = _face(rng)  # on the stride-3 grid
    II = integral_images(img)
    stages = compile_cascade(cas)
    depth, margin, n_eval = haar_cascade_scan(II, det.features_, stages, stride=3)
    r, c = np.mgrid[0 : depth.shape[0], 0 : depth.shape[1]]
    X = det.features_.windows(II, r.ravel() * 3, c.ravel() * 3).astype(np.float64)
    # a direct count: every window through the stages one by one, adding each stage's
    # weak classifiers until one rejects it
    direct = 0
    for x in X:
        F = 0.0
        for st, thr in zip(cas.stumps_, cas.thresholds_):
            direct += len(st)
            s = float(st.evaluate(x[None]).sum())
            F = F + s if cas.chain_ else s
            if not F > thr:
                break
    assert (depth >= 2).any()  # windows reach the later stages
    assert n_eval == direct
    fom = cas.figure_of_merit(X)
    assert fom["expected_weak"] * len(X) == pytest.approx(direct, rel=1e-12)
    # the compiled scan decides as the cascade does on the gathered features
    d2, m2, _ = cas._walk(cas.stumps_, cas.thresholds_, X, cas.chain_)
    np.testing.assert_array_equal(depth.ravel(), d2)
    np.testing.assert_array_equal(margin.ravel(), m2)


def test_contrast_prefilter_rejects_flat_windows_for_free(fitted):
    import copy

    fit0, rng = fitted
    assert fit0.min_std_ == 0.0  # off by default
    faces = np.stack([_face(np.random.default_rng(0)) for _ in range(300)])
    fs = faces.reshape(300, -1).astype(np.float64).std(axis=1)
    small = HaarCascadeDetector(
        contrast_quantile=0.01, n_features=20, n_negatives=40,
        cascade=BoostedCascade(n_stages=1, max_weak=2),
    ).fit(faces, [_scene(rng)])  # fmt: skip
    # min_std_ is the contrast_quantile of the training faces' std
    assert small.min_std_ == pytest.approx(np.quantile(fs, 0.01), rel=1e-9)
    assert (fs < small.min_std_).sum() <= 3
    det = copy.copy(fit0)
    det.min_std_ = float(np.quantile(fs, 0.01))
    cas = det.cascade_
    img = _scene(rng, 70, 90)
    img[5:50, 10:60] = 0.5 + rng.normal(0, 0.002, (45, 50)).astype(np.float32)  # flat wall
    II = integral_images(img)
    sd = window_std_map(II, 24, 3)
    r, c = np.mgrid[0 : sd.shape[0], 0 : sd.shape[1]]
    brute = np.array([img[y : y + 24, x : x + 24].astype(np.float64).std() for y, x in
                      zip(r.ravel() * 3, c.ravel() * 3)])  # fmt: skip
    np.testing.assert_allclose(sd.ravel(), brute, atol=1e-9)
    flat = sd < det.min_std_
    assert flat.any() and (~flat).any()
    stages = compile_cascade(cas)
    d0, m0, n0 = haar_cascade_scan(II, det.features_, stages, 3)
    d1, m1, n1 = haar_cascade_scan(II, det.features_, stages, 3, det.min_std_)
    # filtered windows: depth 0, margin -inf, nothing evaluated; the others unchanged
    assert (d1[flat] == 0).all() and np.isneginf(m1[flat]).all()
    np.testing.assert_array_equal(d1[~flat], d0[~flat])
    np.testing.assert_array_equal(m1[~flat], m0[~flat])
    ptr = stages[4]
    per_window = ptr[np.minimum(d0 + 1, cas.n_stages_)]  # weak classifiers each evaluates
    assert n0 == per_window.sum() and n1 == per_window[~flat].sum()
    # the crop scores apply the same filter
    crops = np.stack([np.full((24, 24), 0.4, np.float32), faces[0]])
    sc = det.decision_function(crops)
    assert sc[0] == -cas.n_stages_ and sc[1] > -cas.n_stages_
    with pytest.raises(ValueError, match="min_std"):
        haar_cascade_scan(II, det.features_, stages, 3, -1.0)


def test_detector_finds_the_planted_face(fitted):
    det, rng = fitted
    img = _scene(rng, 120, 130)
    img[40:76, 50:86] = resize(_face(rng), (36, 36))  # a face at 1.5x the window
    boxes, scores = det.detect(img)
    assert len(boxes) >= 1
    assert np.all(np.diff(scores) <= 0)
    # window sizes 24, 30, 37.5 px at the levels: 30 (IoU 0.69) or 37.5 must win
    assert pairwise_overlap(boxes[:1], np.array([[50, 40, 36, 36]]))[0, 0] >= 0.6
    assert det.last_scan_["windows"] > 0
    # scan() gives every window; the accepted ones are those with positive scores
    _, s, d, ne = det.scan(img)
    assert ne == det.last_scan_["weak_evaluated"]
    np.testing.assert_array_equal(s > 0, d == det.cascade_.n_stages_)


def test_detector_bookkeeping_and_params(fitted):
    det, _ = fitted
    assert det.n_bootstrapped_ > 0
    assert det.negatives_.shape[1] == det.features_.n_features == 300
    p = det.get_params()
    assert isinstance(p["cascade"], BoostedCascade) and p["cascade__n_stages"] == 4
    c = clone(det).set_params(cascade__rule="fixed", stride=3)
    assert c.cascade.rule == "fixed" and c.stride == 3 and det.cascade.rule == "two-point"
    rng = np.random.default_rng(5)
    crops = np.stack([_face(rng) for _ in range(20)])
    assert (det.decision_function(crops) > 0).mean() >= 0.8


def test_detector_rejects_bad_input():
    rng = np.random.default_rng(3)
    det = HaarCascadeDetector(n_features=50)
    negs = [_scene(rng)]
    with pytest.raises(ValueError, match="faces must be"):
        det.fit(np.zeros((5, 20, 20)), negs)
    with pytest.raises(ValueError, match="empty"):
        det.fit(np.zeros((5, 24, 24)), [])
    with pytest.raises(ValueError, match="no 24 x 24 window"):
        det.fit(np.zeros((5, 24, 24)), [np.zeros((10, 10))])
    with pytest.raises(ValueError):
        HaarCascadeDetector(stride=0).fit(np.zeros((5, 24, 24)), negs)


def test_save_load_and_cli_draw_boxes(fitted, tmp_path, capsys):
    import json

    import imageio.v3 as iio

    from maxmargin.cli import main
    from maxmargin.io import load, save

    det, rng = fitted
    m = save(det, tmp_path / "face.npz")
    back = load(m)
    assert isinstance(back, HaarCascadeDetector) and back.get_params()["cascade__n_stages"] == 4
    img = _scene(rng, 120, 130)
    img[40:76, 50:86] = resize(_face(rng), (36, 36))
    b0, s0 = det.detect(img)
    b1, s1 = back.detect(img)
    np.testing.assert_array_equal(b0, b1)
    np.testing.assert_array_equal(s0, s1)
    assert back.min_std_ == det.min_std_
    # maxmargin detect predict draws a saved face cascade's boxes
    iio.imwrite(tmp_path / "photo.png", (img * 255).round().astype(np.uint8))
    out = tmp_path / "out"
    assert main(["detect", "predict", str(m), str(tmp_path / "photo.png"), "-o", str(out)]) == 0
    capsys.readouterr()
    rows = np.loadtxt(out / "photo_boxes.txt", ndmin=2)
    assert len(rows) >= 1 and (out / "photo_boxes.png").stat().st_size > 0
    assert pairwise_overlap(rows[:1, :4], np.array([[50, 40, 36, 36]]))[0, 0] >= 0.6
    # a model file whose cascade reads other features than it holds is refused
    meta, arrays = det._get_state()
    arrays["rects"] = arrays["rects"][:10]
    with pytest.raises(ValueError, match="inconsistent"):
        HaarCascadeDetector._from_state(json.loads(json.dumps(meta)), arrays)


def test_groups_hold_out_whole_groups(monkeypatch):
    rng = np.random.default_rng(4)
    faces = np.stack([_face(rng) for _ in range(80)])
    groups = np.repeat(np.arange(16), 5)
    seen = {}
    orig = BoostedCascade.fit

    def spy(self, X, y, validation_mask=None, negatives=None):
        seen["mask"] = validation_mask[: len(faces)].copy()
        return orig(self, X, y, validation_mask=validation_mask, negatives=negatives)

    monkeypatch.setattr(BoostedCascade, "fit", spy)
    casc = BoostedCascade(n_stages=1, max_weak=2)
    det = HaarCascadeDetector(cascade=casc, n_features=40, n_negatives=60, random_state=0)
    det.fit(faces, [_scene(rng) for _ in range(8)], groups=groups)
    held = seen["mask"]
    assert held.sum() == 4 * 5  # a quarter of the 16 groups, all 5 faces of each
    for g in range(16):
        assert held[groups == g].all() or not held[groups == g].any()
    with pytest.raises(ValueError, match="one label per face"):
        det.fit(faces, [_scene(rng)], groups=groups[:-1])


def test_incremental_bootstrap_scan_equals_the_full_scan(fitted):
    # the bootstrapping's scan keeps the windows alive from one stage to the next and runs
    # only the new stage on them: after every stage, exactly the windows the full compiled
    # scan accepts, and over the stages exactly the weak classifiers it evaluates
    from maxmargin.apps.detection.haar import _IncrementalScan, _Partial

    det, rng = fitted
    cas = det.cascade_
    K = cas.n_stages_
    assert K >= 2
    imgs = [_scene(rng, 60, 75), _scene(rng, 50, 50)]
    imgs[0][10:34, 20:44] = _face(rng)
    IIs = [integral_images(im) for im in imgs]
    shapes = [window_std_map(II, 24, 2).shape for II in IIs]
    min_std = 0.05
    inc = _IncrementalScan(lambda q: IIs[q], shapes, det.features_, 2, min_std)
    for k in range(1, K + 1):
        part = _Partial(cas.stumps_[:k], cas.thresholds_[:k], cas.chain_)
        alive = inc.update(compile_cascade(part))
        n_full = 0
        for q, II in enumerate(IIs):
            depth, _, ne = haar_cascade_scan(II, det.features_, compile_cascade(part), 2, min_std)
            np.testing.assert_array_equal(alive[q], np.flatnonzero(depth.ravel() == k))
            n_full += ne
        if k == K:  # the last full scan evaluates what the increments did in all
            assert inc.n_evaluated == n_full
    assert sum(len(a) for a in alive) >= 1  # the planted face passes
    # stages that do not extend the ones seen (here: fewer of them): a scan from scratch
    part = _Partial(cas.stumps_[:1], cas.thresholds_[:1], cas.chain_)
    alive = inc.update(compile_cascade(part))
    depth, _, _ = haar_cascade_scan(IIs[1], det.features_, compile_cascade(part), 2, min_std)
    np.testing.assert_array_equal(alive[1], np.flatnonzero(depth.ravel() == 1))
