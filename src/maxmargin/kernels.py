"""Additive homogeneous kernels, their spectra and the error bounds of their sampled
feature maps (seed 002, Sec. 5.2.1-5.2.2, Table 5.1).

For non-negative features the additive kernels are ``k(x, y) = sum_p k(x_p, y_p)`` with

* intersection: ``k(x, y) = min(x, y)``, signature ``K(l) = exp(-|l| / 2)``, spectrum
  ``kappa(w) = 2 / (pi (1 + 4 w^2))``;
* chi-squared: ``k(x, y) = 2 x y / (x + y)`` (0 at x = y = 0), signature
  ``K(l) = sech(l / 2)``, spectrum ``kappa(w) = sech(pi w)``.

(The seed's [Sun2012 eq. 5.20] writes the chi-squared kernel as ``x y / (x + y)``; Table 5.1 and
the signature ``sech(l/2)`` need the factor 2, which is also scikit-learn's
``AdditiveChi2Sampler`` convention.)  Both are 1-homogeneous: ``k(x, y) = sqrt(x y)
K(log(y / x))``.

The feature map of Vedaldi & Zisserman samples the spectrum at ``j L`` (``L`` the
sampling step, period ``Lambda = 2 pi / L`` of the signature) and keeps ``|j| <= J``::

    phi_0(x) = sqrt(x L kappa(0)),
    phi_{2j-1}(x), phi_{2j}(x) = sqrt(2 x L kappa(j L)) (cos, sin)(j L log x),  j = 1..J,

so that ``<phi(x), phi(y)> = sqrt(x y) K_J(log(y / x))`` with
``K_J(l) = sum_{|j| <= J} L kappa(j L) exp(i j L l)``.  By Poisson summation the
untruncated sum is the periodised signature ``sum_k K(l + k Lambda)``, hence for
``|l| <= Lambda / 2``::

    |K_J(l) - K(l)| <= sum_{k != 0} K(l + k Lambda) + sum_{|j| > J} L kappa(j L)
                     <= A(l) + T,

* intersection: ``A = 2 cosh(l/2) q / (1 - q)``, ``q = exp(-Lambda / 2)``;
  ``T = (2 / pi) (pi / 2 - arctan(2 J L))`` (the tail sum bounded by its integral);
* chi-squared: ``sech(u) <= 2 exp(-|u|)`` gives ``A = 4 cosh(l/2) q / (1 - q)``;
  ``T = (4 / pi) exp(-pi L J)``.

:func:`feature_map_error_bound` returns ``sqrt(x y) (A + T)``, the bound on
``|<phi(x), phi(y)> - k(x, y)|`` for one dimension.

References
----------
A. Vedaldi, A. Zisserman, "Efficient additive kernels via explicit feature maps", IEEE
TPAMI 34 (2012).  S. Maji, A. C. Berg, J. Malik, "Classification using intersection kernel
support vector machines is efficient", CVPR 2008.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = [
    "ADDITIVE_KERNELS",
    "additive_kernel",
    "feature_map_error_bound",
    "signature",
    "spectrum",
]

ADDITIVE_KERNELS = ("intersection", "chi2")


def _dense(X):
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    if np.any(X < 0):
        raise ValueError("additive homogeneous kernels need non-negative features")
    return X


def additive_kernel(X, Y, kernel: str, *, chunk: int = 64) -> np.ndarray:
    """Gram matrix ``sum_p k(x_p, y_p)`` between the rows of X and Y (features in chunks,
    so memory is ``O(n m chunk)``)."""
    X, Y = _dense(X), _dense(Y)
    K = np.zeros((X.shape[0], Y.shape[0]))
    for s in range(0, X.shape[1], chunk):
        a = X[:, None, s : s + chunk]
        b = Y[None, :, s : s + chunk]
        if kernel == "intersection":
            K += np.minimum(a, b).sum(axis=2)
        else:
            den = a + b
            with np.errstate(invalid="ignore", divide="ignore"):
                K += np.where(den > 0, 2.0 * a * b / np.where(den > 0, den, 1.0), 0.0).sum(axis=2)
    return K


def signature(lam, kernel: str):
    lam = np.asarray(lam, dtype=np.float64)
    if kernel == "intersection":
        return np.exp(-np.abs(lam) / 2)
    return 1.0 / np.cosh(lam / 2)


def spectrum(omega, kernel: str):
    omega = np.asarray(omega, dtype=np.float64)
    if kernel == "intersection":
        return 2.0 / (np.pi * (1.0 + 4.0 * omega**2))
    return 1.0 / np.cosh(np.pi * omega)


def feature_map_error_bound(x, y, kernel: str, n_steps: int, sample_interval: float):
    """Bound on ``|<phi(x), phi(y)> - k(x, y)|`` (one dimension, ``x, y > 0``) for the map
    with frequencies ``j = 0 .. n_steps - 1`` at spacing ``sample_interval``; valid where
    ``|log(y / x)| <= pi / sample_interval`` (half the period), +inf elsewhere."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    L = float(sample_interval)
    J = int(n_steps) - 1
    period = 2.0 * np.pi / L
    lam = np.log(y / x)
    q = np.exp(-period / 2)
    alias = (2.0 if kernel == "intersection" else 4.0) * np.cosh(lam / 2) * q / (1 - q)
    if kernel == "intersection":
        tail = (2.0 / np.pi) * (np.pi / 2 - np.arctan(2.0 * J * L))
    else:
        tail = (4.0 / np.pi) * np.exp(-np.pi * L * J)
    bound = np.sqrt(x * y) * (alias + tail)
    return np.where(np.abs(lam) <= period / 2, bound, np.inf)
