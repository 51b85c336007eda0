"""Boosted cascade classifier (thesis seed 002, Ch. 4): stages of boosted split stumps,
each with an operating point chosen for the cascade's recall / FAR goal."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_array, check_is_fitted

from maxmargin._registry import register
from maxmargin._validation import (
    MONITOR_PARAMS,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Options,
    as_generator,
    file_flag,
    json_params,
    store_params,
    validate_params,
)
from maxmargin.exceptions import warn_interrupted
from maxmargin.learners._binary import BinaryClassifier
from maxmargin.solvers.asymmetric_boost import (
    ASYM_VARIANTS,
    CS_VARIANTS,
    fit_asymmetric_stage,
    fit_cost_sensitive_stage,
)
from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.solvers.operating_point import (
    FALLBACKS,
    RULES,
    roc_points,
    select_operating_point,
)
from maxmargin.weak.real_stump import RealStumps

__all__ = ["BoostedCascade"]

STAGE_LEARNERS = CS_VARIANTS + ASYM_VARIANTS


def _stage_caps(max_weak) -> list:
    """``max_weak`` as a list of per-stage caps (the last one repeats)."""
    caps = [max_weak] if isinstance(max_weak, (int, np.integer)) else list(max_weak)
    if not caps or not all(
        isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 1 for c in caps
    ):
        raise ValueError(
            f"max_weak must be a positive int or a non-empty sequence of them, got {max_weak!r}"
        )
    return [int(c) for c in caps]


@njit(cache=True)
def _hull_value(v, u, t):  # pragma: no cover - compiled
    """The lower convex hull of the points ``(v, u)`` (sorted by ``v``, then ``u``) at
    ``v = t`` (Andrew's monotone chain); ``inf`` when ``t`` lies right of every point."""
    m = v.shape[0]
    hv = np.empty(m)
    hu = np.empty(m)
    k = 0
    for i in range(m):
        while (
            k >= 2
            and (hv[k - 1] - hv[k - 2]) * (u[i] - hu[k - 2])
            - (hu[k - 1] - hu[k - 2]) * (v[i] - hv[k - 2])
            <= 0.0
        ):
            k -= 1
        hv[k] = v[i]
        hu[k] = u[i]
        k += 1
    if t > hv[k - 1]:
        return np.inf
    for j in range(k):
        if hv[j] >= t:
            if j == 0 or hv[j] == t:
                return hu[j]
            w = (t - hv[j - 1]) / (hv[j] - hv[j - 1])
            return hu[j - 1] + w * (hu[j] - hu[j - 1])
    return np.inf


def two_point_optimum(alpha, beta, B, n) -> float:
    """The optimum of two-point planning's LP ([Sun2012 eq. 4.55], ``max sum_k x_k log
    alpha_k`` s.t. ``sum_k x_k log beta_k <= log B``, ``sum_k x_k <= n``, ``x >= 0``) in
    closed form: with ``u = -log alpha``, ``v = -log beta`` and ``x = n lambda``
    (``lambda`` a convex combination of the points and of the origin, the unused share
    of ``n``) it is ``-n h(-log(B) / n)``, ``h`` the lower convex hull of the points and
    the origin (non-decreasing, as every ``u >= 0``); ``-inf`` when infeasible.  The
    cascade's stopping test screens with it, so that HiGHS solves the LP only when the
    goal may be met (the solution is HiGHS's, as before)."""
    v = np.concatenate([[0.0], -np.log(np.asarray(beta, dtype=np.float64))])
    u = np.concatenate([[0.0], -np.log(np.asarray(alpha, dtype=np.float64))])
    o = np.lexsort((u, v))
    h = _hull_value(v[o], u[o], -np.log(float(B)) / float(n))
    return -float(n) * h if np.isfinite(h) else -np.inf


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class _CascadeRun:
    """The state of one :meth:`BoostedCascade.fit` between stages: the rows (grown by
    bootstrapping), which of them pass every stage so far (``alive``), their chained
    scores ``Fc`` (``chain`` only), the remaining goal ``(A, B, n)``, the stages kept and
    the fit's monitor."""

    def __init__(self, X, ys, hold, est):
        self.X, self.ys = X, ys
        self.set_rows(hold)
        n = X.shape[0]
        self.alive = np.ones(n, dtype=bool)
        self.chain = bool(est.chain)
        self.Fc = np.zeros(n)
        self.goal = (float(est.target_recall), float(est.target_far), int(est.n_stages))
        self.stumps, self.thresholds, self.table = [], [], []
        self.pool = None  # the recycling pool (``recycle``)
        self.seen: set = set()  # the splits of the stages so far
        self.n_boot = 0  # negatives bootstrapped before the next stage
        self.n_round = 0
        self.interrupted = False
        self.monitor = ConvergenceMonitor(
            "cascade",
            verbose=est.verbose,
            callback=est.callback,
            fields=("stage", "stage_round", "objective", "n_weak"),
        )
        self.t0 = time.perf_counter()

    def set_rows(self, hold):
        """Training rows ``tr`` and validation rows ``va`` (all rows when ``hold`` is None)."""
        self.hold = hold
        if hold is None:
            self.tr = self.va = np.arange(self.X.shape[0])
        else:
            self.tr, self.va = np.flatnonzero(~hold), np.flatnonzero(hold)


@dataclass
class _StageSamples:
    """A stage's rows: training ``idx`` (positives first), the validation rows ``Xv``
    (``nvp`` positives first) with their starting scores ``F0v``, and the goal."""

    idx: np.ndarray
    n_pos: int
    n_neg: int
    Xv: object
    F0v: np.ndarray
    nvp: int
    goal: tuple


@register
class BoostedCascade(BinaryClassifier, BaseEstimator):
    """Cascade of boosted stages with planned operating points (thesis Ch. 4).

    A window is accepted when it passes every stage: stage ``k`` accepts when its score
    ``F_k(x) = sum_t s_t(x)`` (split stumps, :mod:`maxmargin.solvers.asymmetric_boost`)
    exceeds the stage threshold; with ``chain=True`` the score is ``F_k(x) = F_{k-1}(x) +
    sum_t s_t(x)`` (strong classifier chaining, [Sun2012 eq. 4.59]).  Stage ``k`` is trained on the
    positives and the negatives that passed stages ``0 .. k-1`` (bootstrapping), adding weak
    classifiers until its ROC curve on the validation data meets the ``rule``'s goal for
    the remaining cascade (:mod:`maxmargin.solvers.operating_point`) or ``max_weak`` is
    reached; the goal is then updated (``A <- A / a``, ``B <- B / b``, ``n <- n - 1``).
    Training stops after ``n_stages`` stages, when the FAR goal is met, or when no
    negative is left.

    Parameters
    ----------
    stage_learner : {"discrete", "real", "gentle", "lacboost", "fisherboost"}, default="gentle"
        Cost-sensitive AdaBoost (Sec. 4.2.3) or LACBoost / FisherBoost (Sec. 4.2.5).
    cost_ratio : float, default=1.0
        ``C_1 / C_-1`` of cost-sensitive AdaBoost (costs ``2r/(1+r)`` and ``2/(1+r)``,
        so ``1`` is plain AdaBoost).
    n_stages : int, default=10
        Planned number of stages ``n``.
    target_recall, target_far : float, default=0.95, 1e-3
        The cascade's goal ``(A, B)``.
    rule : {"fixed", "one-point", "two-point"}, default="two-point"
    fallback : {"recall", "far"}, default="recall"
        What a stage that cannot reach the rule's goal within ``max_weak`` gives up (thesis
        Sec. 4.3.4): ``"far"`` keeps the FAR goal and accepts missed detections (the
        section's main example); ``"recall"`` keeps the per-stage recall
        ``A^(1/n)`` and accepts more false positives (its "reversed strategy").  With weak
        stage classifiers ``"far"`` lets the recall collapse stage after stage.
    max_weak : int or sequence of int, default=50
        Weak classifiers per stage at most; a sequence gives stage ``k`` the cap
        ``max_weak[min(k, len - 1)]`` -- a schedule of small early stages as in Viola &
        Jones's detector (e.g. ``(2, 5, 10, 20, 50)``), so that the stages most windows
        reach stay cheap.
    recycle : float or None, default=None
        Information recycling (Sec. 4.4, [Sun2012 Alg. 3]) with ``lambda* = recycle``; None:
        off.
    chain : bool, default=False
        Strong classifier chaining (Sec. 4.4, [Sun2012 eq. 4.59]; Xiao, Zhu & Zhang, "Boosting chain
        learning for object detection", ICCV 2003): stage ``k`` starts from the score of
        stage ``k - 1`` on its windows and adds its own weak classifiers, so every stage
        is a longer prefix of one booster with its own rejection threshold.  The
        previous score is already computed in a window that reaches the stage, so a
        stage costs only its own weak classifiers.
    theta, sigma : float, default=1.0, 1e-4
        LACBoost / FisherBoost trade-off and score ridge.
    max_bins : int or None, default=None
        Thresholds of the stages' weak learners: None, every distinct value (exact); an
        int, at most that many equal-frequency bins per feature of each stage's samples
        (LightGBM's histogram search): a round's search becomes one pass over small
        integer codes, many times faster on thousands of samples and features (the face
        cascade uses 256).
    max_negatives : int or None, default=None
        Negatives per stage at most (a random subset of those alive).
    validation_fraction : float in [0, 1), default=0.0
        Share of the data held out to choose operating points (0: the training data).
    random_state, max_time, verbose, callback
        As elsewhere; ``callback`` gets every round's history record.

    Attributes
    ----------
    classes_, stages_ (per-stage table: ``n_weak``, ``n_new_weak``, ``threshold``,
    ``recall``, ``far``, ``attained``, ``n_pos``, ``n_neg``, ``n_recycled``),
    stumps_ (list of :class:`~maxmargin.weak.RealStumps`), thresholds_, history_ (one row
    per boosting round: ``iteration``, ``stage``, ``objective``, ``gap``, ``t_total``),
    n_stages_, chain_ (the ``chain`` the stages were fitted with; decisions use it),
    converged_ (False when Ctrl-C or ``max_time`` ended training early).

    Ctrl-C (KeyboardInterrupt) -- from ``callback`` or anywhere inside a stage's
    boosting -- keeps the stages completed so far as the model (``converged_ = False``,
    a :class:`~maxmargin.exceptions.FitInterruptedWarning`); the stage being trained is
    dropped, except when the interrupt came through ``callback``, which lets the stage
    end at its current round.  Before the first stage is complete the interrupt
    propagates.
    """

    _fitted_attr = "stumps_"

    _parameter_constraints = {
        "stage_learner": [Options(*STAGE_LEARNERS)],
        "cost_ratio": [POSITIVE],
        "n_stages": [POSITIVE_INT],
        "target_recall": [Interval(float, 0, 1, closed="right")],
        "target_far": [Interval(float, 0, 1, closed="neither")],
        "rule": [Options(*RULES)],
        "fallback": [Options(*FALLBACKS)],
        "max_weak": [POSITIVE_INT, list, tuple],
        "recycle": [None, Interval(float, 0, None, closed="left")],
        "chain": [bool, np.bool_],
        "theta": [POSITIVE],
        "sigma": [Interval(float, 0, None, closed="left")],
        "max_bins": [None, Interval(int, 2, 65536, closed="both")],
        "max_negatives": [None, POSITIVE_INT],
        "validation_fraction": [Interval(float, 0, 1, closed="left")],
        "random_state": RANDOM_STATE,
        **MONITOR_PARAMS,
    }

    def __init__(
        self,
        *,
        stage_learner="gentle",
        cost_ratio=1.0,
        n_stages=10,
        target_recall=0.95,
        target_far=1e-3,
        rule="two-point",
        fallback="recall",
        max_weak=50,
        recycle=None,
        chain=False,
        theta=1.0,
        sigma=1e-4,
        max_bins=None,
        max_negatives=None,
        validation_fraction=0.0,
        random_state=None,
        max_time=None,
        verbose=0,
        callback=None,
    ):
        store_params(self, locals())

    # ------------------------------------------------------------------------ fit
    def fit(self, X, y, validation_mask=None, negatives=None):
        """Train the cascade.  ``validation_mask`` (boolean, one per sample): the rows
        held out to choose operating points (e.g. all windows of some images, so that the
        points are not chosen on near-copies of training windows); it overrides
        ``validation_fraction``.

        ``negatives``: bootstrapping from a larger source of negatives (Viola & Jones,
        IJCV 2004, Sec. 5: each stage's negatives are collected by scanning with the
        cascade so far).  After every stage but the last, ``negatives(passes, n_train,
        n_val)`` is called; ``passes(Z)`` is the boolean mask of the rows of ``Z``
        accepted by every stage so far.  It returns ``(Z, hold)``: new negative rows
        (features as ``X``'s), up to ``n_train`` of them for training (``hold`` False) and
        ``n_val`` held out (``hold`` True; ``n_val`` is 0 when the operating points are
        chosen on the training rows).  Rows that ``passes`` rejects are dropped, the rest
        join the surviving negatives, so that each stage has as many negatives as the
        first (the counts ``n_train`` / ``n_val`` ask for exactly that); the rejected rows
        are freed.  ``stages_[k]["n_bootstrapped"]`` records how many arrived before
        stage ``k``.  ``passes.stages`` is ``(stumps, thresholds, chain)`` of the stages
        so far, for a source that scans with them without building full rows (the Haar
        face detector's compiled scan)."""
        validate_params(self)
        X, ys = self._binary_data(X, y)
        rng = as_generator(self.random_state)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"n_samples = {n}: a cascade needs examples of both classes")
        if negatives is not None and not callable(negatives):
            raise TypeError(f"negatives must be callable or None, got {type(negatives).__name__}")
        run = _CascadeRun(X, ys, self._holdout(ys, rng, validation_mask), self)
        # bootstrapping keeps the negatives alive at these counts
        n0_tr, n0_va = int((ys[run.tr] < 0).sum()), int((ys[run.va] < 0).sum())
        caps = _stage_caps(self.max_weak)
        timed_out = False
        for s in range(int(self.n_stages)):
            try:
                data = self._stage_samples(run, rng)
                if data is None:
                    break
                res = self._boost_stage(run, s, data, caps[min(s, len(caps) - 1)])
                if len(res.stumps) == 0:
                    break
                op = self._operating_point(run, data, res.stumps)
                self._keep_stage(run, s, data, res, op)
                self._reject(run, res.stumps, op)
                _, B, n_left = run.goal
                if run.interrupted or B >= 1.0 or n_left < 1:
                    break
                if negatives is not None:
                    self._refill(run, negatives, n0_tr, n0_va)
                if self.max_time is not None and time.perf_counter() - run.t0 >= self.max_time:
                    timed_out = s + 1 < int(self.n_stages)
                    break
            except KeyboardInterrupt:
                # Ctrl-C inside the stage's boosting (or its bookkeeping): the stages
                # completed so far are the model; before the first one there is none
                if not run.thresholds:
                    raise
                run.interrupted = True
                break
        return self._finish(run, timed_out)

    def _holdout(self, ys, rng, validation_mask):
        """The rows held out to choose operating points (:meth:`fit`'s
        ``validation_mask``, else a stratified ``validation_fraction``), or None: the
        operating points are chosen on the training rows."""
        n = len(ys)
        if validation_mask is not None:
            hold = np.asarray(validation_mask, dtype=bool).ravel()
            if hold.shape != (n,):
                raise ValueError(f"validation_mask must have {n} entries, got {hold.shape}")
            for part, name in ((hold, "validation"), (~hold, "training")):
                if not ((ys[part] > 0).any() and (ys[part] < 0).any()):
                    raise ValueError(f"the {name} rows must hold both classes")
            return hold
        if self.validation_fraction > 0:
            hold = np.zeros(n, dtype=bool)
            for c in (1.0, -1.0):
                idx = np.flatnonzero(ys == c)
                k = round(self.validation_fraction * len(idx))
                if 0 < k < len(idx):
                    hold[rng.choice(idx, k, replace=False)] = True
            if hold.any() and (ys[~hold] > 0).any() and (ys[~hold] < 0).any():
                return hold
        return None

    def _stage_samples(self, run, rng):
        """The rows of the next stage: the alive training rows (at most ``max_negatives``
        negatives, a random subset) and the alive validation rows; None when a class is
        too small to train a stage."""
        X, ys = run.X, run.ys
        a_tr = run.tr[run.alive[run.tr]]
        a_va = run.va[run.alive[run.va]]
        pos_tr, neg_tr = a_tr[ys[a_tr] > 0], a_tr[ys[a_tr] < 0]
        pos_va, neg_va = a_va[ys[a_va] > 0], a_va[ys[a_va] < 0]
        need = 2 if self.stage_learner in ASYM_VARIANTS else 1
        if min(len(pos_tr), len(neg_tr)) < need or min(len(pos_va), len(neg_va)) < 1:
            return None
        if self.max_negatives is not None and len(neg_tr) > self.max_negatives:
            neg_tr = np.sort(rng.choice(neg_tr, int(self.max_negatives), replace=False))
        idx = np.concatenate([pos_tr, neg_tr])
        iv = np.concatenate([pos_va, neg_va])
        A, B, n_left = run.goal
        return _StageSamples(
            idx=idx,
            n_pos=len(pos_tr),
            n_neg=len(neg_tr),
            Xv=X[iv],
            F0v=run.Fc[iv] if run.chain else np.zeros(len(iv)),
            nvp=len(pos_va),
            goal=(min(A, 1.0), B, n_left),
        )

    def _boost_stage(self, run, s, data, max_weak):
        """Boost stage ``s`` on ``data``'s training rows until its ROC curve on the
        validation rows meets the goal (the stopping callback), ``max_time`` runs out or
        ``max_weak`` weak classifiers; every round's record goes to the cascade's
        monitor."""
        goal, Xv, nvp, F0v = data.goal, data.Xv, data.nvp, data.F0v

        def stop(st):
            F = F0v + st.evaluate(Xv).sum(axis=0)
            done = False
            if self.rule != "two-point" or self._may_attain(F, nvp, goal):
                op = select_operating_point(F[:nvp], F[nvp:], *goal, rule=self.rule)
                # a stage that rejects no negative is not done, whatever the plan
                # says (a recycled split can be constant on the windows reaching it)
                done = op.attained and op.far < 1.0
            if self.max_time is not None and time.perf_counter() - run.t0 >= self.max_time:
                done = True
            return done or run.interrupted  # (set by record)

        def record(rec):
            row = {
                **rec,
                "iteration": run.n_round,
                "stage_round": rec["iteration"],
                "stage": s,
                "t_total": time.perf_counter() - run.t0,
            }
            run.n_round += 1
            try:  # (after a Ctrl-C: recorded, nobody called back)
                run.monitor.record(row, notify=not run.interrupted)
            except KeyboardInterrupt:
                run.interrupted = True

        kw = dict(
            max_weak=max_weak,
            F0=run.Fc[data.idx] if run.chain else None,
            recycle=run.pool,
            recycle_lambda=0.0 if self.recycle is None else float(self.recycle),
            stop=stop,
            on_round=record,
            max_bins=self.max_bins,
        )
        Xs, yss = run.X[data.idx], run.ys[data.idx]
        if self.stage_learner in ASYM_VARIANTS:
            return fit_asymmetric_stage(
                Xs,
                yss,
                kind=self.stage_learner,
                theta=float(self.theta),
                sigma=float(self.sigma),
                **kw,
            )
        r = float(self.cost_ratio)
        c_pos, c_neg = 2.0 * r / (1.0 + r), 2.0 / (1.0 + r)
        return fit_cost_sensitive_stage(
            Xs, yss, variant=self.stage_learner, c_pos=c_pos, c_neg=c_neg, **kw
        )

    def _operating_point(self, run, data, st):
        """The stage's operating point on the validation rows: the ``rule``'s threshold
        for the remaining goal, or the ``fallback``'s when the goal is out of reach."""
        F = data.F0v + st.evaluate(data.Xv).sum(axis=0)
        nvp = data.nvp
        return select_operating_point(
            F[:nvp], F[nvp:], *data.goal, rule=self.rule, fallback=self.fallback
        )

    def _keep_stage(self, run, s, data, res, op):
        """Append stage ``s`` to the cascade (its table row first: a Ctrl-C between the
        appends is trimmed by :meth:`_finish`) and its splits to the recycling pool."""
        st = res.stumps
        splits = set(zip(st.feature.tolist(), st.threshold.tolist()))
        run.table.append(
            {
                "stage": s,
                "n_weak": len(st),
                "n_new_weak": len(splits - run.seen),
                "threshold": op.threshold,
                "recall": op.recall,
                "far": op.far,
                "attained": op.attained,
                "n_pos": data.n_pos,
                "n_neg": data.n_neg,
                "n_recycled": res.n_recycled,
                "n_bootstrapped": run.n_boot,
                "goal": [data.goal[0], data.goal[1], data.goal[2]],
            }
        )
        run.seen |= splits
        run.stumps.append(st)
        run.thresholds.append(op.threshold)
        if self.recycle is not None:
            run.pool = st if run.pool is None else run.pool.concat(st)

    @staticmethod
    def _reject(run, st, op):
        """Only the rows passing the new stage go on (their chained scores updated); the
        goal of the remaining stages becomes ``(A / a, B / b, n - 1)``."""
        rows = np.flatnonzero(run.alive)
        Fall = st.evaluate(run.X[rows]).sum(axis=0)
        if run.chain:
            Fall += run.Fc[rows]
            run.Fc[rows] = Fall
        run.alive[rows[Fall <= op.threshold]] = False
        A, B, n_left = run.goal
        run.goal = (A / op.recall, B / op.far, n_left - 1)

    def _refill(self, run, negatives, n0_tr, n0_va):
        """Bootstrapping: replace the rejected negatives by fresh ones that pass every
        stage so far (:meth:`_bootstrap`); every row is alive again."""
        run.X, run.ys, hold, run.Fc, run.n_boot = self._bootstrap(
            negatives, run.X, run.ys, run.hold, run.Fc, run.alive, run.stumps,
            run.thresholds, run.chain, n0_tr, n0_va,
        )  # fmt: skip
        run.set_rows(hold)
        run.alive = np.ones(run.X.shape[0], dtype=bool)

    def _finish(self, run, timed_out):
        """The fitted attributes from the stages complete in every list."""
        # a Ctrl-C between the three appends of a stage: keep the stages complete in all
        k = min(len(run.stumps), len(run.thresholds), len(run.table))
        stumps, thresholds, table = run.stumps[:k], run.thresholds[:k], run.table[:k]
        history = run.monitor.history
        if not stumps:
            if run.interrupted:
                raise KeyboardInterrupt
            raise ValueError("no stage could be trained (too few examples of a class)")
        self.converged_ = not (run.interrupted or timed_out)
        if run.interrupted:
            warn_interrupted(
                len(history),
                stacklevel=4,
                kept=f"the cascade of the {k} stage(s) completed before it "
                f"({len(history)} boosting rounds recorded)",
            )
        self.stumps_ = stumps
        self.thresholds_ = np.asarray(thresholds, dtype=np.float64)
        self.stages_ = table
        self.history_ = history
        self.n_stages_ = len(stumps)
        self.chain_ = run.chain  # as fitted: set_params(chain=...) does not change decisions
        return self

    @staticmethod
    def _may_attain(F, n_pos, goal) -> bool:
        """False only when two-point planning surely cannot meet ``goal`` with the scores
        ``F`` (positives first): the LP's closed-form optimum (:func:`two_point_optimum`)
        is below ``log A`` by more than 1e-4, far beyond the error HiGHS's tolerances (1e-7 on
        a row) allow in its optimum, so skipping the LP never changes a decision."""
        _, alpha, beta = roc_points(F[:n_pos], F[n_pos:])
        A, B, n = goal
        return two_point_optimum(alpha, beta, B, n) >= np.log(A) - 1e-4

    @staticmethod
    def _walk(stumps, thresholds, Z, chain):
        """Send the rows of ``Z`` through the stages ``(stumps, thresholds)``, each only as
        far as it passes.  Returns ``(depth, margin, score)``: stages passed, ``F -
        threshold`` at the last stage evaluated, and that stage's score ``F`` (with
        ``chain``, the running sum over the stages, [Sun2012 eq. 4.59])."""
        n = Z.shape[0]
        depth = np.zeros(n, dtype=np.int64)
        margin, score = np.zeros(n), np.zeros(n)
        rows = np.arange(n)
        for st, thr in zip(stumps, thresholds):
            if len(rows) == 0:
                break
            F = st.evaluate(Z[rows]).sum(axis=0)
            if chain:
                F += score[rows]
            score[rows] = F
            margin[rows] = F - thr
            ok = F > thr
            depth[rows[ok]] += 1
            rows = rows[ok]
        return depth, margin, score

    def _bootstrap(
        self, negatives, X, ys, hold, Fc, alive, stumps, thresholds, chain, n0_tr, n0_va
    ):
        """Drop the rejected rows and add fresh negatives that pass every stage so far
        (:meth:`fit`'s ``negatives``); ``Fc``: the rows' chained scores (``chain``: the
        fit's).  Returns ``(X,
        ys, hold, Fc, n_added)``."""
        keep = np.flatnonzero(alive)
        X, ys, Fc = X[keep], ys[keep], Fc[keep]
        hold = None if hold is None else hold[keep]
        neg = ys < 0
        if hold is None:
            need_tr, need_va = max(n0_tr - int(neg.sum()), 0), 0
        else:
            need_tr = max(n0_tr - int((neg & ~hold).sum()), 0)
            need_va = max(n0_va - int((neg & hold).sum()), 0)
        if need_tr + need_va == 0:
            return X, ys, hold, Fc, 0
        d = X.shape[1]
        st_, th_ = list(stumps), list(thresholds)
        K = len(st_)

        def passes(Z):
            Z = check_array(Z, accept_sparse="csr", dtype=np.float64, ensure_min_samples=0)
            if Z.shape[1] != d:
                raise ValueError(f"passes: rows must have {d} features, got {Z.shape[1]}")
            return self._walk(st_, th_, Z, chain)[0] == K

        # the stages so far, for a source that evaluates them in its own (compiled) form
        passes.stages = (st_, th_, chain)
        out = negatives(passes, need_tr, need_va)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError("negatives must return a pair (rows, hold)")
        Z = check_array(out[0], accept_sparse="csr", dtype=np.float64, ensure_min_samples=0)
        zh = np.asarray(out[1], dtype=bool).ravel()
        if Z.shape[0] == 0:
            return X, ys, hold, Fc, 0
        if Z.shape[1] != d or zh.shape != (Z.shape[0],):
            raise ValueError(
                f"negatives returned {Z.shape} rows with {zh.shape} hold flags; "
                f"expected (m, {d}) and (m,)"
            )
        depth, _, Fz = self._walk(st_, th_, Z, chain)
        ok = depth == K
        Z, zh, Fz = Z[ok], zh[ok], Fz[ok]
        if hold is None:
            zh[:] = False
        stack = sp.vstack if sp.issparse(X) or sp.issparse(Z) else np.vstack
        X = stack([X, Z])
        if sp.issparse(X):
            X = X.tocsr()
        ys = np.concatenate([ys, -np.ones(Z.shape[0])])
        Fc = np.concatenate([Fc, Fz])
        hold = None if hold is None else np.concatenate([hold, zh])
        return X, ys, hold, Fc, int(Z.shape[0])

    # ------------------------------------------------------------------------ predict
    def _depth_scores(self, X):
        """(stages passed, margin ``F - threshold`` at the last stage evaluated)."""
        X = self._inputs(X)
        depth, margin, _ = self._walk(self.stumps_, self.thresholds_, X, self.chain_)
        return depth, margin

    def decision_function(self, X):
        """Positive iff accepted by every stage; ordered by the number of stages passed,
        then by the margin at the deciding stage: a window rejected at stage ``k`` (of
        ``K``) scores in ``(k - K, k - K + 1/2]``, an accepted one in ``(0, 1/2)``."""
        depth, margin = self._depth_scores(X)
        K = self.n_stages_
        return np.where(depth == K, _sigmoid(margin) - 0.5, depth - K + _sigmoid(margin))

    def figure_of_merit(self, X) -> dict:
        """Table 4.1 on windows ``X``: the share of windows entering each stage, each
        stage's weak classifiers, and the expected number of weak classifiers evaluated
        per window (``expected_weak``; recycled splits counted once:
        ``expected_distinct_weak``)."""
        depth, _ = self._depth_scores(X)
        K = self.n_stages_
        entering = np.array([(depth >= k).mean() for k in range(K)])
        n_weak = np.array([t["n_weak"] for t in self.stages_])
        n_new = np.array([t["n_new_weak"] for t in self.stages_])
        return {
            "entering": entering.tolist(),
            "accepted": float((depth == K).mean()),
            "n_weak": n_weak.tolist(),
            "expected_weak": float(entering @ n_weak),
            "expected_distinct_weak": float(entering @ n_new),
            "total_weak": int(n_weak.sum()),
        }

    # ------------------------------------------------------------------------ persistence
    def _get_state(self):
        check_is_fitted(self, "stumps_")
        ptr = np.concatenate([[0], np.cumsum([len(s) for s in self.stumps_])])
        cat = lambda a: np.concatenate([getattr(s, a) for s in self.stumps_])  # noqa: E731
        arrays = {
            "classes": self.classes_,
            "thresholds": self.thresholds_,
            "ptr": ptr.astype(np.int64),
            "feature": cat("feature"),
            "split": cat("threshold"),
            "v_lo": cat("v_lo"),
            "v_hi": cat("v_hi"),
        }
        meta = {
            # the chaining the model was fitted with, whatever set_params said since
            "params": {**json_params(self), "chain": bool(self.chain_)},
            "n_features_in": int(self.n_features_in_),
            "stages": self.stages_,
            "history": self.history_,
            "converged": bool(self.converged_),
        }
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        est = cls(**meta["params"])
        est.classes_ = np.asarray(arrays["classes"])
        est.thresholds_ = np.asarray(arrays["thresholds"], dtype=np.float64)
        ptr = np.asarray(arrays["ptr"], dtype=np.int64)
        d = int(meta["n_features_in"])
        if len(ptr) != len(est.thresholds_) + 1 or ptr[-1] != len(arrays["feature"]):
            raise ValueError("model file is inconsistent: stages do not match the weak learners")
        f = np.asarray(arrays["feature"], dtype=np.int64)
        if len(f) and (f.min() < 0 or f.max() >= d):
            raise ValueError("model file is inconsistent: a weak learner uses an unknown feature")
        est.stumps_ = [
            RealStumps(f[a:b], arrays["split"][a:b], arrays["v_lo"][a:b], arrays["v_hi"][a:b], d)
            for a, b in itertools.pairwise(ptr)
        ]
        est.n_features_in_ = d
        est.stages_ = list(meta["stages"])
        est.history_ = list(meta["history"])
        est.n_stages_ = len(est.stumps_)
        est.chain_ = bool(est.chain)
        # files from before the flag: True
        est.converged_ = file_flag(meta.get("converged", True), "converged")
        return est
