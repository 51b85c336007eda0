"""Structural constraints of the HOG detector (``HOGSVMDetector(structural=)``, issue 31
goal b): the loss-augmented inference against a brute force over every window (overlaps
and window-by-window dot products written out here), and the fit against the full
SVM -- positives, every negative window and every structural pair, the pairs built by
hand -- solved independently by scipy (the box-constrained dual by L-BFGS-B)."""

from __future__ import annotations

import numpy as np
import pytest
from detection_makers import SMALL_FHOG, iou, shrunk, small_scenes
from scipy.optimize import minimize

import maxmargin
from maxmargin.apps.detection import HOGSVMDetector


def brute_pairs(det, pyr, boxes, lo, hi):
    """Per window: its box (shrunk back with context), its overlap with every object;
    per object its true window; the constrained (window, object, Delta) triples."""
    lv, r, c = pyr.windows()
    f = det._context_factors() if det.context else (1.0, 1.0)
    wb = [shrunk(b, f, pyr.image_shape) for b in pyr.boxes(lv, r, c)]
    ov = np.array([[iou(w, b) for b in boxes] for w in wb])
    true = [int(np.argmax(ov[:, j])) for j in range(len(boxes))]
    pairs = []
    for i in range(len(wb)):
        j = int(np.argmax(ov[i]))
        if lo <= ov[i, j] < hi and i != true[j]:
            pairs.append((i, j, 1.0 - ov[i, j]))
    return lv, r, c, true, pairs


def scenes_with_two_objects(n, seed):
    X, B = small_scenes(n, seed)
    return X, [np.asarray(b, dtype=np.float64).reshape(-1, 4) for b in B]


@pytest.mark.parametrize("context, margin", [(0.0, 1.0), (1.0, 1.0), (1.0, 2.0)])
def test_loss_augmented_inference_equals_brute_force(context, margin):
    X, B = scenes_with_two_objects(6, 0)
    det = HOGSVMDetector(**{**SMALL_FHOG, "context": context, "structural": margin})
    det.fit(X[:4], B[:4])
    lo, hi = det.structural_overlap
    checked = 0
    for img, b in zip(X[4:], B[4:]):
        pyr = det._pyramid(img)
        lv, r, c, true, pairs = brute_pairs(det, pyr, b, lo, hi)
        # window by window: descriptor . coef + intercept
        D = pyr.descriptors(lv, r, c).astype(np.float64)
        s = D @ det.coef_ + det.intercept_
        t, win, loss, vio = det.most_violated(img, b)
        np.testing.assert_array_equal(t, true)
        bound = 1e-9 * (np.abs(D) @ np.abs(det.coef_) + abs(det.intercept_)).max()
        for j in range(len(b)):
            mine = [(margin * d + s[i], i, d) for i, jj, d in pairs if jj == j]
            if not mine:
                assert win[j] == -1 and vio[j] == -np.inf
                continue
            best = max(v for v, _, _ in mine)
            # the chosen window attains the maximum (ties within rounding allowed)
            i = int(win[j])
            d = [dd for v, ii, dd in mine if ii == i]
            assert d, "the most violated window is not a constrained window of this box"
            assert abs(margin * d[0] + s[i] - best) <= 2 * bound
            assert loss[j] == pytest.approx(margin * d[0], abs=1e-12)
            assert vio[j] == pytest.approx(best - s[true[j]], abs=4 * bound)
            checked += 1
    assert checked >= 2


def full_problem(det, images, boxes):
    """The rows ``a_i = y_i x_i`` of the full SVM of a structural fit, built from the
    definitions: positives (the plain detector's positive windows, an intercept entry
    1), every window overlapping every box by less than ``neg_overlap`` (entry 1, sign
    -1), and per object and constrained window ``(Psi(t) - Psi(y)) / (m Delta)`` (no
    intercept entry)."""
    lo, hi = det.structural_overlap
    m = float(det.structural)
    gboxes = det._context_boxes(boxes)
    wins = det._windows(images, gboxes)
    Xp = det._positives(wins, gboxes).astype(np.float64)
    rows = [np.hstack([Xp, np.ones((len(Xp), 1))])]
    for img, b, g in zip(images, boxes, gboxes):
        pyr = det._pyramid(img)
        lv, r, c = pyr.windows()
        D = pyr.descriptors(lv, r, c).astype(np.float64)
        wb = pyr.boxes(lv, r, c)
        neg = [i for i in range(len(wb)) if all(iou(wb[i], q) < det.neg_overlap for q in g)]
        rows.append(-np.hstack([D[neg], np.ones((len(neg), 1))]))
        _, _, _, true, pairs = brute_pairs(det, pyr, b, lo, hi)
        for i, j, d in pairs:
            rows.append(np.append((D[true[j]] - D[i]) / (m * d), 0.0)[None])
    return np.vstack(rows)


def primal(A, w, C):
    """``C``: one C, or one per row (the rows' weights times C)."""
    return 0.5 * w @ w + (C * np.maximum(0.0, 1.0 - A @ w)).sum()


def solve_dual(A, C):
    """max_a sum(a) - 1/2 ||A^T a||^2 subject to 0 <= a <= C (per row), by L-BFGS-B."""

    def f(a):
        v = A.T @ a
        return 0.5 * v @ v - a.sum(), A @ v - 1.0

    res = minimize(
        f,
        np.zeros(len(A)),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, ci) for ci in np.broadcast_to(C, len(A))],
        options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-12},
    )
    return A.T @ res.x, -res.fun


@pytest.mark.parametrize(
    "context, margin, rho", [(0.0, 1.0, 1.0), (1.0, 0.5, 1.0), (1.0, 1.0, 0.1)]
)
def test_structural_fit_is_the_full_svm_solved_by_scipy(context, margin, rho):
    X, B = scenes_with_two_objects(3, 1)
    tol = 1e-9
    det = HOGSVMDetector(
        **{
            **SMALL_FHOG,
            "context": context,
            "structural": margin,
            "structural_weight": rho,
            "C": 1.0,
            "tol": tol,
            "max_rounds": 50,
            "max_working_set": 100000,
        }
    ).fit(X, B)
    assert det.converged_
    A = full_problem(det, X, B)
    n_pairs = int(np.sum(A[:, -1] == 0))
    Cv = np.where(A[:, -1] == 0, rho, 1.0)  # the pairs' rows weigh rho
    w_det = np.append(det.coef_, det.intercept_)
    w_sc, d_sc = solve_dual(A, Cv)
    p_det, p_sc = primal(A, w_det, Cv), primal(A, w_sc, Cv)
    assert d_sc <= p_sc * (1 + 1e-12) and d_sc <= p_det * (1 + 1e-12)
    # the mined fit's full relative duality gap is at most tol at convergence, so
    # P(w_det) - P* <= tol P(w_det); the scipy dual value is a lower bound on P*
    assert p_det - d_sc <= tol * p_det + (p_sc - d_sc) + 1e-10 * p_det
    # strong convexity: 1/2 ||w - w*||^2 <= P(w) - P*
    bound = np.sqrt(2 * (p_det - d_sc)) + np.sqrt(2 * (p_sc - d_sc)) + 1e-9
    assert np.linalg.norm(w_det - w_sc) <= bound
    # the pairs matter here: without them the optimum is elsewhere
    assert n_pairs == det.n_structural_pairs_ > 0
    A0 = A[np.abs(A[:, -1]) > 0]  # the binary rows alone
    w0, _ = solve_dual(A0, 1.0)
    assert primal(A, w0, Cv) > p_det + 10 * (p_det - d_sc)
    if rho != 1.0:  # and so does their weight: the unweighted optimum is elsewhere
        w1, _ = solve_dual(A, 1.0)
        assert primal(A, w1, Cv) > p_det + 10 * (p_det - d_sc)


def test_structural_violated_share_and_parameters(tmp_path):
    X, B = scenes_with_two_objects(5, 2)
    det = HOGSVMDetector(**{**SMALL_FHOG, "structural": 1.0}).fit(X, B)
    # the share reported by fit is the share of violated most-violated constraints
    vio = np.concatenate([det.most_violated(x, b)[3] for x, b in zip(X, B)])
    assert det.structural_violated_ == pytest.approx(np.mean(vio > 0))
    path = tmp_path / "s.npz"
    maxmargin.save(det, path)
    det2 = maxmargin.load(path)
    assert det2.structural == 1.0 and tuple(det2.structural_overlap) == (0.1, 0.5)
    assert det2.structural_violated_ == det.structural_violated_
    assert det2.n_structural_pairs_ == det.n_structural_pairs_ > 0
    for x in X:
        np.testing.assert_array_equal(det.detect(x)[1], det2.detect(x)[1])
    with pytest.raises(ValueError, match="structural_overlap"):
        HOGSVMDetector(**{**SMALL_FHOG, "structural": 1.0, "structural_overlap": (0.5, 0.1)}).fit(
            X, B
        )
    with pytest.raises(ValueError, match="training='mining'"):
        HOGSVMDetector(**{**SMALL_FHOG, "structural": 1.0, "training": "structured"}).fit(X, B)


def test_no_structural_constraints_is_the_plain_fit():
    X, B = scenes_with_two_objects(4, 3)
    a = HOGSVMDetector(**SMALL_FHOG).fit(X, B)
    b = HOGSVMDetector(**{**SMALL_FHOG, "structural": None}).fit(X, B)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    # an unreachable overlap range: no pair, the same SVM as the plain fit up to the
    # intercept's representation (an explicit constant column, the same problem)
    c = HOGSVMDetector(**{**SMALL_FHOG, "structural": 1.0, "structural_overlap": (0.9999, 1.0)})
    c.fit(X, B)
    assert c.n_structural_pairs_ == 0
    np.testing.assert_allclose(c.coef_, a.coef_, rtol=0, atol=1e-12)
    assert c.intercept_ == pytest.approx(a.intercept_, abs=1e-12)


def test_max_levels_caps_the_pyramid_and_saves(tmp_path):
    X, B = scenes_with_two_objects(3, 4)
    kw = {**SMALL_FHOG, "scale_step": 1.05}
    full = HOGSVMDetector(**{**kw, "max_levels": 40})._pyramid(X[0])
    assert len(full.levels) > 12  # a fine step needs more than the default 12 levels
    assert len(HOGSVMDetector(**kw)._pyramid(X[0]).levels) == 12
    cut = HOGSVMDetector(**{**kw, "max_levels": 5})
    pyr = cut._pyramid(X[0])
    assert len(pyr.levels) == 5
    np.testing.assert_array_equal(np.asarray(pyr.scales), np.asarray(full.scales)[:5])
    cut.fit(X, B)
    path = tmp_path / "m.npz"
    maxmargin.save(cut, path)
    again = maxmargin.load(path)
    assert again.max_levels == 5
    np.testing.assert_array_equal(cut.detect(X[0])[1], again.detect(X[0])[1])
