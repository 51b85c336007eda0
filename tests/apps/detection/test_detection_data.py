"""Detection app (issue 13), priority 1: VOC loading, windows, HOG gathering, NMS and the
recall-overlap / AP metrics against brute force."""

import numpy as np
import pytest

from maxmargin.apps.detection import (
    BoxDistribution,
    HOGPyramid,
    average_precision,
    load_image,
    load_voc_folder,
    nms,
    read_voc,
    recall_overlap,
    recall_overlap_auc,
    sliding_windows,
)
from maxmargin.tasks.boxes import box_overlap


def voc_xml(w=40, h=30, boxes=((1, 1, 10, 10),), name="obj"):
    objs = "".join(
        f"<object><name>{name}</name><bndbox><xmin>{a}</xmin><ymin>{b}</ymin>"
        f"<xmax>{c}</xmax><ymax>{d}</ymax></bndbox></object>"
        for a, b, c, d in boxes
    )
    return (
        f"<annotation><filename>im.png</filename><size><width>{w}</width>"
        f"<height>{h}</height><depth>3</depth></size>{objs}</annotation>"
    )


def test_read_voc_is_zero_based_xywh(tmp_path):
    p = tmp_path / "a.xml"
    p.write_text(voc_xml(boxes=((1, 1, 10, 10), (5, 6, 40, 30))))
    ann = read_voc(p)
    np.testing.assert_array_equal(ann.boxes, [[0, 0, 10, 10], [4, 5, 36, 25]])
    assert (ann.width, ann.height) == (40, 30) and ann.labels == ["obj", "obj"]


def test_voc_errors_are_clear(tmp_path):
    p = tmp_path / "bad.xml"
    p.write_text("<annotation><size><width>40</width>")
    with pytest.raises(ValueError, match="corrupt XML"):
        read_voc(p)
    p.write_text(voc_xml(boxes=((1, 1, 50, 10),)))
    with pytest.raises(ValueError, match="outside"):
        read_voc(p)
    np.testing.assert_array_equal(read_voc(p, clip=True).boxes, [[0, 0, 40, 10]])
    p.write_text(voc_xml(boxes=((60, 1, 70, 10),)))
    with pytest.raises(ValueError, match="entirely outside"):
        read_voc(p, clip=True)
    p.write_text(voc_xml(boxes=((10, 1, 5, 10),)))
    with pytest.raises(ValueError, match="xmax < xmin"):
        read_voc(p)
    p.write_text(voc_xml().replace("<xmin>1</xmin>", "<xmin>one</xmin>"))
    with pytest.raises(ValueError, match="not a number"):
        read_voc(p)
    p.write_text("<annotation><object/></annotation>")
    with pytest.raises(ValueError, match="missing <size>"):
        read_voc(p)


def test_undecodable_image_and_size_mismatch(tmp_path):
    import imageio.v3 as iio

    (tmp_path / "img").mkdir()
    (tmp_path / "ann").mkdir()
    (tmp_path / "img" / "a.jpg").write_bytes(b"not a jpeg at all")
    (tmp_path / "ann" / "a.xml").write_text(voc_xml())
    with pytest.raises(ValueError, match="cannot decode"):
        load_image(tmp_path / "img" / "a.jpg")
    with pytest.raises(ValueError, match="cannot decode"):
        load_voc_folder(tmp_path / "img", tmp_path / "ann")
    iio.imwrite(tmp_path / "img" / "a.png", np.zeros((20, 40, 3), np.uint8))
    (tmp_path / "img" / "a.jpg").unlink()
    with pytest.raises(ValueError, match="does not match"):
        load_voc_folder(tmp_path / "img", tmp_path / "ann")
    iio.imwrite(tmp_path / "img" / "a.png", np.zeros((30, 40, 3), np.uint8))
    imgs, boxes, names = load_voc_folder(tmp_path / "img", tmp_path / "ann", max_side=20)
    assert imgs[0].shape == (15, 20, 3) and names == ["a"]
    np.testing.assert_allclose(boxes[0], [[0, 0, 5, 5]])


def test_sliding_windows_geometry():
    b = sliding_windows((20, 30), (10, 10), scales=(1.0, 0.5), step=5)
    # scale 1: x in 0..20 step 5 (5 values), y in 0..10 (3 values); scale .5: 15x10 -> 2x1
    assert len(b) == 15 + 2
    assert np.all(b[:, 0] + b[:, 2] <= 30 + 1e-9) and np.all(b[:, 1] + b[:, 3] <= 20 + 1e-9)
    np.testing.assert_allclose(b[-1], [10, 0, 20, 20])


def test_box_distribution_samples_inside_and_near_training_boxes():
    rng = np.random.default_rng(0)
    shapes = [(100, 200)] * 50
    boxes = [np.array([[50 + rng.normal() * 3, 20, 60, 40]]) for _ in shapes]
    d = BoxDistribution().fit(boxes, shapes)
    s = d.sample(500, (100, 200), rng=1)
    assert np.all(s[:, :2] >= 0) and np.all(s[:, 0] + s[:, 2] <= 200 + 1e-9)
    assert np.median(box_overlap(s, [50, 20, 60, 40])) > 0.5
    ld = d.log_density(np.array([[50, 20, 60, 40], [0, 0, 10, 90]]), (100, 200))
    assert ld[0] > ld[1]


def test_hog_gather_equals_a_loop_over_windows():
    rng = np.random.default_rng(0)
    img = (rng.random((70, 90)) * 255).astype(np.uint8)
    pyr = HOGPyramid(img, window=(4, 3), cell=8, block=2, scale_step=1.5)
    assert len(pyr.levels) >= 2
    lv, r, c = pyr.windows()
    X = pyr.descriptors(lv, r, c)
    assert X.shape == (len(lv), pyr.n_features)
    for k in range(0, len(lv), 7):  # brute force, one window at a time
        g = pyr.levels[lv[k]]
        ref = g[r[k] : r[k] + pyr.n_blocks[0], c[k] : c[k] + pyr.n_blocks[1]].ravel()
        np.testing.assert_array_equal(X[k], ref)
    # a window's interior blocks equal hog() of its crop where no border gradient enters
    from skimage.feature import hog

    from maxmargin.apps.detection.features import to_grey

    full = hog(to_grey(img), pixels_per_cell=(8, 8), cells_per_block=(2, 2), feature_vector=False)
    np.testing.assert_allclose(pyr.levels[0], full, rtol=1e-5, atol=1e-6)
    # snapping a window's own box returns that window
    boxes = pyr.boxes(lv, r, c)
    lv2, r2, c2 = pyr.snap(boxes)
    np.testing.assert_array_equal(lv2, lv)
    np.testing.assert_array_equal(r2, r)
    np.testing.assert_array_equal(c2, c)


def _nms_brute(boxes, scores, thr):
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    keep = []
    for i in order:
        if all(box_overlap(boxes[i], boxes[j])[0] <= thr for j in keep):
            keep.append(i)
    return keep


@pytest.mark.parametrize("thr", [0.0, 0.3, 0.5, 0.9])
def test_nms_equals_brute_force(thr):
    rng = np.random.default_rng(int(thr * 10))
    b = np.column_stack([rng.integers(0, 30, (60, 2)), rng.integers(5, 20, (60, 2))]).astype(float)
    s = rng.integers(0, 10, 60).astype(float)  # ties included
    assert list(nms(b, s, thr)) == _nms_brute(b, s, thr)
    assert list(nms(b, s, thr, max_keep=3)) == _nms_brute(b, s, thr)[:3]


def test_recall_overlap_and_auc_against_brute_force():
    rng = np.random.default_rng(0)
    truths = [rng.integers(0, 40, (rng.integers(1, 4), 2)) for _ in range(5)]
    truths = [np.column_stack([t, np.full((len(t), 2), 15)]).astype(float) for t in truths]
    props = [
        np.column_stack([rng.integers(0, 50, (30, 2)), rng.integers(5, 25, (30, 2))]).astype(float)
        for _ in range(5)
    ]
    for k in (1, 10, 100):
        t, rec = recall_overlap(props, truths, k, thresholds=np.linspace(0, 1, 11))
        for ti, ri in zip(t, rec):
            hits = tot = 0
            for p, g in zip(props, truths):
                for gt in g:
                    tot += 1
                    best = max(box_overlap(gt, q)[0] for q in p[:k])
                    hits += best >= ti
            assert ri == pytest.approx(hits / tot)
        # AUC: fine Riemann sum of the curve over [0.5, 1]
        tt = np.linspace(0.5, 1, 20001)
        _, rr = recall_overlap(props, truths, k, thresholds=tt)
        assert recall_overlap_auc(props, truths, k) == pytest.approx(
            np.trapezoid(rr, tt) / 0.5, abs=1e-3
        )
    perfect = recall_overlap_auc(truths, truths, 10)
    assert perfect == pytest.approx(1.0)


def test_average_precision_simple_cases():
    gt = [np.array([[0, 0, 10, 10]]), np.array([[20, 20, 10, 10]])]
    det = [np.array([[0, 0, 10, 10], [50, 50, 5, 5]]), np.array([[20, 20, 10, 10]])]
    assert average_precision(det, [np.array([0.9, 0.95]), np.array([0.8])], gt) == pytest.approx(
        # ranks: fp (0.95), tp (0.9), tp (0.8): precision at recall .5 is 1/2, at 1 is 2/3
        0.5 * (2 / 3) + 0.5 * (2 / 3)
    )
    assert average_precision(det, [np.array([0.9, 0.1]), np.array([0.8])], gt) == 1.0
    # a duplicate detection of the same object is a false positive
    det2 = [np.array([[0, 0, 10, 10], [0, 0, 10, 10]]), np.zeros((0, 4))]
    assert average_precision(det2, [np.array([1.0, 0.9]), np.zeros(0)], gt) == pytest.approx(0.5)


def test_pyramid_aspect_ratio_levels_are_anisotropic_rescalings():
    """A ratio-``a`` level is hog() of the image rescaled by (s * sqrt(a), s / sqrt(a))
    (rows, cols); its windows are ``a`` times wider relative to their height; snapping a
    box finds the level of its aspect ratio."""
    from skimage.feature import hog
    from skimage.transform import rescale

    from maxmargin.apps.detection.features import to_grey

    rng = np.random.default_rng(1)
    img = (rng.random((90, 120)) * 255).astype(np.uint8)
    # the scikit-image engine: its levels are defined by skimage's rescale + hog (the
    # compiled engine's resize and HOG are checked against their own formulas in
    # tests/apps/detection/test_detection_scan.py)
    pyr = HOGPyramid(
        img, window=(4, 4), scale_step=1.5, aspect_ratios=(0.5, 1.0, 2.0), engine="skimage"
    )
    one = HOGPyramid(img, window=(4, 4), scale_step=1.5, engine="skimage")
    assert len(pyr.levels) > len(one.levels)
    ratios = {round(sy / sx, 6) for sx, sy in pyr.scales}
    assert {0.5, 1.0, 2.0} <= {round(v, 1) for v in ratios}
    lv, r, c = pyr.windows()
    b = pyr.boxes(lv, r, c)
    sx, sy = np.array(pyr.scales)[lv].T
    np.testing.assert_allclose(b[:, 2] / b[:, 3], sy / sx)
    # level for ratio 2 at s = 1: independent hog of the anisotropic rescale
    k = next(i for i, (x, y) in enumerate(pyr.scales) if abs(y / x - 2.0) < 0.05)
    ra = 2**0.5
    ref = rescale(to_grey(img), (ra, 1 / ra), anti_aliasing=True)
    ref = hog(ref, pixels_per_cell=(8, 8), cells_per_block=(2, 2), feature_vector=False)
    np.testing.assert_allclose(pyr.levels[k], ref, rtol=1e-4, atol=1e-5)
    # snapping each window's own box returns that window, aspect level included
    lv2, r2, c2 = pyr.snap(b)
    np.testing.assert_array_equal(lv2, lv)
    np.testing.assert_array_equal(r2, r)
    np.testing.assert_array_equal(c2, c)
    # ratio a means windows a times wider than tall (relative to the window's cells)
    wide = HOGPyramid(img, window=(4, 2), scale_step=1.5, aspect_ratios=(1.5,))
    bw = wide.boxes(*wide.windows())
    np.testing.assert_allclose(bw[:, 2] / bw[:, 3], 2 * 1.5, rtol=0.05)
    with pytest.raises(ValueError, match="aspect_ratios"):
        HOGPyramid(img, aspect_ratios=(1.0, -2.0))


def test_pyramid_colour_uses_the_strongest_channel():
    from skimage.feature import hog

    rng = np.random.default_rng(2)
    img = (rng.random((48, 64, 3)) * 255).astype(np.uint8)
    pyr = HOGPyramid(img, window=(4, 4), scales=[1.0], colour=True)
    ref = hog(
        img.astype(np.float32) / 255,
        pixels_per_cell=(8, 8),
        cells_per_block=(2, 2),
        feature_vector=False,
        channel_axis=-1,
    )
    np.testing.assert_allclose(pyr.levels[0], ref, rtol=1e-4, atol=1e-5)
    grey = HOGPyramid(img, window=(4, 4), scales=[1.0])
    assert not np.allclose(pyr.levels[0], grey.levels[0])


def _channels_by_loops(img, cell, n_or):
    """channel_grid written out pixel by pixel (independent of its array code)."""
    from skimage.color import rgb2luv

    rgb = img if img.ndim == 3 else np.stack([img] * 3, axis=2)
    grey = rgb @ np.array([0.299, 0.587, 0.114]) if img.ndim == 3 else img
    H, W = grey.shape
    out = np.zeros((H // cell, W // cell, 1 + n_or + 3))
    for i in range(H // cell * cell):
        for j in range(W // cell * cell):
            # central differences, one-sided at the border
            i0, i1 = max(i - 1, 0), min(i + 1, H - 1)
            j0, j1 = max(j - 1, 0), min(j + 1, W - 1)
            gy = (grey[i1, j] - grey[i0, j]) / (i1 - i0)
            gx = (grey[i, j1] - grey[i, j0]) / (j1 - j0)
            m = (gx * gx + gy * gy) ** 0.5
            a = np.arctan2(gy, gx) % np.pi
            b = min(int(a / np.pi * n_or), n_or - 1)
            L, u, v = rgb2luv(rgb[i : i + 1, j : j + 1])[0, 0]
            cell_ = out[i // cell, j // cell]
            cell_[0] += m
            cell_[1 + b] += m
            cell_[1 + n_or :] += [L / 100, (u + 100) / 270, (v + 140) / 270]
    return out / cell**2


@pytest.mark.parametrize("colour", [True, False])
def test_channel_grid_against_loops(colour):
    from maxmargin.apps.detection.features import channel_grid

    rng = np.random.default_rng(5)
    img = rng.random((19, 26, 3) if colour else (19, 26))
    got = channel_grid(img.astype(np.float32), 4, orientations=6)
    assert got.shape == (4, 6, 10)
    np.testing.assert_allclose(got, _channels_by_loops(img, 4, 6), rtol=1e-3, atol=2e-4)


def test_pyramid_channels_gather_the_window_cells():
    from maxmargin.apps.detection.features import channel_grid, to_float

    rng = np.random.default_rng(6)
    img = (rng.random((48, 72, 3)) * 255).astype(np.uint8)
    plain = HOGPyramid(img, window=(4, 3), scale_step=1.5)
    pyr = HOGPyramid(img, window=(4, 3), scale_step=1.5, channels=True)
    lv, r, c = pyr.windows()
    D = pyr.descriptors(lv, r, c)
    nh = plain.n_features
    assert pyr.n_features == nh + 4 * 3 * 10 == D.shape[1]
    np.testing.assert_array_equal(D[:, :nh], plain.descriptors(lv, r, c))  # HOG unchanged
    top = lv == 0  # level 0 is the image itself: its cells, window by window
    g = channel_grid(to_float(img), 8)
    for k in np.flatnonzero(top)[::7]:
        np.testing.assert_array_equal(D[k, nh:], g[r[k] : r[k] + 3, c[k] : c[k] + 4].ravel())
    grey = HOGPyramid(img[..., 0], window=(4, 3), scale_step=1.5, channels=True)
    assert grey.n_features == pyr.n_features  # grey images: the same channels (R = G = B)
    with pytest.raises(ValueError, match="channel_orientations"):
        HOGPyramid(img, channels=True, channel_orientations=0)


def test_box_means_against_loops():
    from maxmargin.apps.detection.features import box_means

    rng = np.random.default_rng(7)
    g = rng.random((6, 9, 4)).astype(np.float32)
    for s in (1, 2, 3, 6):
        got = box_means(g, s)
        ref = np.zeros((6 - s + 1, 9 - s + 1, 4))
        for i in range(ref.shape[0]):
            for j in range(ref.shape[1]):
                ref[i, j] = g[i : i + s, j : j + s].reshape(-1, 4).mean(axis=0)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert box_means(g, 7).shape == (0, 3, 4)
    with pytest.raises(ValueError, match="positive size"):
        box_means(g, 0)


def test_pyramid_channel_cells_gather_the_window_squares():
    from maxmargin.apps.detection.features import channel_grid, to_float

    rng = np.random.default_rng(8)
    img = (rng.random((56, 80, 3)) * 255).astype(np.uint8)
    one = HOGPyramid(img, window=(4, 3), scale_step=1.5, channels=True)
    pyr = HOGPyramid(img, window=(4, 3), scale_step=1.5, channels=True, channel_cells=(1, 2, 3))
    lv, r, c = pyr.windows()
    D = pyr.descriptors(lv, r, c)
    n1 = one.n_features
    assert pyr.n_features == n1 + (3 * 2 + 2 * 1) * 10 == D.shape[1]
    np.testing.assert_array_equal(D[:, :n1], one.descriptors(lv, r, c))  # cells unchanged
    g = channel_grid(to_float(img), 8).astype(np.float64)
    for k in np.flatnonzero(lv == 0)[::5]:  # level 0: the image's own cell grid
        want = []
        for s in (2, 3):  # every s x s square of the window's cells, row-major
            for i in range(3 - s + 1):
                for j in range(4 - s + 1):
                    sq = g[r[k] + i : r[k] + i + s, c[k] + j : c[k] + j + s]
                    want.append(sq.reshape(-1, 10).mean(axis=0))
        np.testing.assert_allclose(D[k, n1:], np.concatenate(want), rtol=1e-5, atol=1e-6)
    for bad in ((0,), (1, 1), (1.5,), (5,), ()):
        with pytest.raises(ValueError, match="channel_cells"):
            HOGPyramid(img, window=(4, 3), channels=True, channel_cells=bad)
