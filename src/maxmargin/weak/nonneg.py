"""Non-negative weak learners: ``(phi + 1) / 2`` of a weak learner with outputs in [-1, 1].

StructBoost's CRF learning (Shen et al., TPAMI 2014, Sec. 3.6) keeps every learned
energy submodular by using pairwise weak learners with non-negative outputs ([Shen2014 eq. 24] and
the text after it: "a discrete decision stump ... with outputs in {0, 1}").  This wrapper
turns any weak learner whose outputs lie in [-1, 1] (stumps, trees, real stumps,
perceptrons) into one with outputs in [0, 1].  Since
``sum_k a_k (phi(z_k) + 1) / 2 = (sum_k a_k phi(z_k) + sum_k a_k) / 2`` and the last
sum is the same for every candidate of one column, the wrapped learner's best
classifier is the base learner's best one, with gain ``(g + sum_k a_k) / 2``.
"""

from __future__ import annotations

import numpy as np

from maxmargin.weak.base import Hypotheses, WeakLearner

__all__ = ["NonNegative", "ShiftedHypotheses"]

#: base learners with outputs in [-1, 1] (the wrapper's precondition)
BOUNDED_BASES = ("stump", "hist_stump", "tree", "real_stump", "realboost_stump", "perceptron")


class ShiftedHypotheses(Hypotheses):
    """``(phi + 1) / 2`` of a batch of base hypotheses (subclassed per base class)."""

    base_class: type[Hypotheses]

    def __init__(self, inner: Hypotheses) -> None:
        self.inner = inner

    def __len__(self) -> int:
        return len(self.inner)

    def evaluate(self, Z) -> np.ndarray:
        return 0.5 * (self.inner.evaluate(Z) + 1.0)

    def take(self, index) -> ShiftedHypotheses:
        return type(self)(self.inner.take(index))

    def concat(self, other: ShiftedHypotheses) -> ShiftedHypotheses:
        return type(self)(self.inner.concat(other.inner))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return self.inner.to_arrays()

    @classmethod
    def from_arrays(cls, arrays):
        return cls(cls.base_class.from_arrays(arrays))

    @classmethod
    def empty(cls, n_features: int):
        return cls(cls.base_class.empty(n_features))


_SHIFTED: dict[type, type] = {}


def shifted_class(base_class: type[Hypotheses]) -> type[ShiftedHypotheses]:
    """The :class:`ShiftedHypotheses` subclass wrapping ``base_class`` (cached)."""
    if base_class not in _SHIFTED:
        _SHIFTED[base_class] = type(
            f"Shifted{base_class.__name__}", (ShiftedHypotheses,), {"base_class": base_class}
        )
    return _SHIFTED[base_class]


class NonNegative(WeakLearner):
    """Weak learner with outputs ``(phi + 1) / 2`` in [0, 1] (discrete stumps: {0, 1}).

    Parameters
    ----------
    base : str or WeakLearner, default="stump"
        A weak learner with outputs in [-1, 1] (one of :data:`BOUNDED_BASES`, or an
        instance of a stump, tree, real stump or perceptron learner).
    """

    def __init__(self, base="stump") -> None:
        self.base = base

    def _base(self) -> WeakLearner:
        from maxmargin.weak import make_weak_learner

        if isinstance(self.base, str) and self.base not in BOUNDED_BASES:
            raise ValueError(
                f"NonNegative needs a base learner with outputs in [-1, 1], one of "
                f"{BOUNDED_BASES}; got {self.base!r}"
            )
        return make_weak_learner(self.base)

    @property
    def hypotheses_class(self):
        return shifted_class(self._base().hypotheses_class)

    def prepare(self, Z):
        base = self._base()
        return base, base.prepare(Z)

    def best(self, prepared, A):
        base, inner = prepared
        cand, gains = base.best(inner, A)
        gains = 0.5 * (np.asarray(gains) + np.asarray(A).sum(axis=0))
        return shifted_class(type(cand))(cand), gains

    def __repr__(self) -> str:
        return f"NonNegative(base={self.base!r})"
