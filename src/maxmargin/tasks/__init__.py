"""Tasks: what is predicted (joint features, loss, oracles)."""

from maxmargin.tasks.base import Cut, DualPairs, LabelCodingTask, OracleResult, StructuredTask
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.classification import BinaryTask, MultiClassTask
from maxmargin.tasks.crf import CRFGraph, CRFTask
from maxmargin.tasks.hierarchy import HierarchyTask, LabelAugmentedTask, as_taxonomy
from maxmargin.tasks.linear import LinearJointModel, from_label_coding
from maxmargin.tasks.ranking import PairwiseRankingTask, RankingTask
from maxmargin.tasks.taxonomy import LOSS_KINDS, Taxonomy

__all__ = [
    "LOSS_KINDS",
    "BinaryTask",
    "CRFGraph",
    "CRFTask",
    "ChainTask",
    "Cut",
    "DualPairs",
    "HierarchyTask",
    "LabelAugmentedTask",
    "LabelCodingTask",
    "LinearJointModel",
    "MultiClassTask",
    "OracleResult",
    "PairwiseRankingTask",
    "RankingTask",
    "StructuredTask",
    "Taxonomy",
    "as_taxonomy",
    "from_label_coding",
]
