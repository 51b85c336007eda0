"""Weak learners: maximise sum_k a_k phi(z_k) over a class of simple classifiers.

Names accepted by ``weak_learner=``: see :data:`WEAK_LEARNERS`; any
:class:`WeakLearner` instance (e.g. ``DecisionTree(max_depth=3)``) is accepted as is.
"""

from maxmargin.weak.base import Hypotheses, WeakLearner
from maxmargin.weak.hist_stump import CodedStump, HistogramStump
from maxmargin.weak.linear import LinearClassifiers
from maxmargin.weak.linear_svm import LinearSVMWeak
from maxmargin.weak.nonneg import NonNegative, shifted_class
from maxmargin.weak.perceptron import SigmoidPerceptron
from maxmargin.weak.real_stump import RealAdaBoostStump, RealStump, RealStumps
from maxmargin.weak.stump import DecisionStump, Stumps
from maxmargin.weak.subset import FeatureSubset, pls_coefficients
from maxmargin.weak.tree import DecisionTree, Trees

#: weak learners by name (constructed with default parameters)
WEAK_LEARNERS: dict[str, type[WeakLearner]] = {
    "stump": DecisionStump,  # exact stump
    "hist_stump": HistogramStump,  # <= 255 bins per feature
    "tree": DecisionTree,  # depth 2, leaves in {-1, +1}, 255 bins
    "real_stump": RealStump,  # Gentle AdaBoost outputs in [-1, 1]
    "realboost_stump": RealAdaBoostStump,  # Real AdaBoost log-odds scaled to [-1, 1]
    "perceptron": SigmoidPerceptron,  # tanh(v.x + b) by L-BFGS from the best stump
    "linear_svm": LinearSVMWeak,  # StructBoost Sec. 4.3
}
#: Hypotheses classes by name, for pickle-free model files
HYPOTHESES: dict[str, type[Hypotheses]] = {
    "Stumps": Stumps,
    "RealStumps": RealStumps,
    "Trees": Trees,
    "LinearClassifiers": LinearClassifiers,
    # outputs (phi + 1) / 2 of NonNegative weak learners (CRF pairwise potentials)
    "ShiftedStumps": shifted_class(Stumps),
    "ShiftedRealStumps": shifted_class(RealStumps),
    "ShiftedTrees": shifted_class(Trees),
}


def make_weak_learner(spec) -> WeakLearner:
    """A weak learner from a name (``"stump"``, ``"hist_stump"``, ...) or an instance."""
    if isinstance(spec, WeakLearner):
        return spec
    if isinstance(spec, str) and spec in WEAK_LEARNERS:
        return WEAK_LEARNERS[spec]()
    raise ValueError(
        f"unknown weak_learner {spec!r}; choose one of {sorted(WEAK_LEARNERS)} or pass an instance"
    )


__all__ = [
    "HYPOTHESES",
    "WEAK_LEARNERS",
    "CodedStump",
    "DecisionStump",
    "DecisionTree",
    "FeatureSubset",
    "HistogramStump",
    "Hypotheses",
    "LinearClassifiers",
    "LinearSVMWeak",
    "NonNegative",
    "RealAdaBoostStump",
    "RealStump",
    "RealStumps",
    "SigmoidPerceptron",
    "Stumps",
    "Trees",
    "WeakLearner",
    "make_weak_learner",
    "pls_coefficients",
]
