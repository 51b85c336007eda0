"""``HOGSVMDetector(feature_map=...)``: an explicit additive-kernel map of the grid cells
(Vedaldi & Zisserman, TPAMI 2012; seed 002 Sec. 5.2), applied once per pyramid level.

The references here are written out independently of
:class:`~maxmargin.learners.kernel_approx.AdditiveKernelMap`: the sampled spectrum of each
kernel (``sech(pi w)`` for chi2, ``2 / (pi (1 + 4 w^2))`` for the intersection kernel) and
the map ``sqrt(x L kappa(0))``, ``sqrt(2 x L kappa(j L)) (cos, sin)(j L log x)``, cell by
cell, window by window.
"""

from __future__ import annotations

import numpy as np
import pytest
from detection_makers import SMALL_FHOG, small_scenes

import maxmargin
from maxmargin.apps.detection import HOGSVMDetector
from maxmargin.apps.detection.features import FHOG_DIM, HOGPyramid
from maxmargin.kernels import additive_kernel, feature_map_error_bound
from maxmargin.learners.kernel_approx import AdditiveKernelMap

EPS32 = 2.0**-24  # float32 rounding of a stored value (relative)
EPS64 = np.finfo(np.float64).eps


def _kappa(w, kernel):
    w = np.asarray(w, dtype=np.float64)
    if kernel == "chi2":
        return 1.0 / np.cosh(np.pi * w)
    return 2.0 / (np.pi * (1.0 + 4.0 * w * w))


def _phi(cells, kernel, order, L):
    """The map of every row of ``cells`` (m, d): ``(m, d (2 order + 1))`` in the layout
    [j = 0 of the d features, then cos_1, sin_1, ..., cos_n, sin_n], x = 0 -> 0."""
    x = np.asarray(cells, dtype=np.float64)
    pos = x > 0
    lx = np.log(np.where(pos, x, 1.0))
    out = [np.sqrt(x * L * _kappa(0.0, kernel))]
    for j in range(1, order + 1):
        f = np.sqrt(2.0 * x * L * _kappa(j * L, kernel))
        out.append(np.where(pos, f * np.cos(j * L * lx), 0.0))
        out.append(np.where(pos, f * np.sin(j * L * lx), 0.0))
    return np.hstack(out)


def _photo(seed=0, shape=(64, 80)):
    """A textured non-constant test image (smooth blobs plus noise), grey."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[: shape[0], : shape[1]]
    img = 0.5 + 0.3 * np.sin(xx / 5.0 + rng.uniform(0, 6)) * np.cos(yy / 7.0)
    img += rng.normal(0, 0.05, shape)
    return np.clip(img, 0, 1).astype(np.float32)


def _fitted_map(kernel, order, L=None, d=FHOG_DIM):
    return AdditiveKernelMap(kernel=kernel, sample_steps=order + 1, sample_interval=L).fit(
        np.zeros((1, d))
    )


@pytest.fixture(scope="module")
def scenes():
    return small_scenes(8, 3)


@pytest.mark.parametrize("kernel", ["chi2", "intersection"])
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize(("pad", "mode"), [(0, "zero"), (2, "zero"), (2, "edge")])
def test_mapped_grid_is_the_map_of_every_cell(kernel, order, pad, mode):
    """Every level's mapped grid equals the written-out map of the unmapped grid's cells
    (padding cells included), to the float32 rounding of the stored values."""
    img = _photo(1)
    m = _fitted_map(kernel, order)
    kw = dict(window=(3, 3), features="fhog", scale_step=1.3, pad=pad, pad_mode=mode)
    plain = HOGPyramid(img, **kw)
    mapped = HOGPyramid(img, feature_map=m, **kw)
    assert mapped.cell_dim == FHOG_DIM * (2 * order + 1)
    assert mapped.n_features == plain.n_features * (2 * order + 1)
    assert len(mapped.levels) == len(plain.levels) >= 3
    for g0, g in zip(plain.levels, mapped.levels):
        ref = _phi(g0.reshape(-1, FHOG_DIM), kernel, order, m.sample_interval_)
        ref = ref.reshape(g0.shape[0], g0.shape[1], -1)
        assert g.shape == ref.shape and g.dtype == np.float32
        tol = 2 * EPS32 * np.abs(ref) + 1e-300
        assert np.all(np.abs(g - ref) <= tol)


@pytest.mark.parametrize("kernel", ["chi2", "intersection"])
@pytest.mark.parametrize("context", [0.0, 1.0])
def test_mapped_scan_equals_window_by_window_dot_products(scenes, kernel, context):
    """The compiled scan of a fitted mapped detector, level by level, equals the dot
    products of its filter with every window's descriptor built by hand: the unmapped
    window's cells, each mapped by the written-out map.  Bound: the float32 rounding of
    the stored mapped values plus ``d`` float64 epsilons, of ``sum |x w|``."""
    images, boxes = scenes
    det = HOGSVMDetector(**SMALL_FHOG, feature_map=kernel, context=context).fit(images, boxes)
    L = det.feature_map_.sample_interval_
    plain = HOGSVMDetector(**SMALL_FHOG, context=context)
    w, b = det.coef_, det.intercept_
    h, wd = det.window[1], det.window[0]
    checked = 0
    for img in images[:3]:
        pyr = det._pyramid(img)
        pyr0 = plain._pyramid(img)
        assert len(pyr.levels) == len(pyr0.levels)
        for k in range(len(pyr.levels)):
            nr, nc = pyr.positions(k)
            S = det._level_scores(pyr, k, None)
            assert S.shape == (nr, nc)
            r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
            X0 = pyr0.descriptors(np.full(r.size, k), r.ravel(), c.ravel())
            cells = X0.reshape(-1, FHOG_DIM).astype(np.float64)
            X = _phi(cells, kernel, 1, L).reshape(len(X0), h * wd, -1).reshape(len(X0), -1)
            ref = X @ w + b
            bound = (EPS32 + len(w) * EPS64) * (np.abs(X) @ np.abs(w)) + 1e-12
            assert np.all(np.abs(S.ravel() - ref) <= bound)
            checked += S.size
    assert checked > 100


@pytest.mark.parametrize("kernel", ["chi2", "intersection"])
@pytest.mark.parametrize("order", [1, 2])
def test_mapped_inner_products_within_the_stated_bound(kernel, order):
    """Per dimension, the mapped cells' inner products are within
    :func:`feature_map_error_bound` of the exact kernel (``min`` / ``2xy/(x+y)``) where
    the bound is stated (both values positive, within half the period), plus the float32
    rounding of the stored values; zeros are exact.  And the order-2 map's error is
    smaller than the order-1 map's on the same pairs (the bound's tail shrinks)."""
    img = _photo(2)
    m = _fitted_map(kernel, order)
    L = m.sample_interval_
    plain = HOGPyramid(img, window=(3, 3), features="fhog", scale_step=1.3)
    mapped = HOGPyramid(img, window=(3, 3), features="fhog", scale_step=1.3, feature_map=m)
    x0 = plain.levels[0].reshape(-1, FHOG_DIM).astype(np.float64)
    z = mapped.levels[0].reshape(len(x0), -1).astype(np.float64)  # (cells, d (2n + 1))
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, len(x0), (2, 400))
    n_out = 2 * order + 1
    zi = z[i].reshape(len(i), n_out, FHOG_DIM)
    zj = z[j].reshape(len(j), n_out, FHOG_DIM)
    approx = (zi * zj).sum(axis=1)  # (pairs, d): per-dimension inner products
    xi, xj = x0[i], x0[j]
    exact = np.stack(
        [np.diag(additive_kernel(xi[:, p : p + 1], xj[:, p : p + 1], kernel)) for p in range(31)],
        axis=1,
    )
    both = (xi > 0) & (xj > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = feature_map_error_bound(
            np.where(both, xi, 1.0), np.where(both, xj, 1.0), kernel, order + 1, L
        )
    stated = both & np.isfinite(bound)
    assert stated.sum() > 1000  # the bound is exercised, not vacuous
    rounding = 4 * EPS32 * np.sqrt((zi**2).sum(1) * (zj**2).sum(1))
    err = np.abs(approx - exact)
    assert np.all(err[stated] <= bound[stated] + rounding[stated])
    assert np.all(err[~both] <= rounding[~both])  # a zero value maps to zero


def test_map_error_falls_with_the_order():
    """The sampled-spectrum approximation improves from order 1 to order 2 (same L)."""
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0.01, 0.3, (2, 2000))
    for kernel in ("chi2", "intersection"):
        e = []
        for order in (1, 2):
            zx = _phi(x[:, None], kernel, order, 0.5)
            zy = _phi(y[:, None], kernel, order, 0.5)
            exact = np.diag(additive_kernel(x[:, None], y[:, None], kernel))
            e.append(np.abs((zx * zy).sum(1) - exact).max())
        assert e[1] < e[0]


def test_default_is_the_unmapped_detector(scenes):
    """``feature_map=None`` (the default) fits and scans bit for bit as before: the same
    pyramid, no map object."""
    images, boxes = scenes
    a = HOGSVMDetector(**SMALL_FHOG).fit(images, boxes)
    b = HOGSVMDetector(**SMALL_FHOG, feature_map=None, map_order=2).fit(images, boxes)
    assert a.feature_map_ is None and b.feature_map_ is None
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a._pyramid(images[0]).cell_dim == FHOG_DIM


@pytest.mark.parametrize(("kernel", "order", "L"), [("chi2", 1, None), ("intersection", 2, 0.7)])
def test_mapped_detector_saves_and_loads(scenes, tmp_path, kernel, order, L):
    images, boxes = scenes
    det = HOGSVMDetector(
        **SMALL_FHOG, feature_map=kernel, map_order=order, map_interval=L, context=1.0
    ).fit(images, boxes)
    assert len(det.coef_) == 9 * FHOG_DIM * (2 * order + 1)
    back = maxmargin.load(maxmargin.save(det, tmp_path / "m.npz"))
    assert back.feature_map_.sample_interval_ == det.feature_map_.sample_interval_
    assert back.feature_map_.sample_steps == order + 1
    for img in images[:3]:
        b0, s0 = det.detect(img)
        b1, s1 = back.detect(img)
        np.testing.assert_array_equal(b0, b1)
        np.testing.assert_array_equal(s0, s1)


def test_load_keeps_the_saved_sampling_step(scenes, tmp_path, monkeypatch):
    """The file's sampling step, not today's default, rebuilds the map."""
    import maxmargin.learners.kernel_approx as ka

    images, boxes = scenes
    det = HOGSVMDetector(**SMALL_FHOG, feature_map="intersection").fit(images, boxes)
    path = maxmargin.save(det, tmp_path / "m.npz")
    monkeypatch.setattr(ka, "_INTERSECTION_INTERVAL", 0.3)
    back = maxmargin.load(path)
    assert back.feature_map_.sample_interval_ == det.feature_map_.sample_interval_ != 0.3
    np.testing.assert_array_equal(back.detect(images[0])[1], det.detect(images[0])[1])


def test_mapped_components_and_hog_blocks(scenes):
    """The map reaches every filter of a mixture, and L2-Hys blocks map as well."""
    images, boxes = scenes
    det = HOGSVMDetector(**SMALL_FHOG, feature_map="chi2", components=2).fit(images, boxes)
    assert all(c.feature_map_ is not None for c in det.components_)
    assert all(len(c.coef_) == 9 * FHOG_DIM * 3 for c in det.components_)
    p = {**SMALL_FHOG, "features": "hog", "window": (4, 4)}
    hog = HOGSVMDetector(**p, feature_map="intersection").fit(images, boxes)
    assert len(hog.coef_) == 9 * 4 * 9 * 3  # 3 x 3 blocks of 2 x 2 cells x 9 bins, mapped
    assert len(hog.detect(images[0])[1]) > 0


@pytest.mark.parametrize(
    "bad",
    [
        {"feature_map": "rbf"},
        {"feature_map": "chi2", "map_order": -1},
        {"feature_map": "chi2", "map_order": 1.5},
        {"feature_map": "chi2", "map_order": True},
        {"feature_map": "chi2", "map_order": 11, "map_interval": 0.3},  # at most 10
        {"feature_map": "chi2", "map_interval": 0.0},
        {"feature_map": "chi2", "map_interval": -0.5},
        {"feature_map": "chi2", "map_interval": float("nan")},
        {"feature_map": "intersection", "map_interval": float("inf")},
        {"feature_map": "chi2", "map_order": 3},  # sklearn's steps stop at order 2
    ],
)
def test_bad_feature_map_parameters(scenes, bad):
    images, boxes = scenes
    with pytest.raises(ValueError):
        HOGSVMDetector(**SMALL_FHOG, **bad).fit(images, boxes)


def test_chi2_order_3_with_a_step_is_accepted(scenes):
    images, boxes = scenes
    det = HOGSVMDetector(**SMALL_FHOG, feature_map="chi2", map_order=3, map_interval=0.3)
    det.fit(images, boxes)
    assert len(det.coef_) == 9 * FHOG_DIM * 7


@pytest.mark.parametrize("value", [None, "x", -1.0, float("nan")])
def test_corrupt_sampling_step_in_the_file(scenes, tmp_path, value):
    images, boxes = scenes
    det = HOGSVMDetector(**SMALL_FHOG, feature_map="chi2").fit(images, boxes)
    meta, arrays = det._get_state()
    meta = dict(meta)
    if value is None:
        del meta["feature_map_interval"]
    else:
        meta["feature_map_interval"] = value
    with pytest.raises(ValueError, match="sampling step"):
        HOGSVMDetector._from_state(meta, arrays)


def test_negative_cells_are_refused():
    """The map needs non-negative values: a grid with a negative one is refused."""
    from maxmargin.apps.detection.features import map_cells

    g = np.abs(np.random.default_rng(0).normal(size=(2, 3, FHOG_DIM))).astype(np.float32)
    map_cells(_fitted_map("chi2", 1), g)
    g[1, 2, 5] = -1e-3
    with pytest.raises(ValueError, match="Negative"):
        map_cells(_fitted_map("chi2", 1), g)


@pytest.mark.parametrize(
    ("name", "value"),
    [("map_order", 2.5), ("map_order", -1), ("map_order", "x"), ("map_order", True),
     ("map_order", 11),
     ("map_interval", -0.5), ("map_interval", "x"), ("feature_map", "rbf")],
)  # fmt: skip
def test_corrupt_map_settings_in_the_file(scenes, name, value):
    """A model file's map settings are checked as ``fit`` checks them: a corrupt order
    (2.5 was read as 2, a map of another size than the saved filter's) is refused at
    load with a clear ValueError, not at the first ``detect``."""
    images, boxes = scenes
    det = HOGSVMDetector(**SMALL_FHOG, feature_map="chi2").fit(images, boxes)
    meta, arrays = det._get_state()
    meta = {**meta, "params": {**meta["params"], name: value}}
    with pytest.raises(ValueError, match="model file: " + name):
        HOGSVMDetector._from_state(meta, arrays)
