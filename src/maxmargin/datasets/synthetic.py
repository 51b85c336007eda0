"""The synthetic 2-D Gaussian mixture of seed 002, Sec. 5.3.3 (MKMIS features)."""

from __future__ import annotations

import numpy as np

from maxmargin._validation import as_generator

__all__ = ["make_gaussian_mixture_toy"]

#: (mean, standard deviation) of the isotropic components, equal weights per class
POSITIVE = (((3.0, -3.0), 1.0), ((-3.0, 3.0), 1.0), ((1.0, 1.0), 0.5), ((-1.0, -1.0), 0.5))
NEGATIVE = (((2.0, 2.0), 2.0), ((-2.0, -2.0), 2.0))


def make_gaussian_mixture_toy(n_per_class=160, random_state=None):
    """``n_per_class`` points of each class (the seed uses 160 for training, 800 for
    testing): positives from four equally weighted components (means (3, -3), (-3, 3) with
    sigma 1; (1, 1), (-1, -1) with sigma 0.5), negatives from two ((2, 2), (-2, -2), sigma
    2).  Components are drawn uniformly per point.  Returns ``X (2n, 2)``, ``y`` in {0, 1}
    (1: positive), positives first."""
    rng = as_generator(random_state)

    def draw(components):
        k = rng.integers(0, len(components), n_per_class)
        means = np.array([c[0] for c in components])[k]
        sig = np.array([c[1] for c in components])[k]
        return means + sig[:, None] * rng.standard_normal((n_per_class, 2))

    X = np.vstack([draw(POSITIVE), draw(NEGATIVE)])
    y = np.r_[np.ones(n_per_class, dtype=int), np.zeros(n_per_class, dtype=int)]
    return X, y
