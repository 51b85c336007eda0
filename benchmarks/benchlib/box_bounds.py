"""Pascal-overlap bounds for boxes at a given centre offset (used by
``benchmarks/tracking_paper_consistency.py`` for its verdict on the StructBoost paper's
Table 4, and tested against brute force in ``tests/test_tracking_paper_consistency.py``)."""

from __future__ import annotations

import numpy as np


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
