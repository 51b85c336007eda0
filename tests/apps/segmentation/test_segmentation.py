import warnings

import numpy as np
import pytest

from maxmargin.apps.segmentation import Segmenter, load_image_folder
from maxmargin.metrics import precision_recall_point, segmentation_scores


def noisy_shapes(rng, n, size=48, noise=0.35):
    """Ellipses of a slightly different colour than the background, heavy pixel noise."""
    imgs, masks = [], []
    yy, xx = np.mgrid[:size, :size]
    for _ in range(n):
        cy, cx = rng.uniform(0.3, 0.7, 2) * size
        ry, rx = rng.uniform(0.15, 0.3, 2) * size
        m = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
        base = np.where(m[..., None], [0.6, 0.45, 0.4], [0.45, 0.5, 0.55])
        imgs.append(np.clip(base + noise * rng.normal(size=(size, size, 3)), 0, 1))
        masks.append(m)
    return imgs, masks


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return noisy_shapes(rng, 12), noisy_shapes(rng, 8)


def fit_score(learner, data):
    (Xtr, Mtr), (Xte, Mte) = data
    seg = Segmenter(
        learner=learner,
        n_segments=60,
        unary_iter=20,
        max_iter=10,
        C=10.0,
        patch_sizes=(8,),
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seg.fit(Xtr, Mtr)
    pred = [seg.predict(x) for x in Xte]
    assert all(p.dtype == bool and p.shape == m.shape for p, m in zip(pred, Mte))
    return seg, segmentation_scores(Mte, pred, [seg.decision_function(x) for x in Xte])


def test_crf_beats_unary_on_iou(data):
    _, unary = fit_score("unary", data)
    seg, sb = fit_score("structboost", data)
    seg_svm, ssvm = fit_score("ssvm", data)
    assert sb["mean_iou"] > unary["mean_iou"] + 0.03
    assert ssvm["mean_iou"] > unary["mean_iou"] + 0.03
    assert sb["iou_fg"] > unary["iou_fg"]
    # the learned StructBoost energy is submodular: non-negative pairwise weights
    assert np.all(seg.crf_.slot_weights_ >= 0)
    # and the SSVM's, all three potentials kept: its master enforces w_v >= 0, so the
    # graph-cut oracle is exact at the answer and the certificate closed
    svm = seg_svm.crf_
    d_u = seg_svm.train_graphs_[0].unary.shape[2]
    assert seg_svm.pairwise_active_ is None and svm.coef_.shape == (d_u + 3,)
    assert np.all(svm.coef_[d_u:] >= 0) and svm.converged_
    assert svm.task_.linear_model().oracle_exact(svm.coef_)


def test_grey_images_and_01_masks():
    rng = np.random.default_rng(1)
    X, M = noisy_shapes(rng, 3, size=32)
    grey = [x.mean(axis=2) for x in X]
    seg = Segmenter(learner="unary", n_segments=30, unary_iter=5, patch_sizes=(8,))
    seg.fit(grey, [m.astype(np.uint8) for m in M])
    assert seg.predict(grey[0]).shape == (32, 32)
    seg.fit([(g * 255).astype(np.uint8) for g in grey], [m.astype(np.uint8) * 255 for m in M])


def test_bad_inputs_raise():
    rng = np.random.default_rng(2)
    X, M = noisy_shapes(rng, 2, size=32)
    seg = Segmenter(learner="unary", n_segments=30, unary_iter=5)
    with pytest.raises(ValueError, match="does not match"):
        seg.fit(X, [M[0], M[1][:-1]])
    with pytest.raises(ValueError, match="binary"):
        seg.fit(X, [M[0] * 0.5, M[1]])
    with pytest.raises(ValueError, match="2 images but 1 masks"):
        seg.fit(X, M[:1])
    with pytest.raises(ValueError, match="at least one"):
        seg.fit([], [])
    with pytest.raises(ValueError, match="learner"):
        Segmenter(learner="svm").fit(X, M)


def test_folder_loader(tmp_path):
    import imageio.v3 as iio

    rng = np.random.default_rng(3)
    X, M = noisy_shapes(rng, 2, size=32)
    (tmp_path / "img").mkdir()
    (tmp_path / "mask").mkdir()
    (tmp_path / "empty").mkdir()
    for k, (x, m) in enumerate(zip(X, M)):
        iio.imwrite(tmp_path / "img" / f"a{k}.png", (x * 255).astype(np.uint8))
        iio.imwrite(tmp_path / "mask" / f"a{k}.png", m.astype(np.uint8) * 255)
    imgs, masks, names = load_image_folder(tmp_path / "img", tmp_path / "mask")
    assert names == ["a0", "a1"] and masks[0].dtype == bool
    assert np.array_equal(masks[1], M[1])
    with pytest.raises(ValueError, match="no images"):
        load_image_folder(tmp_path / "empty", tmp_path / "mask")
    with pytest.raises(ValueError, match="not a folder"):
        load_image_folder(tmp_path / "nope")
    iio.imwrite(tmp_path / "mask" / "a0.png", np.zeros((16, 16), dtype=np.uint8))
    with pytest.raises(ValueError, match="differ in size"):
        load_image_folder(tmp_path / "img", tmp_path / "mask")
    imgs, masks, _ = load_image_folder(tmp_path / "img", tmp_path / "mask", resize_to_mask=True)
    assert imgs[0].shape[:2] == (16, 16)


def test_segmentation_metrics():
    t = np.array([[1, 1, 0, 0]], dtype=bool)
    p = np.array([[1, 0, 0, 1]], dtype=bool)
    r = segmentation_scores([t], [p], [np.array([[0.9, 0.2, 0.1, 0.8]])])
    assert r["accuracy"] == 0.5
    assert r["iou_fg"] == pytest.approx(1 / 3) and r["iou_bg"] == pytest.approx(1 / 3)
    assert r["class_accuracy"] == 0.5
    assert r["precision_recall"] == 0.5  # top-2 pixels: one true positive
    assert segmentation_scores(t, t)["mean_iou"] == 1.0
    assert precision_recall_point([0, 1, 1], [0.1, 0.5, 0.9]) == 1.0
    with pytest.raises(ValueError, match="shapes differ"):
        segmentation_scores([t], [t[:, :2]])


@pytest.mark.parametrize("learner", ["structboost", "ssvm", "unary"])
def test_save_load_roundtrip(tmp_path, learner):
    from maxmargin import load, save

    rng = np.random.default_rng(5)
    X, M = noisy_shapes(rng, 4, size=32)
    seg = Segmenter(learner=learner, n_segments=30, unary_iter=5, max_iter=3, patch_sizes=(8,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seg.fit(X, M)
    save(seg, tmp_path / "seg.mm")
    again = load(tmp_path / "seg.mm")
    assert np.array_equal(again.predict(X[0]), seg.predict(X[0]))
    assert np.allclose(again.decision_function(X[1]), seg.decision_function(X[1]))
