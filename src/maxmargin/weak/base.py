"""Weak-learner protocol: maximise ``sum_k a_k phi(z_k)`` for signed sample weights.

Every boosting learner in maxmargin reduces its pricing step ([Shen2014 eq. 11],
[Lin2012 eq. 4], ...) to this problem, batched over several weight vectors at once:
``A`` has one column per *slot* and the weak learner returns, for every column ``s``,
the classifier ``phi_s`` with the largest gain ``sum_k A[k, s] phi_s(z_k)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

__all__ = ["EDGE_CAP", "Hypotheses", "WeakLearner", "edge_weight"]

#: the largest edge a weak hypothesis is credited with: a perfect one (edge 1) would get an
#: infinite AdaBoost weight; the cap bounds it by 1/2 log((2 - 1e-12) / 1e-12) ~ 14.2
EDGE_CAP = 1.0 - 1e-12


def edge_weight(edge: float) -> float:
    """AdaBoost's weight ``1/2 log((1 + r) / (1 - r))`` of a {-1, +1} weak hypothesis of
    edge ``r = sum_i D_i y_i h(x_i)``, with ``r`` clipped to [-EDGE_CAP, EDGE_CAP]
    (Freund & Schapire, "A decision-theoretic generalization of on-line learning and an
    application to boosting", JCSS 55, 1997)."""
    r = float(np.clip(edge, -EDGE_CAP, EDGE_CAP))
    return 0.5 * np.log((1.0 + r) / (1.0 - r))


class Hypotheses(ABC):
    """A batch of fitted weak classifiers stored as parameter arrays.

    Arrays (not Python objects) keep evaluation vectorised and persistence pickle-free.
    """

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def evaluate(self, Z) -> np.ndarray:
        """Outputs of every classifier on every sample, shape (len(self), n)."""

    @abstractmethod
    def take(self, index) -> Hypotheses:
        """Sub-batch with the classifiers at ``index`` (in that order)."""

    @abstractmethod
    def concat(self, other: Hypotheses) -> Hypotheses:
        """This batch followed by ``other``."""

    @abstractmethod
    def to_arrays(self) -> dict[str, np.ndarray]:
        """Parameter arrays for persistence."""

    @classmethod
    @abstractmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Hypotheses:
        """Inverse of :meth:`to_arrays`."""

    @classmethod
    @abstractmethod
    def empty(cls, n_features: int) -> Hypotheses:
        """A batch with no classifiers."""


def check_loaded(
    name: str, n_features: int, features=None, finite=(), rows=None, thresholds=()
) -> None:
    """Validate arrays read from a model file before any kernel indexes with them.

    ``features`` (int array): every entry in ``[0, n_features)``; ``finite``: arrays that
    must hold finite numbers; ``thresholds``: arrays that may hold +-inf (a constant
    classifier's threshold) but no NaN; ``rows``: the number of classifiers every array must have
    along its first axis.  Raises ValueError naming the problem.
    """
    if n_features < 0:
        raise ValueError(f"{name}: negative n_features {n_features}")
    arrays = ([] if features is None else [features]) + list(finite) + list(thresholds)
    if rows is not None and any(a.shape[:1] != (rows,) for a in arrays):
        raise ValueError(f"{name}: arrays of different lengths")
    if features is not None:
        if features.dtype.kind not in "iu":
            raise ValueError(f"{name}: feature indices are not integers")
        if features.size and (features.min() < 0 or features.max() >= n_features):
            raise ValueError(f"{name}: feature index out of range [0, {n_features})")
    for a in finite:
        if a.dtype.kind not in "fiu" or not np.all(np.isfinite(a)):
            raise ValueError(f"{name}: non-finite or non-numeric parameters")
    for a in thresholds:
        if a.dtype.kind not in "fiu" or np.any(np.isnan(a)):
            raise ValueError(f"{name}: NaN or non-numeric thresholds")


class WeakLearner(ABC):
    """Finds, for each column of a signed-weight matrix, the weak classifier of largest gain."""

    #: the Hypotheses subclass this learner produces
    hypotheses_class: type[Hypotheses]
    #: whether :meth:`best` returns, per column of A, the largest gain of *every*
    #: classifier the learner can produce (exhaustive search: stumps).  The master then
    #: turns the largest gain into a certified lower bound on the whole problem.
    exact_search: bool = False

    @abstractmethod
    def prepare(self, Z):
        """Per-fit precomputation on the samples (e.g. presorted features)."""

    @abstractmethod
    def best(self, prepared, A: np.ndarray) -> tuple[Hypotheses, np.ndarray]:
        """Best classifier for each column of ``A`` (n, S) and its gain, shape (S,)."""
