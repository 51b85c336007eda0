"""Sparse kernel SVM by cutting planes with basis selection (seed 002, Sec. 5.2.3c)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from maxmargin._registry import register
from maxmargin._validation import (
    MONITOR_PARAMS,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Options,
    as_generator,
    store_params,
    validate_params,
)
from maxmargin.exceptions import warn_interrupted
from maxmargin.learners._binary import BinaryClassifier
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.learners.svm import KERNELS, SVMClassifier, fitted_gamma
from maxmargin.solvers.sparse_kernel_svm import fit_sparse_kernel_svm

__all__ = ["SparseKernelSVM"]


@register
class SparseKernelSVM(Persistent, BinaryClassifier, BaseEstimator):
    """Binary kernel SVM with at most ``n_basis`` basis vectors, trained by 1-slack
    cutting planes whose planes are projected on a growing basis (Joachims & Yu,
    "Sparse kernel SVMs via cutting-plane training", Machine Learning 76, 2009; seed 002
    [Sun2012 Alg. 5]).  See :mod:`maxmargin.solvers.sparse_kernel_svm`.

    ``f(x) = sum_k coef_k k(b_k, x)`` (+ the intercept: with ``fit_intercept`` the kernel
    is ``k + 1``, i.e. a regularised intercept).  ``C`` weights the hinge sum, as in
    ``SVC``.  Basis vectors are chosen among ``n_candidates`` training points (None: all;
    an int: a random subset, ``random_state``).  The projected planes give no certified
    bound, so ``history_`` has ``gap`` nan and the projected master's ``master_gap``.

    Parameters
    ----------
    n_basis : int, default=50
    C : float, default=1.0
    kernel, gamma, degree, coef0 : as :class:`~maxmargin.SVMClassifier`
    fit_intercept : bool, default=True
    n_candidates : int or None, default=None
    max_iter : int, default=1000
    max_time : float or None
    random_state, verbose, callback

    Attributes
    ----------
    classes_, basis_vectors_ (K, d), coef_ (K,), intercept_ (float), support_ (the
    basis vectors' training indices), objective_ (primal of the returned model),
    history_, n_iter_.
    """

    _parameter_constraints = {
        "n_basis": [POSITIVE_INT],
        "C": [POSITIVE],
        "kernel": [Options(*KERNELS)],
        "gamma": [Options("scale", "auto"), POSITIVE],
        "degree": [POSITIVE_INT],
        "coef0": [Interval(float, None, None)],
        "fit_intercept": [bool],
        "n_candidates": [None, POSITIVE_INT],
        "max_iter": [POSITIVE_INT],
        **MONITOR_PARAMS,
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        n_basis=50,
        C=1.0,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=0.0,
        fit_intercept=True,
        n_candidates=None,
        max_iter=1000,
        max_time=None,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        store_params(self, locals())

    def _kernel_fn(self):
        # reuse SVMClassifier's kernel evaluation (same parameters, same gamma rule)
        k = SVMClassifier(
            solver="smo", kernel=self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0
        )
        k._gamma = self._gamma
        shift = 1.0 if self.fit_intercept else 0.0
        return lambda A, B: k._kernel(A, B) + shift

    def fit(self, X, y):
        validate_params(self)
        X, ys = self._binary_data(X, y)
        n = X.shape[0]
        self._gamma = fitted_gamma(X, self.gamma)
        kfn = self._kernel_fn()
        rng = as_generator(self.random_state)
        cand = np.arange(n)
        if self.n_candidates is not None and self.n_candidates < n:
            cand = np.sort(rng.choice(n, size=int(self.n_candidates), replace=False))
        sol = fit_sparse_kernel_svm(
            lambda rows: kfn(X[rows], X),
            n,
            ys,
            float(self.C),
            n_basis=int(self.n_basis),
            candidates=cand,
            max_iter=int(self.max_iter),
            max_time=self.max_time,
            callback=self.callback,
            verbose=self.verbose,
        )
        self.support_ = sol.basis
        bv = X[sol.basis]
        self.basis_vectors_ = bv.toarray() if sp.issparse(bv) else np.asarray(bv)
        self.coef_ = np.asarray(sol.coef, dtype=np.float64)
        self.intercept_ = float(self.coef_.sum()) if self.fit_intercept else 0.0
        self.objective_ = float(sol.primal)
        self.history_ = sol.history
        self.n_iter_ = len(sol.history)
        if sol.interrupted:
            warn_interrupted(self.n_iter_)
        return self

    def decision_function(self, X):
        X = self._inputs(X)
        if len(self.coef_) == 0:
            return np.zeros(X.shape[0])
        return self._kernel_fn()(X, self.basis_vectors_) @ self.coef_

    _saved_meta = (
        *fitted("n_features_in_", "history_", "objective_"),
        ("_gamma", float),
        ("intercept_", float),
    )
    _saved_arrays = (
        ("classes_", None),
        ("support_", np.int64),
        ("basis_vectors_", np.float64),
        ("coef_", np.float64),
    )

    def _load_extra(self, meta, arrays):
        if self.basis_vectors_.shape[0] != self.coef_.shape[0]:
            raise ValueError("model file is inconsistent: basis and weights differ in size")
        self.n_iter_ = len(self.history_)
