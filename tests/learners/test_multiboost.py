"""MultiBoostCW and MultiBoost estimators (Lin et al. ACCV 2012; Shen & Hao CVPR 2011)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

from maxmargin import io as mmio
from maxmargin.learners.multiboost import MultiBoost, MultiBoostCW
from maxmargin.weak import DecisionStump


def _data():
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    return X[idx[:100]], y[idx[:100]], X[idx[100:]], y[idx[100:]]


@pytest.mark.parametrize(
    "est",
    [
        MultiBoostCW(max_iter=30, random_state=0),
        MultiBoostCW(C=1e8, tau_max=1, max_iter=30),
        MultiBoostCW(max_iter=20, solver="lbfgs"),
        MultiBoost(max_iter=30),
        MultiBoost(max_iter=30, solver="fcd", random_state=0),
        MultiBoostCW(max_iter=20, weak_learner=DecisionStump(), large_C=True),
    ],
)
def test_fit_history_and_staged_predict(est):
    X, y, Xv, yv = _data()
    est.fit(X, y, eval_set=(Xv, yv))
    assert est.score(X, y) > 0.95 and est.score(Xv, yv) > 0.85
    h = est.history_
    assert len(h) == est.n_iter_ > 0
    for key in ("objective", "train_error", "val_error", "n_weak", "t_total", "t_master"):
        assert key in h[0]
    assert np.all(np.diff([r["t_total"] for r in h]) >= 0)
    staged = list(est.staged_predict(Xv))
    assert len(staged) == est.n_iter_
    np.testing.assert_array_equal(staged[-1], est.predict(Xv))
    np.testing.assert_allclose([np.mean(p != yv) for p in staged], [r["val_error"] for r in h])
    per_iter = 1 if isinstance(est, MultiBoost) else 3
    assert h[-1]["n_weak"] == per_iter * est.n_iter_


def test_cw_adds_one_learner_per_class_and_stagewise_keeps_old_weights():
    X, y, _, _ = _data()
    est = MultiBoostCW(C=1e8, tau_max=1, max_iter=10).fit(X, y)
    # stage-wise: iteration t only sets the variables it created (3 per iteration)
    for t in range(est.n_iter_):
        sel = est.path_iter_ == t
        assert np.unique(est.path_var_[sel]).size == sel.sum()
    assert np.bincount(est.path_var_).max() == 1


def test_objective_decreases_and_totally_corrective_beats_stagewise():
    X, y, _, _ = _data()
    tc = MultiBoostCW(C=1e3, tau_max=50, eps=1e-3, max_iter=15, random_state=0).fit(X, y)
    sw = MultiBoostCW(C=1e3, tau_max=1, max_iter=15).fit(X, y)
    obj = [r["objective"] for r in tc.history_]
    assert np.all(np.diff(obj) <= 1e-9 * obj[0])
    assert tc.objective_ <= sw.objective_


@pytest.mark.parametrize(
    "params, msg",
    [
        ({"C": -1.0}, "C must be"),
        ({"C": float("nan")}, "C must be"),
        ({"max_iter": 0}, "max_iter must be"),
        ({"max_iter": 2.5}, "max_iter must be"),
        ({"tau_max": 0}, "tau_max must be"),
        ({"eps": -1.0}, "eps must be"),
        ({"solver": "newton"}, "solver must be"),
        ({"weak_learner": "nope"}, "unknown weak_learner"),
        ({"tol": -1.0}, "tol must be"),
    ],
)
def test_bad_parameters(params, msg):
    X, y, _, _ = _data()
    with pytest.raises(ValueError, match=msg):
        MultiBoostCW(**params).fit(X, y)


def test_bad_data():
    X, y, _, _ = _data()
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MultiBoostCW().fit(Xn, y)
    with pytest.raises(ValueError, match="1 class"):
        MultiBoostCW().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="eval_set"):
        MultiBoostCW().fit(X, y, eval_set=(X,))


@pytest.mark.parametrize("cls", [MultiBoostCW, MultiBoost])
def test_persistence_round_trip(tmp_path, cls):
    mmio.register_model(cls)
    X, y, Xv, _ = _data()
    labels = np.array(["a", "b", "c"])[y]
    est = cls(max_iter=10, random_state=0).fit(X, labels)
    path = tmp_path / "m.npz"
    mmio.save(est, path)
    back = mmio.load(path)
    np.testing.assert_array_equal(back.predict(Xv), est.predict(Xv))
    np.testing.assert_allclose(back.decision_function(Xv), est.decision_function(Xv))
    for a, b in zip(back.staged_predict(Xv), est.staged_predict(Xv)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_equal(back.history_, est.history_)  # NaN-aware
    assert back.get_params() == est.get_params()
