"""Tracking metrics: Pascal overlap and centre error per frame (StructBoost Tables 4-5),
OTB's success-plot AUC and precision at 20 px (Wu, Lim & Yang, CVPR 2013).

Ground truth may leave frames unlabelled (a row of NaN, e.g. MIL-track's every-5th-frame
annotation, see :mod:`maxmargin.apps.tracking.data`): the per-frame functions give NaN on
those frames and :func:`summary` scores only the labelled ones.
"""

from __future__ import annotations

import numpy as np

from maxmargin.tasks.boxes import box_overlap

__all__ = ["centre_errors", "overlaps", "precision_at", "success_auc", "summary"]


def _labelled(truth) -> np.ndarray:
    t = np.asarray(truth, dtype=np.float64).reshape(-1, 4)
    return np.all(np.isfinite(t), axis=1)


def overlaps(pred, truth) -> np.ndarray:
    """Pascal overlap ([Shen2014 eq. 21]'s ``1 - Delta``) of predicted and true boxes, per frame;
    NaN where the truth is unlabelled (a NaN row)."""
    ok = _labelled(truth)
    ov = box_overlap(pred, truth)
    return np.where(ok, ov, np.nan) if len(ok) == len(ov) else ov


def centre_errors(pred, truth) -> np.ndarray:
    """Euclidean distance between box centres in pixels, per frame (NaN where the
    truth is unlabelled)."""
    p = np.asarray(pred, dtype=np.float64).reshape(-1, 4)
    t = np.asarray(truth, dtype=np.float64).reshape(-1, 4)
    return np.hypot(
        p[:, 0] + p[:, 2] / 2 - t[:, 0] - t[:, 2] / 2, p[:, 1] + p[:, 3] / 2 - t[:, 1] - t[:, 3] / 2
    )


def success_auc(ov, thresholds=None) -> float:
    """Area under the success plot: mean over thresholds t in [0, 1] (21 steps, as in the
    OTB toolkit) of the fraction of frames with overlap > t (NaN frames skipped)."""
    ov = np.asarray(ov, dtype=np.float64)
    ov = ov[~np.isnan(ov)]
    t = np.linspace(0, 1, 21) if thresholds is None else np.asarray(thresholds)
    return float(np.mean(ov[None, :] > t[:, None])) if len(ov) else float("nan")


def precision_at(err, pixels: float = 20.0) -> float:
    """Fraction of frames whose centre error is at most ``pixels`` (NaN frames skipped)."""
    err = np.asarray(err, dtype=np.float64)
    err = err[~np.isnan(err)]
    return float(np.mean(err <= pixels)) if len(err) else float("nan")


def summary(pred, truth) -> dict:
    """Mean/std overlap and centre error, success AUC and precision@20 of a track, over
    the frames whose truth is labelled (``n_frames`` counts them)."""
    ok = _labelled(truth)
    p = np.asarray(pred, dtype=np.float64).reshape(-1, 4)[ok]
    t = np.asarray(truth, dtype=np.float64).reshape(-1, 4)[ok]
    ov, ce = overlaps(p, t), centre_errors(p, t)
    nan = float("nan")
    return {
        "overlap": float(ov.mean()) if len(ov) else nan,
        "overlap_std": float(ov.std()) if len(ov) else nan,
        "centre_error": float(ce.mean()) if len(ce) else nan,
        "centre_error_std": float(ce.std()) if len(ce) else nan,
        "success_auc": success_auc(ov),
        "precision_20": precision_at(ce),
        "n_frames": len(ov),
    }
