"""Multiple-kernel, multiple-instance similarity features (seed 002, Sec. 5.3)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import (
    POSITIVE_INT,
    RANDOM_STATE,
    as_generator,
    store_params,
    validate_params,
)
from maxmargin.learners._binary import SparseInput

__all__ = ["SimilarityFeatures"]


def _gaussian(A, B, gamma):
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


@register
class SimilarityFeatures(SparseInput, TransformerMixin, BaseEstimator):
    """Similarity to exemplars under several Gaussian kernels, per feature channel, with an
    optional multiple-instance max over a support set ([Sun2012 eqs. 5.76-5.79]).

    For exemplars ``e_1..e_M`` (training points), kernels ``gamma_1..gamma_Q`` and channels
    ``p = 1..P`` (column groups of x), the output has ``M * P * Q`` columns
    ``S_{j,p,q}(x) = max_{s in support_p} exp(-gamma_q ||x^{p,s} - e_j^p||^2)``, where the
    exemplar is taken at the channel's anchor (its first column group) and ``x`` at every
    group of its support set ([Sun2012 eq. 5.79]; without ``support_sets`` the support set is the
    anchor alone, i.e. plain multi-kernel similarity features, [Sun2012 eq. 5.78]).  A linear model
    on these features learns exemplar-specific similarity metrics ([Sun2012 eq. 5.86]); pair it with
    :class:`~maxmargin.ForwardFeatureSelector` for a sparse classifier (Sec. 5.3.2).

    Parameters
    ----------
    gammas : sequence of float, default=(0.2, 0.5, 0.7, 1.0, 1.5, 2.0)
        Kernel widths (the seed's synthetic experiment).
    channels : list of int arrays or None
        Column groups (None: one channel with every column).
    support_sets : list (one per channel) of lists of int arrays, or None
        For channel p, the column groups to match against (each as long as the channel);
        None: the channel itself.
    n_exemplars : int or None
        Random subset of the training points used as exemplars (None: all).
    random_state : for the subset.

    Attributes
    ----------
    exemplars_ : ndarray (M, n_features)
    refine_history_ : list of float
        After :meth:`refine`: the hinge loss before each accepted step and at the end.
    """

    _parameter_constraints = {
        "gammas": [tuple, list],
        "channels": [None, list],
        "support_sets": [None, list],
        "n_exemplars": [None, POSITIVE_INT],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        gammas=(0.2, 0.5, 0.7, 1.0, 1.5, 2.0),
        channels=None,
        support_sets=None,
        n_exemplars=None,
        random_state=None,
    ):
        store_params(self, locals())

    def _groups(self, d):
        channels = (
            [np.arange(d)] if self.channels is None else [np.asarray(c) for c in self.channels]
        )
        if self.support_sets is None:
            support = [[c] for c in channels]
        else:
            support = [[np.asarray(g) for g in sets] for sets in self.support_sets]
            if len(support) != len(channels):
                raise ValueError("support_sets needs one list per channel")
        for c, sets in zip(channels, support):
            if np.any(c >= d) or any(g.shape != c.shape or np.any(g >= d) for g in sets):
                raise ValueError("channels / support sets must be column groups of equal size")
        return channels, support

    def fit(self, X, y=None):
        validate_params(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        X = X.toarray() if sp.issparse(X) else X
        gammas = np.asarray(self.gammas, dtype=np.float64)
        if (
            gammas.ndim != 1
            or len(gammas) == 0
            or np.any(~np.isfinite(gammas))
            or np.any(gammas <= 0)
        ):
            raise ValueError(f"gammas must be positive finite numbers, got {self.gammas!r}")
        self._groups(X.shape[1])
        n = X.shape[0]
        idx = np.arange(n)
        if self.n_exemplars is not None and self.n_exemplars < n:
            idx = np.sort(
                as_generator(self.random_state).choice(n, int(self.n_exemplars), replace=False)
            )
        self.exemplars_ = X[idx].copy()
        return self

    def transform(self, X):
        check_is_fitted(self, "exemplars_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        X = X.toarray() if sp.issparse(X) else X
        channels, support = self._groups(X.shape[1])
        out = []
        for c, sets in zip(channels, support):
            E = self.exemplars_[:, c]
            for g in np.asarray(self.gammas, dtype=np.float64):
                S = np.max([_gaussian(X[:, s], E, g) for s in sets], axis=0)
                out.append(S)
        return np.hstack(out)

    def refine(self, X, y, coef, intercept=0.0, *, max_iter=50, step=1.0):
        """Exemplar refinement ([Sun2012 eqs. 5.87-5.89]): move the exemplars to lower the hinge
        loss ``sum_i max(0, 1 - y_i f_i)`` of a linear model ``f = S(x) . coef + intercept``
        fitted on these features (``coef``: one weight per output column, zero for
        unselected ones), by sub-gradient descent with backtracking: a step is taken only
        if the loss falls, so the loss never rises.  Only exemplars with a non-zero weight
        move; the regulariser of ``coef`` is untouched (Sec. 5.3.2).

        Sub-gradient ([Sun2012 eqs. 5.88-5.89], sign corrected): ``dL/df_i = -y_i [y_i f_i < 1]``,
        ``df_i / ds_ijpq = w_jpq`` and ``ds / de_j^p = 2 gamma_q s (x_i^{p,s*} - e_j^p)``
        with ``s*`` the support set attaining the max (the seed prints ``-2 gamma s (x_i -
        x_e)``, which would push an exemplar of positive weight *away* from the positive
        in-margin samples, against its own text).  ``y``: two classes, the larger label
        positive.  Returns self.
        """
        check_is_fitted(self, "exemplars_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        X = X.toarray() if sp.issparse(X) else X
        labels = np.unique(y)
        if len(labels) != 2 or len(y) != X.shape[0]:
            raise ValueError("refine needs one label per sample and exactly two classes")
        ys = np.where(np.asarray(y) == labels[1], 1.0, -1.0)
        channels, support = self._groups(X.shape[1])
        gammas = np.asarray(self.gammas, dtype=np.float64)
        M, P, Q = self.exemplars_.shape[0], len(channels), len(gammas)
        coef = np.asarray(coef, dtype=np.float64).ravel()
        if coef.shape != (M * P * Q,) or not np.all(np.isfinite(coef)):
            raise ValueError(f"coef must be {M * P * Q} finite weights (one per feature)")
        W = coef.reshape(P, Q, M)
        active = np.any(W != 0, axis=(0, 1))

        def loss_grad(E, need_grad=True):
            parts = []
            f = np.full(X.shape[0], float(intercept))
            for p, (c, sets) in enumerate(zip(channels, support)):
                for q, g in enumerate(gammas):
                    S_all = np.stack([_gaussian(X[:, s], E[:, c], g) for s in sets])
                    arg = S_all.argmax(axis=0)
                    S = np.take_along_axis(S_all, arg[None], axis=0)[0]
                    f += S @ W[p, q]
                    parts.append((p, q, c, sets, S, arg))
            loss = float(np.maximum(0.0, 1.0 - ys * f).sum())
            if not need_grad:
                return loss, None
            dldf = -ys * (ys * f < 1.0)
            grad = np.zeros_like(E)
            for p, q, c, sets, S, arg in parts:
                A = 2.0 * gammas[q] * dldf[:, None] * S * W[p, q][None, :]  # (n, M)
                pulled = sum((A * (arg == k)).T @ X[:, s] for k, s in enumerate(sets))
                grad[:, c] += pulled - E[:, c] * A.sum(axis=0)[:, None]
            grad[~active] = 0.0
            return loss, grad

        E = self.exemplars_.copy()
        loss, grad = loss_grad(E)
        history = [loss]
        t = float(step)
        for _ in range(int(max_iter)):
            if not np.any(grad):
                break
            for _ in range(30):  # backtracking: accept only a decrease
                trial = E - t * grad
                new = loss_grad(trial, need_grad=False)[0]
                if new < loss:
                    break
                t *= 0.5
            else:
                break
            E = trial
            loss, grad = loss_grad(E)
            history.append(loss)
            t *= 2.0
        self.exemplars_ = E
        self.refine_history_ = history
        return self

    def _get_state(self):
        check_is_fitted(self, "exemplars_")

        def ints(groups):
            return None if groups is None else [[int(v) for v in g] for g in groups]

        params = {
            "gammas": [float(g) for g in self.gammas],
            "channels": ints(self.channels),
            "support_sets": None
            if self.support_sets is None
            else [ints(sets) for sets in self.support_sets],
            "n_exemplars": self.n_exemplars,
            "random_state": self.random_state
            if isinstance(self.random_state, (int, type(None)))
            else None,
        }
        meta = {"params": params, "n_features_in": int(self.n_features_in_)}
        return meta, {"exemplars": self.exemplars_}

    @classmethod
    def _from_state(cls, meta, arrays):
        est = cls(**meta["params"])
        est.n_features_in_ = int(meta["n_features_in"])
        est.exemplars_ = np.asarray(arrays["exemplars"], dtype=np.float64)
        if est.exemplars_.ndim != 2 or est.exemplars_.shape[1] != est.n_features_in_:
            raise ValueError("model file is inconsistent: exemplars do not match the features")
        return est
