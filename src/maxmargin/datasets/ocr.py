"""Loader for Taskar's handwritten-word OCR data (``ocr_taskar.mat``).

Taskar, Guestrin & Koller, "Max-Margin Markov Networks", NIPS 2003 (Kassel's
handwriting data).  The MATLAB file holds cells ``patterns_{train,test}`` of
129 x T uint8 matrices (16x8 binary pixels + a constant row) and ``labels_{train,test}``
with letters 0..25.  Nothing here depends on where the file lives; pass its path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["load_ocr"]


def load_ocr(path, split: str = "train", bias: bool = True):
    """Return ``(X, y)``: lists of (T_i, 129 or 128) float arrays and (T_i,) int arrays.

    ``split`` is "train" (626 words) or "test" (6251 words); ``bias=False`` drops the
    constant last row.
    """
    from scipy.io import loadmat

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"OCR file not found: {path}")
    mat = loadmat(path)
    pats = mat[f"patterns_{split}"].ravel()
    labs = mat[f"labels_{split}"].ravel()
    X = []
    y = []
    for p, lab in zip(pats, labs):
        a = np.asarray(p, dtype=np.float64).T
        X.append(np.ascontiguousarray(a if bias else a[:, :128]))
        y.append(np.asarray(lab, dtype=np.int64).ravel())
    return X, y
