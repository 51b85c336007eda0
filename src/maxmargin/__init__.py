"""maxmargin: large-margin structured output learning.

StructBoost (boosting for structured outputs), structured SVMs, class-wise multi-class
boosting and O(n log n) structured output ranking, with scikit-learn estimators and a
``maxmargin`` command-line tool.
"""

from importlib.metadata import PackageNotFoundError, version

from maxmargin import metrics
from maxmargin.io import load, save
from maxmargin.learners import (
    AdaBoostECC,
    AdaBoostMH,
    AdaBoostMO,
    AdditiveKernelMap,
    BinaryAdaBoost,
    BoostedCascade,
    ForwardFeatureSelector,
    KernelSSVM,
    LatentSSVM,
    MultiBoost,
    MultiBoostCW,
    PiecewiseAdditiveScorer,
    RankSVM,
    SimilarityFeatures,
    SparseKernelSVM,
    SSVMClassifier,
    StructBoost,
    StructBoostClassifier,
    StructBoostRanker,
    StructSVM,
    SVMClassifier,
    TCBoostClassifier,
)
from maxmargin.tasks import (
    BinaryTask,
    ChainTask,
    CRFGraph,
    CRFTask,
    HierarchyTask,
    MultiClassTask,
    PairwiseRankingTask,
    RankingTask,
    Taxonomy,
)

try:
    __version__ = version("maxmargin")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "AdaBoostECC",
    "AdaBoostMH",
    "AdaBoostMO",
    "AdditiveKernelMap",
    "BinaryAdaBoost",
    "BinaryTask",
    "BoostedCascade",
    "CRFGraph",
    "CRFTask",
    "ChainTask",
    "ForwardFeatureSelector",
    "HierarchyTask",
    "KernelSSVM",
    "LatentSSVM",
    "MultiBoost",
    "MultiBoostCW",
    "MultiClassTask",
    "PairwiseRankingTask",
    "PiecewiseAdditiveScorer",
    "RankSVM",
    "RankingTask",
    "SSVMClassifier",
    "SVMClassifier",
    "SimilarityFeatures",
    "SparseKernelSVM",
    "StructBoost",
    "StructBoostClassifier",
    "StructBoostRanker",
    "StructSVM",
    "TCBoostClassifier",
    "Taxonomy",
    "__version__",
    "load",
    "metrics",
    "save",
]
