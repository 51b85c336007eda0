"""Haar-like features of fixed-size windows from integral images, and a boosted face
cascade that scans whole photos with them (thesis seed 002, Ch. 4).

Viola & Jones, "Rapid object detection using a boosted cascade of simple features", CVPR
2001, and "Robust real-time face detection", IJCV 57, 2004.  A feature is a weighted sum
of two to four adjacent rectangles inside a ``window x window`` square:

* ``edge_h`` / ``edge_v`` -- two rectangles side by side (left minus right) or stacked
  (top minus bottom);
* ``line_h`` / ``line_v`` -- three rectangles, the outer two minus twice the middle one;
* ``diag`` -- four rectangles in a 2 x 2 checkerboard.

Every feature's weights sum to zero over its area, so a constant added to the window
leaves it unchanged; its value is divided by ``window**2 * std`` (the window's standard
deviation, Viola & Jones' variance normalisation), so it also ignores a contrast scale.
The integral images of the grey level and its square are those of the tracker's patch
features (:func:`maxmargin.apps.tracking.features._grey_integrals`, one compiled pass);
a rectangle sum is four look-ups (:func:`maxmargin.apps.tracking.features._box_sum`).

* :class:`HaarFeatures` -- the table of rectangles (all positions and sizes of the five
  types, optionally thinned by a position / size stride and a random subset) and the
  compiled evaluation of every feature on many windows (:meth:`HaarFeatures.transform`
  for a stack of window-size crops, :meth:`HaarFeatures.windows` for windows of one
  image).
* :func:`haar_cascade_scan` -- every window (at a stride) of one image through a boosted
  cascade of stumps on Haar features, with early exit, in compiled code: the rejected
  windows stop at the stage that rejects them, and the count of weak classifiers
  evaluated is returned (the cascade's figure of merit).
* :class:`HaarCascadeDetector` -- a face detector (scikit-learn estimator): trained on
  window-size face crops and on images without faces, whose windows are the negatives,
  bootstrapped per stage from a scan of those images with the cascade so far (Viola &
  Jones 2004, Sec. 5); detection scans an image pyramid and applies non-maximum
  suppression.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from maxmargin._validation import (
    POSITIVE_INT,
    RANDOM_STATE,
    VERBOSE,
    Interval,
    as_generator,
    json_params,
    validate_params,
)
from maxmargin.apps.detection.features import to_grey
from maxmargin.apps.detection.metrics import nms
from maxmargin.apps.detection.scan import resize
from maxmargin.apps.tracking.features import _box_sum, _grey_integrals
from maxmargin.io import register_model
from maxmargin.learners.cascade import BoostedCascade

__all__ = [
    "HAAR_TYPES",
    "HaarCascadeDetector",
    "HaarFeatures",
    "haar_cascade_scan",
    "integral_images",
    "window_std_map",
]

# type: (base width, base height, rectangles as (x, y, w, h, weight) in base units)
HAAR_TYPES = {
    "edge_h": (2, 1, ((0, 0, 1, 1, 1), (1, 0, 1, 1, -1))),
    "edge_v": (1, 2, ((0, 0, 1, 1, 1), (0, 1, 1, 1, -1))),
    "line_h": (3, 1, ((0, 0, 1, 1, 1), (1, 0, 1, 1, -2), (2, 0, 1, 1, 1))),
    "line_v": (1, 3, ((0, 0, 1, 1, 1), (0, 1, 1, 1, -2), (0, 2, 1, 1, 1))),
    "diag": (2, 2, ((0, 0, 1, 1, 1), (1, 0, 1, 1, -1), (0, 1, 1, 1, -1), (1, 1, 1, 1, 1))),
}
_STD_FLOOR = 1.0 / 255.0  # a flat window: one grey level of contrast


def haar_table(window: int, types=tuple(HAAR_TYPES), step: int = 1) -> np.ndarray:
    """All features of ``types`` in a ``window``-square: ``(F, 4, 5)`` int64 rectangles
    ``(x, y, w, h, weight)`` (unused rectangles have weight 0), every position and every
    size that fits, positions and unit sizes taken every ``step`` pixels.  With ``step=1``
    and the five types a 24 x 24 window has Viola & Jones' 162,336 features."""
    window, step = int(window), int(step)
    if window < 2 or step < 1:
        raise ValueError("window must be >= 2 and step >= 1")
    out = []
    for t in types:
        if t not in HAAR_TYPES:
            raise ValueError(f"unknown Haar type {t!r} (known: {', '.join(HAAR_TYPES)})")
        bw, bh, rects = HAAR_TYPES[t]
        for uw in range(1, window // bw + 1):
            if (uw - 1) % step:
                continue
            for uh in range(1, window // bh + 1):
                if (uh - 1) % step:
                    continue
                W, H = bw * uw, bh * uh
                for y in range(0, window - H + 1, step):
                    for x in range(0, window - W + 1, step):
                        f = np.zeros((4, 5), dtype=np.int64)
                        for k, (rx, ry, rw, rh, wt) in enumerate(rects):
                            f[k] = (x + rx * uw, y + ry * uh, rw * uw, rh * uh, wt)
                        out.append(f)
    return np.array(out, dtype=np.int64).reshape(-1, 4, 5)


def _integral(img) -> np.ndarray:
    out = np.empty((img.shape[0] + 1, img.shape[1] + 1, 2), dtype=np.float64)
    return _grey_integrals(img, out)


def integral_images(image) -> np.ndarray:
    """Integral images ``(H + 1, W + 1, 2)`` (float64) of a grey image and its square,
    zero first row and column (the tracker's compiled pass)."""
    g = np.ascontiguousarray(to_grey(image), dtype=np.float32)
    out = np.empty((g.shape[0] + 1, g.shape[1] + 1, 2), dtype=np.float64)
    return _grey_integrals(g, out)


@njit(cache=True, inline="always")
def _window_norm(II, y, x, win):  # pragma: no cover - compiled
    """1 / (win^2 * std) of the window at (y, x) (std floored at one grey level)."""
    a = float(win * win)
    s1 = _box_sum(II, y, y + win, x, x + win, 0)
    s2 = _box_sum(II, y, y + win, x, x + win, 1)
    m = s1 / a
    v = s2 / a - m * m
    sd = np.sqrt(v) if v > 0.0 else 0.0
    if sd < 1.0 / 255.0:
        sd = 1.0 / 255.0
    return 1.0 / (a * sd)


@njit(cache=True, inline="always")
def _window_std(II, y, x, win):  # pragma: no cover - compiled
    """Standard deviation of the grey levels of the window at (y, x) (not floored)."""
    a = float(win * win)
    m = _box_sum(II, y, y + win, x, x + win, 0) / a
    v = _box_sum(II, y, y + win, x, x + win, 1) / a - m * m
    return np.sqrt(v) if v > 0.0 else 0.0


@njit(cache=True)
def _std_map_kernel(II, win, stride):  # pragma: no cover - compiled
    H, W = II.shape[0] - 1, II.shape[1] - 1
    nr = (H - win) // stride + 1 if H >= win else 0
    nc = (W - win) // stride + 1 if W >= win else 0
    out = np.empty((nr, nc), dtype=np.float64)
    for r in range(nr):
        for c in range(nc):
            out[r, c] = _window_std(II, r * stride, c * stride, win)
    return out


def window_std_map(II, window: int, stride: int) -> np.ndarray:
    """Grey-level standard deviation of every window (corners every ``stride`` px) of the
    image whose :func:`integral_images` are ``II``: ``(rows, cols)``, as
    :func:`haar_cascade_scan` lays its windows out."""
    return _std_map_kernel(np.ascontiguousarray(II, dtype=np.float64), int(window), int(stride))


@njit(cache=True, inline="always")
def _haar_value(II, y, x, rects, f):  # pragma: no cover - compiled
    """Unnormalised value of feature f of the window at (y, x)."""
    v = 0.0
    for k in range(rects.shape[1]):
        w = rects[f, k, 4]
        if w == 0:
            continue
        x0 = x + rects[f, k, 0]
        y0 = y + rects[f, k, 1]
        v += w * _box_sum(II, y0, y0 + rects[f, k, 3], x0, x0 + rects[f, k, 2], 0)
    return v


@njit(cache=True)
def _haar_windows_kernel(II, ys, xs, win, rects, out):  # pragma: no cover - compiled
    # every feature of rects on the windows (ys[i], xs[i]) of one integral image
    for i in range(ys.shape[0]):
        y, x = ys[i], xs[i]
        nrm = _window_norm(II, y, x, win)
        for f in range(rects.shape[0]):
            out[i, f] = _haar_value(II, y, x, rects, f) * nrm


@njit(cache=True)
def _haar_crops_kernel(crops, rects, out):  # pragma: no cover - compiled
    # every feature on every crop (n, win, win): one integral image per crop
    n, win = crops.shape[0], crops.shape[1]
    II = np.empty((win + 1, win + 1, 2), dtype=np.float64)
    for i in range(n):
        _grey_integrals(crops[i], II)
        nrm = _window_norm(II, 0, 0, win)
        for f in range(rects.shape[0]):
            out[i, f] = _haar_value(II, 0, 0, rects, f) * nrm


class HaarFeatures:
    """A set of Haar-like features of ``window x window`` windows.

    Parameters
    ----------
    window : int, default=24
    types : sequence of str, default all five (:data:`HAAR_TYPES`)
    step : int, default=1
        Position and unit-size stride of the table (:func:`haar_table`).
    n_features : int or None, default=None
        A random subset of that many features (drawn with ``random_state``); None: all.
    random_state : int, Generator or None
    """

    def __init__(
        self, window=24, types=tuple(HAAR_TYPES), step=1, n_features=None, random_state=None
    ) -> None:
        self.window = int(window)
        self.types = tuple(types)
        self.step = int(step)
        table = haar_table(self.window, self.types, self.step)
        if n_features is not None and int(n_features) < len(table):
            if int(n_features) < 1:
                raise ValueError(f"n_features must be positive, got {n_features}")
            rng = as_generator(random_state)
            pick = np.sort(rng.choice(len(table), int(n_features), replace=False))
            table = table[pick]
        self.rects = np.ascontiguousarray(table)

    @classmethod
    def from_rects(cls, rects, window: int) -> HaarFeatures:
        """Features given by their rectangles ``(F, 4, 5)`` (a saved model's)."""
        obj = cls.__new__(cls)
        obj.window, obj.types, obj.step = int(window), (), 0
        r = np.ascontiguousarray(np.asarray(rects, dtype=np.int64))
        if r.ndim != 3 or r.shape[1:] != (4, 5):
            raise ValueError(f"rects must have shape (F, 4, 5), got {r.shape}")
        live = r[:, :, 4] != 0
        x0, y0, w, h = (r[:, :, k] for k in range(4))
        bad = live & ((x0 < 0) | (y0 < 0) | (w < 1) | (h < 1))
        bad |= live & ((x0 + w > obj.window) | (y0 + h > obj.window))
        if bad.any():
            raise ValueError(f"a rectangle lies outside the {obj.window}-pixel window")
        obj.rects = r
        return obj

    @property
    def n_features(self) -> int:
        return len(self.rects)

    def transform(self, crops) -> np.ndarray:
        """Features ``(n, n_features)`` (float32) of ``n`` window-size grey crops ``(n,
        window, window)`` (uint8 in 0..255 or float in [0, 1])."""
        a = np.asarray(crops)
        if a.ndim != 3 or a.shape[1:] != (self.window, self.window):
            raise ValueError(
                f"crops must have shape (n, {self.window}, {self.window}), got {a.shape}"
            )
        g = a.astype(np.float32) / (255.0 if a.dtype == np.uint8 else 1.0)
        out = np.empty((len(a), self.n_features), dtype=np.float32)
        _haar_crops_kernel(np.ascontiguousarray(g), self.rects, out)
        return out

    def windows(self, II, ys, xs) -> np.ndarray:
        """Features ``(n, n_features)`` of the windows with top-left corners ``(ys, xs)``
        of the image whose :func:`integral_images` are ``II``."""
        ys = np.ascontiguousarray(ys, dtype=np.int64).ravel()
        xs = np.ascontiguousarray(xs, dtype=np.int64).ravel()
        H, W = II.shape[0] - 1, II.shape[1] - 1
        if len(ys) != len(xs):
            raise ValueError("ys and xs must have the same length")
        if len(ys) and (
            ys.min() < 0 or xs.min() < 0 or ys.max() + self.window > H or xs.max() + self.window > W
        ):
            raise ValueError(f"a window lies outside the {W} x {H} image")
        out = np.empty((len(ys), self.n_features), dtype=np.float32)
        _haar_windows_kernel(II, ys, xs, self.window, self.rects, out)
        return out


# ---------------------------------------------------------------------- compiled cascade
@njit(cache=True)
def _cascade_kernel(
    II, win, stride, rects, feat, thr, v_lo, v_hi, ptr, stage_thr, chain, min_std
):  # pragma: no cover - compiled
    H, W = II.shape[0] - 1, II.shape[1] - 1
    nr = (H - win) // stride + 1 if H >= win else 0
    nc = (W - win) // stride + 1 if W >= win else 0
    K = stage_thr.shape[0]
    depth = np.zeros((nr, nc), dtype=np.int64)
    margin = np.zeros((nr, nc), dtype=np.float64)
    n_eval = 0
    for r in range(nr):
        y = r * stride
        for c in range(nc):
            x = c * stride
            if min_std > 0.0 and _window_std(II, y, x, win) < min_std:
                # the contrast pre-filter: rejected before the first stage, no weak
                # classifier evaluated
                depth[r, c] = 0
                margin[r, c] = -np.inf
                continue
            nrm = _window_norm(II, y, x, win)
            F = 0.0
            d = 0
            m = 0.0
            for k in range(K):
                s = 0.0
                for t in range(ptr[k], ptr[k + 1]):
                    # the float32 rounding of the training features
                    v = np.float32(_haar_value(II, y, x, rects, feat[t]) * nrm)
                    s += v_hi[t] if v > thr[t] else v_lo[t]
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


@njit(cache=True)
def _resume_kernel(
    II, win, stride, ncol, ids, F, rects, feat, thr, v_lo, v_hi, ptr, stage_thr, k0, chain, min_std
):  # pragma: no cover - compiled
    """The windows ``ids`` (row-major index ``r * ncol + c`` on the stride grid) that passed
    stages ``0 .. k0 - 1`` through stages ``k0 ..`` with early exit, from their chained
    score ``F`` (updated in place); returns the mask of those passing every stage and the
    weak classifiers evaluated.  Stage for stage the arithmetic of :func:`_cascade_kernel`
    (``k0 = 0``: the contrast pre-filter first), so a window's outcome is the full scan's."""
    K = stage_thr.shape[0]
    ok = np.zeros(ids.shape[0], dtype=np.bool_)
    n_eval = 0
    for i in range(ids.shape[0]):
        y = (ids[i] // ncol) * stride
        x = (ids[i] % ncol) * stride
        if k0 == 0 and min_std > 0.0 and _window_std(II, y, x, win) < min_std:
            continue
        nrm = _window_norm(II, y, x, win)
        Fi = F[i]
        passed = True
        for k in range(k0, K):
            s = 0.0
            for t in range(ptr[k], ptr[k + 1]):
                v = np.float32(_haar_value(II, y, x, rects, feat[t]) * nrm)
                s += v_hi[t] if v > thr[t] else v_lo[t]
            n_eval += ptr[k + 1] - ptr[k]
            Fi = s + Fi if chain else s
            if not Fi > stage_thr[k]:
                passed = False
                break
        F[i] = Fi
        ok[i] = passed
    return ok, n_eval


class _IncrementalScan:
    """The windows of a fixed set of image levels that pass a cascade being fitted, kept
    from one bootstrapping round to the next: a window a stage rejected stays rejected
    (the stages so far never change), so each round evaluates only the *new* stages on
    the windows still alive -- over a whole fit about one full scan's work instead of one
    per stage.  ``levels``: a callable giving level ``q``'s integral images; ``shapes``:
    ``(n_levels, 2)`` window rows / columns per level.  :meth:`update` falls back to a
    scan from the first stage whenever the stages it is given do not extend the ones it
    has seen."""

    def __init__(self, levels, shapes, features, stride, min_std):
        self.levels, self.shapes = levels, np.asarray(shapes, dtype=np.int64)
        self.features, self.stride, self.min_std = features, int(stride), float(min_std)
        self.seen = None  # the compiled stages already applied
        self.alive: list = []  # per level: (window ids, chained scores) passing them
        self.n_evaluated = 0

    @staticmethod
    def _extends(old, new) -> bool:
        if old is None or old[6] != new[6] or len(new[5]) < len(old[5]):
            return False
        K, T = len(old[5]), int(old[4][-1])
        return (
            np.array_equal(old[4], new[4][: K + 1])
            and np.array_equal(old[5], new[5][:K])
            and all(np.array_equal(old[j], new[j][:T]) for j in range(4))
        )

    def update(self, stages) -> list:
        """Per level the window ids passing every stage of ``stages``
        (:func:`compile_cascade`)."""
        feat, split, v_lo, v_hi, ptr, sthr, chain = stages
        k0 = len(self.seen[5]) if self._extends(self.seen, stages) else 0
        if k0 == 0:
            self.alive = [None] * len(self.shapes)
        win = int(self.features.window)
        for q in range(len(self.shapes)):
            if k0 == 0:  # every window of the level (made here: one level at a time)
                nw = int(self.shapes[q, 0] * self.shapes[q, 1])
                self.alive[q] = (np.arange(nw, dtype=np.int64), np.zeros(nw))
            ids, F = self.alive[q]
            if len(ids) == 0 or k0 == len(sthr):
                continue
            II = self.levels(q)
            ok, ne = _resume_kernel(
                II, win, self.stride, int(self.shapes[q, 1]), ids, F, self.features.rects,
                feat, split, v_lo, v_hi, ptr, sthr, k0, bool(chain), self.min_std,
            )  # fmt: skip
            self.n_evaluated += ne
            self.alive[q] = (ids[ok], F[ok])
        self.seen = stages
        return [ids for ids, _ in self.alive]


def compile_cascade(cascade: BoostedCascade) -> tuple:
    """A fitted :class:`~maxmargin.BoostedCascade`'s stumps as flat arrays ``(feature,
    split, v_lo, v_hi, ptr, stage_thresholds, chain)`` for :func:`haar_cascade_scan`."""
    st = cascade.stumps_
    cat = lambda a: np.ascontiguousarray(  # noqa: E731
        np.concatenate([np.asarray(getattr(s, a)) for s in st])
    )
    ptr = np.concatenate([[0], np.cumsum([len(s) for s in st])]).astype(np.int64)
    return (
        cat("feature").astype(np.int64),
        cat("threshold").astype(np.float64),
        cat("v_lo").astype(np.float64),
        cat("v_hi").astype(np.float64),
        ptr,
        np.ascontiguousarray(cascade.thresholds_, dtype=np.float64),
        bool(cascade.chain_),
    )


def haar_cascade_scan(II, features: HaarFeatures, stages, stride: int = 1, min_std=0.0):
    """Every window of one image (top-left corners every ``stride`` pixels) through a
    compiled cascade (``stages``: :func:`compile_cascade`), each only as far as it passes.
    ``II``: the image's :func:`integral_images`.  Returns ``(depth, margin,
    n_evaluated)``: per window ``(rows, cols)`` the stages passed and ``F - threshold`` at
    the last stage evaluated (as :meth:`BoostedCascade._walk`), and the number of weak
    classifiers evaluated in all.  ``min_std > 0``: a window whose grey-level standard
    deviation is below it is rejected before the first stage (depth 0, margin ``-inf``,
    nothing evaluated)."""
    min_std = float(min_std)
    if not (np.isfinite(min_std) and min_std >= 0.0):
        raise ValueError(f"min_std must be a finite number >= 0, got {min_std}")
    feat, split, v_lo, v_hi, ptr, sthr, chain = stages
    if len(feat) and (feat.min() < 0 or feat.max() >= features.n_features):
        raise ValueError("the cascade uses a feature outside the Haar feature set")
    return _cascade_kernel(
        np.ascontiguousarray(II, dtype=np.float64),
        int(features.window),
        int(stride),
        features.rects,
        feat,
        split,
        v_lo,
        v_hi,
        ptr,
        sthr,
        bool(chain),
        min_std,
    )


def _scores(depth, margin, K):
    """:meth:`BoostedCascade.decision_function` from depth and margin."""
    sig = 0.5 * (1.0 + np.tanh(0.5 * margin))
    return np.where(depth == K, sig - 0.5, depth - K + sig)


@register_model
class HaarCascadeDetector(BaseEstimator):
    """A face (object) detector: Haar-like features of ``window x window`` windows and a
    boosted cascade (thesis seed 002, Ch. 4; Viola & Jones, IJCV 2004).

    Parameters
    ----------
    cascade : BoostedCascade or None
        The cascade's learner and its parameters (stage learner, rule, goals, caps,
        recycling, chaining: one parameter object); None: ``BoostedCascade(n_stages=10,
        target_recall=0.9, target_far=1e-4, rule="two-point", max_weak=(2, 5, 10, 20,
        50, 100, 200), max_bins=256)``.  Cloned by :meth:`fit`.
    window : int, default=24
    feature_step : int, default=2
        Position / size stride of the Haar table (:func:`haar_table`; 1: all 162,336).
    n_features : int or None, default=4000
        A random subset of the table (None: all of it).
    n_negatives : int, default=5000
        Negative windows per stage: the first stage's are drawn at random from the
        negative images' windows, later stages keep this count by bootstrapping.
    validation_fraction : float in [0, 1), default=0.25
        Share of the positives and of the negative images held out to choose the
        stages' operating points.
    scale_step : float, default=1.25
        Pyramid scale factor between levels.
    stride : int, default=2
        Window stride in pixels at every level.
    nms_threshold : float, default=0.3
    max_detections : int, default=100
    contrast_quantile : float in [0, 1), default=0.0
        The contrast pre-filter: a window whose grey-level standard deviation is below
        ``min_std_``, this quantile of the training faces' (so that at most this share of
        them falls below), is rejected before the first stage, evaluating no weak
        classifier.  Near-flat windows (sky, walls) are a large share of a cascade's false
        accepts, because the variance normalisation of the features turns their noise into
        full-contrast patterns, while no face is that flat (Viola & Jones, IJCV 2004, Sec.
        5.1, normalise by the variance for the same reason).  Such windows are never
        drawn as negatives either.  0 (the default): off; the face benchmark uses 0.001.
    keep_negatives : bool, default=False
        Keep every negative row the stages saw in ``negatives_``.
    random_state, verbose

    Attributes
    ----------
    features_ (:class:`HaarFeatures`), cascade_ (the fitted cascade), n_positives_,
    n_bootstrapped_, negatives_ (every negative row the stages were trained or validated
    on, when ``keep_negatives``; for comparing a flat booster on the same data),
    last_scan_ (windows and weak classifiers evaluated by the last :meth:`detect`),
    min_std_ (the contrast pre-filter's threshold; 0: off), bootstrap_scan_ (the
    bootstrapping's scans of the negative images over the whole fit: ``seconds``,
    ``weak_evaluated`` and ``windows`` scanned -- each stage runs only on the windows
    that passed the ones before, so the fit's scanning costs about one full scan).
    """

    _parameter_constraints = {
        "cascade": [None, BoostedCascade],
        "window": [Interval(int, 2, None, closed="left")],
        "feature_step": [POSITIVE_INT],
        "n_features": [None, POSITIVE_INT],
        "n_negatives": [POSITIVE_INT],
        "validation_fraction": [Interval(float, 0, 1, closed="left")],
        "scale_step": [Interval(float, 1, None, closed="neither")],
        "stride": [POSITIVE_INT],
        "nms_threshold": [Interval(float, 0, 1, closed="both")],
        "max_detections": [POSITIVE_INT],
        "contrast_quantile": [Interval(float, 0, 1, closed="left")],
        "keep_negatives": [bool],
        "random_state": RANDOM_STATE,
        "verbose": VERBOSE,
    }

    def __init__(
        self,
        *,
        cascade=None,
        window=24,
        feature_step=2,
        n_features=4000,
        n_negatives=5000,
        validation_fraction=0.25,
        scale_step=1.25,
        stride=2,
        nms_threshold=0.3,
        max_detections=100,
        contrast_quantile=0.0,
        keep_negatives=False,
        random_state=None,
        verbose=0,
    ):
        self.cascade = cascade
        self.window = window
        self.feature_step = feature_step
        self.n_features = n_features
        self.n_negatives = n_negatives
        self.validation_fraction = validation_fraction
        self.scale_step = scale_step
        self.stride = stride
        self.nms_threshold = nms_threshold
        self.max_detections = max_detections
        self.contrast_quantile = contrast_quantile
        self.keep_negatives = keep_negatives
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ pyramid
    def _levels(self, image):
        """``[(x scale, y scale, grey image)]`` of the image pyramid (largest first) while
        the window fits; the levels are float32, their integral images are made when
        scanned (:func:`_integral`)."""
        g = to_grey(image)
        H, W = g.shape
        out, s, img = [], 1.0, g
        win = int(self.window)
        while round(H * s) >= win and round(W * s) >= win:
            shape = (round(H * s), round(W * s))
            if shape != img.shape:
                src = img if img.shape[0] >= shape[0] and img.shape[1] >= shape[1] else g
                img = resize(src, shape)
            out.append((shape[1] / W, shape[0] / H, np.ascontiguousarray(img, np.float32)))
            s /= float(self.scale_step)
        return out

    def _n_windows(self, img):
        win, st = int(self.window), int(self.stride)
        H, W = img.shape
        return max((H - win) // st + 1, 0), max((W - win) // st + 1, 0)

    # ------------------------------------------------------------------ fit
    def fit(self, faces, negative_images, groups=None):
        """Train on ``faces`` (n, window, window) grey crops (uint8 or float in [0, 1])
        and ``negative_images`` (a list of grey / RGB images with no face; every window
        of theirs at every pyramid level is a negative).  ``groups`` (one label per
        face, e.g. the person): the faces held out for the operating points are whole
        groups, so that they are not near-copies of training faces (variants of one
        photo make the held-out recall optimistic); None: faces drawn one by one."""
        validate_params(self)
        faces = np.asarray(faces)
        win = int(self.window)
        if faces.ndim != 3 or faces.shape[1:] != (win, win) or len(faces) < 2:
            raise ValueError(f"faces must be (n >= 2, {win}, {win}) crops, got {faces.shape}")
        if isinstance(negative_images, np.ndarray) and negative_images.ndim == 2:
            raise ValueError("negative_images must be a list of images, not one image")
        negative_images = list(negative_images)
        if not negative_images:
            raise ValueError("negative_images is empty")
        rng = as_generator(self.random_state)
        seed = int(rng.integers(2**31 - 1))
        self.features_ = HaarFeatures(
            win, step=int(self.feature_step), n_features=self.n_features, random_state=seed
        )
        feats = self.features_
        q = float(self.contrast_quantile)
        self.min_std_ = float(np.quantile(_crop_std(faces), q)) if q > 0 else 0.0
        min_std = self.min_std_
        pyrs = [self._levels(img) for img in negative_images]
        # every window of every (image, level) pair has a global id: offs[pair] + r * ncol + c
        pair_img = np.array([i for i, p in enumerate(pyrs) for _ in p], dtype=np.int64)
        pair_lv = np.array([lv for p in pyrs for lv in range(len(p))], dtype=np.int64)
        shapes = np.array([self._n_windows(im) for p in pyrs for _, _, im in p], dtype=np.int64)
        shapes = shapes.reshape(-1, 2)
        offs = np.concatenate([[0], np.cumsum(shapes[:, 0] * shapes[:, 1])]).astype(np.int64)
        if offs[-1] == 0:
            raise ValueError(f"no {win} x {win} window fits in any negative image")
        n_img = len(pyrs)
        vf = float(self.validation_fraction)
        val_img = np.zeros(n_img, dtype=bool)
        n_vi = round(vf * n_img)
        if vf > 0 and 1 <= n_vi < n_img:
            val_img[rng.choice(n_img, n_vi, replace=False)] = True
        n_val_neg = round(vf * int(self.n_negatives)) if val_img.any() else 0
        n_tr_neg = int(self.n_negatives) - n_val_neg
        st = int(self.stride)
        used = np.zeros(int(offs[-1]), dtype=bool)  # windows drawn already
        if min_std > 0:  # windows the contrast pre-filter rejects are never negatives
            for q in range(len(pair_img)):
                II = _integral(pyrs[pair_img[q]][pair_lv[q]][2])
                flat = window_std_map(II, win, st).ravel() < min_std
                used[offs[q] : offs[q + 1]] = flat

        def rows(ids):
            """Features of the windows with global ids ``ids``, one batch per level."""
            out = np.empty((len(ids), feats.n_features), dtype=np.float32)
            pr = np.searchsorted(offs, ids, side="right") - 1
            k = ids - offs[pr]
            for q in np.unique(pr):
                sel = np.flatnonzero(pr == q)
                II = _integral(pyrs[pair_img[q]][pair_lv[q]][2])
                nc = shapes[q, 1]
                out[sel] = feats.windows(II, (k[sel] // nc) * st, (k[sel] % nc) * st)
            return out

        def draw(cand, n):
            """At most ``n`` of the window ids ``cand`` not drawn yet, at random."""
            cand = cand[~used[cand]]
            if n <= 0 or not len(cand):
                return np.zeros(0, dtype=np.int64)
            take = np.sort(rng.choice(cand, min(int(n), len(cand)), replace=False))
            used[take] = True
            return take

        def all_ids(hold_side):
            sel = np.flatnonzero(val_img[pair_img] == hold_side)
            if not len(sel):
                return np.zeros(0, dtype=np.int64)
            return np.concatenate([np.arange(offs[q], offs[q + 1]) for q in sel])

        neg0 = [draw(all_ids(False), n_tr_neg), draw(all_ids(True), n_val_neg)]
        Xp = feats.transform(faces)
        hold_p = np.zeros(len(faces), dtype=bool)
        if groups is not None:
            groups = np.asarray(groups).ravel()
            if groups.shape != (len(faces),):
                raise ValueError(f"groups must have one label per face ({len(faces)})")
        if val_img.any():
            if groups is None:
                k = round(vf * len(faces))
                if 1 <= k < len(faces):
                    hold_p[rng.choice(len(faces), k, replace=False)] = True
            else:
                ug = np.unique(groups)
                k = round(vf * len(ug))
                if 1 <= k < len(ug):
                    hold_p = np.isin(groups, rng.choice(ug, k, replace=False))
        Xn = [rows(neg0[0]), rows(neg0[1])]
        X = np.vstack([Xp, Xn[0], Xn[1]])
        y = np.concatenate([np.ones(len(Xp)), np.zeros(len(Xn[0]) + len(Xn[1]))])
        hold = np.concatenate([hold_p, np.zeros(len(Xn[0]), bool), np.ones(len(Xn[1]), bool)])
        kept = [X[y == 0]] if self.keep_negatives else None
        state = {"n_boot": 0, "scan_seconds": 0.0}

        scanner = _IncrementalScan(
            lambda q: _integral(pyrs[pair_img[q]][pair_lv[q]][2]), shapes, feats, st, min_std
        )

        def negatives(passes, n_train, n_val):
            # the windows of the negative images passing the cascade so far (compiled,
            # early exit; only the new stage on the windows alive after the previous
            # ones), then draw the requested counts from them
            t0 = time.perf_counter()
            alive = scanner.update(compile_cascade(_Partial(*passes.stages)))
            state["scan_seconds"] += time.perf_counter() - t0
            found = np.concatenate([offs[q] + ids for q, ids in enumerate(alive)])
            on_val = val_img[pair_img[np.searchsorted(offs, found, side="right") - 1]]
            take = [draw(found[~on_val], n_train), draw(found[on_val], n_val)]
            ids = np.concatenate(take)
            if not len(ids):
                return np.zeros((0, feats.n_features)), np.zeros(0, dtype=bool)
            Z = rows(ids)
            if kept is not None:
                kept.append(Z)
            state["n_boot"] += len(Z)
            if self.verbose:
                print(
                    f"[haar] {len(found)} windows pass; bootstrapped {len(Z)} negatives",
                    flush=True,
                )
            flags = np.concatenate([np.zeros(len(take[0]), bool), np.ones(len(take[1]), bool)])
            return Z.astype(np.float64), flags

        casc = clone(self.cascade) if self.cascade is not None else _default_cascade()
        casc.set_params(validation_fraction=0.0)
        mask = hold if hold.any() else None
        self.cascade_ = casc.fit(X.astype(np.float64), y, validation_mask=mask, negatives=negatives)
        self.n_positives_ = len(faces)
        self.n_bootstrapped_ = int(state["n_boot"])
        self.bootstrap_scan_ = {
            "seconds": float(state["scan_seconds"]),
            "weak_evaluated": int(scanner.n_evaluated),
            "windows": int(offs[-1]),
        }
        self.negatives_ = np.vstack(kept) if kept is not None else None
        self.converged_ = bool(self.cascade_.converged_)
        return self

    # ------------------------------------------------------------------ predict
    def _check(self):
        check_is_fitted(self, "cascade_")

    def decision_function(self, crops) -> np.ndarray:
        """Cascade scores of window-size crops (positive iff accepted)."""
        self._check()
        s = self.cascade_.decision_function(self.features_.transform(crops).astype(np.float64))
        if self.min_std_ > 0:  # the contrast pre-filter, as the scan applies it
            s[_crop_std(np.asarray(crops)) < self.min_std_] = -float(self.cascade_.n_stages_)
        return s

    def scan(self, image):
        """Every window of every pyramid level of ``image``: ``(boxes (n, 4), scores (n,),
        depth (n,), n_evaluated)`` -- boxes ``(x, y, w, h)`` in image pixels, cascade
        scores, stages passed and the weak classifiers evaluated in all."""
        self._check()
        stages = compile_cascade(self.cascade_)
        K = len(stages[5])
        B, S, D, ne = [], [], [], 0
        win, st = int(self.window), int(self.stride)
        for sx, sy, img in self._levels(image):
            depth, margin, n = haar_cascade_scan(
                _integral(img), self.features_, stages, st, self.min_std_
            )
            ne += n
            rr, cc = np.mgrid[0 : depth.shape[0], 0 : depth.shape[1]]
            b = np.stack(
                [
                    cc.ravel() * st / sx,
                    rr.ravel() * st / sy,
                    np.full(depth.size, win / sx),
                    np.full(depth.size, win / sy),
                ],
                1,
            )
            B.append(b)
            S.append(_scores(depth.ravel(), margin.ravel(), K))
            D.append(depth.ravel())
        if not B:
            return np.zeros((0, 4)), np.zeros(0), np.zeros(0, dtype=np.int64), 0
        return np.vstack(B), np.concatenate(S), np.concatenate(D), int(ne)

    def detect(self, image):
        """``(boxes, scores)`` of the windows accepted by the cascade after non-maximum
        suppression, best first."""
        b, s, d, ne = self.scan(image)
        self.last_scan_ = {"windows": len(s), "weak_evaluated": ne}
        keep = d == self.cascade_.n_stages_
        b, s = b[keep], s[keep]
        k = nms(b, s, float(self.nms_threshold), max_keep=int(self.max_detections))
        return b[k], s[k]

    def predict(self, images):
        """List of ``(boxes, scores)``, one per image."""
        return [self.detect(img) for img in images]

    # ------------------------------------------------------------------ persistence
    def _get_state(self):
        self._check()
        cmeta, carrays = self.cascade_._get_state()
        params = json_params(self, drop=("cascade",))
        meta = {
            "params": params,
            "cascade": cmeta,
            "n_positives": int(self.n_positives_),
            "n_bootstrapped": int(self.n_bootstrapped_),
            "min_std": float(self.min_std_),
        }
        arrays = {f"cascade.{k}": v for k, v in carrays.items()}
        arrays["rects"] = self.features_.rects
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        sub = {k[8:]: v for k, v in arrays.items() if k.startswith("cascade.")}
        cas = BoostedCascade._from_state(meta["cascade"], sub)
        est = cls(**meta["params"], cascade=clone(cas))
        est.features_ = HaarFeatures.from_rects(arrays["rects"], int(est.window))
        if cas.n_features_in_ != est.features_.n_features:
            raise ValueError(
                f"model file is inconsistent: the cascade reads {cas.n_features_in_} "
                f"features, the file holds {est.features_.n_features}"
            )
        est.cascade_ = cas
        est.converged_ = bool(cas.converged_)
        est.n_positives_ = int(meta["n_positives"])
        est.n_bootstrapped_ = int(meta["n_bootstrapped"])
        est.min_std_ = float(meta.get("min_std", 0.0))  # files from before the pre-filter
        if not (np.isfinite(est.min_std_) and est.min_std_ >= 0):
            raise ValueError("model file is inconsistent: min_std must be finite and >= 0")
        est.negatives_ = None
        return est


def _crop_std(crops) -> np.ndarray:
    """Grey-level standard deviation of each window-size crop (uint8 in 0..255 or float
    in [0, 1]), in the units of :func:`window_std_map`."""
    a = np.asarray(crops)
    g = a.astype(np.float64) / (255.0 if a.dtype == np.uint8 else 1.0)
    return g.reshape(len(g), -1).std(axis=1)


class _Partial:
    """Stages of a cascade being fitted (``passes.stages``) in the form
    :func:`compile_cascade` reads."""

    def __init__(self, stumps, thresholds, chain):
        self.stumps_, self.thresholds_, self.chain_ = list(stumps), np.asarray(thresholds), chain


def _default_cascade() -> BoostedCascade:
    return BoostedCascade(
        n_stages=10,
        target_recall=0.9,
        target_far=1e-4,
        rule="two-point",
        max_weak=(2, 5, 10, 20, 50, 100, 200),
        max_bins=256,
    )
