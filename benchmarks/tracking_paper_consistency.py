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
from benchlib.box_bounds import moment_bound, overlap_bound_table
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
