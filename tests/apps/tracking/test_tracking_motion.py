"""Issue 30, must-have 2: the displacement prior on the search (``motion_prior``) and the
self-labelling gate on motion (``jump_gate``), checked against independent recomputation
from the tracker's own candidates and scores, and on synthetic videos where each is
needed."""

import numpy as np
import pytest

from maxmargin.apps.tracking import make_tracker

FAST = dict(n_predict=400, n_train=100, search_radius=12.0, train_radius=20.0, window=40)


def twin_video(n=8, size=(64, 112), side=14, gap=8, dim=0.85, seed=0):
    """A still textured square on a flat background; from frame 1 on its contrast drops
    to ``dim`` and its exact frame-0 appearance (a twin) stands ``gap`` px to its right
    (22 px between the centres): a model of frame 0 scores the twin higher, so only a
    prior on the displacement keeps the box on the target."""
    rng = np.random.default_rng(seed)
    H, W = size
    tex = np.kron(rng.random((side // 2, side // 2)) > 0.5, np.ones((2, 2))) * 0.8 + 0.1
    x0, y0 = 30, 25
    frames = []
    for k in range(n):
        f = np.full((H, W), 0.5)
        if k == 0:
            f[y0 : y0 + side, x0 : x0 + side] = tex
        else:
            f[y0 : y0 + side, x0 : x0 + side] = 0.5 + dim * (tex - 0.5)
            f[y0 : y0 + side, x0 + side + gap : x0 + 2 * side + gap] = tex
        frames.append((f * 255).astype(np.uint8))
    return frames, np.array([x0, y0, side, side], dtype=float)


#: a 30 px search disc (the twin is 22 px away), densely sampled
WIDE = dict(n_predict=1500, n_train=100, search_radius=30.0, train_radius=40.0, window=40)


def _centre(b):
    return np.asarray(b[:2], dtype=float) + np.asarray(b[2:], dtype=float) / 2


def _step_penalised(t, frame, lam):
    """One update; returns the box, the model's scores, the candidates and the scores
    minus the prior's penalty recomputed here (``WIDE``'s 30 px radius, ``velocity`` 0:
    the search centre is the previous box's)."""
    prev = t.box_.copy()
    b = t.update(frame)
    s, cand = t.candidate_scores_, t.candidates_
    d2 = np.sum((cand[:, :2] + cand[:, 2:] / 2 - _centre(prev)) ** 2, axis=1)
    return b, s, cand, s - lam * (s.max() - s.min()) * d2 / 30.0**2


def test_motion_prior_is_the_penalised_argmax():
    """Every frame's box is the argmax of the scores minus the quadratic penalty, computed
    here from ``candidates_`` and ``candidate_scores_``; ``score_`` stays the model's."""
    frames, box = twin_video()
    lam = 0.2
    t = make_tracker("ssvm", random_state=0, motion_prior=lam, **WIDE).init(frames[0], box)
    for f in frames[1:]:
        b, s, cand, pen = _step_penalised(t, f, lam)
        best = np.flatnonzero(pen >= pen.max() - 1e-9 * max(1.0, abs(pen.max())))
        assert any(np.array_equal(b, cand[i]) for i in best)
        k = int(np.flatnonzero((cand == b).all(axis=1))[0])
        assert t.score_ == pytest.approx(float(s[k]))


def test_motion_prior_keeps_the_box_off_the_twin():
    """The SSVM tracker's model of frame 0 scores the twin above the dimmed target:
    without the prior (``motion_prior=0``) the box jumps the 22 px to the twin, with it
    the box stays on the target in every frame."""
    frames, box = twin_video()

    def drift(lam):
        t = make_tracker("ssvm", random_state=0, motion_prior=lam, **WIDE).init(frames[0], box)
        return [float(np.hypot(*(_centre(t.update(f)) - _centre(box)))) for f in frames[1:]]

    assert max(drift(0.2)) <= 1.0
    assert min(drift(0.0)) > 20.0


def test_motion_prior_ranks_the_top_k_mean_too():
    """With ``top_k > 1`` the box is the weighted mean of the top candidates (weights:
    the scores above the (top_k + 1)-th best, rounded to whole pixels); with the prior
    the candidates are ranked and weighted by the penalised scores -- recomputed here
    from ``candidates_`` and ``candidate_scores_`` (ties aside)."""
    frames, box = twin_video()
    lam, k = 0.2, 5
    t = make_tracker("ssvm", random_state=0, motion_prior=lam, top_k=k, **WIDE)
    t.init(frames[0], box)
    for f in frames[1:]:
        b, _, cand, pen = _step_penalised(t, f, lam)
        order = np.argsort(-pen, kind="stable")[: k + 1]
        wts = pen[order[:k]] - pen[order[k]]
        mean = (wts[:, None] * cand[order[:k]]).sum(0) / wts.sum()
        assert np.all(np.abs(np.asarray(b, dtype=float) - mean) <= 0.5 + 1e-6)


def test_jump_gate_refuses_exactly_the_frames_that_jump():
    """Frames whose box centre moved more than ``jump_gate * search_radius`` from the
    previous centre (``velocity`` 0) are counted in ``n_jumps_`` and kept out of the
    window; the rest enter it.  Recomputed here from the returned boxes."""
    rng = np.random.default_rng(3)
    H, W, side = 80, 120, 14
    bg = 0.35 + 0.3 * np.kron(rng.random((H // 8, W // 8)), np.ones((8, 8)))
    tex = np.kron(rng.random((7, 7)) > 0.5, np.ones((2, 2))) * 0.8 + 0.1
    xs = [20, 22, 24, 33, 35, 37, 46, 48, 50, 52]  # 9 px jumps at frames 3 and 6
    frames = []
    for x in xs:
        f = bg.copy()
        f[30 : 30 + side, x : x + side] = tex
        frames.append((np.clip(f + 0.02 * rng.normal(size=f.shape), 0, 1) * 255).astype(np.uint8))
    gate = 0.5  # 6 px at search_radius 12
    t = make_tracker("ssvm", random_state=0, jump_gate=gate, retrain_every=1, **FAST)
    t.init(frames[0], [xs[0], 30, side, side])
    n0 = len(t._data)
    boxes = [t.box_.copy()]
    for f in frames[1:]:
        boxes.append(t.update(f))
    moves = np.hypot(*np.diff([_centre(b) for b in boxes], axis=0).T)
    jumped = int(np.sum(moves > gate * 12.0))
    assert jumped >= 2  # the video's two jumps are followed, so the gate has work
    assert t.n_jumps_ == jumped == t.n_skipped_
    assert len(t._data) == n0 + len(moves) - jumped
    t_off = make_tracker("ssvm", random_state=0, retrain_every=1, **FAST)
    t_off.init(frames[0], [xs[0], 30, side, side])
    for f in frames[1:]:
        t_off.update(f)
    assert t_off.n_jumps_ == 0 and len(t_off._data) == n0 + len(moves)


def test_motion_options_are_validated():
    with pytest.raises(ValueError, match="motion_prior"):
        make_tracker("ssvm", motion_prior=-1.0)
    with pytest.raises(ValueError, match="jump_gate"):
        make_tracker("ssvm", jump_gate=-0.5)
