"""Compiled kernels of the scanning detectors: the image pyramid, HOG, the linear filter.

* :func:`resize` -- separable antialiased bilinear resampling (a tent filter whose support
  grows with the downscaling factor, so every input pixel contributes: the "antialiased
  bilinear" of image libraries).  Output pixel ``i`` is centred on input coordinate
  ``(i + 1/2) * in / out - 1/2`` (pixel-area alignment).
* :func:`hog_blocks` -- Dalal & Triggs' HOG ("Histograms of oriented gradients for human
  detection", CVPR 2005) exactly as scikit-image's ``skimage.feature.hog(...,
  feature_vector=False)`` defines it (centred differences, zero at the image border;
  colour: the channel with the largest gradient magnitude per pixel; unsigned orientation
  hard-binned into ``orientations`` bins of ``[0, 180)`` degrees; cell histograms of
  magnitudes divided by the cell area; L2-Hys block normalisation with ``eps = 1e-5``),
  one compiled pass over the pixels and one over the blocks.  A test checks it against
  scikit-image on random and real images.
* :func:`correlate` -- the score map of a linear filter on a feature grid: ``out[r, c] =
  sum_{i, j, f} G[r + i, c + j, f] W[i, j, f]``, i.e. the dot product of the filter with
  the descriptor of every window of a pyramid level, without gathering the window
  descriptors (the scanning of Felzenszwalb, Girshick, McAllester & Ramanan, TPAMI 2010;
  dlib's ``scan_fhog_pyramid`` does the same).  A test checks it against the gathered
  descriptors' dot products at every level.

All kernels are ``numba.njit(cache=True)`` loops with float64 accumulation in a fixed
order, so the results do not depend on the CPU's vector width.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "cascade_plan",
    "cascade_scan",
    "cascade_scan_level",
    "channel_cells",
    "correlate",
    "hog_blocks",
    "resize",
]


@njit(cache=True)
def _tent_weights(n_in, n_out):  # pragma: no cover - compiled
    """Per output index: the first input index, the number of taps and the normalised
    tent weights (only the taps with a non-zero weight)."""
    f = n_in / n_out
    support = max(1.0, f)
    m = int(math.ceil(support)) * 2 + 1  # noqa: RUF046 (explicit for numba)
    first = np.empty(n_out, dtype=np.int64)
    count = np.zeros(n_out, dtype=np.int64)
    wts = np.zeros((n_out, m), dtype=np.float64)
    for i in range(n_out):
        centre = (i + 0.5) * f - 0.5
        lo = int(math.floor(centre - support)) + 1  # noqa: RUF046
        lo = max(lo, 0)
        tot = 0.0
        n = 0
        for k in range(m):
            j = lo + k
            if j >= n_in:
                break
            t = abs(j - centre) / support
            if t < 1.0:
                if n == 0:
                    first[i] = j
                wts[i, n] = 1.0 - t
                tot += 1.0 - t
                n += 1
        if tot > 0:
            for k in range(n):
                wts[i, k] /= tot
            count[i] = n
        else:  # no input pixel within reach (cannot happen for n_out >= 1): nearest
            first[i] = min(max(int(round(centre)), 0), n_in - 1)  # noqa: RUF046
            wts[i, 0] = 1.0
            count[i] = 1
    return first, count, wts


@njit(cache=True)
def _resize_kernel(img, out_h, out_w):  # pragma: no cover - compiled
    # img: (C, H, W); separable: rows first (float64), then columns.  Taps of zero
    # weight are skipped (adding 0 * x changes no sum of finite values).
    C, H, W = img.shape
    fx, nx, wx = _tent_weights(W, out_w)
    fy, ny, wy = _tent_weights(H, out_h)
    out = np.empty((C, out_h, out_w), dtype=np.float32)
    tmp = np.empty((H, out_w), dtype=np.float64)
    acc = np.empty(out_w, dtype=np.float64)
    for ch in range(C):
        for y in range(H):
            src = img[ch, y]
            t_ = tmp[y]
            for i in range(out_w):
                s = 0.0
                f0 = fx[i]
                for k in range(nx[i]):
                    s += wx[i, k] * src[f0 + k]
                t_[i] = s
        for i in range(out_h):
            acc[:] = 0.0
            f0 = fy[i]
            for k in range(ny[i]):
                w = wy[i, k]
                row = tmp[f0 + k]
                for x in range(out_w):
                    acc[x] += w * row[x]
            o_ = out[ch, i]
            for x in range(out_w):
                o_[x] = acc[x]
    return out


def resize(image, shape) -> np.ndarray:
    """``image`` (H, W) or (H, W, C) resampled to ``shape = (rows, cols)`` (float32)."""
    a = np.asarray(image, dtype=np.float32)
    oh, ow = int(shape[0]), int(shape[1])
    if oh < 1 or ow < 1:
        raise ValueError(f"resize: the output shape must be positive, got {shape}")
    if a.ndim == 2:
        return _resize_kernel(np.ascontiguousarray(a[None]), oh, ow)[0]
    out = _resize_kernel(np.ascontiguousarray(a.transpose(2, 0, 1)), oh, ow)
    return np.ascontiguousarray(out.transpose(1, 2, 0))


@njit(cache=True)
def _hog_kernel(img, cell, block, orientations):  # pragma: no cover - compiled
    H, W, C = img.shape
    ncr, ncc = H // cell, W // cell
    hist = np.zeros((ncr, ncc, orientations), dtype=np.float64)
    # bin b holds the unsigned orientations [b, b + 1) * 180 / orientations degrees; a
    # gradient turned into the upper half plane is at or past boundary k iff its cross
    # product with the boundary's unit vector is >= 0 (no arctan per pixel)
    cs = np.empty(orientations, dtype=np.float64)
    sn = np.empty(orientations, dtype=np.float64)
    for k in range(orientations):
        cs[k] = math.cos(math.pi * k / orientations)
        sn[k] = math.sin(math.pi * k / orientations)
    Wu = ncc * cell  # the columns that fall into whole cells
    grow = np.zeros(W, dtype=np.float32)
    gcol = np.zeros(W, dtype=np.float32)
    gr = np.empty(Wu, dtype=np.float64)
    gc = np.empty(Wu, dtype=np.float64)
    mag = np.empty(Wu, dtype=np.float64)
    bins = np.empty(Wu, dtype=np.int64)
    for y in range(ncr * cell):
        cr = y // cell
        # centred differences of row y (float32, as scikit-image computes them), 0 at
        # the image border; colour: the channel of largest magnitude (the first of ties)
        if C == 1:
            if 0 < y < H - 1:
                for x in range(W):
                    grow[x] = img[y + 1, x, 0] - img[y - 1, x, 0]
            else:
                grow[:] = 0.0
            gcol[0] = 0.0
            gcol[W - 1] = 0.0
            for x in range(1, W - 1):
                gcol[x] = img[y, x + 1, 0] - img[y, x - 1, 0]
        else:
            for x in range(W):
                grow[x] = 0.0
                gcol[x] = 0.0
                best = np.float32(-1.0)
                for ch in range(C):
                    r_ = np.float32(0.0)
                    c_ = np.float32(0.0)
                    if 0 < y < H - 1:
                        r_ = img[y + 1, x, ch] - img[y - 1, x, ch]
                    if 0 < x < W - 1:
                        c_ = img[y, x + 1, ch] - img[y, x - 1, ch]
                    m_ = np.float32(math.sqrt(np.float64(r_) ** 2 + np.float64(c_) ** 2))
                    if m_ > best:
                        best = m_
                        grow[x] = r_
                        gcol[x] = c_
        # per pixel (branch-free, so the loops vectorise): the magnitude and the
        # gradient turned into the upper half plane (the orientation modulo 180 degrees)
        for x in range(Wu):
            grd = np.float64(grow[x])
            gcd = np.float64(gcol[x])
            mag[x] = math.sqrt(grd * grd + gcd * gcd)
            flip = (grd < 0.0) | ((grd == 0.0) & (gcd < 0.0))
            s = -1.0 if flip else 1.0
            gr[x] = s * grd
            gc[x] = s * gcd
            bins[x] = 0
        # bins are ordered, so the bin is the number of boundaries at or before the
        # gradient: one pass per boundary over the row
        for k in range(1, orientations):
            ck, sk = cs[k], sn[k]
            for x in range(Wu):
                bins[x] += ck * gr[x] - sk * gc[x] >= 0.0
        # cell histograms, pixels added in row-major order
        h = hist[cr]
        for cc in range(ncc):
            hc = h[cc]
            x0 = cc * cell
            for t in range(cell):
                hc[bins[x0 + t]] += mag[x0 + t]
    area = float(cell * cell)
    for r in range(ncr):
        for c in range(ncc):
            for o in range(orientations):
                hist[r, c, o] = hist[r, c, o] / area
    nbr, nbc = ncr - block + 1, ncc - block + 1
    out = np.zeros((max(nbr, 0), max(nbc, 0), block, block, orientations), dtype=np.float32)
    eps2 = 1e-10
    tmp = np.empty((block, block, orientations), dtype=np.float64)
    for r in range(nbr):
        for c in range(nbc):
            s = 0.0
            for i in range(block):
                for j in range(block):
                    for o in range(orientations):
                        v = hist[r + i, c + j, o]
                        tmp[i, j, o] = v
                        s += v * v
            d = math.sqrt(s + eps2)
            s2 = 0.0
            for i in range(block):
                for j in range(block):
                    for o in range(orientations):
                        v = min(tmp[i, j, o] / d, 0.2)
                        tmp[i, j, o] = v
                        s2 += v * v
            d2 = math.sqrt(s2 + eps2)
            for i in range(block):
                for j in range(block):
                    for o in range(orientations):
                        out[r, c, i, j, o] = tmp[i, j, o] / d2
    return out


def hog_blocks(image, cell: int = 8, block: int = 2, orientations: int = 9) -> np.ndarray:
    """The normalised HOG block grid ``(block rows, block cols, block, block,
    orientations)`` (float32) of a grey ``(H, W)`` or colour ``(H, W, C)`` float image --
    ``skimage.feature.hog(image, orientations, (cell, cell), (block, block),
    feature_vector=False)`` (``channel_axis=-1`` for colour), compiled."""
    a = np.asarray(image, dtype=np.float32)
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3:
        raise ValueError(f"hog_blocks: expected (H, W) or (H, W, C), got shape {a.shape}")
    return _hog_kernel(np.ascontiguousarray(a), int(cell), int(block), int(orientations))


@njit(cache=True)
def _correlate_kernel(Gt, Wt):  # pragma: no cover - compiled
    # Gt: the grid as (rows, F, cols), so the innermost loop runs over neighbouring
    # output columns -- independent sums (vectorisable without reordering any of them);
    # every output is summed in the fixed order (i, j, f)
    Hg, F, Wg = Gt.shape
    br, bc, _ = Wt.shape
    nr, nc = Hg - br + 1, Wg - bc + 1
    out = np.zeros((max(nr, 0), max(nc, 0)), dtype=np.float64)
    for r in range(nr):
        acc = out[r]
        for i in range(br):
            row = Gt[r + i]
            for j in range(bc):
                for f in range(F):
                    w = Wt[i, j, f]
                    g = row[f, j : j + nc]
                    for c in range(nc):
                        acc[c] += g[c] * w
    return out


def correlate(grid, filt) -> np.ndarray:
    """Score map ``(rows - fr + 1, cols - fc + 1)`` of the filter ``filt`` (fr, fc, F)
    on the feature grid ``grid`` (rows, cols, F): entry ``[r, c]`` is the dot product of
    the filter with the window of the grid at offset ``(r, c)`` (float64 sums)."""
    G = np.asarray(grid, dtype=np.float32)
    Wt = np.asarray(filt, dtype=np.float64)
    G = G.reshape(G.shape[0], G.shape[1], -1)
    Wt = Wt.reshape(Wt.shape[0], Wt.shape[1], -1)
    if G.shape[2] != Wt.shape[2]:
        raise ValueError(
            f"correlate: grid has {G.shape[2]} features per cell, filter {Wt.shape[2]}"
        )
    Gt = np.ascontiguousarray(G.transpose(0, 2, 1), dtype=np.float64)
    return _correlate_kernel(Gt, np.ascontiguousarray(Wt))


@njit(cache=True)
def _cascade_kernel(U, P, lay, start, stp, ptr, stage_thr, chain, nr, nc):  # pragma: no cover
    # lay: (4, T) int64, per stump (src, fi, fj, fq); stp: (3, T) float64, per stump
    # (split, v_lo, v_hi) -- packed, so a call has few arguments to dispatch
    # U: a level's feature grids stacked per cell, (rows, cols, F) float32 (the HOG /
    # FHOG grid itself when there are no channel grids: nothing is copied); stump t
    # reads part src[t] (start[s]: where part s begins in a cell's stacked features) at
    # window cell (fi, fj), feature fq -- off[t], a flat index relative to the window's
    # first cell -- or, src[t] < 0, the window's location prior P[r, c].  Each window
    # enters the stages in turn and leaves at the first it fails (early exit); no
    # window descriptor is gathered.
    K = stage_thr.shape[0]
    Cc, Ft = U.shape[1], U.shape[2]
    Uf = U.reshape(-1)
    Pf = P.reshape(-1)
    src, fi, fj, fq = lay[0], lay[1], lay[2], lay[3]
    thr, v_lo, v_hi = stp[0], stp[1], stp[2]
    off = np.empty(src.shape[0], dtype=np.int64)
    for t in range(src.shape[0]):
        off[t] = -1 if src[t] < 0 else (fi[t] * Cc + fj[t]) * Ft + start[src[t]] + fq[t]
    n = nr * nc
    depth = np.zeros(n, dtype=np.int64)
    margin = np.zeros(n, dtype=np.float64)
    score = np.empty(n, dtype=np.float64)
    # stage by stage over the windows still alive (breadth first): for one stump the
    # loop over windows is independent work (no chain of dependent sums), which is what
    # makes it fast; each window's stage sum still adds its stumps in stump order from
    # 0.0, and F and the margin are formed as a window-by-window walk forms them, so the
    # result is the same to the bit
    alive = np.empty(n, dtype=np.int64)  # window index r * nc + c
    base = np.empty(n, dtype=np.int64)  # its first cell's flat offset in U
    Fw = np.zeros(n, dtype=np.float64)  # the score so far (chained) of alive window i
    s = np.empty(n, dtype=np.float64)
    for r in range(nr):
        for c in range(nc):
            w = r * nc + c
            alive[w] = w
            base[w] = (r * Cc + c) * Ft
    m_alive = n
    n_eval = 0
    for k in range(K):
        if m_alive == 0:
            break
        s[:m_alive] = 0.0
        for t in range(ptr[k], ptr[k + 1]):
            o, th, lo, hi = off[t], thr[t], v_lo[t], v_hi[t]
            if o < 0:
                for i in range(m_alive):
                    s[i] += hi if np.float64(Pf[alive[i]]) > th else lo
            else:
                for i in range(m_alive):
                    s[i] += hi if np.float64(Uf[base[i] + o]) > th else lo
        n_eval += m_alive * (ptr[k + 1] - ptr[k])
        thr_k = stage_thr[k]
        j = 0
        for i in range(m_alive):
            F = s[i] + Fw[i] if chain else s[i]
            w = alive[i]
            margin[w] = F - thr_k
            if F > thr_k:
                depth[w] += 1
                alive[j] = w
                base[j] = base[i]
                Fw[j] = F
                j += 1
        m_alive = j
    for w in range(n):
        # the cascade's score (BoostedCascade.decision_function): sigmoid(m) - 1/2
        # past the last stage, d - K + sigmoid(m) when rejected at stage d
        sg = 0.5 * (1.0 + math.tanh(0.5 * margin[w]))
        score[w] = sg - 0.5 if depth[w] == K else depth[w] - K + sg
    return depth.reshape(nr, nc), margin.reshape(nr, nc), n_eval, score.reshape(nr, nc)


def cascade_plan(layout, stages):
    """The arrays :func:`cascade_scan_level` walks, made once per cascade: ``layout``
    and ``stages`` as :func:`cascade_scan` takes them, packed (stump layout as one
    ``(4, T)`` int64 array, splits and leaf values as one ``(3, T)`` float64 array)."""
    src, fi, fj, fq = (np.asarray(v, dtype=np.int64).ravel() for v in layout)
    split, v_lo, v_hi, ptr, sthr, chain = stages
    lay = np.ascontiguousarray(np.stack([src, fi, fj, fq]))
    stp = np.ascontiguousarray(
        np.stack([np.asarray(v, dtype=np.float64).ravel() for v in (split, v_lo, v_hi)])
    )
    ptr = np.ascontiguousarray(ptr, dtype=np.int64)
    sthr = np.ascontiguousarray(sthr, dtype=np.float64)
    if lay.shape[1] != stp.shape[1] or ptr[0] != 0 or ptr[-1] != lay.shape[1]:
        raise ValueError("cascade_plan: the layout, the stumps and the stage pointers disagree")
    if len(ptr) != len(sthr) + 1:
        raise ValueError("cascade_plan: one threshold per stage expected")
    n_src = int(src.max(initial=0))
    return lay, stp, ptr, sthr, bool(chain), bool(np.any(src < 0)), n_src


def cascade_scan_level(grid, channel_grids, prior, plan, positions):
    """:func:`cascade_scan` with the cascade's arrays made once (:func:`cascade_plan`)."""
    lay, stp, ptr, sthr, chain, reads_prior, n_src = plan
    G = grid if grid.dtype == np.float32 else grid.astype(np.float32)
    G = G.reshape(G.shape[0], G.shape[1], -1)
    nr, nc = int(positions[0]), int(positions[1])
    if n_src > len(channel_grids):
        raise ValueError("cascade_scan: a stump reads a channel grid that was not given")
    if not channel_grids:
        U = np.ascontiguousarray(G)
        start = np.array([0, G.shape[2]], dtype=np.int64)
    else:
        parts = [G, *channel_grids]
        R = max(p.shape[0] for p in parts)
        Cc = max(p.shape[1] for p in parts)
        st = [0]
        for p in parts:
            st.append(st[-1] + p.shape[2])
        U = np.empty((R, Cc, st[-1]), dtype=np.float32)
        for p, a in zip(parts, st):
            if p.shape[0] < R or p.shape[1] < Cc:
                U[:, :, a : a + p.shape[2]] = 0.0
            U[: p.shape[0], : p.shape[1], a : a + p.shape[2]] = p
        start = np.array(st, dtype=np.int64)
    if prior is None:
        if reads_prior:
            raise ValueError("cascade_scan: a stump reads the prior but none was given")
        P = np.zeros((nr, nc), dtype=np.float32)
    else:
        P = np.ascontiguousarray(prior, dtype=np.float32)
        if P.shape != (nr, nc):
            raise ValueError(f"cascade_scan: prior has shape {P.shape}, expected {(nr, nc)}")
    return _cascade_kernel(U, P, lay, start, stp, ptr, sthr, chain, nr, nc)


def cascade_scan(grid, channel_grids, prior, layout, stages, positions):
    """Send every window of one pyramid level through a boosted cascade, each only as far
    as it passes (early exit, compiled), reading each stump's feature straight from the
    level's grids.  ``grid``: the HOG block grid or FHOG cell grid ``(rows, cols, F)``;
    ``channel_grids``: a list of ``(rows', cols', channels)`` grids (may be empty);
    ``prior``: ``(nr, nc)`` or None; ``layout``: per stump ``(src, i, j, q)`` -- 0 the
    HOG grid, ``s > 0`` channel grid ``s - 1``, ``-1`` the prior -- at window offset
    ``(i, j)``, feature ``q``; ``stages``: ``(split, v_lo, v_hi, ptr, stage_thresholds,
    chain)``; ``positions``: the window offsets ``(nr, nc)`` of the level.  Channel
    grids are stacked with the HOG grid cell by cell into one array (without them the
    grid is read as it is), so a stump reads its feature at one flat offset from the
    window's first cell; the prior is read from its own map.  The walk goes stage by
    stage over the windows still alive (one stump over all of them, then the next), so
    its inner loop is independent work; every window's sums are formed in the order of a
    window-by-window walk.  Returns ``(depth, margin, n_evaluated, score)``: stages
    passed, ``F - threshold`` at the last stage evaluated (as
    :meth:`BoostedCascade._walk`), the weak classifiers evaluated and the cascade's
    score of every window (:meth:`BoostedCascade.decision_function`)."""
    grid = np.asarray(grid, dtype=np.float32)
    return cascade_scan_level(grid, channel_grids, prior, cascade_plan(layout, stages), positions)


# CIE XYZ of linear sRGB (the matrix scikit-image's ``rgb2xyz`` uses) and the D65 / 2
# degree white point of its ``xyz2luv``
_XYZ_FROM_RGB = np.array(
    [
        [0.412453, 0.357580, 0.180423],
        [0.212671, 0.715160, 0.072169],
        [0.019334, 0.119193, 0.950227],
    ]
)
_WHITE = np.array([0.95047, 1.0, 1.08883])


@njit(cache=True)
def _channel_kernel(img, cell, orientations, M, white):  # pragma: no cover - compiled
    # img: (H, W, C), C = 1 (grey: R = G = B) or 3 (RGB).  Per pixel in float64: grey
    # gradient by central differences (one-sided at the border, as numpy.gradient), its
    # magnitude and unsigned orientation bin, the CIE LUV colour of the clipped RGB;
    # summed per cell in row-major pixel order, divided by the cell area.
    H, W, C = img.shape
    Hc, Wc = H // cell, W // cell
    D = 1 + orientations + 3
    acc = np.zeros((Hc, Wc, D), dtype=np.float64)
    eps = np.finfo(np.float64).eps
    den_w = white[0] + 15.0 * white[1] + 3.0 * white[2]
    u0 = 4.0 * white[0] / den_w
    v0 = 9.0 * white[1] / den_w
    grey = np.empty((H, W), dtype=np.float64)
    for y in range(H):
        for x in range(W):
            if C == 3:
                grey[y, x] = (
                    0.299 * np.float64(img[y, x, 0])
                    + 0.587 * np.float64(img[y, x, 1])
                    + 0.114 * np.float64(img[y, x, 2])
                )
            else:
                grey[y, x] = img[y, x, 0]
    lin = np.empty(3, dtype=np.float64)
    for y in range(Hc * cell):
        y0, y1 = max(y - 1, 0), min(y + 1, H - 1)
        cy = y // cell
        for x in range(Wc * cell):
            x0, x1 = max(x - 1, 0), min(x + 1, W - 1)
            gy = (grey[y1, x] - grey[y0, x]) / (y1 - y0) if y1 > y0 else 0.0
            gx = (grey[y, x1] - grey[y, x0]) / (x1 - x0) if x1 > x0 else 0.0
            mag = math.sqrt(gx * gx + gy * gy)
            a = math.atan2(gy, gx)
            if a < 0.0:
                a += math.pi
            if a >= math.pi:
                a -= math.pi
            b = min(int(a * (orientations / math.pi)), orientations - 1)
            h = acc[cy, x // cell]
            h[0] += mag
            h[1 + b] += mag
            for ch in range(3):
                v = np.float64(img[y, x, ch if C == 3 else 0])
                v = min(max(v, 0.0), 1.0)
                if v > 0.04045:
                    lin[ch] = ((v + 0.055) / 1.055) ** 2.4
                else:
                    lin[ch] = v / 12.92
            X = M[0, 0] * lin[0] + M[0, 1] * lin[1] + M[0, 2] * lin[2]
            Y = M[1, 0] * lin[0] + M[1, 1] * lin[1] + M[1, 2] * lin[2]
            Z = M[2, 0] * lin[0] + M[2, 1] * lin[1] + M[2, 2] * lin[2]
            yr = Y / white[1]
            L = 116.0 * np.cbrt(yr) - 16.0 if yr > 0.008856 else 903.3 * yr
            den = X + 15.0 * Y + 3.0 * Z + eps
            u = 13.0 * L * (4.0 * X / den - u0)
            v_ = 13.0 * L * (9.0 * Y / den - v0)
            # L in [0, 100], u and v in about [-100, 180]: about unit range
            h[1 + orientations] += L / 100.0
            h[2 + orientations] += (u + 100.0) / 270.0
            h[3 + orientations] += (v_ + 140.0) / 270.0
    out = np.empty((Hc, Wc, D), dtype=np.float32)
    area = float(cell * cell)
    for r in range(Hc):
        for c in range(Wc):
            for d in range(D):
                out[r, c, d] = acc[r, c, d] / area
    return out


def channel_cells(image, cell: int, orientations: int = 6) -> np.ndarray:
    """The aggregated channels of :func:`~maxmargin.apps.detection.features.channel_grid`
    (per cell: mean gradient magnitude, mean magnitude per unsigned orientation bin,
    mean CIE LUV colour scaled to about [0, 1]), one compiled pass over the pixels in
    float64 (scikit-image's ``rgb2luv`` formulas, D65 white)."""
    a = np.asarray(image, dtype=np.float32)
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3 or a.shape[2] not in (1, 3):
        raise ValueError(f"channel_cells: expected (H, W) or (H, W, 3), got shape {a.shape}")
    return _channel_kernel(
        np.ascontiguousarray(a), int(cell), int(orientations), _XYZ_FROM_RGB, _WHITE
    )
