"""FHOG cell features and the per-image structural SVM of the window detector (issue 31,
goal b): the compiled features against a NumPy reference written from the paper's
definition, the filter scan over the FHOG grid against gathered descriptors, the
loss-augmented oracle against brute-force enumeration of every window, and the trained
structural SVM's objective against the primal QP solved by scipy."""

from __future__ import annotations

import numpy as np
import pytest
from detection_makers import small_scenes
from scipy.optimize import minimize

from maxmargin.apps.detection import HOGPyramid, HOGSVMDetector
from maxmargin.apps.detection.detector import WindowSSVMModel
from maxmargin.apps.detection.features import FHOG_EPS, fhog_cells
from maxmargin.datasets import make_detection_scenes
from maxmargin.solvers.ssvm import solve_ssvm
from maxmargin.tasks.boxes import box_overlap, pairwise_overlap

# float32 output of float64 computations that differ only in summation order: features
# are <= 1 (clipped at 0.2, at most 18 * 0.2 * 0.2357 = 0.85), so a few float32 ulps
F32_TOL = 1e-6


def fhog_reference(image, cell, binning="angle"):
    """Felzenszwalb et al., TPAMI 2010, Sec. 6, written out directly: explicit bilinear
    votes per pixel, the four block normalisations from a zero-padded energy grid.  The
    orientation bin: ``"angle"`` -- arctan2 rounded to the nearest of 18 directions
    (independent of the kernel's rule; equal except on exact ties, which random float
    images do not have); ``"dot"`` -- the largest dot product with the 18 directions,
    the first on a tie (the paper's code's rule: integer images have exact ties, e.g.
    a vertical gradient lies halfway between 80 and 100 degrees)."""
    img = np.asarray(image, dtype=np.float64)
    if img.ndim == 2:
        img = img[..., None]
    H, W, _ = img.shape
    gx = np.zeros_like(img)
    gy = np.zeros_like(img)
    gx[1:-1, 1:-1] = img[1:-1, 2:] - img[1:-1, :-2]
    gy[1:-1, 1:-1] = img[2:, 1:-1] - img[:-2, 1:-1]
    m2 = gx**2 + gy**2
    ch = np.argmax(m2, axis=2)  # first channel of largest magnitude
    gx = np.take_along_axis(gx, ch[..., None], 2)[..., 0]
    gy = np.take_along_axis(gy, ch[..., None], 2)[..., 0]
    mag = np.hypot(gx, gy)
    if binning == "angle":
        ob = np.round(np.arctan2(gy, gx) / (np.pi / 9)).astype(int) % 18
    else:
        a = np.arange(9) * np.pi / 9
        d = gx[..., None] * np.cos(a) + gy[..., None] * np.sin(a)
        inter = np.stack([d, -d], axis=-1).reshape(H, W, 18)  # d0, -d0, d1, -d1, ...
        i = np.argmax(np.concatenate([np.zeros((H, W, 1)), inter], axis=2), axis=2) - 1
        i = np.maximum(i, 0)  # no positive dot product (zero gradient): bin 0
        ob = i // 2 + 9 * (i % 2)
    Hc, Wc = H // cell, W // cell
    hist = np.zeros((Hc, Wc, 18))
    for y in range(H):
        for x in range(W):
            fy, fx = (y + 0.5) / cell - 0.5, (x + 0.5) / cell - 0.5
            for r in (int(np.floor(fy)), int(np.floor(fy)) + 1):
                for c in (int(np.floor(fx)), int(np.floor(fx)) + 1):
                    if 0 <= r < Hc and 0 <= c < Wc:
                        w = (1 - abs(fy - r)) * (1 - abs(fx - c))
                        hist[r, c, ob[y, x]] += w * mag[y, x]
    unsigned = hist[..., :9] + hist[..., 9:]
    E = np.pad((unsigned**2).sum(axis=2), 1)
    out = np.zeros((Hc, Wc, 31))
    for r in range(Hc):
        for c in range(Wc):
            for k, (dr, dc) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
                n = 1 / np.sqrt(E[r + dr : r + dr + 2, c + dc : c + dc + 2].sum() + FHOG_EPS)
                hs = np.minimum(hist[r, c] * n, 0.2)
                out[r, c, :18] += 0.5 * hs
                out[r, c, 18:27] += 0.5 * np.minimum(unsigned[r, c] * n, 0.2)
                out[r, c, 27 + k] = 0.2357 * hs.sum()
    return out


@pytest.mark.parametrize("shape", [(19, 27), (32, 32), (26, 41, 3)])
@pytest.mark.parametrize("cell", [4, 8, 5])
def test_fhog_equals_the_numpy_reference(shape, cell):
    rng = np.random.default_rng(shape[0] + cell)
    im = rng.random(shape).astype(np.float32)
    got = fhog_cells(im, cell)
    ref = fhog_reference(im, cell)
    assert got.shape == ref.shape == (shape[0] // cell, shape[1] // cell, 31)
    np.testing.assert_allclose(got, ref, rtol=0, atol=F32_TOL)


def test_fhog_on_a_smooth_image_and_uint8():
    # a smooth ramp (few distinct angles, hard cases for the bin choice away from ties)
    y, x = np.mgrid[0:24, 0:32]
    im = (np.sin(x / 5.0) + np.cos(y / 7.0) + 2) / 4
    for binning in ("angle", "dot"):
        ref = fhog_reference(im, 8, binning)
        np.testing.assert_allclose(fhog_cells(im, 8), ref, rtol=0, atol=F32_TOL)
    u8 = (im * 255).astype(np.uint8)
    ref = fhog_reference(u8.astype(np.float32) / 255, 8, "dot")
    np.testing.assert_allclose(fhog_cells(u8, 8), ref, rtol=0, atol=F32_TOL)


def test_fhog_errors():
    with pytest.raises(ValueError, match="cell"):
        fhog_cells(np.zeros((8, 8)), 0)
    with pytest.raises(ValueError, match="NaN"):
        fhog_cells(np.full((8, 8), np.nan), 4)
    with pytest.raises(ValueError, match="features"):
        HOGPyramid(np.zeros((32, 32)), window=(2, 2), features="sift")


@pytest.mark.parametrize("aspect", [(1.0,), (0.7, 1.4)])
def test_fhog_filter_scan_equals_window_dot_products(aspect):
    img = make_detection_scenes(1, size=(96, 128), random_state=3)[0][0]
    pyr = HOGPyramid(
        img, window=(5, 4), cell=8, features="fhog", scale_step=1.2, aspect_ratios=aspect
    )
    assert pyr.n_features == 5 * 4 * 31
    w = np.random.default_rng(0).normal(size=pyr.n_features)
    for k in range(len(pyr.levels)):
        nr, nc = pyr.positions(k)
        r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
        X = pyr.descriptors(np.full(r.size, k), r.ravel(), c.ravel()).astype(np.float64)
        # a window's descriptor is its h x w block of cells of fhog_cells(level image)
        np.testing.assert_array_equal(X[0].reshape(4, 5, 31), pyr.levels[k][:4, :5])
        S = pyr.filter_scores(k, w)
        bound = pyr.n_features * np.finfo(np.float64).eps * (np.abs(X) @ np.abs(w))
        assert np.all(np.abs(S.ravel() - X @ w) <= bound + 1e-300)


# ------------------------------------------------------------------ structural SVM
def _tiny_problem(null_loss=1.0, n=3, false_alarm_loss=None, loss_threshold=None):
    imgs, boxes = make_detection_scenes(n, size=(40, 48), side=18, random_state=1)
    det = HOGSVMDetector(
        window=(2, 2),
        cell=8,
        features="fhog",
        training="structured",
        location_prior=False,
        aspect_ratios=(1.0,),
        scale_step=1.2,
    )
    wins = det._windows(imgs, boxes)
    model = WindowSSVMModel(
        wins,
        boxes,
        [None] * len(wins),
        null_loss=null_loss,
        false_alarm_loss=false_alarm_loss,
        loss_threshold=loss_threshold,
    )
    return det, imgs, boxes, wins, model


def _all_psi(model, k):
    """Joint features of every window of image k, gathered one window at a time, and
    the empty output's (zeros) as the last row."""
    pyr, lv, r, c, _ = model.wins[k]
    rows = [
        np.concatenate([pyr.descriptors([lv[i]], [r[i]], [c[i]])[0], [1.0]]) for i in range(len(lv))
    ]
    return np.array([*rows, np.zeros(model.dim)], dtype=np.float64)


def _examples(model, boxes, null_loss, fa, thr=None):
    """Per example, written out here: (image, true output, loss of every window then
    of the empty output), from overlaps computed one pair at a time.  Per image the
    false-alarm example first (with ``fa``), then one per box; windows that overlap
    another box by >= 0.5 are not outputs of a box's example (loss -inf)."""
    out = []
    for k, b in enumerate(boxes):
        pyr, lv, r, c, _ = model.wins[k]
        b = np.asarray(b).reshape(-1, 4)
        wb = pyr.boxes(lv, r, c)
        ov = np.array([[box_overlap(w, bb)[0] for bb in b] for w in wb])
        n = len(wb)
        if fa is not None:
            L = np.array([fa if ov[i].max() < 0.3 else -np.inf for i in range(n)])
            out.append((k, n, np.append(L, 0.0)))
        for j in range(len(b)):
            t = int(np.argmax(ov[:, j]))
            L = ov[t, j] - ov[:, j]
            if thr is not None:
                L = np.array([0.0 if i == t or ov[i, j] >= thr else 1.0 for i in range(n)])
            for i in range(n):
                if i != t and any(ov[i, q] >= 0.5 for q in range(len(b)) if q != j):
                    L[i] = -np.inf
            out.append((k, t, np.append(L, -np.inf if null_loss is None else null_loss)))
    return out


@pytest.mark.parametrize(
    "null_loss, fa, thr", [(1.0, None, None), (None, None, None), (1.0, 1.0, None), (0.5, 2.0, 0.5)]
)
def test_loss_augmented_oracle_equals_enumeration(null_loss, fa, thr):
    _, _, boxes, _, model = _tiny_problem(null_loss, false_alarm_loss=fa, loss_threshold=thr)
    assert any(len(b) > 1 for b in boxes)  # the exclusion of the other box is exercised
    ex = _examples(model, boxes, null_loss, fa, thr)
    assert model.n_samples == len(ex)
    np.testing.assert_array_equal(model.img, [e[0] for e in ex])
    np.testing.assert_array_equal(model.true, [e[1] for e in ex])
    rng = np.random.default_rng(0)
    for _ in range(4):
        w = rng.normal(size=model.dim) * 0.3
        lab, loss, margin = model.loss_augmented(w)
        ref_plane = np.zeros(model.dim)
        coef = rng.random(model.n_samples)
        for e, (k, t, L) in enumerate(ex):
            P = _all_psi(model, k)
            s = P @ w
            best = int(np.argmax(L + s))
            assert lab[e] == best
            np.testing.assert_allclose(loss[e], L[best], rtol=0, atol=1e-12)
            np.testing.assert_allclose(margin[e], s[t] - s[best], rtol=1e-9, atol=1e-9)
            ref_plane += coef[e] * (P[t] - P[best])
        np.testing.assert_allclose(model.plane(lab, coef), ref_plane, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fa", [None, 1.0])
def test_structural_svm_reaches_the_primal_qp_optimum(fa):
    """1-slack cutting planes on the window model against the n-slack primal QP with
    every window of every image as a constraint, solved by scipy's SLSQP."""
    _, _, boxes, _, model = _tiny_problem(1.0, n=2, false_alarm_loss=fa)
    C, tol = 1.0, 1e-6
    res = solve_ssvm(model, C, "1-slack", tol=tol, max_iter=500)
    assert res.converged
    m, d = model.n_samples, model.dim
    G, h = [], []  # constraints w.(Psi_t - Psi_y) + xi_e >= L_y
    for e, (k, t, L) in enumerate(_examples(model, boxes, 1.0, fa)):
        P = _all_psi(model, k)
        for row, lv in zip(P[t] - P, L):
            if not np.isfinite(lv):
                continue
            g = np.zeros(d + m)
            g[:d], g[d + e] = row, 1.0
            G.append(g)
            h.append(lv)
    G, h = np.array(G), np.array(h)
    G = np.vstack([G, np.hstack([np.zeros((m, d)), np.eye(m)])])  # xi >= 0
    h = np.append(h, np.zeros(m))
    x0 = np.concatenate([np.zeros(d), np.full(m, 2.0)])
    qp = minimize(
        lambda z: 0.5 * z[:d] @ z[:d] + C / m * z[d:].sum(),
        x0,
        jac=lambda z: np.concatenate([z[:d], np.full(m, C / m)]),
        constraints=[{"type": "ineq", "fun": lambda z: G @ z - h, "jac": lambda z: G}],
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert qp.success
    assert np.all(G @ qp.x - h >= -1e-8)
    # the 1-slack primal is the true objective at its w; its gap certificate bounds the
    # distance to the optimum: dual <= P* <= primal, primal - dual <= tol * primal
    assert res.dual <= qp.fun + 1e-8
    assert res.primal >= qp.fun - 1e-8
    assert res.primal - qp.fun <= tol * res.primal + 1e-8


def test_structured_detector_finds_the_objects():
    imgs, boxes = make_detection_scenes(16, size=(64, 80), side=24, max_objects=1, random_state=0)
    det = HOGSVMDetector(
        window=(3, 3),
        cell=8,
        features="fhog",
        training="structured",
        location_prior=False,
        aspect_ratios=(1.0,),
        scale_step=1.2,
        C=10.0,
        max_iter=100,
    ).fit(imgs[:12], boxes[:12])
    assert det.coef_.shape == (3 * 3 * 31,)
    hits = 0
    for im, b in zip(imgs[12:], boxes[12:]):
        db, _ = det.detect(im)
        hits += pairwise_overlap(db[:1], b).max() >= 0.5
    assert hits >= 3


def test_structured_detector_saves_and_loads(tmp_path):
    import maxmargin

    imgs, boxes = small_scenes(6, seed=2)
    det = HOGSVMDetector(
        window=(3, 3),
        features="fhog",
        training="structured",
        location_prior=True,
        aspect_ratios=(1.0,),
        max_iter=20,
    ).fit(imgs, boxes)
    maxmargin.save(det, tmp_path / "d.npz")
    back = maxmargin.load(tmp_path / "d.npz")
    assert back.features == "fhog" and back.training == "structured"
    for a, b in zip(det.detect(imgs[0]), back.detect(imgs[0])):
        np.testing.assert_array_equal(a, b)


def test_mirror_all_mines_the_negatives_of_the_mirrored_images_too():
    imgs, boxes = small_scenes(4, seed=0)
    kw = dict(window=(3, 3), location_prior=False, features="fhog", max_rounds=1)
    n = {
        m: HOGSVMDetector(mirror=m, **kw).fit(imgs, boxes).mining_history_[0]["n_negatives"]
        for m in (False, True, "all")
    }
    # the negatives of the mirrored images, counted here: every pyramid window of the
    # flipped image overlapping each flipped box by less than neg_overlap = 0.3
    extra = 0
    for im, b in zip(imgs, boxes):
        fb = np.asarray(b, dtype=np.float64).reshape(-1, 4).copy()
        fb[:, 0] = im.shape[1] - fb[:, 0] - fb[:, 2]
        pyr = HOGPyramid(im[:, ::-1], window=(3, 3), features="fhog", aspect_ratios=(0.7, 1, 1.4))
        wb = pyr.boxes(*pyr.windows())
        extra += int(np.sum(pairwise_overlap(wb, fb).max(axis=1) < 0.3))
    assert n[True] == n[False]
    assert n["all"] == n[False] + extra
