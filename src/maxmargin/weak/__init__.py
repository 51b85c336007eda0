"""Weak learners: maximise sum_k a_k phi(z_k) over a class of simple classifiers.

Names accepted by ``weak_learner=``: see :data:`WEAK_LEARNERS`, and
``"hist_tree:D"`` / ``"hist_tree:D:joint"`` for a :class:`HistogramTree` of depth ``D``
(1-6); any :class:`WeakLearner` instance (e.g. ``DecisionTree(max_depth=3)``) is
accepted as is.
"""

import re

from maxmargin.weak.base import Hypotheses, WeakLearner
from maxmargin.weak.hist_stump import CodedStump, HistogramStump
from maxmargin.weak.hist_tree import HistogramTree
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
    "hist_tree": HistogramTree,  # depth 3, one tree per slot, histogram subtraction
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


_HIST_TREE = re.compile(r"hist_tree:([1-6])(:joint)?")


def is_weak_learner_name(spec) -> bool:
    """Whether ``spec`` is a name :func:`make_weak_learner` accepts."""
    return isinstance(spec, str) and (
        spec in WEAK_LEARNERS or _HIST_TREE.fullmatch(spec) is not None
    )


def make_weak_learner(spec) -> WeakLearner:
    """A weak learner from a name (``"stump"``, ``"hist_stump"``, ``"hist_tree:4"``, ...)
    or an instance."""
    if isinstance(spec, WeakLearner):
        return spec
    if isinstance(spec, str) and spec in WEAK_LEARNERS:
        return WEAK_LEARNERS[spec]()
    m = _HIST_TREE.fullmatch(spec) if isinstance(spec, str) else None
    if m is not None:
        return HistogramTree(max_depth=int(m.group(1)), grow="joint" if m.group(2) else "per_slot")
    raise ValueError(
        f"unknown weak_learner {spec!r}; choose one of {sorted(WEAK_LEARNERS)}, "
        "'hist_tree:D' or 'hist_tree:D:joint' (D in 1-6), or pass an instance"
    )


__all__ = [
    "HYPOTHESES",
    "WEAK_LEARNERS",
    "CodedStump",
    "DecisionStump",
    "DecisionTree",
    "FeatureSubset",
    "HistogramStump",
    "HistogramTree",
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
    "is_weak_learner_name",
    "make_weak_learner",
    "pls_coefficients",
]
