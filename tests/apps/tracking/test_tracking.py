"""Tracking app (issue 11): features, OTB loader, metrics, trackers on a synthetic video."""

import numpy as np
import pytest

from data_makers import square_video
from maxmargin.apps.tracking import (
    AdaBoostTracker,
    PatchFeatures,
    SSVMTracker,
    StructBoostTracker,
    centre_errors,
    coarse_to_fine,
    load_sequence,
    make_tracker,
    precision_at,
    read_boxes,
    success_auc,
    summary,
    to_grey,
    track_sequence,
    write_boxes,
)
from maxmargin.tasks.boxes import sample_boxes


# -- synthetic video: a textured square moving over clutter ------------------------------
def synthetic_video(n=24, size=(72, 96), side=16, seed=0):
    """The square on a figure-of-eight path (22 px and 14 px sine swings)."""
    H, W = size
    t = np.arange(n)
    xs = np.round(W / 2 - side / 2 + 22 * np.sin(2 * np.pi * t / n))
    ys = np.round(H / 2 - side / 2 + 14 * np.sin(4 * np.pi * t / n))
    return square_video(xs, ys, size, side, seed, block=4, noise=0.03)


FAST = dict(n_predict=400, n_train=100, search_radius=12.0, train_radius=20.0, window=12)


@pytest.mark.parametrize(
    "tracker",
    [
        make_tracker("structboost", max_iter=40, update_iter=10, random_state=0, **FAST),
        make_tracker("adaboost", n_estimators=40, random_state=0, **FAST),
        make_tracker("ssvm", random_state=0, **FAST),
    ],
    ids=["structboost", "adaboost", "ssvm"],
)
def test_trackers_follow_synthetic_square(tracker):
    frames, boxes = synthetic_video()
    _pred, info = track_sequence(tracker, frames, boxes)
    m = info["metrics"]
    assert m["overlap"] > 0.8, m
    assert np.isfinite(tracker.score_)
    assert set(info["timing"]) >= {"features", "predict", "train"}


def test_tracker_api_and_errors():
    frames, boxes = synthetic_video(n=4)
    tr = make_tracker("structboost", max_iter=10, update_iter=5, random_state=0, **FAST)
    with pytest.raises(RuntimeError):
        tr.update(frames[0])
    tr.init(frames[0], boxes[0])
    b = tr.update(frames[1])
    assert b.shape == (4,) and np.all(b[2:] == 16)
    with pytest.raises(ValueError, match="size"):
        make_tracker("structboost", **FAST).init(frames[0], [3, 3, 0, 5])
    with pytest.raises(ValueError, match="outside"):
        make_tracker("structboost", **FAST).init(frames[0], [500, 3, 10, 5])
    with pytest.raises(ValueError, match="unknown tracker"):
        make_tracker("kcf")
    with pytest.raises(ValueError, match="n_predict"):
        make_tracker("structboost", n_predict=0).init(frames[0], boxes[0])


def test_scales_track_size_changes():
    frames, boxes = synthetic_video(n=3)
    tr = make_tracker("ssvm", scales=(0.9, 1.0, 1.1), random_state=0, **FAST).init(
        frames[0], boxes[0]
    )
    tr.update(frames[1])
    assert len(np.unique(tr.candidates_[:, 2])) == 3


# -- features ----------------------------------------------------------------------------
def test_features_match_direct_computation():
    rng = np.random.default_rng(0)
    img = rng.random((40, 50)).astype(np.float32)
    boxes = np.array([[3, 5, 12, 8], [20, 10, 16, 16], [0, 0, 48, 40]], float)
    raw = PatchFeatures("raw", raw_cells=4)(img, boxes)
    for b, v in zip(boxes.astype(int), raw):
        p = img[b[1] : b[1] + b[3], b[0] : b[0] + b[2]].astype(float)
        cells = p.reshape(4, b[3] // 4, 4, b[2] // 4).mean(axis=(1, 3)).ravel()
        np.testing.assert_allclose(v, (cells - p.mean()) / (p.std() + 1e-3), atol=1e-4)
    pf = PatchFeatures("raw+hog+haar")
    Z = pf(img, boxes)
    assert Z.shape == (3, pf.n_features) and np.all(np.isfinite(Z))
    hog = PatchFeatures("hog")(img, boxes)
    np.testing.assert_allclose(np.linalg.norm(hog, axis=1), 1.0, atol=1e-5)
    # a patch's features do not depend on the other boxes (the region cropped)
    np.testing.assert_allclose(pf(img, boxes[:1]), Z[:1], atol=1e-6)
    with pytest.raises(ValueError, match="inside"):
        pf(img, [[45, 0, 10, 10]])
    with pytest.raises(ValueError, match="kind"):
        PatchFeatures("sift")
    assert to_grey(np.zeros((4, 4, 3), np.uint8)).shape == (4, 4)


def _hog_direct(roi, box, cells=4, nb=9):
    """HOG of one box by a per-pixel loop over the frame (the independent answer)."""
    H, W = roi.shape
    x, y, w, h = (int(v) for v in box)
    xe = np.round(x + w * np.arange(cells + 1) / cells).astype(int)
    ye = np.round(y + h * np.arange(cells + 1) / cells).astype(int)
    v = np.zeros((cells, cells, nb))
    for r in range(y, y + h):
        for c in range(x, x + w):
            gx = float(roi[r, c + 1]) - float(roi[r, c - 1]) if 0 < c < W - 1 else 0.0
            gy = float(roi[r + 1, c]) - float(roi[r - 1, c]) if 0 < r < H - 1 else 0.0
            a = np.arctan2(gy, gx) % np.pi
            b = min(int(a * nb / np.pi), nb - 1)
            cy = np.searchsorted(ye, r, side="right") - 1
            cx = np.searchsorted(xe, c, side="right") - 1
            v[cy, cx, b] += np.hypot(gx, gy)
    v = v.ravel()
    return v / (np.linalg.norm(v) + 1e-6)


def _haar_direct(img, box, g=6):
    x, y, w, h = (int(v) for v in box)
    p = img[y : y + h, x : x + w].astype(float)
    # cell edges rounded in frame coordinates (x + w k / g), as the features do
    xe = np.round(x + w * np.arange(g + 1) / g).astype(int)
    ye = np.round(y + h * np.arange(g + 1) / g).astype(int)
    cell = [[img[ye[i] : ye[i + 1], xe[j] : xe[j + 1]].mean() for j in range(g)] for i in range(g)]
    M = np.array(cell) / (p.std() + 1e-3)
    hz = [M[i, j + 1] - M[i, j] for i in range(g) for j in range(g - 1)]
    vt = [M[i + 1, j] - M[i, j] for i in range(g - 1) for j in range(g)]
    dg = [
        M[i + 1, j + 1] + M[i, j] - M[i + 1, j] - M[i, j + 1]
        for i in range(g - 1)
        for j in range(g - 1)
    ]
    return np.array(hz + vt + dg)


def test_hog_and_haar_match_per_pixel_loops():
    rng = np.random.default_rng(1)
    # smooth image: orientations away from bin edges are stable in float32
    img = np.kron(rng.random((12, 14)), np.ones((4, 4))).astype(np.float32)
    img += 0.05 * rng.random(img.shape).astype(np.float32)
    boxes = np.array([[0, 0, 20, 16], [7, 9, 24, 30], [31, 17, 25, 31]], float)
    hog = PatchFeatures("hog")(img, boxes)
    haar = PatchFeatures("haar")(img, boxes)
    for b, h, a in zip(boxes, hog, haar):
        np.testing.assert_allclose(h, _hog_direct(img, b), atol=2e-5)
        np.testing.assert_allclose(a, _haar_direct(img, b), atol=1e-6)


def test_prepared_region_gives_the_same_features():
    rng = np.random.default_rng(2)
    img = rng.random((60, 80)).astype(np.float32)
    boxes = np.array([[10, 12, 16, 20], [30, 5, 20, 18], [0, 40, 12, 20]], float)
    pf = PatchFeatures("raw+hog+haar")
    pre = pf.prepare(img, (0, 0, 70, 60))  # a region larger than the boxes need
    np.testing.assert_allclose(pf.extract(pre, boxes), pf(img, boxes), atol=1e-9)
    small = pf.prepare(img, (10, 12, 26, 32))  # exactly the first box
    np.testing.assert_allclose(pf.extract(small, boxes[:1]), pf(img, boxes[:1]), atol=1e-9)
    with pytest.raises(ValueError, match="prepared region"):
        pf.extract(small, boxes[1:2])
    # out: written in place; the scratch integral images of one call do not leak into
    # the next call's features
    buf = np.full((3, pf.n_features), np.nan)
    Z = pf(img, boxes, out=buf)
    assert Z is buf
    other = pf(img[::-1].copy(), boxes)
    np.testing.assert_allclose(pf(img, boxes), buf, atol=1e-12)
    assert not np.allclose(other, buf)
    with pytest.raises(ValueError, match="out must be"):
        pf(img, boxes, out=np.zeros((2, pf.n_features)))


# -- data --------------------------------------------------------------------------------
def _write_seq(root, boxes_text, n_frames=3, size=(20, 30)):
    import imageio.v3 as iio

    (root / "img").mkdir(parents=True)
    for k in range(n_frames):
        iio.imwrite(root / "img" / f"{k + 1:04d}.jpg", np.full((*size, 3), 100, np.uint8))
    (root / "groundtruth_rect.txt").write_text(boxes_text)
    return root


@pytest.mark.parametrize("sep", [",", "\t", " "])
def test_loader_reads_all_separators(tmp_path, sep):
    rows = ["2,3,5,6", "3,3,5,6", "4,4,5,6"]
    seq = load_sequence(_write_seq(tmp_path / "s", "\n".join(r.replace(",", sep) for r in rows)))
    assert len(seq) == 3 and seq.shape == (20, 30)
    np.testing.assert_array_equal(seq.boxes[0], [1, 2, 5, 6])  # 1-based -> 0-based
    assert seq.frame(0).shape == (20, 30, 3)
    write_boxes(tmp_path / "out.txt", seq.boxes)
    np.testing.assert_array_equal(read_boxes(tmp_path / "out.txt"), seq.boxes)


@pytest.mark.parametrize(
    "text, n_frames, match",
    [
        ("2,3,5,6\n3,3,0,6\n4,4,5,6", 3, "zero or negative"),
        ("2,3,5,6\n3,3,-5,6\n4,4,5,6", 3, "zero or negative"),
        ("2,3,5,6\n300,3,5,6\n4,4,5,6", 3, "outside"),
        ("2,3,5,6\n3,3,5,6", 3, "3 frames but 2 boxes"),
        ("2,3,5\n", 1, "4 values"),
        ("2,3,5,6", 0, "no frames"),
    ],
)
def test_loader_errors(tmp_path, text, n_frames, match):
    root = _write_seq(tmp_path / "s", text, n_frames=n_frames)
    with pytest.raises(ValueError, match=match):
        load_sequence(root)


def test_loader_missing(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        load_sequence(tmp_path / "nope")
    (tmp_path / "a").mkdir()
    with pytest.raises(ValueError, match="img"):
        load_sequence(tmp_path / "a")


# -- metrics -----------------------------------------------------------------------------
def test_metrics():
    t = np.array([[0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10]], float)
    p = np.array([[0, 0, 10, 10], [5, 0, 10, 10], [30, 40, 10, 10]], float)
    np.testing.assert_allclose(centre_errors(p, t), [0, 5, 50])
    s = summary(p, t)
    assert s["overlap"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert s["precision_20"] == pytest.approx(2 / 3)
    assert precision_at([0, 5, 50], 4) == pytest.approx(1 / 3)
    # success AUC: thresholds 0, 0.05, ..., 1; overlap 1 passes all but t = 1
    assert success_auc([1.0]) == pytest.approx(20 / 21)
    assert success_auc([0.0]) == 0.0


# -- CLI ---------------------------------------------------------------------------------
def test_cli_track(tmp_path, capsys):
    import json

    import imageio.v3 as iio

    from maxmargin.cli import main

    frames, boxes = synthetic_video(n=8)
    seq = tmp_path / "Square"
    (seq / "img").mkdir(parents=True)
    for k, f in enumerate(frames):
        iio.imwrite(seq / "img" / f"{k + 1:04d}.png", f)
    write_boxes(seq / "groundtruth_rect.txt", boxes)
    out = tmp_path / "out"
    rc = main(["track", str(seq), "--tracker", "ssvm", "--out", str(out), "--json", "--gif"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["frames"] == 8 and res["overlap"] > 0.5
    np.testing.assert_array_equal(read_boxes(out / "Square_ssvm.txt")[:3], boxes[:3])
    assert (out / "Square_ssvm.png").stat().st_size > 0
    assert (out / "Square_ssvm.gif").stat().st_size > 0
    assert main(["track", str(tmp_path / "missing")]) == 2
    assert main(["track", str(seq), "--scales", "0,1"]) == 2


def test_keep_labelled_frames_stay_in_training():
    frames, boxes = synthetic_video(n=8)
    tr = make_tracker("ssvm", keep_labelled=True, random_state=0, **{**FAST, "window": 2})
    tr.init(frames[2], boxes[2], labelled=[(frames[0], boxes[0]), (frames[1], boxes[1])])
    for k in range(3, 8):
        tr.update(frames[k])
    assert len(tr._anchors) == 3 and len(tr._data) == 2
    np.testing.assert_array_equal(tr._anchors[0].boxes[0], boxes[0])


# -- speed path: features coded once per frame, stumps on codes, warm updates unpolished --
def test_feature_quantizer_matches_searchsorted():
    from maxmargin.apps.tracking import FeatureQuantizer

    rng = np.random.default_rng(0)
    Z = rng.random((300, 7))
    Z[:, 0] = np.round(Z[:, 0] * 3) / 3  # few distinct values: repeated edges
    q = FeatureQuantizer(256).fit(Z)
    X = rng.random((500, 7)) * 1.4 - 0.2  # also outside the fitted range
    X[:40] = Z[:40]  # values equal to edges
    ref = np.stack([np.searchsorted(q.edges_[f], X[:, f], side="left") for f in range(7)], 1)
    codes = q.transform(X)
    assert codes.dtype == np.uint8
    np.testing.assert_array_equal(codes, ref)
    # equal-frequency: each of the 256 codes of a continuous feature holds about n / 256
    counts = np.bincount(q.transform(Z)[:, 1], minlength=256)
    assert counts.max() <= 3
    with pytest.raises(ValueError, match="n_bins"):
        FeatureQuantizer(300)
    with pytest.raises(ValueError, match="expected"):
        q.transform(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        FeatureQuantizer().fit(np.array([[np.nan]]))


def test_fixed_bin_tracker_scores_raw_features_like_codes():
    """The tracker trains stumps on codes and maps them back to raw thresholds
    (code > b  <=>  value > edges[b]): both give the same candidate scores."""
    frames, boxes = synthetic_video(n=6)
    tr = make_tracker("structboost", max_iter=30, update_iter=5, random_state=0, **FAST)
    tr.init(frames[0], boxes[0])
    for k in range(1, 6):
        tr.update(frames[k])
    assert tr._encoded and len(tr._hyps) > 0
    Z = tr._feat(to_grey(frames[5]), tr.candidates_)
    on_codes = tr.model_.slot_weights_[:, 0] @ tr.model_.hypotheses_.evaluate(
        tr._quantizer.transform(Z).astype(float)
    )
    np.testing.assert_allclose(tr._score(Z), on_codes)
    np.testing.assert_allclose(tr.candidate_scores_, tr._score(Z))
    with pytest.raises(ValueError, match="weak_learner"):
        make_tracker("structboost", weak_learner="tree", **FAST).init(frames[0], boxes[0])
    with pytest.raises(ValueError, match="update_gate"):
        make_tracker("structboost", update_gate=1.5, **FAST).init(frames[0], boxes[0])


def test_update_gate_skips_low_scoring_frames():
    frames, boxes = synthetic_video()
    kw = dict(max_iter=30, update_iter=5, random_state=0, **FAST)
    always = make_tracker("structboost", **kw)
    track_sequence(always, frames, boxes)
    assert always.n_skipped_ == 0
    strict = make_tracker(
        "structboost", update_gate=1.0, **kw
    )  # only frames at or above the median
    _pred, info = track_sequence(strict, frames, boxes)
    assert strict.n_skipped_ > 0
    # 3 labelled frames with their warped copies (augment), then the accepted ones, in a
    # window of 12
    n_labelled = 3 * (1 + strict.sampling.augment)
    n_accepted = len(frames) - 3 - strict.n_skipped_
    assert len(strict._data) == min(12, n_labelled + n_accepted)
    assert strict.n_trainings_ == 1 + (len(frames) - 3 - strict.n_skipped_) // 2
    assert info["metrics"]["overlap"] > 0.8


@pytest.mark.parametrize("weak", ["hist_stump", "stump"])
def test_structboost_tracker_other_weak_learners(weak):
    frames, boxes = synthetic_video()
    tr = make_tracker(
        "structboost", weak_learner=weak, max_iter=30, update_iter=5, random_state=0, **FAST
    )
    _pred, info = track_sequence(tr, frames, boxes)
    assert not tr._encoded
    assert info["metrics"]["overlap"] > 0.8


def test_warm_updates_skip_the_polish():
    frames, boxes = synthetic_video(n=5)
    tr = make_tracker(
        "structboost", max_iter=30, update_iter=5, polish_initial=True, random_state=0, **FAST
    )
    tr.init(frames[0], boxes[0])
    assert tr.model_.history_[-1]["certified"]  # the initial training is polished
    tr.update(frames[1])
    tr.update(frames[2])
    assert tr.n_trainings_ == 2 and not tr.model_.polish
    assert not tr.model_.history_[-1]["certified"]
    tr2 = make_tracker(
        "structboost", max_iter=30, update_iter=5, polish_updates=True, random_state=0, **FAST
    )
    tr2.init(frames[0], boxes[0])
    tr2.update(frames[1])
    tr2.update(frames[2])
    assert tr2.model_.history_[-1]["certified"]


def test_polish_initial_off_keeps_the_smoothed_first_model():
    """``polish_initial=False``: the first training is StructBoost with
    ``certify="none"`` (the smoothed master's solution, no certificate); the default
    certifies it."""
    frames, boxes = synthetic_video(n=3)
    kw = dict(max_iter=30, update_iter=5, random_state=0, **FAST)
    tr = make_tracker("structboost", polish_initial=False, **kw).init(frames[0], boxes[0])
    assert tr.model_.certify == "none"
    assert not tr.model_.history_[-1]["certified"]
    ref = make_tracker("structboost", **kw).init(frames[0], boxes[0])
    assert ref.model_.certify == "gap" and ref.model_.history_[-1]["certified"]
    assert tr.update(frames[1]) is not None
    with pytest.raises(ValueError, match="polish_initial"):
        make_tracker("structboost", polish_initial="no", **FAST).init(frames[0], boxes[0])


# -- drift remedies: anchor model, constant-velocity search centre, top-k box -------------
def test_anchor_model_is_the_frozen_initial_model():
    """With ``anchor_weight`` a the score is online + a * (initial model): before any
    re-training both are the initial model, so the scores are (1 + a) times the plain
    tracker's; after re-trainings the anchor part is still the initial model's."""
    frames, boxes = synthetic_video(n=8)
    kw = dict(max_iter=30, update_iter=5, random_state=0, **FAST)
    plain = make_tracker("structboost", **kw).init(frames[0], boxes[0])
    anch = make_tracker("structboost", anchor_weight=0.5, **kw).init(frames[0], boxes[0])
    plain.update(frames[1])
    anch.update(frames[1])
    np.testing.assert_allclose(anch.candidate_scores_, 1.5 * plain.candidate_scores_)
    first = make_tracker("structboost", **kw).init(frames[0], boxes[0])  # the initial model alone
    for k in range(2, 8):
        anch.update(frames[k])
    assert anch.n_trainings_ > 1
    Z = anch._feat(to_grey(frames[7]), anch.candidates_)
    online = anch.model_.slot_weights_[:, 0] @ anch._hyps.evaluate(Z)
    np.testing.assert_allclose(anch.candidate_scores_, online + 0.5 * first._score(Z))
    with pytest.raises(ValueError, match="anchor_weight"):
        make_tracker("structboost", anchor_weight=-1.0, **FAST).init(frames[0], boxes[0])


def test_velocity_prior_follows_fast_motion():
    """A square moving 9 px per frame with a search radius of 6 px: without the motion
    prior the tracker falls behind, with the constant-velocity prior it keeps up."""
    rng = np.random.default_rng(1)
    H, W, side, n = 60, 200, 16, 16
    bg = np.kron(rng.random((H // 4, W // 4)), np.ones((4, 4)))
    tex = np.kron(rng.random((side // 2, side // 2)) > 0.5, np.ones((2, 2))) * 0.8 + 0.1
    frames, boxes = [], []
    for t in range(n):
        x, y = 10 + 9 * t, 22
        f = bg.copy()
        f[y : y + side, x : x + side] = tex
        frames.append((f * 255).astype(np.uint8))
        boxes.append([x, y, side, side])
    boxes = np.array(boxes, dtype=float)
    kw = dict(
        random_state=0, n_predict=300, n_train=100,
        search_radius=6.0, train_radius=20.0, window=12,
    )  # fmt: skip
    _p, slow = track_sequence(make_tracker("ssvm", **kw), frames, boxes)
    _p, fast = track_sequence(make_tracker("ssvm", velocity=1.0, **kw), frames, boxes)
    assert slow["metrics"]["overlap"] < 0.5
    assert fast["metrics"]["overlap"] > 0.8
    with pytest.raises(ValueError, match="velocity"):
        make_tracker("ssvm", velocity=2.0, **FAST).init(frames[0], boxes[0])


def test_top_k_box_is_the_weighted_mean_of_the_best_candidates():
    frames, boxes = synthetic_video(n=4)
    tr = make_tracker("ssvm", top_k=4, random_state=0, **FAST).init(frames[0], boxes[0])
    for k in range(1, 4):
        b = tr.update(frames[k])
    s, c = tr.candidate_scores_, tr.candidates_
    order = np.argsort(-s, kind="stable")
    w = s[order[:4]] - s[order[4]]
    ref = np.round((w[:, None] * c[order[:4]]).sum(0) / w.sum())
    np.testing.assert_array_equal(b, ref)
    assert tr.score_ == s.max()
    # controlled scores: two candidates 20 px apart score 3 and 1, all others 0, so the
    # box is 3/4 of the way to the first (weights 3 - 0 and 1 - 0)
    from maxmargin.tasks.boxes import sample_boxes

    tr2 = make_tracker("ssvm", top_k=2, random_state=0, **FAST).init(frames[0], boxes[0])
    cand = sample_boxes(
        tr2.box_, tr2.sampling.n_predict, tr2.sampling.search_radius, frames[1].shape
    )
    a = int(np.flatnonzero(np.all(cand[:, :2] == tr2.box_[:2] + np.array([-10, 0]), axis=1))[0])
    b = int(np.flatnonzero(np.all(cand[:, :2] == tr2.box_[:2] + np.array([10, 0]), axis=1))[0])
    fake = np.zeros(len(cand))
    fake[a], fake[b] = 3.0, 1.0
    tr2._score = lambda Z: fake.copy()
    box = tr2.update(frames[1])
    np.testing.assert_array_equal(box, np.round(0.75 * cand[a] + 0.25 * cand[b]))
    with pytest.raises(ValueError, match="top_k"):
        make_tracker("ssvm", top_k=0, **FAST).init(frames[0], boxes[0])


def test_relabel_picks_the_best_nearby_candidate():
    """Re-labelling equals a per-frame brute force: the best-scoring candidate (current
    model) among those overlapping the frame's own box by >= relabel; labelled frames
    keep their box."""
    from maxmargin.tasks.boxes import box_overlap

    frames, boxes = synthetic_video(n=10)
    tr = make_tracker(
        "structboost", relabel=0.5, max_iter=30, update_iter=5, augment=0, random_state=0, **FAST
    )
    tr.init(frames[2], boxes[2], labelled=[(frames[0], boxes[0]), (frames[1], boxes[1])])
    for k in range(3, 10):
        tr.update(frames[k])
    data = list(tr._data)
    m = tr.model_
    # perturb the model so that some labels move: flip the weights' signs
    w0 = m.slot_weights_.copy()
    m.slot_weights_ = -w0
    y = tr._relabelled(data)
    m.slot_weights_ = w0
    ref = []
    for i, c in enumerate(data):  # brute force, frame by frame
        s = -w0[:, 0] @ m.hypotheses_.evaluate(c.features)
        ok = box_overlap(c.boxes, c.boxes[0]) >= 0.5
        ok[0] = True
        best = int(np.argmax(np.where(ok, s, -np.inf)))
        ref.append(0 if i < 3 else best)  # the 3 labelled frames are still in the window
    np.testing.assert_array_equal(y, ref)
    assert np.any(y[3:] != 0)
    assert tr.labels_[:3].tolist() == [0, 0, 0]  # (the last training, one frame earlier)
    with pytest.raises(ValueError, match="relabel"):
        make_tracker("structboost", relabel=2.0, **FAST).init(frames[0], boxes[0])


def test_n_train_labelled_samples_more_boxes_on_the_labelled_frames():
    frames, boxes = synthetic_video(n=6)
    kw = dict(random_state=0, **{**FAST, "n_train": 40})
    tr = make_tracker("ssvm", n_train_labelled=150, **kw)
    tr.init(frames[2], boxes[2], labelled=[(frames[0], boxes[0]), (frames[1], boxes[1])])
    tr.update(frames[3])
    sizes = [len(c.boxes) for c in tr._data]
    assert min(sizes[:3]) > 100 and sizes[3] <= 41, sizes
    with pytest.raises(ValueError, match="n_train_labelled"):
        make_tracker("ssvm", n_train_labelled=0, **FAST).init(frames[0], boxes[0])


# -- coarse-to-fine search, re-detection, scale search ------------------------------------
def _peak_score(px, py, sx=1.0, sy=2.0):
    """A smooth score map over box positions with a single peak at (px, py)."""

    def score(boxes):
        b = np.asarray(boxes, dtype=float)
        return -(sx * (b[:, 0] - px) ** 2 + sy * (b[:, 1] - py) ** 2)

    return score


def test_coarse_to_fine_returns_the_full_grid_best_box():
    rng = np.random.default_rng(0)
    shape, box = (240, 320), np.array([140.0, 100.0, 20.0, 30.0])
    full = sample_boxes(box, 10**6, 40.0, shape)  # every whole-pixel translation
    assert np.all(np.diff(np.unique(full[:, 0])) == 1)
    for _ in range(10):
        px, py = box[:2] + rng.uniform(-27, 27, size=2)
        f = _peak_score(px, py)
        calls = []

        def counted(b, f=f, calls=calls):
            calls.append(len(b))
            return f(b)

        best, s = coarse_to_fine(counted, box, 40.0, 200, shape)
        k = np.argmax(f(full))
        np.testing.assert_array_equal(best, full[k])
        assert s == f(full[k : k + 1])[0]
        assert sum(calls) < len(full) / 4  # a fraction of the full grid's boxes


def _patched_tracker(**kw):
    """A tracker whose "features" are the boxes themselves, scored by ``tr.score_map``
    (re-training off), to test the search logic on a known score map; one first model
    (``consensus=1``): the consensus members would score with their own features."""
    frames, boxes = synthetic_video(n=2, size=(200, 300))
    tr = make_tracker(
        "structboost",
        weak_learner="stump",
        max_iter=5,
        retrain_every=10**6,
        consensus=1,
        random_state=0,
        **kw,
    ).init(frames[0], boxes[0])

    class BoxesAsFeatures:
        n_features = 4

        def __call__(self, grey, b, out=None):
            return np.asarray(b, dtype=float)

    tr._feat = BoxesAsFeatures()
    tr._score = lambda Z: tr.score_map(Z)
    return tr, frames


def test_redetection_searches_wide_when_the_score_collapses():
    kw = dict(n_predict=300, n_train=20, search_radius=12.0, window=4)
    for redetect in (None, 0.5):
        tr, frames = _patched_tracker(redetect=redetect, redetect_radius=120.0, **kw)
        start = tr.box_.copy()
        target = start[:2] + np.array([90.0, 20.0])  # far outside the search radius
        peak = _peak_score(*target)
        tr.score_map = lambda Z, peak=peak: 1.0 + peak(Z) / 1e4
        tr._frame_scores.extend([1.0] * 10)  # the recent scores: ~1
        box = tr.update(frames[1])
        if redetect is None:  # the best box within 12 px of the start
            assert np.hypot(*(box[:2] - start[:2])) <= 12.0 + 1e-9
            assert tr.n_redetections_ == 0
        else:
            np.testing.assert_array_equal(box[:2], target)
            assert tr.n_redetections_ == 1
    # no collapse, no wide search: the peak inside the search disc scores ~1
    tr, frames = _patched_tracker(redetect=0.5, **kw)
    tr.score_map = lambda Z: 1.0 + _peak_score(*(tr.box_[:2] + 5.0))(Z) / 1e4
    tr._frame_scores.extend([1.0] * 10)
    tr.update(frames[1])
    assert tr.n_redetections_ == 0
    with pytest.raises(ValueError, match="redetect"):
        make_tracker("structboost", redetect=1.5, **FAST).init(frames[0], [10, 10, 16, 16])


def test_scale_search_follows_a_better_size_only_past_the_margin():
    kw = dict(n_predict=200, n_train=20, search_radius=6.0, window=4)
    for margin, expect_change in ((0.0, True), (10.0, False)):
        tr, frames = _patched_tracker(scale_step=0.1, scale_margin=margin, **kw)
        w0 = tr.box_[2]

        def score(Z, tr=tr, w0=w0):  # best at the current position with 1.25 times the size
            c = tr.box_[:2] + tr.box_[2:] / 2
            cz = Z[:, :2] + Z[:, 2:] / 2
            return -np.abs(Z[:, 2] - 1.25 * w0) - 0.01 * np.hypot(*(cz - c).T)

        tr.score_map = score
        for _ in range(4):
            tr._frame_scores.extend([1.0] * 5)
            box = tr.update(frames[1])
        if expect_change:
            assert abs(box[2] - 1.25 * w0) <= 1.0 and box[2] == box[3]  # aspect kept
            assert tr.n_rescaled_ >= 2
        else:
            assert box[2] == w0 and tr.n_rescaled_ == 0
    # the training boxes of a frame include the other sizes
    assert len(np.unique(tr._data[-1].boxes[:, 2])) > 1
    with pytest.raises(ValueError, match="scale_step"):
        make_tracker("structboost", scale_step=0.7, **FAST).init(frames[0], [10, 10, 16, 16])


def test_template_match_adds_a_search_disc_where_the_target_jumped():
    """A square jumping back and forth by 14-18 px with a search radius of 6 px: the
    plain search loses it (a constant-velocity prior would too), the second search disc
    at the normalised cross-correlation match of the last box's patch keeps it."""
    rng = np.random.default_rng(3)
    H, W, side, n = 80, 200, 16, 14
    bg = np.kron(rng.random((H // 4, W // 4)), np.ones((4, 4))) * 0.5
    tex = np.kron(rng.random((side // 2, side // 2)) > 0.5, np.ones((2, 2))) * 0.8 + 0.1
    xs = 60 + np.cumsum([0] + [18 if t % 2 else -14 for t in range(1, n)])
    frames, boxes = [], []
    for x in xs:
        f = bg.copy()
        f[30 : 30 + side, x : x + side] = tex
        frames.append((f * 255).astype(np.uint8))
        boxes.append([x, 30, side, side])
    boxes = np.array(boxes, dtype=float)
    kw = dict(
        random_state=0, n_predict=300, n_train=100,
        search_radius=6.0, train_radius=20.0, window=12,
    )  # fmt: skip
    _p, plain = track_sequence(make_tracker("ssvm", **kw), frames, boxes)
    _p, ncc = track_sequence(make_tracker("ssvm", ncc_radius=30.0, **kw), frames, boxes)
    assert plain["metrics"]["overlap"] < 0.5
    assert ncc["metrics"]["overlap"] > 0.8
    with pytest.raises(ValueError, match="ncc_radius"):
        make_tracker("ssvm", ncc_radius=-1.0, **FAST).init(frames[0], boxes[0])


# -- issue 29: one Sampling object, scikit-learn estimator protocol ------------------------
def test_sampling_is_one_frozen_parameter_and_trackers_clone():
    import dataclasses

    from sklearn.base import clone

    from maxmargin.apps.tracking import Sampling

    s = Sampling(n_predict=300, scales=[0.9, 1.0])
    assert s.scales == (0.9, 1.0)  # stored as a tuple of floats
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.n_predict = 5
    for cls, kw in (
        (StructBoostTracker, {"C": 5.0, "update_iter": 3}),
        (AdaBoostTracker, {"n_estimators": 7}),
        (SSVMTracker, {"C": 2.0}),
    ):
        tr = cls(sampling=s, random_state=3, **kw)
        p = tr.get_params(deep=False)
        assert p["sampling"] is s and p["random_state"] == 3
        assert all(p[k] == v for k, v in kw.items())
        deep = tr.get_params(deep=True)
        assert deep["sampling__n_predict"] == 300
        c = clone(tr)  # sklearn's clone: deep copies, then checks every parameter
        assert c.get_params(deep=False)["sampling"] == s
        tr.set_params(sampling__n_predict=120, random_state=4)
        assert tr.sampling.n_predict == 120 and tr.sampling.scales == (0.9, 1.0)
        assert s.n_predict == 300  # the original object is unchanged
        assert tr.random_state == 4
        with pytest.raises(ValueError, match="unknown sampling parameter"):
            tr.set_params(sampling__nonsense=1)
    # each tracker keeps its own default protocol
    assert StructBoostTracker().sampling.features == "hog+haar"
    assert SSVMTracker().sampling.window == 50
    # flat keywords of make_tracker change the tracker's own default
    tr = make_tracker("structboost", n_predict=500)
    assert tr.sampling.n_predict == 500 and tr.sampling.features == "hog+haar"


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"n_predict": 0}, "n_predict"),
        ({"window": 2.5}, "window"),
        ({"velocity": 1.5}, "velocity"),
        ({"scales": (1.0, -0.5)}, "scales"),
        ({"scale_step": 0.5}, "scale_step"),
        ({"search_radius": 0.0}, "search_radius"),
        ({"redetect": 2.0}, "redetect"),
        ({"augment": -1}, "augment"),
        ({"support_frames": -1}, "support_frames"),
        ({"train_method": "strata"}, "train_method"),
        ({"warps": "grid"}, "warps"),
    ],
)
def test_sampling_rejects_bad_values(kw, match):
    from maxmargin.apps.tracking import Sampling

    with pytest.raises(ValueError, match=match):
        Sampling(**kw)


def test_tracker_parameters_checked_at_init():
    frames, boxes = synthetic_video(n=3)
    for tr, match in (
        (StructBoostTracker(C=-1.0), "C must be"),
        (StructBoostTracker(sampling={"n_predict": 5}), "sampling must be"),
        (SSVMTracker(max_iter=0), "max_iter"),
        (AdaBoostTracker(pos_overlap=2.0), "pos_overlap"),
    ):
        with pytest.raises(ValueError, match=match):
            tr.init(frames[0], boxes[0])


# -- the incremental column store of the sliding window (issue 30) ------------------------
@pytest.mark.parametrize(
    "kw",
    [{}, {"relabel": 0.6}, {"weak_learner": "hist_stump"}],
    ids=["default", "relabel", "hist_stump"],
)
def test_incremental_window_outputs_give_the_same_tracker_bit_for_bit(kw, monkeypatch):
    """The warm start takes the earlier stumps' outputs on the frames still in the window
    from the last fit's column store and evaluates only the new frames': the boxes, the
    candidate scores and the models are bit for bit those of re-evaluating every stump
    on the whole window.  The window (12) is shorter than the video, so frames leave it;
    boxes near the border give frames of fewer candidates (the task pads them)."""
    import maxmargin.solvers.column_generation as cg

    seen = []
    seed_columns = cg._seed_columns

    def spy(mst, store, Z, hyps, W0, deadline, outputs=None):
        seen.append(outputs is not None)
        if outputs is not None:  # the cache is what evaluating would give
            assert np.array_equal(outputs, hyps.evaluate(Z))
        return seed_columns(mst, store, Z, hyps, W0, deadline, outputs)

    monkeypatch.setattr(cg, "_seed_columns", spy)
    frames, boxes = synthetic_video(n=20)
    runs = {}
    for incremental in (False, True):
        monkeypatch.setattr(StructBoostTracker, "_incremental", incremental)
        seen.clear()
        # one first model (consensus=1): the spy counts this tracker's trainings, and
        # consensus members would train through the same function
        tr = make_tracker(
            "structboost", max_iter=30, update_iter=5, random_state=3, consensus=1, **FAST, **kw
        )
        tr.init(frames[0], boxes[0])
        out = []
        for f in frames[1:]:
            b = tr.update(f)
            m = tr.model_
            out.append((b, tr.candidate_scores_, m.slot_weights_, m.hypotheses_.feature))
        runs[incremental] = out
        assert all(seen) == incremental and len(seen) == tr.n_trainings_ - 1
        sizes = {len(c.boxes) for c in tr._data}
    assert len(sizes) > 1  # frames of different candidate counts were in a window
    for a, b in zip(runs[False], runs[True], strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def test_polar_grid_training_boxes_are_fixed_and_polar():
    """``train_method="polar_grid"``: the training boxes are the same for every seed, lie
    in the image and the disc, start with the box itself, have no duplicates, and are
    spread uniformly in distance like ``"polar"`` (half of them within half the
    radius, against a quarter for boxes uniform over the disc's area)."""
    from maxmargin.apps.tracking.tracker import polar_grid_boxes

    box, r = np.array([40.0, 30.0, 20.0, 24.0]), 30.0
    c = polar_grid_boxes(box, 200, r, (120, 160))
    assert np.array_equal(c[0], box) and len(np.unique(c, axis=0)) == len(c)
    assert 180 <= len(c) <= 200
    d = np.hypot(c[:, 0] + c[:, 2] / 2 - 50.0, c[:, 1] + c[:, 3] / 2 - 42.0)
    assert d.max() <= r + 1e-9 and np.all(c[:, :2] >= 0)
    assert np.all(c[:, 0] + c[:, 2] <= 160) and np.all(c[:, 1] + c[:, 3] <= 120)
    assert abs(np.mean(d <= r / 2) - 0.5) < 0.06
    # near a corner: clipped to the image
    e = polar_grid_boxes([0.0, 0.0, 20.0, 24.0], 200, r, (120, 160))
    assert np.all(e[:, :2] >= 0) and len(e) < len(c)
    frames, boxes = synthetic_video(n=3)
    kw = dict(max_iter=10, update_iter=5, train_method="polar_grid", **FAST)
    a = make_tracker("structboost", random_state=0, augment=0, **kw).init(frames[0], boxes[0])
    b = make_tracker("structboost", random_state=1, augment=0, **kw).init(frames[0], boxes[0])
    assert np.array_equal(a._data[0].boxes, b._data[0].boxes)
    kw["train_method"] = "polar"
    p = make_tracker("structboost", random_state=0, augment=0, **kw).init(frames[0], boxes[0])
    q = make_tracker("structboost", random_state=1, augment=0, **kw).init(frames[0], boxes[0])
    assert not np.array_equal(p._data[0].boxes, q._data[0].boxes)  # "polar": random
    assert make_tracker("structboost").sampling.train_method == "polar_grid"  # the default
    assert make_tracker("ssvm").sampling.train_method == "polar"
    with pytest.raises(ValueError, match="train_method"):
        make_tracker("structboost", train_method="grid")


# -- support frames, overlap strata, the update's C (issue 30, eighth session) ------------
def test_support_frames_keep_the_most_confident_frames_beyond_the_window(monkeypatch):
    """``support_frames=k``: of the tracked frames that leave the window, the ``k`` of
    highest confidence (score relative to the median before them) stay in every later
    training set; labelled frames are never support frames; off (0) the training set
    is the window alone."""
    frames, boxes = synthetic_video(n=16)
    fits = []
    fit = StructBoostTracker._fit

    def spy(self, data, initial):
        fits.append([id(c) for c in data])
        return fit(self, data, initial)

    monkeypatch.setattr(StructBoostTracker, "_fit", spy)
    for k in (0, 3):
        fits.clear()
        kw = {**FAST, "window": 4, "retrain_every": 1, "support_frames": k, "augment": 0}
        kw["consensus"] = 1  # the spy counts this tracker's fits, not its members'
        tr = make_tracker("structboost", max_iter=20, update_iter=3, random_state=0, **kw)
        tr.init(frames[0], boxes[0])
        added = []  # (confidence, frame) of every tracked frame, in order
        for f in frames[1:]:
            tr.update(f)
            added.append((tr._conf[-1], tr._data[-1]))
        left = added[: len(added) - 4]  # the tracked frames that left the window
        assert len(fits) == tr.n_trainings_ == len(frames)
        if k == 0:
            assert tr._support == []
            assert fits[-1] == [id(c) for c in tr._data]
            continue
        best = sorted(left, key=lambda t: -t[0])[:k]
        assert {id(f) for _, f in tr._support} == {id(f) for _, f in best}
        assert [c for c, _ in sorted(tr._support, key=lambda t: -t[0])] == [c for c, _ in best]
        assert fits[-1] == [id(f) for _, f in tr._support] + [id(c) for c in tr._data]
        assert len(fits[-1]) == k + 4


def test_overlap_strata_boxes_spread_over_the_overlap():
    """``train_method="overlap_strata"``: the box first, no duplicates, inside the image
    and the disc, the same for every seed, and every overlap stratum of [0, 1] that the
    pool can fill holds its share ((n - 1) / 10) -- unlike the polar boxes, of which
    most overlap the box little."""
    from maxmargin.apps.tracking.tracker import overlap_strata_boxes, polar_grid_boxes
    from maxmargin.tasks.boxes import box_overlap

    box, r = np.array([60.0, 50.0, 20.0, 24.0]), 40.0
    c = overlap_strata_boxes(box, 201, r, (160, 200))
    assert np.array_equal(c[0], box) and len(np.unique(c, axis=0)) == len(c) == 201
    d = np.hypot(c[:, 0] + c[:, 2] / 2 - 70.0, c[:, 1] + c[:, 3] / 2 - 62.0)
    assert d.max() <= r + 1e-9 and np.all(c[:, :2] >= 0)
    strata = np.minimum((box_overlap(c[1:], box) * 10).astype(int), 9)
    counts = np.bincount(strata, minlength=10)
    pool = polar_grid_boxes(box, 8 * 201, r, (160, 200))
    full = np.bincount(np.minimum((box_overlap(pool[1:], box) * 10).astype(int), 9), minlength=10)
    assert np.all(counts[full >= 20] >= 20), counts  # every fillable stratum has its share
    assert np.all(counts[full < 20] == full[full < 20])  # the rest: all the pool has
    polar = polar_grid_boxes(box, 201, r, (160, 200))
    assert np.mean(box_overlap(polar[1:], box) >= 0.5) < np.mean(box_overlap(c[1:], box) >= 0.5)
    frames, b = synthetic_video(n=3)
    kw = dict(max_iter=10, update_iter=5, train_method="overlap_strata", augment=0, **FAST)
    t0 = make_tracker("structboost", random_state=0, **kw).init(frames[0], b[0])
    t1 = make_tracker("structboost", random_state=1, **kw).init(frames[0], b[0])
    assert np.array_equal(t0._data[0].boxes, t1._data[0].boxes)


def test_update_C_is_the_warm_retrainings_C():
    """``update_C``: the warm re-trainings use it, the first training ``C``; None: ``C``
    throughout."""
    frames, boxes = synthetic_video(n=5)
    for uc, want in ((0.5, 0.5), (None, 10**0.5)):
        tr = make_tracker("structboost", max_iter=20, update_iter=3, update_C=uc, **FAST)
        tr.init(frames[0], boxes[0])
        assert tr.model_.C == 10**0.5
        for f in frames[1:]:
            tr.update(f)
        assert tr.n_trainings_ > 1 and tr.model_.C == want
    with pytest.raises(ValueError, match="update_C"):
        make_tracker("structboost", update_C=-1.0).init(frames[0], boxes[0])


def test_coded_frames_feature_major_or_row_major_give_the_same_track(monkeypatch):
    """The fixed-bin tracker's frames hold their codes in Fortran order (the quantizer's
    output; the box task copies them into its feature-major layout without a transpose
    at each re-training); the track and the model are the same, bit for bit, with the
    codes stored row-major."""
    from maxmargin.apps.tracking.features import FeatureQuantizer

    frames, boxes = synthetic_video(n=8)
    kw = dict(max_iter=20, update_iter=4, update_C=10.0, random_state=0, **FAST)
    tr = make_tracker("structboost", **kw)
    pred, _ = track_sequence(tr, frames, boxes)
    assert tr._data[0].features.dtype == np.uint8
    assert all(c.features.flags.f_contiguous for c in [*tr._data, *tr._labelled])
    transform = FeatureQuantizer.transform
    monkeypatch.setattr(
        FeatureQuantizer, "transform", lambda self, Z: np.ascontiguousarray(transform(self, Z))
    )
    ref = make_tracker("structboost", **kw)
    pred_ref, _ = track_sequence(ref, frames, boxes)
    assert not ref._data[-1].features.flags.f_contiguous
    np.testing.assert_array_equal(pred, pred_ref)
    np.testing.assert_array_equal(tr._w, ref._w)


# -- fixed warps (issue 30, eleventh session) ---------------------------------------------
def test_fixed_warp_params_cover_the_ranges_evenly():
    """``fixed_warp_params``: rows in [-1, 1]; the rotation column stratified (one value in
    each of ``n`` equal cells of [-1, 1]); the other columns the R_3 sequence (each
    column's consecutive terms differ by its constant step modulo 2, and every column
    puts one value in each half of [-1, 1] up to one); the same rows at every call."""
    from maxmargin.apps.tracking import fixed_warp_params

    n = 8
    p = fixed_warp_params(n)
    assert p.shape == (n, 4) and np.all(np.abs(p) <= 1.0)
    cell = np.floor((p[:, 0] + 1.0) / 2.0 * n).astype(int)
    assert sorted(cell) == list(range(n))
    g = 1.0
    for _ in range(200):
        g = (1.0 + g) ** 0.25
    assert abs(g**4 - g - 1.0) < 1e-12
    step = np.mod(np.diff(p[:, 1:], axis=0) / 2.0, 1.0)  # in units of the [0, 1) design
    np.testing.assert_allclose(
        step, np.mod([1 / g, 1 / g**2, 1 / g**3], 1.0)[None].repeat(n - 1, 0)
    )
    assert np.all(np.abs((p[:, 1:] > 0).sum(0) - n / 2) <= 1)
    np.testing.assert_array_equal(p, fixed_warp_params(n))


def test_warp_frame_params_fix_the_warp():
    """``warp_frame(params=...)``: (0, 0, 0, 0) without noise is the identity; a shift of
    ``(1, -1)`` fractions of ``shift=2`` px is the integer shift (2, -2), as a generator
    drawing those values gives."""
    from maxmargin.apps.tracking import warp_frame

    rng = np.random.default_rng(0)
    g = rng.random((40, 60))
    box = np.array([20.0, 12.0, 10.0, 8.0])
    same = warp_frame(g, box, rng, noise=0.0, params=(0.0, 0.0, 0.0, 0.0))
    np.testing.assert_allclose(same, g, atol=1e-12)
    out = warp_frame(g, box, rng, shift=2.0, noise=0.0, params=(0.0, 0.0, 1.0, -1.0))
    np.testing.assert_allclose(out[5:30, 5:50], g[3:28, 7:52], atol=1e-12)


def test_fixed_warps_make_the_first_training_set_the_same_for_every_seed():
    """``warps="fixed"`` (with the fixed training boxes): the labelled frame's warped
    copies, their training boxes and features, the first model and the track are the same
    for seeds 0 and 1; with the default random warps the copies differ."""
    frames, boxes = synthetic_video(n=8)
    kw = dict(max_iter=20, update_iter=4, augment=4, **FAST)
    runs = []
    for seed in (0, 1):
        tr = make_tracker("structboost", random_state=seed, warps="fixed", **kw)
        pred, _ = track_sequence(tr, frames, boxes)
        runs.append((tr, pred))
    (a, pa), (b, pb) = runs
    for ca, cb in zip(a._labelled, b._labelled, strict=True):
        np.testing.assert_array_equal(ca.boxes, cb.boxes)
        np.testing.assert_array_equal(ca.features, cb.features)
    np.testing.assert_array_equal(pa, pb)
    r = [
        make_tracker("structboost", random_state=s, **kw).init(frames[0], boxes[0]) for s in (0, 1)
    ]
    assert r[0].sampling.warps == "random"
    assert not np.array_equal(r[0]._labelled[1].features, r[1]._labelled[1].features)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_tracker_refuses_a_frame_with_nan_or_inf(bad):
    """A float frame holding NaN / inf is a ValueError at init and at update (it used to
    run and turn the scale filter's model into NaN); the tracker's state is kept, so the
    next good frame tracks on."""
    from maxmargin.apps.tracking import make_tracker

    rng = np.random.default_rng(0)
    frame = rng.random((60, 80)).astype(np.float32)
    box = (30.0, 20.0, 16.0, 16.0)
    broken = frame.copy()
    broken[5, 7] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        make_tracker("structboost", random_state=0).init(broken, box)
    t = make_tracker("ssvm", random_state=0).init(frame, box)
    before = np.array(t.box_, copy=True)
    with pytest.raises(ValueError, match="NaN or inf"):
        t.update(broken)
    np.testing.assert_array_equal(t.box_, before)
    assert np.all(np.isfinite(t.update(frame)))
    # colour frames too; uint8 frames are never checked (always finite)
    rgb = np.repeat(broken[..., None], 3, axis=2)
    with pytest.raises(ValueError, match="NaN or inf"):
        to_grey(rgb)
    assert to_grey((frame * 255).astype(np.uint8)).dtype == np.float32
