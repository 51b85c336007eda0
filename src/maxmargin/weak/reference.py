"""Plain reference implementations used by the tests as independent answers."""

from __future__ import annotations

import itertools

import numpy as np

from maxmargin.weak.stump import Stumps

__all__ = ["all_stumps", "reference_best_stumps"]


def all_stumps(X) -> Stumps:
    """Every distinct stump on X: constants and one threshold per gap, both polarities."""
    X = np.asarray(X, dtype=np.float64)
    feats, thrs = [0], [-np.inf]
    for f in range(X.shape[1]):
        u = np.unique(X[:, f])
        for lo, hi in itertools.pairwise(u):
            t = lo + (hi - lo) / 2.0
            feats.append(f)
            thrs.append(lo if t >= hi else t)
    feats = np.repeat(feats, 2)
    thrs = np.repeat(thrs, 2)
    pols = np.tile([1.0, -1.0], len(feats) // 2)
    return Stumps(feats, thrs, pols, X.shape[1])


def reference_best_stumps(X, A) -> tuple[Stumps, np.ndarray]:
    """Brute force: evaluate every stump and keep the best per column of A."""
    stumps = all_stumps(X)
    gains = stumps.evaluate(X) @ np.asarray(A, dtype=np.float64)  # (h, S)
    best = np.argmax(gains, axis=0)
    return stumps.take(best), gains[best, np.arange(gains.shape[1])]
