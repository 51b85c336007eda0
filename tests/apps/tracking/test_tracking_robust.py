"""Issue 30: every default tracker follows a synthetic video with a sudden jump, a size
change and a distractor, over 5 seeds, from the true first box and from one shifted by
1-2 pixels (small frames, so that the default protocol -- 2000 prediction candidates,
200 training boxes, 30 px search radius -- runs in seconds)."""

import numpy as np
import pytest

from maxmargin.apps.tracking import make_tracker, overlaps, track_sequence

N_FRAMES = 28


def hard_video(seed, n=N_FRAMES, size=(96, 128)):
    """A textured square on blocky clutter: smooth motion, a 16 px jump at frame 10, its
    side growing 20 -> 22 px over frames 14-20, and a distractor square of another
    texture (same mean grey) passing 30-40 px away."""
    rng = np.random.default_rng(1000 + seed)
    H, W = size
    bg = 0.35 + 0.3 * np.kron(rng.random((H // 8, W // 8)), np.ones((8, 8)))
    tex = np.kron(rng.random((11, 11)) > 0.5, np.ones((2, 2))) * 0.8 + 0.1
    dis = np.kron(rng.random((10, 10)) > 0.5, np.ones((2, 2))) * 0.8 + 0.1
    frames, boxes = [], []
    x, y = 30.0, 36.0
    for k in range(n):
        x += 1.5
        y += 0.5 * np.sin(k / 3)
        if k == 10:
            x, y = x + 12, y - 10  # the jump: 15.6 px
        side = int(np.round(np.clip(20 + (k - 14) / 3, 20, 22)))
        t = tex[:side, :side] if side <= tex.shape[0] else tex
        f = bg.copy()
        dx = int(np.round(W - 30 - 2.5 * k))  # the distractor crosses the other way
        f[8:28, dx : dx + 20] = dis
        xi, yi = int(np.round(x)), int(np.round(y))
        f[yi : yi + side, xi : xi + side] = t[:side, :side]
        f = f + 0.02 * rng.normal(size=f.shape)
        frames.append((np.clip(f, 0, 1) * 255).astype(np.uint8))
        boxes.append([xi, yi, side, side])
    return frames, np.array(boxes, dtype=float)


SHIFTS = [(1, -1), (2, 1), (-1, 2), (-2, -1), (1, 2)]  # the shifted first box per seed


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "structboost",
        "ssvm",
        # the paper's AdaBoost baseline (positives overlap > 0.8) does not: mean overlap
        # 0.655 / 0.698 / 0.713 with minima 0.47-0.57 on 3 of the 10 runs (seeds 3, 4)
        pytest.param("adaboost", marks=pytest.mark.xfail(strict=True, reason="issue 30")),
    ],
)
def test_default_trackers_survive_jump_scale_and_distractor(name):
    """Mean overlap > 0.7 and never below 0.5 on every run: 5 seeds (video and tracker),
    each from the true first box and from one shifted by 1-2 px."""
    bad = []
    for seed in range(5):
        frames, boxes = hard_video(seed)
        for shift in ((0, 0), SHIFTS[seed]):
            first = boxes[0] + np.array([*shift, 0, 0])
            tr = make_tracker(name, random_state=seed)
            pred, _info = track_sequence(tr, frames, first_box=first)
            ov = overlaps(pred[1:], boxes[1:])
            if not (ov.mean() > 0.7 and ov.min() > 0.5):
                bad.append((seed, shift, round(float(ov.mean()), 3), round(float(ov.min()), 3)))
    assert not bad, bad


def test_warp_frame_identity_and_integer_shift():
    from maxmargin.apps.tracking import warp_frame

    rng = np.random.default_rng(0)
    g = rng.random((40, 60)).astype(np.float32)
    box = np.array([20.0, 12.0, 10.0, 8.0])
    same = warp_frame(g, box, rng, shift=0.0, scale=0.0, angle=0.0, noise=0.0)
    np.testing.assert_allclose(same, g, atol=1e-6)

    class Fixed:  # an integer shift (2, -1): output pixel (y, x) = input (y - 1, x + 2)
        def uniform(self, lo, hi, size=None):
            return np.array([2.0, -1.0]) if size == 2 else 0.0

        def normal(self, m, s, shape):
            return np.zeros(shape)

    out = warp_frame(g, box, Fixed(), noise=0.0)
    np.testing.assert_allclose(out[5:30, 5:50], g[4:29, 7:52], atol=1e-6)


def test_plateau_tie_break_takes_the_middle_box():
    from maxmargin.apps.tracking.tracker import _best_of_ties

    cand = np.array([[x, 5.0, 10, 10] for x in range(9)])
    s = np.array([0, 1, 1, 1, 1, 1, 0.5, 0, 0], dtype=float)  # plateau at x = 1..5
    assert _best_of_ties(s, cand) == 3
    s[7] = 2.0
    assert _best_of_ties(s, cand) == 7
