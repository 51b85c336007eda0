"""Mixture components by aspect of the HOG detector (``HOGSVMDetector(components=k)``,
issue 31 goal b; Felzenszwalb et al., TPAMI 2010): the clustering against every
contiguous split, Platt's sigmoid against scipy, each component's positives counted
window by window, and the pooled detections against a brute force -- every window of
every component scored by its descriptor's dot product, calibrated, pooled and
suppressed by a greedy NMS written out here."""

from __future__ import annotations

from itertools import combinations, pairwise

import numpy as np
import pytest
from detection_makers import SMALL_FHOG, iou, shrunk, two_aspect_scenes
from scipy.optimize import minimize

import maxmargin
from maxmargin.apps.detection import HOGSVMDetector
from maxmargin.apps.detection.detector import aspect_clusters, platt_calibration


def greedy_nms(boxes, scores, thr, max_keep):
    """Best score first (ties: the earlier box), a box dropped when it overlaps a kept
    one by more than ``thr``."""
    kept = []
    for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
        if len(kept) == max_keep:
            break
        if all(iou(boxes[i], boxes[j]) <= thr for j in kept):
            kept.append(i)
    return kept


@pytest.mark.parametrize("k", [1, 2, 3])
def test_aspect_clusters_are_the_best_contiguous_split(k):
    rng = np.random.default_rng(k)
    x = np.concatenate([rng.normal(-0.3, 0.1, 5), rng.normal(0.25, 0.1, 6), [0.0, 0.0]])
    labels, centres = aspect_clusters(x, k)

    def sse(lab):
        return sum(((x[lab == m] - x[lab == m].mean()) ** 2).sum() for m in range(k))

    xs = np.sort(x)
    best = np.inf
    for cuts in combinations(range(1, len(x)), k - 1):  # every contiguous split
        edges = (0, *cuts, len(x))
        v = sum(((xs[a:b] - xs[a:b].mean()) ** 2).sum() for a, b in pairwise(edges))
        best = min(best, v)
    # sums of squares of 13 values of size <= 1: rounding far below 1e-12
    assert abs(sse(labels) - best) <= 1e-12
    np.testing.assert_allclose(centres, [x[labels == m].mean() for m in range(k)])
    assert np.all(np.diff(centres) > 0)  # cluster 0 the smallest values
    # contiguous in sorted order
    assert np.all(np.diff(labels[np.argsort(x, kind="stable")]) >= 0)


def test_aspect_clusters_reject_too_few_values():
    with pytest.raises(ValueError, match="cannot form"):
        aspect_clusters([0.1, 0.2], 3)


@pytest.mark.parametrize("seed", [0, 1])
def test_platt_calibration_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 1.5, 200)
    hit = rng.random(200) < 1 / (1 + np.exp(-(2.0 * s - 1.0)))
    A, B = platt_calibration(s, hit)
    npos, nneg = hit.sum(), (~hit).sum()
    t = np.where(hit, (npos + 1) / (npos + 2), 1 / (nneg + 2))

    def f(p):
        z = p[0] * s + p[1]
        q = 1 / (1 + np.exp(-z))
        return np.sum(np.logaddexp(0, z) - t * z), np.array([(q - t) @ s, (q - t).sum()])

    ref = minimize(f, np.zeros(2), jac=True, method="BFGS", options={"gtol": 1e-9})
    g = np.abs(ref.jac).max()
    assert g < 1e-6
    # strongly convex near the optimum: a point with gradient g lies within about
    # |g| / lambda_min of the minimiser (lambda_min: the Hessian's smallest eigenvalue)
    q = 1 / (1 + np.exp(-(A * s + B)))
    X = np.stack([s, np.ones_like(s)], 1)
    lam = np.linalg.eigvalsh((X * (q * (1 - q))[:, None]).T @ X)[0]
    assert np.abs(f([A, B])[1]).max() <= 1e-9  # ours: a stationary point
    np.testing.assert_allclose([A, B], ref.x, rtol=0, atol=4 * np.sqrt(2) * g / lam + 1e-12)


def test_platt_calibration_rejects_constant_scores():
    with pytest.raises(ValueError, match="two values"):
        platt_calibration(np.ones(5), np.array([1, 0, 1, 0, 0], bool))


def brute_hits(b, t):
    """Detections best first: a hit when its best truth overlaps >= 0.5 and is unused."""
    used, out = set(), []
    for d in b:
        ov = [iou(d, g) for g in t]
        g = int(np.argmax(ov)) if ov else -1
        ok = g >= 0 and ov[g] >= 0.5 and g not in used
        if ok:
            used.add(g)
        out.append(ok)
    return np.array(out, dtype=bool)


@pytest.fixture(scope="module")
def scenes():
    return two_aspect_scenes(10, 0)


@pytest.mark.parametrize("context, calibration", [(0.0, "platt"), (1.0, "platt"), (1.0, "none")])
def test_pooled_detections_equal_brute_force(scenes, context, calibration):
    X, B = scenes
    p = {**SMALL_FHOG, "components": 2, "component_calibration": calibration}
    p.update(context=context, context_nms="box", nms_threshold=0.4)
    det = HOGSVMDetector(**p).fit(X[:7], B[:7])
    assert len(det.components_) == 2 and det.coef_ is None
    a = det.component_aspects_
    assert a[0] < 1 < a[1]  # the tall and the wide boxes
    for j, sub in enumerate(det.components_):
        assert sub.aspect_ratios == (a[j],)
    # the calibration: Platt's sigmoid of each component's training detections, hits by
    # the matching AP counts (written out)
    for j, sub in enumerate(det.components_):
        if calibration == "none":
            np.testing.assert_array_equal(det.component_calibration_[j], [1.0, 0.0])
            continue
        sc, hit = [], []
        for img, t in zip(X[:7], B[:7]):
            b, s = sub.detect(img)
            sc.append(s)
            hit.append(brute_hits(b, t))
        ref = platt_calibration(np.concatenate(sc), np.concatenate(hit))
        np.testing.assert_allclose(det.component_calibration_[j], ref, rtol=1e-12)
    f = det._context_factors() if context else (1.0, 1.0)
    for img in X[7:]:
        boxes, scores, raw = [], [], []
        for j, sub in enumerate(det.components_):
            pyr = sub._pyramid(img)
            lv, r, c = pyr.windows()
            D = pyr.descriptors(lv, r, c).astype(np.float64)
            s = D @ sub.coef_ + sub.intercept_  # window by window
            A, Bj = det.component_calibration_[j]
            boxes += list(pyr.boxes(lv, r, c))
            scores += list(A * s + Bj)
            raw.append(np.abs(A) * (np.abs(D) @ np.abs(sub.coef_) + abs(sub.intercept_)))
        nb = [shrunk(w, f, img.shape) if context else w for w in boxes]
        kept = greedy_nms(nb, scores, det.nms_threshold, det.max_detections)
        want_b = np.array([shrunk(boxes[i], f, img.shape) for i in kept])
        want_s = np.array([scores[i] for i in kept])
        keep = (want_b[:, 2] > 0) & (want_b[:, 3] > 0)
        got_b, got_s = det.detect(img)
        # compiled correlation against dot products: rounding of a sum of |terms|
        bound = 1e-9 * np.concatenate(raw).max()
        np.testing.assert_allclose(got_s, want_s[keep], rtol=0, atol=bound)
        np.testing.assert_allclose(got_b, want_b[keep], rtol=0, atol=1e-9)


def test_each_component_is_trained_on_its_own_boxes(scenes):
    X, B = scenes
    det = HOGSVMDetector(**{**SMALL_FHOG, "components": 2}).fit(X[:7], B[:7])
    centres = np.log(det.component_aspects_)

    def group(g):  # k-means optimum: every box nearest its own cluster's centre
        return int(np.argmin(np.abs(np.log(g[2] / g[3]) - centres)))

    for j, sub in enumerate(det.components_):
        n = 0
        for img, b in zip(X[:7], B[:7]):
            mine = [g for g in b if group(g) == j]
            pyr = sub._pyramid(img)
            lv, r, c = pyr.windows()
            wb = pyr.boxes(lv, r, c)
            n += sum(max(iou(w, g) for g in mine) >= sub.pos_overlap for w in wb) if mine else 0
            n += len(mine)  # each box's snapped window
        assert sub.n_positives_ == n
    assert det.n_positives_ == sum(s.n_positives_ for s in det.components_)


@pytest.mark.parametrize("window, context", [((3, 3), 0.0), ((4, 3), 0.0), ((4, 3), 1.0)])
def test_each_component_scans_boxes_of_its_aspect(scenes, window, context):
    """``aspect_ratios`` are relative to the window: a component of group aspect ``a_j``
    scans windows that stand for boxes of aspect ``a_j`` (after the context is shrunk
    back), whatever the window's own shape."""
    X, B = scenes
    p = {**SMALL_FHOG, "components": 2, "window": window, "context": context}
    det = HOGSVMDetector(**p).fit(X[:7], B[:7])
    fw, fh = det._context_factors()
    H, W = X[7].shape[:2]
    for a, sub in zip(det.component_aspects_, det.components_):
        pyr = sub._pyramid(X[7])
        lv, r, c = pyr.windows()
        wb = np.asarray(pyr.boxes(lv, r, c), dtype=float)[lv == 0]  # the finest level
        got = (wb[:, 2] / fw) / (wb[:, 3] / fh)
        # the level's image is the photo resized to whole pixels on each axis: its
        # aspect is exact up to one pixel in each
        tol = a * (1.0 / W + 1.0 / H) * 1.5  # first order, x1.5 for the second-order terms
        assert len(got) and np.all(np.abs(got - a) <= tol)


def test_components_save_and_load(scenes, tmp_path):
    X, B = scenes
    det = HOGSVMDetector(**{**SMALL_FHOG, "components": 2, "context": 1.0}).fit(X[:7], B[:7])
    back = maxmargin.load(maxmargin.save(det, tmp_path / "m.npz"))
    for img in X[7:]:
        b1, s1 = det.detect(img)
        b2, s2 = back.detect(img)
        np.testing.assert_array_equal(b1, b2)
        np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(back.component_calibration_, det.component_calibration_)


def test_components_reject_other_trainings(scenes):
    X, B = scenes
    with pytest.raises(ValueError, match="components > 1"):
        HOGSVMDetector(**{**SMALL_FHOG, "components": 2, "structural": 1.0}).fit(X[:4], B[:4])


def test_components_reject_bad_parameters(scenes):
    X, B = scenes
    for bad in (
        {"components": 0},
        {"components": 2.5},
        {"component_calibration": "isotonic"},
        {"structural_weight": 0.0},
        {"structural_weight": -1.0},
        {"structural_weight": float("nan")},
        {"structural_weight": float("inf")},
    ):
        name = next(iter(bad))
        with pytest.raises(ValueError, match=name):
            HOGSVMDetector(**{**SMALL_FHOG, **bad}).fit(X[:4], B[:4])


def test_ctrl_c_in_a_component_keeps_the_components_trained_so_far(scenes, monkeypatch, tmp_path):
    """A Ctrl-C in the second component's mining (after its first solve) keeps the first
    component and the second's last solve, trains no third one, warns, and the model
    detects, saves and loads; before any component completed it propagates."""
    from maxmargin.apps.detection import detector as mod
    from maxmargin.exceptions import FitInterruptedWarning

    X, B = scenes
    real = mod.mine_hard_negatives
    calls = []

    def interrupted_on(call):
        def mining(*args, **kwargs):
            calls.append(1)
            if len(calls) == call:

                def stop(rec):
                    if rec["iteration"] >= 1:
                        raise KeyboardInterrupt

                kwargs["callback"] = stop
            return real(*args, **kwargs)

        return mining

    monkeypatch.setattr(mod, "mine_hard_negatives", interrupted_on(2))
    det = HOGSVMDetector(**{**SMALL_FHOG, "components": 3})
    with pytest.warns(FitInterruptedWarning, match="2 of 3 component"):
        det.fit(X[:7], B[:7])
    assert len(calls) == 2 and len(det.components_) == 2
    assert det.component_calibration_.shape == (2, 2) and len(det.component_aspects_) == 2
    assert not det.converged_ and not det.components_[1].converged_
    back = maxmargin.load(maxmargin.save(det, tmp_path / "m.npz"))
    assert len(back.components_) == 2 and not back.converged_
    for img in X[7:]:
        np.testing.assert_array_equal(det.detect(img)[1], back.detect(img)[1])
    # a Ctrl-C before the first component's first solve: nothing to keep
    calls.clear()

    def at_once(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "mine_hard_negatives", at_once)
    with pytest.raises(KeyboardInterrupt):
        HOGSVMDetector(**{**SMALL_FHOG, "components": 2}).fit(X[:7], B[:7])
