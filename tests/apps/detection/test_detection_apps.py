"""Detectors and the proposal ranker (issue 13) on tiny synthetic scenes."""

import numpy as np
import pytest

import maxmargin
from maxmargin.apps.detection import (
    CascadeDetector,
    HOGSVMDetector,
    ProposalRanker,
    average_precision,
    recall_overlap_auc,
)
from maxmargin.datasets import make_detection_scenes


@pytest.fixture(scope="module")
def scenes():
    return make_detection_scenes(10, random_state=0), make_detection_scenes(6, random_state=1)


def _ap(det, images, boxes):
    res = det.predict(images)
    return average_precision([r[0] for r in res], [r[1] for r in res], boxes)


def test_hog_svm_detector_with_mining(scenes, tmp_path):
    (tri, trb), (tei, teb) = scenes
    d = HOGSVMDetector(window=(3, 3), C=0.1, max_working_set=300, random_state=0).fit(tri, trb)
    assert d.converged_
    h = d.mining_history_
    assert h[0]["n_hard"] == h[0]["n_negatives"] and h[-1]["n_hard"] < h[0]["n_hard"]
    assert _ap(d, tei, teb) > 0.8
    back = maxmargin.load(maxmargin.save(d, tmp_path / "d.npz"))
    b1, s1 = d.detect(tei[0])
    b2, s2 = back.detect(tei[0])
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_allclose(s1, s2)


@pytest.mark.parametrize("learner", ["gentle", "lacboost"])
def test_cascade_detector(scenes, tmp_path, learner):
    (tri, trb), (tei, teb) = scenes
    kw = dict(window=(3, 3), stage_learner=learner, n_stages=4, max_weak=20, random_state=0)
    c = CascadeDetector(validation_fraction=0.0, **kw).fit(tri, trb)
    assert _ap(c, tei, teb) > 0.4
    # operating points on held-out images (the default): still a working detector
    held = CascadeDetector(validation_fraction=0.3, **kw).fit(tri, trb)
    assert held.cascade_.n_stages_ >= 1 and _ap(held, tei, teb) > 0.1
    back = maxmargin.load(maxmargin.save(c, tmp_path / "c.npz"))
    np.testing.assert_array_equal(back.detect(tei[0])[0], c.detect(tei[0])[0])


def test_cascade_detector_with_channels_and_a_stage_schedule(scenes, tmp_path):
    (tri, trb), (tei, teb) = scenes
    kw = dict(window=(3, 3), n_stages=4, max_weak=[2, 5, 10], random_state=0)
    c = CascadeDetector(channels=True, **kw).fit(tri, trb)
    assert c.cascade_.n_features_in_ == 1 + 2 * 2 * 4 * 9 + 3 * 3 * 10  # prior, HOG, ACF
    assert c.cascade_.stages_[0]["n_weak"] <= 2 and _ap(c, tei, teb) > 0.3
    X, y, _ = c.training_set(tri, trb)  # the very windows the cascade was fitted on
    assert X.shape[1] == c.cascade_.n_features_in_ and int(y.sum()) == c.n_positives_
    back = maxmargin.load(maxmargin.save(c, tmp_path / "c.npz"))
    assert back.channels and back.max_weak == [2, 5, 10]
    np.testing.assert_array_equal(back.detect(tei[0])[1], c.detect(tei[0])[1])


def test_cascade_detector_ctrl_c_keeps_the_completed_stages(scenes, monkeypatch):
    from detection_makers import interrupt_in_stage

    from maxmargin.exceptions import FitInterruptedWarning

    (tri, trb), (tei, _) = scenes
    kw = dict(window=(3, 3), n_stages=4, max_weak=20, validation_fraction=0.0, random_state=0)
    ref = CascadeDetector(**kw).fit(tri, trb)
    assert ref.converged_ and ref.cascade_.n_stages_ >= 2
    interrupt_in_stage(monkeypatch, stage=1, at_round=0)
    with pytest.warns(FitInterruptedWarning):
        c = CascadeDetector(**kw).fit(tri, trb)
    assert not c.converged_ and c.cascade_.n_stages_ == 1
    np.testing.assert_array_equal(c.cascade_.thresholds_, ref.cascade_.thresholds_[:1])
    b, s = c.detect(tei[0])
    assert len(b) and np.all(np.isfinite(s))
    interrupt_in_stage(monkeypatch, stage=0, at_round=0)
    with pytest.raises(KeyboardInterrupt):
        CascadeDetector(**kw).fit(tri, trb)


@pytest.mark.parametrize("graph,rescaling", [("complete", "margin"), ("star", "slack")])
def test_proposal_ranker_beats_the_unranked_pool(scenes, tmp_path, graph, rescaling):
    (tri, trb), (tei, teb) = scenes
    p = ProposalRanker(
        graph=graph, rescaling=rescaling, n_train_windows=200, n_candidates=300, random_state=0
    ).fit(tri, trb)
    ranked = [p.propose(im, rng=k)[0] for k, im in enumerate(tei)]
    pool = [p.candidates(im, rng=k) for k, im in enumerate(tei)]
    for a, b in zip(ranked, pool):  # the same windows, reordered
        assert sorted(map(tuple, a)) == sorted(map(tuple, b))
    assert recall_overlap_auc(ranked, teb, 10) > recall_overlap_auc(pool, teb, 10)
    assert recall_overlap_auc(ranked, teb, 300) == pytest.approx(recall_overlap_auc(pool, teb, 300))
    back = maxmargin.load(maxmargin.save(p, tmp_path / "p.npz"))
    np.testing.assert_allclose(
        back.score_windows(tei[0], pool[0]), p.score_windows(tei[0], pool[0])
    )


def test_detector_input_errors(scenes):
    (tri, trb), _ = scenes
    bad = [b.copy() for b in trb]
    bad[0][0, 0] = 70.0  # the box leaves the 80-pixel-wide image
    with pytest.raises(ValueError, match="outside"):
        HOGSVMDetector(window=(3, 3)).fit(tri, bad)
    with pytest.raises(ValueError, match="images but"):
        HOGSVMDetector().fit(tri, trb[:-1])
    with pytest.raises(ValueError, match="positive width"):
        ProposalRanker().fit(tri[:1], [np.array([[1.0, 1.0, 0.0, 5.0]])])


def _two_ring_scenes(n, rng):
    """Two identical rings per image; only the one in the top-left corner is annotated,
    so appearance cannot tell them apart and only the location can."""
    images, boxes = [], []
    s = 24
    yy, xx = np.mgrid[0:s, 0:s]
    r = np.hypot(yy - (s - 1) / 2, xx - (s - 1) / 2) / (s / 2)
    for _ in range(n):
        img = np.kron(rng.random((9, 11)), np.ones((8, 8)))[:64, :80] * 0.5
        (x0, y0), (x1, y1) = rng.integers(0, 8, 2), (rng.integers(48, 56), rng.integers(32, 40))
        for x, y in ((x0, y0), (x1, y1)):
            img[y : y + s, x : x + s] = np.where(
                r < 0.45, 0.05, np.where(r < 0.9, 0.95, img[y : y + s, x : x + s])
            )
        img = np.clip(img + 0.03 * rng.standard_normal(img.shape), 0, 1)
        images.append((img * 255).astype(np.uint8))
        boxes.append(np.array([[x0, y0, s, s]], dtype=np.float64))
    return images, boxes


def test_location_prior_tells_apart_objects_that_look_alike(tmp_path):
    rng = np.random.default_rng(0)
    tri, trb = _two_ring_scenes(12, rng)
    tei, teb = _two_ring_scenes(8, rng)
    kw = dict(window=(3, 3), C=0.1, aspect_ratios=(1.0,), max_working_set=300, random_state=0)
    blind = HOGSVMDetector(location_prior=False, **kw).fit(tri, trb)
    seeing = HOGSVMDetector(location_prior=True, **kw).fit(tri, trb)
    assert blind.distribution_ is None and seeing.distribution_ is not None
    ap_blind, ap_seeing = _ap(blind, tei, teb), _ap(seeing, tei, teb)
    assert ap_seeing > 0.9 and ap_seeing > ap_blind + 0.2, (ap_seeing, ap_blind)
    # the extra column is the clipped log density of the window's box
    pyr = seeing._pyramid(tei[0])
    lv, r, c = pyr.windows()
    X = seeing._describe(pyr, lv, r, c)
    ld = seeing.distribution_.log_density(pyr.boxes(lv, r, c), pyr.image_shape)
    assert X.shape[1] == pyr.n_features + 1 == len(seeing.coef_)
    np.testing.assert_allclose(X[:, -1], np.maximum(ld, -30) / 10, rtol=1e-5)
    # saved and loaded: the same detections; a file without the distribution is refused
    back = maxmargin.load(maxmargin.save(seeing, tmp_path / "p.npz"))
    np.testing.assert_array_equal(back.detect(tei[0])[0], seeing.detect(tei[0])[0])
    meta, arrays = seeing._get_state()
    arrays = {k: v for k, v in arrays.items() if k != "box_params"}
    with pytest.raises(ValueError, match="box distribution"):
        HOGSVMDetector._from_state(meta, arrays)
    _, arrays = seeing._get_state()
    arrays["box_scale"] = np.array([1.0, np.nan, 1.0, 1.0])
    with pytest.raises(ValueError, match="corrupt"):
        HOGSVMDetector._from_state(meta, arrays)
    with pytest.raises(ValueError, match="two training boxes"):
        HOGSVMDetector(**kw).fit(tri[:1], trb[:1])


def test_detector_files_from_before_the_window_options_load_as_trained(scenes):
    (tri, trb), (tei, _) = scenes
    kw = dict(window=(3, 3), C=0.1, max_working_set=300, random_state=0)
    d = HOGSVMDetector(aspect_ratios=(1.0,), location_prior=False, **kw).fit(tri, trb)
    meta, arrays = d._get_state()
    for k in ("aspect_ratios", "colour", "location_prior"):
        del meta["params"][k]
    old = HOGSVMDetector._from_state(meta, arrays)
    assert old.aspect_ratios == (1.0,) and not old.location_prior and not old.colour
    np.testing.assert_array_equal(old.detect(tei[0])[0], d.detect(tei[0])[0])


def test_cascade_detector_bootstraps_negatives_from_the_full_scan(scenes, tmp_path, monkeypatch):
    (tri, trb), (tei, teb) = scenes
    kw = dict(window=(3, 3), n_stages=4, max_weak=[4, 8], n_negatives=400, random_state=0)
    plain = CascadeDetector(**kw).fit(tri, trb)
    boot = CascadeDetector(bootstrap=True, **kw).fit(tri, trb)
    assert plain.n_bootstrapped_ == 0 and boot.n_bootstrapped_ > 0
    s0, s1 = boot.cascade_.stages_[:2]
    # the first stage is the plain one; the second is refilled to the first's negatives
    assert s0["n_neg"] == plain.cascade_.stages_[0]["n_neg"]
    assert s1["n_bootstrapped"] > 0 and s1["n_neg"] > plain.cascade_.stages_[1]["n_neg"]
    first = boot.cascade_.stumps_[0].feature
    np.testing.assert_array_equal(first, plain.cascade_.stumps_[0].feature)
    assert boot.n_bootstrapped_ == sum(t["n_bootstrapped"] for t in boot.cascade_.stages_)
    # the scan returns windows that pass the stages so far, each once, none of the pool
    drawn = []
    make = CascadeDetector._negative_source

    def spy(self, ctx):
        draw = make(self, ctx)

        def wrapped(passes, n_train, n_val):
            Z, hold = draw(passes, n_train, n_val)
            assert passes(Z).all() and len(Z) <= n_train + n_val
            assert (~hold).sum() <= n_train and hold.sum() <= n_val
            drawn.append(Z)
            return Z, hold

        return wrapped

    monkeypatch.setattr(CascadeDetector, "_negative_source", spy)
    again = CascadeDetector(bootstrap=True, **kw).fit(tri, trb)
    np.testing.assert_array_equal(again.cascade_.thresholds_, boot.cascade_.thresholds_)
    X, y, _ = boot.training_set(tri, trb)
    rows = np.vstack([X[y == 0], *drawn])
    assert len(np.unique(rows, axis=0)) == len(rows) and len(rows) > (y == 0).sum()
    assert _ap(boot, tei, teb) > 0.3
    back = maxmargin.load(maxmargin.save(boot, tmp_path / "b.npz"))
    assert back.bootstrap and back.n_bootstrapped_ == boot.n_bootstrapped_
    np.testing.assert_array_equal(back.detect(tei[0])[1], boot.detect(tei[0])[1])


def test_cascade_files_from_before_channel_cells_and_bootstrap_load_as_trained(scenes):
    (tri, trb), (tei, _) = scenes
    # the defaults: channel features and the stage schedule (the best raccoon setting)
    d = CascadeDetector()
    assert d.channels and tuple(d.max_weak) == (2, 5, 10, 20, 50) and not d.bootstrap
    assert d.channel_cells == (1,)
    kw = dict(window=(3, 3), n_stages=3, max_weak=[2, 5], random_state=0)
    c = CascadeDetector(channels=True, **kw).fit(tri, trb)
    meta, arrays = c._get_state()
    for k in ("channel_cells", "bootstrap", "chain"):
        del meta["params"][k]
    del meta["cascade"]["params"]["chain"]
    for t in meta["cascade"]["stages"]:
        del t["n_bootstrapped"]
    old = CascadeDetector._from_state(meta, arrays)
    assert old.channel_cells == (1,) and old.bootstrap is False and old.n_bootstrapped_ == 0
    assert old.chain is False and old.cascade_.chain is False
    np.testing.assert_array_equal(old.detect(tei[0])[1], c.detect(tei[0])[1])
    # and a file from before channel features (trained without them): channels missing
    # means off, although the default is now on
    plain = CascadeDetector(channels=False, **kw).fit(tri, trb)
    pm, pa = plain._get_state()
    for k in ("channels", "channel_cells", "bootstrap"):
        del pm["params"][k]
    older = CascadeDetector._from_state(pm, pa)
    assert older.channels is False
    np.testing.assert_array_equal(older.detect(tei[0])[1], plain.detect(tei[0])[1])


def _clutter(n, seed, size=(64, 80)):
    rng = np.random.default_rng(seed)
    H, W = size
    out = []
    for _ in range(n):
        img = np.kron(rng.random((H // 8 + 1, W // 8 + 1)), np.ones((8, 8)))[:H, :W] * 0.5
        out.append(
            (np.clip(img + 0.03 * rng.standard_normal(img.shape), 0, 1) * 255).astype(np.uint8)
        )
    return out


def test_cascade_detector_takes_extra_negatives_from_images_without_objects(scenes, tmp_path):
    (tri, trb), (tei, teb) = scenes
    neg = _clutter(4, 7)
    kw = dict(window=(3, 3), n_stages=3, max_weak=[2, 5], n_negatives=300, random_state=0)
    det = CascadeDetector(n_extra_negatives=250, **kw)
    det._fit_prior(tri, trb)
    X0, y0, m0 = det.training_set(tri, trb)
    X1, y1, m1 = det.training_set(tri, trb, negative_images=neg)
    # the object images' pool is the same draw; the extra rows come last, all negatives,
    # never held out
    n0 = len(X0)
    np.testing.assert_array_equal(X1[:n0], X0)
    np.testing.assert_array_equal(y1[:n0], y0)
    np.testing.assert_array_equal(m1[:n0], m0)
    assert len(X1) == n0 + 250 and not y1[n0:].any() and not m1[n0:].any()
    # ... and they are distinct windows of the negative images (every window of theirs,
    # described as the detector describes windows, location prior included)
    every = []
    for img in neg:
        pyr = det._pyramid(img)
        every.append(det._describe(pyr, *pyr.windows()))
    every = np.vstack(every).astype(np.float64)
    extra = X1[n0:]
    assert len(np.unique(extra, axis=0)) == 250
    hit = (extra[:, None, :] == every[None, :, :]).all(axis=2).any(axis=1)
    assert hit.all()
    # None: as many as n_negatives (here more than there are: all of them)
    X2, _, _ = CascadeDetector(**kw).training_set(tri, trb, negative_images=neg)
    assert len(X2) - n0 == min(300, len(every))
    fit = CascadeDetector(n_extra_negatives=250, **kw).fit(tri, trb, negative_images=neg)
    assert fit.n_extra_negatives_ == 250 and fit.n_negatives_ == (y1 == 0).sum()
    assert _ap(fit, tei, teb) > 0.3
    back = maxmargin.load(maxmargin.save(fit, tmp_path / "x.npz"))
    assert back.n_extra_negatives == 250 and back.n_extra_negatives_ == 250
    np.testing.assert_array_equal(back.detect(tei[0])[1], fit.detect(tei[0])[1])
    # a file from before negative_images loads with n_extra_negatives None, 0 drawn
    meta, arrays = fit._get_state()
    del meta["params"]["n_extra_negatives"], meta["n_extra_negatives"]
    old = CascadeDetector._from_state(meta, arrays)
    assert old.n_extra_negatives is None and old.n_extra_negatives_ == 0
    # bootstrapping scans the negative images too
    boot = CascadeDetector(bootstrap=True, n_extra_negatives=50, **kw)
    boot._fit_prior(tri, trb)
    _, _, _, ctx = boot._training_set(tri, trb, neg)
    assert len(ctx["wins"]) == len(tri) + len(neg) and ctx["used"].sum() == 300 + 50
    assert not ctx["val_img"][len(tri) :].any()
    draw = boot._negative_source(ctx)
    Z, hold = draw(lambda Z: np.ones(len(Z), dtype=bool), 10**6, 10**6)
    assert ctx["used"].all() and len(Z) == len(ctx["used"]) - 350
    tail = ~hold & (Z[:, None, :] == every[None, :, :]).all(axis=2).any(axis=1)
    assert tail.sum() == len(every) - 50  # every window of the negative images not drawn


def test_negative_images_errors(scenes):
    (tri, trb), _ = scenes
    kw = dict(window=(3, 3), n_stages=2, max_weak=[2], random_state=0)
    with pytest.raises(ValueError, match="empty"):
        CascadeDetector(**kw).fit(tri, trb, negative_images=[])
    with pytest.raises(ValueError, match="list of images"):
        CascadeDetector(**kw).fit(tri, trb, negative_images=tri[0])
    with pytest.raises(ValueError, match=r"negative_images\[1\]"):
        CascadeDetector(**kw).fit(tri, trb, negative_images=[tri[0], np.zeros((5, 5, 2))])
    with pytest.raises(ValueError, match="no window fits"):
        CascadeDetector(**kw).fit(tri, trb, negative_images=[np.zeros((8, 8), np.uint8)])
    with pytest.raises(ValueError, match="n_extra_negatives"):
        CascadeDetector(n_extra_negatives=0, **kw).fit(tri, trb, negative_images=tri[:1])
