"""Linear weak classifiers ``phi(x) = act(v.x + b)`` shared by the perceptron and SVM learners.

``act`` is ``tanh`` (the smooth sigmoid perceptron, StructBoost Sec. 4.2) or ``sign``
([Shen2014 eq. 31] and the linear-SVM weak learner of Sec. 4.3), chosen per classifier; ``sign``
maps ``v.x + b > 0`` to +1 and everything else to -1, like a stump's ``x > t``.
Evaluation is one matrix product ``Z @ V.T`` and works for scipy.sparse Z as is.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from maxmargin.weak.base import Hypotheses, check_loaded

__all__ = ["ACT_SIGN", "ACT_TANH", "LinearClassifiers"]

ACT_SIGN, ACT_TANH = 0, 1
_ACTIVATIONS = (ACT_SIGN, ACT_TANH)


class LinearClassifiers(Hypotheses):
    """Batch of linear classifiers: weights (T, d), bias (T,), activation (T,) codes."""

    def __init__(self, weights, bias, activation, n_features: int) -> None:
        self.n_features = int(n_features)
        self.weights = np.asarray(weights, dtype=np.float64).reshape(-1, self.n_features)
        self.bias = np.asarray(bias, dtype=np.float64).reshape(-1)
        self.activation = np.asarray(activation, dtype=np.int64).reshape(-1)

    def __len__(self) -> int:
        return len(self.bias)

    def evaluate(self, Z) -> np.ndarray:
        if len(self) == 0:
            return np.zeros((0, Z.shape[0]))
        if not sp.issparse(Z):
            Z = np.asarray(Z, dtype=np.float64)
        act = np.asarray(Z @ self.weights.T).T + self.bias[:, None]  # (T, n)
        hard = self.activation == ACT_SIGN
        out = np.tanh(act)
        out[hard] = np.where(act[hard] > 0, 1.0, -1.0)
        return out

    def take(self, index) -> LinearClassifiers:
        return LinearClassifiers(
            self.weights[index], self.bias[index], self.activation[index], self.n_features
        )

    def concat(self, other: Hypotheses) -> LinearClassifiers:
        if not isinstance(other, LinearClassifiers):
            raise TypeError("can only concatenate LinearClassifiers with LinearClassifiers")
        return LinearClassifiers(
            np.vstack([self.weights, other.weights]),
            np.concatenate([self.bias, other.bias]),
            np.concatenate([self.activation, other.activation]),
            self.n_features,
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "weights": self.weights,
            "bias": self.bias,
            "activation": self.activation,
            "n_features": np.array(self.n_features),
        }

    @classmethod
    def from_arrays(cls, arrays) -> LinearClassifiers:
        out = cls(
            arrays["weights"], arrays["bias"], arrays["activation"], int(arrays["n_features"])
        )
        T = len(out.bias)
        check_loaded("linear classifiers", out.n_features, finite=(out.weights, out.bias), rows=T)
        if out.weights.shape != (T, out.n_features) or out.activation.shape != (T,):
            raise ValueError("linear classifiers: weights do not match n_features")
        if not np.all(np.isin(out.activation, list(_ACTIVATIONS))):
            raise ValueError("linear classifiers: unknown activation code")
        return out

    @classmethod
    def empty(cls, n_features: int) -> LinearClassifiers:
        return cls(np.zeros((0, n_features)), np.zeros(0), np.zeros(0, np.int64), n_features)


def feature_scaling(Z) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of every column (1 for constant columns); sparse-safe.

    Linear learners optimise in standardised coordinates ``(x - mean) / sd`` (so a norm
    bound or an SVM's regulariser treats features alike) and map the result back with
    :func:`to_raw`; for sparse Z nothing is densified.
    """
    if sp.issparse(Z):
        mean = np.asarray(Z.mean(axis=0)).ravel()
        sq = np.asarray(Z.multiply(Z).mean(axis=0)).ravel()
    else:
        mean = Z.mean(axis=0)
        sq = np.mean(Z * Z, axis=0)
    sd = np.sqrt(np.maximum(sq - mean * mean, 0.0))
    sd[~(sd > 1e-12 * np.maximum(1.0, np.abs(mean)))] = 1.0
    return mean, sd


def to_raw(v, b, mean, sd) -> tuple[np.ndarray, float]:
    """Weights in standardised coordinates -> weights and bias on the raw features."""
    w = v / sd
    return w, float(b - w @ mean)
