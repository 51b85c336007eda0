"""Weak-learner protocol: maximise ``sum_k a_k phi(z_k)`` for signed sample weights.

Every boosting learner in maxmargin reduces its pricing step (StructBoost eq. 11,
MultiBoost-cw eq. 4, ...) to this problem, batched over several weight vectors at once:
``A`` has one column per *slot* and the weak learner returns, for every column ``s``,
the classifier ``phi_s`` with the largest gain ``sum_k A[k, s] phi_s(z_k)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

__all__ = ["Hypotheses", "WeakLearner"]


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


class WeakLearner(ABC):
    """Finds, for each column of a signed-weight matrix, the weak classifier of largest gain."""

    #: the Hypotheses subclass this learner produces
    hypotheses_class: type[Hypotheses]

    @abstractmethod
    def prepare(self, Z):
        """Per-fit precomputation on the samples (e.g. presorted features)."""

    @abstractmethod
    def best(self, prepared, A: np.ndarray) -> tuple[Hypotheses, np.ndarray]:
        """Best classifier for each column of ``A`` (n, S) and its gain, shape (S,)."""
