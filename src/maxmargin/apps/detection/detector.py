"""Sliding-window detectors and the proposal ranker.

* :class:`HOGSVMDetector` -- HOG + linear SVM trained with hard-negative mining
  (:func:`maxmargin.solvers.hard_negatives.mine_hard_negatives`; thesis seed 002, Sec.
  2.3.4 and 2.5.3; Dalal & Triggs, CVPR 2005).
* :class:`CascadeDetector` -- HOG + :class:`~maxmargin.BoostedCascade` (thesis Ch. 4).
* :class:`ProposalRanker` -- random windows from the learned box distribution ranked by
  a linear function trained with :class:`~maxmargin.RankSVM` and the O(n log n)
  structured ranking oracle, loss ``1 - overlap`` with the best-matching ground truth,
  one group per image (Blaschko, Mittal & Rahtu, GCPR 2014, Sec. 5).

Images are grey or RGB arrays; boxes are 0-based ``(x, y, w, h)``.  Training windows of
an image: sliding windows of the HOG pyramid (:class:`HOGPyramid`); positives are the
windows overlapping a ground-truth box by at least ``pos_overlap`` plus the window
nearest to every ground-truth box, negatives those overlapping every ground-truth box by
less than ``neg_overlap``.  Detection scores every window, keeps those above
``score_threshold`` and applies non-maximum suppression.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from maxmargin._registry import register
from maxmargin._validation import (
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    VERBOSE,
    Interval,
    Options,
    as_generator,
    file_flag,
    json_params,
    validate_params,
)
from maxmargin.apps.detection.features import FHOG_DIM, HOGPyramid
from maxmargin.apps.detection.metrics import nms
from maxmargin.apps.detection.windows import BoxDistribution
from maxmargin.exceptions import FitInterruptedWarning, warn_interrupted
from maxmargin.learners.cascade import STAGE_LEARNERS, BoostedCascade
from maxmargin.learners.kernel_approx import AdditiveKernelMap
from maxmargin.learners.ranksvm import RankSVM
from maxmargin.solvers.hard_negatives import mine_hard_negatives
from maxmargin.solvers.operating_point import RULES
from maxmargin.solvers.ssvm import solve_ssvm
from maxmargin.tasks.boxes import pairwise_overlap

__all__ = ["CascadeDetector", "HOGSVMDetector", "ProposalRanker", "check_images_boxes"]

_UNIT = Interval(float, 0, 1, closed="both")

#: the settings a window's feature vector's length follows from (checked at load
#: before it is computed: :meth:`_WindowDetector._check_file_settings`)
_LENGTH_SETTINGS = (
    "window",
    "cell",
    "block",
    "orientations",
    "features",
    "colour",
    "channels",
    "channel_cells",
    "location_prior",
    "scale_step",
    "aspect_ratios",
    "max_levels",
    "hog_engine",
    "context",
    "context_pad",
)


def _check_window(window, prefix="model file: "):
    """``window``: two positive integers (cells), else a ValueError."""
    ok = len(window) == 2 and all(
        isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) and v > 0
        for v in window
    )
    if not ok:
        raise ValueError(f"{prefix}window must be two positive integers, got {window!r}")


def _file_vector(a, name, length=None) -> np.ndarray:
    """A model file's 1-D array of finite numbers as float64 (``length``: its required
    length), else a ValueError naming ``name``."""
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "fiu":
        raise ValueError(
            f"model file: {name} must be a 1-D array of numbers, got shape {a.shape} "
            f"and dtype {a.dtype}"
        )
    if length is not None and len(a) != length:
        raise ValueError(f"model file: {name} has {len(a)} entries, the settings give {length}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"model file: {name} contains NaN or inf")
    return a


def _file_scalar(v, name) -> float:
    """A model file's finite real number, else a ValueError naming ``name``."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise ValueError(f"model file: {name} must be a number, got {v!r}")
    if not np.isfinite(v):
        raise ValueError(f"model file: {name} must be finite, got {v!r}")
    return float(v)


def check_images_boxes(images, boxes):
    """Lists of images and (n_i, 4) box arrays; ValueError on mismatches, non-finite
    boxes, empty boxes or boxes outside their image."""
    images, boxes = list(images), list(boxes)
    if not images:
        raise ValueError("need at least one image")
    if len(images) != len(boxes):
        raise ValueError(f"{len(images)} images but {len(boxes)} box arrays")
    out = []
    for k, (img, b) in enumerate(zip(images, boxes)):
        a = np.asarray(img)
        if a.ndim not in (2, 3):
            raise ValueError(f"image {k}: expected (H, W) or (H, W, 3), got shape {a.shape}")
        b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
        if not np.all(np.isfinite(b)):
            raise ValueError(f"image {k}: boxes must be finite")
        if np.any(b[:, 2:] <= 0):
            raise ValueError(f"image {k}: boxes must have positive width and height")
        H, W = a.shape[:2]
        outside = (b[:, 0] < -1e-6) | (b[:, 1] < -1e-6)
        outside |= (b[:, 0] + b[:, 2] > W + 1e-6) | (b[:, 1] + b[:, 3] > H + 1e-6)
        if np.any(outside):
            raise ValueError(f"image {k}: a box lies outside the {W} x {H} image")
        out.append(b)
    return images, out


def _check_negative_images(images):
    """None, or a non-empty list of (H, W) / (H, W, 3) images (images without objects);
    ValueError otherwise."""
    if images is None:
        return None
    if isinstance(images, np.ndarray) and images.ndim in (2, 3) and images.dtype != object:
        raise ValueError("negative_images must be a list of images, not one image array")
    images = list(images)
    if not images:
        raise ValueError("negative_images is empty; pass None for no extra negatives")
    for k, img in enumerate(images):
        a = np.asarray(img)
        if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] != 3) or a.size == 0:
            raise ValueError(
                f"negative_images[{k}]: expected (H, W) or (H, W, 3), got shape {a.shape}"
            )
    return images


def _mirrored(images, boxes):
    """The images flipped left-right and their boxes ``(W - x - w, y, w, h)``."""
    fimgs, fboxes = [], []
    for img, b in zip(images, boxes):
        a = np.asarray(img)
        fimgs.append(np.ascontiguousarray(a[:, ::-1]))
        b = np.asarray(b, dtype=np.float64).reshape(-1, 4).copy()
        b[:, 0] = a.shape[1] - b[:, 0] - b[:, 2]
        fboxes.append(b)
    return fimgs, fboxes


def _grow(boxes, fx, fy):
    """Boxes scaled by ``fx`` (width) and ``fy`` (height) around their centres."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    w, h = b[:, 2] * fx, b[:, 3] * fy
    return np.stack([b[:, 0] + b[:, 2] / 2 - w / 2, b[:, 1] + b[:, 3] / 2 - h / 2, w, h], 1)


def _from_context(windows, factors, shape):
    """Windows with context -> the boxes they stand for: shrunk by ``factors`` around
    their centres (the inverse of :func:`_grow`), clipped to the image of ``shape``."""
    b = _grow(windows, 1.0 / factors[0], 1.0 / factors[1])
    H, W = shape[:2]
    x0, y0 = np.clip(b[:, 0], 0, W), np.clip(b[:, 1], 0, H)
    x1, y1 = np.clip(b[:, 0] + b[:, 2], 0, W), np.clip(b[:, 1] + b[:, 3], 0, H)
    return np.stack([x0, y0, x1 - x0, y1 - y0], 1)


def _box_offsets(windows, boxes):
    """Regression targets from ``windows`` to ``boxes`` (n, 4 each): the centre shift
    relative to the window size and the log size ratios [Girshick2014, App. C]."""
    w, b = np.asarray(windows, dtype=np.float64), np.asarray(boxes, dtype=np.float64)
    cw, cb = w[:, :2] + w[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2
    return np.hstack([(cb - cw) / w[:, 2:], np.log(b[:, 2:] / w[:, 2:])])


def _apply_offsets(windows, t, shape, margin=0.0):
    """The boxes :func:`_box_offsets` maps ``windows`` to, clipped to an image of
    ``shape`` (H, W, ...) grown by ``margin`` pixels on every side (windows with
    context reach beyond the image)."""
    w = np.asarray(windows, dtype=np.float64)
    size = w[:, 2:] * np.exp(np.clip(t[:, 2:], -3.0, 3.0))
    centre = w[:, :2] + w[:, 2:] / 2 + t[:, :2] * w[:, 2:]
    dims = np.array([shape[1], shape[0]], dtype=np.float64) + margin
    # at least one pixel inside the image (a box moved out of it keeps its border pixel)
    lo = np.clip(centre - size / 2, -margin, dims - 1.0)
    hi = np.clip(centre + size / 2, lo + 1.0, dims)
    return np.hstack([lo, hi - lo])


def aspect_clusters(values, k):
    """The exact 1-D k-means of ``values`` (log aspect ratios of boxes): ``(labels,
    centres)`` with cluster ``0`` the smallest values.  By dynamic programming over the
    sorted values (an optimal 1-D clustering is contiguous in sorted order), prefix sums
    giving each run's within-cluster sum of squares; ties between splits keep the
    earliest."""
    x = np.asarray(values, dtype=np.float64).ravel()
    n, k = len(x), int(k)
    if k < 1 or n < k:
        raise ValueError(f"{n} values cannot form {k} clusters")
    order = np.argsort(x, kind="stable")
    xs = x[order]
    s1 = np.concatenate([[0.0], np.cumsum(xs)])
    s2 = np.concatenate([[0.0], np.cumsum(xs * xs)])

    def cost(i, j):  # sum of squares of xs[i:j] (vectorised over i)
        m = j - i
        return s2[j] - s2[i] - (s1[j] - s1[i]) ** 2 / m

    D = np.full((k + 1, n + 1), np.inf)
    arg = np.zeros((k + 1, n + 1), dtype=np.int64)
    D[0, 0] = 0.0
    for m in range(1, k + 1):
        for j in range(m, n + 1):
            i = np.arange(m - 1, j)
            v = D[m - 1, i] + np.maximum(cost(i, j), 0.0)
            t = int(np.argmin(v))
            D[m, j], arg[m, j] = v[t], i[t]
    labels_sorted = np.zeros(n, dtype=np.int64)
    j = n
    for m in range(k, 0, -1):
        i = arg[m, j]
        labels_sorted[i:j] = m - 1
        j = i
    labels = np.empty(n, dtype=np.int64)
    labels[order] = labels_sorted
    centres = np.array([xs[labels_sorted == m].mean() for m in range(k)])
    return labels, centres


def platt_calibration(scores, hits, max_iter=100):
    """Platt's sigmoid (Platt, 2000 [Platt2000]) fitted to ``scores`` labelled by
    ``hits``: ``(A, B)`` minimising the logistic loss of ``A s + B`` against his smoothed
    targets ``(N+ + 1) / (N+ + 2)`` (hits) and ``1 / (N- + 2)`` (the others), by Newton's
    method with backtracking (the loss is convex; its Hessian is positive definite
    unless all scores are equal)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(hits, dtype=bool).ravel()
    if len(s) != len(y) or len(s) == 0 or np.ptp(s) == 0:
        raise ValueError("Platt calibration needs scores of at least two values, one per hit")
    npos, nneg = int(y.sum()), int((~y).sum())
    t = np.where(y, (npos + 1.0) / (npos + 2.0), 1.0 / (nneg + 2.0))
    X = np.stack([s, np.ones_like(s)], 1)

    def loss(p):
        z = X @ p
        return float(np.sum(np.logaddexp(0.0, z) - t * z))

    p = np.array([0.0, np.log((npos + 1.0) / (nneg + 1.0))])
    f = loss(p)
    for _ in range(max_iter):
        q = 0.5 * (1.0 + np.tanh(0.5 * (X @ p)))  # the sigmoid, overflow-free
        g = X.T @ (q - t)
        H = (X * (q * (1.0 - q))[:, None]).T @ X
        if np.abs(g).max() <= 1e-12 * len(s):
            break
        step = np.linalg.solve(H + 1e-12 * np.eye(2), g)
        a = 1.0
        while a > 1e-10:
            f_new = loss(p - a * step)
            if f_new <= f - 1e-4 * a * float(g @ step):
                break
            a *= 0.5
        if a <= 1e-10:
            break
        p, f = p - a * step, f_new
    return float(p[0]), float(p[1])


def _hits(boxes, truths, overlap=0.5):
    """Per detection (best first) of one image: whether it matches a still unmatched
    truth -- its best-overlapping truth, at least ``overlap`` -- as Pascal AP counts
    (:func:`~maxmargin.apps.detection.metrics.average_precision`)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    t = np.asarray(truths, dtype=np.float64).reshape(-1, 4)
    out = np.zeros(len(b), dtype=bool)
    if not len(b) or not len(t):
        return out
    ov = pairwise_overlap(b, t)
    best = ov.argmax(axis=1)
    used = np.zeros(len(t), dtype=bool)
    for i, g in enumerate(best):  # sequential by nature, over <= max_detections boxes
        if ov[i, g] >= overlap and not used[g]:
            used[g] = out[i] = True
    return out


def structural_sets(windows, boxes, lo=0.1, hi=0.5):
    """The structural constraints of one image (``HOGSVMDetector(structural=)``):
    ``windows`` (n, 4) the boxes the scanned windows stand for (with context: shrunk
    back), ``boxes`` (k, 4) the image's objects.  Returns ``(true, idx, obj, delta)``:
    ``true[j]`` the window overlapping box ``j`` most (its true output), and the windows
    ``idx`` whose best overlap with any box lies in ``[lo, hi)`` -- each constrained
    against that box ``obj`` (so a window near two objects is ranked against the one it
    overlaps more, and one overlapping another object by ``hi`` or more, a detection of
    it, is not a constraint of this one) -- with the Pascal loss ``delta = 1 -
    overlap``; the true windows themselves are left out."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    z = np.zeros(0, dtype=np.int64)
    if len(boxes) == 0 or len(windows) == 0:
        return z, z, z, np.zeros(0)
    ov = pairwise_overlap(np.asarray(windows, dtype=np.float64), boxes)  # (n, k)
    true = np.argmax(ov, axis=0)
    obj = np.argmax(ov, axis=1)
    o = ov[np.arange(len(ov)), obj]
    sel = (o >= lo) & (o < hi)
    sel[true] = False
    idx = np.flatnonzero(sel)
    return true.astype(np.int64), idx, obj[idx].astype(np.int64), 1.0 - o[idx]


def most_violated_windows(scores, true, idx, obj, delta, margin=1.0):
    """Loss-augmented inference of the structural constraints of one image: per object
    ``j`` the window ``y`` of ``idx`` (with ``obj == j``) maximising ``margin * delta_y +
    s_y`` and its violation ``margin * delta_y + s_y - s_true[j]`` (positive: the
    constraint ``s_true >= s_y + margin * delta_y`` is violated).  ``scores``: every
    window's score.  Returns ``(window, loss, violation)`` per object; an object with no
    constrained window gets window -1, loss 0 and violation ``-inf``."""
    k = len(true)
    win = np.full(k, -1, dtype=np.int64)
    loss = np.zeros(k)
    vio = np.full(k, -np.inf)
    if len(idx) == 0:
        return win, loss, vio
    s = np.asarray(scores, dtype=np.float64)
    v = float(margin) * delta + s[idx]
    order = np.lexsort((-v, obj))  # by object, the largest first
    first = order[np.r_[True, obj[order][1:] != obj[order][:-1]]]
    j = obj[first]
    win[j] = idx[first]
    loss[j] = float(margin) * delta[first]
    vio[j] = v[first] - s[true[j]]
    return win, loss, vio


class _WindowDetector(BaseEstimator):
    """Shared HOG-pyramid machinery of the sliding-window detectors."""

    _hog_constraints = {
        "window": [tuple, list],
        "cell": [POSITIVE_INT],
        "block": [POSITIVE_INT],
        "orientations": [POSITIVE_INT],
        "scale_step": [Interval(float, 1, None, closed="neither")],
        "pos_overlap": [_UNIT],
        "neg_overlap": [_UNIT],
        "nms_threshold": [_UNIT],
        "nms_cover": [None, _UNIT],
        "score_threshold": [None, float, int],
        "max_detections": [POSITIVE_INT],
        "aspect_ratios": [tuple, list],
        "colour": [bool],
        "channels": [bool],
        "channel_cells": [tuple, list],
        "location_prior": [bool],
        "hog_engine": [Options("numba", "skimage")],
        "random_state": RANDOM_STATE,
        "verbose": VERBOSE,
    }

    def _pyramid(self, image) -> HOGPyramid:
        return HOGPyramid(
            image,
            features=getattr(self, "features", "hog"),
            window=tuple(self.window),
            cell=self.cell,
            block=self.block,
            orientations=self.orientations,
            scale_step=float(self.scale_step),
            max_levels=int(getattr(self, "max_levels", 12)),
            aspect_ratios=tuple(self.aspect_ratios),
            colour=bool(self.colour),
            channels=bool(getattr(self, "channels", False)),
            channel_cells=tuple(getattr(self, "channel_cells", (1,))),
            engine=getattr(self, "hog_engine", "skimage"),
            pad=self._grid_pad(),
            pad_mode=getattr(self, "context_pad", "zero"),
            feature_map=self._cell_map(),
        )

    def _cell_map(self):
        """The additive-kernel map of the grid cells (:class:`HOGPyramid`'s
        ``feature_map``); none here (:class:`HOGSVMDetector`'s ``feature_map`` has one)."""
        return None

    def _n_inputs(self) -> int:
        """Entries of a window's feature vector under these settings (what ``coef_``
        holds, what the cascade's stumps index): the descriptor of a pyramid made as
        :meth:`detect` makes it (:attr:`HOGPyramid.n_features` follows from the settings
        alone, so an empty image, which has no level whatever the padding, gives it; a
        1 x 1 one had a level when a file's context padding was huge) and the location
        prior's column when there is one (:meth:`_describe`)."""
        n = self._pyramid(np.zeros((0, 0), np.float32)).n_features
        return int(n) + int(getattr(self, "distribution_", None) is not None)

    def _check_file_settings(self) -> None:
        """Model files: the settings the feature length follows from, checked as ``fit``
        checks them (:data:`_LENGTH_SETTINGS`) and the window as two positive integers."""
        validate_params(self, _LENGTH_SETTINGS, prefix="model file: ")
        _check_window(self.window)

    def _check_file_inputs(self, n, what) -> None:
        """Model files: ``n``, the input count of the saved filter or cascade (``what``),
        must be :meth:`_n_inputs` of the loaded settings (and prior); else a
        ValueError now -- not a size mismatch at the first ``detect``, or a cascade
        reading the wrong features."""
        try:
            want = self._n_inputs()
        except (TypeError, ValueError, IndexError) as e:
            raise ValueError(f"model file: the window settings are corrupt: {e}") from None
        if n != want:
            fmap = getattr(self, "feature_map", None)
            desc = f"features={getattr(self, 'features', 'hog')!r}, window={tuple(self.window)}"
            if getattr(self, "features", "hog") == "hog":
                desc += f", block={self.block}, orientations={self.orientations}"
            if fmap is not None:
                desc += f", feature_map={fmap!r}, map_order={self.map_order}"
            if getattr(self, "channels", False):
                desc += f", channels, channel_cells={tuple(self.channel_cells)}"
            if getattr(self, "distribution_", None) is not None:
                desc += ", location prior"
            raise ValueError(
                f"model file: {what} has {n} entries, but its settings ({desc}) give "
                f"windows of {want} features"
            )

    def _grid_pad(self) -> int:
        """Cells of zeros around every pyramid level's grid (:class:`HOGPyramid`'s
        ``pad``); none here (:class:`HOGSVMDetector`'s ``context`` has some)."""
        return 0

    def _fit_prior(self, images, boxes):
        """The box distribution of the location prior (``location_prior=True``)."""
        if not self.location_prior:
            self.distribution_ = None
            return
        keep = [k for k, b in enumerate(boxes) if len(b)]
        if sum(len(boxes[k]) for k in keep) < 2:
            raise ValueError(
                "location_prior=True needs at least two training boxes to fit the box "
                "distribution; pass location_prior=False"
            )
        self.distribution_ = BoxDistribution().fit(
            [boxes[k] for k in keep], [np.asarray(images[k]).shape for k in keep]
        )

    def _prior(self, pyr, boxes):
        """The location-prior column of ``boxes`` (None without ``location_prior``): the
        log density under the training boxes' distribution (:class:`BoxDistribution`),
        clipped at -30 and divided by 10 (so in [-3, 0] up to the density's constant)."""
        if getattr(self, "distribution_", None) is None:
            return None
        ld = self.distribution_.log_density(boxes, pyr.image_shape)
        return (np.maximum(ld, -30.0) / 10.0).astype(np.float32)

    def _describe(self, pyr, lv, r, c, prior=None) -> np.ndarray:
        """Window features: the HOG descriptor, and with ``location_prior`` one more
        column, :meth:`_prior` -- the detector learns how much to trust where and how
        large objects usually are against how they look.  ``prior``: that column when
        the caller already has it (it is computed once per image, not per use)."""
        X = pyr.descriptors(lv, r, c)
        if getattr(self, "distribution_", None) is None:
            return X
        if prior is None:
            prior = self._prior(pyr, pyr.boxes(lv, r, c))
        return np.hstack([X, prior.astype(X.dtype)[:, None]])

    def _windows(self, images, boxes):
        """Per image: pyramid, window coordinates, boxes and max overlap with the truth."""
        out = []
        for img, b in zip(images, boxes):
            pyr = self._pyramid(img)
            lv, r, c = pyr.windows()
            wb = pyr.boxes(lv, r, c)
            ov = pairwise_overlap(wb, b).max(axis=1) if len(b) and len(wb) else np.zeros(len(wb))
            out.append((pyr, lv, r, c, ov))
        return out

    def _positives(self, wins, boxes, own=None):
        """The positive windows' features: every window overlapping a box by at least
        ``pos_overlap`` and each box's snapped window; ``own``: per image the boxes
        that count (the windows' overlaps with those alone), None: ``boxes``."""
        X = []
        for k, ((pyr, lv, r, c, ov), b) in enumerate(zip(wins, boxes)):
            if own is not None:
                b = own[k]
                wb = pyr.boxes(lv, r, c)
                ov = pairwise_overlap(wb, b).max(axis=1) if len(b) and len(wb) else ov * 0
            sel = ov >= self.pos_overlap
            X.append(self._describe(pyr, lv[sel], r[sel], c[sel]))
            if len(b) and pyr.levels:
                X.append(self._describe(pyr, *pyr.snap(b)))
        X = np.vstack(X) if X else np.zeros((0, 0))
        if len(X) == 0:
            raise ValueError("no positive windows: check the boxes and the window size")
        return X

    def _score_windows(self, pyr, lv, r, c, prior=None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _scan(self, pyr, lv, r, c, prior=None) -> np.ndarray:
        """Scores of all windows ``pyr.windows()`` (``lv, r, c``) of one image."""
        return self._score_windows(pyr, lv, r, c, prior=prior)

    def _prior_map(self, pyr, level):
        """:meth:`_prior` of every window of a pyramid level as a ``positions(level)``
        map (None without ``location_prior``), from the factorised kernel density
        (:meth:`BoxDistribution.grid_log_density`) -- no box is listed."""
        d = getattr(self, "distribution_", None)
        if d is None:
            return None
        nr, nc = pyr.positions(level)
        sx, sy = pyr.scales[level]
        # it depends on the geometry alone: kept for the last images' shapes (frames of
        # a video, a photo collection) with the distribution (whose fit empties it),
        # keyed by everything else it is computed from
        key = (tuple(pyr.image_shape), pyr.cell, sx, sy, pyr.window, nr, nc, pyr.pad)
        cache = d.__dict__.setdefault("_grid_cache", {})
        if key not in cache:
            if len(cache) >= 256:
                cache.clear()
            ld = d.grid_log_density(
                pyr.image_shape, pyr.cell, sx, sy, pyr.window, nr, nc, pad=pyr.pad
            )
            cache[key] = (np.maximum(ld, -30.0) / 10.0).astype(np.float32)
        return cache[key]

    def _level_scores(self, pyr, level, prior):  # pragma: no cover - abstract
        """Scores ``positions(level)`` of every window of one pyramid level."""
        raise NotImplementedError

    def detect(self, image):
        """``(boxes, scores)`` of one image after NMS, best first.  Level by level: the
        score map of every window (:meth:`_level_scores`, compiled), the windows above
        ``score_threshold`` kept, their boxes, then NMS over all levels."""
        self._check_fitted()
        pyr, lv, r, c, b, s = self._candidates(image, self.score_threshold)
        if len(s) == 0:
            return np.zeros((0, 4)), np.zeros(0)
        k = nms(
            self._nms_boxes(pyr, b),
            s,
            self.nms_threshold,
            max_keep=int(self.max_detections),
            cover=getattr(self, "nms_cover", None),
        )
        return self._refine(pyr, lv[k], r[k], c[k], b[k], s[k])

    def _candidates(self, image, thr):
        """``(pyr, lv, r, c, boxes, scores)`` of every window of one image scoring above
        ``thr`` (None: all), before NMS: the compiled score map of each level."""
        pyr = self._pyramid(image)
        lvs, idx, ncs, scores = [], [], [], []
        for k in range(len(pyr.levels)):
            nr, nc = pyr.positions(k)
            if nr <= 0 or nc <= 0:
                continue
            s = self._level_scores(pyr, k, self._prior_map(pyr, k)).ravel()
            if thr is None:
                keep = np.arange(len(s))
            else:
                keep = np.flatnonzero(s > thr)
                s = s[keep]
            lvs.append(np.full(len(keep), k))
            idx.append(keep)
            ncs.append(np.full(len(keep), nc))
            scores.append(s)
        if not scores:
            e = np.zeros(0, dtype=np.int64)
            return pyr, e, e, e, np.zeros((0, 4)), np.zeros(0)
        idx, ncs = np.concatenate(idx), np.concatenate(ncs)
        lv, r, c = np.concatenate(lvs), idx // ncs, idx % ncs
        return pyr, lv, r, c, pyr.boxes(lv, r, c), np.concatenate(scores)

    def _refine(self, pyr, lv, r, c, b, s):
        """The detections ``(b, s)`` of the windows ``(lv, r, c)`` after NMS, refined
        (:class:`HOGSVMDetector`'s ``box_regression``); here unchanged."""
        return b, s

    def _nms_boxes(self, pyr, b):
        """The boxes NMS compares for the windows ``b``: here the windows themselves
        (:class:`HOGSVMDetector`'s ``context_nms="box"``: the boxes they stand for)."""
        return b

    def predict(self, images):
        """List of ``(boxes, scores)``, one per image."""
        return [self.detect(img) for img in images]

    def _check_fitted(self):
        check_is_fitted(self, "n_train_images_")

    def _hog_params(self):
        p = json_params(self)
        p["window"] = list(p["window"])
        p["aspect_ratios"] = [float(a) for a in p["aspect_ratios"]]
        p["channel_cells"] = [int(a) for a in p["channel_cells"]]
        if "structural_overlap" in p:
            p["structural_overlap"] = [float(a) for a in p["structural_overlap"]]
        return p

    @staticmethod
    def _init_params(meta):
        p = dict(meta["params"])
        p["window"] = tuple(p["window"])
        # files written before these parameters existed: square windows, grey, no prior
        p["aspect_ratios"] = tuple(p.get("aspect_ratios", (1.0,)))
        p.setdefault("colour", False)
        p.setdefault("channels", False)
        p["channel_cells"] = tuple(p.get("channel_cells", (1,)))
        if "structural_overlap" in p:
            p["structural_overlap"] = tuple(p["structural_overlap"])
        p.setdefault("location_prior", False)
        if "context" in p:  # SVM files from before ``context_pad``: edge replication
            p.setdefault("context_pad", "edge")
        if "C" in p and "stage_learner" not in p:  # an SVM detector from before FHOG
            p.setdefault("features", "hog")
            p.setdefault("training", "mining")
        # files from before the compiled pyramid: scikit-image's resampling and HOG
        p.setdefault("hog_engine", "skimage")
        if "stage_learner" in p:  # a cascade detector: files from before stage chaining
            p.setdefault("chain", False)
            p.setdefault("features", "hog")  # files from before the FHOG cascade
        return p

    def _prior_state(self, arrays):
        d = getattr(self, "distribution_", None)
        if d is not None:
            arrays.update(box_params=d.params_, box_scale=d.scale_)
        return arrays

    def _load_prior(self, arrays):
        self.distribution_ = None
        if self.location_prior:
            if "box_params" not in arrays or "box_scale" not in arrays:
                raise ValueError(
                    "model file: location_prior is set but the box distribution is missing"
                )
            params = np.asarray(arrays["box_params"], dtype=np.float64)
            scale = np.asarray(arrays["box_scale"], dtype=np.float64)
            ok = params.ndim == 2 and params.shape[1] == 4 and len(params) >= 2
            ok = ok and scale.shape == (4,) and np.all(np.isfinite(params))
            if not (ok and np.all(np.isfinite(scale)) and np.all(scale > 0)):
                raise ValueError("model file: the location prior's box distribution is corrupt")
            d = BoxDistribution()
            d.params_, d.scale_ = params, scale
            self.distribution_ = d


class WindowSSVMModel:
    """The per-image structural SVM of a sliding-window detector, as a linear joint
    model for :func:`~maxmargin.solvers.ssvm.solve_ssvm` (max-margin object detection,
    D. E. King, "Max-margin object detection", arXiv:1502.00046, 2015, with one window
    per output; the structured SVM of Tsochantaridis et al., JMLR 2005).

    One example per ground-truth box ``b`` of a training image.  Its outputs are every
    window of the image's pyramid and, with ``null_loss``, the empty output "no
    detection" (joint features 0); ``Psi(window) = (descriptor, location prior, 1)``, so
    the last weight is the detector's intercept.  The true output is the window with
    the largest overlap ``o*`` with ``b``; the loss of a window with overlap ``o`` is
    ``o* - o`` and of the empty output ``null_loss``; windows overlapping another box of
    the image by at least ``pos_overlap`` are not outputs of this example (they are
    correct detections of the other box).  Margin rescaling: the true window must
    outscore every other window of its image by its loss, and score at least
    ``null_loss`` (above the detection threshold 0).

    The loss-augmented argmax runs over *all* windows of the image: the score maps are
    the compiled filter correlation (:meth:`HOGPyramid.scan_scores`), no descriptor is
    gathered except the argmax's.

    ``false_alarm_loss``: every image also gets a false-alarm example, whose true output
    is "no detection" and whose other outputs are the windows overlapping every box by
    less than ``neg_overlap``, each with this loss: its most violating window must score
    below ``-false_alarm_loss`` -- King's false-alarm loss restricted to one window per
    image (the negative side of the hard-negative SVM, one slack per image).  Images
    without boxes give only this example.

    ``loss_threshold``: the 0/1 loss of detection instead of ``o* - o``: a window
    overlapping the box by at least this costs nothing, any other 1 (what AP at that
    overlap counts)."""

    pairwise = False

    def __init__(
        self,
        wins,
        boxes,
        priors,
        *,
        pos_overlap=0.5,
        null_loss=1.0,
        false_alarm_loss=None,
        neg_overlap=0.3,
        loss_threshold=None,
    ):
        self.wins, self.priors = wins, priors
        self.null_loss = None if null_loss is None else float(null_loss)
        self.nf = wins[0][0].n_features
        self.has_prior = priors[0] is not None
        self.dim = self.nf + int(self.has_prior) + 1
        img, true, losses, nulls = [], [], [], []
        for k, ((pyr, lv, r, c, _), b) in enumerate(zip(wins, boxes)):
            if not len(lv):
                continue
            if len(b):
                ov = pairwise_overlap(pyr.boxes(lv, r, c), b)  # (n_windows, n_boxes)
            else:
                ov = np.zeros((len(lv), 0))
            if false_alarm_loss is not None:
                # the image's false-alarm example: the empty output is true, a window
                # overlapping every box by less than neg_overlap costs false_alarm_loss
                far = ov.max(axis=1) < neg_overlap if len(b) else np.ones(len(lv), bool)
                img.append(k)
                true.append(len(lv))
                losses.append(np.where(far, float(false_alarm_loss), -np.inf))
                nulls.append(0.0)
            for j in range(len(b)):
                t = int(np.argmax(ov[:, j]))
                if loss_threshold is None:
                    L = np.maximum(ov[t, j] - ov[:, j], 0.0)
                else:
                    L = np.where(ov[:, j] >= loss_threshold, 0.0, 1.0)
                    L[t] = 0.0
                if len(b) > 1:
                    other = np.delete(ov, j, axis=1).max(axis=1) >= pos_overlap
                    L[other & (np.arange(len(L)) != t)] = -np.inf  # not an output
                img.append(k)
                true.append(t)
                losses.append(L)
                nulls.append(self.null_loss)
        if not img:
            raise ValueError("no training image has a ground-truth box and a window")
        self.img = np.asarray(img)
        self.true = np.asarray(true)
        self.losses = losses
        self.null_losses = nulls
        self.n_samples = self.n_positions = len(img)
        self.y = self.true.copy()
        self.n_features, self.n_slots, self.n_states = self.dim, 1, 0
        self.max_length = 1
        self.psi_true = np.vstack(
            [self._psi(int(k), np.array([t])) for k, t in zip(self.img, self.true)]
        )

    def _psi(self, k, idx):
        """Joint features of windows ``idx`` of image ``k`` (rows; the empty output is
        index ``n_windows`` and gives a zero row)."""
        pyr, lv, r, c, _ = self.wins[k]
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros((len(idx), self.dim))
        ok = idx < len(lv)
        if np.any(ok):
            i = idx[ok]
            out[ok, : self.nf] = pyr.descriptors(lv[i], r[i], c[i])
            if self.has_prior:
                out[ok, self.nf] = self.priors[k][i]
            out[ok, -1] = 1.0
        return out

    def check_rescaling(self, rescaling):
        if rescaling != "margin":
            raise ValueError("the window structural SVM supports only rescaling='margin'")

    def unary(self, w, X=None):
        """Scores of every window of every training image (one array per image)."""
        w = np.asarray(w, dtype=np.float64)
        out = []
        for k, (pyr, lv, *_) in enumerate(self.wins):
            if not len(lv):
                out.append(np.zeros(0))
                continue
            s = pyr.scan_scores(w[: self.nf]) + w[-1]
            if self.has_prior:
                s = s + self.priors[k].astype(np.float64) * w[self.nf]
            out.append(s)
        return out

    def _score(self, S, e, idx):
        k = self.img[e]
        return 0.0 if idx >= len(S[k]) else float(S[k][idx])

    def loss_augmented(self, w, rescaling="margin", U=None):
        S = self.unary(w) if U is None else U
        lab = np.empty(self.n_samples, dtype=np.int64)
        loss, margin = np.empty(self.n_samples), np.empty(self.n_samples)
        for e in range(self.n_samples):  # one argmax over the windows of each image
            s = S[self.img[e]]
            v = self.losses[e] + s
            j = int(np.argmax(v))
            lab[e], loss[e] = j, self.losses[e][j]
            nl = self.null_losses[e]
            if nl is not None and nl > v[j]:
                lab[e], loss[e] = len(s), nl
            margin[e] = self._score(S, e, self.true[e]) - self._score(S, e, lab[e])
        return lab, loss, margin

    def evaluate(self, w, labels, U=None):
        S = self.unary(w) if U is None else U
        labels = np.asarray(labels, dtype=np.int64)
        loss, margin = np.empty(self.n_samples), np.empty(self.n_samples)
        for e in range(self.n_samples):
            n = len(S[self.img[e]])
            loss[e] = self.null_losses[e] if labels[e] >= n else self.losses[e][labels[e]]
            margin[e] = self._score(S, e, self.true[e]) - self._score(S, e, labels[e])
        return loss, margin

    def plane(self, labels, coef):
        """``sum_e coef_e (Psi(true_e) - Psi(labels_e))``."""
        coef = np.asarray(coef, dtype=np.float64)
        a = coef @ self.psi_true
        for e in np.flatnonzero(coef):
            a -= coef[e] * self._psi(int(self.img[e]), np.array([labels[e]]))[0]
        return a

    def objective(self, w, C, hinge):
        return 0.5 * float(w @ w) + C * float(np.mean(hinge))


@register
class HOGSVMDetector(_WindowDetector):
    """HOG + linear SVM, trained by hard-negative mining over every negative window.

    Parameters
    ----------
    window : (w, h) cells, default=(6, 6)
    cell, block, orientations : HOG parameters, default 8, 2, 9
    scale_step : float, default=sqrt(2)
    max_levels : int, default=12
        Pyramid levels per aspect ratio at most (:class:`HOGPyramid`'s ``max_levels``):
        a finer ``scale_step`` needs more to reach the same largest object.
    pos_overlap, neg_overlap : float, default=0.6, 0.3
    C : float, default=0.01
    mirror : bool or "all", default=False
        Also train on the positive windows of the left-right mirrored training images
        (their boxes mirrored), as Dalal & Triggs do; ``"all"``: their negative windows
        too (the mined negatives of twice the images).  With ``training="structured"``
        True and ``"all"`` both add the mirrored images as examples.
    max_working_set : int, default=10000
    max_rounds : int, default=10
    tol : float, default=1e-4
        Relative duality gap of each restricted SVM solve (dual CD); with
        ``training="structured"`` the cutting planes' relative gap.
    features : {"hog", "fhog"}, default="hog"
        Window features: Dalal & Triggs' L2-Hys blocks, or FHOG's 31 features per cell
        (18 signed and 9 unsigned orientations, 4 gradient energies; Felzenszwalb et al.,
        TPAMI 2010 -- :func:`~maxmargin.apps.detection.features.fhog_cells`).
    training : {"mining", "structured"}, default="mining"
        ``"mining"``: the linear SVM of positive windows against every negative window,
        by hard-negative mining.  ``"structured"``: a structural SVM with one example
        per ground-truth box whose outputs are all windows of its image (and "no
        detection", loss ``null_loss``), loss ``o* - o`` from the window overlaps
        (:class:`WindowSSVMModel`; King's max-margin object detection with one window
        per output), 1-slack cutting planes over the compiled scan; ``mirror`` adds the
        mirrored images as examples; ``max_working_set`` and ``max_rounds`` are
        unused.
    null_loss : float or None, default=1.0
        ``training="structured"``: the loss of reporting no detection (the true window
        must score at least this); None: no empty output (only the ranking inside each
        image).
    false_alarm_loss : float or None, default=None
        ``training="structured"``: also one false-alarm example per image -- its windows
        overlapping every box by less than ``neg_overlap`` must score below minus this
        (its most violating one; :class:`WindowSSVMModel`); None: none.
    loss_threshold : float or None, default=None
        ``training="structured"``: a window's loss is 0 when it overlaps the box by at
        least this, else 1 (the 0/1 loss AP counts); None: ``o* - o``.
    max_iter : int, default=300
        ``training="structured"``: cutting-plane iterations.
    structural : float or None, default=None
        ``training="mining"``: besides the binary constraints (positives above +1,
        every negative window below -1), structural constraints that rank the windows
        near each training object by their overlap with it (the structured output
        detection of Blaschko & Lampert, ECCV 2008 [Blaschko2008]; the ranking
        principle of King's max-margin object detection [King2015]): for every object
        ``j`` with true window ``t_j`` (the scanned window overlapping it most) and
        every window ``y`` of the same image (and, with ``mirror``, of its mirror image)
        whose overlap ``o`` with ``j`` lies in ``structural_overlap``
        (:func:`structural_sets`; overlaps of the boxes the windows stand for, with
        ``context`` shrunk back, against the boxes as given),
        ``w.Psi(t_j) >= w.Psi(y) + m Delta - xi`` with ``Delta = 1 - o`` (the Pascal
        loss) and ``m`` this value.  Each pair is one more row of the mined SVM -- the
        row ``(Psi(y) - Psi(t_j)) / (m Delta)`` with label -1 and no intercept entry, so
        its hinge is ``C / (m Delta) max(0, m Delta - w.(Psi(t_j) - Psi(y)))``: margin
        rescaling, each pair with its own slack, weighted by ``1 / (m Delta)`` -- and
        the hard-negative loop finds the violated pairs the way it finds hard negatives
        (its scan yields every pair every round; the most violated join the working
        set: cutting planes with a loss).  After the fit, the loss-augmented inference
        (:meth:`most_violated`) on every training object gives
        ``structural_violated_``.  None: no structural constraints.
    structural_weight : float, default=1.0
        ``structural``: the structural rows' weight ``rho`` in the hinge sum -- each
        pair's hinge becomes ``rho C / (m Delta) max(0, m Delta - w.(Psi(t_j) -
        Psi(y)))`` (a per-row C, :func:`~maxmargin.solvers.svm.fit_dual_cd`'s
        ``sample_weight``), so the many pairs per object can be down-weighted against
        the binary constraints without changing their margins.
    structural_overlap : (float, float), default=(0.1, 0.5)
        ``structural``: the overlaps ``[lo, hi)`` of the constrained windows (below 0.5:
        the misplaced windows AP counts as false positives).
    box_regression : float or None, default=None
        Refine every detection's box from its window's descriptor by ridge regression
        (the bounding-box regression of Girshick, Donahue, Darrell & Malik, CVPR 2014,
        App. C; Felzenszwalb et al., TPAMI 2010, Sec. 5.4 predict the box similarly):
        the offsets ``((x_b - x_w) / w_w, (y_b - y_w) / h_w, log(w_b / w_w), log(h_b /
        h_w))`` of box centre and size from the window to its best-overlapping training
        box, fitted on the training windows that overlap a box by at least
        ``regression_overlap`` (their mirror images too with ``mirror``; at most 20,000
        drawn at random); this value is the ridge penalty per window (``min 1/n ||X A -
        T||^2 + value ||A||^2``, intercept unpenalised).  Detections are refined after
        NMS, clipped to the image and suppressed again.  None: the window is the box.
    regression_overlap : float, default=0.5
        ``box_regression``: the training windows' minimum overlap with a box.
    context : float, default=0.0
        Cells of context on each side of the object: the window of ``window`` cells
        describes the box grown to ``(w + 2 context) / w`` times its width and ``(h + 2
        context) / h`` its height around its centre (Dalal & Triggs' margin around the
        person; Felzenszwalb et al. pad the root filter's window likewise), so that the
        filter sees the object's outline against its surroundings -- a part of a raccoon
        (fur around it) from a whole raccoon (background around it).  Training boxes are
        grown; every pyramid level's feature grid is padded with zero cells (what a
        region without gradient gives: :class:`HOGPyramid`'s ``pad``, ``ceil(c w / (w +
        2 c)) + 1`` cells, ``c w / (w + 2 c)`` being the context's width in the
        window's cells) so that windows of objects at the border exist -- the features
        are computed once on the image, not on a padded image; detections are the
        windows shrunk back, clipped to the image, dropped if no area is left.  0: the
        window is the box.
    context_pad : {"edge", "zero"}, default="edge"
        With ``context``: what the padding cells hold (:class:`HOGPyramid`'s
        ``pad_mode``).  ``"edge"``: the features of each level's image padded by
        edge replication (those ``pad`` cells only: the border rows and columns
        continued, their gradients along the border included); ``"zero"``: zero cells
        (no gradient), the level's features computed on the image alone.
    context_nms : {"window", "box"}, default="window"
        With ``context``: what NMS compares -- ``"window"``: the windows with context
        (as scanned); ``"box"``: the boxes they stand for, shrunk back and clipped to the
        image (what ``detect`` returns), so that two windows reaching beyond the image
        whose boxes coincide inside it suppress each other.
    extent : dict or None, default=None
        With ``context``: a second linear filter at the object's own extent that
        re-places and re-scores the context filter's detections (the context filter
        proposes, the extent filter chooses the box -- a root filter with context and
        one at the object's resolution, in the spirit of Felzenszwalb et al.'s root and
        part filters, TPAMI 2010).  The extent filter is this detector's settings with
        ``context=0`` and no box regression, updated by this dict (e.g. ``{"neg_overlap":
        0.5}``), trained on the same images and (ungrown) boxes.  Each detection ``d``
        (after NMS, shrunk back) becomes the extent filter's best window among those
        overlapping ``d`` by at least ``extent_overlap``, with score ``s_d +
        extent_weight * s_e`` (``s_e`` that window's extent score); a detection with no
        such window keeps its box and gets the image's lowest extent score.  Then NMS
        again.  None: no extent filter.
    extent_weight : float, default=1.0
        ``extent``: the weight of the extent score (0: the box is re-placed, the
        ranking is the context filter's).
    extent_overlap : float, default=0.5
        ``extent``: the least overlap of a candidate window with the detection.
    components : int, default=1
        Mixture components by aspect ratio (the mixture models of Felzenszwalb et al.,
        TPAMI 2010 [Felzenszwalb2010], Sec. 2.3 and 5.2: the training boxes split by
        aspect -- there into groups of equal size -- one root filter per component).
        With ``k > 1`` the training boxes are clustered by their log aspect ratio ``log(w
        / h)`` into ``k`` groups (:func:`aspect_clusters`, the exact 1-D k-means);
        component ``j`` is a filter of its own whose windows have its group's aspect
        ratio ``a_j`` (the geometric mean of the group's aspects; ``aspect_ratios``
        multiplied by ``a_j`` over the aspect of the box a window stands for, each its
        own pyramid), trained by hard-negative mining with the group's boxes as
        positives and every window overlapping all boxes (of every group) by less than
        ``neg_overlap`` as negatives -- an object of another group is neither.  At
        detection the windows of all components are pooled, their scores calibrated
        (``component_calibration``), and suppressed by one NMS (``score_threshold``
        applies to the calibrated scores).  Needs ``training="mining"`` and no
        ``structural``, ``box_regression`` or ``extent``.  A Ctrl-C during the fit keeps
        the components trained so far (the interrupted one with its last completed
        solve) and trains no further one: ``components_`` may then hold fewer than
        ``components`` filters (``converged_`` False, a ``FitInterruptedWarning``).
        1: one filter.
    component_calibration : {"platt", "none"}, default="platt"
        ``components > 1``: how the components' scores are made comparable.
        ``"platt"``: each component's score ``s`` becomes ``A_j s + B_j``, the log-odds
        of a hit fitted by Platt's sigmoid (Platt, 2000 [Platt2000]: the logistic loss
        with his smoothed targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)``) to the
        component's own detections on the training images (after its NMS), a detection
        being a hit when it matches a still unmatched training box (of any group) by
        overlap at least 0.5, in score order -- the matching AP counts;
        :func:`platt_calibration`.  ``"none"``: the raw SVM scores (each filter's
        margin at +-1).
    feature_map : {"chi2", "intersection"} or None, default=None
        An explicit additive-kernel feature map of the cells (Vedaldi & Zisserman,
        "Efficient additive kernels via explicit feature maps", TPAMI 2012; the
        intersection kernel SVM of Maji, Berg & Malik, CVPR 2008; seed 002 Sec. 5.2):
        every value ``x`` of every cell of the HOG / FHOG grid (non-negative) becomes the
        ``2 n + 1`` values of the sampled spectrum of the chi-squared ``2 x y / (x + y)``
        or intersection ``min(x, y)`` kernel
        (:class:`~maxmargin.learners.kernel_approx.AdditiveKernelMap`, ``sample_steps =
        n + 1``), so the linear filter on the mapped grid is an approximate additive
        kernel machine over the window's cells (the error of each mapped inner product
        bounded by :func:`~maxmargin.kernels.feature_map_error_bound`).  The map is per
        value and position-independent, so the scan stays one compiled correlation per
        level (over ``(2 n + 1)`` times the channels) and the mining is unchanged; the
        channel grids and the prior column are not mapped.  None: the cells as computed.
    map_order : int, default=1
        ``feature_map``: ``n``, the frequencies ``j = 0 .. n`` of the sampled spectrum
        (``2 n + 1`` values per input value; 0: ``sqrt(L kappa(0) x)`` alone); at most
        10 (Vedaldi & Zisserman's maps use 1-3; a huge order overflows the spectrum).
    map_interval : float or None, default=None
        ``feature_map``: the spectrum's sampling step ``L`` (the signature's period is
        ``2 pi / L``; AdditiveKernelMap's ``sample_interval``).  None: that class's
        defaults -- scikit-learn's for chi2 (0.8 / 0.5 / 0.4 for orders 0 / 1 / 2; higher
        orders need it given), ``2 pi / 10`` for the intersection kernel.  The step used
        is saved with the model (``feature_map_.sample_interval_``).
    nms_threshold : float, default=0.3
    nms_cover : float or None, default=None
        Also suppress a box whose intersection with a better-scoring kept box exceeds
        this share of the smaller box's area (:func:`nms`'s ``cover``).
    score_threshold : float or None, default=None
    max_detections : int, default=100
    aspect_ratios : tuple of float, default=(0.7, 1.0, 1.4)
        Window aspect ratios (width / height, relative to ``window``), each its own set
        of pyramid levels (:class:`HOGPyramid`).
    colour : bool, default=False
        HOG of the colour channel with the strongest gradient instead of grey.
    channels : bool, default=False
        Append aggregated channel features to the HOG descriptor: per cell of the window
        the mean gradient magnitude, the magnitude in 6 orientation bins and the LUV
        colour (:func:`~maxmargin.apps.detection.features.channel_grid`; Dollar et al.,
        TPAMI 2014), computed once per pyramid level like HOG.
    channel_cells : tuple of int, default=(1,)
        With ``channels``: square sizes in cells of the channel aggregates -- ``(1, 2,
        4)`` adds the means over every 2 x 2- and 4 x 4-cell square of the window
        (:class:`HOGPyramid`).
    location_prior : bool, default=True
        Append the window's log density under the training boxes' distribution
        (:class:`BoxDistribution`) as one more feature, so the detector learns where
        and how large objects usually are.  Needs at least two training boxes.
    hog_engine : {"numba", "skimage"}, default="numba"
        How the pyramid is built (:class:`HOGPyramid`'s ``engine``): compiled
        resampling and HOG, or scikit-image's (model files saved before this option
        load with ``"skimage"``).
    random_state, verbose

    Attributes
    ----------
    coef_, intercept_, mining_history_ (Table 2.1 per round), converged_, n_train_images_,
    distribution_ (the location prior's :class:`BoxDistribution`, or None),
    regression_coef_ ((n_features + 1, 4) with ``box_regression``: the last row the
    intercept; else None), extent_ (the fitted extent filter, a
    :class:`HOGSVMDetector`, with ``extent``; else None); with ``components > 1``:
    components_ (the component filters, :class:`HOGSVMDetector` each; ``coef_`` and
    ``intercept_`` are then None, ``mining_history_`` the components' rounds one after
    the other, ``n_positives_`` their sum), component_aspects_ (``a_j``),
    component_calibration_ ((k, 2): ``A_j, B_j``), feature_map_ (the fitted
    :class:`~maxmargin.learners.kernel_approx.AdditiveKernelMap` of ``feature_map``, or
    None)
    """

    _parameter_constraints = {
        **_WindowDetector._hog_constraints,
        "C": [POSITIVE],
        "max_levels": [POSITIVE_INT],
        "mirror": [bool, Options("all")],
        "max_working_set": [POSITIVE_INT],
        "max_rounds": [POSITIVE_INT],
        "tol": [POSITIVE],
        "features": [Options("hog", "fhog")],
        "training": [Options("mining", "structured")],
        "null_loss": [None, Interval(float, 0, None, closed="neither")],
        "false_alarm_loss": [None, Interval(float, 0, None, closed="neither")],
        "loss_threshold": [None, _UNIT],
        "max_iter": [POSITIVE_INT],
        "structural": [None, Interval(float, 0, None, closed="neither")],
        "structural_overlap": [tuple, list],
        "structural_weight": [Interval(float, 0, None, closed="neither")],
        "box_regression": [None, Interval(float, 0, None, closed="neither")],
        "regression_overlap": [_UNIT],
        "context": [Interval(float, 0, None, closed="left")],
        "context_pad": [Options("edge", "zero")],
        "context_nms": [Options("window", "box")],
        "extent": [None, dict],
        "extent_weight": [Interval(float, 0, None, closed="left")],
        "extent_overlap": [_UNIT],
        "components": [POSITIVE_INT],
        "component_calibration": [Options("platt", "none")],
        "feature_map": [None, Options("chi2", "intersection")],
        "map_order": [Interval(int, 0, 10, closed="both")],
        "map_interval": [None, POSITIVE],
    }

    def __init__(
        self,
        *,
        window=(6, 6),
        cell=8,
        block=2,
        orientations=9,
        scale_step=2**0.5,
        max_levels=12,
        pos_overlap=0.6,
        neg_overlap=0.3,
        C=0.01,
        mirror=False,
        max_working_set=10000,
        max_rounds=10,
        tol=1e-4,
        nms_threshold=0.3,
        nms_cover=None,
        score_threshold=None,
        max_detections=100,
        aspect_ratios=(0.7, 1.0, 1.4),
        colour=False,
        channels=False,
        channel_cells=(1,),
        location_prior=True,
        hog_engine="numba",
        features="hog",
        training="mining",
        null_loss=1.0,
        false_alarm_loss=None,
        loss_threshold=None,
        max_iter=300,
        structural=None,
        structural_overlap=(0.1, 0.5),
        structural_weight=1.0,
        box_regression=None,
        regression_overlap=0.5,
        context=0.0,
        context_pad="edge",
        context_nms="window",
        extent=None,
        extent_weight=1.0,
        extent_overlap=0.5,
        components=1,
        component_calibration="platt",
        feature_map=None,
        map_order=1,
        map_interval=None,
        random_state=None,
        verbose=0,
    ):
        self.feature_map = feature_map
        self.map_order = map_order
        self.map_interval = map_interval
        self.components = components
        self.component_calibration = component_calibration
        self.context = context
        self.context_pad = context_pad
        self.context_nms = context_nms
        self.extent = extent
        self.extent_weight = extent_weight
        self.extent_overlap = extent_overlap
        self.box_regression = box_regression
        self.regression_overlap = regression_overlap
        self.features = features
        self.training = training
        self.null_loss = null_loss
        self.false_alarm_loss = false_alarm_loss
        self.loss_threshold = loss_threshold
        self.max_iter = max_iter
        self.structural = structural
        self.structural_overlap = structural_overlap
        self.structural_weight = structural_weight
        self.aspect_ratios = aspect_ratios
        self.colour = colour
        self.channels = channels
        self.channel_cells = channel_cells
        self.location_prior = location_prior
        self.hog_engine = hog_engine
        self.window = window
        self.cell = cell
        self.block = block
        self.orientations = orientations
        self.scale_step = scale_step
        self.max_levels = max_levels
        self.pos_overlap = pos_overlap
        self.neg_overlap = neg_overlap
        self.C = C
        self.mirror = mirror
        self.max_working_set = max_working_set
        self.max_rounds = max_rounds
        self.tol = tol
        self.nms_threshold = nms_threshold
        self.nms_cover = nms_cover
        self.score_threshold = score_threshold
        self.max_detections = max_detections
        self.random_state = random_state
        self.verbose = verbose

    def _context_factors(self):
        """The growth factors (width, height) of the boxes with ``context``."""
        c = float(getattr(self, "context", 0.0))
        w, h = self.window
        return (w + 2 * c) / w, (h + 2 * c) / h

    def _grid_pad(self) -> int:
        """``context``: zero cells around every level's grid -- the context's width in
        the window's cells, ``c w / (w + 2 c)`` for the wider axis, rounded up, plus one
        cell for the image's last pixels that fill no whole cell (a box at the border
        grown by the context lies inside the padded grid)."""
        c = float(getattr(self, "context", 0.0))
        if not c:
            return 0
        return int(np.ceil(max(c * w / (w + 2 * c) for w in self.window) - 1e-9)) + 1

    def _nms_boxes(self, pyr, b):
        """``context_nms="box"``: NMS compares the boxes the windows stand for (shrunk
        back, clipped to the image -- :func:`_from_context`); else the windows."""
        if getattr(self, "context", 0.0) and getattr(self, "context_nms", "window") == "box":
            return _from_context(b, self._context_factors(), pyr.image_shape)
        return b

    def _context_boxes(self, boxes):
        """The training boxes as the windows with ``context`` describe them (grown)."""
        if not getattr(self, "context", 0.0):
            return boxes
        f = self._context_factors()
        return [_grow(b, *f) for b in boxes]

    def _make_cell_map(self, interval=None):
        """``feature_map``: the fitted :class:`AdditiveKernelMap` of the grid's cells
        (``interval``: its sampling step, None: ``map_interval``), or None."""
        kernel = getattr(self, "feature_map", None)
        if kernel is None:
            return None
        steps = int(self.map_order) + 1
        L = self.map_interval if interval is None else interval
        if kernel == "chi2" and L is None and steps > 3:
            raise ValueError(
                f"feature_map='chi2' with map_order={self.map_order} needs map_interval "
                "(scikit-learn's default sampling steps stop at order 2)"
            )
        d = FHOG_DIM if self.features == "fhog" else int(self.block) ** 2 * int(self.orientations)
        m = AdditiveKernelMap(kernel=kernel, sample_steps=steps, sample_interval=L)
        return m.fit(np.zeros((1, d)))

    def _cell_map(self):
        """The fitted map of ``feature_map`` (set by ``fit`` or loaded), or None."""
        return getattr(self, "feature_map_", None)

    def fit(self, images, boxes):
        validate_params(self)
        images, boxes = check_images_boxes(images, boxes)
        self.components_ = None
        self.feature_map_ = self._make_cell_map()
        if int(getattr(self, "components", 1)) > 1:
            return self._fit_components(images, boxes)
        return self._fit_one(images, boxes)

    def _fit_one(self, images, boxes, positive=None):
        """One filter on ``images`` / ``boxes``; ``positive``: per image a mask of the
        boxes whose windows are positives (None: all) -- the others are no negatives
        either (``components``)."""
        lo_hi = self._structural_range()
        self.feature_map_ = self._make_cell_map()
        if self.structural is not None and self.training != "mining":
            raise ValueError("structural constraints need training='mining'")
        self._fit_extent(images, boxes)
        given = boxes
        # windows with context: the boxes grown, the pyramid grids padded (``context``)
        boxes = self._context_boxes(boxes)
        self._fit_prior(images, boxes)
        wins = self._windows(images, boxes)
        if self.training == "structured":
            return self._fit_structured(images, boxes, wins)
        own = None if positive is None else [b[m] for b, m in zip(boxes, positive)]
        Xp = self._positives(wins, boxes, own)
        fwins = None
        swins, sboxes = list(wins), list(given)  # the structural constraints' images
        if getattr(self, "mirror", False):
            # the positives of the left-right mirrored images too (Dalal & Triggs)
            fimgs, fboxes = _mirrored(images, boxes)
            fwins = self._windows(fimgs, fboxes)
            fown = None if positive is None else [b[m] for b, m in zip(fboxes, positive)]
            Xp = np.vstack([Xp, self._positives(fwins, fboxes, fown)])
            swins += fwins
            sboxes += _mirrored(images, given)[1]
            if self.mirror == "all":  # and their negatives
                wins = wins + fwins
        offsets = np.cumsum([0] + [len(w[1]) for w in wins])
        # the prior of every negative window, once (the scan repeats every round)
        negs = [np.flatnonzero(w[4] < self.neg_overlap) for w in wins]
        priors = [
            self._prior(pyr, pyr.boxes(lv[neg], r[neg], c[neg]))
            for (pyr, lv, r, c, _), neg in zip(wins, negs)
        ]

        def scan():
            for k, (pyr, lv, r, c, _) in enumerate(wins):
                neg = negs[k]
                if len(neg):
                    X = self._describe(pyr, lv[neg], r[neg], c[neg], prior=priors[k])
                    yield offsets[k] + neg, X

        self.structural_violated_ = self.n_structural_pairs_ = None
        if self.structural is None:
            res = mine_hard_negatives(
                Xp,
                scan,
                float(self.C),
                max_working_set=int(self.max_working_set),
                max_rounds=int(self.max_rounds),
                tol=float(self.tol),
                rng=as_generator(self.random_state),
                verbose=self.verbose,
            )
            self.coef_ = res.w.astype(np.float64)
            self.intercept_ = float(res.b)
        else:
            res = self._mine_structural(Xp, scan, swins, sboxes, offsets[-1], lo_hi)
        self.mining_history_ = res.history
        self.converged_ = bool(res.converged)
        self.n_positives_ = len(Xp)
        self.n_train_images_ = len(images)
        self._fit_regression(images, boxes, wins[: len(images)], fwins)
        return self

    def _fit_components(self, images, boxes):
        """``components > 1``: the aspect clusters, one filter per cluster (its boxes the
        positives, every other object neither positive nor negative), then each
        filter's calibration (see the class docstring)."""
        k = int(self.components)
        if (
            self.training != "mining"
            or self.structural is not None
            or self.box_regression is not None
            or self.extent is not None
        ):
            raise ValueError(
                "components > 1 needs training='mining' and no structural, box_regression or extent"
            )
        allb = np.vstack(boxes)
        if np.any(allb[:, 2] <= 0) or np.any(allb[:, 3] <= 0):
            raise ValueError("components > 1 needs boxes of positive width and height")
        labels, centres = aspect_clusters(np.log(allb[:, 2] / allb[:, 3]), k)
        cuts = np.cumsum([0] + [len(b) for b in boxes])
        masks = [labels[cuts[i] : cuts[i + 1]] for i in range(len(boxes))]
        params = {**self.get_params(), "components": 1, "score_threshold": None}
        self.components_, cal = [], []
        # aspect_ratios are relative to the window, which covers (w, h) cells of the box
        # grown by the context factors: a box of aspect b needs the relative ratio
        # b (fw / fh) / (w / h) (1 for the default square window)
        fw, fh = self._context_factors()
        base = (fw / fh) / (float(self.window[0]) / float(self.window[1]))
        interrupted = False
        for j in range(k):
            ar = tuple(float(a) * float(np.exp(centres[j])) * base for a in self.aspect_ratios)
            sub = HOGSVMDetector(**{**params, "aspect_ratios": ar})
            sub.components_ = None
            try:
                # a Ctrl-C in a component's mining keeps its last solve and warns: the
                # mixture then stops there instead of training the other components
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    sub._fit_one(images, boxes, [m == j for m in masks])
                for w in caught:
                    if issubclass(w.category, FitInterruptedWarning):
                        interrupted = True
                    else:
                        warnings.warn(w.message, w.category, stacklevel=3)
                cal.append(self._component_calibration(j, sub, images, boxes))
            except KeyboardInterrupt:
                if not self.components_:
                    raise  # nothing completed to keep
                interrupted = True
                break
            self.components_.append(sub)
            if interrupted:
                break
        n = len(self.components_)
        self.component_aspects_ = np.exp(centres)[:n]
        self.component_calibration_ = np.array(cal[:n], dtype=np.float64)
        self.coef_ = self.intercept_ = None
        self.regression_coef_ = self.extent_ = None
        self.structural_violated_ = self.n_structural_pairs_ = None
        self.mining_history_ = [h for c in self.components_ for h in c.mining_history_]
        self.converged_ = all(c.converged_ for c in self.components_) and not interrupted
        self.n_positives_ = sum(c.n_positives_ for c in self.components_)
        self.distribution_ = self.components_[0].distribution_
        self.n_train_images_ = len(images)
        if interrupted:
            warn_interrupted(
                len(self.mining_history_),
                kept=f"the mixture of the {n} of {k} component(s) trained before it",
            )
        return self

    def _component_calibration(self, j, sub, images, boxes):
        """``(A_j, B_j)`` of component ``j`` (see ``component_calibration``)."""
        if self.component_calibration == "none":
            return (1.0, 0.0)
        sc, hit = [], []
        for img, t in zip(images, boxes):
            b, sj = sub.detect(img)
            sc.append(sj)
            hit.append(_hits(b, t))
        A, B = platt_calibration(np.concatenate(sc), np.concatenate(hit))
        if not A > 0:
            raise ValueError(
                f"component {j}: its scores do not rank its hits above its other "
                "detections on the training images (Platt slope <= 0)"
            )
        return (A, B)

    def _detect_components(self, image):
        """``components > 1``: every component's windows (before NMS) with their
        calibrated scores, pooled, above ``score_threshold``, one NMS; with ``context``
        shrunk back to the boxes they stand for."""
        bs, ss = [], []
        for sub, (A, B) in zip(self.components_, self.component_calibration_):
            _, _, _, _, b, s = sub._candidates(image, None)
            bs.append(b)
            ss.append(A * s + B)
        b, s = np.vstack(bs), np.concatenate(ss)
        if self.score_threshold is not None:
            keep = s > self.score_threshold
            b, s = b[keep], s[keep]
        shape = np.asarray(image).shape
        if len(s) == 0:
            return np.zeros((0, 4)), np.zeros(0)
        ctx = bool(getattr(self, "context", 0.0))
        nb = b
        if ctx and self.context_nms == "box":
            nb = _from_context(b, self._context_factors(), shape)
        k = nms(nb, s, self.nms_threshold, max_keep=int(self.max_detections), cover=self.nms_cover)
        b, s = b[k], s[k]
        if ctx:
            b = _from_context(b, self._context_factors(), shape)
            keep = (b[:, 2] > 0) & (b[:, 3] > 0)
            b, s = b[keep], s[keep]
        return b, s

    def _structural_range(self):
        lo_hi = tuple(float(v) for v in self.structural_overlap)
        if len(lo_hi) != 2 or not 0.0 <= lo_hi[0] < lo_hi[1] <= 1.0:
            raise ValueError(
                f"structural_overlap must be (lo, hi) with 0 <= lo < hi <= 1, got "
                f"{self.structural_overlap!r}"
            )
        return lo_hi

    def _structural_of(self, pyr, lv, r, c, boxes, lo_hi):
        """:func:`structural_sets` of one image's windows ``(lv, r, c)`` against its
        ``boxes`` as given (with ``context``: the boxes the windows stand for)."""
        wb = pyr.boxes(lv, r, c)
        if getattr(self, "context", 0.0):
            wb = _from_context(wb, self._context_factors(), pyr.image_shape)
        return structural_sets(wb, boxes, *lo_hi)

    def _mine_structural(self, Xp, scan, swins, sboxes, n_windows, lo_hi):
        """``structural``: hard-negative mining over the negative windows and the
        structural pairs (rows ``(Psi(y) - Psi(t)) / (m Delta)``, label -1), the
        intercept an explicit constant column that the pairs' rows do not have."""
        m = float(self.structural)
        sets, truths, spriors = [], [], []
        for (pyr, lv, r, c, _), b in zip(swins, sboxes):
            t, idx, obj, delta = self._structural_of(pyr, lv, r, c, b, lo_hi)
            sets.append((t, idx, obj, delta))
            if len(idx):
                truths.append(self._describe(pyr, lv[t], r[t], c[t]).astype(np.float64))
                spriors.append(self._prior(pyr, pyr.boxes(lv[idx], r[idx], c[idx])))
            else:
                truths.append(None)
                spriors.append(None)
        at = n_windows + np.cumsum([0] + [len(q[1]) for q in sets])  # the pairs' ids

        def rows():
            for ids, X in scan():
                yield ids, np.hstack([X, np.ones((len(X), 1), dtype=X.dtype)])
            for k, (pyr, lv, r, c, _) in enumerate(swins):
                _, idx, obj, delta = sets[k]
                if len(idx):
                    X = self._describe(pyr, lv[idx], r[idx], c[idx], prior=spriors[k])
                    Z = (X.astype(np.float64) - truths[k][obj]) / (m * delta)[:, None]
                    yield at[k] + np.arange(len(idx)), np.hstack([Z, np.zeros((len(Z), 1))])

        rho = float(getattr(self, "structural_weight", 1.0))

        def weight(ids):  # the pairs' ids follow the windows'
            return np.where(ids >= n_windows, rho, 1.0)

        res = mine_hard_negatives(
            np.hstack([Xp, np.ones((len(Xp), 1), dtype=Xp.dtype)]),
            rows,
            float(self.C),
            max_working_set=int(self.max_working_set),
            max_rounds=int(self.max_rounds),
            tol=float(self.tol),
            fit_intercept=False,
            rng=as_generator(self.random_state),
            verbose=self.verbose,
            weight=None if rho == 1.0 else weight,
        )
        self.coef_ = np.asarray(res.w[:-1], dtype=np.float64)
        self.intercept_ = float(res.w[-1])
        self.n_structural_pairs_ = int(at[-1] - at[0])
        # the loss-augmented inference on every training object at the fitted filter
        vio = [
            most_violated_windows(
                self._scan(pyr, lv, r, c, prior=self._prior(pyr, pyr.boxes(lv, r, c))),
                *sets[k],
                margin=m,
            )[2]
            for k, (pyr, lv, r, c, _) in enumerate(swins)
            if len(lv)
        ]
        vio = np.concatenate(vio) if vio else np.zeros(0)
        # the share of training objects whose most violated constraint is violated
        self.structural_violated_ = float(np.mean(vio > 0)) if len(vio) else 0.0
        return res

    def most_violated(self, image, boxes):
        """Loss-augmented inference of the structural constraints (``structural``) on
        one image with objects ``boxes`` at the fitted filter: every window scored by the
        compiled scan, per box its true window and the most violated window
        (:func:`most_violated_windows`).  Returns ``(true, window, loss, violation)``
        per box; windows are indices into the pyramid's ``windows()`` (-1: none in
        ``structural_overlap``), ``loss`` is ``structural * Delta``."""
        self._check_fitted()
        image, boxes = check_images_boxes([image], [boxes])
        pyr = self._pyramid(image[0])
        lv, r, c = pyr.windows()
        lo_hi = self._structural_range()
        t, idx, obj, delta = self._structural_of(pyr, lv, r, c, boxes[0], lo_hi)
        s = self._scan(pyr, lv, r, c, prior=self._prior(pyr, pyr.boxes(lv, r, c)))
        m = 1.0 if self.structural is None else float(self.structural)
        win, loss, vio = most_violated_windows(s, t, idx, obj, delta, margin=m)
        return t, win, loss, vio

    def detect(self, image):
        """``(boxes, scores)`` of one image after NMS, best first (see
        :meth:`_WindowDetector.detect`); with ``context`` the windows (on the padded
        grids) shrunk back to the boxes they stand for (a box left with no area inside
        the image -- its window's centre in the padding -- is dropped); with
        ``components > 1`` the components' windows pooled (:meth:`_detect_components`)."""
        if getattr(self, "components_", None) is not None:
            self._check_fitted()
            return self._detect_components(image)
        if not getattr(self, "context", 0.0):
            return super().detect(image)
        b, s = super().detect(image)
        b = _from_context(b, self._context_factors(), np.asarray(image).shape)
        keep = (b[:, 2] > 0) & (b[:, 3] > 0)
        b, s = b[keep], s[keep]
        if getattr(self, "extent_", None) is not None:
            b, s = self._rescore_extent(image, b, s)
        return b, s

    def _fit_extent(self, images, boxes):
        """``extent``: the extent filter (see the class docstring), fitted on the
        images and their boxes as given (not grown)."""
        self.extent_ = None
        if getattr(self, "extent", None) is None:
            return
        if not self.context:
            raise ValueError("extent re-scores windows with context: set context > 0")
        self.extent_ = HOGSVMDetector(**self._extent_params()).fit(images, boxes)

    def _extent_params(self):
        """The extent filter's parameters: this detector's without context, box
        regression or extent filter, updated by ``extent`` (sequences as tuples)."""
        p = {**self.get_params(deep=False), "context": 0.0, "box_regression": None}
        p.update(extent=None, extent_weight=1.0, extent_overlap=0.5)
        for k, v in dict(self.extent).items():
            if k not in p:
                raise ValueError(f"extent: {k!r} is not a HOGSVMDetector parameter")
            p[k] = tuple(v) if isinstance(v, list) else v
        if p["context"] or p["extent"] is not None:
            raise ValueError("extent: the extent filter has no context and no extent filter")
        return p

    def _rescore_extent(self, image, b, s):
        """The detections ``(b, s)`` re-placed and re-scored by the extent filter
        (``extent``): every window of its pyramid scored by the compiled correlation,
        per detection the best window overlapping it by at least ``extent_overlap``,
        then NMS."""
        e = self.extent_
        pyr = e._pyramid(image)
        lv, r, c = pyr.windows()
        if len(b) == 0 or len(lv) == 0:
            return b, s
        wb = pyr.boxes(lv, r, c)
        ws = e._scan(pyr, lv, r, c, prior=e._prior(pyr, wb))
        cand = np.where(pairwise_overlap(b, wb) >= float(self.extent_overlap), ws, -np.inf)
        j = np.argmax(cand, axis=1)
        best = cand[np.arange(len(b)), j]
        ok = np.isfinite(best)
        out_b = np.where(ok[:, None], wb[j], b)
        out_s = s + float(self.extent_weight) * np.where(ok, best, ws.min())
        k = nms(
            out_b,
            out_s,
            self.nms_threshold,
            max_keep=int(self.max_detections),
            cover=getattr(self, "nms_cover", None),
        )
        return out_b[k], out_s[k]

    def _fit_regression(self, images, boxes, wins=None, fwins=None):
        """``box_regression``: the ridge regression from a window's descriptor to the
        offsets of its best-overlapping box (see the class docstring); ``wins`` /
        ``fwins``: :meth:`_windows` of the images / of their mirror images when the
        caller has them."""
        self.regression_coef_ = None
        if self.box_regression is None:
            return
        wins = list(self._windows(images, boxes) if wins is None else wins)
        boxes = list(boxes)
        if getattr(self, "mirror", False):
            fimgs, fboxes = _mirrored(images, boxes)
            fwins = self._windows(fimgs, fboxes) if fwins is None else fwins
            wins, boxes = wins + list(fwins), boxes + fboxes
        rng = as_generator(self.random_state)
        sel = [np.flatnonzero(w[4] >= self.regression_overlap) for w in wins]
        n = sum(len(q) for q in sel)
        if n == 0:
            raise ValueError("box_regression: no training window overlaps a box enough")
        cap = 20000
        if n > cap:  # a random subset, drawn over all images at once
            keep = np.zeros(n, dtype=bool)
            keep[rng.choice(n, cap, replace=False)] = True
            at = np.cumsum([0] + [len(q) for q in sel])
            sel = [q[keep[at[i] : at[i + 1]]] for i, q in enumerate(sel)]
        X, T = [], []
        for (pyr, lv, r, c, _), q, b in zip(wins, sel, boxes):
            if not len(q):
                continue
            wb = pyr.boxes(lv[q], r[q], c[q])
            gt = np.asarray(b, dtype=np.float64).reshape(-1, 4)
            g = gt[np.argmax(pairwise_overlap(wb, gt), axis=1)]
            X.append(self._describe(pyr, lv[q], r[q], c[q]).astype(np.float64))
            T.append(_box_offsets(wb, g))
        X, T = np.vstack(X), np.vstack(T)
        mx, mt = X.mean(axis=0), T.mean(axis=0)
        Xc = X - mx
        G = Xc.T @ Xc / len(X)
        G[np.diag_indices_from(G)] += float(self.box_regression)
        A = np.linalg.solve(G, Xc.T @ (T - mt) / len(X))
        self.regression_coef_ = np.vstack([A, mt - mx @ A])
        self.n_regression_windows_ = len(X)

    def _refine(self, pyr, lv, r, c, b, s):
        A = getattr(self, "regression_coef_", None)
        if A is None or len(b) == 0:
            return b, s
        X = self._describe(pyr, lv, r, c).astype(np.float64)
        # windows with context reach beyond the image: clipped to the padded grids'
        # widest reach (the coarsest level's), shrunk back by ``detect``
        margin = pyr.pad * pyr.cell / min(min(sc) for sc in pyr.scales) if pyr.pad else 0.0
        out = _apply_offsets(b, X @ A[:-1] + A[-1], pyr.image_shape, margin)
        k = nms(
            self._nms_boxes(pyr, out),
            s,
            self.nms_threshold,
            max_keep=int(self.max_detections),
            cover=getattr(self, "nms_cover", None),
        )
        return out[k], s[k]

    def _fit_structured(self, images, boxes, wins):
        """``training="structured"``: :class:`WindowSSVMModel` (one example per
        ground-truth box, all windows of its image as outputs) by 1-slack cutting
        planes (:func:`~maxmargin.solvers.ssvm.solve_ssvm`)."""
        if getattr(self, "mirror", False):
            fimgs, fboxes = _mirrored(images, boxes)
            wins = wins + self._windows(fimgs, fboxes)
            boxes = list(boxes) + fboxes
        priors = [self._prior(pyr, pyr.boxes(lv, r, c)) for pyr, lv, r, c, _ in wins]
        model = WindowSSVMModel(
            wins,
            boxes,
            priors,
            pos_overlap=float(self.pos_overlap),
            null_loss=None if self.null_loss is None else float(self.null_loss),
            false_alarm_loss=(
                None if self.false_alarm_loss is None else float(self.false_alarm_loss)
            ),
            neg_overlap=float(self.neg_overlap),
            loss_threshold=None if self.loss_threshold is None else float(self.loss_threshold),
        )
        res = solve_ssvm(
            model,
            float(self.C),
            "1-slack",
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            verbose=self.verbose,
        )
        self.coef_ = np.asarray(res.w[:-1], dtype=np.float64)
        self.intercept_ = float(res.w[-1])
        self.mining_history_ = [
            {k: v for k, v in h.items() if isinstance(v, (int, float, str, bool))}
            for h in res.history
        ]
        self.converged_ = bool(res.converged)
        self.n_positives_ = int(model.n_samples)
        self.n_train_images_ = len(images)
        n = len(images)
        self._fit_regression(images, boxes[:n], wins[:n], wins[n:] or None)
        return self

    def _score_windows(self, pyr, lv, r, c, prior=None):
        X = self._describe(pyr, lv, r, c, prior=prior)
        return X.astype(np.float64) @ self.coef_ + self.intercept_

    def _scan(self, pyr, lv, r, c, prior=None):
        """All windows at once: the filter correlated with each level's grids
        (:meth:`HOGPyramid.scan_scores`), no descriptor gathered; equals
        :meth:`_score_windows` (a test)."""
        nf = pyr.n_features
        s = pyr.scan_scores(self.coef_[:nf]) + self.intercept_
        if prior is not None:
            s += prior.astype(np.float64) * self.coef_[nf]
        return s

    def _level_scores(self, pyr, level, prior):
        """One level of :meth:`_scan`: the filter correlated with the level's grids."""
        nf = pyr.n_features
        s = pyr.filter_scores(level, self.coef_[:nf]) + self.intercept_
        if prior is not None:
            s += prior.astype(np.float64) * self.coef_[nf]
        return s

    def _get_state(self):
        self._check_fitted()
        if getattr(self, "components_", None) is not None:
            meta = {
                "params": self._hog_params(),
                "n_train_images": int(self.n_train_images_),
                "component_models": [],
            }
            arrays = {
                "component_aspects": self.component_aspects_,
                "component_calibration": self.component_calibration_,
            }
            for j, c in enumerate(self.components_):
                cm, ca = c._get_state()
                meta["component_models"].append(cm)
                arrays.update({f"component{j}__{k}": v for k, v in ca.items()})
            return meta, arrays
        meta = {
            "params": self._hog_params(),
            "intercept": self.intercept_,
            "mining_history": self.mining_history_,
            "converged": self.converged_,
            "n_positives": int(self.n_positives_),
            "n_train_images": int(self.n_train_images_),
            "structural_violated": getattr(self, "structural_violated_", None),
            "n_structural_pairs": getattr(self, "n_structural_pairs_", None),
        }
        fmap = getattr(self, "feature_map_", None)
        if fmap is not None:  # the sampling step used (map_interval may be None)
            meta["feature_map_interval"] = float(fmap.sample_interval_)
        arrays = {"coef": self.coef_}
        if getattr(self, "regression_coef_", None) is not None:
            arrays["regression_coef"] = self.regression_coef_
        if getattr(self, "extent_", None) is not None:
            emeta, earrays = self.extent_._get_state()
            meta["extent_model"] = emeta
            arrays.update({f"extent__{k}": v for k, v in earrays.items()})
        return meta, self._prior_state(arrays)

    @classmethod
    def _from_state(cls, meta, arrays):
        est = cls(**cls._init_params(meta))  # ``mirror`` missing: False (the default)
        est._check_file_settings()
        est.components_ = None
        if int(est.components) > 1:
            models = meta.get("component_models", [])
            cal = np.asarray(arrays.get("component_calibration", np.zeros(0)), dtype=float)
            asp = np.asarray(arrays.get("component_aspects", np.zeros(0)), dtype=float)
            k = len(models)  # fewer than ``components`` after a Ctrl-C in the fit
            if not 1 <= k <= int(est.components) or cal.shape != (k, 2) or asp.shape != (k,):
                raise ValueError("model file: the mixture components are missing or corrupt")
            if not (np.all(np.isfinite(cal)) and np.all(cal[:, 0] > 0)):
                raise ValueError("model file: the components' calibration is corrupt")
            est.components_ = []
            for j, m in enumerate(models):
                pre = f"component{j}__"
                sub = {a[len(pre) :]: v for a, v in arrays.items() if a.startswith(pre)}
                est.components_.append(cls._from_state(m, sub))
            est.component_aspects_, est.component_calibration_ = asp, cal
            est.coef_ = est.intercept_ = est.regression_coef_ = est.extent_ = None
            est.mining_history_ = [h for c in est.components_ for h in c.mining_history_]
            est.converged_ = all(c.converged_ for c in est.components_) and k == int(est.components)
            est.n_positives_ = sum(c.n_positives_ for c in est.components_)
            est.distribution_ = est.components_[0].distribution_
            est.n_train_images_ = int(meta["n_train_images"])
            est.structural_violated_ = est.n_structural_pairs_ = None
            est.feature_map_ = est.components_[0].feature_map_
            return est
        est._load_prior(arrays)
        # files from before the feature map: none
        est.feature_map_ = None
        if est.feature_map is not None:
            # the map's settings as fit checks them (a corrupt order, e.g. 2.5 read as 2,
            # would build a map of another size than the saved filter's)
            validate_params(
                est, ("feature_map", "map_order", "map_interval"), prefix="model file: "
            )
            L = meta.get("feature_map_interval")
            if not (isinstance(L, (int, float)) and not isinstance(L, bool) and np.isfinite(L)):
                raise ValueError("model file: the feature map's sampling step is missing")
            if not L > 0:
                raise ValueError("model file: the feature map's sampling step must be positive")
            est.feature_map_ = est._make_cell_map(float(L))
        # the filter's length as its settings give it (else ``detect`` fails on a
        # size mismatch, or scores a prior column as a feature)
        est.coef_ = _file_vector(arrays["coef"], "coef")
        est._check_file_inputs(len(est.coef_), "the filter (coef)")
        est.intercept_ = _file_scalar(meta["intercept"], "intercept")
        est.mining_history_ = list(meta["mining_history"])
        est.converged_ = file_flag(meta["converged"], "converged")
        est.n_positives_ = int(meta["n_positives"])
        est.n_train_images_ = int(meta["n_train_images"])
        # files from before the structural constraints: None
        vio, pairs = meta.get("structural_violated"), meta.get("n_structural_pairs")
        if vio is not None and not (isinstance(vio, (int, float)) and 0.0 <= vio <= 1.0):
            raise ValueError("model file: structural_violated must be a fraction or null")
        if pairs is not None and not (isinstance(pairs, int) and pairs >= 0):
            raise ValueError("model file: n_structural_pairs must be a count or null")
        est.structural_violated_ = None if vio is None else float(vio)
        est.n_structural_pairs_ = pairs
        # files from before box regression: none
        est.regression_coef_ = None
        if est.box_regression is not None:
            A = np.asarray(arrays.get("regression_coef", np.zeros(0)), dtype=np.float64)
            if A.shape != (len(est.coef_) + 1, 4) or not np.all(np.isfinite(A)):
                raise ValueError("model file: the box regression is missing or corrupt")
            est.regression_coef_ = A
        # files from before the extent filter: none
        est.extent_ = None
        if est.extent is not None:
            if "extent_model" not in meta:
                raise ValueError("model file: the extent filter is missing")
            sub = {k[8:]: v for k, v in arrays.items() if k.startswith("extent__")}
            est.extent_ = cls._from_state(meta["extent_model"], sub)
        return est


@register
class CascadeDetector(_WindowDetector):
    """HOG + boosted cascade (:class:`~maxmargin.BoostedCascade`).

    The cascade is trained on the positive windows and a random pool of at most
    ``n_negatives`` negative windows; each stage bootstraps its negatives from those of
    the pool that passed the earlier stages (``max_negatives`` per stage).  Cascade
    parameters are passed through; see :class:`~maxmargin.BoostedCascade`.

    ``aspect_ratios``, ``colour``, ``channels``, ``channel_cells``, ``location_prior``
    and ``features`` are those of :class:`HOGSVMDetector` (the location prior is one
    more input of the stumps; ``features="fhog"``: the stumps read FHOG's 31 features
    per cell, :func:`~maxmargin.apps.detection.features.fhog_cells`).

    ``bootstrap=True``: after each stage the negatives it rejected are replaced by fresh
    ones drawn at random from *all* negative windows of the training images that the
    cascade so far accepts (a full scan, as Viola & Jones collect each stage's
    negatives), the held-out images' for the operating points likewise, so every stage
    trains on as many (and ever harder) negatives as the first; False: the stages share
    the fixed pool of ``n_negatives``.

    ``fit(images, boxes, negative_images=...)``: images that contain no object (Viola &
    Jones' non-face images).  Every window of theirs is a negative; ``n_extra_negatives``
    of them (None: as many as ``n_negatives``) are drawn at random and added to the pool
    of ``n_negatives`` drawn from the object images, which stays the same draw as without
    them.  They train the stages only: the operating points are still chosen on the
    held-out object images (the negatives the detector will meet).  With ``bootstrap``
    the scan covers them too.

    The defaults ``channels=True`` and ``max_weak=(2, 5, 10, 20, 50)`` were the best
    setting measured on raccoon when chosen (at f8360bf, with scikit-image's pyramid:
    AP 0.652 and 29.3 weak classifiers per window, against 0.460 and 55.3 with HOG alone
    and 50 per stage, with 7 x 7-cell windows on 240-px images, goal FAR 1e-3 and 40,000
    pooled negatives); on the compiled pyramid the same benchmark gives AP 0.499 and
    26.7 against 0.457 and 52.6 (``detection_cascade_extraneg_none.json``,
    ``detection_cascade_fairflat.json``; docs/detection.md says why).  Model files
    saved before these parameters existed load with what they were trained with
    (``channels`` missing: False; ``channel_cells``: ``(1,)``; ``bootstrap``: False).

    Parameters
    ----------
    window : (w, h) cells, default=(6, 6)
        The window's size in HOG cells.
    cell, block, orientations : HOG parameters, default 8, 2, 9
        Pixels per cell, cells per block side and orientation bins
        (:class:`HOGPyramid`).
    scale_step : float, default=sqrt(2)
        Ratio of consecutive pyramid levels' scales.
    pos_overlap, neg_overlap : float, default=0.6, 0.3
        A window overlapping a training box by at least ``pos_overlap`` is a positive;
        one overlapping every box by less than ``neg_overlap`` a negative (the windows
        in between are not used).
    stage_learner : {"discrete", "real", "gentle", "lacboost", "fisherboost"}, default="gentle"
        The stages' booster (:class:`~maxmargin.BoostedCascade`'s ``stage_learner``).
    rule : {"fixed", "one-point", "two-point"}, default="two-point"
        How each stage's operating point is planned (:class:`~maxmargin.BoostedCascade`).
    fallback : {"recall", "far"}, default="recall"
        What a stage that cannot reach its goal within ``max_weak`` gives up
        (:class:`~maxmargin.BoostedCascade`).
    n_stages : int, default=10
        Planned number of stages.
    target_recall, target_far : float, default=0.9, 1e-4
        The cascade's goal: recall and false-alarm rate over all stages.
    max_weak : int or sequence of int, default=(2, 5, 10, 20, 50)
        Weak classifiers per stage at most; a sequence gives stage ``k`` the cap
        ``max_weak[min(k, len - 1)]`` (small early stages).
    cost_ratio : float, default=1.0
        ``C_1 / C_-1`` of cost-sensitive AdaBoost (1: plain AdaBoost).
    recycle : float or None, default=None
        Information recycling with ``lambda* = recycle`` (thesis Sec. 4.4); None: off.
    chain : bool, default=False
        Strong classifier chaining: every stage starts from the previous stage's score.
    n_negatives : int, default=50000
        Negative windows drawn at random (``random_state``) from the training images
        into the pool the stages train on.
    max_negatives : int or None, default=10000
        Negatives per stage at most (a random subset of those of the pool still alive);
        None: all.
    bootstrap : bool, default=False
        After each stage, replace the negatives it rejected by fresh ones from a scan of
        all training windows (see above); False: the stages share the fixed pool.
    n_extra_negatives : int or None, default=None
        Windows drawn from ``fit``'s ``negative_images`` into the pool; None: as many as
        ``n_negatives``.
    validation_fraction : float in [0, 1), default=0.25
        Share of the training images (drawn at random, whole images) held out to choose
        the stages' operating points; 0: the training windows.
    nms_threshold : float, default=0.3
        Non-maximum suppression: a detection overlapping a better-scoring kept one by
        more than this is dropped (:func:`nms`).
    nms_cover : float or None, default=None
        Also suppress a box whose intersection with a better-scoring kept box exceeds
        this share of the smaller box's area (:func:`nms`'s ``cover``).
    score_threshold : float or None, default=0.0
        Detections are the windows scoring above this under
        :meth:`~maxmargin.BoostedCascade.decision_function` (positive iff every stage
        accepts; a window rejected at stage ``k`` of ``K`` scores in ``(k - K, k - K +
        1/2]``), so 0 keeps the accepted windows; None: every window, ranked by the
        stages it passed.
    max_detections : int, default=100
        Detections kept per image after NMS.
    aspect_ratios : tuple of float, default=(0.7, 1.0, 1.4)
        Window aspect ratios (width / height, relative to ``window``), each its own set
        of pyramid levels (:class:`HOGPyramid`).
    colour : bool, default=False
        HOG of the colour channel with the strongest gradient instead of grey.
    channels : bool, default=True
        Append aggregated channel features (gradient magnitude, 6 orientation bins, LUV
        per cell; :class:`HOGSVMDetector`'s ``channels``).
    channel_cells : tuple of int, default=(1,)
        With ``channels``: square sizes in cells of the channel aggregates.
    location_prior : bool, default=True
        Append the window's log density under the training boxes' distribution
        (:class:`BoxDistribution`) as one more input of the stumps.
    hog_engine : {"numba", "skimage"}, default="numba"
        How the pyramid is built (:class:`HOGPyramid`'s ``engine``).
    features : {"hog", "fhog"}, default="hog"
        The stumps read Dalal & Triggs' L2-Hys blocks, or FHOG's 31 features per cell.
    random_state : int, Generator or None, default=None
        Seeds the negative pool, the held-out images, the bootstrapping draws and the
        cascade's own sampling.
    verbose : int, default=0
        Progress messages; above 1 the cascade's too.

    Attributes
    ----------
    cascade_, converged_ (the cascade's: False when Ctrl-C ended training early -- the
    completed stages are kept, see :class:`~maxmargin.BoostedCascade`), n_train_images_,
    distribution_, n_bootstrapped_ (negatives drawn by ``bootstrap`` in all),
    n_extra_negatives_ (pool negatives drawn from ``negative_images``; 0 without),
    n_negatives_ (all training negatives of the pool, extra ones included)
    """

    _parameter_constraints = {
        **_WindowDetector._hog_constraints,
        "stage_learner": [Options(*STAGE_LEARNERS)],
        "rule": [Options(*RULES)],
        "fallback": [Options("recall", "far")],
        "n_stages": [POSITIVE_INT],
        "target_recall": [Interval(float, 0, 1, closed="right")],
        "target_far": [Interval(float, 0, 1, closed="neither")],
        "max_weak": [POSITIVE_INT, list, tuple],
        "cost_ratio": [POSITIVE],
        "recycle": [None, Interval(float, 0, None, closed="left")],
        "chain": [bool, np.bool_],
        "n_negatives": [POSITIVE_INT],
        "max_negatives": [None, POSITIVE_INT],
        "bootstrap": [bool],
        "n_extra_negatives": [None, POSITIVE_INT],
        "validation_fraction": [Interval(float, 0, 1, closed="left")],
        "features": [Options("hog", "fhog")],
    }

    def __init__(
        self,
        *,
        window=(6, 6),
        cell=8,
        block=2,
        orientations=9,
        scale_step=2**0.5,
        pos_overlap=0.6,
        neg_overlap=0.3,
        stage_learner="gentle",
        rule="two-point",
        fallback="recall",
        n_stages=10,
        target_recall=0.9,
        target_far=1e-4,
        max_weak=(2, 5, 10, 20, 50),
        cost_ratio=1.0,
        recycle=None,
        chain=False,
        n_negatives=50000,
        max_negatives=10000,
        bootstrap=False,
        n_extra_negatives=None,
        validation_fraction=0.25,
        nms_threshold=0.3,
        nms_cover=None,
        score_threshold=0.0,
        max_detections=100,
        aspect_ratios=(0.7, 1.0, 1.4),
        colour=False,
        channels=True,
        channel_cells=(1,),
        location_prior=True,
        hog_engine="numba",
        features="hog",
        random_state=None,
        verbose=0,
    ):
        self.features = features
        self.aspect_ratios = aspect_ratios
        self.colour = colour
        self.channels = channels
        self.channel_cells = channel_cells
        self.location_prior = location_prior
        self.hog_engine = hog_engine
        self.window = window
        self.cell = cell
        self.block = block
        self.orientations = orientations
        self.scale_step = scale_step
        self.pos_overlap = pos_overlap
        self.neg_overlap = neg_overlap
        self.stage_learner = stage_learner
        self.rule = rule
        self.fallback = fallback
        self.n_stages = n_stages
        self.target_recall = target_recall
        self.target_far = target_far
        self.max_weak = max_weak
        self.cost_ratio = cost_ratio
        self.recycle = recycle
        self.chain = chain
        self.n_negatives = n_negatives
        self.max_negatives = max_negatives
        self.bootstrap = bootstrap
        self.n_extra_negatives = n_extra_negatives
        self.validation_fraction = validation_fraction
        self.nms_threshold = nms_threshold
        self.nms_cover = nms_cover
        self.score_threshold = score_threshold
        self.max_detections = max_detections
        self.random_state = random_state
        self.verbose = verbose

    def _cascade(self):
        return BoostedCascade(
            stage_learner=self.stage_learner,
            rule=self.rule,
            fallback=self.fallback,
            n_stages=self.n_stages,
            target_recall=self.target_recall,
            target_far=self.target_far,
            max_weak=self.max_weak,
            cost_ratio=self.cost_ratio,
            recycle=self.recycle,
            chain=bool(getattr(self, "chain", False)),
            max_negatives=self.max_negatives,
            validation_fraction=self.validation_fraction,
            random_state=self.random_state,
            verbose=max(0, int(self.verbose) - 1),
        )

    def fit(self, images, boxes, negative_images=None):
        """Train on images and their boxes.  With ``validation_fraction > 0`` the
        operating points are chosen on the windows of that share of the images (drawn at
        random), held out from stage training.  With ``bootstrap`` every later stage
        draws fresh negatives from all training windows the cascade so far accepts.
        ``negative_images``: images without any object, more negatives for the stages
        (``n_extra_negatives`` of their windows; see the class docstring)."""
        validate_params(self)
        images, boxes = check_images_boxes(images, boxes)
        negative_images = _check_negative_images(negative_images)
        self._fit_prior(images, boxes)
        X, y, mask, ctx = self._training_set(images, boxes, negative_images)
        casc = self._cascade()
        if mask is not None:
            casc.set_params(validation_fraction=0.0)
        source = self._negative_source(ctx) if getattr(self, "bootstrap", False) else None
        # Ctrl-C inside a stage: the cascade keeps its completed stages (and warns)
        self.cascade_ = casc.fit(X, y, validation_mask=mask, negatives=source)
        self.n_bootstrapped_ = int(sum(t.get("n_bootstrapped", 0) for t in casc.stages_))
        self.n_extra_negatives_ = int(ctx["n_extra"])
        self.converged_ = bool(self.cascade_.converged_)
        self.n_positives_, self.n_negatives_ = int((y == 1).sum()), int((y == 0).sum())
        self.n_train_images_ = len(images)
        return self

    def training_set(self, images, boxes, negative_images=None):
        """``(X, y, validation_mask)``: the windows :meth:`fit` trains the cascade on
        (after the location prior is fitted) -- every positive window and the random
        pool of ``n_negatives`` negatives, drawn with ``random_state``, then the
        ``n_extra_negatives`` drawn from ``negative_images`` (their rows last) -- and
        the rows of the held-out images (None without).  The same call gives the same
        set, so a comparison (a flat booster) can be trained on exactly these windows.
        (With ``bootstrap`` the later stages also see negatives drawn from the scan.)"""
        negative_images = _check_negative_images(negative_images)
        X, y, mask, _ = self._training_set(images, boxes, negative_images)
        return X, y, mask

    def _training_set(self, images, boxes, negative_images=None):
        """:meth:`training_set` and the context of the bootstrapping scan."""
        rng = as_generator(self.random_state)
        wins = self._windows(images, boxes)
        Xp = [
            self._positives([w], [b]) if len(b) and w[0].levels else None
            for w, b in zip(wins, boxes)
        ]
        if all(x is None for x in Xp):
            raise ValueError("no positive windows: check the boxes and the window size")
        counts = np.array([(w[4] < self.neg_overlap).sum() for w in wins])
        total = int(counts.sum())
        if total == 0:
            raise ValueError("no negative windows in the training images")
        take = min(total, int(self.n_negatives))
        pick = np.sort(rng.choice(total, take, replace=False))
        offs = np.concatenate([[0], np.cumsum(counts)])
        n_img = len(images)
        n_val = round(self.validation_fraction * n_img) if n_img >= 2 else 0
        val_img = np.zeros(n_img, dtype=bool)
        with_pos = np.flatnonzero([x is not None for x in Xp])
        if n_val and len(with_pos) >= 2:
            n_val = min(n_val, len(with_pos) - 1)
            val_img[rng.choice(with_pos, n_val, replace=False)] = True
        Xs, ys_, hold = [], [], []
        for k, (pyr, lv, r, c, ov) in enumerate(wins):
            if Xp[k] is not None:
                Xs.append(Xp[k])
                ys_.append(np.ones(len(Xp[k])))
                hold.append(np.full(len(Xp[k]), val_img[k]))
            neg = np.flatnonzero(ov < self.neg_overlap)
            mine = pick[(pick >= offs[k]) & (pick < offs[k + 1])] - offs[k]
            if len(mine):
                Xs.append(self._describe(pyr, lv[neg[mine]], r[neg[mine]], c[neg[mine]]))
                ys_.append(np.zeros(len(mine)))
                hold.append(np.full(len(mine), val_img[k]))
        # the images without objects: every window a negative, a pool of their own drawn
        # after the object images' (which therefore stays the same draw), training only
        n_extra, xpick, xoffs = 0, np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
        if negative_images:
            xwins = self._windows(negative_images, [np.zeros((0, 4))] * len(negative_images))
            # overlap -1: a negative whatever ``neg_overlap`` is (the bootstrapping scan)
            xwins = [(pyr, lv, r, c, np.full(len(lv), -1.0)) for pyr, lv, r, c, _ in xwins]
            xcounts = np.array([len(w[1]) for w in xwins])
            if xcounts.sum() == 0:
                raise ValueError("negative_images: no window fits in any of them")
            want = self.n_negatives if self.n_extra_negatives is None else self.n_extra_negatives
            n_extra = min(int(xcounts.sum()), int(want))
            xpick = np.sort(rng.choice(int(xcounts.sum()), n_extra, replace=False))
            xoffs = np.concatenate([[0], np.cumsum(xcounts)])
            for k, (pyr, lv, r, c, _) in enumerate(xwins):
                mine = xpick[(xpick >= xoffs[k]) & (xpick < xoffs[k + 1])] - xoffs[k]
                if len(mine):
                    Xs.append(self._describe(pyr, lv[mine], r[mine], c[mine]))
                    ys_.append(np.zeros(len(mine)))
                    hold.append(np.zeros(len(mine), dtype=bool))
            wins = wins + xwins
            offs = np.concatenate([offs, total + xoffs[1:]])
        X = np.vstack(Xs).astype(np.float64)
        y = np.concatenate(ys_)
        hold = np.concatenate(hold)
        mask = hold if hold.any() and (y[hold] == 0).any() and (y[~hold] == 0).any() else None
        used = np.zeros(int(offs[-1]), dtype=bool)
        used[pick] = True
        used[total + xpick] = True
        ctx = {"wins": wins, "offs": offs, "used": used, "rng": rng, "d": X.shape[1]}
        ctx["n_extra"] = n_extra
        n_all = len(wins)
        val_img = np.concatenate([val_img, np.zeros(n_all - n_img, dtype=bool)])
        ctx["val_img"] = val_img if mask is not None else np.zeros(n_all, dtype=bool)
        return X, y, mask, ctx

    def _negative_source(self, ctx):
        """The cascade's ``negatives`` callable (:meth:`BoostedCascade.fit`): scans every
        negative window of the training images not drawn yet, image by image (one gather
        per pyramid level, then the stages so far on the whole batch), and draws
        ``n_train`` of those that pass from the training images and ``n_val`` from the
        held-out ones, at random; drawn windows are never drawn again."""
        wins, offs, used, rng, val_img = (
            ctx[k] for k in ("wins", "offs", "used", "rng", "val_img")
        )
        negs = [np.flatnonzero(w[4] < self.neg_overlap) for w in wins]
        priors = [
            self._prior(pyr, pyr.boxes(lv[ng], r[ng], c[ng]))
            for (pyr, lv, r, c, _), ng in zip(wins, negs)
        ]

        def rows(k, sel):
            pyr, lv, r, c, _ = wins[k]
            ng = negs[k][sel]
            pr = None if priors[k] is None else priors[k][sel]
            return self._describe(pyr, lv[ng], r[ng], c[ng], prior=pr)

        def draw(passes, n_train, n_val):
            found = []  # global ids (into the negatives of all images) that pass
            for k in range(len(wins)):
                fresh = np.flatnonzero(~used[offs[k] : offs[k + 1]])
                if len(fresh):
                    ok = passes(rows(k, fresh).astype(np.float64))
                    found.append(offs[k] + fresh[ok])
            found = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
            img = np.searchsorted(offs, found, side="right") - 1
            take = []
            for want, side in ((n_train, ~val_img[img]), (n_val, val_img[img])):
                cand = found[side]
                if want > 0 and len(cand):
                    take.append(rng.choice(cand, min(want, len(cand)), replace=False))
            take = np.sort(np.concatenate(take)) if take else np.zeros(0, dtype=np.int64)
            used[take] = True
            img = np.searchsorted(offs, take, side="right") - 1
            Z, hold = [], []
            for k in np.unique(img):
                Z.append(rows(k, take[img == k] - offs[k]))
                hold.append(np.full(int((img == k).sum()), val_img[k]))
            if not Z:
                return np.zeros((0, ctx["d"])), np.zeros(0, dtype=bool)
            return np.vstack(Z).astype(np.float64), np.concatenate(hold)

        return draw

    def _score_windows(self, pyr, lv, r, c, prior=None):
        X = self._describe(pyr, lv, r, c, prior=prior)
        return self.cascade_.decision_function(X.astype(np.float64))

    def _compiled_cascade(self, pyr):
        """The cascade's stumps as flat arrays and, per stump, where its feature lives in
        a pyramid level's grids (:func:`~maxmargin.apps.detection.scan.cascade_scan`)."""
        key = (id(self.cascade_), pyr.n_features, pyr.channel_cells if pyr.channels else ())
        cached = getattr(self, "_compiled", None)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        from maxmargin.apps.detection.scan import cascade_plan

        cas = self.cascade_
        feats = np.concatenate([np.asarray(st.feature) for st in cas.stumps_])
        ptr = np.concatenate([[0], np.cumsum([len(st) for st in cas.stumps_])])
        cat = lambda a: np.concatenate(  # noqa: E731
            [np.asarray(getattr(st, a), dtype=np.float64) for st in cas.stumps_]
        )
        if all(hasattr(st, "v_lo") for st in cas.stumps_):
            v_lo, v_hi = cat("v_lo"), cat("v_hi")
        else:  # {-1, +1} stumps: polarity p gives -p below the split, p above
            pol = cat("polarity")
            v_lo, v_hi = -pol, pol
        stages = (
            cat("threshold"),
            np.ascontiguousarray(v_lo, dtype=np.float64),
            np.ascontiguousarray(v_hi, dtype=np.float64),
            np.ascontiguousarray(ptr, dtype=np.int64),
            np.ascontiguousarray(cas.thresholds_, dtype=np.float64),
            bool(cas.chain_),
        )
        nh = pyr.n_hog_features
        br, bc = pyr.n_blocks
        Fh = nh // (br * bc)
        src = np.zeros(len(feats), dtype=np.int64)
        fi, fj, fq = (np.zeros(len(feats), dtype=np.int64) for _ in range(3))
        h = feats < nh
        fi[h], fj[h], fq[h] = feats[h] // (bc * Fh), (feats[h] // Fh) % bc, feats[h] % Fh
        at = nh
        if pyr.channels:
            for k, s_ in enumerate(pyr.channel_cells):
                nr, nc = pyr.window[1] - s_ + 1, pyr.window[0] - s_ + 1
                m = nr * nc * pyr.n_channels
                sel = (feats >= at) & (feats < at + m)
                loc = feats[sel] - at
                src[sel] = k + 1
                fi[sel] = loc // (nc * pyr.n_channels)
                fj[sel] = (loc // pyr.n_channels) % nc
                fq[sel] = loc % pyr.n_channels
                at += m
        src[feats >= at] = -1  # the location prior (the last column)
        layout = (src, fi, fj, fq)
        self._compiled = (key, layout, stages, cascade_plan(layout, stages))
        return layout, stages

    def _level_walk(self, pyr, level, prior):
        """``(depth, margin, n_evaluated)`` of every window of one level through the
        compiled cascade (:func:`~maxmargin.apps.detection.scan.cascade_scan`)."""
        from maxmargin.apps.detection.scan import cascade_scan_level

        self._compiled_cascade(pyr)
        plan = self._compiled[3]
        grids = list(pyr.grids[level].values()) if pyr.channels else []
        return cascade_scan_level(pyr.levels[level], grids, prior, plan, pyr.positions(level))

    def _level_scores(self, pyr, level, prior):
        _, _, ne, score = self._level_walk(pyr, level, prior)
        self._n_eval += int(ne)
        return score

    def detect(self, image):
        """``(boxes, scores)`` of one image after NMS (see :class:`_WindowDetector`);
        the number of weak classifiers evaluated is left in ``last_scan_weak_``."""
        self._n_eval = 0
        out = super().detect(image)
        self.last_scan_weak_ = int(self._n_eval)
        return out

    def _scan(self, pyr, lv, r, c, prior=None):
        """All windows, level by level, through the compiled cascade with early exit
        (:func:`~maxmargin.apps.detection.scan.cascade_scan`); equals
        :meth:`_score_windows` (a test).  The number of weak classifiers evaluated is
        left in ``last_scan_weak_``."""
        out, n_eval, at = [], 0, 0
        for k in range(len(pyr.levels)):
            nr, nc = pyr.positions(k)
            if nr <= 0 or nc <= 0:
                continue
            pk = None
            if prior is not None:
                pk = np.asarray(prior[at : at + nr * nc]).reshape(nr, nc)
            at += nr * nc
            _, _, ne, score = self._level_walk(pyr, k, pk)
            n_eval += ne
            out.append(score.ravel())
        self.last_scan_weak_ = int(n_eval)
        return np.concatenate(out) if out else np.zeros(0)

    def _get_state(self):
        self._check_fitted()
        cmeta, carrays = self.cascade_._get_state()
        meta = {
            "params": self._hog_params(),
            "cascade": cmeta,
            "n_positives": int(self.n_positives_),
            "n_negatives": int(self.n_negatives_),
            "n_extra_negatives": int(getattr(self, "n_extra_negatives_", 0)),
            "n_train_images": int(self.n_train_images_),
        }
        return meta, self._prior_state({f"cascade.{k}": v for k, v in carrays.items()})

    @classmethod
    def _from_state(cls, meta, arrays):
        p = cls._init_params(meta)  # files from before channels: channels=False
        p.setdefault("bootstrap", False)  # files from before bootstrapping
        p.setdefault("n_extra_negatives", None)  # files from before negative_images
        est = cls(**p)
        est._check_file_settings()
        est._load_prior(arrays)
        sub = {k[8:]: v for k, v in arrays.items() if k.startswith("cascade.")}
        est.cascade_ = BoostedCascade._from_state(meta["cascade"], sub)
        # the stumps index the windows' features: their count as the settings give it
        # (else a stump past the descriptor reads the prior's column, or a size mismatch)
        est._check_file_inputs(int(est.cascade_.n_features_in_), "the cascade's input")
        est.converged_ = bool(est.cascade_.converged_)
        est.n_positives_ = int(meta["n_positives"])
        est.n_negatives_ = int(meta["n_negatives"])
        est.n_train_images_ = int(meta["n_train_images"])
        est.n_bootstrapped_ = int(sum(t.get("n_bootstrapped", 0) for t in est.cascade_.stages_))
        est.n_extra_negatives_ = int(meta.get("n_extra_negatives", 0))
        return est


def _geometry(boxes, shape):
    H, W = float(shape[0]), float(shape[1])
    b = np.asarray(boxes, dtype=np.float64)
    return np.stack(
        [
            np.log(b[:, 2] / W),
            np.log(b[:, 3] / H),
            (b[:, 0] + b[:, 2] / 2) / W,
            (b[:, 1] + b[:, 3] / 2) / H,
            np.log(b[:, 2] / b[:, 3]),
        ],
        axis=1,
    )


@register
class ProposalRanker(BaseEstimator):
    """Object proposals: windows drawn from the learned box distribution, ranked by a
    linear function learned with :class:`~maxmargin.RankSVM`.

    Each training image contributes ``n_train_windows`` random windows with loss
    ``1 - max overlap with the image's ground truth``; RankSVM (``target="loss"``) learns
    to rank them inside each image (one group per image) with the chosen preference
    ``graph`` and ``rescaling``.  Window features: the HOG descriptor of the nearest
    pyramid window (:meth:`HOGPyramid.snap`), the box geometry (log width and height
    relative to the image, centre, log aspect ratio) and the box's log density under the
    learned distribution.

    Parameters
    ----------
    C : float, default=1.0
    graph : {"complete", "bipartite", "star"}, default="complete"
    rescaling : {"margin", "slack"}, default="margin"
    n_train_windows : int, default=300
    n_candidates : int, default=1000
        Windows drawn per image at prediction.
    nms_threshold : float or None, default=0.7
        :meth:`propose` moves windows overlapping a better-ranked kept window by more
        than this behind all kept ones (non-maximum suppression, as in Rahtu et al.'s
        window selection), so the top of the list covers different objects; None: off.
    window, cell, block, orientations, scale_step : HOG parameters
    tol, max_iter : RankSVM's
    random_state, verbose
    """

    _parameter_constraints = {
        "C": [POSITIVE],
        "graph": [Options("complete", "bipartite", "star")],
        "rescaling": [Options("margin", "slack")],
        "n_train_windows": [POSITIVE_INT],
        "n_candidates": [POSITIVE_INT],
        "nms_threshold": [None, _UNIT],
        "window": [tuple, list],
        "cell": [POSITIVE_INT],
        "block": [POSITIVE_INT],
        "orientations": [POSITIVE_INT],
        "scale_step": [Interval(float, 1, None, closed="neither")],
        "tol": [POSITIVE],
        "max_iter": [POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "verbose": VERBOSE,
    }

    def __init__(
        self,
        *,
        C=1.0,
        graph="complete",
        rescaling="margin",
        n_train_windows=300,
        n_candidates=1000,
        nms_threshold=0.7,
        window=(4, 4),
        cell=8,
        block=2,
        orientations=9,
        scale_step=2**0.5,
        tol=1e-3,
        max_iter=500,
        random_state=None,
        verbose=0,
    ):
        self.C = C
        self.graph = graph
        self.rescaling = rescaling
        self.n_train_windows = n_train_windows
        self.n_candidates = n_candidates
        self.nms_threshold = nms_threshold
        self.window = window
        self.cell = cell
        self.block = block
        self.orientations = orientations
        self.scale_step = scale_step
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose

    #: the box features after the HOG descriptor: geometry (:func:`_geometry`) and density
    _n_box_features = 6

    def _pyramid(self, image) -> HOGPyramid:
        return HOGPyramid(
            image,
            window=tuple(self.window),
            cell=self.cell,
            block=self.block,
            orientations=self.orientations,
            scale_step=float(self.scale_step),
            engine="skimage",  # the features its models were trained with
        )

    def _features(self, image, boxes):
        pyr = self._pyramid(image)
        shape = np.asarray(image).shape
        parts = [_geometry(boxes, shape), self.distribution_.log_density(boxes, shape)[:, None]]
        if pyr.levels:
            hog = pyr.descriptors(*pyr.snap(boxes))
        else:
            hog = np.zeros((len(boxes), pyr.n_features), np.float32)
        return np.hstack([hog.astype(np.float64), *parts])

    def fit(self, images, boxes):
        validate_params(self)
        images, boxes = check_images_boxes(images, boxes)
        rng = as_generator(self.random_state)
        keep = [k for k, b in enumerate(boxes) if len(b)]
        if len(keep) < 1:
            raise ValueError("no training image has a ground-truth box")
        self.distribution_ = BoxDistribution().fit(
            [boxes[k] for k in keep], [np.asarray(images[k]).shape for k in keep]
        )
        X, loss, group = [], [], []
        for g, k in enumerate(keep):
            shape = np.asarray(images[k]).shape
            cand = self.distribution_.sample(self.n_train_windows, shape, rng)
            X.append(self._features(images[k], cand))
            loss.append(1.0 - pairwise_overlap(cand, boxes[k]).max(axis=1))
            group.append(np.full(len(cand), g))
        X = np.vstack(X)
        self.mean_ = X.mean(axis=0)
        self.scale_ = np.maximum(X.std(axis=0), 1e-8)
        self.ranker_ = RankSVM(
            C=float(self.C),
            graph=self.graph,
            rescaling=self.rescaling,
            target="loss",
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            verbose=self.verbose,
        ).fit((X - self.mean_) / self.scale_, np.concatenate(loss), group=np.concatenate(group))
        self.n_train_images_ = len(keep)
        return self

    def score_windows(self, image, boxes) -> np.ndarray:
        """Ranking scores of ``boxes`` in ``image`` (higher: better proposal)."""
        check_is_fitted(self, "ranker_")
        b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        X = (self._features(image, b) - self.mean_) / self.scale_
        return self.ranker_.decision_function(X)

    def candidates(self, image, rng=None) -> np.ndarray:
        """``n_candidates`` windows drawn from the learned distribution (unranked)."""
        check_is_fitted(self, "ranker_")
        return self.distribution_.sample(
            self.n_candidates, np.asarray(image).shape, as_generator(rng)
        )

    def propose(self, image, rng=None):
        """``(boxes, scores)``: the candidates of one image, best first (after NMS, the
        kept windows first, then the suppressed ones, each by score)."""
        cand = self.candidates(image, rng if rng is not None else self.random_state)
        s = self.score_windows(image, cand)
        order = np.argsort(-s, kind="stable")
        if self.nms_threshold is not None and len(cand):
            keep = nms(cand, s, float(self.nms_threshold))
            rest = np.setdiff1d(order, keep, assume_unique=True)
            order = np.concatenate([keep, rest[np.argsort(-s[rest], kind="stable")]])
        return cand[order], s[order]

    def _get_state(self):
        check_is_fitted(self, "ranker_")
        rmeta, rarrays = self.ranker_._get_state()
        p = json_params(self)
        p["window"] = list(p["window"])
        meta = {"params": p, "ranker": rmeta, "n_train_images": int(self.n_train_images_)}
        arrays = {f"ranker.{k}": v for k, v in rarrays.items()}
        arrays.update(
            mean=self.mean_,
            scale=self.scale_,
            box_params=self.distribution_.params_,
            box_scale=self.distribution_.scale_,
        )
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        p = dict(meta["params"])
        p["window"] = tuple(p["window"])
        est = cls(**p)
        validate_params(
            est, ("window", "cell", "block", "orientations", "scale_step"), "model file: "
        )
        _check_window(est.window)
        try:  # a window's features: its HOG descriptor and the box features
            want = est._pyramid(np.zeros((1, 1), np.float32)).n_features + cls._n_box_features
        except (TypeError, ValueError, IndexError) as e:
            raise ValueError(f"model file: the window settings are corrupt: {e}") from None
        sub = {k[7:]: v for k, v in arrays.items() if k.startswith("ranker.")}
        est.ranker_ = RankSVM._from_state(meta["ranker"], sub)
        if est.ranker_.n_features_in_ != want:
            raise ValueError(
                f"model file: the ranker has {est.ranker_.n_features_in_} inputs, but its "
                f"settings (window={tuple(est.window)}, block={est.block}, "
                f"orientations={est.orientations}) give windows of {want} features"
            )
        est.mean_ = _file_vector(arrays["mean"], "mean", want)
        est.scale_ = _file_vector(arrays["scale"], "scale", want)
        if not np.all(est.scale_ > 0):
            raise ValueError("model file: scale must be positive")
        d = BoxDistribution()
        d.params_ = np.asarray(arrays["box_params"], dtype=np.float64)
        d.scale_ = np.asarray(arrays["box_scale"], dtype=np.float64)
        ok = d.params_.ndim == 2 and d.params_.shape[1] == 4 and len(d.params_) >= 1
        ok = ok and d.scale_.shape == (4,) and np.all(np.isfinite(d.params_))
        if not (ok and np.all(np.isfinite(d.scale_)) and np.all(d.scale_ > 0)):
            raise ValueError("model file: the box distribution is corrupt")
        est.distribution_ = d
        est.n_train_images_ = int(meta["n_train_images"])
        return est
