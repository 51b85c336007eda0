"""maxmargin: large-margin structured output learning.

StructBoost (boosting for structured outputs), structured SVMs, class-wise multi-class
boosting and O(n log n) structured output ranking, with scikit-learn estimators and a
``maxmargin`` command-line tool.
"""

from importlib.metadata import PackageNotFoundError, version

from maxmargin import learners, metrics
from maxmargin.io import load, save
from maxmargin.learners import *  # noqa: F403  (every estimator: learners.__all__)
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
    *learners.__all__,
    "BinaryTask",
    "CRFGraph",
    "CRFTask",
    "ChainTask",
    "HierarchyTask",
    "MultiClassTask",
    "PairwiseRankingTask",
    "RankingTask",
    "Taxonomy",
    "__version__",
    "load",
    "metrics",
    "save",
]
