"""Multi-class latent structured SVM, a thin shell over the CCCP solver (solvers/cccp.py)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.cluster import KMeans
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import (
    CALLBACK,
    N_JOBS,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    VERBOSE,
    Options,
    add_intercept,
    as_generator,
    store_params,
    validate_params,
)
from maxmargin.exceptions import warn_interrupted
from maxmargin.learners._binary import SparseInput, fit_classes
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.solvers.cccp import fit_latent_cccp
from maxmargin.solvers.ssvm import SOLVER_ALIASES, SOLVERS, canonical_solver

__all__ = ["LatentSSVM"]


@register
class LatentSSVM(SparseInput, Persistent, ClassifierMixin, BaseEstimator):
    """Multi-class latent structured SVM trained by CCCP (Yu & Joachims, ICML 2009).

    Each class y is a union of ``n_latent`` sub-classes z with their own weight vector,
    ``Psi(x, y, z) = x (x) e_(y, z)`` and ``f(x) = argmax_y max_z w.Psi(x, y, z)``
    ([Nowozin2011], "Extra I"); the concave-convex procedure is
    :func:`maxmargin.solvers.cccp.fit_latent_cccp`.  Sub-classes are initialised by
    k-means inside every class.

    Parameters
    ----------
    n_latent : int, default=2
        Sub-classes per class.
    C : float, default=100.0
        Weight of the average structured hinge.
    solver : str, default="n-slack"
        Structured SVM solver of every CCCP round (:mod:`maxmargin.solvers.ssvm`).
    tol : float, default=1e-3
        Relative duality gap of every convex round.
    max_iter : int, default=1000
        Iterations of every convex round.
    max_outer : int, default=20
        CCCP rounds.
    outer_tol : float, default=1e-3
        Stop when the latent objective decreases by less than this (relative).
    fit_intercept : bool, default=True
        Append a constant feature 1 (regularised).
    random_state : int, RandomState, Generator or None, default=None
        Seed of the k-means initialisation and the stochastic solvers.
    n_jobs : int or None, default=None
        Workers for the loss-augmented oracle on the active joblib backend (loky
        processes by default; ``joblib.parallel_config(backend="dask")`` for a Dask
        cluster).  None: the single-process path; any integer (1 included): the oracle
        on fixed shards of the examples, the same fit bit for bit for every ``n_jobs``
        and backend (docs/scaling.md).
    verbose : int, default=0
        Print progress when > 0.
    callback : callable or None, default=None
        Called with each CCCP round's record.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (n_features [+1], n_classes * n_latent)
        One weight vector per (class, sub-class).
    latent_ : ndarray of shape (n_samples,)
        Imputed sub-class of every training example.
    history_ : list of dict
        One record per CCCP round (``objective`` is the latent objective; ``gap`` is nan:
        the problem is not convex).
    objective_path_ : list of float
        Latent objective after every CCCP round.
    objective_ : float
        Final latent objective.
    n_iter_ : int
        Number of CCCP rounds run.
    converged_ : bool
        True when the imputation stopped changing or the ``outer_tol`` test was met.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin import LatentSSVM
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(c, 0.3, (20, 2)) for c in ([0, 0], [4, 4], [0, 4], [4, 0])])
    >>> y = np.repeat([0, 0, 1, 1], 20)          # each class is two blobs (XOR)
    >>> LatentSSVM(random_state=0).fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    Yu & Joachims, "Learning structural SVMs with latent variables", ICML 2009 [Yu2009];
    Nowozin & Lampert, CVPR 2011 tutorial [Nowozin2011] (full citations:
    docs/references.md).
    """

    _parameter_constraints = {
        "n_latent": [POSITIVE_INT],
        "C": [POSITIVE],
        "solver": [Options(*SOLVERS, *SOLVER_ALIASES)],
        "tol": [NON_NEGATIVE],
        "max_iter": [POSITIVE_INT],
        "max_outer": [POSITIVE_INT],
        "outer_tol": [NON_NEGATIVE],
        "fit_intercept": [bool],
        "random_state": RANDOM_STATE,
        "n_jobs": N_JOBS,
        "verbose": VERBOSE,
        "callback": CALLBACK,
    }

    def __init__(
        self,
        *,
        n_latent: int = 2,
        C: float = 100.0,
        solver: str = "n-slack",
        tol: float = 1e-3,
        max_iter: int = 1000,
        max_outer: int = 20,
        outer_tol: float = 1e-3,
        fit_intercept: bool = True,
        random_state=None,
        n_jobs=None,
        verbose: int = 0,
        callback=None,
    ):
        store_params(self, locals())

    def _aug(self, X):
        return add_intercept(X) if self.fit_intercept else X

    def fit(self, X, y):
        """Fit the latent structured SVM by CCCP.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        validate_params(self)
        canonical_solver(self.solver)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        yc = fit_classes(self, y)
        K, M = len(self.classes_), int(self.n_latent)
        rng = as_generator(self.random_state)
        z = np.zeros(len(yc), dtype=np.int64)
        for k in range(K):  # k-means inside every class
            idx = np.flatnonzero(yc == k)
            m = min(M, len(idx))
            if m > 1:
                seed = int(rng.integers(2**31))
                z[idx] = KMeans(n_clusters=m, n_init=3, random_state=seed).fit_predict(X[idx])
        res = fit_latent_cccp(
            self._aug(X),
            yc.astype(np.int64),
            K,
            z,
            n_latent=M,
            C=float(self.C),
            max_outer=int(self.max_outer),
            outer_tol=float(self.outer_tol),
            inner={
                "solver": self.solver,
                "tol": float(self.tol),
                "max_iter": int(self.max_iter),
                "random_state": rng,
                "n_jobs": self.n_jobs,
            },
            callback=self.callback,
            verbose=self.verbose,
        )
        self.coef_ = res.W
        self.latent_ = res.latent
        self.history_ = res.history
        self.objective_path_ = [r["objective"] for r in res.history]
        self.objective_ = self.objective_path_[-1]
        self.n_iter_ = len(res.history)
        self.converged_ = bool(res.converged)
        if res.interrupted:
            warn_interrupted(self.n_iter_)
        return self

    def _class_scores(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        K, M = len(self.classes_), int(self.n_latent)
        return np.asarray(self._aug(X) @ self.coef_).reshape(X.shape[0], K, M).max(axis=2)

    def decision_function(self, X):
        """Binary: score of ``classes_[1]`` minus ``classes_[0]`` (n,); otherwise the best
        sub-class score of every class (n, K)."""
        S = self._class_scores(X)
        return S[:, 1] - S[:, 0] if S.shape[1] == 2 else S

    def predict(self, X):
        S = self._class_scores(X)
        return self.classes_[np.argmax(S, axis=1)]

    # -- persistence ---------------------------------------------------------------------
    _saved_meta = fitted("n_features_in_", "history_", "n_iter_", "converged_")
    _saved_arrays = (("classes_", None), ("coef_", np.float64), ("latent_", np.int64))

    def _load_extra(self, meta, arrays):
        rows = self.n_features_in_ + int(bool(self.fit_intercept))
        if self.coef_.shape != (rows, len(self.classes_) * int(self.n_latent)):
            raise ValueError("model file is inconsistent: weights do not match the classes")
        self.objective_path_ = [r["objective"] for r in self.history_]
        self.objective_ = self.objective_path_[-1] if self.objective_path_ else float("nan")
