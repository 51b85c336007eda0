"""Can a tracker reach the paper's (mean overlap, centre error mean +- std) on these boxes?

Tables 4 and 5 of Shen, Lin & van den Hengel (StructBoost, TPAMI 2014) give, per
sequence, the mean and standard deviation over the frames of the Pascal overlap and of
the centre-location error.  On a given set of ground-truth boxes these are not
independent: a box whose centre is ``d`` pixels from the true centre cannot overlap the
true box by more than ``h_t(d)``, the largest overlap of *any* box (any width and height)
centred at distance ``d``.  A tracker whose centre errors ``d_t`` have mean ``e`` and
standard deviation ``s`` over the frames (so ``mean d_t^2 = m2 = e^2 + s^2``) therefore
has a mean overlap of at most

    B(e, s) = sup { mean_t h_t(d_t) : mean_t d_t = e, mean_t d_t^2 = m2 }
           <= lambda e + mu m2 + mean_t sup_{d >= 0} (h_t(d) - lambda d - mu d^2)

for every ``lambda`` and every ``mu >= 0`` (weak duality).  (The mean alone bounds
nothing: a tracker exact on 99 % of the frames and 1000 px off on the rest has a mean
error of 10 px and a mean overlap of 0.99; the spread rules such trackers out.)  The
multipliers come from the linear program of the bound on a distance grid (HiGHS), and
the bound is then evaluated exactly for them: if the paper's overlap is above it, that
row was not measured on these boxes (another version of the video, another resolution or
other annotations).

``h_t(d)`` exactly: for a box of half-sizes ``(a, b)`` centred at offset ``(dx, dy)``
from a true box ``w x h``, the overlap is, for fixed ``b``, a ratio of two functions
that are linear in ``a`` on each piece between the breakpoints ``a = w/2 - dx`` (the box
stops being inside the true box along x) and ``a = dx + w/2`` (it starts to cover it),
hence monotone on each piece and zero at both ends: its maximum over ``a`` is at one of
the two breakpoints, likewise in ``b``, so the maximum over all box sizes is the largest
of four candidates.  ``h`` does not increase with ``|dx|`` or ``|dy|``, so on an angle
interval ``[t0, t1]`` of the offset's direction and a distance interval ``[d0, d1]``,
``h <= h(d0 cos t1, d0 sin t0)``; with that value per grid cell and the largest value of
``- lambda d - mu d^2`` on the cell, the evaluated bound is an upper bound, not an
estimate.  The centre errors' spread is taken as the paper's "+-" (a standard deviation
over the frames) with n/(n-1) added, so the bound is if anything loose.

Usage: python benchmarks/tracking_paper_consistency.py [--data DIR]
Writes benchmarks/results/tracking_paper_consistency.json (or --out).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from _common import DEFAULT_DATA, write_result
from maxmargin.apps.tracking import read_boxes

#: Tables 4 / 5 of the paper: overlap mean, centre error mean and std (px)
PAPER = {
    "Coke": {
        "StructBoost": (0.79, 3.7, 4.5),
        "Struck50": (0.55, 8.3, 5.6),
        "AdaBoost": (0.47, 9.3, 4.2),
    },
    "Tiger1": {
        "StructBoost": (0.75, 5.4, 4.9),
        "Struck50": (0.68, 7.8, 9.9),
        "AdaBoost": (0.64, 7.8, 4.4),
    },
    "Girl": {
        "StructBoost": (0.74, 14.3, 7.8),
        "Struck50": (0.80, 10.1, 5.5),
        "AdaBoost": (0.41, 47.1, 29.5),
    },
}


def best_overlap(w, h, dx, dy):
    """Largest overlap of any axis-aligned box centred at offset ``(dx, dy)`` (>= 0) from
    the centre of a ``w x h`` box (broadcasting arrays)."""

    def ext(size, off):  # the two breakpoints of the half-size and the overlap length
        inner = size / 2 - off  # box inside the true box along this axis (if > 0)
        outer = off + size / 2  # box covers the true box along this axis
        return [(inner, 2 * inner), (outer, np.broadcast_to(size, np.shape(outer)))]

    best = np.zeros(np.broadcast(w, h, dx, dy).shape)
    for a, ix in ext(w, dx):
        for b, iy in ext(h, dy):
            ok = (a > 0) & (b > 0)
            inter = ix * iy
            union = w * h + 4 * a * b - inter
            iou = np.where(ok, inter / np.where(ok, union, 1.0), 0.0)
            best = np.maximum(best, iou)
    return best


def overlap_bound_table(boxes, d_grid, n_angles=128):
    """``H[t, j]``: an upper bound of ``h_t(d)`` for ``d`` in ``[d_grid[j], d_grid[j+1])``
    (the last cell: ``d >= d_grid[-1]``)."""
    w = boxes[:, 2][:, None, None]
    h = boxes[:, 3][:, None, None]
    th = np.linspace(0.0, np.pi / 2, n_angles + 1)
    d0 = d_grid[None, :, None]
    dx = d0 * np.cos(th[1:])[None, None, :]  # the smallest |dx| on the angle interval
    dy = d0 * np.sin(th[:-1])[None, None, :]  # the smallest |dy|
    return best_overlap(w, h, dx, dy).max(axis=2)


def _cell_max(lam, mu, d_lo, d_hi):
    """The largest value of ``-lam d - mu d^2`` (``mu >= 0``) on each ``[d_lo, d_hi]``."""
    v = np.maximum(-lam * d_lo - mu * d_lo**2, -lam * d_hi - mu * d_hi**2)
    if mu > 0:  # the vertex of the concave parabola, where it falls inside the cell
        dv = -lam / (2 * mu)
        inside = (d_lo <= dv) & (dv <= d_hi)
        v = np.where(inside, lam**2 / (4 * mu), v)
    return v


def evaluate_bound(H, d_grid, e, m2, lam, mu):
    """``lam e + mu m2 + mean_t sup_d (h_t(d) - lam d - mu d^2)`` with ``h_t`` bounded by
    ``H`` per cell ``[d_j, d_{j+1})`` (the last cell unbounded): a valid upper bound of the
    mean overlap for any ``lam`` and ``mu >= 0`` (``mu > 0``, or ``lam >= 0``)."""
    if mu > 0:
        tail_hi = np.append(d_grid[1:], max(d_grid[-1], -lam / (2 * mu)) + 1.0)
        g = _cell_max(lam, mu, d_grid, tail_hi)
    elif lam >= 0:
        g = -lam * d_grid  # decreasing: the left end of every cell
    else:
        return np.inf
    return float(lam * e + mu * m2 + np.mean(np.max(H + g[None, :], axis=1)))


def moment_bound(H, d_grid, e, s, n):
    """Upper bound of the mean overlap of trackers whose centre errors have mean ``e``
    and standard deviation ``s`` over ``n`` frames: the multipliers of the grid LP,
    then the exact evaluation at them (:func:`evaluate_bound`)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    m2 = e**2 + s**2 * n / max(n - 1, 1)
    T, J = H.shape
    # variables: lambda (free), mu >= 0, z_t (free); minimise lam e + mu m2 + mean z
    # subject to z_t >= H_tj - lam d_j - mu d_j^2, i.e. -lam d_j - mu d_j^2 - z_t <= -H_tj
    rows = np.arange(T * J)
    t_idx = np.repeat(np.arange(T), J)
    dj = np.tile(d_grid, T)
    vals = np.concatenate([-dj, -(dj**2), -np.ones(T * J)])
    cols = np.concatenate([0 * rows, 0 * rows + 1, 2 + t_idx])
    A = coo_matrix((vals, (np.tile(rows, 3), cols)), shape=(T * J, 2 + T)).tocsr()
    c = np.concatenate([[e, m2], np.full(T, 1.0 / T)])
    bounds = [(None, None), (0, None)] + [(None, None)] * T
    res = linprog(c, A_ub=A, b_ub=-H.ravel(), bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"the bound's LP failed: {res.message}")
    lam, mu = float(res.x[0]), float(res.x[1])
    # the grid ends at d_grid[-1]; the exact evaluation does not, so with mu = 0 a
    # negative lambda is unbounded there: then try lambda = 0 and a small mu as well
    tries = [(lam, mu), (max(lam, 0.0), mu), (lam, max(mu, 1e-9))]
    val, lam, mu = min((evaluate_bound(H, d_grid, e, m2, a, b), a, b) for a, b in tries)
    return val, lam, mu, float(res.fun)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA / "tracking"))
    ap.add_argument("--out", default="benchmarks/results/tracking_paper_consistency.json")
    args = ap.parse_args()
    rows = []
    for name, trackers in PAPER.items():
        b = read_boxes(os.path.join(args.data, name, "groundtruth_rect.txt"))
        d_grid = np.linspace(0.0, 3.0 * float(b[:, 2:].max()), 301)
        H = overlap_bound_table(b, d_grid, n_angles=48)
        n = len(b)
        for tracker, (ov, err, sd) in trackers.items():
            bound, lam, mu, lp = moment_bound(H, d_grid, err, sd, n)
            # the frame-size factor f (the paper's frames f times as large as these, its
            # pixel errors f times ours) from which on the row becomes possible
            f_ok = None
            if ov > bound:
                lo, hi = 1.0, 8.0
                if moment_bound(H, d_grid, err / hi, sd / hi, n)[0] >= ov:
                    for _ in range(12):
                        mid = 0.5 * (lo + hi)
                        if moment_bound(H, d_grid, err / mid, sd / mid, n)[0] >= ov:
                            hi = mid
                        else:
                            lo = mid
                    f_ok = hi
            rows.append(
                {
                    "sequence": name,
                    "tracker": tracker,
                    "paper_overlap": ov,
                    "paper_centre_error": [err, sd],
                    "overlap_bound": bound,
                    "lp_value": lp,
                    "multipliers": [lam, mu],
                    "consistent": bool(ov <= bound),
                    "scale_factor_from_which_consistent": f_ok,
                    "frames": n,
                    "box_width_range": [float(b[:, 2].min()), float(b[:, 2].max())],
                    "box_height_range": [float(b[:, 3].min()), float(b[:, 3].max())],
                }
            )
            verdict = "possible" if ov <= bound else "IMPOSSIBLE"
            extra = "" if f_ok is None else f"; possible with frames x{f_ok:.2f} as large"
            print(
                f"{name:7s} {tracker:12s} paper {ov:.2f} at {err:5.1f} +- {sd:4.1f} px: "
                f"bound {bound:.3f} ({verdict} on these boxes{extra})"
            )
    print(f"wrote {write_result(args.out, {'results': rows})}")


if __name__ == "__main__":
    main()
