"""Binary (and one-vs-rest) SVM classifier with the thesis's solvers (seed 002, Sec. 2.3)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import (
    MONITOR_PARAMS,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Options,
    add_intercept,
    as_generator,
    store_params,
    validate_params,
)
from maxmargin.exceptions import FitInterruptedWarning, warn_interrupted
from maxmargin.kernels import ADDITIVE_KERNELS, additive_kernel
from maxmargin.learners._binary import SparseInput, fit_classes
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.solvers.svm import (
    ROW_KERNELS,
    dual_cd_data,
    fit_dual_cd,
    fit_one_slack_svm,
    fit_pegasos,
    fit_smo,
    kernel_rows,
)

__all__ = ["SVMClassifier"]

SOLVERS = ("smo", "dual_cd", "pegasos", "1-slack")
KERNELS = ("linear", "rbf", "poly", "sigmoid", "intersection", "chi2")


def fitted_gamma(X, gamma) -> float:
    """The kernel width ``SVC`` fits: a number as given, ``"scale"`` ``1 / (n_features
    X.var())``, ``"auto"`` (or a constant ``X``) ``1 / n_features``; ``X`` dense or CSR."""
    if not isinstance(gamma, str):
        return float(gamma)
    var = X.multiply(X).mean() - X.mean() ** 2 if sp.issparse(X) else X.var()
    return 1.0 / X.shape[1] if gamma == "auto" or var == 0 else 1.0 / (X.shape[1] * var)


@register
class SVMClassifier(SparseInput, Persistent, ClassifierMixin, BaseEstimator):
    """Support vector machine with a choice of the thesis's solvers.

    Two problems, with ``C`` as in scikit-learn:

    * ``solver="smo"``: the kernel SVM of ``sklearn.svm.SVC`` (libsvm),
      ``1/2||w||^2 + C sum_i hinge_i`` with an unregularised intercept, solved in the
      dual by decomposition with two-variable working sets (``wss="wss1"``: maximal
      violating pair; ``"wss2"``: second-order selection);
    * ``solver="dual_cd"`` (dual coordinate descent, ``loss="hinge"`` or
      ``"squared_hinge"``), ``"pegasos"`` (stochastic sub-gradient, hinge) and
      ``"1-slack"`` (cutting planes with the project's QP master, hinge): the linear SVM
      of ``sklearn.svm.LinearSVC`` (liblinear), ``1/2||w||^2 + C sum_i loss_i``, where the
      intercept is the weight of a constant column ``intercept_scaling`` and so is
      regularised, as in liblinear.

    More than two classes: one-vs-rest, one binary problem per class; ``objective_`` and
    ``dual_objective_`` are then sums over the problems (the objective of the joint,
    separable problem), ``history_`` rows carry ``problem`` (the class index).

    Parameters
    ----------
    solver : {"smo", "dual_cd", "pegasos", "1-slack"}, default="dual_cd"
    C : float, default=1.0
    loss : {"hinge", "squared_hinge"}, default="hinge"
        Only ``"dual_cd"`` accepts ``"squared_hinge"``.
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
        Value of the constant column of the linear solvers (ignored by SMO).
    kernel : {"linear", "rbf", "poly", "sigmoid", "intersection", "chi2"}, default="linear"
        SMO only (the other solvers are linear).  ``"intersection"`` (``sum min(x, y)``)
        and ``"chi2"`` (``sum 2xy / (x + y)``) are the additive kernels of
        :mod:`maxmargin.kernels` (non-negative features).
    gamma : "scale", "auto" or float, default="scale"
        As in ``SVC``: ``"scale"`` is ``1 / (n_features X.var())``.
    degree, coef0 : kernel parameters, as in ``SVC``.
    wss : {"wss1", "wss2"}, default="wss2"
        SMO working-set selection.
    cache_size : float, default=200.0
        SMO's kernel-row cache in MB (as ``SVC``): rows of the linear, rbf, poly and
        sigmoid kernels on dense data are computed when SMO first needs them and the least
        recently used are evicted; sparse data and the additive kernels use the whole
        precomputed matrix.
    tol : float, default=1e-3
        SMO: maximal KKT violation (libsvm's ``eps``); other solvers: relative duality gap.
    max_iter : int, default=1000
        SMO: pair updates are capped at ``max_iter * n_samples``; dual_cd, pegasos: epochs;
        1-slack: cutting-plane rounds.
    max_time : float or None
    random_state : int, RandomState, Generator or None
        Sample orders of dual_cd and pegasos.
    verbose : int, default=0
    callback : callable or None
        Called with each history record; returning True stops the fit after that
        record (the model keeps its iterate, ``converged_`` is False).

    Attributes
    ----------
    classes_ : ndarray
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Not available for a non-linear kernel.
    intercept_ : ndarray of shape (1,) or (n_classes,)
    support_vectors_, dual_coef_ : SMO only; ``dual_coef_[k, s] = alpha_s y_s`` of
        problem k (zero where the vector is not a support vector of problem k).
    objective_, dual_objective_ : float
        Primal objective and a dual lower bound (summed over one-vs-rest problems).
    history_ : list of dict
        ``iteration``, ``objective``, ``dual_bound``, ``gap`` (relative), ``t_total``.
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from maxmargin import SVMClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> SVMClassifier(solver="dual_cd", C=1.0).fit(X, y).score(X, y) > 0.97
    True

    References
    ----------
    R.-E. Fan, P.-H. Chen, C.-J. Lin, "Working set selection using second order
    information for training support vector machines", JMLR 6 (2005).
    C.-J. Hsieh et al., "A dual coordinate descent method for large-scale linear SVM",
    ICML 2008.  S. Shalev-Shwartz, Y. Singer, N. Srebro, "Pegasos: primal estimated
    sub-gradient solver for SVM", ICML 2007.  T. Joachims, "Training linear SVMs in
    linear time", KDD 2006.  (See :mod:`maxmargin.solvers.svm`.)
    """

    _parameter_constraints = {
        "solver": [Options(*SOLVERS)],
        "C": [POSITIVE],
        "loss": [Options("hinge", "squared_hinge")],
        "fit_intercept": [bool],
        "intercept_scaling": [POSITIVE],
        "kernel": [Options(*KERNELS)],
        "gamma": [Options("scale", "auto"), POSITIVE],
        "degree": [POSITIVE_INT],
        "coef0": [Interval(float, None, None)],
        "wss": [Options("wss1", "wss2")],
        "cache_size": [POSITIVE],
        "tol": [POSITIVE],
        "max_iter": [POSITIVE_INT],
        **MONITOR_PARAMS,
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        solver="dual_cd",
        C=1.0,
        loss="hinge",
        fit_intercept=True,
        intercept_scaling=1.0,
        kernel="linear",
        gamma="scale",
        degree=3,
        coef0=0.0,
        wss="wss2",
        cache_size=200.0,
        tol=1e-3,
        max_iter=1000,
        max_time=None,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        store_params(self, locals())

    # ------------------------------------------------------------------ helpers
    def _check_combination(self):
        if self.loss == "squared_hinge" and self.solver != "dual_cd":
            raise ValueError(f"loss='squared_hinge' needs solver='dual_cd', got {self.solver!r}")
        if self.kernel != "linear" and self.solver != "smo":
            raise ValueError(f"kernel={self.kernel!r} needs solver='smo', got {self.solver!r}")

    def _kernel(self, A, B):
        if self.kernel in ADDITIVE_KERNELS:
            return additive_kernel(A, B, self.kernel)
        params = {}
        if self.kernel in ("rbf", "poly", "sigmoid"):
            params["gamma"] = self._gamma
        if self.kernel in ("poly", "sigmoid"):
            params["coef0"] = float(self.coef0)
        if self.kernel == "poly":
            params["degree"] = int(self.degree)
        return pairwise_kernels(A, B, metric=self.kernel, **params)

    def _augment(self, X):
        return add_intercept(X, self.intercept_scaling) if self.fit_intercept else X

    def _solve(self, X, Xa, K, yb, rng, problem):
        common = {
            "max_time": self.max_time,
            "callback": self.callback,
            "verbose": self.verbose,
        }
        C = float(self.C)
        if self.solver == "smo":
            n = yb.shape[0]
            sol = fit_smo(
                K,
                yb,
                C,
                wss=self.wss,
                tol=float(self.tol),
                max_iter=int(self.max_iter) * max(n, 1),
                **common,
            )
            return sol, None, sol.b
        if self.solver == "dual_cd":
            sol = fit_dual_cd(
                Xa, yb, C, loss=self.loss, tol=float(self.tol), max_iter=int(self.max_iter),
                rng=rng, **common,
            )  # fmt: skip
        elif self.solver == "pegasos":
            sol = fit_pegasos(
                Xa, yb, C, tol=float(self.tol), max_iter=int(self.max_iter), rng=rng, **common
            )
        else:
            sol = fit_one_slack_svm(
                Xa, yb, C, tol=float(self.tol), max_iter=int(self.max_iter), **common
            )
        w = sol.w
        if self.fit_intercept:
            return sol, w[:-1], float(w[-1] * self.intercept_scaling)
        return sol, w, 0.0

    # ---------------------------------------------------------------------- fit
    def fit(self, X, y):
        """Fit on X (dense or CSR) and class labels y."""
        validate_params(self)
        self._check_combination()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        yi = fit_classes(self, y)
        k = len(self.classes_)
        self._gamma = fitted_gamma(X, self.gamma)
        rng = as_generator(self.random_state)
        K = Xa = None
        if self.solver == "smo":
            if self.kernel in ROW_KERNELS and not sp.issparse(X):
                K = kernel_rows(
                    X,
                    self.kernel,
                    gamma=self._gamma,
                    coef0=float(self.coef0),
                    degree=int(self.degree),
                    cache_size=float(self.cache_size),
                )  # shared by the one-vs-rest problems
            else:
                K = self._kernel(X, X)
        else:
            Xa = self._augment(X)
            if self.solver == "dual_cd":
                Xa = dual_cd_data(Xa)  # laid out once for the one-vs-rest problems
        problems = [1] if k == 2 else list(range(k))
        coefs, intercepts, alphas, history = [], [], [], []
        primal = dual = 0.0
        converged = True
        n_iter = 0
        untrained = []  # one-vs-rest problems a Ctrl-C left unsolved
        for p, cls in enumerate(problems):
            yb = np.where(yi == cls, 1.0, -1.0)
            try:
                sol, w, b = self._solve(X, Xa, K, yb, rng, p)
            except KeyboardInterrupt:
                if p == 0:
                    raise  # nothing solved yet: nothing to keep
                untrained = list(range(p, len(problems)))
                break
            for rec in sol.history:
                if k > 2:
                    rec["problem"] = p
                history.append(rec)
            primal += sol.primal
            dual += sol.dual
            converged &= sol.converged
            n_iter = max(n_iter, sol.n_iter)
            intercepts.append(b)
            if self.solver == "smo":
                alphas.append(sol.alpha * yb)
            else:
                coefs.append(w)
            if sol.interrupted:
                untrained = list(range(p + 1, len(problems)))
                break
        interrupted = bool(untrained) or sol.interrupted
        for _ in untrained:  # unsolved problems score 0 (the dual's starting point)
            intercepts.append(0.0)
            if self.solver == "smo":
                alphas.append(np.zeros(yb.shape[0]))
            else:
                coefs.append(np.zeros(coefs[0].shape[0]))
        if interrupted:
            converged = False
            warn_interrupted(n_iter)
            if untrained:
                names = ", ".join(str(self.classes_[problems[q]]) for q in untrained)
                warnings.warn(
                    f"the one-vs-rest problems of classes {names} were not started before "
                    f"Ctrl-C: they score 0 for every sample",
                    FitInterruptedWarning,
                    stacklevel=2,
                )
        elif not converged:
            warnings.warn(
                f"SVMClassifier ({self.solver}) did not reach tol={self.tol:g} "
                f"(relative gap {history[-1]['gap']:.3g}); increase max_iter",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.intercept_ = np.asarray(intercepts, dtype=np.float64)
        if self.solver == "smo":
            A = np.vstack(alphas)
            sv = np.flatnonzero(np.any(A != 0, axis=0))
            self.support_ = sv
            svx = X[sv]
            self.support_vectors_ = svx.toarray() if sp.issparse(svx) else np.asarray(svx)
            self.dual_coef_ = A[:, sv]
        self._set_coef(None if self.solver == "smo" else np.vstack(coefs))
        self.objective_ = float(primal)
        self.dual_objective_ = float(dual)
        self.history_ = history
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        return self

    def _set_coef(self, coef):
        if coef is None and self.kernel == "linear":
            coef = self.dual_coef_ @ self.support_vectors_
        if coef is not None:
            self.coef_ = np.asarray(coef, dtype=np.float64)

    # ------------------------------------------------------------------ predict
    def decision_function(self, X):
        """Scores: (n,) for two classes (positive: ``classes_[1]``), else (n, n_classes)."""
        check_is_fitted(self, "intercept_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        if hasattr(self, "coef_"):
            s = X @ self.coef_.T
        else:
            s = self._kernel(X, self.support_vectors_) @ self.dual_coef_.T
        s = np.asarray(s) + self.intercept_
        return s[:, 0] if s.shape[1] == 1 else s

    def predict(self, X):
        s = self.decision_function(X)
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]

    # -------------------------------------------------------------- persistence
    _saved_meta = (
        *fitted("n_features_in_", "history_", "objective_", "dual_objective_", "n_iter_"),
        *fitted("converged_"),
        ("_gamma", float),
    )
    _saved_arrays = (("classes_", None), ("intercept_", np.float64))

    def _save_extra(self, meta, arrays):
        if self.solver == "smo":
            arrays.update(
                support=self.support_,
                support_vectors=self.support_vectors_,
                dual_coef=self.dual_coef_,
            )
        else:
            arrays["coef"] = self.coef_

    def _load_extra(self, meta, arrays):
        if self.solver == "smo":
            self.support_ = np.asarray(arrays["support"])
            self.support_vectors_ = np.asarray(arrays["support_vectors"], dtype=np.float64)
            self.dual_coef_ = np.asarray(arrays["dual_coef"], dtype=np.float64)
            self._set_coef(None)
        else:
            self._set_coef(arrays["coef"])
        if self.intercept_.shape[0] != (1 if len(self.classes_) == 2 else len(self.classes_)):
            raise ValueError("model file is inconsistent: intercepts do not match the classes")
