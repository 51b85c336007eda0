"""Detector model files whose saved filter (or cascade, or ranker) does not fit their
settings are refused at load with a clear ValueError.

Before, such a file loaded and failed only at the first ``detect`` (a size mismatch in
the filter scan) -- or did not fail at all: a filter one entry too long scanned with its
last entry ignored, and a cascade stump past the descriptor read the location prior's
column.  The length a file must have is written out here from the settings (HOG blocks
``(w - b + 1) (h - b + 1) b^2 o``, FHOG ``31 w h`` times ``2 n + 1`` with a cell map of
order ``n``, the channel aggregates, one prior column), not taken from the loader.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from detection_makers import SMALL_FHOG, small_scenes, two_aspect_scenes

import maxmargin
from maxmargin.apps.detection import CascadeDetector, HOGSVMDetector, ProposalRanker
from maxmargin.apps.detection.features import FHOG_DIM


@pytest.fixture(scope="module")
def scenes():
    return small_scenes(8, 3)


@pytest.fixture(scope="module")
def fhog_map(scenes):
    """FHOG on 3 x 3 cells, chi2 cell map of order 1: ``31 * 9 * 3`` features."""
    return HOGSVMDetector(**SMALL_FHOG, feature_map="chi2").fit(*scenes)


@pytest.fixture(scope="module")
def hog_prior(scenes):
    """L2-Hys HOG blocks of 2 x 2 cells on 3 x 3 cells and the location prior."""
    kw = {**SMALL_FHOG, "features": "hog", "location_prior": True}
    return HOGSVMDetector(**kw).fit(*scenes)


def test_the_lengths_written_out_are_the_fitted_ones(fhog_map, hog_prior):
    assert fhog_map.coef_.shape == (FHOG_DIM * 3 * 3 * 3,)
    assert hog_prior.coef_.shape == (2 * 2 * (2 * 2 * 9) + 1,)


@pytest.mark.parametrize("delta", [-1, 1])
@pytest.mark.parametrize("which", ["fhog_map", "hog_prior"])
def test_a_file_with_a_wrong_length_filter_is_refused_at_load(which, delta, request, tmp_path):
    det = request.getfixturevalue(which)
    n = len(det.coef_)
    good = det.coef_
    try:
        det.coef_ = np.concatenate([good, [0.5]]) if delta > 0 else good[:-1]
        path = maxmargin.save(det, tmp_path / "bad.npz")  # a valid file, checksummed
    finally:
        det.coef_ = good
    with pytest.raises(ValueError, match=rf"the filter \(coef\) has {n + delta} entries.*{n}"):
        maxmargin.load(path)
    maxmargin.load(maxmargin.save(det, tmp_path / "good.npz"))  # the file as fitted loads


@pytest.mark.parametrize(
    ("which", "name", "value", "want"),
    [
        ("fhog_map", "window", [4, 3], FHOG_DIM * 12 * 3),
        ("fhog_map", "map_order", 2, FHOG_DIM * 9 * 5),
        ("fhog_map", "features", "hog", 4 * 36 * 3),
        ("hog_prior", "orientations", 8, 4 * 32 + 1),
        ("hog_prior", "block", 1, 9 * 9 + 1),
        ("hog_prior", "channels", True, 4 * 36 + 9 * 10 + 1),
    ],
)
def test_settings_that_do_not_fit_the_saved_filter_are_refused(request, which, name, value, want):
    """The same filter under other settings: the file's settings and its filter disagree."""
    det = request.getfixturevalue(which)
    meta, arrays = det._get_state()
    meta = {**meta, "params": {**meta["params"], name: value}}
    with pytest.raises(ValueError, match=rf"model file: the filter .* give windows of {want} "):
        HOGSVMDetector._from_state(meta, arrays)


def test_a_file_without_its_prior_column_setting_is_refused(hog_prior):
    """location_prior off: one entry too many (the old loader scanned it, ignoring it)."""
    meta, arrays = hog_prior._get_state()
    meta = {**meta, "params": {**meta["params"], "location_prior": False}}
    with pytest.raises(ValueError, match=r"has 145 entries.* 144 features"):
        HOGSVMDetector._from_state(meta, arrays)


@pytest.mark.parametrize(
    ("what", "value", "match"),
    [
        ("coef", np.zeros((2, 3)), "coef must be a 1-D array"),
        ("coef", np.full(FHOG_DIM * 9 * 3, np.nan), "coef contains NaN"),
        ("intercept", [0.5], "intercept must be a number"),
        ("intercept", float("inf"), "intercept must be finite"),
        ("window", [3], "window must be two positive integers"),
        ("window", [3, 0], "window must be two positive integers"),
        ("cell", 0, "model file: cell"),
        ("channel_cells", [5], "window settings are corrupt"),
    ],
)
def test_corrupt_filter_or_settings(fhog_map, what, value, match):
    meta, arrays = fhog_map._get_state()
    meta, arrays = dict(meta), dict(arrays)
    if what == "coef":
        arrays["coef"] = value
    elif what == "intercept":
        meta["intercept"] = value
    else:
        meta["params"] = {**meta["params"], what: value}
        if what == "channel_cells":
            meta["params"]["channels"] = True
    with pytest.raises(ValueError, match=match):
        HOGSVMDetector._from_state(meta, arrays)


def test_a_component_with_a_wrong_length_filter_is_refused():
    X, B = two_aspect_scenes(10, 0)
    det = HOGSVMDetector(**{**SMALL_FHOG, "components": 2}).fit(X, B)
    meta, arrays = det._get_state()
    arrays = {**arrays, "component1__coef": arrays["component1__coef"][:-2]}
    with pytest.raises(ValueError, match=rf"has {FHOG_DIM * 9 - 2} entries"):
        HOGSVMDetector._from_state(meta, arrays)


def test_an_extent_filter_with_a_wrong_length_filter_is_refused(scenes):
    X, B = scenes
    det = HOGSVMDetector(**{**SMALL_FHOG, "context": 1.0, "extent": {}}).fit(X, B)
    meta, arrays = det._get_state()
    arrays = {**arrays, "extent__coef": np.append(arrays["extent__coef"], 1.0)}
    with pytest.raises(ValueError, match=rf"has {FHOG_DIM * 9 + 1} entries"):
        HOGSVMDetector._from_state(meta, arrays)


@pytest.fixture(scope="module")
def cascade(scenes):
    kw = dict(window=(3, 3), n_stages=2, max_weak=[2, 4], random_state=0)
    return CascadeDetector(channels=True, location_prior=True, **kw).fit(*scenes)


def test_cascade_lengths_written_out(cascade):
    assert cascade.cascade_.n_features_in_ == 4 * 36 + 9 * 10 + 1


@pytest.mark.parametrize(
    ("name", "value", "want"),
    [("channels", False, 4 * 36 + 1), ("location_prior", False, 4 * 36 + 9 * 10)],
)
def test_a_cascade_file_whose_settings_do_not_fit_its_stumps_is_refused(
    cascade, name, value, want, tmp_path
):
    meta, arrays = cascade._get_state()
    meta = {**meta, "params": {**meta["params"], name: value}}
    with pytest.raises(ValueError, match=rf"the cascade's input has 235 entries.* {want} "):
        CascadeDetector._from_state(meta, arrays)
    back = maxmargin.load(maxmargin.save(cascade, tmp_path / "c.npz"))
    assert back.cascade_.n_features_in_ == 235


@pytest.fixture(scope="module")
def ranker(scenes):
    return ProposalRanker(window=(3, 3), n_train_windows=50, n_candidates=50, random_state=0).fit(
        *scenes
    )


def test_a_ranker_file_whose_settings_do_not_fit_its_ranker_is_refused(ranker, tmp_path):
    assert ranker.ranker_.n_features_in_ == 4 * 36 + 6
    meta, arrays = ranker._get_state()
    bad = {**meta, "params": {**meta["params"], "orientations": 8}}
    with pytest.raises(ValueError, match=r"the ranker has 150 inputs.* 134 features"):
        ProposalRanker._from_state(bad, arrays)
    with pytest.raises(ValueError, match="model file: mean has 149 entries"):
        ProposalRanker._from_state(meta, {**arrays, "mean": arrays["mean"][:-1]})
    with pytest.raises(ValueError, match="model file: scale must be positive"):
        ProposalRanker._from_state(meta, {**arrays, "scale": 0 * arrays["scale"]})
    with pytest.raises(ValueError, match="box distribution is corrupt"):
        ProposalRanker._from_state(meta, {**arrays, "box_scale": np.ones(3)})
    maxmargin.load(maxmargin.save(ranker, tmp_path / "p.npz"))


@pytest.mark.parametrize("pad", ["zero", "edge"])
def test_a_hostile_window_and_context_cost_nothing_at_load(hog_prior, pad):
    """window 2000 x 2000 cells of 1 px with a huge context: the padded grid holds a
    window at a level of one cell, so a 1 x 1 probe image had a level -- 0.5-1 GB and
    2-3 s before the ValueError (at 6000 cells a MemoryError, which io.load does not
    turn into a ValueError).  The probe must build no level and allocate ~nothing."""
    meta, arrays = hog_prior._get_state()
    params = {"window": [2000, 2000], "cell": 1, "context": 1e200, "context_pad": pad}
    meta = {**meta, "params": {**meta["params"], **params}}
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"the filter \(coef\) has 145 entries"):
            HOGSVMDetector._from_state(meta, dict(arrays))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20


@pytest.mark.parametrize("value", ["no", 0, 1, None, [True]])
def test_a_flag_that_is_not_json_true_or_false_is_refused(hog_prior, value):
    """``converged: "no"`` loaded as True through ``bool(...)``; a file's flags must be
    JSON ``true`` / ``false``."""
    meta, arrays = hog_prior._get_state()
    with pytest.raises(ValueError, match="converged must be true or false"):
        HOGSVMDetector._from_state({**meta, "converged": value}, dict(arrays))
    for ok in (True, False):
        est = HOGSVMDetector._from_state({**meta, "converged": ok}, dict(arrays))
        assert est.converged_ is ok
