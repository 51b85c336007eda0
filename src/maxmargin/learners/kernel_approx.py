"""Explicit feature maps and fast evaluation for additive kernels (seed 002, Sec. 5.2)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.kernel_approximation import AdditiveChi2Sampler
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import POSITIVE, POSITIVE_INT, Interval, Options, validate_params
from maxmargin.kernels import ADDITIVE_KERNELS, additive_kernel, spectrum
from maxmargin.learners._binary import SparseInput

__all__ = ["AdditiveKernelMap", "PiecewiseAdditiveScorer"]

#: default spectrum sampling step per kernel: scikit-learn's for chi2 (by steps), and a
#: period Lambda = 10 for the intersection kernel (the seed's Fig. 5.6)
_CHI2_INTERVAL = {1: 0.8, 2: 0.5, 3: 0.4}
_INTERSECTION_INTERVAL = 2 * np.pi / 10


@register
class AdditiveKernelMap(SparseInput, TransformerMixin, BaseEstimator):
    """Approximate explicit feature map of an additive homogeneous kernel (Vedaldi &
    Zisserman; [Sun2012 eq. 5.34]), so a linear model on the mapped features approximates
    the kernel machine.  Features must be non-negative.

    ``kernel="chi2"`` (``2xy/(x+y)``) delegates to scikit-learn's
    :class:`~sklearn.kernel_approximation.AdditiveChi2Sampler` (the same sampled sech
    spectrum); ``kernel="intersection"`` (``min(x, y)``) samples the spectrum
    ``2 / (pi (1 + 4 w^2))`` the same way, in the same output layout (all ``j = 0``
    columns, then cos / sin pairs for ``j = 1 .. sample_steps - 1``).  The error of every
    mapped inner product is bounded by :func:`maxmargin.kernels.feature_map_error_bound`.
    No window is applied to the signature (the seed's [Sun2012 eq. 5.33] option).

    Parameters
    ----------
    kernel : {"chi2", "intersection"}, default="chi2"
    sample_steps : int, default=2
        Frequencies ``j = 0 .. sample_steps - 1``: ``2 sample_steps - 1`` outputs per
        input feature.
    sample_interval : float or None
        Spectrum sampling step ``L`` (the signature's period is ``2 pi / L``).  None:
        scikit-learn's defaults for chi2 (needs ``sample_steps <= 3``), ``2 pi / 10`` for
        the intersection kernel.

    Attributes
    ----------
    sample_interval_ : float
    """

    _parameter_constraints = {
        "kernel": [Options(*ADDITIVE_KERNELS)],
        "sample_steps": [POSITIVE_INT],
        "sample_interval": [None, POSITIVE],
    }

    def __init__(self, *, kernel="chi2", sample_steps=2, sample_interval=None):
        self.kernel = kernel
        self.sample_steps = sample_steps
        self.sample_interval = sample_interval

    def fit(self, X, y=None):
        validate_params(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        if (X.data if sp.issparse(X) else X).min(initial=0.0) < 0:
            raise ValueError("Negative values in data passed to AdditiveKernelMap")
        L = self.sample_interval
        if L is None:
            if self.kernel == "chi2":
                if self.sample_steps not in _CHI2_INTERVAL:
                    raise ValueError("sample_interval must be given for chi2 with sample_steps > 3")
                L = _CHI2_INTERVAL[self.sample_steps]
            else:
                L = _INTERSECTION_INTERVAL
        self.sample_interval_ = float(L)
        return self

    def transform(self, X):
        check_is_fitted(self, "sample_interval_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        if (X.data if sp.issparse(X) else X).min(initial=0.0) < 0:
            raise ValueError("Negative values in data passed to AdditiveKernelMap")
        if self.kernel == "chi2":
            sampler = AdditiveChi2Sampler(
                sample_steps=int(self.sample_steps), sample_interval=self.sample_interval_
            )
            return sampler.fit_transform(X)
        sparse = sp.issparse(X)
        D = X.toarray() if sparse else X
        L = self.sample_interval_
        nz = D > 0
        logx = np.log(np.where(nz, D, 1.0))
        out = [np.sqrt(D * L * spectrum(0.0, "intersection"))]
        for j in range(1, int(self.sample_steps)):
            f = np.sqrt(2.0 * D * L * spectrum(j * L, "intersection"))
            out.append(np.where(nz, f * np.cos(j * L * logx), 0.0))
            out.append(np.where(nz, f * np.sin(j * L * logx), 0.0))
        Z = np.hstack(out)
        return sp.csr_matrix(Z) if sparse else Z

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self, "sample_interval_")
        names = [f"x{i}" for i in range(self.n_features_in_)]
        if input_features is not None:
            names = list(input_features)
        out = [f"{n}_j0" for n in names]
        for j in range(1, int(self.sample_steps)):
            out += [f"{n}_cos{j}" for n in names] + [f"{n}_sin{j}" for n in names]
        return np.asarray(out, dtype=object)

    def _get_state(self):
        check_is_fitted(self, "sample_interval_")
        meta = {
            "params": self.get_params(),
            "n_features_in": int(self.n_features_in_),
            "sample_interval": self.sample_interval_,
        }
        return meta, {}

    @classmethod
    def _from_state(cls, meta, arrays):
        est = cls(**meta["params"])
        est.n_features_in_ = int(meta["n_features_in"])
        est.sample_interval_ = float(meta["sample_interval"])
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.requires_fit = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


class PiecewiseAdditiveScorer:
    """Fast evaluation of an additive-kernel scoring function
    ``f(x) = b + sum_p sum_m c_m k(x_p, s_{m,p})`` (seed 002 Sec. 5.2.1; Maji, Berg &
    Malik, CVPR 2008).

    * ``method="exact"`` (intersection kernel only): per dimension, the support values
      sorted with prefix sums ``S_x = sum c_m s_m`` and ``S_c = sum c_m``, then
      ``f_p(x) = S_x[j] + (S_c[M] - S_c[j]) x`` with ``j`` found by binary search --
      ``O(N log M)`` per sample instead of ``O(N M)``;
    * ``method="linear"`` / ``"constant"`` (any additive kernel): ``n_bins`` equal-width
      bins over ``[lo_p, hi_p]`` (the support values' range, clipped outside) with the
      least-squares line ([Sun2012 eq. 5.24]) or constant per bin, fitted by 8-point Gauss-Legendre
      quadrature on every bin -- ``O(N)`` per sample.  Bins cover ``value_range`` (default:
      from 0 to the largest support value per dimension); values outside are clipped to
      it (exact for the intersection kernel above the largest support value, where
      ``f_p`` is constant).

    Build it with :meth:`from_support` or from a fitted binary
    :class:`~maxmargin.SVMClassifier` (``solver="smo"``, kernel ``"intersection"`` or
    ``"chi2"``) with :meth:`from_svm`; :meth:`decision_function` evaluates.
    """

    def __init__(
        self, support, coef, intercept, kernel, *, method="linear", n_bins=32, value_range=None
    ):
        if kernel not in ADDITIVE_KERNELS:
            raise ValueError(f"kernel must be one of {ADDITIVE_KERNELS}, got {kernel!r}")
        if method not in ("exact", "linear", "constant"):
            raise ValueError(f"method must be 'exact', 'linear' or 'constant', got {method!r}")
        if method == "exact" and kernel != "intersection":
            raise ValueError("method='exact' is for the intersection kernel")
        if not Interval(int, 1, None).accepts(n_bins):
            raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
        self.support = np.asarray(support, dtype=np.float64)
        self.coef = np.asarray(coef, dtype=np.float64).ravel()
        self.intercept = float(intercept)
        self.kernel = kernel
        self.method = method
        self.n_bins = int(n_bins)
        self.value_range = value_range
        if method == "exact":
            self._build_exact()
        else:
            self._build_bins()

    @classmethod
    def from_svm(cls, svm, **kwargs):
        if svm.kernel not in ADDITIVE_KERNELS or svm.dual_coef_.shape[0] != 1:
            raise ValueError("from_svm needs a binary SVMClassifier with an additive kernel")
        return cls(svm.support_vectors_, svm.dual_coef_[0], svm.intercept_[0], svm.kernel, **kwargs)

    def exact_scores(self, X):
        """The scoring function evaluated directly, ``O(N M)`` per sample."""
        return additive_kernel(X, self.support, self.kernel) @ self.coef + self.intercept

    # -- exact piecewise linear (intersection) -----------------------------------------
    def _build_exact(self):
        S = self.support
        order = np.argsort(S, axis=0, kind="stable")
        self._sorted = np.take_along_axis(S, order, axis=0)  # (M, N)
        c = self.coef[order]  # (M, N)
        zero = np.zeros((1, S.shape[1]))
        self._Sx = np.vstack([zero, np.cumsum(c * self._sorted, axis=0)])
        self._Sc = np.vstack([zero, np.cumsum(c, axis=0)])

    def _exact(self, X):
        n, N = X.shape
        out = np.full(n, self.intercept)
        total = self._Sc[-1]
        for p in range(N):  # vectorised over samples, one dimension at a time
            j = np.searchsorted(self._sorted[:, p], X[:, p], side="right")
            out += self._Sx[j, p] + (total[p] - self._Sc[j, p]) * X[:, p]
        return out

    # -- binned approximation ----------------------------------------------------------
    def _f1d(self, p, x):
        """``sum_m c_m k(x, s_{m,p})`` for an array x (one dimension)."""
        s = self.support[:, p][None, :]
        x = x[:, None]
        if self.kernel == "intersection":
            K = np.minimum(x, s)
        else:
            den = x + s
            K = np.where(den > 0, 2 * x * s / np.where(den > 0, den, 1.0), 0.0)
        return K @ self.coef

    def _build_bins(self):
        N = self.support.shape[1]
        B = self.n_bins
        if self.value_range is None:
            self._lo = np.minimum(0.0, self.support.min(axis=0))
            hi = self.support.max(axis=0)
        else:
            self._lo = np.full(N, float(self.value_range[0]))
            hi = np.full(N, float(self.value_range[1]))
        self._width = np.where(hi > self._lo, (hi - self._lo) / B, 1.0)
        nodes, weights = np.polynomial.legendre.leggauss(8)
        self._a = np.zeros((N, B))
        self._b = np.zeros((N, B))
        for p in range(N):
            left = self._lo[p] + self._width[p] * np.arange(B)
            # quadrature points of every bin at once: (B, 8)
            x = left[:, None] + 0.5 * self._width[p] * (nodes[None, :] + 1.0)
            fx = self._f1d(p, x.ravel()).reshape(B, 8)
            if self.method == "constant":
                self._b[p] = (fx * weights).sum(1) / weights.sum()
                continue
            # weighted least squares of f on (x, 1) per bin, centred at the bin midpoint
            mid = left + 0.5 * self._width[p]
            u = x - mid[:, None]
            Su2 = (weights * u * u).sum(1)
            slope = (weights * u * fx).sum(1) / np.where(Su2 > 0, Su2, 1.0)
            mean = (weights * fx).sum(1) / weights.sum()
            self._a[p] = slope
            self._b[p] = mean - slope * mid

    def _binned(self, X):
        n, N = X.shape
        out = np.full(n, self.intercept)
        B = self.n_bins
        for p in range(N):
            x = np.clip(X[:, p], self._lo[p], self._lo[p] + B * self._width[p])
            k = np.minimum(((x - self._lo[p]) / self._width[p]).astype(np.int64), B - 1)
            out += self._a[p, k] * x + self._b[p, k]
        return out

    def decision_function(self, X):
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.support.shape[1]:
            raise ValueError(f"X must have {self.support.shape[1]} features")
        return self._exact(X) if self.method == "exact" else self._binned(X)
