"""User-facing estimators (scikit-learn API)."""

from maxmargin.learners.adaboost import AdaBoostECC, AdaBoostMH, AdaBoostMO
from maxmargin.learners.binary_adaboost import BinaryAdaBoost
from maxmargin.learners.cascade import BoostedCascade
from maxmargin.learners.feature_selection import ForwardFeatureSelector
from maxmargin.learners.kernel_approx import AdditiveKernelMap, PiecewiseAdditiveScorer
from maxmargin.learners.kernel_ssvm import KernelSSVM
from maxmargin.learners.latent_ssvm import LatentSSVM
from maxmargin.learners.multiboost import MultiBoost, MultiBoostCW
from maxmargin.learners.ranksvm import RankSVM
from maxmargin.learners.similarity import SimilarityFeatures
from maxmargin.learners.sparse_kernel_svm import SparseKernelSVM
from maxmargin.learners.ssvm import SSVMClassifier, StructSVM
from maxmargin.learners.structboost import StructBoost, StructBoostClassifier
from maxmargin.learners.structboost_ranker import StructBoostRanker
from maxmargin.learners.svm import SVMClassifier
from maxmargin.learners.tcboost import TCBoostClassifier

__all__ = [
    "AdaBoostECC",
    "AdaBoostMH",
    "AdaBoostMO",
    "AdditiveKernelMap",
    "BinaryAdaBoost",
    "BoostedCascade",
    "ForwardFeatureSelector",
    "KernelSSVM",
    "LatentSSVM",
    "MultiBoost",
    "MultiBoostCW",
    "PiecewiseAdditiveScorer",
    "RankSVM",
    "SSVMClassifier",
    "SVMClassifier",
    "SimilarityFeatures",
    "SparseKernelSVM",
    "StructBoost",
    "StructBoostClassifier",
    "StructBoostRanker",
    "StructSVM",
    "TCBoostClassifier",
]
