"""Histogram decision stumps for large n (LightGBM-style binning).

Every feature is binned once per fit into at most ``max_bins`` (default 255)
equal-frequency bins of its distinct values, stored as uint8 codes; the search is the
exact stump's histogram-and-scan restricted to the bin boundaries.  With at most
``max_bins`` distinct values per feature the result equals the exact stump; otherwise
the best threshold is searched among ``max_bins - 1`` candidates per feature.
Ke et al., "LightGBM", NIPS 2017 (histogram algorithm); StructBoost Sec. 4.2 (stumps).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from maxmargin.weak.binning import FeatureCodes
from maxmargin.weak.stump import DecisionStump

__all__ = ["CodedStump", "HistogramStump"]


class HistogramStump(DecisionStump):
    """Decision stump searched over at most ``max_bins`` bins per feature (uint8 codes)."""

    def __init__(self, max_bins: int = 255) -> None:
        if max_bins is None or not 2 <= int(max_bins) <= 256:
            raise ValueError(f"max_bins must be in [2, 256], got {max_bins!r}")
        super().__init__(max_bins=int(max_bins))


@njit(cache=True)
def _cast_codes(Z, nb, out):  # pragma: no cover - compiled
    """out = Z.T as uint8; False unless every value is an integer in [0, nb)."""
    n, d = Z.shape
    for i in range(n):
        for f in range(d):
            v = Z[i, f]
            c = int(v) if 0.0 <= v < nb else -1
            if c < 0 or c != v:
                return False
            out[f, i] = c
    return True


class CodedStump(HistogramStump):
    """Decision stump on features that are already integer bin codes (0 to ``max_bins - 1``).

    For callers that bin their features once and keep the codes (an online tracker codes
    each frame's features when the frame arrives, with bin edges fixed at the start):
    :meth:`prepare` casts the codes instead of sorting every feature again, and the
    search is the histogram stump's.  Every feature gets ``max_bins`` bins (empty ones
    included); the threshold between codes ``b`` and ``b + 1`` is ``b + 0.5``, so the
    stumps apply to the same codes at prediction time.  Exact for integer features in
    that range (every split between distinct values is searched).
    """

    def __init__(self, max_bins: int = 256) -> None:
        super().__init__(max_bins=max_bins)

    def prepare(self, Z) -> FeatureCodes:
        if sp.issparse(Z):
            raise ValueError("CodedStump needs dense integer codes, got a sparse matrix")
        Z = np.asarray(Z)
        if Z.ndim != 2:
            raise ValueError(f"expected a 2-d array, got shape {Z.shape}")
        nb = int(self.max_bins)
        n, d = Z.shape
        if Z.dtype == np.uint8 and nb == 256:
            codes = np.ascontiguousarray(Z.T)
        else:
            codes = np.empty((d, n), dtype=np.uint8)
            if not _cast_codes(np.asarray(Z, dtype=np.float64), nb, codes):
                raise ValueError(f"CodedStump features must be integer codes in [0, {nb - 1}]")
        n_bins = np.full(d, nb, dtype=np.int64)
        lo = np.tile(np.arange(nb, dtype=np.float64), d)
        return FeatureCodes(codes, n_bins, np.arange(d + 1, dtype=np.int64) * nb, lo, lo, n, d)
