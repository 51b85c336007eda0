"""Checks every registered estimator must pass (issues 15, 29): scikit-learn's estimator
checks, a pickle-free save / load round trip that predicts the same, sparse input where the
README claims it, and the shared ``history_`` schema.

The estimators come from the one registry (:mod:`maxmargin._registry`), so an estimator
is covered as soon as it is decorated with ``@register``.  The applications' estimators
(segmenter, detectors, trackers) take images, not a feature matrix: they get the checks
that apply to them (parameters, ``_parameter_constraints``, save / load)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import parametrize_with_checks

import maxmargin
from maxmargin import (
    AdaBoostECC,
    AdaBoostMH,
    AdaBoostMO,
    AdditiveKernelMap,
    BinaryAdaBoost,
    BoostedCascade,
    ForwardFeatureSelector,
    KernelSSVM,
    LatentSSVM,
    MultiBoost,
    MultiBoostCW,
    MultiClassTask,
    RankSVM,
    SimilarityFeatures,
    SparseKernelSVM,
    SSVMClassifier,
    StructBoost,
    StructBoostClassifier,
    StructBoostRanker,
    StructSVM,
    SVMClassifier,
    TCBoostClassifier,
    _registry,
)


def estimators():
    """One small-but-real configuration of every public estimator."""
    return [
        StructBoostClassifier(max_iter=20, random_state=0),
        StructBoost(task=MultiClassTask(), max_iter=20, random_state=0),
        StructBoostRanker(max_iter=10),
        StructSVM(task=MultiClassTask(), max_iter=50),
        SSVMClassifier(tol=1e-2, max_iter=100),
        KernelSSVM(max_iter=50),
        LatentSSVM(max_outer=3, max_iter=50, tol=1e-2, random_state=0),
        MultiBoostCW(max_iter=20, random_state=0),
        MultiBoost(max_iter=20, random_state=0),
        AdaBoostMH(max_iter=20, random_state=0),
        AdaBoostECC(max_iter=20, random_state=0),
        AdaBoostMO(max_iter=20, random_state=0),
        RankSVM(max_iter=50),
        SVMClassifier(solver="dual_cd", tol=1e-2, random_state=0),
        SVMClassifier(solver="smo", kernel="rbf"),
        SVMClassifier(solver="pegasos", max_iter=50, tol=0.5, random_state=0),
        SVMClassifier(solver="1-slack"),
        ForwardFeatureSelector(n_features_to_select=2),
        TCBoostClassifier(max_iter=10),
        BinaryAdaBoost(max_iter=10),
        SparseKernelSVM(n_basis=10),
        AdditiveKernelMap(),
        SimilarityFeatures(n_exemplars=10, random_state=0),
        AdditiveKernelMap(kernel="intersection", sample_steps=3),
        BinaryAdaBoost(variant="real", max_iter=10),
        TCBoostClassifier(loss="logistic", penalty="l2", max_iter=5),
        ForwardFeatureSelector(penalty="l1", loss="logistic"),
        ForwardFeatureSelector(n_features_to_select=2, overselect=2.5),
        ForwardFeatureSelector(k_path=[1, 2], overselect=2.0, loss="squared_hinge"),
        BoostedCascade(n_stages=3, max_weak=10, random_state=0),
        BoostedCascade(stage_learner="lacboost", n_stages=2, max_weak=5, recycle=0.5),
        BoostedCascade(n_stages=3, max_weak=(2, 5), random_state=0),
    ]


def app_estimators():
    """One small configuration of every application estimator (images in, not X)."""
    from maxmargin.apps.detection import (
        CascadeDetector,
        HaarCascadeDetector,
        HOGSVMDetector,
        ProposalRanker,
    )
    from maxmargin.apps.segmentation import Segmenter
    from maxmargin.apps.tracking import AdaBoostTracker, SSVMTracker, StructBoostTracker

    return [
        Segmenter(learner="unary", n_segments=30, unary_iter=5, patch_sizes=(8,), random_state=0),
        HOGSVMDetector(window=(3, 3), C=0.1, max_working_set=300, random_state=0),
        CascadeDetector(window=(3, 3), n_stages=2, max_weak=5, random_state=0),
        ProposalRanker(n_train_windows=100, n_candidates=100, random_state=0),
        HaarCascadeDetector(n_features=50, n_negatives=50, random_state=0),
        StructBoostTracker(random_state=0),
        AdaBoostTracker(random_state=0),
        SSVMTracker(random_state=0),
    ]


REGISTERED = _registry.estimators()


def test_every_registered_estimator_is_covered():
    covered = sorted(type(e).__name__ for e in [*estimators(), *app_estimators()])
    assert sorted(set(covered)) == sorted(REGISTERED)


def test_every_public_estimator_is_registered():
    public = {
        name
        for name in maxmargin.__all__
        if isinstance(getattr(maxmargin, name), type) and hasattr(getattr(maxmargin, name), "fit")
    }
    assert public <= set(REGISTERED)
    assert all(REGISTERED[name] is getattr(maxmargin, name) for name in public)


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="already registered"):
        _registry.register("StructBoost")(type("StructBoost", (), {}))
    assert _registry.register(REGISTERED["StructBoost"]) is REGISTERED["StructBoost"]


APPS = app_estimators()


@pytest.mark.parametrize("est", APPS, ids=lambda e: type(e).__name__)
def test_app_estimator_parameters(est):
    """scikit-learn's parameter contract: get_params / set_params / clone, no work in
    __init__, and a ``_parameter_constraints`` entry for every parameter."""
    from sklearn.base import clone
    from sklearn.utils import estimator_checks as ec

    name = type(est).__name__
    if not name.endswith("Tracker"):
        # (a tracker's default ``sampling`` is a frozen Sampling value object, which this
        # check rejects by type only: immutable, so sharing the default is safe, and
        # clone / get_params / set_params(sampling__x=...) are checked below)
        ec.check_parameters_default_constructible(name, est)
    ec.check_no_attributes_set_in_init(name, est)
    ec.check_get_params_invariance(name, est)
    ec.check_set_params(name, est)
    assert clone(est).get_params() == est.get_params()
    assert set(type(est)._parameter_constraints) == set(est.get_params(deep=False))
    for param in est.get_params(deep=False):  # checked before any image is looked at
        with pytest.raises(ValueError, match=param):
            bad = clone(est).set_params(**{param: object()})
            if name.endswith("Tracker"):  # trained online: init(frame, box) is its fit
                bad.init(np.zeros((32, 32)), (8, 8, 8, 8))
            else:
                bad.fit([], [])


def _app_data(est):
    from maxmargin.datasets import make_detection_scenes

    if type(est).__name__ == "Segmenter":
        rng = np.random.default_rng(5)
        yy, xx = np.mgrid[:32, :32]
        images, masks = [], []
        for _ in range(3):
            cy, cx = rng.uniform(10, 22, 2)
            m = ((yy - cy) / 8) ** 2 + ((xx - cx) / 6) ** 2 <= 1
            base = np.where(m[..., None], [0.6, 0.45, 0.4], [0.45, 0.5, 0.55])
            images.append(np.clip(base + 0.2 * rng.normal(size=(32, 32, 3)), 0, 1))
            masks.append(m)
        return images, masks
    return make_detection_scenes(6, random_state=0)


def _app_outputs(est, images):
    if type(est).__name__ == "Segmenter":
        return [est.decision_function(im) for im in images]
    if type(est).__name__ == "ProposalRanker":
        return [est.propose(im, rng=k)[0] for k, im in enumerate(images)]
    return [np.asarray(part) for found in est.predict(images) for part in found]


@pytest.mark.parametrize("est", app_estimators(), ids=lambda e: type(e).__name__)
def test_app_save_load_round_trip(est, tmp_path):
    import warnings

    if type(est).__name__ == "HaarCascadeDetector":
        pytest.skip(
            "trained on face crops and face-free photos, not images with boxes: its save / "
            "load round trip is tests/apps/detection/test_detection_haar.py"
        )
    if not hasattr(est, "_get_state"):
        pytest.skip(
            "a tracker has no model file: it is trained online on each sequence it tracks "
            "(no _get_state / _from_state)"
        )
    images, truth = _app_data(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(images, truth)
    back = maxmargin.load(maxmargin.save(est, tmp_path / "model.npz"))
    assert type(back) is type(est)
    for a, b in zip(_app_outputs(est, images), _app_outputs(back, images)):
        np.testing.assert_array_equal(a, b)
    assert back.get_params(deep=False) == est.get_params(deep=False)


@parametrize_with_checks(estimators())
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _data(est):
    X, y = load_iris(return_X_y=True)
    if isinstance(est, (StructBoostRanker, RankSVM)):
        y = (y == 2).astype(float)
    if isinstance(est, (TCBoostClassifier, BinaryAdaBoost, SparseKernelSVM, BoostedCascade)):
        y = y == 2
    return X, y


def _outputs(est, X):
    out = [est.predict(X) if hasattr(est, "predict") else est.transform(X)]
    if hasattr(est, "decision_function"):
        out.append(est.decision_function(X))
    return out


@pytest.mark.parametrize("est", estimators(), ids=lambda e: type(e).__name__)
def test_save_load_round_trip(est, tmp_path):
    X, y = _data(est)
    est.fit(X, y)
    path = maxmargin.save(est, tmp_path / "model.npz")
    back = maxmargin.load(path)
    assert type(back) is type(est)
    for a, b in zip(_outputs(est, X), _outputs(back, X)):
        np.testing.assert_array_equal(a, b)
    assert back.get_params(deep=False).keys() == est.get_params(deep=False).keys()


@pytest.mark.parametrize("est", estimators(), ids=lambda e: type(e).__name__)
def test_history_schema(est):
    if isinstance(est, (AdditiveKernelMap, SimilarityFeatures)):
        pytest.skip("a closed-form feature map: no iterations to record")
    X, y = _data(est)
    est.fit(X, y)
    assert len(est.history_) >= 1
    for rec in est.history_:
        assert {"iteration", "objective", "gap", "t_total"} <= set(rec), type(est).__name__
        assert np.isfinite(rec["objective"]) and rec["t_total"] >= 0


@pytest.mark.parametrize("est", estimators(), ids=lambda e: type(e).__name__)
def test_sparse_input_gives_the_dense_result(est):
    X, y = _data(est)
    dense = est.fit(X, y)
    pred = _outputs(dense, X)[0]
    sparse = type(est)(**est.get_params()).fit(sp.csr_matrix(X), y)
    out = _outputs(sparse, sp.csr_matrix(X))[0]
    np.testing.assert_allclose(out.toarray() if sp.issparse(out) else out, pred)


class _CtrlC:
    """A callback that raises KeyboardInterrupt (as Ctrl-C would) at its n-th call."""

    def __init__(self, at: int) -> None:
        self.at, self.calls = at, 0

    def __call__(self, record) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt


@pytest.mark.parametrize(
    "est",
    [e for e in estimators() if "callback" in e.get_params()],
    ids=lambda e: type(e).__name__,
)
def test_ctrl_c_keeps_the_model_of_the_last_completed_iteration(est, tmp_path):
    from maxmargin.exceptions import FitInterruptedWarning

    X, y = _data(est)
    est = type(est)(**{**est.get_params(), "callback": _CtrlC(2)})
    with pytest.warns(FitInterruptedWarning, match="interrupted"):
        est.fit(X, y)
    assert not getattr(est, "converged_", False)
    assert len(est.history_) >= 1
    out = _outputs(est, X)
    assert all(np.all(np.isfinite(np.asarray(o, dtype=float))) for o in out[1:])
    path = tmp_path / "m.npz"
    maxmargin.save(est.set_params(callback=None), path)
    for a, b in zip(_outputs(maxmargin.load(path), X), out):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls", [StructBoostRanker, RankSVM])
def test_ranker_trained_with_groups_needs_groups_to_score(cls, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(float)
    group = np.repeat(np.arange(4), 10)
    est = cls(max_iter=10).fit(X, y, group=group)
    est.score(X, y, group=group)
    with pytest.raises(ValueError, match="pass group"):
        est.score(X, y)
    back = maxmargin.load(maxmargin.save(est, tmp_path / "r.npz"))
    with pytest.raises(ValueError, match="pass group"):
        back.score(X, y)
    bad = group.astype(float)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls(max_iter=10).fit(X, y, group=bad)
    cls(max_iter=10).fit(X, y).score(X, y)  # trained without groups: fine without


def test_feature_names_survive_save_load(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = load_iris(return_X_y=True, as_frame=True)
    est = StructBoostClassifier(max_iter=5, random_state=0).fit(X, y)
    back = maxmargin.load(maxmargin.save(est, tmp_path / "m.npz"))
    assert list(back.feature_names_in_) == list(X.columns)
    with pytest.raises(ValueError, match="feature names"):
        back.predict(pd.DataFrame(X[X.columns[::-1]]))
