"""benchmarks/benchlib/box_bounds.py (used by tracking_paper_consistency.py): the largest
overlap of any box at a given centre offset, and the bound on the mean overlap at a given
mean centre error, against brute force (the script's verdict on the paper's Table 4 rests
on them)."""

import numpy as np
import pytest

from benchlib import box_bounds as tpc  # benchmarks/ is on pytest's pythonpath


def _iou(w, h, dx, dy, W, H):
    ix = np.clip(np.minimum(w / 2, dx + W / 2) - np.maximum(-w / 2, dx - W / 2), 0, None)
    iy = np.clip(np.minimum(h / 2, dy + H / 2) - np.maximum(-h / 2, dy - H / 2), 0, None)
    inter = ix * iy
    return inter / (w * h + W * H - inter)


def test_best_overlap_equals_brute_force_over_box_sizes():
    rng = np.random.default_rng(0)
    sizes = np.geomspace(0.02, 20.0, 1500)
    for _ in range(40):
        w, h = rng.uniform(10, 80, size=2)
        dx, dy = rng.uniform(0, 1.5 * max(w, h), size=2) * (rng.random(2) < 0.8)
        best = float(tpc.best_overlap(w, h, dx, dy))
        W, H = np.meshgrid(sizes * w, sizes * h, indexing="ij")
        brute = float(_iou(w, h, dx, dy, W, H).max())
        assert best >= brute - 1e-12  # nothing on the grid beats the closed form
        assert best <= brute + 5e-3  # and the grid comes close to it
    assert tpc.best_overlap(30.0, 40.0, 0.0, 0.0) == 1.0


def test_best_overlap_does_not_increase_with_the_offset():
    w, h = 31.0, 45.0
    d = np.linspace(0, 120, 400)
    for t in np.linspace(0, np.pi / 2, 9):  # along rays
        v = tpc.best_overlap(w, h, d * np.cos(t), d * np.sin(t))
        assert np.all(np.diff(v) <= 1e-12)
    for other in np.linspace(0, 60, 13):  # in |dx| at fixed |dy|, and in |dy| at fixed |dx|
        assert np.all(np.diff(tpc.best_overlap(w, h, d, other)) <= 1e-12)
        assert np.all(np.diff(tpc.best_overlap(w, h, other, d)) <= 1e-12)


def test_moment_bound_is_an_upper_bound():
    rng = np.random.default_rng(1)
    n = 30
    boxes = np.column_stack(
        [np.zeros(n), np.zeros(n), rng.uniform(20, 50, n), rng.uniform(25, 60, n)]
    )
    d_grid = np.linspace(0.0, 180.0, 121)
    H = tpc.overlap_bound_table(boxes, d_grid, n_angles=16)
    for k in range(12):  # random trackers: offsets in random directions, best box sizes
        d = rng.exponential(rng.uniform(2, 20), size=n)
        if k % 3 == 0:
            d[rng.random(n) < 0.5] = 0.0  # exact on some frames, off on the others
        t = rng.uniform(0, np.pi / 2, size=n)
        achieved = tpc.best_overlap(boxes[:, 2], boxes[:, 3], d * np.cos(t), d * np.sin(t))
        bound, lam, mu, lp = tpc.moment_bound(H, d_grid, float(d.mean()), float(d.std()), n)
        assert achieved.mean() <= bound + 1e-9
        assert lp <= bound + 1e-6  # the exact evaluation is never below the grid LP
        assert mu >= 0
        # weak duality holds at any multipliers, not only at the LP's
        m2 = float(np.mean(d**2))
        for lam2, mu2 in [(lam + 0.01, mu), (lam, mu * 2 + 1e-4), (-0.01, 1e-3)]:
            assert achieved.mean() <= tpc.evaluate_bound(H, d_grid, d.mean(), m2, lam2, mu2)
    # exact trackers: mean 0 and no spread leave the bound at 1
    assert tpc.moment_bound(H, d_grid, 0.0, 0.0, n)[0] == pytest.approx(1.0, abs=1e-6)


def test_evaluated_bound_dominates_a_fine_brute_force():
    """The per-cell values (coarse distance and angle grids) must dominate the inner
    supremum sup_d (h_t(d) - lam d - mu d^2) found on fine grids."""
    rng = np.random.default_rng(3)
    n = 6
    boxes = np.column_stack(
        [np.zeros(n), np.zeros(n), rng.uniform(20, 50, n), rng.uniform(25, 60, n)]
    )
    d_grid = np.linspace(0.0, 150.0, 16)  # coarse: 10 px cells
    H = tpc.overlap_bound_table(boxes, d_grid, n_angles=4)  # coarse: 22.5 degree cells
    d = np.linspace(0.0, 400.0, 4001)[:, None]
    t = np.linspace(0.0, np.pi / 2, 181)[None, :]
    fine = np.stack(
        [tpc.best_overlap(w, h, d * np.cos(t), d * np.sin(t)).max(axis=1) for w, h in boxes[:, 2:]]
    )  # (n, 4001): h_t on the fine distance grid
    pairs = [(-0.02, 1e-3), (-0.05, 5e-3), (-0.004, 2e-4), (0.01, 0.0), (0.0, 1e-4)]
    pairs += [(-0.05, 5e-4), (-0.03, 3e-4), (-0.1, 1e-3)]  # suprema far out: angles matter
    for lam, mu in pairs:
        brute = np.mean(np.max(fine - lam * d[:, 0] - mu * d[:, 0] ** 2, axis=1))
        assert brute <= tpc.evaluate_bound(H, d_grid, 0.0, 0.0, lam, mu) + 1e-12
