"""Warnings raised by maxmargin estimators."""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning

__all__ = ["ConvergenceWarning", "EmptyModelWarning", "FitInterruptedWarning", "warn_interrupted"]


class EmptyModelWarning(UserWarning):
    """A fit ended with no weak learner / an all-zero model: it predicts a constant."""


class FitInterruptedWarning(ConvergenceWarning):
    """Ctrl-C (KeyboardInterrupt) stopped a fit: the estimator holds the model of the
    last completed iteration (``converged_`` is False)."""


def warn_interrupted(n_iter: int, stacklevel: int = 3) -> None:
    """Warn that a fit was interrupted and kept the model of iteration ``n_iter``."""
    import warnings

    warnings.warn(
        f"fit interrupted (KeyboardInterrupt): the model is the one of the last completed "
        f"iteration ({n_iter}); it has not converged",
        FitInterruptedWarning,
        stacklevel=stacklevel,
    )
