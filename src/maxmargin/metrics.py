"""Evaluation: ranking (pairwise ranking risk, AUC, NDCG@k, MAP) and segmentation.

Every metric takes an optional ``group`` array (query / image ids); the metric
is then computed inside each group and averaged over groups (the usual
per-query averaging of learning-to-rank evaluation).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from maxmargin._validation import check_vector
from maxmargin.inference.ranking import PreferenceGraph

__all__ = [
    "auc",
    "mean_average_precision",
    "ndcg_at_k",
    "pairwise_accuracy",
    "precision_recall_point",
    "ranking_risk",
    "segmentation_scores",
]

_NO_REL = ("zero", "one", "skip")


def _groups(group, n):
    """Index arrays of the samples of every group, in order of first group id."""
    if group is None:
        return [np.arange(n)]
    group = np.asarray(group)
    if group.shape != (n,):
        raise ValueError(f"group has shape {group.shape}, expected ({n},)")
    _, inv = np.unique(group, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(inv, kind="stable")
    bounds = np.flatnonzero(np.diff(inv[order])) + 1
    return np.split(order, bounds)


def ranking_risk(loss, scores, group=None, graph="complete", top_k=None):
    """Empirical structured ranking risk, [Blaschko2014 eq. 1] (GCPR 2014).

    Mean over the sample pairs related by the preference graph of
    ``|loss_j - loss_i| * (1[pair misordered] + 1/2 * 1[s_i == s_j])``, where a
    pair is misordered when the lower-loss sample has the strictly lower
    score.  Averaged over groups.  Computed in O(n log n) with the sweep of
    [Blaschko2014 Algs. 1/2] (strict and non-strict score comparisons).  Lower is better;
    NaN if no group has two samples.
    """
    loss = check_vector("loss", loss, empty=False)
    scores = check_vector("scores", scores, loss.shape[0], empty=False)
    g = PreferenceGraph(loss, graph=graph, group=group, top_k=top_k)
    strict = g.misordered_weight(scores, strict=True)
    loose = g.misordered_weight(scores, strict=False)
    pairs = g.pairs_per_group
    ok = pairs > 0
    if not np.any(ok):
        return float("nan")
    return float(np.mean(0.5 * (strict[ok] + loose[ok]) / pairs[ok]))


def pairwise_accuracy(relevance, scores, group=None):
    """Fraction of pairs with different relevance that the scores order correctly
    (score ties count 1/2), averaged over groups that have such pairs; the AUC for
    binary relevance (Harrell's concordance index in general).  O(n log n).  NaN if
    no group has two relevance levels."""
    relevance = check_vector("relevance", relevance, empty=False)
    scores = check_vector("scores", scores, relevance.shape[0], empty=False)
    g = PreferenceGraph(-relevance, graph="complete", group=group)
    strict = g.misordered_weight(scores, strict=True, weighted=False)
    loose = g.misordered_weight(scores, strict=False, weighted=False)
    pairs = g.edges_per_group
    ok = pairs > 0
    if not np.any(ok):
        return float("nan")
    return float(np.mean(1.0 - 0.5 * (strict[ok] + loose[ok]) / pairs[ok]))


def auc(y_true, scores, group=None):
    """Area under the ROC curve (ties in scores count 1/2), averaged over groups.

    ``y_true > 0`` marks positives.  Groups without both classes are skipped;
    returns NaN if no group has both.
    """
    y_true = check_vector("y_true", y_true, empty=False)
    scores = check_vector("scores", scores, y_true.shape[0], empty=False)
    vals = []
    for idx in _groups(group, y_true.shape[0]):
        pos = y_true[idx] > 0
        n_pos = int(pos.sum())
        n_neg = idx.shape[0] - n_pos
        if n_pos == 0 or n_neg == 0:
            continue
        r = rankdata(scores[idx])
        vals.append((r[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    return float(np.mean(vals)) if vals else float("nan")


def _reduce(vals):
    vals = [v for v in vals if v is not None]
    return float(np.mean(vals)) if vals else float("nan")


def ndcg_at_k(relevance, scores, k=10, group=None, gain="exponential", no_relevant="zero"):
    """Normalised discounted cumulative gain at rank k, averaged over groups.

    DCG@k = sum_r gain(rel_r) / log2(r + 1) over the first k ranks, gain
    ``2**rel - 1`` ("exponential", LETOR convention) or ``rel`` ("linear").
    Ties in scores are handled by averaging the discounts over the tied ranks,
    i.e. the expectation under a random order of tied items.  ``no_relevant``
    sets the value of a group without any positive gain: ``"zero"``,
    ``"one"`` or ``"skip"`` (left out of the average).
    """
    relevance = check_vector("relevance", relevance, empty=False)
    scores = check_vector("scores", scores, relevance.shape[0], empty=False)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    if no_relevant not in _NO_REL:
        raise ValueError(f"no_relevant must be one of {_NO_REL}, got {no_relevant!r}")
    if gain == "exponential":
        gains_all = np.exp2(relevance) - 1.0
    elif gain == "linear":
        gains_all = relevance
    else:
        raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")
    vals = []
    for idx in _groups(group, relevance.shape[0]):
        gains, s = gains_all[idx], scores[idx]
        m = idx.shape[0]
        disc = np.zeros(m)
        kk = min(k, m)
        disc[:kk] = 1.0 / np.log2(np.arange(2, kk + 2))
        ideal = float(np.sort(gains)[::-1] @ disc)
        if ideal <= 0:
            vals.append({"zero": 0.0, "one": 1.0, "skip": None}[no_relevant])
            continue
        order = np.argsort(-s, kind="stable")
        s_sorted = s[order]
        # average the discounts inside each block of tied scores
        starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
        block_sum = np.add.reduceat(disc, starts)
        sizes = np.diff(np.r_[starts, m])
        avg = np.repeat(block_sum / sizes, sizes)
        vals.append(float(gains[order] @ avg) / ideal)
    return _reduce(vals)


def mean_average_precision(relevance, scores, group=None, no_relevant="zero"):
    """Mean over groups of average precision, with ``relevance > 0`` as relevant.

    Items are ranked by decreasing score; ties keep the input order (stable
    sort).  ``no_relevant`` as in :func:`ndcg_at_k` (``"one"`` not allowed).
    """
    relevance = check_vector("relevance", relevance, empty=False)
    scores = check_vector("scores", scores, relevance.shape[0], empty=False)
    if no_relevant not in ("zero", "skip"):
        raise ValueError(f"no_relevant must be 'zero' or 'skip', got {no_relevant!r}")
    vals = []
    for idx in _groups(group, relevance.shape[0]):
        rel = relevance[idx][np.argsort(-scores[idx], kind="stable")] > 0
        n_rel = int(rel.sum())
        if n_rel == 0:
            vals.append(0.0 if no_relevant == "zero" else None)
            continue
        hits = np.cumsum(rel)
        ranks = np.arange(1, rel.shape[0] + 1)
        vals.append(float(np.sum(hits[rel] / ranks[rel]) / n_rel))
    return _reduce(vals)


# ---------------------------------------------------------------------------
# segmentation (pixel level), as in StructBoost Table 6 / Fulkerson et al. ICCV 2009
# ---------------------------------------------------------------------------
def _flat_masks(masks, name):
    arrs = [np.asarray(m) for m in masks] if isinstance(masks, (list, tuple)) else [masks]
    arrs = [np.asarray(m) for m in arrs]
    if not arrs:
        raise ValueError(f"{name} is empty")
    for m in arrs:
        if m.ndim != 2:
            raise ValueError(f"{name} must hold 2-d masks, got shape {m.shape}")
    return arrs


def precision_recall_point(y_true, scores) -> float:
    """Precision at the point where it equals recall, over a ranking of pixels by score.

    With P positives, precision and recall of the top k are ``tp(k) / k`` and
    ``tp(k) / P``: they are equal at ``k = P``, so this is the fraction of positives
    among the P highest scores (ties broken by a stable sort).  NaN if there is no
    positive.
    """
    t = np.asarray(y_true).ravel().astype(bool)
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.shape != t.shape:
        raise ValueError(f"scores have {s.size} values for {t.size} labels")
    P = int(t.sum())
    if P == 0:
        return float("nan")
    top = np.argsort(-s, kind="stable")[:P]
    return float(t[top].mean())


def segmentation_scores(masks_true, masks_pred, scores=None) -> dict:
    """Pixel-level scores of binary segmentations, pooled over all pixels of all images.

    Returns ``accuracy`` (fraction of correct pixels), ``accuracy_fg`` / ``accuracy_bg``
    (recall of each class) and ``class_accuracy`` (their mean, the "pixel accuracy" of
    StructBoost Table 6), ``iou_fg`` / ``iou_bg`` (intersection over union of each class)
    and ``mean_iou``, and with per-pixel foreground ``scores`` the ``precision_recall``
    point (:func:`precision_recall_point`).  Masks are lists of 2-d boolean arrays (or
    single arrays); predicted and true masks must have equal shapes.
    """
    T = _flat_masks(masks_true, "masks_true")
    Pm = _flat_masks(masks_pred, "masks_pred")
    if len(T) != len(Pm):
        raise ValueError(f"{len(T)} true masks but {len(Pm)} predicted masks")
    for a, b in zip(T, Pm):
        if a.shape != b.shape:
            raise ValueError(f"mask shapes differ: {a.shape} vs {b.shape}")
    t = np.concatenate([a.ravel() for a in T]).astype(bool)
    p = np.concatenate([b.ravel() for b in Pm]).astype(bool)
    tp = float(np.sum(t & p))
    tn = float(np.sum(~t & ~p))
    fp = float(np.sum(~t & p))
    fn = float(np.sum(t & ~p))

    def ratio(a, b):
        return a / b if b > 0 else float("nan")

    out = {
        "accuracy": (tp + tn) / t.size,
        "accuracy_fg": ratio(tp, tp + fn),
        "accuracy_bg": ratio(tn, tn + fp),
        "iou_fg": ratio(tp, tp + fp + fn),
        "iou_bg": ratio(tn, tn + fn + fp),
    }
    out["class_accuracy"] = 0.5 * (out["accuracy_fg"] + out["accuracy_bg"])
    out["mean_iou"] = 0.5 * (out["iou_fg"] + out["iou_bg"])
    if scores is not None:
        S = _flat_masks(scores, "scores")
        if len(S) != len(T) or any(a.shape != b.shape for a, b in zip(S, T)):
            raise ValueError("scores must have one array per mask, of the mask's shape")
        out["precision_recall"] = precision_recall_point(t, np.concatenate([s.ravel() for s in S]))
    return out
