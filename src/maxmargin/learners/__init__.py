"""User-facing estimators (scikit-learn API)."""

from maxmargin.learners.ranksvm import RankSVM
from maxmargin.learners.structboost import StructBoost, StructBoostClassifier

__all__ = ["RankSVM", "StructBoost", "StructBoostClassifier"]
