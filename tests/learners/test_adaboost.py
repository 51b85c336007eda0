"""AdaBoost.MH / ECC / MO baselines on the package's weak learners."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

from maxmargin import io as mmio
from maxmargin.learners.adaboost import AdaBoostECC, AdaBoostMH, AdaBoostMO


def _data():
    X, y = load_iris(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))
    return X[idx[:100]], y[idx[:100]], X[idx[100:]], y[idx[100:]]


ESTIMATORS = [
    AdaBoostMH(max_iter=60),
    AdaBoostECC(max_iter=60, random_state=0),
    AdaBoostMO(max_iter=30, random_state=0),
    AdaBoostMO(max_iter=30, code="ova"),
    AdaBoostMO(max_iter=30, code="exhaustive"),
]


@pytest.mark.parametrize("est", ESTIMATORS)
def test_fit_history_staged(est):
    X, y, Xv, yv = _data()
    est.fit(X, y, eval_set=(Xv, yv))
    assert est.score(X, y) > 0.95 and est.score(Xv, yv) > 0.85
    obj = np.array([r["objective"] for r in est.history_])
    assert np.all(np.diff(obj) <= 1e-12)  # optimal step sizes never increase the loss
    staged = list(est.staged_predict(Xv))
    assert len(staged) == est.n_iter_ == len(est.history_)
    np.testing.assert_array_equal(staged[-1], est.predict(Xv))
    np.testing.assert_allclose(
        [np.mean(p != yv) for p in staged], [r["val_error"] for r in est.history_]
    )


def test_mo_codes():
    X, y, _, _ = _data()
    ex = AdaBoostMO(max_iter=2, code="exhaustive").fit(X, y)
    assert ex.code_.shape == (3, 3)
    rnd = AdaBoostMO(max_iter=2, n_codes=5, random_state=0).fit(X, y)
    assert rnd.code_.shape == (3, 5)
    assert np.all(np.abs(rnd.code_.sum(axis=0)) < 3)  # no constant column
    with pytest.raises(ValueError, match="code must be"):
        AdaBoostMO(code="sparse").fit(X, y)


def test_long_run_stays_finite():
    X, y, _, _ = _data()
    for est in (AdaBoostMH(max_iter=400), AdaBoostECC(max_iter=400, random_state=0)):
        est.fit(X, y)
        assert np.all(np.isfinite(est.coef_))
        assert np.all(np.isfinite(est.decision_function(X)))


@pytest.mark.parametrize(
    "est",
    [
        AdaBoostMH(max_iter=10),
        AdaBoostECC(max_iter=10, random_state=0),
        AdaBoostMO(max_iter=5, random_state=0),
    ],
)
def test_persistence_round_trip(tmp_path, est):
    mmio.register_model(type(est))
    X, y, Xv, _ = _data()
    est.fit(X, y)
    mmio.save(est, tmp_path / "m.npz")
    back = mmio.load(tmp_path / "m.npz")
    np.testing.assert_allclose(back.decision_function(Xv), est.decision_function(Xv))
    np.testing.assert_array_equal(back.predict(Xv), est.predict(Xv))


def test_bad_parameters():
    X, y, _, _ = _data()
    with pytest.raises(ValueError, match="max_iter"):
        AdaBoostMH(max_iter=0).fit(X, y)
    with pytest.raises(ValueError, match="1 class"):
        AdaBoostECC().fit(X, np.ones(len(y)))
