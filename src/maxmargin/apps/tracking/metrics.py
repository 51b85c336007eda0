"""Tracking metrics: Pascal overlap and centre error per frame (StructBoost Tables 4-5),
OTB's success-plot AUC and precision at 20 px (Wu, Lim & Yang, CVPR 2013)."""

from __future__ import annotations

import numpy as np

from maxmargin.tasks.boxes import box_overlap

__all__ = ["centre_errors", "overlaps", "precision_at", "success_auc", "summary"]


def overlaps(pred, truth) -> np.ndarray:
    """Pascal overlap (eq. 21's ``1 - Delta``) of predicted and true boxes, per frame."""
    return box_overlap(pred, truth)


def centre_errors(pred, truth) -> np.ndarray:
    """Euclidean distance between box centres in pixels, per frame."""
    p = np.asarray(pred, dtype=np.float64).reshape(-1, 4)
    t = np.asarray(truth, dtype=np.float64).reshape(-1, 4)
    return np.hypot(
        p[:, 0] + p[:, 2] / 2 - t[:, 0] - t[:, 2] / 2, p[:, 1] + p[:, 3] / 2 - t[:, 1] - t[:, 3] / 2
    )


def success_auc(ov, thresholds=None) -> float:
    """Area under the success plot: mean over thresholds t in [0, 1] (21 steps, as in the
    OTB toolkit) of the fraction of frames with overlap > t."""
    ov = np.asarray(ov, dtype=np.float64)
    t = np.linspace(0, 1, 21) if thresholds is None else np.asarray(thresholds)
    return float(np.mean(ov[None, :] > t[:, None])) if len(ov) else float("nan")


def precision_at(err, pixels: float = 20.0) -> float:
    """Fraction of frames whose centre error is at most ``pixels``."""
    err = np.asarray(err, dtype=np.float64)
    return float(np.mean(err <= pixels)) if len(err) else float("nan")


def summary(pred, truth) -> dict:
    """Mean/std overlap and centre error, success AUC and precision@20 of a track."""
    ov, ce = overlaps(pred, truth), centre_errors(pred, truth)
    return {
        "overlap": float(ov.mean()),
        "overlap_std": float(ov.std()),
        "centre_error": float(ce.mean()),
        "centre_error_std": float(ce.std()),
        "success_auc": success_auc(ov),
        "precision_20": precision_at(ce),
        "n_frames": len(ov),
    }
