"""StructBoost estimators (Shen, Lin, van den Hengel, IEEE TPAMI 2014).

:class:`StructBoost` trains any :class:`~maxmargin.tasks.base.StructuredTask` by column
generation over weak structured learners with a 1-slack (or m-slack) cutting-plane master;
:class:`StructBoostClassifier` is the scikit-learn classifier for binary and multi-class
data built on it.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import (
    MONITOR_PARAMS,
    N_JOBS,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Options,
    as_generator,
    store_params,
    validate_params,
)
from maxmargin.exceptions import ConvergenceWarning, EmptyModelWarning, warn_interrupted
from maxmargin.learners._binary import SparseInput
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.solvers.column_generation import (
    FORMULATION_ALIASES,
    FORMULATIONS,
    MASTERS,
    fit_structboost,
)
from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.solvers.smoothed_master import CERTIFY, GAP_TOL, INNER_TOL
from maxmargin.tasks.base import LabelCodingTask, StructuredTask
from maxmargin.tasks.boxes import BoxTask
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.classification import BinaryTask, MultiClassTask
from maxmargin.tasks.crf import CRFTask
from maxmargin.tasks.hierarchy import HierarchyTask, LabelAugmentedTask, as_taxonomy
from maxmargin.tasks.ranking import PairwiseRankingTask, RankingTask
from maxmargin.tasks.taxonomy import LOSS_KINDS
from maxmargin.weak import WeakLearner, is_weak_learner_name, make_weak_learner

__all__ = ["StructBoost", "StructBoostClassifier"]

#: largest C accepted (the master LP's costs span 1 to C/m; see _validate_hyperparameters)
MAX_C = 1e12

#: ``weak_learner="auto"``: the exact stump up to this many rows of weak inputs, the
#: histogram stump (<= 255 bins per feature, as LightGBM) above (docs/structboost.md,
#: "Exact or binned stumps")
AUTO_EXACT_ROWS = 5000


def resolve_weak_learner(spec, n_rows: int):
    """``spec`` with ``"auto"`` replaced by ``"stump"`` (at most ``AUTO_EXACT_ROWS`` rows)
    or ``"hist_stump"``."""
    if isinstance(spec, str) and spec == "auto":
        return "stump" if n_rows <= AUTO_EXACT_ROWS else "hist_stump"
    return spec


def _weak_name(spec) -> str:
    """A resolved weak learner as stored in model files: its name, or its class name."""
    return spec if isinstance(spec, str) else type(spec).__name__


_TASKS = {
    "BoxTask": BoxTask,  # Pascal-overlap boxes (tracking)
    "BinaryTask": BinaryTask,
    "MultiClassTask": MultiClassTask,
    "HierarchyTask": HierarchyTask,
    "LabelAugmentedTask": LabelAugmentedTask,
    "PairwiseRankingTask": PairwiseRankingTask,
    "RankingTask": RankingTask,
    "CRFTask": CRFTask,
    "ChainTask": ChainTask,
}


@register
class StructBoost(SparseInput, Persistent, BaseEstimator):
    """Boosting for structured outputs by column generation ([Shen2014 Algs. 1 and 2]).

    Minimises ``||w||_1 + C * (1/m) sum_i max_y [Delta(y_i, y) - w.dPsi_i(y)]_+`` over
    ``w >= 0``, where the columns of ``Psi`` are weak structured learners built by the
    ``task`` from weak classifiers found by ``weak_learner``.  Algorithm and equation
    numbers are those of Shen et al., IEEE TPAMI 2014 [Shen2014].

    Parameters
    ----------
    task : StructuredTask or None, default=None
        What is predicted (e.g. ``MultiClassTask()``); bound to the data at ``fit``.
        Required: ``fit`` raises ``ValueError`` without one.
    weak_learner : str or WeakLearner, default="stump"
        Name in :data:`maxmargin.weak.WEAK_LEARNERS` (or "hist_tree:D" for a histogram
        tree of depth D, see docs/weak_learners.md), ``"auto"`` (the exact stump up to
        ``AUTO_EXACT_ROWS`` = 5000 rows of weak inputs, the histogram stump above), or
        an instance.
    C : float, default=100.0
        Weight of the average hinge loss.  No weak learner can enter the model unless
        ``C > 1`` for 0/1-type losses (a column's gain is at most ``C`` times its range).
    master : {"auto", "fast", "exact"}, default="auto"
        How the restricted master is solved each iteration.  "fast": the hinge smoothed
        by log-sum-exp and solved by projected L-BFGS, warm-started from the previous
        weights (tasks whose outputs can be listed: binary, multi-class, hierarchy,
        pairwise ranking); "exact": the LP of ``formulation`` with HiGHS, which gives the
        paper's exact column sequence.  Both end with the exact LP optimum over the final
        weak learners, certified by a duality gap (``history_[-1]["gap"]``).  "auto" is
        "fast" where it applies, else "exact".  See docs/structboost.md.
    formulation : {"auto", "1-slack", "n-slack"}, default="auto"
        The LP of the exact master: [Shen2014 eq. 9] with cutting planes, or [Shen2014 eq. 3] with
        one slack per example and row generation (the paper's "m-slack"; that spelling is accepted).
        Both have the same optimum (Theorem 2.1).  "auto" takes n-slack when the task's
        outputs can be listed, else 1-slack.
    eps_cp : float, default=0.01
        Cutting-plane tolerance on the average hinge ([Shen2014 Alg. 2 line 10]).
    eps_cg : float, default=1e-6
        Column generation stops when no weak learner has gain above ``1 + eps_cg``.
    tol : float, default=1e-4
        Relative tolerance of the fast master's inner loop: it stops when an L-BFGS step
        lowers the smoothed objective by less than this fraction.
    max_iter : int, default=200
        Maximum column-generation (boosting) steps: weak-learner entries, one per
        iteration unless ``columns_per_iter`` > 1 (then still at most ``max_iter`` new
        weak learners).
    max_time : float or None, default=None
        Wall-clock limit in seconds for the whole fit, the final exact polish included
        (10 % of it is kept for the polish of the fast master).  If the polish cannot
        finish in time, the last iterate is returned with its certified gap.
    max_cp_rounds : int or None, default=10
        Cutting-plane rounds per boosting iteration.  Weak learners are priced from the
        duals of this truncated master; the loop is always run to ``eps_cp`` before
        convergence is declared and after the last iteration, so the final model is
        ``eps_cp``-accurate for its weak learners.  None: run every loop to ``eps_cp``
        (the paper's [Shen2014 Alg. 2]).
    random_state : int, RandomState, Generator or None, default=None
        Tie breaking of the initial violators ([Shen2014 Alg. 1 line 2]).
    n_jobs : int or None, default=None
        Workers on the active joblib backend (loky processes by default;
        ``joblib.parallel_config(backend="dask")`` for a Dask cluster) for the stump
        search (``"stump"``, ``"hist_stump"``) over fixed feature blocks; other weak
        learners search serially.  With a :class:`~maxmargin.tasks.crf.CRFTask` the
        loss-augmented graph cuts also run over fixed shards of the images, on ``n_jobs``
        numba threads (or on the workers of a process / cluster backend chosen with
        ``joblib.parallel_config``); a ``ChainTask``'s oracle on ``n_jobs`` numba
        threads; every other task's oracle runs serially in this process.  Every integer
        ``n_jobs`` gives the same model bit for bit (docs/scaling.md).  None: no joblib.
    verbose : int, default=0
        Print one line per iteration when > 0.
    callback : callable or None, default=None
        Called with each iteration's record (the dict appended to ``history_``).
    warm_start : bool, default=False
        When fitted already, start the next ``fit`` from the current weak learners and
        weights (they enter the new master as columns, re-evaluated on the new data;
        ``max_iter`` then counts the iterations added).  For re-training on data that
        changes a little, such as a tracker's sliding window of frames.
    certify : {"gap", "exact", "none"}, default="gap"
        How a fit of the fast master ends.  ``"gap"``: sharpen the smoothing (on a
        screened set of columns) until the certified relative duality gap over the final
        weak learners is at most ``gap_tol`` -- no LP, so the certificate costs about
        what a few iterations cost, at any size.  ``"exact"``: the exact LP optimum over
        the final weak learners (the m-slack polish; gap about 1e-12), whose cost grows
        with rows x classes.  ``"none"``: the smoothed master's solution as it is
        (``gap_`` is still its certified gap), for frequent warm re-trainings (the
        tracker).  The exact master (``master="exact"``) always ends exactly.
    gap_tol : float, default=1e-2
        Relative duality gap that ``certify="gap"`` reaches (a ``ConvergenceWarning``
        says so when max_time or the sharpest smoothing stopped it above).
    inner_tol : {"fixed", "adaptive"}, default="fixed"
        The fast master's solves during the iterations.  ``"fixed"``: each to ``tol``.
        ``"adaptive"``: an inexact master -- each solve after new columns stops at a
        relative decrease of 0.003 times the outer column-generation gap, between ``tol``
        and 1e-3, and one solve to ``tol`` comes before convergence is declared and
        before the certificate (which is unchanged).  Fewer L-BFGS steps per iteration,
        a different column sequence (docs/structboost.md, "the inexact master").
    columns_per_iter : int, default=1
        Weak classifiers that may enter per iteration, one master solve for all of them:
        after the best, the next candidates of the search (one per slot) whose gain
        still exceeds ``1 + eps_cg``, so each is a valid entering column of
        [Shen2014 Alg. 1] and the stopping test and certificate are unchanged.
        ``max_iter`` keeps counting weak learners (``n_iter_`` counts iterations, so it
        may be smaller).  Only tasks with several slots of candidates (multi-class with
        shared stumps, label coding) use it; docs/structboost.md, "several columns per
        iteration".
    polish : bool, default=True
        Legacy switch: False is ``certify="none"``.

    Attributes
    ----------
    task_ : StructuredTask
        The task bound to the training data.
    hypotheses_ : Hypotheses
        The weak classifiers with non-zero weight.
    slot_weights_ : ndarray of shape (n_weak, n_slots)
        Weight of every weak classifier in every slot of the joint feature map.
    weight_path_ : ndarray of shape (n_iter, n_weak, n_slots)
        ``slot_weights_`` after every iteration (for :meth:`staged_predict`).
    master_, formulation_ : str
        The master and LP formulation used ("auto" resolved).
    weak_learner_ : str or WeakLearner
        The weak learner used (``"auto"`` resolved).
    history_ : list of dict
        Per iteration: ``objective`` (primal at the iteration's w), ``dual_bound`` (a
        certified lower bound on the restricted master), ``gap`` (relative),
        ``master_objective`` (the master's own value: LP or smoothed), ``xi`` (mean
        hinge), ``n_weak``, ``n_columns``, ``n_planes`` (rows of the LP), ``n_cp`` (LP
        solves or L-BFGS steps), ``gain`` (best weak learner's), ``certified``, and
        seconds in weak-learner search (``t_weak``), master (``t_master``), total so far
        (``t_total``).
    objective_ : float
        Final primal objective.
    gap_ : float
        Relative duality gap of the final model over its weak learners (about 1e-12
        when the final polish finished).
    n_iter_ : int
        Number of boosting iterations run.
    converged_ : bool
        True when the column-generation test ``gain <= 1 + eps_cg`` was met.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin import MultiClassTask, StructBoost
    >>> X, y = load_iris(return_X_y=True)
    >>> sb = StructBoost(task=MultiClassTask(), max_iter=20, random_state=0).fit(X, y)
    >>> sb.decision_function(X).shape
    (150, 3)
    >>> bool(np.mean(sb.predict(X) == y) > 0.9)
    True

    References
    ----------
    Shen, Lin & van den Hengel, "StructBoost: Boosting methods for predicting structured
    output variables", IEEE TPAMI 2014 [Shen2014]; LPBoost, Demiriz et al., Machine
    Learning 2002 [Demiriz2002]; HiGHS, Huangfu & Hall 2018 [Huangfu2018] (full
    citations: docs/references.md).
    """

    def __init__(
        self,
        *,
        task: StructuredTask | None = None,
        weak_learner="stump",
        C: float = 100.0,
        master: str = "auto",
        formulation: str = "auto",
        eps_cp: float = 0.01,
        eps_cg: float = 1e-6,
        tol: float = 1e-4,
        max_iter: int = 200,
        max_time: float | None = None,
        max_cp_rounds: int | None = 10,
        random_state=None,
        n_jobs=None,
        verbose: int = 0,
        callback=None,
        warm_start: bool = False,
        polish: bool = True,
        certify: str = "gap",
        gap_tol: float = GAP_TOL,
        inner_tol: str = "fixed",
        columns_per_iter: int = 1,
    ):
        store_params(self, locals())

    # -- parameters ----------------------------------------------------------------------
    _parameter_constraints = {
        "task": [None, StructuredTask],
        "weak_learner": [str, WeakLearner],
        "C": [POSITIVE],
        "master": [Options("auto", *MASTERS)],
        "formulation": [Options("auto", *FORMULATIONS, *FORMULATION_ALIASES)],
        "eps_cp": [POSITIVE],
        "eps_cg": [NON_NEGATIVE],
        "tol": [POSITIVE],
        "max_iter": [POSITIVE_INT],
        **MONITOR_PARAMS,
        "max_cp_rounds": [None, POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "n_jobs": N_JOBS,
        "warm_start": [bool, np.bool_],
        "polish": [bool, np.bool_],
        "certify": [Options(*CERTIFY)],
        "gap_tol": [POSITIVE],
        "inner_tol": [Options(*INNER_TOL)],
        "columns_per_iter": [POSITIVE_INT],
    }

    def _validate_hyperparameters(self) -> None:
        validate_params(self)
        if self.C > MAX_C:
            raise ValueError(
                f"C = {self.C:g} is too large for the LP master (costs 1 against C/m): "
                f"use C <= {MAX_C:g}; beyond about 1e9 the training hinge is already at "
                "its minimum on most data, so larger C changes nothing"
            )
        make_weak_learner(resolve_weak_learner(self.weak_learner, 0))  # unknown names raise

    def _search_n_jobs(self):
        """``n_jobs`` of the parallel stump search (subclasses may use ``n_jobs`` for
        something else)."""
        return self.n_jobs

    def _make_task(self, y) -> StructuredTask:
        if not isinstance(self.task, StructuredTask):
            raise ValueError(f"task must be a StructuredTask instance, got {self.task!r}")
        return self.task

    # -- fitting -------------------------------------------------------------------------
    def fit(self, X, y):
        """Fit the model by column generation.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Training outputs, in the form the ``task`` expects (class labels for the
            label-coding tasks, relevance grades for ranking).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._fit(X, y)

    def _fit(self, X, y, y_numeric=False, *, init_outputs=None, keep_outputs=False, **bind_params):
        """The fit.  Two options for callers that re-train on overlapping data (the
        tracker's sliding window): ``init_outputs``, the warm start's classifiers'
        (``hypotheses_``) outputs on the new task's weak inputs, passed to
        ``fit_structboost(init_outputs=)`` (the same fit as evaluating them, when equal);
        ``keep_outputs``: keep the fitted ``hypotheses_``' outputs on this task's weak
        inputs as ``_train_outputs`` (n_hypotheses, n_z), which the caller can reuse."""
        self._validate_hyperparameters()
        self._train_outputs = None
        if getattr(self.task, "structured_inputs", False):
            # inputs the task validates itself (e.g. a list of CRF graphs)
            self.task_ = self._make_task(y).bind(X, y, **bind_params)
            self.n_features_in_ = int(self.task_.weak_inputs().shape[1])
        else:
            X, y = validate_data(
                self,
                X,
                y,
                dtype=np.float64,
                ensure_min_samples=1,
                accept_sparse=["csr", "csc"],
                y_numeric=y_numeric,
            )
            self.task_ = self._make_task(y).bind(X, y, **bind_params)

        monitor = ConvergenceMonitor(
            "structboost",
            verbose=self.verbose,
            callback=self.callback,
            fields=("iteration", "objective", "xi", "n_weak", "n_planes", "gain", "t_total"),
        )
        self.weak_learner_ = resolve_weak_learner(
            self.weak_learner, self.task_.weak_inputs().shape[0]
        )
        weak = make_weak_learner(self.weak_learner_)
        init = {}
        prev = getattr(self, "hypotheses_", None)
        if (
            self.warm_start
            and prev is not None
            and len(prev)
            and isinstance(prev, weak.hypotheses_class)
            and prev.n_features == self.task_.weak_inputs().shape[1]
            and self.slot_weights_.shape[1] == self.task_.n_slots
        ):
            init = {"init_hypotheses": prev, "init_slot_weights": self.slot_weights_}
            if init_outputs is not None:
                init["init_outputs"] = init_outputs
        dense = self.task_.dense_outputs
        master = self.master
        if master == "auto":
            master = "fast" if self.task_.smooth_master else "exact"
        formulation = FORMULATION_ALIASES.get(self.formulation, self.formulation)
        if formulation == "auto" or master == "fast":
            # (for the fast master: the LP of the final polish)
            formulation = "n-slack" if dense else "1-slack"
        self.master_ = master
        self.formulation_ = formulation
        res = fit_structboost(
            self.task_,
            weak,
            C=float(self.C),
            master=master,
            formulation=formulation,
            eps_cp=float(self.eps_cp),
            eps_cg=float(self.eps_cg),
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            max_time=self.max_time,
            rng=as_generator(self.random_state),
            monitor=monitor,
            max_cp_rounds=self.max_cp_rounds,
            n_jobs=self._search_n_jobs(),
            polish=bool(self.polish),
            certify=self.certify,
            gap_tol=float(self.gap_tol),
            inner_tol=self.inner_tol,
            columns_per_iter=int(self.columns_per_iter),
            **init,
        )
        self._store_result(res)
        if keep_outputs and res.outputs is not None:
            used = np.flatnonzero(np.any(res.slot_weights(self.task_.n_slots) != 0, axis=1))
            self._train_outputs = res.outputs[used]  # a copy (fancy indexing)
        self._warn_about_result(res)
        return self

    #: a final relative duality gap above this is worth a warning
    GAP_WARNING = 1e-6

    def _gap_target(self) -> float:
        """The certified gap the fit promises (plus rounding)."""
        if self.master_ == "fast" and self.certify == "gap":
            return float(self.gap_tol) * (1 + 1e-9)
        return self.GAP_WARNING

    def _warn_about_result(self, res) -> None:
        if res.stop_reason == "interrupted":
            warn_interrupted(len(res.history), stacklevel=4)
        elif len(self.hypotheses_) == 0:
            warnings.warn(
                f"no weak learner entered the model (C = {self.C:g}): it predicts a "
                "constant.  A weak learner enters only if its gain exceeds 1 and gains are "
                "at most C times the loss range, so C must be well above 1 (the paper uses "
                "10 to 1000).",
                EmptyModelWarning,
                stacklevel=3,
            )
        elif (
            res.gap > self._gap_target()
            and (not res.certified or self.task_.dense_outputs)
            and ((self.polish and self.certify != "none") or self.master_ != "fast")
        ):
            # (polish=False asked for the smoothed solution and its gap)
            # (a certified 1-slack model of a task without listable outputs -- ranking --
            # is accurate to C * eps_cp by design, [Shen2014 Alg. 2])
            if res.stop_reason == "stalled":
                why = "the smoothing continuation stalled at its sharpest smoothing"
            elif not res.certified:
                why = "max_time ran out before the final exact solve finished"
            else:
                why = f"the LP is badly scaled at C = {self.C:g}"
            warnings.warn(
                f"the returned model is within a relative duality gap of {res.gap:.2g} of "
                f"the optimum over its weak learners ({why})",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _store_result(self, res) -> None:
        W = res.slot_weights(self.task_.n_slots)
        used = np.flatnonzero(np.any(W != 0, axis=1))
        self.hypotheses_ = res.hypotheses.take(used)
        self.slot_weights_ = W[used]
        # weights after every iteration, over the used hypotheses, for staged prediction
        self.weight_path_ = (
            np.stack([self._path_weights(res, w, used) for w in res.w_path])
            if res.w_path
            else np.zeros((0, *self.slot_weights_.shape))
        )
        self.history_ = res.history
        self.objective_ = res.objective
        self.gap_ = res.gap
        self.n_iter_ = len(res.history)
        self.converged_ = res.converged

    def _path_weights(self, res, w, used) -> np.ndarray:
        W = np.zeros((len(res.hypotheses), self.task_.n_slots))
        k = len(w)
        np.add.at(W, (res.column_hyp[:k], res.column_slot[:k]), w)
        return W[used]

    # -- prediction ----------------------------------------------------------------------
    def _slot_scores(self, X, W=None) -> np.ndarray:
        check_is_fitted(self, "slot_weights_")
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=["csr", "csc"])
        W = self.slot_weights_ if W is None else W
        Z = self._prediction_inputs(X)
        if len(self.hypotheses_) == 0:
            return np.zeros((Z.shape[0], self.task_.n_slots))
        return self.hypotheses_.evaluate(Z).T @ W

    def _prediction_inputs(self, X):
        """Where the weak classifiers are evaluated: X itself, or the task's own samples
        (e.g. the (example, label) pairs of :class:`LabelAugmentedTask`)."""
        inputs = getattr(self.task_, "prediction_inputs", None)
        return X if inputs is None else inputs(X)

    def decision_function(self, X):
        """Joint scores ``w.Psi(x, y)`` for every output y, shape (n, n_outputs)."""
        check_is_fitted(self, "slot_weights_")
        return self.task_.slot_scores_to_label_scores(self._slot_scores(X))

    def predict(self, X):
        check_is_fitted(self, "slot_weights_")
        if getattr(self.task_, "structured_inputs", False):
            layout, Z = self.task_.prediction_layout(X)
            if len(self.hypotheses_) == 0:
                F = np.zeros((Z.shape[0], self.task_.n_slots))
            else:
                F = self.hypotheses_.evaluate(Z).T @ self.slot_weights_
            return self.task_.predict_from_scores(layout, F)
        return self.task_.decode(self.task_.predict_codes(self._slot_scores(X)))

    def staged_predict(self, X):
        """Predictions after each boosting iteration (the master is totally corrective,
        so every iteration re-weights all weak learners; the weight path is stored)."""
        check_is_fitted(self, "slot_weights_")
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=["csr", "csc"])
        Z = self._prediction_inputs(X)
        H = self.hypotheses_.evaluate(Z).T if len(self.hypotheses_) else None
        for W in self.weight_path_:
            F = H @ W if H is not None else np.zeros((Z.shape[0], self.task_.n_slots))
            yield self.task_.decode(self.task_.predict_codes(F))

    # -- persistence ---------------------------------------------------------------------
    _saved_meta = (
        *fitted("n_features_in_", "history_", "objective_", "n_iter_", "converged_"),
        ("gap_", float, np.nan),
        ("weak_learner_", _weak_name, None),  # (files written before it: None)
    )
    _saved_arrays = (("slot_weights_", np.float64), ("weight_path_", np.float64))
    _saved_hypotheses = "hypotheses_"
    _params_drop = ("callback", "task")
    _task_classes = _TASKS

    @classmethod
    def _loaded_params(cls, params, task):
        spec = params.get("weak_learner")
        if spec != "auto" and not is_weak_learner_name(spec):  # an instance, stored by name
            params["weak_learner"] = "stump"
        if params.get("formulation") == "m-slack":
            params["formulation"] = "n-slack"
        if cls is StructBoost:  # the task parameter: a fresh task of the stored class
            params["task"] = type(task)()
        return params

    def _load_extra(self, meta, arrays):
        task = self.task_
        if isinstance(task, LabelCodingTask):
            self.classes_ = task.classes_
        if self.slot_weights_.shape != (len(self.hypotheses_), task.n_slots):
            raise ValueError(
                "model file is inconsistent: weight matrix does not match "
                "the weak learners and the task"
            )
        if self.weight_path_.ndim != 3 or self.weight_path_.shape[1:] != self.slot_weights_.shape:
            raise ValueError("model file is inconsistent: weight path does not match")
        if not (np.all(np.isfinite(self.slot_weights_)) and np.all(np.isfinite(self.weight_path_))):
            raise ValueError("model file is inconsistent: non-finite weights")
        if isinstance(task, LabelCodingTask) and self.hypotheses_.n_features != self.n_features_in_:
            raise ValueError("model file is inconsistent: weak learners read other features")
        if isinstance(task, BoxTask) and self.hypotheses_.n_features != task.n_features_:
            raise ValueError("model file is inconsistent: weak learners read other features")


@register
class StructBoostClassifier(ClassifierMixin, StructBoost):
    """StructBoost for binary (LPBoost, Sec. 3.1) and multi-class (Sec. 3.3) data.

    Two classes give the binary task (a single score: LPBoost, [Demiriz2002]); more give
    the multi-class task; a ``taxonomy`` gives hierarchical classification (Sec. 3.4):
    ancestor coding of the classes and a tree loss, see
    :class:`~maxmargin.tasks.hierarchy.HierarchyTask`.  Section and equation numbers are
    those of [Shen2014].

    Parameters
    ----------
    C : float, default=100.0
        Weight of the average hinge loss; must be well above 1 for any weak learner to
        enter (the paper uses 10 to 1000).
    max_iter : int, default=200
        Maximum column-generation (boosting) steps: weak-learner entries, one per
        iteration unless ``columns_per_iter`` > 1 (then still at most ``max_iter`` new
        weak learners).
    weak_learner : str or WeakLearner, default="auto"
        ``"auto"``: exact decision stumps (``"stump"``) up to ``AUTO_EXACT_ROWS`` = 5000
        training rows, histogram stumps (``"hist_stump"``, <= 255 bins per feature, as
        LightGBM) above -- the same stumps wherever a feature has at most 255 distinct
        values, and a search whose cost does not grow with the distinct values (see
        docs/structboost.md, "Exact or binned stumps").  Otherwise a name in
        :data:`maxmargin.weak.WEAK_LEARNERS` (or "hist_tree:D" for a histogram tree of
        depth D, see docs/weak_learners.md) or an instance.
    sharing : {"shared", "per_class"}, default="shared"
        "shared": one weak classifier per iteration shared by all classes with one
        weight per class ([Shen2014 eq. 18]); "per_class": one new weak classifier per class per
        iteration.
    taxonomy : Taxonomy, dict, str, path or None, default=None
        Class tree (a :class:`~maxmargin.tasks.taxonomy.Taxonomy`, a dict, JSON text or
        a path to a JSON or ``parent child`` text file); None: flat classes.
    tree_loss : {"height", "half_path", "zero_one"}, default="height"
        Loss between classes of a ``taxonomy``: height of the lowest common ancestor
        ([Shen2014]), half the path length ([Nowozin2011], [Cai2004]) or 0/1.
    master : {"auto", "fast", "exact"}, default="auto"
        How the restricted master is solved; see :class:`StructBoost`.
    formulation : {"auto", "1-slack", "n-slack"}, default="auto"
        The LP of the exact master; see :class:`StructBoost`.
    eps_cp : float, default=0.01
        Cutting-plane tolerance on the average hinge ([Shen2014 Alg. 2 line 10]).
    eps_cg : float, default=1e-6
        Column generation stops when no weak learner has gain above ``1 + eps_cg``.
    tol : float, default=1e-4
        Relative tolerance of the fast master's inner loop.
    max_time : float or None, default=None
        Wall-clock limit in seconds for the whole fit.
    max_cp_rounds : int or None, default=10
        Cutting-plane rounds per boosting iteration (None: to ``eps_cp``).
    random_state : int, RandomState, Generator or None, default=None
        Tie breaking of the initial violators ([Shen2014 Alg. 1 line 2]).
    n_jobs : int or None, default=None
        Workers of the parallel stump search; see :class:`StructBoost`.
    verbose : int, default=0
        Print one line per iteration when > 0.
    callback : callable or None, default=None
        Called with each iteration's record (the dict appended to ``history_``).
    certify : {"gap", "exact", "none"}, default="gap"
        How the fit ends; see :class:`StructBoost`.  "gap": a certified relative duality
        gap of at most ``gap_tol`` by smoothing continuation (no LP); "exact": the exact
        LP optimum over the final weak learners; "none": the smoothed solution as is.
    gap_tol : float, default=1e-2
        Relative duality gap of ``certify="gap"``.
    inner_tol : {"fixed", "adaptive"}, default="fixed"
        The fast master's solves during the iterations; see :class:`StructBoost`.
    columns_per_iter : int, default=1
        Weak classifiers that may enter per iteration (one master solve for all);
        ``max_iter`` keeps counting weak learners.  See :class:`StructBoost`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    task_, hypotheses_, slot_weights_, weight_path_, master_, formulation_, weak_learner_
        The fitted model, as in :class:`StructBoost`.
    history_ : list of dict
        Per-iteration records, as in :class:`StructBoost`.
    objective_ : float
        Final primal objective.
    gap_ : float
        Relative duality gap of the final model over its weak learners.
    n_iter_ : int
        Number of boosting iterations run.
    converged_ : bool
        True when the column-generation test ``gain <= 1 + eps_cg`` was met.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin import StructBoostClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = StructBoostClassifier(C=100, max_iter=30, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True

    References
    ----------
    Shen, Lin & van den Hengel, IEEE TPAMI 2014 [Shen2014]; Demiriz, Bennett &
    Shawe-Taylor, Machine Learning 2002 [Demiriz2002]; Cai & Hofmann, CIKM 2004 [Cai2004]
    (full citations: docs/references.md).
    """

    def __init__(
        self,
        *,
        C: float = 100.0,
        max_iter: int = 200,
        weak_learner="auto",
        sharing: str = "shared",
        taxonomy=None,
        tree_loss: str = "height",
        master: str = "auto",
        formulation: str = "auto",
        eps_cp: float = 0.01,
        eps_cg: float = 1e-6,
        tol: float = 1e-4,
        max_time: float | None = None,
        max_cp_rounds: int | None = 10,
        random_state=None,
        n_jobs=None,
        verbose: int = 0,
        callback=None,
        certify: str = "gap",
        gap_tol: float = GAP_TOL,
        inner_tol: str = "fixed",
        columns_per_iter: int = 1,
    ):
        store_params(self, locals())

    # StructBoost parameters this class does not take: the task is built from y
    task, warm_start, polish = None, False, True

    _parameter_constraints = {
        **{k: v for k, v in StructBoost._parameter_constraints.items() if k != "task"},
        "sharing": [Options("shared", "per_class")],
        "taxonomy": [None, object],
        "tree_loss": [Options(*LOSS_KINDS)],
    }

    def _make_task(self, y) -> StructuredTask:
        check_classification_targets(y)
        n_classes = len(np.unique(y))
        if n_classes < 2:
            raise ValueError(
                f"y has {n_classes} class; StructBoostClassifier needs at least 2 classes"
            )
        if self.taxonomy is not None:
            return HierarchyTask(
                as_taxonomy(self.taxonomy), loss=self.tree_loss, sharing=self.sharing
            )
        if n_classes == 2:
            return BinaryTask(sharing=self.sharing)
        return MultiClassTask(sharing=self.sharing)

    def fit(self, X, y):
        """Fit the classifier by column generation.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels (at least two classes; the leaves of ``taxonomy`` if given).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        super().fit(X, y)
        self.classes_ = self.task_.classes_
        return self

    def decision_function(self, X):
        """Binary: score of ``classes_[1]`` (n,); multi-class: per-class scores (n, K)."""
        check_is_fitted(self, "slot_weights_")
        scores = super().decision_function(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def _save_extra(self, meta, arrays):
        meta["params"]["sharing"] = self.sharing
        if self.taxonomy is not None:  # JSON text, so the model file is self-contained
            meta["params"]["taxonomy"] = as_taxonomy(self.taxonomy).to_json()
