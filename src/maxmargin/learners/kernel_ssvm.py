"""Kernelized structured SVM for label-coding tasks (joint-kernel 1-slack dual, [Nowozin2011]).

A thin shell over :func:`maxmargin.solvers.ssvm_kernel.fit_kernel_one_slack`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import (
    MAX_TIME,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    VERBOSE,
    Options,
    store_params,
    validate_params,
)
from maxmargin.learners._binary import SparseInput
from maxmargin.learners._persist import Persistent, fitted, store_solution
from maxmargin.solvers.ssvm_kernel import fit_kernel_one_slack
from maxmargin.tasks.base import LabelCodingTask
from maxmargin.tasks.classification import BinaryTask, MultiClassTask

__all__ = ["KernelSSVM"]

_TASKS = {"BinaryTask": BinaryTask, "MultiClassTask": MultiClassTask}


@register
class KernelSSVM(SparseInput, Persistent, ClassifierMixin, BaseEstimator):
    """Kernelized structured SVM: the 1-slack dual with a joint kernel.

    The joint kernel is ``k_x(x, x') * Gamma[y].Gamma[y']`` (for multi-class:
    ``k_x(x, x') [y = y']``); ``k_x`` is ``"linear"`` or ``"rbf"``
    (``exp(-gamma ||x - x'||^2)``, ``gamma=None`` means ``1 / (d * X.var())`` as in
    scikit-learn's SVC).  With the linear kernel the solution is the one of
    ``StructSVM(task=..., solver="1-slack")``.

    Parameters
    ----------
    task : LabelCodingTask or None, default=None
        What is predicted; None: binary or multi-class from the labels.
    C : float, default=100.0
        Weight of the average structured hinge.
    kernel : {"rbf", "linear"}, default="rbf"
        Input kernel ``k_x``.
    gamma : float or None, default=None
        RBF width; None: ``1 / (n_features * X.var())``.
    rescaling : {"margin", "slack"}, default="margin"
        Margin or slack rescaling of the structured hinge.
    tol : float, default=1e-3
        Relative duality gap at which to stop.
    max_iter : int, default=1000
        Maximum cutting-plane rounds.
    max_time : float or None, default=None
        Wall-clock limit in seconds.
    verbose : int, default=0
        Print progress when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    task_ : LabelCodingTask
        The task bound to the training labels.
    gamma_ : float
        The RBF width used.
    support_ : ndarray of shape (n_sv,)
        Indices of the support vectors in the training data.
    support_vectors_ : {ndarray, sparse matrix} of shape (n_sv, n_features)
        The support vectors.
    dual_coef_ : ndarray of shape (n_sv, n_slots)
        Expansion coefficients ``B``; slot scores ``k_x(x, sv) B``.
    history_ : list of dict
        Per cutting-plane round: objective, dual_bound, gap and timings.
    objective_ : float
        Final primal objective.
    dual_objective_ : float
        Final dual objective.
    converged_ : bool
        True when the ``tol`` test was met.
    n_iter_ : int
        Number of cutting-plane rounds run.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin import KernelSSVM
    >>> X, y = load_iris(return_X_y=True)
    >>> KernelSSVM(C=100.0).fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    Joachims, Finley & Yu, Machine Learning 2009 [Joachims2009], Sec. 5; Nowozin &
    Lampert, CVPR 2011 tutorial [Nowozin2011] and monograph [Nowozin2011FnT] (full
    citations: docs/references.md).
    """

    _parameter_constraints = {
        "task": [None, LabelCodingTask],
        "C": [POSITIVE],
        "kernel": [Options("rbf", "linear")],
        "gamma": [None, POSITIVE],
        "rescaling": [Options("margin", "slack")],
        "tol": [NON_NEGATIVE],
        "max_iter": [POSITIVE_INT],
        "max_time": MAX_TIME,
        "verbose": VERBOSE,
    }

    def __init__(
        self,
        *,
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
        store_params(self, locals())

    def _kernel(self, A, B):
        if self.kernel == "linear":
            K = A @ B.T
            return K.toarray() if sp.issparse(K) else np.asarray(K)
        return rbf_kernel(A, B, gamma=self.gamma_)

    def fit(self, X, y):
        """Fit the kernelized structured SVM.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        validate_params(self)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        if self.task is None:
            n_classes = len(np.unique(y))
            task = BinaryTask() if n_classes == 2 else MultiClassTask()
        else:
            task = self.task
        self.task_ = task.bind(np.empty((X.shape[0], 0)), y)
        self.classes_ = self.task_.classes_
        if self.gamma is not None:
            self.gamma_ = float(self.gamma)
        else:  # SVC's "scale": 1 / (d * var(X))
            var = float(X.multiply(X).mean() - X.mean() ** 2) if sp.issparse(X) else float(X.var())
            self.gamma_ = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        res = fit_kernel_one_slack(
            self._kernel(X, X),
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
        store_solution(self, res)
        return self

    def _slot_scores(self, X):
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if len(self.support_) == 0:
            return np.zeros((X.shape[0], self.dual_coef_.shape[1]))
        return self._kernel(X, self.support_vectors_) @ self.dual_coef_

    def decision_function(self, X):
        """Binary: score of ``classes_[1]`` (n,); otherwise joint scores (n, n_outputs)."""
        F = self._slot_scores(X)
        scores = self.task_.slot_scores_to_label_scores(F)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        F = self._slot_scores(X)
        return self.task_.decode(self.task_.predict_codes(F))

    # -- persistence ---------------------------------------------------------------------
    _saved_meta = (
        *fitted("n_features_in_", "history_", "objective_", "dual_objective_", "converged_"),
        *fitted("n_iter_"),
        ("gamma_", float),
    )
    _saved_arrays = (("support_", np.int64), ("dual_coef_", np.float64))
    _params_drop = ("callback", "task")
    _task_classes = _TASKS

    def _save_extra(self, meta, arrays):
        sv = self.support_vectors_
        arrays["support_vectors"] = sv.toarray() if sp.issparse(sv) else np.asarray(sv)
        meta["sparse_support"] = bool(sp.issparse(sv))

    def _load_extra(self, meta, arrays):
        self.classes_ = self.task_.classes_
        sv = np.asarray(arrays["support_vectors"], dtype=np.float64)
        self.support_vectors_ = sp.csr_matrix(sv) if meta.get("sparse_support") else sv
        if sv.shape != (len(self.support_), self.n_features_in_) or self.dual_coef_.shape != (
            len(self.support_),
            self.task_.n_slots,
        ):
            raise ValueError("model file is inconsistent: support vectors do not match")
