"""Tasks: what is predicted (joint features, loss, oracles)."""

from maxmargin.tasks.base import DualPairs, LabelCodingTask, OracleResult, StructuredTask
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.classification import BinaryTask, MultiClassTask
from maxmargin.tasks.hierarchy import HierarchyTask, LabelAugmentedTask, as_taxonomy
from maxmargin.tasks.linear import LinearJointModel, from_label_coding
from maxmargin.tasks.taxonomy import LOSS_KINDS, Taxonomy

__all__ = [
    "LOSS_KINDS",
    "BinaryTask",
    "ChainTask",
    "DualPairs",
    "HierarchyTask",
    "LabelAugmentedTask",
    "LabelCodingTask",
    "LinearJointModel",
    "MultiClassTask",
    "OracleResult",
    "StructuredTask",
    "Taxonomy",
    "as_taxonomy",
    "from_label_coding",
]
