"""Warnings raised by maxmargin estimators."""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning

__all__ = ["ConvergenceWarning", "EmptyModelWarning"]


class EmptyModelWarning(UserWarning):
    """A fit ended with no weak learner / an all-zero model: it predicts a constant."""
