"""Feature-subset search for boosting by partial least squares (seed 002, Sec. 3.4).

Fitting every weak learner to the new sample weights is the cost of a boosting round.
:class:`FeatureSubset` wraps any single-feature weak learner (stumps, real stumps, trees)
and searches it over a *subset* of the features, redrawn every ``refresh`` rounds:

* ``method="pls"``: the thesis's scheme.  A weighted PLS regression of the labels on the
  features (:func:`pls_coefficients`, [Sun2012 Alg. 2] with the weights absorbed as
  ``diag(sqrt(omega))``, [Sun2012 eqs. 3.49-3.50]) gives coefficients ``b``; ``|b|`` is treated as
  an importance *distribution* and ``size`` features are drawn from it without replacement
  (not the top ``size``, so that duplicated or correlated features, whose weight PLS
  shares out, still get drawn -- Sec. 3.4.2);
* ``method="random"``: ``size`` features uniformly (the thesis's baseline).

The PLS fit may use an importance-resampled subset of ``max_samples`` rows (the thesis
selects on 3,000 of 10,474 windows); resampling by the weights and fitting unweighted is
equivalent to the weighted fit ([Sun2012 eqs. 3.48-3.50]).

Derivation used here (PLS1 without deflating X).  With ``y_{k+1} = y_k - c_k t_k`` and
orthonormal scores ``t``, ``t_j^T y_k = 0`` for ``j < k``, hence
``w_k = X_k^T y_k = X^T y_k`` and ``p_k = X_k^T t_k = X^T t_k``; only
``t_k = X w_k - T_{<k} (P_{<k}^T w_k)`` needs the earlier components.  Each component is
then two products with the (possibly sparse) data, never a dense deflated copy.
Deviation from [Sun2012 Alg. 2]: X and y are centred by their weighted means first (standard
PLS; without it the first component mostly models the feature means); the thesis's
uncentred version is ``center=False``.

References: C. Sun, "Machine learning approaches for visual object detection", PhD thesis,
The Hong Kong Polytechnic University (Sec. 3.4); W. R. Schwartz, A. Kembhavi, D. Harwood,
L. S. Davis, "Human detection using partial least squares analysis", ICCV 2009.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from maxmargin.weak.base import Hypotheses, WeakLearner

__all__ = ["SUBSET_KEYS", "FeatureSubset", "feature_subset_search", "pls_coefficients"]


def pls_coefficients(X, y, n_components=20, sample_weight=None, center=True) -> np.ndarray:
    """Weighted PLS1 regression coefficients ``b`` (``y ~ X b``), [Sun2012 Alg. 2].

    ``X``: (n, d) dense or scipy.sparse; ``y``: (n,); ``sample_weight`` ``omega >= 0``
    (default 1).  Stops early when the deflated labels are fully explained.
    """
    X = X.tocsr() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    om = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if om.shape != (n,) or np.any(om < 0) or not np.all(np.isfinite(om)):
        raise ValueError("sample_weight must be n finite non-negative values")
    if y.shape != (n,) or not np.all(np.isfinite(y)):
        raise ValueError("y must be n finite values")
    if n_components < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}")
    s = np.sqrt(om)
    total = om.sum()
    if total <= 0:
        return np.zeros(d)
    if center:
        mu = np.asarray(X.T @ om).ravel() / total
        yc = y - (om @ y) / total
    else:
        mu = np.zeros(d)
        yc = y

    def xv(v):  # X_nn v with X_nn = diag(s) (X - 1 mu^T)
        return s * (np.asarray(X @ v).ravel() - mu @ v)

    def xtu(u):  # X_nn^T u
        su = s * u
        return np.asarray(X.T @ su).ravel() - mu * su.sum()

    yk = s * yc
    scale = np.linalg.norm(yk)
    K = min(int(n_components), n, d)
    W = np.zeros((d, K))
    P = np.zeros((d, K))
    T = np.zeros((n, K))
    c = np.zeros(K)
    k_used = 0
    for k in range(K):
        w = xtu(yk)
        t = xv(w)
        if k:
            t -= T[:, :k] @ (P[:, :k].T @ w)
        nt = np.linalg.norm(t)
        if nt <= 1e-12 * max(scale, 1e-300) or np.linalg.norm(yk) <= 1e-12 * max(scale, 1e-300):
            break
        w /= nt
        t /= nt
        W[:, k], T[:, k], P[:, k] = w, t, xtu(t)
        c[k] = t @ yk
        yk = yk - c[k] * t
        k_used = k + 1
    if k_used == 0:
        return np.zeros(d)
    W, P, c = W[:, :k_used], P[:, :k_used], c[:k_used]
    # b = W (P^T W)^{-1} c  ([Sun2012 eqs. 3.46-3.47]); P^T W is upper triangular with unit diagonal
    return W @ np.linalg.solve(P.T @ W, c)


def _remap(h: Hypotheses, features: np.ndarray, n_features: int) -> Hypotheses:
    """Hypotheses found on the columns ``features`` of the data, re-indexed to all columns."""
    f = h.feature
    h.feature = np.where(f >= 0, features[np.maximum(f, 0)], f)
    h.n_features = int(n_features)
    return h


class _SubsetState:
    """What :meth:`FeatureSubset.prepare` keeps: the data, the current subset and the
    base learner prepared on it."""

    def __init__(self, Z, rng):
        self.Z = Z.tocsc() if sp.issparse(Z) else np.asarray(Z, dtype=np.float64)
        self.Zr = Z.tocsr() if sp.issparse(Z) else self.Z
        self.rng = rng
        self.calls = 0
        self.features = None
        self.prepared = None
        self.history: list[np.ndarray] = []  # the subsets drawn, in order


class FeatureSubset(WeakLearner):
    """Search a single-feature weak learner over a feature subset drawn by PLS importance
    (or uniformly), refreshed every ``refresh`` rounds (thesis Sec. 3.4).

    Parameters
    ----------
    base : str or WeakLearner, default="stump"
        A weak learner whose hypotheses have a ``feature`` array (stumps, real stumps,
        trees).
    size : int, default=500
        Features per subset (all of them when the data has fewer).
    refresh : int, default=25
        Rounds (calls of :meth:`best`) between redraws.
    method : {"pls", "random"}, default="pls"
    n_components : int, default=20
        PLS latent components (the thesis: 20-30 suffice).
    max_samples : int or None, default=3000
        Rows for the PLS fit, drawn by importance resampling on the weights; None: all
        rows, weighted.
    random_state : int, Generator or None
    """

    def __init__(
        self,
        base="stump",
        size=500,
        refresh=25,
        method="pls",
        n_components=20,
        max_samples=3000,
        random_state=None,
    ) -> None:
        from maxmargin.weak import make_weak_learner

        if method not in ("pls", "random"):
            raise ValueError(f"method must be 'pls' or 'random', got {method!r}")
        for name, v in (("size", size), ("refresh", refresh), ("n_components", n_components)):
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if max_samples is not None and (int(max_samples) != max_samples or max_samples < 2):
            raise ValueError(f"max_samples must be an integer >= 2 or None, got {max_samples!r}")
        self.base = make_weak_learner(base)
        self.hypotheses_class = self.base.hypotheses_class
        self.size = int(size)
        self.refresh = int(refresh)
        self.method = method
        self.n_components = int(n_components)
        self.max_samples = None if max_samples is None else int(max_samples)
        self.random_state = random_state

    def prepare(self, Z):
        return _SubsetState(Z, np.random.default_rng(self.random_state))

    def importance(self, state: _SubsetState, A: np.ndarray) -> np.ndarray:
        """Feature importance ``|b|`` of the weighted PLS fit of the signs of ``A`` with
        weights ``|A|`` (summed over the columns of ``A``, each normalised)."""
        n, d = state.Zr.shape
        imp = np.zeros(d)
        for col in np.asarray(A, dtype=np.float64).T:
            om = np.abs(col)
            if om.sum() <= 0:
                continue
            y = np.sign(col)
            rows = None
            if self.max_samples is not None and n > self.max_samples:
                rows = state.rng.choice(n, size=self.max_samples, replace=True, p=om / om.sum())
            if rows is None:
                b = pls_coefficients(state.Zr, y, self.n_components, sample_weight=om)
            else:  # importance resampling: unweighted fit on the drawn rows ([Sun2012 eq. 3.48])
                b = pls_coefficients(state.Zr[rows], y[rows], self.n_components)
            tot = np.abs(b).sum()
            if tot > 0:
                imp += np.abs(b) / tot
        return imp

    def _draw(self, state: _SubsetState, A: np.ndarray) -> np.ndarray:
        d = state.Zr.shape[1]
        k = min(self.size, d)
        if k == d:
            return np.arange(d)
        p = None
        if self.method == "pls":
            imp = self.importance(state, A)
            nz = np.count_nonzero(imp)
            if nz >= k:
                p = imp / imp.sum()
            elif nz:  # fewer informative features than the subset: take them all, fill up
                chosen = np.flatnonzero(imp)
                rest = np.setdiff1d(np.arange(d), chosen)
                extra = state.rng.choice(rest, size=k - nz, replace=False)
                return np.sort(np.concatenate([chosen, extra]))
        return np.sort(state.rng.choice(d, size=k, replace=False, p=p))

    def best(self, prepared: _SubsetState, A: np.ndarray):
        A = np.asarray(A, dtype=np.float64)
        if A.ndim == 1:
            A = A[:, None]
        st = prepared
        if st.features is None or st.calls % self.refresh == 0:
            st.features = self._draw(st, A)
            st.history.append(st.features)
            st.prepared = self.base.prepare(st.Z[:, st.features])
        st.calls += 1
        h, gain = self.base.best(st.prepared, A)
        return _remap(h, st.features, st.Zr.shape[1]), gain


#: keys of an estimator's ``feature_subset`` dict (the FeatureSubset settings)
SUBSET_KEYS = ("size", "refresh", "method", "n_components", "max_samples", "random_state")


def feature_subset_search(base, spec) -> WeakLearner:
    """``base`` itself when ``spec`` is None, else ``FeatureSubset(base, **spec)``; ``spec``
    is an estimator's JSON-safe ``feature_subset`` dict (keys :data:`SUBSET_KEYS`)."""
    if spec is None:
        return base
    if not isinstance(spec, dict):
        raise ValueError(f"feature_subset must be None or a dict, got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(SUBSET_KEYS))
    if unknown:
        raise ValueError(f"feature_subset has unknown keys {unknown}; allowed: {SUBSET_KEYS}")
    return FeatureSubset(base=base, **spec)
