"""Linear structured SVM estimators: :class:`StructSVM` and :class:`SSVMClassifier`.

Both minimise ``1/2 ||w||^2 + C/n sum_i H_i(w)`` (Nowozin & Lampert, "Structured
learning and prediction in computer vision", 2011 [Nowozin2011FnT]; their CVPR 2011
tutorial [Nowozin2011]; keys of docs/references.md) with the structured hinge ``H_i`` of
margin or slack rescaling, for tasks with linear joint features
(:mod:`maxmargin.tasks.linear`): binary, multi-class (Crammer-Singer), hierarchical (any
:class:`~maxmargin.tasks.base.LabelCodingTask`) and linear chains
(:class:`~maxmargin.tasks.chain.ChainTask`).  ``C`` multiplies the *average* hinge, so
scikit-learn's ``LinearSVC(C=c, multi_class="crammer_singer", fit_intercept=False)`` is
``StructSVM(task=MultiClassTask(), C=c * n_samples)``.  The estimators are thin shells
over :func:`maxmargin.solvers.ssvm.solve_ssvm`.
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp
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
    add_intercept,
    json_params,
    store_params,
    validate_params,
)
from maxmargin.learners._binary import SparseInput
from maxmargin.learners._persist import Persistent, fitted, store_solution
from maxmargin.solvers.ssvm import SOLVER_ALIASES, SOLVERS, canonical_solver, solve_ssvm
from maxmargin.tasks.base import StructuredTask
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.classification import BinaryTask, MultiClassTask
from maxmargin.tasks.crf import CRFTask
from maxmargin.tasks.hierarchy import HierarchyTask, as_taxonomy
from maxmargin.tasks.linear import from_label_coding
from maxmargin.tasks.taxonomy import LOSS_KINDS

__all__ = ["SOLVERS", "SSVMClassifier", "StructSVM"]

_TASKS = {
    "BinaryTask": BinaryTask,
    "MultiClassTask": MultiClassTask,
    "HierarchyTask": HierarchyTask,
    "ChainTask": ChainTask,
    "CRFTask": CRFTask,
}


@register
class StructSVM(SparseInput, Persistent, BaseEstimator):
    """Linear structured SVM for any task with linear joint features.

    Parameters
    ----------
    task : LabelCodingTask, ChainTask, CRFTask, BoxTask or None, default=None
        What is predicted, e.g. ``MultiClassTask()``, ``ChainTask()`` or ``CRFTask()``
        (binary CRFs over graphs, ``solver="1-slack"`` only; docs/segmentation.md), or
        ``BoxTask()`` (the best of each image's candidate boxes, Pascal-overlap loss,
        margin rescaling: a linear Struck; ``predict`` returns the boxes).
        Required: ``fit`` raises ``ValueError`` without one.
    C : float, default=1.0
        Weight of the average structured hinge.
    solver : {"1-slack", "n-slack", "subgradient", "batch-subgradient", "frank-wolfe"}, \
default="1-slack"
        1-slack cutting planes [Joachims2009], n-slack working sets [Tsochantaridis2005],
        stochastic (Pegasos, [ShalevShwartz2011]) or batch subgradient [Ratliff2007],
        block-coordinate Frank-Wolfe [LacosteJulien2013] (:mod:`maxmargin.solvers.ssvm`;
        the older spellings "one_slack", "n_slack", ... are accepted).
    rescaling : {"margin", "slack"}, default="margin"
        Margin or slack rescaling of the structured hinge.
    tol : float, default=1e-3
        Relative duality gap ``(primal - dual) / primal`` at which to stop.
    max_iter : int, default=1000
        Solver iterations (cutting-plane rounds or passes over the data).
    max_time : float or None, default=None
        Wall-clock limit in seconds.
    solver_options : dict or None, default=None
        Extra keyword arguments of the solver (e.g. ``cache_size``, ``inactive_window``
        for 1-slack, ``averaging`` for subgradient and frank-wolfe).
    random_state : int, RandomState, Generator or None, default=None
        Seed of the stochastic solvers (example order).
    n_jobs : int or None, default=None
        Workers for the loss-augmented oracle: threads of this process by default (its
        kernels release the GIL; the CRF's shards run in one numba kernel on at most
        ``NUMBA_NUM_THREADS`` threads), or the workers of a backend chosen with
        ``joblib.parallel_config`` (``"loky"`` processes, ``"dask"`` for a Dask
        cluster).  None: the single-process path; any integer (1 included): the oracle
        on fixed shards of the examples, the same fit bit for bit for every ``n_jobs``
        and backend (docs/scaling.md).
    verbose : int, default=0
        Print progress when > 0.
    callback : callable or None, default=None
        Called with each history record.

    Attributes
    ----------
    task_ : LabelCodingTask or ChainTask
        The task bound to the training data.
    coef_ : ndarray of shape (dim,)
        The weight vector ``w`` (unary block row-major (d, S), then transitions).
    history_ : list of dict
        Per iteration: ``objective`` (best primal so far), ``dual_bound`` (best lower
        bound), ``gap`` (relative), ``n_oracle``, ``t_total`` and solver-specific
        entries.
    objective_ : float
        Final primal objective.
    dual_objective_ : float
        Best dual (lower) bound.
    converged_ : bool
        True when the ``tol`` test was met.
    n_iter_ : int
        Number of solver iterations run.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin import MultiClassTask, StructSVM
    >>> X, y = load_iris(return_X_y=True)
    >>> svm = StructSVM(task=MultiClassTask(), C=100.0, solver="n-slack").fit(X, y)
    >>> svm.history_[-1]["gap"] <= 1e-3
    True

    References
    ----------
    Tsochantaridis, Joachims, Hofmann & Altun, JMLR 2005 [Tsochantaridis2005]; Joachims,
    Finley & Yu, Machine Learning 2009 [Joachims2009]; Nowozin & Lampert, CVPR 2011
    tutorial [Nowozin2011] (full citations, and those of the other solvers:
    docs/references.md).
    """

    _parameter_constraints = {
        "C": [POSITIVE],
        "solver": [Options(*SOLVERS, *SOLVER_ALIASES)],
        "rescaling": [Options("margin", "slack")],
        "tol": [NON_NEGATIVE],
        "max_iter": [POSITIVE_INT],
        **MONITOR_PARAMS,
        "solver_options": [None, dict],
        "random_state": RANDOM_STATE,
        "n_jobs": N_JOBS,
    }

    def __init__(
        self,
        *,
        task=None,
        C: float = 1.0,
        solver: str = "1-slack",
        rescaling: str = "margin",
        tol: float = 1e-3,
        max_iter: int = 1000,
        max_time: float | None = None,
        solver_options=None,
        random_state=None,
        n_jobs=None,
        verbose: int = 0,
        callback=None,
    ):
        store_params(self, locals())

    def _make_task(self, y):
        if not isinstance(self.task, StructuredTask) or "linear_ssvm" not in self.task.capabilities:
            raise ValueError(
                "task must be a task with linear joint features (BinaryTask, MultiClassTask, "
                f"hierarchy, ChainTask, CRFTask, BoxTask), got {self.task!r}"
            )
        return self.task

    def _bind(self, X, y):
        """Bind the task and build the joint-feature model."""
        task = self._make_task(y)
        solvers = task.linear_solvers
        if solvers is not None and canonical_solver(self.solver) not in solvers:
            names = " or ".join(repr(v) for v in solvers)
            raise ValueError(
                f"a {type(task).__name__} is trained with solver={names} only, got {self.solver!r}"
            )
        if task.structured_inputs:  # sequences, graphs, candidate boxes: the task binds
            self.task_ = task.bind(X, y)
            self.n_features_in_ = self.task_.n_features_in
            return self.task_.linear_model()
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, ensure_min_samples=1
        )
        # LabelCodingTask._bind densifies X; the SSVM keeps its own (possibly sparse) copy
        self.task_ = task.bind(np.empty((X.shape[0], 0)) if sp.issparse(X) else X, y)
        return from_label_coding(self.task_, X)

    def _solve(self, model) -> None:
        """Run the chosen solver on a linear joint model and store the result."""
        res = solve_ssvm(
            model,
            float(self.C),
            self.solver,
            rescaling=self.rescaling,
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            max_time=self.max_time,
            random_state=self.random_state,
            callback=self.callback,
            verbose=self.verbose,
            n_jobs=self.n_jobs,
            **(self.solver_options or {}),
        )
        self.coef_ = res.w
        store_solution(self, res, stacklevel=4)
        self._layout = (model.n_features, model.n_slots, model.n_states, model.pairwise)

    def fit(self, X, y):
        """Fit the structured SVM.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or list
            Training inputs; for a :class:`~maxmargin.tasks.chain.ChainTask` a list of
            sequences, each an array of shape (length, n_features).
        y : array-like of shape (n_samples,), or list
            Class labels (label-coding tasks) or a list of label sequences (chains).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        validate_params(self)
        canonical_solver(self.solver)
        model = self._bind(X, y)
        self._solve(model)
        return self

    # -- prediction ----------------------------------------------------------------------
    def _split(self, w=None):
        w = self.coef_ if w is None else w
        d, S, K, pairwise = self._layout
        W = w[: d * S].reshape(d, S)
        P = w[d * S :].reshape(K, K) if pairwise else np.zeros((K, K))
        return W, P

    def _slot_scores(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        W, _ = self._split()
        return np.asarray(X @ W)

    def decision_function(self, X):
        """Joint scores ``w.Psi(x, y)`` for every output (label-coding tasks)."""
        check_is_fitted(self, "coef_")
        if self.task_.structured_inputs:
            raise ValueError("decision_function is defined for label-coding tasks only")
        return self.task_.slot_scores_to_label_scores(self._slot_scores(X))

    def predict(self, X):
        check_is_fitted(self, "coef_")
        if self.task_.structured_inputs:  # Viterbi, graph cuts, the best candidate box
            return self.task_.predict_linear(X, self.coef_)
        return self.task_.decode(self.task_.predict_codes(self._slot_scores(X)))

    def score(self, X, y):
        """Mean accuracy (label tasks) or 1 - Hamming error per position (chains, CRFs)."""
        return self.task_.score_predictions(y, self.predict(X))

    # -- persistence ---------------------------------------------------------------------
    def _state_params(self) -> dict:
        return json_params(self, drop=("callback", "task"))

    _saved_meta = fitted(
        "n_features_in_", "history_", "objective_", "dual_objective_", "converged_", "n_iter_"
    )
    _saved_arrays = (("coef_", np.float64),)
    _task_classes = _TASKS

    def _save_extra(self, meta, arrays):
        meta["params"] = self._state_params()
        meta["layout"] = [int(v) for v in self._layout[:3]] + [bool(self._layout[3])]

    @classmethod
    def _loaded_params(cls, params, task):
        if cls is StructSVM:  # the task parameter: the restored task (refitting rebinds it)
            params["task"] = copy.deepcopy(task)
        return params

    def _load_extra(self, meta, arrays):
        d, S, K, pairwise = meta["layout"]
        self._layout = (int(d), int(S), int(K), bool(pairwise))
        task = self.task_
        slots_ok = task.linear_slots_ok(S)
        if self.coef_.shape != (d * S + (K * K if pairwise else 0),) or not slots_ok:
            raise ValueError("model file is inconsistent: weight vector does not match the task")
        if not np.all(np.isfinite(self.coef_)):
            raise ValueError("model file is inconsistent: non-finite weights")
        if hasattr(task, "classes_"):
            self.classes_ = task.classes_


@register
class SSVMClassifier(ClassifierMixin, StructSVM):
    """Crammer-Singer multi-class (or binary) linear SVM trained as a structured SVM.

    ``C`` weights the average hinge (``LinearSVC``'s ``C`` times ``n_samples``).  With
    ``taxonomy`` the classes are leaves of a tree: ancestor-coded joint features and a
    tree loss, i.e. the hierarchical SVM of Nowozin & Lampert's SSVM tutorial
    [Nowozin2011] after Cai & Hofmann [Cai2004].

    Parameters
    ----------
    C : float, default=100.0
        Weight of the average structured hinge.
    solver : {"1-slack", "n-slack", "subgradient", "batch-subgradient", "frank-wolfe"}, \
default="n-slack"
        Structured SVM solver; see :class:`StructSVM`.
    rescaling : {"margin", "slack"}, default="margin"
        Margin or slack rescaling of the structured hinge.
    tol : float, default=1e-3
        Relative duality gap ``(primal - dual) / primal`` at which to stop.
    max_iter : int, default=1000
        Solver iterations (cutting-plane rounds or passes over the data).
    max_time : float or None, default=None
        Wall-clock limit in seconds.
    fit_intercept : bool, default=True
        Append a constant feature ``intercept_scaling`` (regularised, as in liblinear).
    intercept_scaling : float, default=1.0
        Value of the constant feature.
    solver_options : dict or None, default=None
        Extra keyword arguments of the solver; see :class:`StructSVM`.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the stochastic solvers (example order).
    n_jobs : int or None, default=None
        Workers for the loss-augmented oracle; see :class:`StructSVM`.
    verbose : int, default=0
        Print progress when > 0.
    callback : callable or None, default=None
        Called with each history record.
    taxonomy : Taxonomy, dict, str, path or None, default=None
        Class tree (a Taxonomy, dict, JSON text or file path); None: flat classes.
    tree_loss : {"height", "half_path", "zero_one"}, default="height"
        Loss between classes of a ``taxonomy``: height of the lowest common ancestor
        ([Shen2014]), half the path length ([Nowozin2011]) or 0/1.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (dim,)
        The weight vector ``w`` (row-major (d [+1], S)).
    weights_ : ndarray of shape (n_features [+1], n_slots)
        ``coef_`` as a matrix, the intercept row last when ``fit_intercept``.
    intercept_ : ndarray of shape (n_slots,)
        Intercept of every slot (zeros without ``fit_intercept``).
    task_ : LabelCodingTask
        The task bound to the training data.
    history_ : list of dict
        Per-iteration records, as in :class:`StructSVM`.
    objective_ : float
        Final primal objective.
    dual_objective_ : float
        Best dual (lower) bound.
    converged_ : bool
        True when the ``tol`` test was met.
    n_iter_ : int
        Number of solver iterations run.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin import SSVMClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> SSVMClassifier(C=100.0).fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    Crammer & Singer, JMLR 2001 [Crammer2001]; Tsochantaridis et al., JMLR 2005
    [Tsochantaridis2005]; Cai & Hofmann, CIKM 2004 [Cai2004] (full citations:
    docs/references.md).
    """

    task = None  # not a parameter: the task is built from y (_make_task)

    _parameter_constraints = {
        **{k: v for k, v in StructSVM._parameter_constraints.items()},
        "fit_intercept": [bool],
        "intercept_scaling": [POSITIVE],
        "taxonomy": [None, object],
        "tree_loss": [Options(*LOSS_KINDS)],
    }

    def __init__(
        self,
        *,
        C: float = 100.0,
        solver: str = "n-slack",
        rescaling: str = "margin",
        tol: float = 1e-3,
        max_iter: int = 1000,
        max_time: float | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        solver_options=None,
        random_state=None,
        n_jobs=None,
        verbose: int = 0,
        callback=None,
        taxonomy=None,
        tree_loss: str = "height",
    ):
        store_params(self, locals())

    def _make_task(self, y):
        check_classification_targets(y)
        n_classes = len(np.unique(y))
        if n_classes < 2:
            raise ValueError(f"y has {n_classes} class; SSVMClassifier needs at least 2 classes")
        if self.taxonomy is not None:
            return HierarchyTask(as_taxonomy(self.taxonomy), loss=self.tree_loss)
        return BinaryTask() if n_classes == 2 else MultiClassTask()

    def _augment(self, X):
        return add_intercept(X, self.intercept_scaling) if self.fit_intercept else X

    def fit(self, X, y):
        """Fit the classifier.

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
        validate_params(self)
        canonical_solver(self.solver)
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, ensure_min_samples=1
        )
        task = self._make_task(y)
        Xa = self._augment(X)
        self.task_ = task.bind(np.empty((X.shape[0], 0)) if sp.issparse(X) else X, y)
        model = from_label_coding(self.task_, Xa)
        self._solve(model)
        self.classes_ = self.task_.classes_
        self._set_linear_attrs()
        return self

    def _set_linear_attrs(self):
        W, _ = self._split()
        d = W.shape[0] - int(bool(self.fit_intercept))
        self.weights_ = W  # (d [+1], S) slot weights
        if self.fit_intercept:
            self.intercept_ = W[d] * float(self.intercept_scaling)
        else:
            self.intercept_ = np.zeros(W.shape[1])

    def _slot_scores(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        W, _ = self._split()
        d = X.shape[1]
        return np.asarray(X @ W[:d]) + self.intercept_

    def decision_function(self, X):
        """Binary: score of ``classes_[1]`` (n,); multi-class: per-class scores (n, K)."""
        check_is_fitted(self, "coef_")
        scores = self.task_.slot_scores_to_label_scores(self._slot_scores(X))
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        check_is_fitted(self, "coef_")
        return self.task_.decode(self.task_.predict_codes(self._slot_scores(X)))

    def score(self, X, y, sample_weight=None):
        return ClassifierMixin.score(self, X, y, sample_weight=sample_weight)

    # -- persistence ---------------------------------------------------------------------
    def _state_params(self) -> dict:
        params = json_params(self)
        if params.get("taxonomy") is not None:  # JSON text: the file is self-contained
            params["taxonomy"] = as_taxonomy(params["taxonomy"]).to_json()
        return params

    def _load_extra(self, meta, arrays):
        super()._load_extra(meta, arrays)
        self._set_linear_attrs()
