"""Non-maximum suppression, average precision and recall-overlap curves.

* Greedy non-maximum suppression (as in Felzenszwalb et al., "Object detection with
  discriminatively trained part based models", TPAMI 32, 2010): keep the best-scoring
  box, drop every box overlapping it by more than a threshold, repeat.  numba.
* Average precision at overlap 0.5 as in PASCAL VOC (Everingham et al., IJCV 2010):
  detections of all images sorted by score, each matched greedily to the unmatched
  ground truth it overlaps most (>= 0.5), AP the area under the monotone precision
  envelope (VOC 2010+ "all points").
* Recall-overlap curves of proposals (Blaschko, Mittal & Rahtu, GCPR 2014, Sec. 5;
  Rahtu et al., ICCV 2011): for the top ``k`` windows of each image, the fraction of
  ground-truth boxes whose best overlap with those windows is at least ``t``; the AUC
  between ``t = 0.5`` and 1 normalised so that perfect recall gives 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from maxmargin.tasks.boxes import pairwise_overlap

__all__ = [
    "average_precision",
    "best_overlaps",
    "nms",
    "recall_overlap",
    "recall_overlap_auc",
]


@njit(cache=True)
def _nms_kernel(x0, y0, x1, y1, order, thr, max_keep, cover):  # pragma: no cover - compiled
    n = order.shape[0]
    area = (x1 - x0) * (y1 - y0)
    dead = np.zeros(n, dtype=np.bool_)
    keep = np.empty(n, dtype=np.int64)
    k = 0
    for a in range(n):
        i = order[a]
        if dead[i]:
            continue
        keep[k] = i
        k += 1
        if k >= max_keep:
            break
        for b in range(a + 1, n):
            j = order[b]
            if dead[j]:
                continue
            iw = min(x1[i], x1[j]) - max(x0[i], x0[j])
            ih = min(y1[i], y1[j]) - max(y0[i], y0[j])
            if iw <= 0.0 or ih <= 0.0:
                continue
            inter = iw * ih
            union = area[i] + area[j] - inter
            if union > 0.0 and inter / union > thr:
                dead[j] = True
            elif inter > cover * min(area[i], area[j]):
                dead[j] = True
    return keep[:k]


def nms(
    boxes, scores, threshold: float = 0.5, max_keep: int | None = None, cover: float | None = None
) -> np.ndarray:
    """Indices of the boxes kept by greedy NMS, best score first.

    A box is suppressed when its overlap with a kept, better-scoring box exceeds
    ``threshold``, or, with ``cover``, when their intersection exceeds ``cover`` times
    the smaller box's area (one box lies mostly inside the other: a part of an object
    next to the whole, which the overlap alone keeps when the sizes differ much -- the
    "percent covered" test of dlib's detector, King, JMLR 10, 2009); ties in score keep
    the earlier box.
    """
    if cover is not None and not (0.0 <= cover <= 1.0):
        raise ValueError(f"cover must be in [0, 1] or None, got {cover}")
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    s = np.asarray(scores, dtype=np.float64).ravel()
    if len(s) != len(b):
        raise ValueError(f"{len(b)} boxes but {len(s)} scores")
    if not (0.0 <= threshold <= 1.0):
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    order = np.argsort(-s, kind="stable")
    mk = len(s) if max_keep is None else int(max_keep)
    cv = np.inf if cover is None else float(cover)
    return _nms_kernel(
        b[:, 0].copy(),
        b[:, 1].copy(),
        b[:, 0] + b[:, 2],
        b[:, 1] + b[:, 3],
        order,
        threshold,
        mk,
        cv,
    )


def average_precision(detections, scores, truths, *, overlap: float = 0.5) -> float:
    """PASCAL VOC average precision over images.

    ``detections``: list of (k_i, 4) boxes per image, ``scores`` their scores, ``truths``
    the (m_i, 4) ground-truth boxes.  Returns nan when there is no ground truth.
    """
    if not (len(detections) == len(scores) == len(truths)):
        raise ValueError("detections, scores and truths must have one entry per image")
    n_gt = sum(len(np.asarray(t).reshape(-1, 4)) for t in truths)
    recs = []  # (score, image, det index)
    for i, (d, s) in enumerate(zip(detections, scores)):
        s = np.asarray(s, dtype=np.float64).ravel()
        if len(s) != len(np.asarray(d).reshape(-1, 4)):
            raise ValueError(f"image {i}: {len(d)} detections but {len(s)} scores")
        recs.append(np.stack([s, np.full(len(s), i), np.arange(len(s))], 1))
    allr = np.concatenate(recs) if recs else np.zeros((0, 3))
    if n_gt == 0:
        return float("nan")
    order = np.argsort(-allr[:, 0], kind="stable")
    tp = np.zeros(len(order))
    used = [np.zeros(len(np.asarray(t).reshape(-1, 4)), dtype=bool) for t in truths]
    ovs = [
        pairwise_overlap(np.asarray(d).reshape(-1, 4), np.asarray(t).reshape(-1, 4))
        if len(np.asarray(t).reshape(-1, 4)) and len(np.asarray(d).reshape(-1, 4))
        else np.zeros((len(np.asarray(d).reshape(-1, 4)), 0))
        for d, t in zip(detections, truths)
    ]
    # the greedy matching is sequential by nature; it runs over detections only
    for r, k in enumerate(order):
        i, j = int(allr[k, 1]), int(allr[k, 2])
        ov = ovs[i][j]
        if ov.size == 0:
            continue
        g = int(np.argmax(ov))
        if ov[g] >= overlap and not used[i][g]:
            used[i][g] = True
            tp[r] = 1.0
    ctp = np.cumsum(tp)
    recall = ctp / n_gt
    precision = ctp / np.arange(1, len(tp) + 1)
    mrec = np.concatenate([[0.0], recall, [1.0]])
    mpre = np.concatenate([[0.0], precision, [0.0]])
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    idx = np.flatnonzero(mrec[1:] != mrec[:-1])
    return float(np.sum((mrec[idx + 1] - mrec[idx]) * mpre[idx + 1]))


def best_overlaps(proposals, truths, k: int) -> np.ndarray:
    """For every ground-truth box (all images, concatenated), its best overlap with the
    first ``k`` proposals of its image (proposals ordered best first)."""
    out = []
    for p, t in zip(proposals, truths):
        t = np.asarray(t, dtype=np.float64).reshape(-1, 4)
        p = np.asarray(p, dtype=np.float64).reshape(-1, 4)[: int(k)]
        if len(t) == 0:
            continue
        out.append(pairwise_overlap(t, p).max(axis=1) if len(p) else np.zeros(len(t)))
    return np.concatenate(out) if out else np.zeros(0)


def recall_overlap(proposals, truths, k: int, thresholds=None):
    """Recall of the ground truth by the top ``k`` proposals per image at each overlap
    threshold; returns ``(thresholds, recall)`` (default thresholds 0, 0.01, ..., 1)."""
    t = np.linspace(0.0, 1.0, 101) if thresholds is None else np.asarray(thresholds, float)
    best = best_overlaps(proposals, truths, k)
    if len(best) == 0:
        raise ValueError("no ground-truth boxes")
    return t, (best[None, :] >= t[:, None]).mean(axis=1)


def recall_overlap_auc(proposals, truths, k: int, low: float = 0.5) -> float:
    """Area under the recall-overlap curve between ``low`` and 1, normalised to 1 for
    perfect recall: ``1/(1-low) int_low^1 recall(t) dt``, computed exactly as
    ``mean(clip(best - low, 0, 1-low)) / (1-low)`` over ground-truth boxes."""
    best = best_overlaps(proposals, truths, k)
    if len(best) == 0:
        raise ValueError("no ground-truth boxes")
    return float(np.mean(np.clip(best - low, 0.0, 1.0 - low)) / (1.0 - low))
