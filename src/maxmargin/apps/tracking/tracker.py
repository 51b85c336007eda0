"""Online single-object trackers with an OpenCV-like API: ``init(frame, box)``, then
``update(frame) -> box`` for every following frame.

:class:`StructBoostTracker` is the tracker of Shen, Lin & van den Hengel, "StructBoost:
Boosting methods for predicting structured output variables", IEEE TPAMI 36(10), 2014,
Sec. 4.4: the box of each frame is the best-scoring of about 2000 candidate boxes
sampled around the previous one ([Shen2014 eq. 2] over the candidates), the frame then becomes a
training example of the Pascal-overlap box task (:class:`~maxmargin.tasks.boxes.BoxTask`,
about 200 candidate boxes around the new box, the box itself the truth), and StructBoost
with decision stumps is re-trained every 2 frames on the last 60 frames, warm-started
from the previous model.  The baselines share the same sampling and features:

* :class:`AdaBoostTracker` -- the paper's binary AdaBoost tracker: candidates with
  overlap > 0.8 with the frame's box are positives, <= 0.3 negatives, discrete AdaBoost
  (Freund & Schapire, "A decision-theoretic generalization of on-line learning and an
  application to boosting", JCSS 1997) with 500 stumps;
* :class:`SSVMTracker` -- a Struck-style linear structured SVM (Hare, Saffari & Torr,
  "Struck: Structured output tracking with kernels", ICCV 2011) on the same box task,
  trained by the project's 1-slack cutting-plane solver on a window of the last 50
  frames (Struck's "budget" limits support vectors; a frame window is the simpler
  stand-in used here).

Boxes are 0-based ``(x, y, w, h)`` floats.  Frames are (H, W) grey or (H, W, 3) colour
arrays (uint8 or float in [0, 1]).
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from dataclasses import dataclass, fields

import numpy as np
from sklearn.base import BaseEstimator

from maxmargin._registry import register
from maxmargin._validation import (
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Options,
    as_generator,
    check_number,
    validate_params,
)
from maxmargin.apps.tracking.data import check_box
from maxmargin.apps.tracking.features import FeatureQuantizer, PatchFeatures, to_grey
from maxmargin.apps.tracking.scale import ScaleFilter
from maxmargin.learners.binary_adaboost import discrete_adaboost
from maxmargin.learners.ssvm import StructSVM
from maxmargin.learners.structboost import StructBoost
from maxmargin.tasks.boxes import (
    BoxCandidates,
    BoxTask,
    box_overlap,
    boxes_at_offsets,
    sample_boxes,
    unique_boxes,
)
from maxmargin.weak import CodedStump, Stumps, make_weak_learner

__all__ = [
    "SAMPLING_PARAMS",
    "AdaBoostTracker",
    "SSVMTracker",
    "Sampling",
    "StructBoostTracker",
    "coarse_to_fine",
    "fixed_warp_params",
    "make_tracker",
    "overlap_strata_boxes",
    "polar_grid_boxes",
    "warp_frame",
]


@dataclass(frozen=True)
class Sampling:
    """The tracking protocol shared by every tracker: candidate sampling, search, the
    training window and the optional drift remedies.  A frozen (immutable) value: a
    tracker keeps the one it is given, ``dataclasses.replace`` or :meth:`replace` makes a
    changed copy, and scikit-learn's ``clone`` / ``get_params`` / ``set_params`` see it as
    one parameter (``tracker.set_params(sampling__n_predict=500)`` replaces it).

    Parameters
    ----------
    features : str, default="raw+hog"
        Patch features (:class:`~maxmargin.apps.tracking.features.PatchFeatures`).
    n_predict : int, default=2000
        Candidates scored per frame, on a grid within ``search_radius`` px.
    n_train : int, default=200
        Candidates per training frame, denser near the box, within ``train_radius``.
    search_radius : float, default=30
        Radius (px) of the search disc around the previous box.
    train_radius : float or None, default=None
        Radius of the training candidates; None: twice ``search_radius``.
    window : int, default=60
        Frames kept for training.
    retrain_every : int, default=2
        Re-training period in frames.
    scales : tuple of float, default=(1.0,)
        Relative box sizes searched (and sampled for training) at every frame.
    keep_labelled : bool, default=False
        Keep the labelled initial frames (and their warped copies) in every training set.
    velocity : float in [0, 1], default=0
        Constant-velocity prior: the search disc moves by ``velocity`` times the last move.
    top_k : int, default=1
        Sub-pixel box: score-weighted mean of the ``top_k`` best candidates (1: argmax).
    n_train_labelled : int or None, default=None
        Candidates per labelled initial frame (None: ``n_train``).
    scale_step, scale_margin : float, default=0
        Scale search after the translation search (off when ``scale_step`` is 0): sizes
        ``1 -+ scale_step`` times the current one, adopted when their score beats the
        box's by ``scale_margin`` times the recent median score (with StructBoost the
        size shrank on Girl; docs/benchmarks.md, "Third session").
    redetect : float or None, default=None; redetect_radius : float, default=90
        Re-detection below ``redetect`` times the recent median score, coarse to fine
        within ``redetect_radius`` px (:func:`coarse_to_fine`); with StructBoost it
        jumped to background on Coke and Tiger1.
    ncc_radius : float, default=0
        A second search disc at the normalised cross-correlation match of the previous
        box's patch within ``ncc_radius`` px; off when 0 (StructBoost, ``ncc_radius=60``,
        seeds 0-11: +0.04 overlap on Tiger1, +0.01 on Girl, -0.04 on Coke).
    augment : int, default=0
        Warped copies (:func:`warp_frame`) of every labelled frame in the first
        training set.
    warps : {"random", "fixed"}, default="random"
        How the ``augment`` copies are warped: ``"random"`` draws each copy's rotation,
        scaling, shift and noise from the tracker's random generator (a seed changes
        them); ``"fixed"`` takes copy ``k``'s from :func:`fixed_warp_params` (a
        low-discrepancy design over the same ranges) and its noise from a generator
        seeded by ``k``: the same copies for every seed.
    motion_radius : float, default=0
        Motion-adaptive search: the search disc widens to ``motion_radius`` times the
        last frame-to-frame move (at most 3x ``search_radius``), sampled as densely.
    train_method : {"polar", "polar_grid", "overlap_strata"}, default="polar"
        How a training frame's ``n_train`` boxes are placed within ``train_radius``:
        ``"polar"`` draws uniform angles and distances (denser near the box, random);
        ``"polar_grid"`` puts them at fixed places of the same density
        (:func:`polar_grid_boxes`, a golden-angle spiral): the same boxes for every seed;
        ``"overlap_strata"`` picks them, also at fixed places, evenly from ten strata of
        overlap with the box (:func:`overlap_strata_boxes`).
    support_frames : int, default=0
        Support frames: up to this many self-labelled frames that leave the window are
        kept in every later training set, those whose box scored highest relative to the
        median score of the frames before them (a lower-scoring kept frame gives way to
        a higher-scoring leaving one).  Off when 0.
    motion_prior : float, default=0
        Displacement prior on the search: the box is the candidate maximising
        ``s(y) - motion_prior * (max s - min s) * ||c(y) - c_pred||^2 / r^2`` with ``r =
        max(search_radius, 1)`` (``s`` the model's scores of this frame's candidates,
        ``c(y)`` a candidate's centre, ``c_pred`` the search centre: the previous centre
        plus ``velocity`` times the last move); with ``top_k > 1`` the weighted mean of
        the top candidates ranks and weights them by these penalised scores.  In units of
        the frame's score range, so the same value means the same for every tracker; off
        when 0.  ``score_`` and ``candidate_scores_`` stay the model's own scores.
    jump_gate : float or None, default=None
        Self-labelling gate on motion: a tracked frame whose box centre lies more than
        ``jump_gate * search_radius`` px from ``c_pred`` is not added to the training
        window (the box is still returned; counted in ``n_jumps_`` and ``n_skipped_``).
        Off when None.
    consensus : int, default=1
        Consensus first model: ``consensus - 1`` more first models are trained at
        :meth:`init` (each a copy of the tracker with its own random generator, so its
        own warped copies of the labelled frames, and its first box moved by
        ``consensus_jitter``), and for the first ``consensus_frames`` tracked frames the
        box is the candidate maximising the mean over the ``consensus`` models of each
        model's scores of the frame's candidates rescaled to [0, 1] (a model whose
        scores are all equal adds nothing).  Every model is then trained on that box
        (the same self-labels, each its own re-trainings); after ``consensus_frames``
        frames the extra models are dropped and the tracker's own model goes on alone.
        ``score_`` and ``candidate_scores_`` stay the tracker's own model's.  Off when 1.
    consensus_frames : int, default=10
        Tracked frames over which the ``consensus`` models choose the box.
    consensus_jitter : float, default=0
        The extra first models' first boxes are the given box moved by this many px in
        evenly spaced directions (model ``k`` of ``m = consensus - 1``: angle ``2 pi
        (k - 1) / m``), rounded to whole pixels (a box moved off the image is put back
        on its border, as the given box is clipped into it); 0: the given box.
    consensus_jitter_ref : float or None, default=None
        When set, the jitter shrinks for small targets: the first boxes move
        ``consensus_jitter * min(1, s / consensus_jitter_ref)`` px, ``s`` the given
        box's smaller side (a move of a fixed number of pixels is a larger error on a
        smaller target).  None: ``consensus_jitter`` px whatever the size.
    """

    features: str = "raw+hog"
    n_predict: int = 2000
    n_train: int = 200
    search_radius: float = 30.0
    train_radius: float | None = None
    window: int = 60
    retrain_every: int = 2
    scales: tuple = (1.0,)
    keep_labelled: bool = False
    velocity: float = 0.0
    top_k: int = 1
    n_train_labelled: int | None = None
    scale_step: float = 0.0
    scale_margin: float = 0.0
    redetect: float | None = None
    redetect_radius: float = 90.0
    ncc_radius: float = 0.0
    augment: int = 0
    motion_radius: float = 0.0
    train_method: str = "polar"
    support_frames: int = 0
    warps: str = "random"
    motion_prior: float = 0.0
    jump_gate: float | None = None
    consensus: int = 1
    consensus_frames: int = 10
    consensus_jitter: float = 0.0
    consensus_jitter_ref: float | None = None

    def __post_init__(self) -> None:
        sc = np.atleast_1d(np.asarray(self.scales, dtype=np.float64))
        if sc.ndim != 1 or len(sc) == 0 or not np.all(np.isfinite(sc)) or np.any(sc <= 0):
            raise ValueError(f"scales must be positive numbers, got {self.scales!r}")
        ok = isinstance(self.scales, tuple) and all(type(v) is float for v in self.scales)
        if not ok:  # keep a tuple of floats as given (clone checks the identity)
            object.__setattr__(self, "scales", tuple(float(v) for v in sc))
        if not isinstance(self.features, str):
            raise ValueError(f"features must be a string, got {self.features!r}")
        for name in ("n_predict", "n_train", "window", "retrain_every", "top_k"):
            check_number(name, getattr(self, name), low=1, low_open=False, integer=True)
        check_number(
            "n_train_labelled",
            self.n_train_labelled,
            low=1,
            low_open=False,
            integer=True,
            allow_none=True,
        )
        check_number("augment", self.augment, low=0, low_open=False, integer=True)
        check_number("support_frames", self.support_frames, low=0, low_open=False, integer=True)
        for name in ("consensus", "consensus_frames"):
            check_number(name, getattr(self, name), low=1, low_open=False, integer=True)
        check_number("consensus_jitter", self.consensus_jitter, low=0, low_open=False)
        check_number("consensus_jitter_ref", self.consensus_jitter_ref, low=0, allow_none=True)
        for name in ("search_radius", "redetect_radius"):
            check_number(name, getattr(self, name), low=0)
        check_number("train_radius", self.train_radius, low=0, allow_none=True)
        check_number("jump_gate", self.jump_gate, low=0, allow_none=True)
        for name in ("scale_margin", "ncc_radius", "motion_radius", "motion_prior"):
            check_number(name, getattr(self, name), low=0, low_open=False)
        for name in ("velocity", "redetect"):
            v = getattr(self, name)
            if v is None and name == "redetect":
                continue
            check_number(name, v)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v!r}")
        check_number("scale_step", self.scale_step, low=0, low_open=False)
        if not self.scale_step < 0.5:
            raise ValueError(f"scale_step must be in [0, 0.5), got {self.scale_step!r}")
        if self.train_method not in ("polar", "polar_grid", "overlap_strata"):
            raise ValueError(
                "train_method must be 'polar', 'polar_grid' or 'overlap_strata', got "
                f"{self.train_method!r}"
            )
        if self.warps not in ("random", "fixed"):
            raise ValueError(f"warps must be 'random' or 'fixed', got {self.warps!r}")
        if not isinstance(self.keep_labelled, (bool, np.bool_)):
            raise ValueError(f"keep_labelled must be a bool, got {self.keep_labelled!r}")

    def get_params(self, deep: bool = True) -> dict:
        """The fields as a dict (scikit-learn's nested-parameter protocol)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def replace(self, **changes) -> Sampling:
        """A copy with ``changes``; unknown names raise ValueError."""
        bad = set(changes) - {f.name for f in fields(self)}
        if bad:
            raise ValueError(
                f"unknown sampling parameter(s) {sorted(bad)}; valid: "
                f"{[f.name for f in fields(self)]}"
            )
        return dataclasses.replace(self, **changes)


#: the sampling parameter names (make_tracker routes these keywords into a Sampling)
SAMPLING_PARAMS = tuple(f.name for f in fields(Sampling))


class _OnlineBoxTracker(BaseEstimator):
    """Shared loop: candidate sampling, features, the training window, timing.

    A scikit-learn style estimator: constructor arguments are stored as given and checked
    (``_parameter_constraints``) at :meth:`init`; ``get_params`` / ``set_params`` /
    ``clone`` work, ``set_params(sampling__<name>=v)`` replaces the frozen
    :class:`Sampling`.
    """

    _parameter_constraints: dict = {
        "sampling": [Sampling],
        "random_state": RANDOM_STATE,
    }

    def set_params(self, **params):
        nested = {k.split("__", 1)[1]: v for k, v in params.items() if k.startswith("sampling__")}
        rest = {k: v for k, v in params.items() if not k.startswith("sampling__")}
        if rest:
            super().set_params(**rest)
        if nested:
            self.sampling = self.sampling.replace(**nested)
        return self

    def _check_params(self) -> None:
        validate_params(self)

    # -- public API ------------------------------------------------------------------
    def init(self, frame, box, labelled=()):
        """Start tracking ``box`` in ``frame``; ``labelled`` is an optional list of more
        ``(frame, box)`` pairs with known boxes (the paper initialises on the first 3
        labelled frames).  Trains the first model.  Returns self."""
        self._check_params()
        self._s = self.sampling
        self._rng = as_generator(self.random_state)
        self._encoded = False
        self._feat = PatchFeatures(self._s.features)
        self._pred_buf = np.empty(0)
        self._scales = tuple(np.atleast_1d(np.asarray(self._s.scales, dtype=np.float64)))
        self._data = deque(maxlen=int(self._window_size()))
        self._conf = deque(maxlen=int(self._window_size()))  # None: a labelled frame
        self._support: list = []  # support frames: (confidence, frame) beyond the window
        self.timing_ = {"features": 0.0, "predict": 0.0, "train": 0.0, "sampling": 0.0}
        self.n_frames_ = 0
        self.n_skipped_ = 0  # frames not used for training (confidence or jump gate)
        self.n_jumps_ = 0  # of them, frames refused by the jump gate
        self._n_added = 0
        self.n_trainings_ = 0
        self.n_redetections_ = 0  # frames searched over the wide window
        self.n_rescaled_ = 0  # frames whose box size changed
        self._frame_scores = deque(maxlen=20)  # final box scores of the last frames
        self.score_ = float("nan")
        grey = to_grey(frame)
        self._prev_grey = grey
        b = check_box(box, grey.shape)
        self.box_ = sample_boxes(b, 1, 0.0, grey.shape)[0]  # rounded, clipped inside
        self._base_size = self.box_[2:].copy()  # sizes are this times self.size_scale_
        self.size_scale_ = 1.0
        sf = getattr(self, "scale_filter", None)  # the separate scale model (DSST's)
        self._scale_model = None if sf is None else sf.start(grey, self.box_)
        # the centre's last displacement per frame (velocity prior), first from the
        # last labelled frame to the initial one
        self._motion = np.zeros(2)
        if len(labelled):
            lb = np.asarray(labelled[-1][1], dtype=np.float64).reshape(4)
            self._motion = (b[:2] + b[2:] / 2) - (lb[:2] + lb[2:] / 2)
        self._anchors = []
        # with keep_labelled the labelled frames stay in every training set
        into = self._anchors if self._s.keep_labelled else None
        known = [(to_grey(f), lb) for f, lb in labelled]
        known = [(g, sample_boxes(check_box(lb, g.shape), 1, 0.0, g.shape)[0]) for g, lb in known]
        known.append((grey, self.box_))
        for g, lb in known:
            self._add(g, lb, into)
            # warped copies of the labelled frame around its box (see warp_frame)
            n_aug = int(self._s.augment)
            fixed = fixed_warp_params(n_aug) if self._s.warps == "fixed" else None
            for k in range(n_aug):
                if fixed is None:
                    self._add(warp_frame(g, lb, self._rng), lb, into)
                else:
                    rng_k = np.random.default_rng(k)  # the copy's noise: the same every seed
                    self._add(warp_frame(g, lb, rng_k, params=fixed[k]), lb, into)
        t0 = time.perf_counter()
        self._init_encoding()
        self.timing_["features"] += time.perf_counter() - t0
        self._train(initial=True)
        self._members = self._consensus_members(frame, b, labelled)
        return self

    def _consensus_members(self, frame, box, labelled) -> list:
        """The extra first models of ``Sampling(consensus=)``: copies of this tracker
        (one model each, no scale filter), each with its own generator seeded from this
        tracker's and its first box moved by ``consensus_jitter`` (evenly spaced
        directions), initialised on the same frames."""
        m = int(self._s.consensus) - 1
        if m == 0:
            return []
        params = self.get_params(deep=False)
        params["sampling"] = self._s.replace(consensus=1)
        if "scale_filter" in params:
            params["scale_filter"] = None  # the box's size is this tracker's to choose
        jit = float(self._s.consensus_jitter)
        ref = self._s.consensus_jitter_ref
        if ref is not None:  # a smaller move on a target smaller than ref
            jit *= min(1.0, float(min(box[2], box[3])) / float(ref))
        H, W = self._prev_grey.shape[:2]
        members = []
        for k in range(m):  # one first model per step (each its own first training)
            th = 2.0 * np.pi * k / m
            mb = np.asarray(box, dtype=np.float64).copy()
            mb[:2] += np.round(jit * np.array([np.cos(th), np.sin(th)]))
            for j, size in ((0, W), (1, H)):  # moved off the image: onto its border (the
                if mb[j] + mb[j + 2] <= 0:  # member's init clips a box that overlaps it)
                    mb[j] = 0.0
                elif mb[j] >= size:
                    mb[j] = size - 1.0
            params["random_state"] = int(self._rng.integers(2**31))
            member = type(self)(**params)
            member.init(frame, mb, labelled=labelled)
            members.append(member)
        return members

    def update(self, frame) -> np.ndarray:
        """Track into ``frame``: returns the new box ``(x, y, w, h)``; ``score_`` holds its
        score and ``candidate_scores_`` / ``candidates_`` all candidates'."""
        if not hasattr(self, "box_"):
            raise RuntimeError("call init(frame, box) before update(frame)")
        grey = to_grey(frame)
        t0 = time.perf_counter()
        centre = self.box_.copy()
        if self._s.velocity > 0:  # constant-velocity prior on the search centre
            centre[:2] += self._s.velocity * self._motion
        radius, n_pred = float(self._s.search_radius), int(self._s.n_predict)
        if self._s.motion_radius > 0:
            # motion-adaptive search: a disc of motion_radius times the last move when
            # that is wider (at most 3x the search radius), as densely sampled
            r = min(float(self._s.motion_radius) * float(np.hypot(*self._motion)), 3.0 * radius)
            if r > radius:
                n_pred = int(np.ceil(n_pred * (r / radius) ** 2))
                radius = r
        self.radius_ = radius
        cand = sample_boxes(centre, n_pred, radius, grey.shape, scales=self._scales)
        if self._s.ncc_radius > 0:  # a second search disc at the template match
            m = _ncc_match(self._prev_grey, grey, self.box_, float(self._s.ncc_radius))
            if m is not None and np.hypot(*(m[:2] - centre[:2])) > 1.0:
                more = sample_boxes(
                    m, self._s.n_predict, self._s.search_radius, grey.shape, scales=self._scales
                )
                cand = unique_boxes(np.concatenate([cand, more]))
        self._prev_grey = grey
        t1 = time.perf_counter()
        # the candidates' features are only scored, never kept: one buffer for all frames
        d = self._feat.n_features
        if len(self._pred_buf) < len(cand) * d:
            self._pred_buf = np.empty(2 * len(cand) * d)
        Z = self._feat(grey, cand, out=self._pred_buf[: len(cand) * d].reshape(len(cand), d))
        t2 = time.perf_counter()
        s = self._score(Z)
        members = self._members if self.n_frames_ < int(self._s.consensus_frames) else []
        base = s
        if members:  # the consensus first models: the mean of their rescaled scores
            base = np.mean([_unit_range(v) for v in [s] + [m._score(Z) for m in members]], 0)
        pc = centre[:2] + centre[2:] / 2  # c_pred, the search centre
        if self._s.motion_prior > 0 and len(s) > 1:
            # displacement prior: a quadratic penalty on the distance from c_pred, in
            # units of this frame's score range
            d2 = np.sum((cand[:, :2] + cand[:, 2:] / 2 - pc) ** 2, axis=1)
            span = float(base.max() - base.min())
            r2 = max(float(self._s.search_radius), 1.0) ** 2
            sel = base - float(self._s.motion_prior) * span / r2 * d2
        else:
            sel = base
        k = _best_of_ties(sel, cand)
        box = cand[k].copy()
        if self._s.top_k > 1:
            # sub-pixel box: score-weighted mean of the top_k candidates (weights are
            # the scores above the (top_k + 1)-th best; with the motion prior, the
            # penalised scores), rounded back to whole pixels
            kk = min(int(self._s.top_k), len(sel) - 1)
            if kk > 1:
                part = np.argpartition(-sel, kk)[: kk + 1]
                part = part[np.argsort(-sel[part])]
                wts = sel[part[:kk]] - sel[part[kk]]
                if wts.sum() > 0:
                    mean = (wts[:, None] * cand[part[:kk]]).sum(0) / wts.sum()
                    box = sample_boxes(mean, 1, 0.0, grey.shape)[0]
        t3 = time.perf_counter()
        self.timing_["sampling"] += t1 - t0
        self.timing_["features"] += t2 - t1
        self.timing_["predict"] += t3 - t2
        self.candidates_, self.candidate_scores_ = cand, s
        score = float(s[k])
        if self._s.redetect is not None:
            box, score = self._redetect(grey, box, score)
        if self._s.scale_step > 0:
            box, score = self._rescale(grey, box, score)
        if self._scale_model is not None:
            box, score = self._scale_filter_step(grey, box, score)
        self.timing_["predict"] += time.perf_counter() - t3
        if members:  # every consensus model learns this box too (its own re-trainings)
            zb = self._feat(grey, box[None])
            for m in members:  # one step per extra model
                before = dict(m.timing_)
                m._commit(grey, box, float(m._score(zb)[0]), pc)
                for key, v in m.timing_.items():
                    self.timing_[key] += v - before[key]
        elif self._members:
            self._members = []  # the consensus frames are over: this model goes on alone
        self._commit(grey, box, score, pc)
        return self.box_.copy()

    def _commit(self, grey, box, score, pc) -> None:
        """Take ``box`` (score ``score``) as this frame's box and learn it: confidence,
        motion, the jump gate, the confidence gate, the training window and the
        re-training; ``pc`` the search centre."""
        # the box's confidence: its score relative to the median of the frames before
        ref = float(np.median(self._frame_scores)) if len(self._frame_scores) else score
        conf = (score - ref) / max(abs(ref), 1e-12)
        self._frame_scores.append(score)
        move = (box[:2] + box[2:] / 2) - (self.box_[:2] + self.box_[2:] / 2)
        self._motion = move
        self.box_, self.score_ = box, score
        self.n_frames_ += 1
        if self._s.jump_gate is not None:
            off = float(np.hypot(*((box[:2] + box[2:] / 2) - pc)))
            if off > float(self._s.jump_gate) * float(self._s.search_radius):
                self.n_jumps_ += 1
                self.n_skipped_ += 1
                return
        if not self._accept_frame(self.score_):
            self.n_skipped_ += 1
            return
        self._add(grey, self.box_, conf=conf)
        self._n_added += 1
        if self._n_added % int(self._s.retrain_every) == 0:
            self._train(initial=False)

    def _accept_frame(self, score: float) -> bool:
        """Whether the new frame becomes training data (confidence gate; default all)."""
        return True

    def _score_boxes(self, grey, boxes) -> np.ndarray:
        return self._score(self._feat(grey, boxes))

    def _redetect(self, grey, box, score):
        """Re-detection: when the box's score falls below ``redetect`` times the median
        score of the last frames, search a wide window around the previous box coarse to
        fine and move there if a candidate scores higher."""
        hist = self._frame_scores
        if len(hist) < 5:
            return box, score
        ref = float(np.median(hist))
        if score >= ref - (1.0 - float(self._s.redetect)) * abs(ref):
            return box, score
        self.n_redetections_ += 1
        wide, wide_score = coarse_to_fine(
            lambda b: self._score_boxes(grey, b),
            self.box_,
            float(self._s.redetect_radius),
            int(self._s.n_predict),
            grey.shape,
        )
        if wide_score > score:
            return wide, wide_score
        return box, score

    def _rescale(self, grey, box, score):
        """Scale search: boxes ``1 -+ scale_step`` times the size (from the initial size
        times the running factor ``size_scale_``), centred on the box's centre or 1 px
        off; the size changes only if the best of them beats the box's own score by
        ``scale_margin`` times the median score of the last frames."""
        step = float(self._s.scale_step)
        # sizes from the initial size times a running factor (no aspect-ratio drift by
        # rounding one step after another)
        H, W = grey.shape
        cx, cy = box[0] + box[2] / 2.0, box[1] + box[3] / 2.0
        off = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]], dtype=np.float64)
        cands, factors = [], []
        for f in (self.size_scale_ * (1 - step), self.size_scale_ * (1 + step)):
            w, h = np.maximum(np.round(self._base_size * f), 1.0)
            if w > W or h > H or (w == box[2] and h == box[3]):
                continue
            xy = np.round(np.array([cx - w / 2.0, cy - h / 2.0]) + off)
            xy = np.clip(xy, 0, [W - w, H - h])
            cands.append(np.column_stack([xy, np.full(len(xy), w), np.full(len(xy), h)]))
            factors += [f] * len(xy)
        if not cands:
            return box, score
        cand = np.concatenate(cands)
        s = self._score_boxes(grey, cand)
        k = int(np.argmax(s))
        ref = float(np.median(self._frame_scores)) if len(self._frame_scores) else abs(score)
        if float(s[k]) > score + float(self._s.scale_margin) * abs(ref):
            self.n_rescaled_ += 1
            self.size_scale_ = float(factors[k])
            return cand[k].copy(), float(s[k])
        return box, score

    def _scale_filter_step(self, grey, box, score):
        """The separate scale filter (:mod:`~maxmargin.apps.tracking.scale`): the size
        its response prefers at the translation step's centre (from the initial size
        times ``size_scale_``, so rounding does not drift the aspect), then its update
        at the box it gives; the box's score is re-computed when the size changed."""
        m = self._scale_model
        c = box[:2] + box[2:] / 2.0
        s = m.estimate(grey, c)
        w, h = np.maximum(np.round(self._base_size * s), 1.0)
        if w != box[2] or h != box[3]:
            b = np.array([c[0] - w / 2.0, c[1] - h / 2.0, w, h])
            box = sample_boxes(b, 1, 0.0, grey.shape)[0]
            score = float(self._score_boxes(grey, box[None])[0])
            self.n_rescaled_ += 1
        self.size_scale_ = float(s)
        m.update(grey, box[:2] + box[2:] / 2.0)
        return box, score

    # -- shared pieces ---------------------------------------------------------------
    def _window_size(self) -> int:
        return int(self._s.window)

    def _train_radius(self, box) -> float:
        if self._s.train_radius is not None:
            return float(self._s.train_radius)
        return 2.0 * float(self._s.search_radius)

    def _add(self, grey, box, into=None, conf=None) -> None:
        """Store a training frame: ``box``'s training candidates in ``grey`` with their
        features, into the window (or ``into``); ``conf``: a tracked frame's confidence
        (None: a labelled frame), for the support frames."""
        t0 = time.perf_counter()
        n = self._s.n_train
        if self.n_frames_ == 0 and self._s.n_train_labelled is not None:  # init: known boxes
            n = self._s.n_train_labelled
        if self._s.train_method == "polar_grid":
            cand = polar_grid_boxes(box, int(n), self._train_radius(box), grey.shape, self._scales)
        elif self._s.train_method == "overlap_strata":
            cand = overlap_strata_boxes(
                box, int(n), self._train_radius(box), grey.shape, self._scales
            )
        else:
            cand = sample_boxes(
                box,
                int(n),
                self._train_radius(box),
                grey.shape,
                scales=self._scales,
                method="polar",
                rng=self._rng,
            )
        if self._s.scale_step > 0:
            # boxes of the other sizes the scale search compares (one and two steps),
            # near the box, so that the loss teaches the model the size too
            st = float(self._s.scale_step)
            more = sample_boxes(
                box,
                max(int(n) // 4, 4),
                max(float(self._s.search_radius) / 3.0, 2.0),
                grey.shape,
                scales=(1 - 2 * st, 1 - st, 1 + st, 1 + 2 * st),
                method="polar",
                rng=self._rng,
                include_center=False,
            )
            cand = np.concatenate([cand, more])
        t1 = time.perf_counter()
        Z = self._feat(grey, cand)
        if self._encoded:
            Z = self._encode(Z)
        self.timing_["sampling"] += t1 - t0
        self.timing_["features"] += time.perf_counter() - t1
        c = BoxCandidates(cand, Z)
        if into is not None:
            into.append(c)
            return
        if len(self._data) == self._data.maxlen:
            self._keep_support(self._data[0], self._conf[0])
        self._data.append(c)
        self._conf.append(conf)

    def _keep_support(self, frame, conf) -> None:
        """The frame ``frame`` leaves the window: kept as a support frame when support
        frames are on, it is a tracked frame (``conf`` not None) and its confidence beats
        the lowest kept one's (which it replaces) or there is room."""
        k = int(self._s.support_frames)
        if k == 0 or conf is None:
            return
        if len(self._support) < k:
            self._support.append((float(conf), frame))
            return
        j = min(range(len(self._support)), key=lambda i: self._support[i][0])
        if conf > self._support[j][0]:
            self._support[j] = (float(conf), frame)

    def _train(self, initial: bool) -> None:
        t0 = time.perf_counter()
        support = [f for _, f in self._support]
        self._fit(self._anchors + support + list(self._data), initial)
        self.timing_["train"] += time.perf_counter() - t0
        self.n_trainings_ += 1

    # feature coding: identity unless a tracker codes its features once per frame
    _encoded = False

    def _init_encoding(self) -> None:
        """Called after the initial frames are stored, before the first training."""

    def _encode(self, Z):
        """Codes of a new training frame's features (``_score`` gets raw features)."""
        return Z

    def _fit(self, data: list[BoxCandidates], initial: bool) -> None:
        raise NotImplementedError

    def _score(self, Z) -> np.ndarray:
        raise NotImplementedError


@register
class StructBoostTracker(_OnlineBoxTracker):
    """StructBoost tracker optimising the Pascal overlap (TPAMI 2014, Sec. 3.5 and 4.4).

    Parameters
    ----------
    C : float, default=10**0.5
        StructBoost's C (the paper selects it from 10**0.5 to 10**2).  Over 3 seeds
        C = 10**1.5 tracked better on Coke and Tiger1 but worse on Girl, so the low end
        stays the default (docs/benchmarks.md, "Settings tried").
    update_C : float or None, default=10.0
        C of the warm re-trainings on the self-labelled window (None: ``C``, the
        default before the tenth session).  A larger C than the first training's lets
        each re-training fit the window's newer appearance harder: at 10 it tracked
        better (mean success AUC 0.579 against 0.536 for None and 0.553 for 5 on the
        five benchmark sequences) at 32 fps on Coke on one core since the tenth
        session's cheaper stump search (5 was the default for part of that session,
        when 10 ran below 25 fps).  Chosen on the benchmark sequences themselves
        (selection on the test set; docs/tracking.md, "Issue 30, tenth session").
    max_iter : int, default=300
        Boosting iterations of the first training (the paper's 300).
    update_iter : int, default=10
        Boosting iterations added by each warm-started re-training.
    weak_learner : str, default="fixed_bins"
        Decision stumps.  ``"fixed_bins"``: every frame's features are coded once, when
        the frame arrives, into 256 equal-frequency bins per feature whose edges are
        fixed from the initial labelled frames
        (:class:`~maxmargin.apps.tracking.features.FeatureQuantizer`), and the stumps
        (:class:`~maxmargin.weak.CodedStump`) split between codes -- no re-sorting of the
        window at every re-training.  From one labelled frame the edges cover only that
        frame's appearance; later values beyond it fall into the end bins, where no
        stump separates them.  ``"hist_stump"``: 255 bins re-fitted to the window at
        every training -- better on Tiger1's first 120 frames from one labelled frame
        (mean overlap 0.53 against 0.39 over seeds 0-2), not on Coke, and 2.4 times
        slower per frame (docs/tracking.md, "Issue 30").  ``"stump"``: exact thresholds.
    warm_start : bool, default=True
        Re-train from the previous model's weak learners and weights (the fast smoothed
        master continues from them; only new columns are searched).
    update_gate : float or None, default=None
        Confidence-gated updates: a frame becomes training data only if its box's score
        is at least ``ref - (1 - update_gate) * |ref|``, ``ref`` the median score of the
        last 20 accepted frames (e.g. 0.5: half the usual score).  Skipped frames
        (occlusion, drift) are counted in ``n_skipped_``.  None: every frame is used.
    polish_updates : bool, default=False
        End every warm re-training with StructBoost's exact LP polish.  The initial
        training always ends with it; the re-trainings keep the fast master's smoothed
        solution (``StructBoost(polish=False)``), which costs a fraction of the time.
    update_tol : float, default=1e-3
        The fast master's relative tolerance in the warm re-trainings
        (``StructBoost(tol=...)``); the first training keeps StructBoost's default
        (1e-4).  1e-3 halved the re-training time against 1e-4 without a loss in
        accuracy in scratch runs (docs/tracking.md, "Settings tried").
    polish_initial : bool, default=True
        End the first training (the labelled frames) with StructBoost's certified
        continuation (``certify="gap"``: the smoothing sharpened until the relative
        duality gap is 1e-2, i.e. towards the sparse LP vertex).  False keeps the fast
        master's smoothed solution (``certify="none"``), as the warm re-trainings do.
        From one labelled frame False was level with True on the whole sequences in
        scratch runs, within the seed spread, so the default stays (docs/tracking.md,
        "Settings tried").
    anchor_weight : float, default=0
        Add ``anchor_weight`` times the frozen first model's score to every score.
    relabel : float or None, default=None
        Re-label each self-labelled frame of the window by the current model among the
        candidates overlapping its box by at least ``relabel`` (off when None).
    sampling : Sampling, default=Sampling(features="hog+haar", augment=8, \
train_method="polar_grid", consensus=5, consensus_frames=20, consensus_jitter=2.0, \
consensus_jitter_ref=30.0)
        The protocol (:class:`Sampling`): candidates, search and training radii, window,
        re-training period, scales and the drift remedies.  This tracker's default
        differs from :class:`Sampling`'s in six fields.  ``features="hog+haar"``: the
        paper uses raw pixels and HOG ("raw+hog"); with stumps the raw grey cells made
        the tracker drift on Coke and Tiger1 (overlap 0.35 against 0.56-0.57 with HOG
        only), and HOG with Struck's Haar-like features (229 values) tracked better than
        HOG alone on Coke and Girl, level on Tiger1 (docs/benchmarks.md, "Third
        session").  ``augment=8``: warped copies (:func:`warp_frame`) of every labelled
        frame join the first training set -- on one labelled frame the overlap LP is
        separable by one or two stumps (a plateaued score map on which the box wanders);
        the copies make the first model use many features (docs/tracking.md, "Issue 30").
        ``train_method="polar_grid"``: the training boxes at fixed places
        (:func:`polar_grid_boxes`) instead of random ones -- on the whole five sequences
        (Coke, Tiger1, Girl, david, tiger2; seeds 0-4) level or better on each, mean
        success AUC 0.536 against 0.496 (docs/tracking.md, "Issue 30: the drift").
        ``consensus=5, consensus_frames=20, consensus_jitter=2.0,
        consensus_jitter_ref=30.0``: four more first models (their own warped copies,
        first boxes moved 2 px, less on targets under 30 px) choose the box with this
        tracker's model over the first 20 frames, then are dropped (docs/tracking.md,
        "Fourteenth session" and "Fifteenth session").  On the five sequences (smaller
        sides 31-84 px: 2 px each), seeds 0-4, in one run: mean success AUC 0.560
        against 0.527, tiger2 0.566 +- 0.075 against 0.490 +- 0.222
        (benchmarks/results/tracking.json, tracking_consensus.json).  On the 20 px target
        of the synthetic jump / scale / distractor test, started 1-2 px off, a 2 px move
        kept one run's box off for good (mean overlap 0.682), the 1.33 px of the
        reference (1 px once rounded) does not.  ``Sampling(consensus=1)`` turns it off.
    scale_filter : ScaleFilter or None, default=None
        A separate discriminative scale filter after Danelljan et al., BMVC 2014
        (:class:`~maxmargin.apps.tracking.scale.ScaleFilter`): after the translation
        step, a 1-D correlation filter over ``n_scales`` resampled patches around the new
        centre chooses the size (the box classifier's own score does not), within a band
        around the labelled box's size.  None: the box keeps its size (unless
        ``sampling.scales`` / ``scale_step`` say otherwise).  Learned from the last
        labelled frame only (``init``'s ``box``).
    random_state : int, Generator or None
        Sampling of the training candidates, warps and tie breaks.

    Attributes
    ----------
    box_, score_ : the last box and its score.
    model_ : the fitted :class:`~maxmargin.learners.structboost.StructBoost`.
    timing_ : seconds spent in sampling, features, prediction and training.
    n_redetections_, n_rescaled_, size_scale_ : frames re-detected, frames whose size
        changed, and the current size relative to the initial box.
    """

    _parameter_constraints: dict = {
        **_OnlineBoxTracker._parameter_constraints,
        "C": [POSITIVE],
        "update_C": [None, POSITIVE],
        "max_iter": [POSITIVE_INT],
        "update_iter": [POSITIVE_INT],
        "update_tol": [POSITIVE],
        "weak_learner": [Options("fixed_bins", "hist_stump", "stump")],
        "warm_start": [bool, np.bool_],
        "polish_updates": [bool, np.bool_],
        "update_gate": [None, Interval(float, 0, 1, closed="both")],
        "anchor_weight": [NON_NEGATIVE],
        "relabel": [None, Interval(float, 0, 1, closed="both")],
        "polish_initial": [bool, np.bool_],
        "scale_filter": [None, ScaleFilter],
    }

    def __init__(
        self,
        *,
        C: float = 10**0.5,
        update_C: float | None = 10.0,
        max_iter: int = 300,
        update_iter: int = 10,
        update_tol: float = 1e-3,
        weak_learner: str = "fixed_bins",
        warm_start: bool = True,
        polish_updates: bool = False,
        update_gate: float | None = None,
        anchor_weight: float = 0.0,
        relabel: float | None = None,
        polish_initial: bool = True,
        sampling: Sampling = Sampling(
            features="hog+haar",
            augment=8,
            train_method="polar_grid",
            consensus=5,
            consensus_frames=20,
            consensus_jitter=2.0,
            consensus_jitter_ref=30.0,
        ),
        scale_filter: ScaleFilter | None = None,
        random_state=None,
    ) -> None:
        self.scale_filter = scale_filter
        self.polish_initial = polish_initial
        self.C = C
        self.update_C = update_C
        self.max_iter = max_iter
        self.update_iter = update_iter
        self.update_tol = update_tol
        self.weak_learner = weak_learner
        self.warm_start = warm_start
        self.polish_updates = polish_updates
        self.update_gate = update_gate
        self.anchor_weight = anchor_weight
        self.relabel = relabel
        self.sampling = sampling
        self.random_state = random_state

    def _accept_frame(self, score: float) -> bool:
        if self.update_gate is None:
            return True
        hist = self._gate_scores
        ok = len(hist) < 5 or score >= (ref := float(np.median(hist))) - (
            1.0 - float(self.update_gate)
        ) * abs(ref)
        if ok:
            hist.append(score)
        return ok

    def _init_encoding(self) -> None:
        self._gate_scores = deque(maxlen=20)
        # the frames with known boxes (never re-labelled; the list keeps them alive so
        # their ids stay theirs)
        self._labelled = self._anchors + list(self._data)
        self._labelled_ids = {id(c) for c in self._labelled}
        if self.weak_learner != "fixed_bins":
            return
        stored = self._anchors + list(self._data)
        self._quantizer = FeatureQuantizer(256).fit(np.concatenate([c.features for c in stored]))
        for c in stored:  # a handful of initial frames
            c.features = self._quantizer.transform(c.features)
        self._encoded = True

    def _encode(self, Z):
        return self._quantizer.transform(Z) if self._encoded else Z

    def _fit(self, data, initial):
        if initial or not self.warm_start:
            weak = CodedStump(256) if self.weak_learner == "fixed_bins" else self.weak_learner
            self.model_ = StructBoost(
                task=BoxTask(),
                C=float(self.C),
                weak_learner=weak,
                max_iter=int(self.max_iter),
                random_state=self._rng.integers(2**31),
                warm_start=bool(self.warm_start),
                certify="gap" if self.polish_initial else "none",
            )
        else:
            self.model_.set_params(
                C=float(self.C if self.update_C is None else self.update_C),
                max_iter=int(self.update_iter),
                polish=bool(self.polish_updates),
                certify="gap" if self.polish_updates else "none",
                tol=float(self.update_tol),
            )
        y = np.zeros(len(data), dtype=np.int64)
        if self.relabel is not None and not initial and len(self.model_.hypotheses_):
            y = self._relabelled(data)
        self.labels_ = y  # index of each training frame's label among its candidates
        import warnings

        incremental = bool(self.warm_start) and self._incremental
        init_outputs = None
        if incremental and not initial and len(self.model_.hypotheses_):
            init_outputs = self._window_outputs(data, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # empty-model / gap warnings on tiny windows
            self.model_._fit(data, y, init_outputs=init_outputs, keep_outputs=incremental)
        m = self.model_
        if incremental:
            self._keep_outputs(data)
        self._hyps = m.hypotheses_
        if self._encoded and len(self._hyps):
            # a split between codes b and b+1 (threshold b + 0.5) is ``value > edges[b]``:
            # the same stumps on the raw features, so candidates need no coding
            h = self._hyps
            b = np.where(np.isfinite(h.threshold), np.floor(h.threshold), 0).astype(np.intp)
            raw = self._quantizer.edges_[h.feature, b]
            self._hyps = Stumps(
                h.feature,
                np.where(np.isfinite(h.threshold), raw, -np.inf),
                h.polarity,
                h.n_features,
            )
        self._w = m.slot_weights_[:, 0]
        if initial:  # the anchor: the model of the labelled frames, kept frozen
            self._anchor_model = (self._hyps, self._w.copy())

    #: keep the model's outputs on the window's frames between re-trainings (False: the
    #: warm start re-evaluates every earlier stump on the whole window, as before; the
    #: same models bit for bit, tested)
    _incremental = True

    def _keep_outputs(self, data) -> None:
        """After a fit: the fitted stumps' outputs on each frame of the window, from the
        fit's column store (``StructBoost._train_outputs``, laid out as the box task's
        weak inputs: frame i's candidates in rows ``i K`` to ``i K + k_i``).  The cache
        holds the frames themselves, so an id stays theirs while it is cached."""
        m = self.model_
        O = getattr(m, "_train_outputs", None)
        self._out_cache = {}
        if O is None or len(m.hypotheses_) == 0:
            return
        K = int(m.task_.n_outputs)
        for i, c in enumerate(data):  # one step per frame (views, no copies)
            self._out_cache[id(c)] = (c, O[:, i * K : i * K + len(c.boxes)])
        m._train_outputs = None

    def _window_outputs(self, data, y) -> np.ndarray:
        """The warm start's stumps' (``model_.hypotheses_``) outputs on the new window in
        the box task's layout (frames padded to ``K`` rows with their label's row, as
        ``BoxTask.bind`` pads them): cached rows for the frames kept from the last fit,
        one evaluation for the frames that are new."""
        hyps = self.model_.hypotheses_
        cache = getattr(self, "_out_cache", {})
        blocks = [cache.get(id(c)) for c in data]
        blocks = [b[1] if b is not None and b[0] is data[i] else None for i, b in enumerate(blocks)]
        new = [i for i, b in enumerate(blocks) if b is None]
        if new:  # the new frames' candidates, evaluated at once
            o = hyps.evaluate(np.concatenate([data[i].features for i in new]))
            ends = np.cumsum([len(data[i].boxes) for i in new])
            starts = np.concatenate([[0], ends[:-1]])
            for i, a, e in zip(new, starts, ends, strict=True):
                blocks[i] = o[:, a:e]
        K = max(len(c.boxes) for c in data)
        out = np.empty((len(hyps), len(data) * K))
        for i, b in enumerate(blocks):  # one copy per frame (no loop over boxes)
            k = b.shape[1]
            out[:, i * K : i * K + k] = b
            out[:, i * K + k : (i + 1) * K] = b[:, int(y[i]), None]
        return out

    def _relabelled(self, data) -> np.ndarray:
        """Re-labelling: each self-labelled frame's label becomes its best-scoring
        candidate under the current model among those overlapping the frame's own box
        (candidate 0) by at least ``relabel``; labelled (ground-truth) frames keep theirs.
        One vectorised pass over all the window's candidates."""
        sizes = np.array([len(c.boxes) for c in data])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        frame = np.repeat(np.arange(len(data)), sizes)
        B = np.concatenate([c.boxes for c in data])
        Z = np.concatenate([c.features for c in data])
        m = self.model_
        S = m.slot_weights_[:, 0] @ m.hypotheses_.evaluate(Z)
        ok = box_overlap(B, B[starts][frame]) >= float(self.relabel)
        S = np.where(ok, S, -np.inf)
        S[starts] = np.maximum(S[starts], -1e300)  # the own box is always eligible
        order = np.lexsort((-S, frame))  # by frame, best score first
        y = order[starts] - starts
        fixed = np.fromiter((id(c) in self._labelled_ids for c in data), bool, len(data))
        y[fixed] = 0
        return y.astype(np.int64)

    def _score(self, Z):
        s = self._w @ self._hyps.evaluate(Z) if len(self._hyps) else np.zeros(len(Z))
        a = float(self.anchor_weight)
        hyps, w = self._anchor_model
        if a > 0 and len(hyps):
            s = s + a * (w @ hyps.evaluate(Z))
        return s


@register
class AdaBoostTracker(_OnlineBoxTracker):
    """The paper's binary AdaBoost baseline tracker (Sec. 4.4) with the same sampling and
    features: candidates with overlap > ``pos_overlap`` (0.8) are positives, <=
    ``neg_overlap`` (0.3) negatives; ``n_estimators`` (500) rounds of discrete AdaBoost
    with decision stumps, re-trained from scratch on the window.

    Parameters
    ----------
    n_estimators : int, default=500
        Boosting rounds (stumps) of every training, from scratch on the window.
    pos_overlap : float in [0, 1], default=0.8
        A training candidate whose Pascal overlap with its frame's box exceeds this is a
        positive.
    neg_overlap : float in [0, 1], default=0.3
        A training candidate whose overlap is at most this is a negative; those in
        between are left out.  The two classes get equal total weight.
    weak_learner : str, default="hist_stump"
        The weak learner's name (:func:`~maxmargin.weak.make_weak_learner`).
    sampling : Sampling, default=Sampling()
        The protocol (:class:`Sampling`): candidates, search and training radii, window,
        re-training period and the drift remedies.
    random_state : int, Generator or None
        Sampling of the training candidates and warps.
    """

    _parameter_constraints: dict = {
        **_OnlineBoxTracker._parameter_constraints,
        "n_estimators": [POSITIVE_INT],
        "pos_overlap": [Interval(float, 0, 1, closed="both")],
        "neg_overlap": [Interval(float, 0, 1, closed="both")],
        "weak_learner": [str],
    }

    def __init__(
        self,
        *,
        n_estimators: int = 500,
        pos_overlap: float = 0.8,
        neg_overlap: float = 0.3,
        weak_learner: str = "hist_stump",
        sampling: Sampling = Sampling(),
        random_state=None,
    ) -> None:
        self.n_estimators = n_estimators
        self.pos_overlap = pos_overlap
        self.neg_overlap = neg_overlap
        self.weak_learner = weak_learner
        self.sampling = sampling
        self.random_state = random_state

    def _fit(self, data, initial):
        Zs, ys = [], []
        for c in data:  # one step per frame of the window
            ov = box_overlap(c.boxes, c.boxes[0])
            keep = (ov > self.pos_overlap) | (ov <= self.neg_overlap)
            Zs.append(c.features[keep])
            ys.append(np.where(ov[keep] > self.pos_overlap, 1.0, -1.0))
        Z, y = np.concatenate(Zs), np.concatenate(ys)
        # balance the classes' total weight (few positives per frame)
        D = np.where(y > 0, 0.5 / max((y > 0).sum(), 1), 0.5 / max((y < 0).sum(), 1))
        weak = make_weak_learner(self.weak_learner)
        self._hyps, self._alpha = discrete_adaboost(weak, Z, y, self.n_estimators, sample_weight=D)

    def _score(self, Z):
        if self._hyps is None:
            return np.zeros(len(Z))
        return self._alpha @ self._hyps.evaluate(Z)


@register
class SSVMTracker(_OnlineBoxTracker):
    """Struck-style linear structured SVM tracker on the same box task and features,
    trained by :class:`~maxmargin.learners.ssvm.StructSVM` (1-slack cutting planes)
    on the last ``window`` (50) frames, re-trained every ``retrain_every`` frames.

    Parameters
    ----------
    C : float, default=1.0
        The structured SVM's C (weight of the average structured hinge loss).
    tol : float, default=1e-3
        The cutting-plane solver's tolerance (``StructSVM(tol=...)``).
    max_iter : int, default=100
        Cutting-plane iterations per training (unconverged trainings are kept silently).
    sampling : Sampling, default=Sampling(window=50)
        The protocol (:class:`Sampling`): candidates, search and training radii, window,
        re-training period and the drift remedies.
    random_state : int, Generator or None
        Sampling of the training candidates and warps.
    """

    _parameter_constraints: dict = {
        **_OnlineBoxTracker._parameter_constraints,
        "C": [POSITIVE],
        "tol": [POSITIVE],
        "max_iter": [POSITIVE_INT],
    }

    def __init__(
        self,
        *,
        C: float = 1.0,
        tol: float = 1e-3,
        max_iter: int = 100,
        sampling: Sampling = Sampling(window=50),
        random_state=None,
    ) -> None:
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.sampling = sampling
        self.random_state = random_state

    def _fit(self, data, initial):
        import warnings

        self.model_ = StructSVM(
            task=BoxTask(),
            C=float(self.C),
            solver="1-slack",
            tol=float(self.tol),
            max_iter=int(self.max_iter),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unconverged within max_iter on a frame
            self.model_.fit(data, np.zeros(len(data), dtype=np.int64))
        self._w = np.asarray(self.model_.coef_, dtype=np.float64)

    def _score(self, Z):
        return Z @ self._w


def polar_grid_boxes(box, n: int, radius: float, image_shape, scales=(1.0,)) -> np.ndarray:
    """About ``n`` boxes of ``box``'s size (times each of ``scales``) around it at fixed
    places: the box itself first, then per scale the points ``i = 1..m`` of a golden-angle
    spiral (Vogel, "A better way to construct the sunflower head", Math. Biosci. 44, 1979)
    with distance ``radius i / m`` and angle ``i`` times the golden angle -- the density
    of ``sample_boxes(method="polar")`` (uniform in distance, so denser near the box)
    without its randomness: the same boxes for every seed.  Rounded to whole pixels,
    kept inside the image and the disc, without duplicates."""
    b = np.asarray(box, dtype=np.float64).reshape(4)
    H, W = int(image_shape[0]), int(image_shape[1])
    scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
    m = max(1, int(np.ceil(max(int(n) - 1, 1) / len(scales))))
    i = np.arange(1, m + 1, dtype=np.float64)
    rho = float(radius) * i / m
    th = i * np.pi * (3.0 - np.sqrt(5.0))  # the golden angle
    dx, dy = rho * np.cos(th), rho * np.sin(th)
    out = [sample_boxes(b, 1, 0.0, image_shape)]  # the box itself, rounded and clipped
    out += boxes_at_offsets(b, dx, dy, scales, float(radius), H, W)
    return unique_boxes(np.concatenate(out))


def overlap_strata_boxes(
    box, n: int, radius: float, image_shape, scales=(1.0,), *, n_strata: int = 10
) -> np.ndarray:
    """About ``n`` boxes around ``box`` at fixed places, spread evenly over its overlap:
    from a pool of ``8 n`` golden-angle spiral boxes (:func:`polar_grid_boxes`), the box
    itself first, then ``(n - 1) / n_strata`` boxes from each of ``n_strata`` equal
    strata of Pascal overlap with ``box`` in [0, 1] (evenly spaced along the spiral
    within the stratum); strata with fewer boxes give their share to the pool's other
    boxes (evenly spaced).  The same boxes for every seed; without duplicates."""
    pool = polar_grid_boxes(box, 8 * int(n), radius, image_shape, scales)
    n = min(int(n), len(pool))
    ov = box_overlap(pool[1:], pool[0])
    stratum = np.minimum((ov * n_strata).astype(np.int64), n_strata - 1)
    quota = (n - 1) // n_strata
    take = np.zeros(len(ov), dtype=bool)
    for k in range(n_strata):  # one step per stratum
        idx = np.flatnonzero(stratum == k)
        if len(idx) <= quota:
            take[idx] = True
        elif quota > 0:
            take[idx[np.linspace(0, len(idx) - 1, quota).round().astype(np.int64)]] = True
    rest = np.flatnonzero(~take)
    short = n - 1 - int(take.sum())
    if short > 0 and len(rest):
        pick = np.linspace(0, len(rest) - 1, min(short, len(rest))).round().astype(np.int64)
        take[rest[pick]] = True
    return np.concatenate([pool[:1], pool[1:][take]])


def _unit_range(v) -> np.ndarray:
    """``v`` rescaled to [0, 1] by its minimum and maximum (zeros when they are equal)."""
    v = np.asarray(v, dtype=np.float64)
    lo, span = float(v.min()), float(v.max() - v.min())
    return (v - lo) / span if span > 0 else np.zeros_like(v)


def _best_of_ties(s, cand) -> int:
    """Index of the best score; among candidates tied at the best score (a sum of a few
    stumps is piecewise constant: a plateau), the one nearest their mean box."""
    k = int(np.argmax(s))
    top = s[k]
    tied = np.flatnonzero(s >= top - 1e-9 * max(1.0, abs(top)))
    if len(tied) <= 1:
        return k
    c = cand[tied]
    d = np.sum((c - c.mean(axis=0)) ** 2, axis=1)
    return int(tied[np.argmin(d)])


def fixed_warp_params(n: int) -> np.ndarray:
    """``n`` fixed warps for :func:`warp_frame` (``params``), rows ``(a, s, tx, ty)`` in
    [-1, 1]: the rotation, scaling and shift as fractions of their ranges.  ``a`` is
    stratified (``2 (k + 1/2) / n - 1``), the other three follow additive recurrences
    with the fractional parts of the generalised golden ratio's powers (Roberts' R_d
    sequence for d = 3, a low-discrepancy design), so the copies cover the ranges evenly
    and are the same for every seed."""
    k = np.arange(int(n), dtype=np.float64)
    g = 1.0
    for _ in range(30):  # the real root of g^4 = g + 1 (fixed point iteration)
        g = (1.0 + g) ** 0.25
    alpha = np.array([1.0 / g, 1.0 / g**2, 1.0 / g**3])
    u = np.empty((int(n), 4))
    u[:, 0] = (k + 0.5) / max(int(n), 1)
    u[:, 1:] = np.mod(0.5 + k[:, None] * alpha[None, :], 1.0)
    return 2.0 * u - 1.0


def warp_frame(grey, box, rng, *, shift=1.0, scale=0.03, angle=5.0, noise=0.02, params=None):
    """A randomly warped copy of a grey frame whose object stays under ``box``: a random
    rotation (up to ``angle`` degrees), scaling (up to ``scale``) about the box centre,
    a sub-pixel shift (up to ``shift`` px), bilinear resampling, and Gaussian noise of
    standard deviation ``noise`` -- the "warped positive patches" with which TLD (Kalal,
    Mikolajczyk & Matas, "Tracking-learning-detection", TPAMI 34(7), 2012) enlarges the
    first frame's training set.  Only the part around the box that the training
    candidates can reach is warped (the rest is copied).  ``params``: ``(a, s, tx, ty)``
    in [-1, 1] fixing the rotation (``a angle``), scaling (``s scale``) and shift
    (``tx shift``, ``ty shift``) instead of drawing them; the noise is still drawn
    from ``rng``."""
    from scipy.ndimage import map_coordinates

    H, W = grey.shape
    x, y, w, h = (float(v) for v in box)
    cx, cy = x + w / 2.0, y + h / 2.0
    m = 2.0 * max(w, h)  # margin: the crop covers the box and its training candidates
    x0, x1 = int(max(0, np.floor(x - m))), int(min(W, np.ceil(x + w + m)))
    y0, y1 = int(max(0, np.floor(y - m))), int(min(H, np.ceil(y + h + m)))
    if params is None:
        th = np.deg2rad(rng.uniform(-angle, angle))
        sc = 1.0 + rng.uniform(-scale, scale)
        tx, ty = rng.uniform(-shift, shift, 2)
    else:
        a, s, px, py = (float(v) for v in params)
        th, sc = np.deg2rad(a * angle), 1.0 + s * scale
        tx, ty = px * shift, py * shift
    yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float64)
    dx, dy = xx - cx, yy - cy
    c, sn = np.cos(th) / sc, np.sin(th) / sc
    src_x = c * dx - sn * dy + cx + tx
    src_y = sn * dx + c * dy + cy + ty
    out = grey.copy()
    patch = map_coordinates(grey, [src_y, src_x], order=1, mode="nearest")
    patch = patch + rng.normal(0.0, noise, patch.shape)
    out[y0:y1, x0:x1] = np.clip(patch, 0.0, 1.0)
    return out


def _ncc_match(prev, grey, box, radius: float):
    """Where the patch of ``box`` in the previous frame ``prev`` best matches ``grey``
    within ``radius`` px (normalised cross-correlation, Lewis, "Fast normalized
    cross-correlation", Vision Interface 1995, by scikit-image's ``match_template``), at
    half resolution (2 px precision): the box moved there, or None."""
    from skimage.feature import match_template

    H, W = grey.shape
    x, y, w, h = (int(v) for v in box)
    R = int(np.ceil(radius))
    x0, y0 = max(x - R, 0), max(y - R, 0)
    x1, y1 = min(x + w + R, W), min(y + h + R, H)
    if w < 4 or h < 4:
        return None

    def half(a):  # 2x2 block means
        a = a[: a.shape[0] // 2 * 2, : a.shape[1] // 2 * 2]
        return 0.25 * (a[0::2, 0::2] + a[1::2, 0::2] + a[0::2, 1::2] + a[1::2, 1::2])

    tmpl = half(prev[y : y + h, x : x + w])
    region = half(grey[y0:y1, x0:x1])
    if region.shape[0] < tmpl.shape[0] or region.shape[1] < tmpl.shape[1]:
        return None
    if not np.ptp(tmpl) > 0:
        return None
    ncc = match_template(region, tmpl)
    iy, ix = np.unravel_index(int(np.argmax(ncc)), ncc.shape)
    nx = min(max(x0 + 2 * int(ix), 0), W - w)
    ny = min(max(y0 + 2 * int(iy), 0), H - h)
    return np.array([nx, ny, w, h], dtype=np.float64)


def coarse_to_fine(score_fn, box, radius: float, n_coarse: int, image_shape, *, top: int = 3):
    """Best box of ``box``'s size within ``radius`` of its centre, searched coarse to fine.

    A grid of about ``n_coarse`` translations (step ``g`` px, see
    :func:`~maxmargin.tasks.boxes.sample_boxes`) is scored by ``score_fn`` (boxes (n, 4)
    -> scores (n,)); then every whole-pixel translation within ``g`` px of each of the
    ``top`` best coarse boxes (disjoint neighbourhoods after the first) is scored, and
    the best box of both stages is returned with its score.  On a score map with a
    single peak and no plateau wider than ``g`` this is the best box of the full
    whole-pixel grid at a fraction of the cost (tested).
    """
    coarse = sample_boxes(box, int(n_coarse), float(radius), image_shape)
    s = np.asarray(score_fn(coarse), dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    step = max(1.0, float(np.sqrt(np.pi * float(radius) ** 2 / max(int(n_coarse), 1))))
    g = int(np.ceil(step))
    picked = []
    for i in order:  # one step per coarse box, until `top` distinct neighbourhoods
        c = coarse[i]
        if all(np.max(np.abs(c[:2] - coarse[j][:2])) > g for j in picked):
            picked.append(i)
        if len(picked) == int(top):
            break
    H, W = int(image_shape[0]), int(image_shape[1])
    off = np.arange(-g, g + 1, dtype=np.float64)
    dx, dy = (a.ravel() for a in np.meshgrid(off, off))
    fine = np.concatenate([coarse[i] + np.stack([dx, dy, 0 * dx, 0 * dy], 1) for i in picked])
    inside = (fine[:, 0] >= 0) & (fine[:, 1] >= 0)
    fine = fine[inside & (fine[:, 0] + fine[:, 2] <= W) & (fine[:, 1] + fine[:, 3] <= H)]
    # only within the search disc around the original box
    cx, cy = box[0] + box[2] / 2.0, box[1] + box[3] / 2.0
    d2 = (fine[:, 0] + fine[:, 2] / 2.0 - cx) ** 2 + (fine[:, 1] + fine[:, 3] / 2.0 - cy) ** 2
    fine = fine[d2 <= float(radius) ** 2 + 1e-9]
    best_box, best = coarse[order[0]], float(s[order[0]])
    if len(fine):
        sf = np.asarray(score_fn(fine), dtype=np.float64)
        k = int(np.argmax(sf))
        if sf[k] > best:
            best_box, best = fine[k], float(sf[k])
    return best_box.copy(), best


TRACKERS = {
    "structboost": StructBoostTracker,
    "adaboost": AdaBoostTracker,
    "ssvm": SSVMTracker,
}


def make_tracker(name: str, **params):
    """A tracker by name (``structboost``, ``adaboost``, ``ssvm``).

    ``params`` are the tracker's own parameters and, flat, any :class:`Sampling` field:
    those change the tracker's default sampling (``make_tracker("ssvm", n_predict=500)``
    is ``SSVMTracker(sampling=SSVMTracker().sampling.replace(n_predict=500))``).
    ``scale_filter`` may also be given as ``True`` (``ScaleFilter()``) or a dict of
    :class:`~maxmargin.apps.tracking.scale.ScaleFilter` fields (command lines).
    """
    try:
        cls = TRACKERS[name]
    except KeyError:
        raise ValueError(f"unknown tracker {name!r}; choose one of {sorted(TRACKERS)}") from None
    flat = {k: params.pop(k) for k in list(params) if k in SAMPLING_PARAMS}
    sf = params.get("scale_filter")
    if sf is True:
        params["scale_filter"] = ScaleFilter()
    elif isinstance(sf, dict):
        try:
            params["scale_filter"] = ScaleFilter(**sf)
        except TypeError:  # a field it does not have
            known = [f.name for f in dataclasses.fields(ScaleFilter)]
            raise ValueError(f"scale_filter fields are {known}, got {sorted(sf)}") from None
    tracker = cls(**params)
    if flat:
        tracker.set_params(sampling=tracker.sampling.replace(**flat))
    return tracker
