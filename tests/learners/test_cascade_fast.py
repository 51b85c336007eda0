"""The fast paths of cascade training (issue 31) change no decision: the closed-form
two-point optimum equals HiGHS's LP, the stopping test screened by it gives the cascade of
the unscreened test, histogram search with enough bins is the exact search, and the
boosting's own exp / log are accurate to a few ulps."""

from __future__ import annotations

import numpy as np
import pytest

from maxmargin import BoostedCascade
from maxmargin.learners.cascade import two_point_optimum
from maxmargin.solvers.asymmetric_boost import _exp, _log
from maxmargin.solvers.operating_point import roc_points, two_point_lp


def test_two_point_optimum_equals_the_lp():
    rng = np.random.default_rng(0)
    n_inf = 0
    for trial in range(200):
        sp_ = rng.normal(rng.uniform(0, 3), 1, rng.integers(3, 200))
        sn = rng.normal(0, 1, rng.integers(3, 200))
        if trial % 3 == 0:  # ties: repeated scores, collinear ROC points
            sp_, sn = np.round(sp_, 1), np.round(sn, 1)
        _, a, b = roc_points(sp_, sn)
        B, n = 10 ** rng.uniform(-6, -0.05), int(rng.integers(1, 20))
        x, opt = two_point_lp(a, b, B, n)
        got = two_point_optimum(a, b, B, n)
        if x is None:
            n_inf += 1
            assert got == -np.inf
        else:  # HiGHS solves to 1e-7 feasibility; the closed form is exact to rounding
            assert got == pytest.approx(opt, rel=1e-7, abs=1e-9)
    assert 0 < n_inf < 200  # both cases met


def _data(seed=0, n=600, d=12, coarse=False):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    X = rng.normal(size=(n, d)) + 0.8 * y[:, None] * (rng.random(d) < 0.5)
    if coarse:  # quarters: a few dozen distinct values per feature
        X = np.round(4 * X) / 4
    return X, y


@pytest.mark.parametrize("learner", ["gentle", "lacboost"])
def test_screened_stopping_test_changes_nothing(monkeypatch, learner):
    X, y = _data(1)
    kw = dict(stage_learner=learner, n_stages=4, max_weak=(3, 6, 12), target_far=1e-3,
              rule="two-point", validation_fraction=0.3, random_state=0)  # fmt: skip
    a = BoostedCascade(**kw).fit(X, y)
    calls = []
    orig = BoostedCascade._may_attain

    def spy(F, n_pos, goal):
        out = orig(F, n_pos, goal)
        calls.append(out)
        return out

    monkeypatch.setattr(BoostedCascade, "_may_attain", staticmethod(spy))
    BoostedCascade(**kw).fit(X, y)
    assert False in calls  # the screen did skip LPs
    monkeypatch.setattr(BoostedCascade, "_may_attain", staticmethod(lambda F, n, g: True))
    b = BoostedCascade(**kw).fit(X, y)  # every round through HiGHS
    assert len(a.stumps_) == len(b.stumps_)
    for sa, sb in zip(a.stumps_, b.stumps_):
        for k in ("feature", "threshold", "v_lo", "v_hi"):
            np.testing.assert_array_equal(getattr(sa, k), getattr(sb, k))
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)


@pytest.mark.parametrize("learner", ["gentle", "discrete", "lacboost"])
def test_enough_bins_is_the_exact_search(learner):
    # at most 64 distinct values per feature: 64 bins hold one value each, so the binned
    # search sees every split the exact one does, at the same thresholds
    X, y = _data(2, coarse=True)
    assert max(len(np.unique(c)) for c in X.T) <= 64
    kw = dict(stage_learner=learner, n_stages=3, max_weak=(3, 6, 10), random_state=0,
              validation_fraction=0.3)  # fmt: skip
    a = BoostedCascade(**kw).fit(X, y)
    b = BoostedCascade(max_bins=64, **kw).fit(X, y)
    assert len(a.stumps_) == len(b.stumps_) >= 2
    for sa, sb in zip(a.stumps_, b.stumps_):
        for k in ("feature", "threshold", "v_lo", "v_hi"):
            np.testing.assert_array_equal(getattr(sa, k), getattr(sb, k))
    # fewer bins than values: a coarser search, its splits among the exact candidates
    c = BoostedCascade(max_bins=4, **kw).fit(X, y)
    for st in c.stumps_:
        for f, t in zip(st.feature, st.threshold):
            u = np.unique(X[:, f])
            assert np.any((u[:-1] + u[1:]) / 2 == t)
    with pytest.raises(ValueError, match="max_bins"):
        BoostedCascade(max_bins=1).fit(X, y)


def test_own_exp_and_log_are_accurate():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-700, 700, 50_000), rng.uniform(-1, 1, 50_000)])
    r = np.exp(x)
    # Taylor truncation < 1e-17 relative, 13 Horner steps and the reduction: a few ulps
    assert np.max(np.abs(_exp(x) - r) / np.spacing(r)) <= 4
    y = np.exp(rng.uniform(-700, 700, 50_000))
    lg = np.log(y)
    assert np.max(np.abs(_log(y) - lg) / np.spacing(np.abs(lg))) <= 4
    assert _exp(0.0) == 1.0 and _log(1.0) == 0.0
    assert _exp(-1e4) == 0.0 and _exp(1e4) == np.inf and _log(0.0) == -np.inf
    assert np.isnan(_exp(np.nan)) and np.isnan(_log(-1.0))


def test_loss_after_from_side_sums_equals_the_per_sample_loss():
    # sum_i u_i exp(-C_y y delta_i) with delta = lo or hi by side: from four sums per split
    from maxmargin.solvers.asymmetric_boost import _loss_after

    rng = np.random.default_rng(4)
    n, k = 300, 7
    u, ys = rng.random(n), np.where(rng.random(n) < 0.4, 1.0, -1.0)
    side = (rng.random((k, n)) < 0.5).astype(float)
    lo, hi = rng.normal(size=k), rng.normal(size=k)
    c1, c0 = 4 / 3, 2 / 3
    cy = np.where(ys > 0, c1, c0)
    delta = lo[:, None] + side * (hi - lo)[:, None]
    brute = (u[None] * np.exp(-(cy * ys)[None] * delta)).sum(axis=1)
    # a few ulps of exp per term and two rounded sums of n terms: 1e-12 relative
    np.testing.assert_allclose(_loss_after(u, ys, side, lo, hi, c1, c0), brute, rtol=1e-12)
