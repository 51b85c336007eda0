"""Warnings and errors raised by maxmargin estimators."""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "ConvergenceWarning",
    "EmptyModelWarning",
    "FitInterruptedWarning",
    "ParallelFitError",
    "warn_interrupted",
    "warn_unconverged",
]


class EmptyModelWarning(UserWarning):
    """A fit ended with no weak learner / an all-zero model: it predicts a constant."""


class FitInterruptedWarning(ConvergenceWarning):
    """Ctrl-C (KeyboardInterrupt) stopped a fit: the estimator holds the model of the
    last completed iteration (``converged_`` is False)."""


def warn_interrupted(n_iter: int, stacklevel: int = 3, kept: str | None = None) -> None:
    """Warn that a fit was interrupted and kept the model of iteration ``n_iter`` (or
    what ``kept`` describes, e.g. "the cascade of the 3 stage(s) completed before it")."""
    import warnings

    kept = kept or f"the one of the last completed iteration ({n_iter})"
    warnings.warn(
        f"fit interrupted (KeyboardInterrupt): the model is {kept}; it has not converged",
        FitInterruptedWarning,
        stacklevel=stacklevel,
    )


def warn_unconverged(name: str, res, stacklevel: int = 3) -> None:
    """ConvergenceWarning for a solver result that stopped on max_iter / max_time before
    its relative duality gap reached ``tol``."""
    import warnings

    history = getattr(res, "history", None) or []
    gap = history[-1].get("gap", float("nan")) if history else float("nan")
    warnings.warn(
        f"{name} stopped after {len(history)} iterations (max_iter or max_time) with a "
        f"relative duality gap of {gap:.3g}, above tol: raise max_iter, or loosen tol",
        ConvergenceWarning,
        stacklevel=stacklevel,
    )


class ParallelFitError(RuntimeError):
    """A worker of a parallel fit (``n_jobs``) died or was lost mid-fit.

    The fit is aborted: the estimator keeps no partial model (its fitted attributes are
    those of a previous successful fit, or absent)."""
