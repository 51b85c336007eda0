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

__all__ = ["cascade_scan", "correlate", "hog_blocks", "resize"]


@njit(cache=True)
def _tent_weights(n_in, n_out):  # pragma: no cover - compiled
    """Per output index: the first input index and the normalised tent weights."""
    f = n_in / n_out
    support = max(1.0, f)
    m = int(math.ceil(support)) * 2 + 1  # noqa: RUF046 (explicit for numba)
    first = np.empty(n_out, dtype=np.int64)
    wts = np.zeros((n_out, m), dtype=np.float64)
    for i in range(n_out):
        centre = (i + 0.5) * f - 0.5
        lo = int(math.floor(centre - support)) + 1  # noqa: RUF046
        lo = max(lo, 0)
        first[i] = lo
        tot = 0.0
        for k in range(m):
            j = lo + k
            if j >= n_in:
                break
            t = abs(j - centre) / support
            if t < 1.0:
                wts[i, k] = 1.0 - t
                tot += 1.0 - t
        if tot > 0:
            for k in range(m):
                wts[i, k] /= tot
        else:  # no input pixel within reach (cannot happen for n_out >= 1): nearest
            first[i] = min(max(int(round(centre)), 0), n_in - 1)  # noqa: RUF046
            wts[i, 0] = 1.0
    return first, wts


@njit(cache=True)
def _resize_kernel(img, out_h, out_w):  # pragma: no cover - compiled
    # img: (C, H, W); separable: rows first (float64), then columns
    C, H, W = img.shape
    fx, wx = _tent_weights(W, out_w)
    fy, wy = _tent_weights(H, out_h)
    mx, my = wx.shape[1], wy.shape[1]
    out = np.empty((C, out_h, out_w), dtype=np.float32)
    tmp = np.empty((H, out_w), dtype=np.float64)
    acc = np.empty(out_w, dtype=np.float64)
    for ch in range(C):
        for y in range(H):
            src = img[ch, y]
            for i in range(out_w):
                s = 0.0
                f0 = fx[i]
                for k in range(mx):
                    j = f0 + k
                    if j < W:
                        s += wx[i, k] * src[j]
                tmp[y, i] = s
        for i in range(out_h):
            acc[:] = 0.0
            f0 = fy[i]
            for k in range(my):
                y = f0 + k
                if y < H:
                    w = wy[i, k]
                    row = tmp[y]
                    for x in range(out_w):
                        acc[x] += w * row[x]
            for x in range(out_w):
                out[ch, i, x] = acc[x]
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
    grow = np.zeros(W, dtype=np.float32)
    gcol = np.zeros(W, dtype=np.float32)
    for y in range(ncr * cell):
        cr = y // cell
        # centred differences of row y (float32, as scikit-image computes them), 0 at
        # the image border; colour: the channel of largest magnitude (the first of ties)
        for x in range(W):
            grow[x] = 0.0
            gcol[x] = 0.0
        if C == 1:
            if 0 < y < H - 1:
                for x in range(W):
                    grow[x] = img[y + 1, x, 0] - img[y - 1, x, 0]
            for x in range(1, W - 1):
                gcol[x] = img[y, x + 1, 0] - img[y, x - 1, 0]
        else:
            for x in range(W):
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
        for x in range(ncc * cell):
            grd = np.float64(grow[x])
            gcd = np.float64(gcol[x])
            mag = math.sqrt(grd * grd + gcd * gcd)
            # turn into the upper half plane: the orientation modulo 180 degrees
            flip = grd < 0.0 or (grd == 0.0 and gcd < 0.0)
            if flip:
                grd = -grd
                gcd = -gcd
            # bins are ordered, so the bin is the number of boundaries at or before the
            # gradient (no branch per boundary)
            b = 0
            for k in range(1, orientations):
                b += cs[k] * grd - sn[k] * gcd >= 0.0
            hist[cr, x // cell, b] += mag
    area = float(cell * cell)
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
                        v = hist[r + i, c + j, o] / area
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
def _cascade_kernel(
    G, CG, prior, src, fi, fj, fq, thr, v_lo, v_hi, ptr, stage_thr, chain, nr, nc
):  # pragma: no cover - compiled
    K = stage_thr.shape[0]
    depth = np.zeros((nr, nc), dtype=np.int64)
    margin = np.zeros((nr, nc), dtype=np.float64)
    n_eval = 0
    for r in range(nr):
        for c in range(nc):
            F = 0.0
            d = 0
            m = 0.0
            for k in range(K):
                s = 0.0
                for t in range(ptr[k], ptr[k + 1]):
                    a = src[t]
                    if a == 0:
                        x = np.float64(G[r + fi[t], c + fj[t], fq[t]])
                    elif a > 0:
                        x = np.float64(CG[a - 1, r + fi[t], c + fj[t], fq[t]])
                    else:
                        x = np.float64(prior[r, c])
                    s += v_hi[t] if x > thr[t] else v_lo[t]
                n_eval += ptr[k + 1] - ptr[k]
                F = s + F if chain else s
                m = F - stage_thr[k]
                if F > stage_thr[k]:
                    d += 1
                else:
                    break
            depth[r, c] = d
            margin[r, c] = m
    return depth, margin, n_eval


def cascade_scan(grid, channel_grids, prior, layout, stages):
    """Send every window of one pyramid level through a boosted cascade, each only as far
    as it passes (early exit, compiled), reading each stump's feature straight from the
    level's grids.  ``grid``: the HOG block grid ``(rows, cols, F)``; ``channel_grids``:
    ``(S, rows', cols', channels)`` (S may be 0); ``prior``: ``(nr, nc)`` or None;
    ``layout``: per stump ``(src, i, j, q)`` -- 0 the HOG grid, ``s > 0`` channel grid
    ``s - 1``, ``-1`` the prior -- at window offset ``(i, j)``, feature ``q``;
    ``stages``: ``(split, v_lo, v_hi, ptr, stage_thresholds, chain)``.  Returns
    ``(depth, margin, n_evaluated)``: stages passed, ``F - threshold`` at the last stage
    evaluated (as :meth:`BoostedCascade._walk`), and the weak classifiers evaluated."""
    G = np.ascontiguousarray(grid, dtype=np.float32)
    G = G.reshape(G.shape[0], G.shape[1], -1)
    CG = np.ascontiguousarray(channel_grids, dtype=np.float32)
    src, fi, fj, fq = (np.ascontiguousarray(a, dtype=np.int64) for a in layout)
    split, v_lo, v_hi, ptr, sthr, chain = stages
    nr, nc = int(prior.shape[0]), int(prior.shape[1])
    return _cascade_kernel(
        G,
        CG,
        np.ascontiguousarray(prior, dtype=np.float64),
        src,
        fi,
        fj,
        fq,
        np.ascontiguousarray(split, dtype=np.float64),
        np.ascontiguousarray(v_lo, dtype=np.float64),
        np.ascontiguousarray(v_hi, dtype=np.float64),
        np.ascontiguousarray(ptr, dtype=np.int64),
        np.ascontiguousarray(sthr, dtype=np.float64),
        bool(chain),
        nr,
        nc,
    )
