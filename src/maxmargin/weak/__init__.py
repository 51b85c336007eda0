"""Weak learners: maximise sum_k a_k phi(z_k) over a class of simple classifiers."""

from maxmargin.weak.base import Hypotheses, WeakLearner
from maxmargin.weak.stump import DecisionStump, Stumps

WEAK_LEARNERS: dict[str, type[WeakLearner]] = {"stump": DecisionStump}
#: Hypotheses classes by name, for pickle-free model files
HYPOTHESES: dict[str, type[Hypotheses]] = {"Stumps": Stumps}


def make_weak_learner(spec) -> WeakLearner:
    """A weak learner from a name (``"stump"``) or an instance."""
    if isinstance(spec, WeakLearner):
        return spec
    if isinstance(spec, str) and spec in WEAK_LEARNERS:
        return WEAK_LEARNERS[spec]()
    raise ValueError(
        f"unknown weak_learner {spec!r}; choose one of {sorted(WEAK_LEARNERS)} or pass an instance"
    )


__all__ = ["HYPOTHESES", "WEAK_LEARNERS", "DecisionStump", "Hypotheses", "Stumps", "WeakLearner",
           "make_weak_learner"]
