"""Hard-negative mining (issue 13, priority 2): the n-slack loop reaches the SVM trained
on all windows at once."""

import numpy as np
import pytest

from maxmargin.solvers.hard_negatives import mine_hard_negatives
from maxmargin.solvers.svm import fit_dual_cd


def _data(seed=0, n_pos=40, n_neg=3000, d=6):
    rng = np.random.default_rng(seed)
    Xp = rng.normal(size=(n_pos, d)) + 1.2
    Xn = rng.normal(size=(n_neg, d))
    return Xp, Xn


def _full_objective(Xp, Xn, w, b, C):
    sp = Xp @ w + b
    sn = Xn @ w + b
    return 0.5 * (w @ w + b * b) + C * (np.maximum(0, 1 - sp).sum() + np.maximum(0, 1 + sn).sum())


@pytest.mark.parametrize("cap", [200, 5000])
def test_mining_reaches_the_all_windows_svm(cap):
    Xp, Xn = _data()
    C = 0.5
    chunks = [(np.arange(k, k + 250), Xn[k : k + 250]) for k in range(0, len(Xn), 250)]
    res = mine_hard_negatives(Xp, lambda: iter(chunks), C, max_working_set=cap, tol=1e-10, rng=0)
    assert res.converged
    X = np.hstack([np.vstack([Xp, Xn]), np.ones((len(Xp) + len(Xn), 1))])
    y = np.r_[np.ones(len(Xp)), -np.ones(len(Xn))]
    full = fit_dual_cd(X, y, C, tol=1e-12, max_iter=20000, rng=0)
    ref = _full_objective(Xp, Xn, full.w[:-1], full.w[-1], C)
    got = _full_objective(Xp, Xn, res.w, res.b, C)
    assert got == pytest.approx(ref, rel=1e-6)
    assert res.primal == pytest.approx(got, rel=1e-9)  # the recorded objective is the full one
    np.testing.assert_allclose(np.r_[res.w, res.b], full.w, atol=1e-3)
    h = res.history
    assert h[0]["n_hard"] == len(Xn)  # w = 0: every window is hard (Table 2.1, round 0)
    assert h[-1]["gap"] < 1e-6 and len(res.working_set) <= cap and h[-1]["n_violating"] == 0
    assert {"iteration", "n_hard", "n_new", "working_set", "objective", "gap"} <= set(h[0])
    # the working set is a small part of the negatives
    assert cap > len(Xn) or len(res.working_set) < len(Xn) / 3


def test_mining_errors():
    Xp, Xn = _data(n_neg=10)
    with pytest.raises(ValueError, match="no negatives"):
        mine_hard_negatives(Xp, lambda: iter([]))
    with pytest.raises(ValueError, match="features"):
        mine_hard_negatives(Xp, lambda: iter([(np.arange(10), Xn[:, :3])]))


def test_mining_ctrl_c_keeps_the_last_solved_svm():
    from maxmargin.exceptions import FitInterruptedWarning

    Xp, Xn = _data()
    chunks = [(np.arange(k, k + 250), Xn[k : k + 250]) for k in range(0, len(Xn), 250)]
    kw = dict(max_working_set=200, tol=1e-10, rng=0)
    full = mine_hard_negatives(Xp, lambda: iter(chunks), 0.5, max_rounds=1, **kw)
    calls = {"n": 0}

    def scan():  # Ctrl-C in the middle of round 1's scan
        calls["n"] += 1
        for k, chunk in enumerate(chunks):
            if calls["n"] == 2 and k == 3:
                raise KeyboardInterrupt
            yield chunk

    with pytest.warns(FitInterruptedWarning):
        res = mine_hard_negatives(Xp, scan, 0.5, **kw)
    assert not res.converged and np.isnan(res.primal)
    # the model is round 0's solve, the same as a run stopped after one round
    np.testing.assert_array_equal(res.w, full.w)
    assert res.b == full.b and len(res.history) == 1

    def early():  # before the first solve there is nothing to keep
        raise KeyboardInterrupt
        yield

    with pytest.raises(KeyboardInterrupt):
        mine_hard_negatives(Xp, early, 0.5, **kw)


def test_detector_ctrl_c_keeps_a_working_model(monkeypatch):
    import maxmargin.apps.detection.detector as det
    from maxmargin.apps.detection import HOGSVMDetector
    from maxmargin.datasets import make_detection_scenes
    from maxmargin.exceptions import FitInterruptedWarning

    real = det.mine_hard_negatives

    def interrupted(*args, **kwargs):
        def stop(rec):
            if rec["iteration"] == 1:
                raise KeyboardInterrupt

        return real(*args, callback=stop, **kwargs)

    monkeypatch.setattr(det, "mine_hard_negatives", interrupted)
    images, boxes = make_detection_scenes(6, random_state=0)
    with pytest.warns(FitInterruptedWarning):
        d = HOGSVMDetector(window=(3, 3), C=0.1, max_working_set=300, random_state=0)
        d.fit(images, boxes)
    assert not d.converged_ and len(d.mining_history_) == 2
    b, s = d.detect(images[0])
    assert len(b) and np.all(np.isfinite(s))


@pytest.mark.parametrize("cap", [200, 5000])
def test_weighted_mining_reaches_the_weighted_all_windows_svm(cap):
    """``weight(ids)``: the negatives' weights in the hinge sum (positives 1), the same
    optimum as the weighted SVM on all windows at once (``fit_dual_cd(sample_weight=)``)."""
    Xp, Xn = _data(1)
    C = 0.5
    rng = np.random.default_rng(5)
    c = rng.uniform(0.05, 2.0, len(Xn))
    chunks = [(np.arange(k, k + 250), Xn[k : k + 250]) for k in range(0, len(Xn), 250)]
    res = mine_hard_negatives(
        Xp,
        lambda: iter(chunks),
        C,
        max_working_set=cap,
        tol=1e-10,
        rng=0,
        weight=lambda i: c[i],
    )
    assert res.converged
    X = np.hstack([np.vstack([Xp, Xn]), np.ones((len(Xp) + len(Xn), 1))])
    y = np.r_[np.ones(len(Xp)), -np.ones(len(Xn))]
    cw = np.r_[np.ones(len(Xp)), c]
    full = fit_dual_cd(X, y, C, tol=1e-12, max_iter=20000, rng=0, sample_weight=cw)

    def obj(w, b):
        h = np.r_[np.maximum(0, 1 - Xp @ w - b), np.maximum(0, 1 + Xn @ w + b)]
        return 0.5 * (w @ w + b * b) + C * (cw * h).sum()

    ref, got = obj(full.w[:-1], full.w[-1]), obj(res.w, res.b)
    assert got == pytest.approx(ref, rel=1e-6)
    assert res.primal == pytest.approx(got, rel=1e-9)  # the recorded objective: weighted
    np.testing.assert_allclose(np.r_[res.w, res.b], full.w, atol=1e-3)
    # the weights matter: the unweighted mined SVM is worse on the weighted objective
    plain = mine_hard_negatives(Xp, lambda: iter(chunks), C, max_working_set=cap, tol=1e-10)
    assert obj(plain.w, plain.b) > ref * (1 + 1e-3)
