"""Linear-SVM weak learner (StructBoost Sec. 4.3).

The pricing problem ``max_phi sum_k a_k phi(x_k)`` over ``phi(x) = sign(v.x + b)``
([Shen2014 eq. 31]) is a weighted binary classification problem with labels ``sign(a_k)`` and
weights ``|a_k|``; the paper solves it approximately with a linear SVM with a large C
(``1e8 / n``).  To limit over-fitting the paper zeroes the 10% smallest non-zero duals
``mu_(i, y)``; a weak learner only sees the aggregated weights ``a_k``, so here the
``drop_fraction`` smallest non-zero ``|a_k|`` are zeroed instead (for binary tasks each
``a_k`` comes from one example's duals, so the two coincide up to aggregation).  The SVM
is a surrogate: the returned gain is the true gain of ``sign(v.x + b)`` on the full,
undropped weights, and the constant classifier is returned when it is better.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from maxmargin.weak.base import WeakLearner
from maxmargin.weak.linear import ACT_SIGN, LinearClassifiers, feature_scaling, to_raw

__all__ = ["LinearSVMWeak"]


class LinearSVMWeak(WeakLearner):
    """Weighted linear SVM (liblinear) on labels ``sign(a_k)`` with weights ``|a_k|``.

    Parameters
    ----------
    C : float or None, default=None
        SVM regularisation; None uses the paper's ``1e8 / n``.
    drop_fraction : float, default=0.1
        Fraction of the smallest non-zero weights set to zero before training.
    max_iter : int, default=2000
        liblinear iterations (convergence warnings are silenced: the gain is what counts).
    """

    hypotheses_class = LinearClassifiers

    def __init__(
        self, C: float | None = None, drop_fraction: float = 0.1, max_iter: int = 2000
    ) -> None:
        self.C = C
        self.drop_fraction = drop_fraction
        self.max_iter = max_iter

    def prepare(self, Z):
        if not 0.0 <= self.drop_fraction < 1.0:
            raise ValueError(f"drop_fraction must be in [0, 1), got {self.drop_fraction!r}")
        if sp.issparse(Z):
            Z = sp.csr_matrix(Z, dtype=np.float64)
            mean, sd = feature_scaling(Z)
            Zs = Z @ sp.diags(1.0 / sd)  # scale only: centering would densify
            mean = np.zeros_like(mean)
        else:
            Z = np.asarray(Z, dtype=np.float64)
            mean, sd = feature_scaling(Z)
            Zs = (Z - mean) / sd
        return {"Z": Z, "Zs": Zs, "mean": mean, "sd": sd}

    def best(self, prepared, A):
        Z, Zs, mean, sd = prepared["Z"], prepared["Zs"], prepared["mean"], prepared["sd"]
        A = np.asarray(A, dtype=np.float64)
        if A.ndim == 1:
            A = A[:, None]
        n, d = Z.shape
        if A.shape[0] != n:
            raise ValueError(f"weights must have shape ({n}, S), got {A.shape}")
        S = A.shape[1]
        total = A.sum(axis=0)
        # start from the constant classifier sign(b), gain |sum a|
        W, B = np.zeros((S, d)), np.where(total >= 0, 1.0, -1.0)
        gains = np.abs(total)
        C = float(self.C) if self.C is not None else 1e8 / max(n, 1)
        for s in range(S):
            w = self._dropped(np.abs(A[:, s]))
            y = np.where(A[:, s] > 0, 1, -1)
            keep = w > 0
            if len(np.unique(y[keep])) < 2:
                continue
            # fixed seed: liblinear shuffles its coordinates, and a weak learner must be
            # deterministic (a fit is reproducible from random_state alone)
            svm = LinearSVC(
                C=C, loss="hinge", dual=True, max_iter=int(self.max_iter), random_state=0
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                svm.fit(Zs[keep], y[keep], sample_weight=w[keep])
            v, b = to_raw(svm.coef_.ravel(), float(svm.intercept_[0]), mean, sd)
            out = LinearClassifiers(v, b, [ACT_SIGN], d).evaluate(Z)[0]
            g = float(out @ A[:, s])
            if g < 0:  # the flipped classifier (up to points exactly on the plane)
                v, b = -v, -b
                g = float(LinearClassifiers(v, b, [ACT_SIGN], d).evaluate(Z)[0] @ A[:, s])
            if g > gains[s]:
                W[s], B[s], gains[s] = v, b, g
        return LinearClassifiers(W, B, np.full(S, ACT_SIGN), d), gains

    def _dropped(self, w: np.ndarray) -> np.ndarray:
        """Weights with the ``drop_fraction`` smallest non-zero entries set to zero."""
        nz = np.flatnonzero(w > 0)
        k = int(np.floor(self.drop_fraction * len(nz)))
        if k == 0:
            return w
        w = w.copy()
        w[nz[np.argsort(w[nz], kind="stable")[:k]]] = 0.0
        return w
