"""A discriminative scale filter for the trackers, after Danelljan, Haeger, Khan &
Felsberg, "Accurate scale estimation for robust visual tracking", BMVC 2014 (DSST's
scale filter).

After the translation step has found the new centre, ``S`` patches at the relative
sizes ``s a^n`` (``n = -(S-1)/2 .. (S-1)/2``, ``s`` the current size relative to the
labelled box) are cut around it, resampled to one fixed template (bilinear), and
described by the tracker's compiled patch features; the ``d`` feature values of the
``S`` patches form a ``d x S`` sample ``f``, windowed along the scale axis.  A 1-D
correlation filter ``h`` over the scale dimension (one per feature channel) is the
closed-form minimiser of

    || sum_l h^l * f^l - g ||^2 + lam sum_l ||h^l||^2

(``*`` circular cross-correlation, ``g`` a Gaussian over the scales peaked at the
middle one), which in the Fourier domain is, per frequency,
``H^l = conj(G) F^l / (sum_k conj(F^k) F^k + lam)`` (exact for one sample: the
matrix ``F F^H + lam I`` is inverted by Sherman-Morrison).  Numerator ``A`` and
denominator ``B`` are running averages over the frames with learning rate ``eta``
[Danelljan2014 eq. 5], and the response to a new sample ``z`` is
``real(IFFT(sum_l conj(A^l) Z^l / (B + lam)))``; its argmax ``k`` gives the new size
``s a^(k - (S-1)/2)``, clamped to a band around the labelled size.

The filter is its own model: it is trained on samples cut at the sizes it chose itself,
but it is not the box classifier's score of a resized box (which prefers a box inside
the target and so shrinks, docs/tracking.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import map_coordinates

from maxmargin._validation import check_number
from maxmargin.apps.tracking.features import PatchFeatures

__all__ = [
    "ScaleFilter",
    "ScaleModel",
    "scale_filter_terms",
    "scale_response",
]


def scale_filter_terms(F, G):
    """The closed-form filter's numerator ``conj(G) F^l`` (d, S) and denominator
    ``sum_l |F^l|^2`` (S,) of one sample: ``F`` (d, S) and ``G`` (S,) are the DFTs of
    the sample and of the desired output along the scale axis."""
    F = np.asarray(F)
    return np.conj(G)[None, :] * F, np.sum((F * np.conj(F)).real, axis=0)


def scale_response(A, B, Z, lam: float) -> np.ndarray:
    """The filter's output over the scales for a new sample's DFT ``Z`` (d, S):
    ``real(IFFT(sum_l conj(A^l) Z^l / (B + lam)))``."""
    return np.fft.ifft(np.sum(np.conj(A) * Z, axis=0) / (B + lam)).real


@dataclass(frozen=True)
class ScaleFilter:
    """Settings of the scale filter (a frozen value, given to a tracker as
    ``scale_filter=``; the learned state is a :class:`ScaleModel`, built by
    :meth:`start`).

    Parameters
    ----------
    n_scales : int, default=33
        Scales sampled per frame (odd; Danelljan et al. use 33).
    step : float, default=1.02
        Scale factor between neighbouring samples (their ``a``).
    learning_rate : float, default=0.025
        Running-average rate of the filter's numerator and denominator.
    lam : float, default=0.01
        Regularisation of the filter.
    sigma : float or None, default=None
        Width (in scale steps) of the Gaussian desired output; None: ``sqrt(S) / 4``.
    features : str, default="raw+hog"
        Patch features of each resampled patch
        (:class:`~maxmargin.apps.tracking.features.PatchFeatures`); each feature kind is
        scaled to unit length per patch, so that the kinds weigh the same.
    template_area : int, default=1024
        Pixels of the template every patch is resampled to (the labelled box's aspect).
    band : tuple of two floats, default=(0.5, 2.0)
        The size, relative to the labelled box, is kept in ``[band[0], band[1]]``
        (and within the frame).
    prior : float, default=0.0
        A pull toward the labelled size: ``prior n^2`` is subtracted from the response
        of a sample ``n`` scale steps (of ``step``) away from it; 0: none.
    """

    n_scales: int = 33
    step: float = 1.02
    learning_rate: float = 0.025
    lam: float = 0.01
    sigma: float | None = None
    features: str = "raw+hog"
    template_area: int = 1024
    band: tuple = (0.5, 2.0)
    prior: float = 0.0

    def __post_init__(self) -> None:
        check_number("n_scales", self.n_scales, low=3, low_open=False, integer=True)
        if int(self.n_scales) % 2 != 1:
            raise ValueError(f"n_scales must be odd, got {self.n_scales!r}")
        check_number("step", self.step, low=1.0)
        check_number("learning_rate", self.learning_rate, low=0)
        if not self.learning_rate <= 1.0:
            raise ValueError(f"learning_rate must be in (0, 1], got {self.learning_rate!r}")
        check_number("lam", self.lam, low=0)
        check_number("prior", self.prior, low=0, low_open=False)
        check_number("sigma", self.sigma, low=0, allow_none=True)
        check_number("template_area", self.template_area, low=16, low_open=False, integer=True)
        PatchFeatures(self.features)  # raises on an unknown kind
        band = tuple(float(v) for v in np.atleast_1d(np.asarray(self.band, dtype=np.float64)))
        if len(band) != 2 or not (np.all(np.isfinite(band)) and 0 < band[0] <= 1 <= band[1]):
            raise ValueError(f"band must be (low, high), 0 < low <= 1 <= high, got {self.band!r}")
        if not (isinstance(self.band, tuple) and all(type(v) is float for v in self.band)):
            object.__setattr__(self, "band", band)

    def replace(self, **changes) -> ScaleFilter:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    def start(self, grey, box) -> ScaleModel:
        """A scale model trained on ``box`` (x, y, w, h) of the grey frame ``grey``."""
        return ScaleModel(self, grey, box)


class ScaleModel:
    """The learned scale filter of one track (see the module docstring).

    Attributes: ``scale_`` the current size relative to the first box, ``factors_`` the
    relative factors ``a^n`` sampled around it, ``response_`` the last response,
    ``A_`` (d, S) and ``B_`` (S,) the running numerator and denominator.
    """

    def __init__(self, config: ScaleFilter, grey, box) -> None:
        self.config = config
        S = int(config.n_scales)
        c = (S - 1) // 2
        self.factors_ = float(config.step) ** (np.arange(S) - c)
        sigma = float(config.sigma) if config.sigma is not None else np.sqrt(S) / 4.0
        g = np.exp(-0.5 * ((np.arange(S) - c) / sigma) ** 2)
        self._G = np.fft.fft(g)
        self._window = np.hanning(S + 2)[1:-1]  # no zero ends
        box = np.asarray(box, dtype=np.float64).reshape(4)
        self.base_size_ = box[2:].copy()
        w, h = self.base_size_
        k = np.sqrt(float(config.template_area) / (w * h))
        self._tw, self._th = max(round(float(w * k)), 4), max(round(float(h * k)), 4)
        self._feat = PatchFeatures(config.features)
        d = {"raw": self._feat.raw_cells**2, "hog": self._feat.hog_cells**2 * self._feat.hog_bins}
        g6 = self._feat.haar_cells
        d["haar"] = 2 * g6 * (g6 - 1) + (g6 - 1) ** 2
        ends = np.cumsum([d[p] for p in self._feat.parts])
        self._parts = list(zip(np.concatenate([[0], ends[:-1]]), ends, strict=True))
        S_ = len(self.factors_)
        T = np.zeros(((self._th + 2) * S_, self._tw + 2), dtype=np.float32)
        self._tiles = T
        rows = np.arange(S_) * (self._th + 2) + 1
        self._tile_boxes = np.column_stack(
            [np.ones(S_), rows, np.full(S_, self._tw), np.full(S_, self._th)]
        ).astype(np.float64)
        self.scale_ = 1.0
        F = self._sample(grey, box[:2] + box[2:] / 2.0, 1.0)
        self.A_, self.B_ = scale_filter_terms(F, self._G)
        self.response_ = None

    # -- samples ---------------------------------------------------------------------
    def patches(self, grey, centre, scale: float) -> np.ndarray:
        """The ``S`` patches of relative sizes ``scale * factors_`` around ``centre``
        (cx, cy), resampled bilinearly to the template with a 1 px border, (S, th + 2,
        tw + 2) float32 (beyond the frame: the nearest edge pixel)."""
        tw, th = self._tw, self._th
        sizes = self.base_size_[None, :] * (float(scale) * self.factors_)[:, None]  # (S, 2)
        u = (np.arange(-1, tw + 1) + 0.5) / tw - 0.5  # template pixel centres in [-0.5, 0.5]
        v = (np.arange(-1, th + 1) + 0.5) / th - 0.5
        X = centre[0] - 0.5 + u[None, :] * sizes[:, 0, None]  # (S, tw + 2), pixel coords
        Y = centre[1] - 0.5 + v[None, :] * sizes[:, 1, None]  # (S, th + 2)
        S = len(self.factors_)
        YY = np.broadcast_to(Y[:, :, None], (S, th + 2, tw + 2))
        XX = np.broadcast_to(X[:, None, :], (S, th + 2, tw + 2))
        out = map_coordinates(
            np.asarray(grey, dtype=np.float32), [YY.ravel(), XX.ravel()], order=1, mode="nearest"
        )
        return out.reshape(S, th + 2, tw + 2)

    def _sample(self, grey, centre, scale: float) -> np.ndarray:
        """The windowed sample's DFT along the scales, (d, S)."""
        P = self.patches(grey, centre, scale)
        S = len(self.factors_)
        self._tiles[:] = P.reshape(S * (self._th + 2), self._tw + 2)
        Z = self._feat(self._tiles, self._tile_boxes)  # (S, d)
        for a, e in self._parts:  # each feature kind to unit length per patch
            n = np.linalg.norm(Z[:, a:e], axis=1, keepdims=True)
            Z[:, a:e] /= np.maximum(n, 1e-12)
        return np.fft.fft(Z.T * self._window[None, :], axis=1)

    # -- the filter --------------------------------------------------------------------
    def _clamp(self, scale: float, image_shape) -> float:
        lo, hi = self.config.band
        H, W = int(image_shape[0]), int(image_shape[1])
        hi = min(hi, W / self.base_size_[0], H / self.base_size_[1])
        return float(np.clip(scale, min(lo, hi), hi))

    def estimate(self, grey, centre) -> float:
        """The new relative size at ``centre`` (cx, cy) of ``grey``: the current size
        times the factor of the response's maximum, clamped to the band (and to the
        frame).  Sets ``scale_`` and ``response_``; does not update the filter."""
        centre = np.asarray(centre, dtype=np.float64)
        Z = self._sample(grey, centre, self.scale_)
        r = scale_response(self.A_, self.B_, Z, float(self.config.lam))
        self.response_ = r
        old = self.scale_
        if self.config.prior > 0:  # towards the labelled size: steps from it, squared
            n = np.log(old * self.factors_) / np.log(float(self.config.step))
            r = r - float(self.config.prior) * n**2
        k = int(np.argmax(r))
        self.scale_ = self._clamp(old * float(self.factors_[k]), grey.shape)
        # the sample is the update's own when neither the size nor the centre changes
        self._last = (grey, centre.copy(), old, Z)
        return self.scale_

    def update(self, grey, centre) -> None:
        """Running-average update with the sample at ``centre`` and the current size."""
        centre = np.asarray(centre, dtype=np.float64)
        last = getattr(self, "_last", None)
        if (
            last is not None
            and last[0] is grey
            and last[2] == self.scale_
            and np.array_equal(last[1], centre)
        ):
            F = last[3]
        else:
            F = self._sample(grey, centre, self.scale_)
        self._last = None
        A, B = scale_filter_terms(F, self._G)
        eta = float(self.config.learning_rate)
        self.A_ = (1.0 - eta) * self.A_ + eta * A
        self.B_ = (1.0 - eta) * self.B_ + eta * B
