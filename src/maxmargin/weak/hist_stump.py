"""Histogram decision stumps for large n (LightGBM-style binning).

Every feature is binned once per fit into at most ``max_bins`` (default 255)
equal-frequency bins of its distinct values, stored as uint8 codes; the search is the
exact stump's histogram-and-scan restricted to the bin boundaries.  With at most
``max_bins`` distinct values per feature the result equals the exact stump; otherwise
the best threshold is searched among ``max_bins - 1`` candidates per feature.
Ke et al., "LightGBM", NIPS 2017 (histogram algorithm); StructBoost Sec. 4.2 (stumps).
"""

from __future__ import annotations

from maxmargin.weak.stump import DecisionStump

__all__ = ["HistogramStump"]


class HistogramStump(DecisionStump):
    """Decision stump searched over at most ``max_bins`` bins per feature (uint8 codes)."""

    def __init__(self, max_bins: int = 255) -> None:
        if max_bins is None or not 2 <= int(max_bins) <= 256:
            raise ValueError(f"max_bins must be in [2, 256], got {max_bins!r}")
        super().__init__(max_bins=int(max_bins))
