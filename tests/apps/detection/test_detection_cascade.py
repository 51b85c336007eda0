"""BoostedCascade (issue 13, priority 3): stages, operating points, figure of merit,
recycling, persistence."""

import numpy as np
import pytest
from detection_makers import interrupt_in_stage

import maxmargin
from maxmargin import BoostedCascade


def _data(seed, n_pos=200, n_neg=3000):
    rng = np.random.default_rng(seed)
    Xp = rng.normal(size=(n_pos, 8))
    Xp[:, :3] += 2.5
    Xn = rng.normal(size=(n_neg, 8))
    return np.vstack([Xp, Xn]), np.r_[np.ones(n_pos), np.zeros(n_neg)]


@pytest.mark.parametrize("learner", ["discrete", "gentle", "lacboost", "fisherboost"])
@pytest.mark.parametrize("rule", ["fixed", "one-point", "two-point"])
def test_cascade_rejects_most_negatives_early(learner, rule):
    X, y = _data(0)
    Xt, yt = _data(1)
    c = BoostedCascade(
        stage_learner=learner,
        rule=rule,
        n_stages=6,
        target_recall=0.9,
        target_far=1e-2,
        max_weak=30,
        validation_fraction=0.3,
        random_state=0,
    ).fit(X, y)
    fm = c.figure_of_merit(Xt[yt == 0])
    ent = np.array(fm["entering"])
    assert ent[0] == 1.0 and np.all(np.diff(ent) <= 0)
    assert fm["expected_weak"] == pytest.approx(ent @ np.array(fm["n_weak"]))
    assert fm["expected_weak"] < 0.5 * fm["total_weak"] or c.n_stages_ == 1
    recall = (c.predict(Xt[yt == 1]) == 1).mean()
    far = (c.predict(Xt[yt == 0]) == 1).mean()
    assert recall > 0.6 and far < 0.05
    assert far == pytest.approx(fm["accepted"])
    # table rows and the goal update A <- A/a, B <- B/b, n <- n-1
    for a, b in zip(c.stages_, c.stages_[1:]):
        assert b["goal"][1] == pytest.approx(a["goal"][1] / a["far"])
        assert b["goal"][2] == a["goal"][2] - 1
    # decision_function: > 0 iff accepted, deeper windows score higher
    d = c.decision_function(Xt)
    depth, _ = c._depth_scores(Xt)
    np.testing.assert_array_equal(d > 0, depth == c.n_stages_)
    order = np.argsort(d)
    assert np.all(np.diff(depth[order]) >= 0)


def test_cost_ratio_raises_stage_recall():
    X, y = _data(2)
    kw = dict(stage_learner="discrete", n_stages=1, max_weak=5, rule="fixed", target_far=0.5)
    lo = BoostedCascade(**kw).fit(X, y)
    hi = BoostedCascade(cost_ratio=5.0, **kw).fit(X, y)
    pos = y == 1
    r_lo = (lo.stumps_[0].evaluate(X[pos]).sum(0) > 0).mean()
    r_hi = (hi.stumps_[0].evaluate(X[pos]).sum(0) > 0).mean()
    assert r_hi > r_lo  # a dearer missed positive moves the zero level set outwards


def test_recycling_reuses_weak_classifiers_across_stages(tmp_path):
    X, y = _data(3)
    kw = dict(stage_learner="gentle", n_stages=5, max_weak=20, target_far=1e-3, random_state=0)
    plain = BoostedCascade(**kw).fit(X, y)
    rec = BoostedCascade(recycle=0.5, **kw).fit(X, y)
    assert sum(t["n_recycled"] for t in rec.stages_) > 0
    assert all(t["n_new_weak"] <= t["n_weak"] for t in rec.stages_)
    fm_r, fm_p = rec.figure_of_merit(X), plain.figure_of_merit(X)
    assert fm_r["expected_distinct_weak"] <= fm_r["expected_weak"]
    assert fm_p["expected_distinct_weak"] <= fm_p["expected_weak"]
    back = maxmargin.load(maxmargin.save(rec, tmp_path / "c.npz"))
    np.testing.assert_array_equal(back.decision_function(X), rec.decision_function(X))
    assert back.stages_ == rec.stages_


def test_validation_mask_chooses_the_operating_points_on_held_out_rows():
    X, y = _data(5)
    hold = np.zeros(len(y), dtype=bool)
    hold[::4] = True
    kw = dict(n_stages=2, max_weak=10, rule="fixed", target_far=0.1)
    c = BoostedCascade(**kw).fit(X, y, validation_mask=hold)
    F = c.stumps_[0].evaluate(X[hold]).sum(0)
    yh = y[hold] == 1
    assert c.stages_[0]["recall"] == pytest.approx((F[yh] > c.thresholds_[0]).mean())
    assert c.stages_[0]["n_pos"] == (y[~hold] == 1).sum()
    with pytest.raises(ValueError, match="both classes"):
        BoostedCascade(**kw).fit(X, y, validation_mask=y == 1)


def test_cascade_errors():
    X, y = _data(4, n_pos=1, n_neg=20)
    with pytest.raises(ValueError, match="no stage"):
        BoostedCascade(stage_learner="lacboost").fit(X, y)
    with pytest.raises(ValueError, match="rule"):
        BoostedCascade(rule="three-point").fit(X, y)
    with pytest.raises(ValueError, match="binary"):
        BoostedCascade().fit(X[:6], [0, 1, 2, 0, 1, 2])


def test_recall_fallback_keeps_the_recall_of_weak_stages():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(2200, 5))
    y = np.r_[np.ones(200), np.zeros(2000)]
    X[:200, 0] += 0.7  # hard: the goal below is out of reach
    kw = dict(n_stages=5, max_weak=5, target_recall=0.9, target_far=1e-4, random_state=0)
    keep = BoostedCascade(fallback="recall", **kw).fit(X, y)
    drop = BoostedCascade(fallback="far", **kw).fit(X, y)
    rk = (keep.predict(X[:200]) == 1).mean()
    rd = (drop.predict(X[:200]) == 1).mean()
    assert rk >= 0.85 and rd < rk


@pytest.mark.parametrize("learner", ["gentle", "lacboost"])
def test_ctrl_c_inside_a_stage_keeps_the_completed_stages(monkeypatch, tmp_path, learner):
    from maxmargin.exceptions import FitInterruptedWarning

    X, y = _data(7)
    kw = dict(stage_learner=learner, n_stages=5, max_weak=8, target_far=1e-4, random_state=0)
    ref = BoostedCascade(**kw).fit(X, y)
    assert ref.converged_ and ref.n_stages_ >= 3
    calls = interrupt_in_stage(monkeypatch, stage=2)
    with pytest.warns(FitInterruptedWarning, match="2 stage"):
        c = BoostedCascade(**kw).fit(X, y)
    assert calls["n"] == 3 and not c.converged_
    # the model: the first two stages, exactly those of an uninterrupted fit
    assert c.n_stages_ == 2 and len(c.stages_) == 2 and len(c.thresholds_) == 2
    np.testing.assert_array_equal(c.thresholds_, ref.thresholds_[:2])
    for a, b in zip(c.stumps_, ref.stumps_):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.v_hi, b.v_hi)
    assert c.stages_ == ref.stages_[:2]
    d = c.decision_function(X)
    depth, _ = ref._depth_scores(X)
    np.testing.assert_array_equal(d > 0, depth >= 2)
    fm = c.figure_of_merit(X)
    assert len(fm["entering"]) == 2
    back = maxmargin.load(maxmargin.save(c, tmp_path / "c.npz"))
    assert not back.converged_
    np.testing.assert_array_equal(back.decision_function(X), d)


def test_ctrl_c_inside_the_first_stage_propagates(monkeypatch):
    X, y = _data(7)
    interrupt_in_stage(monkeypatch, stage=0)
    with pytest.raises(KeyboardInterrupt):
        BoostedCascade(n_stages=5, max_weak=8, target_far=1e-4, random_state=0).fit(X, y)


def test_max_weak_schedule_caps_each_stage():
    X, y = _data(8)
    kw = dict(n_stages=5, target_far=1e-6, target_recall=0.99, random_state=0)
    c = BoostedCascade(max_weak=(1, 3), **kw).fit(X, y)
    n_weak = [t["n_weak"] for t in c.stages_]
    assert c.n_stages_ >= 3 and n_weak[0] == 1 and max(n_weak[1:]) <= 3
    assert max(n_weak[1:]) == 3  # the goal is out of reach: the later caps bind
    flat = BoostedCascade(max_weak=3, **kw).fit(X, y)
    assert flat.stages_[0]["n_weak"] > 1
    # a one-element schedule is the plain cap
    one = BoostedCascade(max_weak=[3], **kw).fit(X, y)
    np.testing.assert_array_equal(one.thresholds_, flat.thresholds_)
    for bad in ([], [2, 0], (1.5,), 0):
        with pytest.raises(ValueError, match="max_weak"):
            BoostedCascade(max_weak=bad).fit(X, y)


def _weak_data(seed, n_pos, n_neg):
    rng = np.random.default_rng(seed)
    Xp = rng.normal(size=(n_pos, 8))
    Xp[:, :3] += 1.0  # weak stages: each rejects a third or so
    return np.vstack([Xp, rng.normal(size=(n_neg, 8))]), np.r_[np.ones(n_pos), np.zeros(n_neg)]


def test_bootstrapping_draws_fresh_negatives_that_pass_the_stages_so_far():
    X, y = _weak_data(9, 200, 1500)
    Xs, _ = _weak_data(10, 0, 20000)  # the larger source of negatives
    rng = np.random.default_rng(0)
    hold = np.zeros(len(X), dtype=bool)
    for c in (0, 1):
        idx = np.flatnonzero(y == c)
        hold[rng.choice(idx, len(idx) // 4, replace=False)] = True
    src_hold = rng.random(len(Xs)) < 0.25
    taken = np.zeros(len(Xs), dtype=bool)
    calls = []

    def negatives(passes, n_train, n_val):
        ok = passes(Xs)
        pick = np.concatenate(
            [
                np.flatnonzero(ok & ~taken & side)[:want]
                for want, side in ((n_train, ~src_hold), (n_val, src_hold))
            ]
        )
        taken[pick] = True
        calls.append((ok, n_train, n_val, len(pick)))
        # and two rows the stages reject: the cascade must drop them
        Z = np.vstack([Xs[pick], np.full((2, 8), -50.0)])
        return Z, np.r_[src_hold[pick], False, False]

    kw = dict(n_stages=4, max_weak=4, target_far=1e-4, target_recall=0.9, random_state=0)
    c = BoostedCascade(**kw).fit(X, y, validation_mask=hold, negatives=negatives)
    plain = BoostedCascade(**kw).fit(X, y, validation_mask=hold)
    assert c.n_stages_ == 4 and len(calls) == 3
    depth, _ = c._depth_scores(Xs)
    for k, (ok, _, _, got) in enumerate(calls):
        # passes() is the cascade of the stages completed before the call
        np.testing.assert_array_equal(ok, depth >= k + 1)
        assert got == c.stages_[k + 1]["n_bootstrapped"]
    assert calls[0][3] > 0
    # the first call refills exactly what the first stage rejected, on both sides
    n0_tr, n0_va = int(((y == 0) & ~hold).sum()), int(((y == 0) & hold).sum())
    alive = c._depth_scores(X)[0] >= 1
    assert calls[0][1] == n0_tr - int((alive & (y == 0) & ~hold).sum()) > 0
    assert calls[0][2] == n0_va - int((alive & (y == 0) & hold).sum()) > 0
    # so every stage trains on as many negatives as the first (the source is rich)
    assert all(t["n_neg"] == n0_tr for t in c.stages_)
    assert plain.stages_[0]["n_neg"] == n0_tr and plain.stages_[2]["n_neg"] < n0_tr
    assert plain.stages_[0]["n_neg"] == n0_tr and plain.stages_[2]["n_neg"] < n0_tr
    # the first stage is the same with or without the source
    np.testing.assert_array_equal(c.stumps_[0].threshold, plain.stumps_[0].threshold)
    assert c.thresholds_[0] == plain.thresholds_[0]
    # and the rows it drew are harder: the bootstrapped cascade rejects more of the source
    assert c.figure_of_merit(Xs)["accepted"] < plain.figure_of_merit(Xs)["accepted"]
    # no split (operating points on the training rows): nothing is asked for held out
    calls.clear()
    taken[:] = False
    BoostedCascade(**kw).fit(X, y, negatives=negatives)
    assert calls and all(n_va == 0 for _, _, n_va, _ in calls)


def test_bootstrapping_errors():
    X, y = _data(11, n_neg=500)
    kw = dict(n_stages=3, max_weak=4, target_recall=0.9, target_far=1e-4, random_state=0)
    with pytest.raises(TypeError, match="callable"):
        BoostedCascade(**kw).fit(X, y, negatives=X)
    for bad, msg in (
        (lambda p, a, b: X, "pair"),
        (lambda p, a, b: (X[:3, :5], np.zeros(3)), "expected"),
        (lambda p, a, b: (X[:3], np.zeros(2)), "expected"),
        (lambda p, a, b: (p(X[:, :4]), None), "features"),
    ):
        with pytest.raises(ValueError, match=msg):
            BoostedCascade(**kw).fit(X, y, negatives=bad)


def test_bootstrapping_with_sparse_rows_equals_dense():
    import scipy.sparse as sp

    X, y = _weak_data(12, 150, 800)
    Xs, _ = _weak_data(13, 0, 5000)

    def source(sparse):
        taken = np.zeros(len(Xs), dtype=bool)

        def negatives(passes, n_train, n_val):
            Z = sp.csr_matrix(Xs) if sparse else Xs
            pick = np.flatnonzero(passes(Z) & ~taken)[: n_train + n_val]
            taken[pick] = True
            return Z[pick], np.zeros(len(pick), dtype=bool)

        return negatives

    kw = dict(n_stages=3, max_weak=3, target_recall=0.9, target_far=1e-3, random_state=0)
    dense = BoostedCascade(**kw).fit(X, y, negatives=source(False))
    sparse = BoostedCascade(**kw).fit(sp.csr_matrix(X), y, negatives=source(True))
    assert dense.stages_[1]["n_bootstrapped"] > 0
    assert [t["n_bootstrapped"] for t in sparse.stages_] == [
        t["n_bootstrapped"] for t in dense.stages_
    ]
    np.testing.assert_array_equal(sparse.thresholds_, dense.thresholds_)
    np.testing.assert_array_equal(sparse.decision_function(Xs), dense.decision_function(Xs))


@pytest.mark.parametrize("learner", ["gentle", "lacboost"])
def test_chained_stages_start_from_the_score_so_far(monkeypatch, tmp_path, learner):
    """chain=True (eq. 4.59): every stage is trained from the chained score of the
    stages before it on its rows -- also on rows that bootstrapping brought in -- and
    thresholds the running sum; the model file keeps it."""
    import maxmargin.learners.cascade as mod

    X, y = _weak_data(11, 200, 1500)
    Xs, _ = _weak_data(12, 0, 20000)
    taken = np.zeros(len(Xs), dtype=bool)

    def negatives(passes, n_train, n_val):
        pick = np.flatnonzero(passes(Xs) & ~taken)[:n_train]
        taken[pick] = True
        return Xs[pick], np.zeros(len(pick), dtype=bool)

    seen = []
    name = "fit_asymmetric_stage" if learner == "lacboost" else "fit_cost_sensitive_stage"
    real = getattr(mod, name)

    def spy(Xr, yr, **kw):
        seen.append((np.array(Xr), None if kw["F0"] is None else np.array(kw["F0"])))
        return real(Xr, yr, **kw)

    monkeypatch.setattr(mod, name, spy)
    kw = dict(stage_learner=learner, n_stages=4, max_weak=4, target_far=1e-4, random_state=0)
    c = BoostedCascade(chain=True, **kw).fit(X, y, negatives=negatives)
    assert c.n_stages_ == 4 and len(seen) == 4 and taken.any()
    assert not seen[0][1].any()
    for k in range(1, 4):
        Xr, F0 = seen[k]
        depth, _, score = c._walk(c.stumps_[:k], c.thresholds_[:k], Xr, True)
        assert (depth == k).all()
        np.testing.assert_allclose(F0, score, atol=1e-12)
    # the decision: stage k thresholds the sum of stages 0..k
    Xt, _ = _weak_data(13, 100, 1000)
    run = np.cumsum([st.evaluate(Xt).sum(0) for st in c.stumps_], axis=0)
    passed = np.cumprod(run > c.thresholds_[:, None], axis=0).astype(bool)
    np.testing.assert_array_equal(c.predict(Xt) == 1, passed[-1])
    np.testing.assert_array_equal(c._depth_scores(Xt)[0], passed.sum(0))
    # a chained cascade is not the unchained one, and a saved one loads chained
    monkeypatch.setattr(mod, name, real)
    taken[:] = False
    plain = BoostedCascade(**kw).fit(X, y, negatives=negatives)
    assert not np.array_equal(plain.decision_function(Xt), c.decision_function(Xt))
    maxmargin.save(c, tmp_path / "c.mm")
    back = maxmargin.load(tmp_path / "c.mm")
    assert back.chain is True and back.chain_ is True
    # the decisions are those of the fit, whatever set_params says afterwards
    d0 = c.decision_function(Xt)
    np.testing.assert_array_equal(c.set_params(chain=False).decision_function(Xt), d0)
    np.testing.assert_array_equal(back.decision_function(Xt), c.decision_function(Xt))
