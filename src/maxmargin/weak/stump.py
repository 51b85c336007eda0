"""Exact decision stumps: the classic weak learner of LPBoost and StructBoost (Sec. 4.2).

A stump is ``phi(x) = p * (+1 if x[f] > t else -1)`` with polarity ``p`` in {-1, +1}.
Thresholds lie half-way between consecutive distinct values of a feature; a threshold of
``-inf`` gives the constant classifier ``phi = p`` (the class bias of a multi-class model).
For signed weights ``a`` the gain of threshold position k on sorted feature values is
``p * (sum(a) - 2 * sum_{j <= k} a_j)``, so one pass over the presorted feature finds the
best stump for every weight column at once.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from maxmargin.weak.base import Hypotheses, WeakLearner

__all__ = ["DecisionStump", "Stumps"]


class Stumps(Hypotheses):
    """Batch of decision stumps (feature, threshold, polarity)."""

    def __init__(self, feature, threshold, polarity, n_features: int) -> None:
        self.feature = np.asarray(feature, dtype=np.int64)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.polarity = np.asarray(polarity, dtype=np.float64)
        self.n_features = int(n_features)

    def __len__(self) -> int:
        return len(self.feature)

    def evaluate(self, Z) -> np.ndarray:
        Z = np.asarray(Z)
        if len(self) == 0:
            return np.zeros((0, Z.shape[0]))
        above = Z[:, self.feature] > self.threshold  # (n, h)
        return (np.where(above, 1.0, -1.0) * self.polarity).T

    def take(self, index) -> Stumps:
        return Stumps(self.feature[index], self.threshold[index], self.polarity[index],
                      self.n_features)

    def concat(self, other: Hypotheses) -> Stumps:
        if not isinstance(other, Stumps):
            raise TypeError("can only concatenate Stumps with Stumps")
        return Stumps(np.concatenate([self.feature, other.feature]),
                      np.concatenate([self.threshold, other.threshold]),
                      np.concatenate([self.polarity, other.polarity]), self.n_features)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"feature": self.feature, "threshold": self.threshold,
                "polarity": self.polarity, "n_features": np.array(self.n_features)}

    @classmethod
    def from_arrays(cls, arrays) -> Stumps:
        return cls(arrays["feature"], arrays["threshold"], arrays["polarity"],
                   int(arrays["n_features"]))

    @classmethod
    def empty(cls, n_features: int) -> Stumps:
        return cls(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), n_features)


@njit(parallel=True, cache=True)
def _scan_features(values, order, A, total):  # pragma: no cover - compiled
    """Best split per (feature, column): gain, split position (-1 = constant), polarity."""
    d, m = values.shape
    S = A.shape[1]
    gain = np.empty((d, S))
    split = np.empty((d, S), dtype=np.int64)
    pol = np.empty((d, S))
    for f in prange(d):
        cum = np.zeros(S)
        for s in range(S):
            split[f, s] = -1
            if total[s] >= 0.0:
                gain[f, s] = total[s]
                pol[f, s] = 1.0
            else:
                gain[f, s] = -total[s]
                pol[f, s] = -1.0
        for k in range(m - 1):
            row = order[f, k]
            for s in range(S):
                cum[s] += A[row, s]
            if values[f, k] < values[f, k + 1]:
                for s in range(S):
                    g = total[s] - 2.0 * cum[s]
                    if g > gain[f, s]:
                        gain[f, s] = g
                        split[f, s] = k
                        pol[f, s] = 1.0
                    elif -g > gain[f, s]:
                        gain[f, s] = -g
                        split[f, s] = k
                        pol[f, s] = -1.0
    return gain, split, pol


def _midpoint(lo: float, hi: float) -> float:
    """Threshold strictly separating lo < hi under the rule ``x > t``."""
    t = lo + (hi - lo) / 2.0
    return lo if t >= hi else t


class DecisionStump(WeakLearner):
    """Exact decision-stump search over every feature, threshold and polarity (numba).

    Features are sorted once per fit (:meth:`prepare`); each call to :meth:`best` is one
    parallel pass over the sorted features for all weight columns together.
    """

    hypotheses_class = Stumps

    def prepare(self, Z):
        Z = np.asarray(Z, dtype=np.float64)
        order = np.argsort(Z, axis=0, kind="stable").T.copy()  # (d, m)
        values = np.take_along_axis(Z, order.T, axis=0).T.copy()
        return {"order": order, "values": values, "n_features": Z.shape[1]}

    def best(self, prepared, A):
        A = np.ascontiguousarray(A, dtype=np.float64)
        values, order = prepared["values"], prepared["order"]
        total = A.sum(axis=0)
        gain, split, pol = _scan_features(values, order, A, total)
        f = np.argmax(gain, axis=0)  # first feature with the best gain, per column
        cols = np.arange(A.shape[1])
        k = split[f, cols]
        thr = np.full(len(cols), -np.inf)
        for s in np.flatnonzero(k >= 0):  # at most S scalar look-ups
            thr[s] = _midpoint(values[f[s], k[s]], values[f[s], k[s] + 1])
        return Stumps(f, thr, pol[f, cols], prepared["n_features"]), gain[f, cols]
