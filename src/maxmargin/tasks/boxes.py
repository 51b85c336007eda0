"""Bounding-box outputs scored over sampled candidates: the Pascal-overlap task.

Shen, Lin & van den Hengel, "StructBoost: Boosting methods for predicting structured
output variables", IEEE TPAMI 36(10), 2014, Sec. 3.5 and 4.4, after Hare, Saffari & Torr,
"Struck: Structured output tracking with kernels", ICCV 2011.

An output is a box ``y = (x, y, w, h)`` (0-based, the box covers ``[x, x+w) x [y, y+h)``).
The loss is [Shen2014 eq. 21], ``Delta(y, y') = 1 - area(y n y') / area(y u y')``, and the joint
feature map is ``Psi(x, y) = Phi(x_y)``: the weak classifiers evaluated on the feature
vector of the image patch under ``y``.  Exact prediction ([Shen2014 eq. 2]) and the loss-augmented
oracle ([Shen2014 eq. 12]) over all boxes are replaced, as in Struck and the paper, by a search over
a finite set of sampled candidate boxes.  A training example is therefore a
:class:`BoxCandidates` -- the candidate boxes of one image and their patch features, the
true box among them -- and its outputs are the candidate indices, so the task lists its
outputs densely (``n_outputs`` = candidates per example) and StructBoost's fast smoothed
master applies.

Weak inputs are the patch feature vectors of all candidates of all examples, one row per
(example, candidate).  For a weak classifier ``phi`` (single slot),
``dpsi(i, k) = phi(z_(i, y_i)) - phi(z_(i, k))`` and the signed weights of the dual
``mu_(i, k)`` are ``+sum_k mu_(i, k)`` on the true box's row and ``-mu_(i, k)`` on row
``(i, k)``: the ground truth is the positive sample and the violators the negatives.

Examples with fewer candidates than the largest are padded with copies of their true box
(loss 0, ``dpsi = 0``: a padded output never violates and never enters a plane).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from maxmargin.tasks.base import DualPairs, OracleResult, StructuredTask

__all__ = [
    "BoxCandidates",
    "BoxTask",
    "box_overlap",
    "pairwise_overlap",
    "sample_boxes",
    "unique_boxes",
]


def _as_boxes(b, name="boxes") -> np.ndarray:
    b = np.asarray(b, dtype=np.float64)
    if b.ndim == 1:
        b = b[None, :]
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"{name} must have shape (n, 4) as (x, y, w, h), got {b.shape}")
    return b


def box_overlap(a, b) -> np.ndarray:
    """Pascal overlap (intersection over union) of boxes ``a`` and ``b`` row by row.

    ``a`` and ``b`` are (n, 4) or (4,) arrays ``(x, y, w, h)`` and broadcast against
    each other (one box against many).  Boxes of zero area have overlap 0.
    """
    a, b = _as_boxes(a, "a"), _as_boxes(b, "b")
    iw = np.minimum(a[:, 0] + a[:, 2], b[:, 0] + b[:, 2]) - np.maximum(a[:, 0], b[:, 0])
    ih = np.minimum(a[:, 1] + a[:, 3], b[:, 1] + b[:, 3]) - np.maximum(a[:, 1], b[:, 1])
    inter = np.clip(iw, 0.0, None) * np.clip(ih, 0.0, None)
    union = a[:, 2] * a[:, 3] + b[:, 2] * b[:, 3] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    return out


def pairwise_overlap(a, b) -> np.ndarray:
    """Overlap of every box in ``a`` (n, 4) with every box in ``b`` (k, 4), shape (n, k)."""
    a, b = _as_boxes(a, "a"), _as_boxes(b, "b")
    iw = np.minimum((a[:, 0] + a[:, 2])[:, None], (b[:, 0] + b[:, 2])[None]) - np.maximum(
        a[:, 0][:, None], b[:, 0][None]
    )
    ih = np.minimum((a[:, 1] + a[:, 3])[:, None], (b[:, 1] + b[:, 3])[None]) - np.maximum(
        a[:, 1][:, None], b[:, 1][None]
    )
    inter = np.clip(iw, 0.0, None) * np.clip(ih, 0.0, None)
    union = (a[:, 2] * a[:, 3])[:, None] + (b[:, 2] * b[:, 3])[None] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def boxes_at_offsets(b, dx, dy, scales, radius: float, H: int, W: int) -> list[np.ndarray]:
    """Per scale that fits the image: the boxes of ``b``'s size times the scale whose
    centres sit at ``b``'s centre plus the offsets ``(dx, dy)``, rounded to whole pixels
    and kept inside the image and the disc of ``radius`` (rounding may move a centre by
    up to 0.5 px per axis).  The placement shared by :func:`sample_boxes` and the
    tracker's fixed training grid."""
    cx, cy = b[0] + b[2] / 2.0, b[1] + b[3] / 2.0
    out = []
    for s in scales:
        w = max(1.0, float(np.round(b[2] * s)))
        h = max(1.0, float(np.round(b[3] * s)))
        if w > W or h > H:
            continue
        x = np.round(cx + dx - w / 2.0)
        y = np.round(cy + dy - h / 2.0)
        d2 = (x + w / 2.0 - cx) ** 2 + (y + h / 2.0 - cy) ** 2
        ok = (x >= 0) & (y >= 0) & (x + w <= W) & (y + h <= H) & (d2 <= radius**2 + 1e-9)
        out.append(np.stack([x[ok], y[ok], np.full(ok.sum(), w), np.full(ok.sum(), h)], axis=1))
    return out


def unique_boxes(cand) -> np.ndarray:
    """The rows of ``cand`` (k, 4) without duplicates, each at its first occurrence, in
    their order: ``cand[np.sort(np.unique(cand, axis=0, return_index=True)[1])]``.  Boxes
    of whole pixels in [0, 2^16) (every sampled candidate) are keyed by one integer per
    box, a 1-d unique instead of the row-wise one (which sorts rows as records: about
    20 times slower on the tracker's 2000 candidates); other boxes take the row-wise
    unique."""
    cand = np.asarray(cand, dtype=np.float64)
    if len(cand) < 2:
        return cand
    small = np.all((cand >= 0) & (cand < 65536) & (cand == np.floor(cand)))
    if small:
        v = cand.astype(np.uint64)
        key = ((v[:, 0] << 48) | (v[:, 1] << 32)) | ((v[:, 2] << 16) | v[:, 3])
        _, first = np.unique(key, return_index=True)
    else:
        _, first = np.unique(cand, axis=0, return_index=True)
    return cand[np.sort(first)]


def sample_boxes(
    box,
    n: int,
    radius: float,
    image_shape,
    *,
    scales=(1.0,),
    method: str = "grid",
    rng=None,
    include_center: bool = True,
) -> np.ndarray:
    """About ``n`` boxes around ``box`` whose centre moved by at most ``radius`` pixels.

    Every returned box lies inside the image (``image_shape = (height, width, ...)``)
    and has integer ``x, y``; widths and heights are ``box``'s times each of ``scales``
    (rounded, kept at least 1).  ``method="grid"``: translations on a regular grid of
    step ``max(1, sqrt(pi r^2 |scales| / n))`` (rounded to whole pixels) inside the disc
    (Struck's dense search, deterministic); ``"random"``: translations drawn uniformly in
    the disc; ``"polar"``: uniform angle and uniform distance from the centre, so denser
    near the box (like Struck's polar training grid).  With ``include_center`` the box
    itself (rounded and clipped into the image) comes first.
    Returns (k, 4), k <= about n, without duplicates.
    """
    b = _as_boxes(box, "box")[0]
    H, W = int(image_shape[0]), int(image_shape[1])
    if not (b[2] > 0 and b[3] > 0):
        raise ValueError(f"box must have positive size, got {tuple(b)}")
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
    n = max(int(n), 1)
    per_scale = max(1, int(np.ceil(n / len(scales))))
    if method == "grid":
        step = max(1.0, float(np.sqrt(np.pi * radius**2 / per_scale)))
        r = int(np.floor(radius / step))
        g = np.arange(-r, r + 1) * step
        dx, dy = np.meshgrid(g, g)
        dx, dy = dx.ravel(), dy.ravel()
        keep = dx**2 + dy**2 <= radius**2 + 1e-9
        dx, dy = dx[keep], dy[keep]
    elif method in ("random", "polar"):
        rng = np.random.default_rng(rng)
        k = 2 * per_scale + 8
        u = rng.random(k)
        rho = radius * (np.sqrt(u) if method == "random" else u)
        th = 2 * np.pi * rng.random(k)
        dx, dy = rho * np.cos(th), rho * np.sin(th)
    else:
        raise ValueError(f"method must be 'grid', 'random' or 'polar', got {method!r}")
    out = [
        cand if method == "grid" else cand[:per_scale]
        for cand in boxes_at_offsets(b, dx, dy, scales, radius, H, W)
    ]
    cand = np.concatenate(out) if out else np.zeros((0, 4))
    if include_center:
        w = min(max(1.0, float(np.round(b[2]))), W)
        h = min(max(1.0, float(np.round(b[3]))), H)
        c = np.array([[np.clip(np.round(b[0]), 0, W - w), np.clip(np.round(b[1]), 0, H - h), w, h]])
        cand = np.concatenate([c, cand])
    return unique_boxes(cand)


@dataclass
class BoxCandidates:
    """Candidate boxes of one image with their patch features.

    boxes : (k, 4) array ``(x, y, w, h)``.
    features : (k, d) array, the feature vector ``Phi``-input of each box's patch
        (float, or uint8 bin codes: when every image's features are uint8 the task's
        weak inputs stay uint8, e.g. for :class:`~maxmargin.weak.CodedStump`).
    """

    boxes: np.ndarray
    features: np.ndarray


def _check_candidates(c, d=None) -> BoxCandidates:
    if not isinstance(c, BoxCandidates):
        raise ValueError(f"box inputs must be BoxCandidates, got {type(c).__name__}")
    B = _as_boxes(c.boxes)
    Fe = np.asarray(c.features)
    if Fe.dtype != np.uint8:  # uint8: bin codes, kept as they are (1/8 of the memory)
        Fe = np.asarray(Fe, dtype=np.float64)
    if Fe.ndim != 2 or Fe.shape[0] != B.shape[0] or B.shape[0] < 1:
        raise ValueError(
            f"features must have shape ({B.shape[0]}, d) matching the boxes, got {Fe.shape}"
        )
    if d is not None and Fe.shape[1] != d:
        raise ValueError(f"features have {Fe.shape[1]} columns, expected {d}")
    if Fe.dtype != np.uint8 and not np.all(np.isfinite(Fe)):
        raise ValueError("features contain NaN or inf")
    if np.any(B[:, 2] <= 0) or np.any(B[:, 3] <= 0):
        raise ValueError("candidate boxes must have positive width and height")
    return BoxCandidates(B, Fe)


class BoxTask(StructuredTask):
    """Box prediction over sampled candidates with the Pascal-overlap loss ([Shen2014 eq. 21]).

    ``X`` is a list of :class:`BoxCandidates` (one per image), ``y`` the index of the
    true box in each (integers).  Predicted outputs are candidate indices; use
    :meth:`predict_boxes` for the boxes.  One slot; outputs are listed densely, so both
    the fast (smoothed) and the exact masters of StructBoost apply, and
    :meth:`linear_model` gives the linear joint features for the 1-slack structured SVM
    (a Struck-style linear tracker).
    """

    #: inputs are lists of BoxCandidates, validated here
    structured_inputs = True

    def __init__(self) -> None:
        pass

    # -- binding ---------------------------------------------------------------------
    def _bind(self, X, y) -> None:
        if isinstance(X, BoxCandidates):
            raise ValueError("X must be a list of BoxCandidates, not a single one")
        cs = [_check_candidates(c) for c in X]
        if not cs:
            raise ValueError("need at least one training image")
        d = cs[0].features.shape[1]
        cs = [_check_candidates(c, d) for c in cs]
        y = np.asarray(y).ravel()
        if len(y) != len(cs):
            raise ValueError(f"X has {len(cs)} images but y has {len(y)} true boxes")
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError("y must hold the integer index of the true box in each image")
        sizes = np.array([len(c.boxes) for c in cs])
        if np.any(y < 0) or np.any(y >= sizes):
            raise ValueError("true-box index out of range of the candidates")
        m, K = len(cs), int(sizes.max())
        codes = all(c.features.dtype == np.uint8 for c in cs)
        B = np.empty((m, K, 4))
        if codes:
            # bin codes are laid out feature-major ((m K, d) in Fortran order): the
            # coded stump's search reads them so without a transposed copy of the whole
            # window, and a stump's outputs read one contiguous column; images stored in
            # Fortran order (an online tracker's frames) are copied column by column
            Zt = np.empty((d, m * K), dtype=np.uint8)
            for i, c in enumerate(cs):  # one copy per image (no loop over boxes)
                k = len(c.boxes)
                Zt[:, i * K : i * K + k] = c.features.T
                Zt[:, i * K + k : (i + 1) * K] = c.features[y[i]][:, None]
                B[i, :k], B[i, k:] = c.boxes, c.boxes[y[i]]
            self._Z = Zt.T
        else:
            Z = np.empty((m, K, d), dtype=np.float64)
            for i, c in enumerate(cs):  # one copy per image (no loop over boxes)
                k = len(c.boxes)
                Z[i, :k], B[i, :k] = c.features, c.boxes
                Z[i, k:], B[i, k:] = c.features[y[i]], c.boxes[y[i]]
            self._Z = Z.reshape(m * K, d)
        self.y_ = y.astype(np.int64)
        self.boxes_ = B
        self.n_samples, self.n_slots, self.n_outputs = m, 1, K
        self.n_features_ = d
        true = B[np.arange(m), self.y_]  # (m, 4)
        self.losses_ = 1.0 - box_overlap(B.reshape(m * K, 4), np.repeat(true, K, axis=0)).reshape(
            m, K
        )
        self.losses_[np.arange(m), self.y_] = 0.0
        self._true_row = np.arange(m) * K + self.y_

    # -- weak learners ---------------------------------------------------------------
    def weak_inputs(self) -> np.ndarray:
        return self._Z

    def weak_weights(self, duals: DualPairs) -> np.ndarray:
        K = int(self.n_outputs)
        n = len(self._Z)
        pos = np.bincount(self._true_row[duals.sample], weights=duals.value, minlength=n)
        neg = np.bincount(duals.sample * K + duals.label, weights=duals.value, minlength=n)
        return (pos - neg)[:, None]

    def select_columns(self, gains, threshold):
        return [(0, np.array([0]))] if gains[0] > threshold else []

    def joint_difference(self, outputs, slots, pairs):
        K = int(self.n_outputs)
        return outputs[:, self._true_row[pairs.sample]] - outputs[:, pairs.sample * K + pairs.label]

    # -- oracles ---------------------------------------------------------------------
    def slot_scores_to_label_scores(self, F):
        return np.asarray(F)[:, 0].reshape(self.n_samples, int(self.n_outputs))

    def dense_losses(self):
        return self.losses_

    def dense_margins(self, F):
        S = self.slot_scores_to_label_scores(F)
        own = S[np.arange(self.n_samples), self.y_]
        return self.losses_ + S - own[:, None]

    def dense_weak_weights(self, Mu):
        A = -np.asarray(Mu, dtype=np.float64)
        A[np.arange(self.n_samples), self.y_] += Mu.sum(axis=1)
        return A.reshape(-1, 1)

    def loss_augmented(self, F):
        S = self.slot_scores_to_label_scores(F)
        rows = np.arange(self.n_samples)
        own = S[rows, self.y_]
        label = np.argmax(self.losses_ + S, axis=1)
        return OracleResult(
            label=label, loss=self.losses_[rows, label], margin=own - S[rows, label]
        )

    def evaluate_outputs(self, F, label):
        S = self.slot_scores_to_label_scores(F)
        rows = np.arange(self.n_samples)
        label = np.asarray(label, dtype=np.int64)
        return OracleResult(
            label=label,
            loss=self.losses_[rows, label],
            margin=S[rows, self.y_] - S[rows, label],
        )

    def initial_violators(self, rng):
        L = self.losses_
        best = L == L.max(axis=1, keepdims=True)
        label = np.argmax(best * (1.0 + rng.random(best.shape)), axis=1)
        rows = np.arange(self.n_samples)
        return OracleResult(label=label, loss=L[rows, label], margin=np.zeros(len(label)))

    def predict_codes(self, F):
        return np.argmax(self.slot_scores_to_label_scores(F), axis=1)

    # -- prediction on new candidate sets --------------------------------------------
    def prediction_layout(self, X):
        """Candidate sets of new images and their stacked features (rows = boxes)."""
        cs = [X] if isinstance(X, BoxCandidates) else list(X)
        cs = [_check_candidates(c, self.n_features_) for c in cs]
        sizes = np.array([len(c.boxes) for c in cs])
        return (cs, sizes), np.concatenate([c.features for c in cs])

    def predict_from_scores(self, layout, F) -> list[np.ndarray]:
        """The best-scoring candidate box of every image ([Shen2014 eq. 2] over the candidates)."""
        cs, sizes = layout
        f = np.asarray(F)[:, 0]
        off = np.concatenate([[0], np.cumsum(sizes)])
        return [c.boxes[np.argmax(f[a:b])] for c, a, b in zip(cs, off[:-1], off[1:])]

    # -- the linear joint features for the structured SVM ------------------------------
    linear_ssvm = True

    @property
    def n_features_in(self) -> int:
        return int(self.n_features_)

    def predict_linear(self, X, w) -> list[np.ndarray]:
        """The best candidate box of every image under linear weights ``w``."""
        layout, Z = self.prediction_layout(X)
        return self.predict_from_scores(layout, (Z @ w)[:, None])

    def linear_model(self) -> BoxLinearModel:
        return BoxLinearModel(self)

    def _get_state(self):
        return {}, {"n_features": np.array(self.n_features_)}

    def _set_state(self, meta, arrays):
        self.n_features_ = int(arrays["n_features"])
        self.n_slots = 1


class BoxLinearModel:
    """Linear joint features ``Psi(x, y) = z_y`` of a bound :class:`BoxTask` for the
    1-slack SSVM solver (the linear-kernel Struck of Hare et al., ICCV 2011)."""

    pairwise = False

    def __init__(self, task: BoxTask) -> None:
        self.task = task
        self.n_samples = task.n_samples
        self.K = int(task.n_outputs)
        self.dim = task.n_features_
        self.Z = np.asarray(task._Z, dtype=np.float64).reshape(self.n_samples, self.K, self.dim)
        self.y = task.y_
        self.n_positions = self.n_samples
        self.n_features, self.n_slots, self.n_states = self.dim, 1, self.K

    def check_rescaling(self, rescaling):
        if rescaling != "margin":
            raise ValueError("box models support only rescaling='margin'")

    def unary(self, w, X=None):
        return self.Z @ w  # (m, K) scores

    def loss_augmented(self, w, rescaling="margin", U=None):
        S = self.unary(w) if U is None else U
        rows = np.arange(self.n_samples)
        lab = np.argmax(self.task.losses_ + S, axis=1)
        return lab, self.task.losses_[rows, lab], S[rows, self.y] - S[rows, lab]

    def evaluate(self, w, labels, U=None):
        S = self.unary(w) if U is None else U
        rows = np.arange(self.n_samples)
        labels = np.asarray(labels, dtype=np.int64)
        return self.task.losses_[rows, labels], S[rows, self.y] - S[rows, labels]

    def plane(self, labels, coef):
        """``sum_i coef_i dPsi_i(labels_i)`` with ``dPsi_i(k) = z_(i, y_i) - z_(i, k)``."""
        rows = np.arange(self.n_samples)
        c = np.asarray(coef, dtype=np.float64)
        return c @ (self.Z[rows, self.y] - self.Z[rows, labels])

    def objective(self, w, C, hinge):
        return 0.5 * float(w @ w) + C * float(np.mean(hinge))

    def predict(self, w, X) -> list[np.ndarray]:
        (cs, sizes), Z = self.task.prediction_layout(X)
        return self.task.predict_from_scores((cs, sizes), (Z @ w)[:, None])
