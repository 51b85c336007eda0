"""Structured SVM estimators: :class:`StructSVM`, :class:`SSVMClassifier`, :class:`LatentSSVM`.

All minimise ``1/2 ||w||^2 + C/n sum_i H_i(w)`` (seed 004) with the structured hinge
``H_i`` of margin or slack rescaling, for tasks with linear joint features
(:mod:`maxmargin.tasks.linear`): binary, multi-class (Crammer-Singer), hierarchical
(any :class:`~maxmargin.tasks.base.LabelCodingTask`) and linear chains
(:class:`~maxmargin.tasks.chain.ChainTask`).  ``C`` multiplies the *average* hinge, so
scikit-learn's ``LinearSVC(C=c, multi_class="crammer_singer", fit_intercept=False)`` is
``StructSVM(MultiClassTask(), C=c * n_samples)``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._validation import check_number as _check_number
from maxmargin._validation import json_params as _json_params
from maxmargin.solvers.ssvm_frank_wolfe import fit_frank_wolfe
from maxmargin.solvers.ssvm_kernel import fit_kernel_one_slack
from maxmargin.solvers.ssvm_n_slack import fit_n_slack
from maxmargin.solvers.ssvm_one_slack import fit_one_slack
from maxmargin.solvers.ssvm_subgradient import fit_subgradient
from maxmargin.tasks.base import LabelCodingTask
from maxmargin.tasks.chain import ChainTask, stack_sequences
from maxmargin.tasks.classification import BinaryTask, MultiClassTask
from maxmargin.tasks.hierarchy import HierarchyTask, as_taxonomy
from maxmargin.tasks.linear import LinearJointModel, from_label_coding, rescaled_hinge
from maxmargin.tasks.taxonomy import LOSS_KINDS

__all__ = ["SOLVERS", "KernelSSVM", "LatentSSVM", "SSVMClassifier", "StructSVM"]

SOLVERS = ("one_slack", "n_slack", "subgradient", "batch_subgradient", "frank_wolfe")
_TASKS = {
    "BinaryTask": BinaryTask,
    "MultiClassTask": MultiClassTask,
    "HierarchyTask": HierarchyTask,
}


def run_solver(
    model: LinearJointModel,
    C,
    solver,
    rescaling,
    tol,
    max_iter,
    max_time,
    random_state=None,
    callback=None,
    verbose=0,
    **options,
):
    """Dispatch to one of :data:`SOLVERS` on a :class:`LinearJointModel`."""
    common = dict(
        rescaling=rescaling,
        tol=tol,
        max_iter=max_iter,
        max_time=max_time,
        callback=callback,
        verbose=verbose,
    )
    if solver == "one_slack":
        return fit_one_slack(model, C, **common, **options)
    if solver == "n_slack":
        return fit_n_slack(model, C, random_state=random_state, **common, **options)
    if solver in ("subgradient", "batch_subgradient"):
        return fit_subgradient(
            model,
            C,
            stochastic=solver == "subgradient",
            random_state=random_state,
            **common,
            **options,
        )
    if solver == "frank_wolfe":
        return fit_frank_wolfe(model, C, random_state=random_state, **common, **options)
    raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")


def _seed(random_state):
    if isinstance(random_state, np.random.RandomState):
        return random_state.randint(2**31)
    return random_state


class StructSVM(BaseEstimator):
    """Linear structured SVM for any task with linear joint features.

    Parameters
    ----------
    task : LabelCodingTask or ChainTask
        What is predicted, e.g. ``MultiClassTask()`` or ``ChainTask()``.
    C : float, default=1.0
        Weight of the average structured hinge.
    solver : {"one_slack", "n_slack", "subgradient", "batch_subgradient", "frank_wolfe"}
        1-slack cutting planes, n-slack working sets, stochastic (Pegasos) or batch
        subgradient, block-coordinate Frank-Wolfe.
    rescaling : {"margin", "slack"}
    tol : float, default=1e-3
        Relative duality gap ``(primal - dual) / primal`` at which to stop.
    max_iter : int, default=1000
        Solver iterations (cutting-plane rounds or passes over the data).
    max_time : float or None
        Wall-clock limit in seconds.
    solver_options : dict or None
        Extra keyword arguments of the solver (e.g. ``cache_size``, ``inactive_window``
        for one_slack, ``averaging`` for subgradient and frank_wolfe).
    random_state : int or None
    verbose : int
    callback : callable or None
        Called with each history record.

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The weight vector ``w`` (unary block row-major (d, S), then transitions).
    history_ : list of dict
        Per iteration: primal (best so far), dual (best lower bound), gap, rel_gap,
        n_oracle, t_total and solver-specific entries.
    objective_, dual_objective_ : float
    converged_ : bool
    n_iter_ : int
    """

    def __init__(
        self,
        task=None,
        C: float = 1.0,
        solver: str = "one_slack",
        rescaling: str = "margin",
        tol: float = 1e-3,
        max_iter: int = 1000,
        max_time: float | None = None,
        solver_options=None,
        random_state=None,
        verbose: int = 0,
        callback=None,
    ):
        self.task = task
        self.C = C
        self.solver = solver
        self.rescaling = rescaling
        self.tol = tol
        self.max_iter = max_iter
        self.max_time = max_time
        self.solver_options = solver_options
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _validate_hyperparameters(self) -> None:
        _check_number("C", self.C, low=0)
        _check_number("tol", self.tol, low=0, low_open=False)
        _check_number("max_iter", self.max_iter, low=1, low_open=False, integer=True)
        _check_number("max_time", self.max_time, low=0, allow_none=True)
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if self.rescaling not in ("margin", "slack"):
            raise ValueError(f"rescaling must be 'margin' or 'slack', got {self.rescaling!r}")
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise ValueError("solver_options must be a dict or None")
        if self.callback is not None and not callable(self.callback):
            raise ValueError("callback must be callable or None")

    def _make_task(self, y):
        if not isinstance(self.task, (LabelCodingTask, ChainTask)):
            raise ValueError(
                "task must be a LabelCodingTask (BinaryTask, MultiClassTask, "
                f"hierarchy) or a ChainTask instance, got {self.task!r}"
            )
        return self.task

    def _bind(self, X, y):
        """Bind the task and build the joint-feature model."""
        task = self._make_task(y)
        if isinstance(task, ChainTask):
            self.task_ = task.bind(X, y)
            self.n_features_in_ = self.task_.X_.shape[1]
            return self.task_.linear_model()
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, ensure_min_samples=1
        )
        # LabelCodingTask._bind densifies X; the SSVM keeps its own (possibly sparse) copy
        self.task_ = task.bind(np.empty((X.shape[0], 0)) if sp.issparse(X) else X, y)
        return from_label_coding(self.task_, X)

    def _solve(self, model) -> None:
        """Run the chosen solver on a linear joint model and store the result."""
        res = run_solver(
            model,
            float(self.C),
            self.solver,
            self.rescaling,
            float(self.tol),
            int(self.max_iter),
            self.max_time,
            _seed(self.random_state),
            self.callback,
            self.verbose,
            **(self.solver_options or {}),
        )
        self._store(model, res)

    def fit(self, X, y):
        """Train on inputs X and outputs y (lists of sequences for a ChainTask)."""
        self._validate_hyperparameters()
        model = self._bind(X, y)
        self._solve(model)
        return self

    def _store(self, model, res) -> None:
        self.coef_ = res.w
        self.history_ = res.history
        self.objective_ = float(res.primal)
        self.dual_objective_ = float(res.dual)
        self.converged_ = bool(res.converged)
        self.n_iter_ = len(res.history)
        self._layout = (model.n_features, model.n_slots, model.n_states, model.pairwise)

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
        if isinstance(self.task_, ChainTask):
            raise ValueError("decision_function is defined for label-coding tasks only")
        return self.task_.slot_scores_to_label_scores(self._slot_scores(X))

    def predict(self, X):
        check_is_fitted(self, "coef_")
        if isinstance(self.task_, ChainTask):
            Xf, offsets = stack_sequences(X)
            if Xf.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {Xf.shape[1]} features, but the model was trained "
                    f"with {self.n_features_in_}"
                )
            W, P = self._split()
            U = np.ascontiguousarray(np.asarray(Xf @ W))
            from maxmargin.inference.viterbi import batch_viterbi

            labels = np.empty(U.shape[0], dtype=np.int64)
            batch_viterbi(U, np.ascontiguousarray(P), offsets, self._layout[3], labels)
            return self.task_.split_labels(labels, offsets)
        return self.task_.decode(self.task_.predict_codes(self._slot_scores(X)))

    def score(self, X, y):
        """Mean accuracy (label tasks) or 1 - Hamming error per position (chains)."""
        pred = self.predict(X)
        if isinstance(self.task_, ChainTask):
            return 1.0 - self.task_.hamming(y, pred)
        return float(np.mean(pred == np.asarray(y)))


class SSVMClassifier(ClassifierMixin, StructSVM):
    """Crammer-Singer multi-class (or binary) linear SVM trained as a structured SVM.

    ``C`` weights the average hinge (``LinearSVC``'s ``C`` times ``n_samples``).  With
    ``fit_intercept`` a constant feature ``intercept_scaling`` is appended (and
    regularised, as in liblinear).  With ``taxonomy`` (a Taxonomy, dict, JSON text or
    file path) the classes are leaves of a tree: ancestor-coded joint features and the
    ``tree_loss`` ("height", "half_path" or "zero_one"), i.e. the hierarchical SVM of the
    SSVM tutorial (seed 004).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin import SSVMClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> SSVMClassifier(C=100.0).fit(X, y).score(X, y) > 0.9
    True
    """

    def __init__(
        self,
        C: float = 100.0,
        solver: str = "n_slack",
        rescaling: str = "margin",
        tol: float = 1e-3,
        max_iter: int = 1000,
        max_time: float | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        solver_options=None,
        random_state=None,
        verbose: int = 0,
        callback=None,
        taxonomy=None,
        tree_loss: str = "height",
    ):
        super().__init__(
            task=None,
            C=C,
            solver=solver,
            rescaling=rescaling,
            tol=tol,
            max_iter=max_iter,
            max_time=max_time,
            solver_options=solver_options,
            random_state=random_state,
            verbose=verbose,
            callback=callback,
        )
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.taxonomy = taxonomy
        self.tree_loss = tree_loss

    def _make_task(self, y):
        check_classification_targets(y)
        n_classes = len(np.unique(y))
        if n_classes < 2:
            raise ValueError(f"y has {n_classes} class; SSVMClassifier needs at least 2 classes")
        if self.taxonomy is not None:
            if self.tree_loss not in LOSS_KINDS:
                raise ValueError(f"tree_loss must be one of {LOSS_KINDS}, got {self.tree_loss!r}")
            return HierarchyTask(as_taxonomy(self.taxonomy), loss=self.tree_loss)
        return BinaryTask() if n_classes == 2 else MultiClassTask()

    def _augment(self, X):
        if not self.fit_intercept:
            return X
        col = np.full((X.shape[0], 1), float(self.intercept_scaling))
        return sp.hstack([X, col], format="csr") if sp.issparse(X) else np.hstack([X, col])

    def fit(self, X, y):
        self._validate_hyperparameters()
        _check_number("intercept_scaling", self.intercept_scaling, low=0)
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
    def _get_state(self):
        check_is_fitted(self, "coef_")
        params = _json_params(self)
        if params.get("taxonomy") is not None:  # JSON text: the file is self-contained
            params["taxonomy"] = as_taxonomy(params["taxonomy"]).to_json()
        task_meta, task_arrays = self.task_._get_state()
        arrays = {f"task.{k}": v for k, v in task_arrays.items()}
        arrays["coef"] = self.coef_
        meta = {
            "params": params,
            "task_class": type(self.task_).__name__,
            "task": task_meta,
            "layout": [int(v) for v in self._layout[:3]] + [bool(self._layout[3])],
            "n_features_in": int(self.n_features_in_),
            "history": self.history_,
            "objective": float(self.objective_),
            "dual_objective": float(self.dual_objective_),
            "converged": bool(self.converged_),
            "n_iter": int(self.n_iter_),
        }
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        try:
            task_cls = _TASKS[meta["task_class"]]
        except KeyError as exc:
            raise ValueError(f"model file names an unknown task: {exc}") from None
        est = cls(**meta["params"])
        task = task_cls.__new__(task_cls)
        task._set_state(
            meta["task"], {k[5:]: v for k, v in arrays.items() if k.startswith("task.")}
        )
        est.task_ = task
        est.coef_ = np.asarray(arrays["coef"], dtype=np.float64)
        d, S, K, pairwise = meta["layout"]
        est._layout = (int(d), int(S), int(K), bool(pairwise))
        if est.coef_.shape != (d * S + (K * K if pairwise else 0),) or S != task.n_slots:
            raise ValueError("model file is inconsistent: weight vector does not match the task")
        est.n_features_in_ = int(meta["n_features_in"])
        est.history_ = list(meta["history"])
        est.objective_ = float(meta["objective"])
        est.dual_objective_ = float(meta["dual_objective"])
        est.converged_ = bool(meta["converged"])
        est.n_iter_ = int(meta["n_iter"])
        est.classes_ = task.classes_
        est._set_linear_attrs()
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class LatentSSVM(ClassifierMixin, BaseEstimator):
    """Multi-class latent structured SVM trained by CCCP (Yu & Joachims, ICML 2009).

    Each class y is a union of ``n_latent`` sub-classes z with their own weight vector,
    ``Psi(x, y, z) = x (x) e_(y, z)`` and ``f(x) = argmax_y max_z w.Psi(x, y, z)``
    (seed 004, "Extra I").  The non-convex objective

        1/2 ||w||^2 + C/n sum_i [max_(y,z) Delta(y_i, y) + w.Psi(x_i, y, z)
                                 - max_z w.Psi(x_i, y_i, z)]

    is decreased by the concave-convex procedure: impute ``h_i = argmax_z
    w.Psi(x_i, y_i, z)``, then solve the convex structured SVM with outputs
    ``(y_i, h_i)`` and the loss ``Delta((y, z), (y', z')) = [y != y']`` (zero between
    sub-classes of one class), warm-restarting until the objective stops decreasing.
    Sub-classes are initialised by k-means inside every class.
    """

    def __init__(
        self,
        n_latent: int = 2,
        C: float = 100.0,
        solver: str = "n_slack",
        tol: float = 1e-3,
        max_iter: int = 1000,
        max_outer: int = 20,
        outer_tol: float = 1e-3,
        fit_intercept: bool = True,
        random_state=None,
        verbose: int = 0,
    ):
        self.n_latent = n_latent
        self.C = C
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.max_outer = max_outer
        self.outer_tol = outer_tol
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.verbose = verbose

    def _aug(self, X):
        return np.hstack([X, np.ones((X.shape[0], 1))]) if self.fit_intercept else X

    def fit(self, X, y):
        from sklearn.cluster import KMeans

        _check_number("n_latent", self.n_latent, low=1, low_open=False, integer=True)
        _check_number("C", self.C, low=0)
        _check_number("max_outer", self.max_outer, low=1, low_open=False, integer=True)
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, yc = np.unique(y, return_inverse=True)
        K, M = len(self.classes_), int(self.n_latent)
        if K < 2:
            raise ValueError("LatentSSVM needs at least 2 classes")
        Xa = self._aug(X)
        n = len(yc)
        z = np.zeros(n, dtype=np.int64)
        for k in range(K):
            idx = np.flatnonzero(yc == k)
            m = min(M, len(idx))
            if m > 1:
                km = KMeans(n_clusters=m, n_init=3, random_state=self.random_state)
                z[idx] = km.fit_predict(X[idx])
        coarse = np.repeat(np.arange(K), M)  # fine state -> class
        loss = (coarse[:, None] != coarse[None, :]).astype(np.float64)
        gamma = np.eye(K * M)
        self.objective_path_ = []
        w = None
        for outer in range(int(self.max_outer)):
            fine = yc * M + z
            model = LinearJointModel(Xa, np.arange(n + 1), fine, gamma, loss, pairwise=False)
            res = run_solver(
                model,
                float(self.C),
                self.solver,
                "margin",
                float(self.tol),
                int(self.max_iter),
                None,
                _seed(self.random_state),
                None,
                self.verbose,
            )
            w = res.w
            S = (Xa @ w.reshape(Xa.shape[1], K * M)).reshape(n, K, M)
            z_new = np.argmax(S[np.arange(n), yc], axis=1)
            # latent objective at w (with the best imputation)
            model_new = LinearJointModel(
                Xa, np.arange(n + 1), yc * M + z_new, gamma, loss, pairwise=False
            )
            _, lo, ma = model_new.loss_augmented(w)
            obj = model_new.objective(w, float(self.C), rescaled_hinge(lo, ma, "margin"))
            self.objective_path_.append(obj)
            if self.verbose:
                print(f"[latent] CCCP round {outer} objective {obj:.6g}", flush=True)
            done = np.array_equal(z_new, z) or (
                len(self.objective_path_) > 1
                and self.objective_path_[-2] - obj <= self.outer_tol * abs(obj)
            )
            z = z_new
            if done:
                break
        self.coef_ = w.reshape(Xa.shape[1], K * M)
        self.latent_ = z
        self.n_iter_ = len(self.objective_path_)
        return self

    def decision_function(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        K, M = len(self.classes_), int(self.n_latent)
        return (self._aug(X) @ self.coef_).reshape(X.shape[0], K, M).max(axis=2)

    def predict(self, X):
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]


class KernelSSVM(ClassifierMixin, BaseEstimator):
    """Kernelized structured SVM for label-coding tasks (1-slack dual, seed 004).

    The joint kernel is ``k_x(x, x') * Gamma[y].Gamma[y']`` (for multi-class:
    ``k_x(x, x') [y = y']``); ``k_x`` is ``"linear"`` or ``"rbf"``
    (``exp(-gamma ||x - x'||^2)``, ``gamma=None`` means ``1 / (d * X.var())`` as in
    scikit-learn's SVC).  With the linear kernel the solution is the one of
    ``StructSVM(task, solver="one_slack")``.

    Attributes
    ----------
    dual_coef_ : (n_sv, S) expansion coefficients ``B``; scores ``k_x(x, sv) B``.
    support_vectors_ : (n_sv, d)
    """

    def __init__(
        self,
        task=None,
        C: float = 100.0,
        kernel: str = "rbf",
        gamma=None,
        rescaling: str = "margin",
        tol: float = 1e-3,
        max_iter: int = 1000,
        max_time: float | None = None,
        verbose: int = 0,
    ):
        self.task = task
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.rescaling = rescaling
        self.tol = tol
        self.max_iter = max_iter
        self.max_time = max_time
        self.verbose = verbose

    def _kernel(self, A, B):
        if self.kernel == "linear":
            return A @ B.T
        from sklearn.metrics.pairwise import rbf_kernel

        return rbf_kernel(A, B, gamma=self.gamma_)

    def fit(self, X, y):
        _check_number("C", self.C, low=0)
        _check_number("tol", self.tol, low=0, low_open=False)
        _check_number("max_iter", self.max_iter, low=1, low_open=False, integer=True)
        if self.kernel not in ("linear", "rbf"):
            raise ValueError(f"kernel must be 'linear' or 'rbf', got {self.kernel!r}")
        _check_number("gamma", self.gamma, low=0, allow_none=True)
        X, y = validate_data(self, X, y, dtype=np.float64)
        task = MultiClassTask() if self.task is None else self.task
        if not isinstance(task, LabelCodingTask):
            raise ValueError(f"task must be a LabelCodingTask instance, got {task!r}")
        self.task_ = task.bind(X, y)
        self.classes_ = self.task_.classes_
        var = float(X.var())
        self.gamma_ = (
            self.gamma if self.gamma is not None else 1.0 / (X.shape[1] * var if var > 0 else 1.0)
        )
        Kmat = self._kernel(X, X)
        res = fit_kernel_one_slack(
            Kmat,
            self.task_,
            float(self.C),
            self.rescaling,
            float(self.tol),
            int(self.max_iter),
            self.max_time,
            verbose=self.verbose,
        )
        B = res.w
        sv = np.flatnonzero(np.any(B != 0, axis=1))
        self.support_ = sv
        self.support_vectors_ = X[sv]
        self.dual_coef_ = B[sv]
        self.history_ = res.history
        self.objective_ = float(res.primal)
        self.dual_objective_ = float(res.dual)
        self.converged_ = bool(res.converged)
        self.n_iter_ = len(res.history)
        return self

    def decision_function(self, X):
        """Joint scores for every output, shape (n, n_outputs)."""
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        F = self._kernel(X, self.support_vectors_) @ self.dual_coef_
        return self.task_.slot_scores_to_label_scores(F)

    def predict(self, X):
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        F = self._kernel(X, self.support_vectors_) @ self.dual_coef_
        return self.task_.decode(self.task_.predict_codes(F))
