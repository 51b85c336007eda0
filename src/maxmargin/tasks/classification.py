"""Flat classification tasks: binary (LPBoost) and multi-class (StructBoost Sec. 3.1, 3.3)."""

from __future__ import annotations

import numpy as np

from maxmargin.tasks.base import LabelCodingTask

__all__ = ["BinaryTask", "MultiClassTask"]


def _encode_labels(y, min_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    if len(classes) < min_classes:
        raise ValueError(
            f"need at least {min_classes} classes in y to train, got {len(classes)} "
            f"class{'es' if len(classes) != 1 else ''} ({classes.tolist()!r})"
        )
    return classes, codes.astype(np.intp)


class BinaryTask(LabelCodingTask):
    """Binary classification: LPBoost recovered as a StructBoost instance (Sec. 3.1).

    ``Y = {-1, +1}``, ``Psi(x, y) = y Phi(x) / 2`` and the 0/1 loss, i.e. a single slot with
    ``Gamma(-1) = -1/2`` and ``Gamma(+1) = +1/2``.  The decision function is
    ``F(x) = sum_j w_j phi_j(x)``; the prediction is its sign.
    """

    def _encode(self, y):
        classes, codes = _encode_labels(y)
        if len(classes) != 2:
            raise ValueError(f"BinaryTask needs exactly 2 classes, got {len(classes)}")
        return classes, codes

    def coding_matrix(self):
        return np.array([[-0.5], [0.5]])

    def loss_matrix(self):
        return np.array([[0.0, 1.0], [1.0, 0.0]])


class MultiClassTask(LabelCodingTask):
    """Multi-class classification with ``Psi(x, y) = Phi(x) (x) Gamma(y)`` (Sec. 3.3).

    ``Gamma(y)`` is the one-hot coding ([Shen2014 eq. 15]), so ``w`` stacks one weight vector per
    class and ``F(x, y) = w_y . Phi(x)``; the loss is 0/1 unless a (K, K) ``loss`` matrix
    is given (rows = true class, in the order of ``np.unique(y)``).
    """

    def __init__(self, sharing: str = "shared", loss=None) -> None:
        super().__init__(sharing=sharing)
        self.loss = loss

    def _encode(self, y):
        return _encode_labels(y)

    def coding_matrix(self):
        return np.eye(len(self.classes_))

    def loss_matrix(self):
        K = len(self.classes_)
        if self.loss is None:
            return 1.0 - np.eye(K)
        loss = np.asarray(self.loss, dtype=np.float64)
        if loss.shape != (K, K):
            raise ValueError(f"loss matrix must have shape ({K}, {K}), got {loss.shape}")
        return loss
