"""Tasks: what is predicted (joint features, loss, oracles)."""

from maxmargin.tasks.base import DualPairs, LabelCodingTask, OracleResult, StructuredTask
from maxmargin.tasks.classification import BinaryTask, MultiClassTask
from maxmargin.tasks.taxonomy import LOSS_KINDS, Taxonomy

__all__ = [
    "LOSS_KINDS",
    "BinaryTask",
    "DualPairs",
    "LabelCodingTask",
    "MultiClassTask",
    "OracleResult",
    "StructuredTask",
    "Taxonomy",
]
