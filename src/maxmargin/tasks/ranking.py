"""Ranking, ordinal regression and AUC as StructBoost tasks ([Shen2014 eq. 14], Sec. 3.2).

The model is one score ``f(x) = w' Phi(x)`` (one slot); every preference pair (i, j) --
i should rank above j -- asks for ``f(x_i) - f(x_j) >= 1 - xi_ij`` ([Shen2014 eq. 14b]), and the
objective is ``||w||_1 + C / |S| sum_(i,j) xi_ij`` ([Shen2014 eq. 14a] with m = |S| pairs).  With
binary labels this maximises a hinge bound of the AUC; with graded labels it is ordinal
regression; with query ids it is learning to rank.

Two tasks, one problem:

* :class:`PairwiseRankingTask` lists every pair.  Its examples are the pairs, its outputs
  {0: kept, 1: flipped}, so it runs with the paper's m-slack master (one slack per pair)
  and also with a plain 1-slack master; memory and oracle time are O(|S|).
* :class:`RankingTask` never lists pairs.  Its 1-slack planes come from the O(n log n)
  most-violated-constraint search of Blaschko et al. (GCPR 2014,
  :mod:`maxmargin.inference.ranking`): a plane ``(1/|S|) sum c_ij [Phi_i - Phi_j]`` is
  stored as the per-sample weights ``alpha / |S|``, so a plane costs O(n), and the
  1-slack master is the only one it supports.

Both take the preference graph, the groups and the hinge of the ranking oracle:
``rescaling="unit"`` is [Shen2014 eq. 14] (unit margin, every pair counts once); "margin" and
"slack" give a pair (i, j) the loss gap ``d = loss_j - loss_i`` as margin or as weight.
``normalize="pairs"`` averages the hinge over all pairs ([Shen2014 eq. 14]); ``"query"`` averages
inside each query and then over queries, so queries with many pairs do not dominate
(the usual learning-to-rank weighting; the same option as :class:`~maxmargin.RankSVM`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from maxmargin.inference.ranking import PreferenceGraph, check_options
from maxmargin.tasks.base import Cut, DualPairs, OracleResult, StructuredTask
from maxmargin.tasks.smoothing import SmoothedRisk

__all__ = ["PairwiseRankingTask", "RankingTask"]


@njit(cache=True)
def _row_sums(row, sample, value, phi, n_rows):
    """out[r, j] = sum over entries k of row r of value[k] * phi[j, sample[k]]."""
    out = np.zeros((n_rows, phi.shape[0]))
    for k in range(row.shape[0]):
        r, i, v = row[k], sample[k], value[k]
        for j in range(phi.shape[0]):
            out[r, j] += v * phi[j, i]
    return out


class _RankingBase(StructuredTask):
    """Shared parameters, binding and prediction of the two ranking tasks."""

    n_slots = 1
    #: threads for the preference graph's sort and the oracle (``RankingTask`` sets it)
    n_jobs: int | None = None

    def __init__(
        self,
        graph: str = "complete",
        rescaling: str = "unit",
        top_k: int | None = None,
        target: str = "relevance",
        normalize: str = "pairs",
    ) -> None:
        self.graph = graph
        self.rescaling = rescaling
        self.top_k = top_k
        self.target = target
        self.normalize = normalize

    def _check_params(self) -> None:
        check_options(self.graph, self.rescaling, self.normalize)
        if self.target not in ("relevance", "loss"):
            raise ValueError(f"target must be 'relevance' or 'loss', got {self.target!r}")

    def _bind(self, X, y, group=None) -> None:
        self._check_params()
        y = np.asarray(y, dtype=np.float64).ravel()
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or inf")
        self.X_ = (
            sp.csc_matrix(X, dtype=np.float64)
            if sp.issparse(X)
            else np.asarray(X, dtype=np.float64)
        )
        # losses: lower ranks higher (relevance grades are turned around)
        self.loss_ = y.max() - y if self.target == "relevance" else y
        self.graph_ = PreferenceGraph(
            self.loss_,
            graph=self.graph,
            group=group,
            top_k=self.top_k,
            n_jobs=self.n_jobs,
        )
        self.n_pairs_ = int(self.graph_.edges_per_group.sum())
        if self.n_pairs_ == 0:
            raise ValueError(
                f"the preference graph has no pairs ({len(y)} samples): every group has "
                "a single relevance level, or one sample"
            )
        self.n_points_ = len(y)
        # hinge weights: 1/|S| per pair, or averaged per query then over queries
        self.w_group_, self.w_sample_ = self.graph_.hinge_weights(self.normalize)

    def weak_inputs(self):
        return self.X_

    def select_columns(self, gains, threshold):
        return [(0, np.array([0]))] if gains[0] > threshold else []

    def slot_scores_to_label_scores(self, F):
        return np.asarray(F)

    def predict_codes(self, F):
        raise NotImplementedError("a ranking task predicts scores, not labels")

    def _get_state(self):
        return {
            "graph": self.graph,
            "rescaling": self.rescaling,
            "top_k": self.top_k,
            "target": self.target,
            "normalize": self.normalize,
        }, {}

    def _set_state(self, meta, arrays):
        self.graph, self.rescaling = meta["graph"], meta["rescaling"]
        self.top_k, self.target = meta["top_k"], meta["target"]
        self.normalize = meta.get("normalize", "pairs")


class PairwiseRankingTask(_RankingBase):
    """Every preference pair as an example with outputs {0: kept, 1: flipped}.

    For pair p = (i, j) the flipped output has loss ``Delta_p`` and joint-feature
    difference ``sigma_p (phi(x_i) - phi(x_j))``: (Delta, sigma) = (1, 1) for "unit",
    (d, 1) for "margin" and (d, d) for "slack".  The m-slack master then is exactly
    [Shen2014 eq. 14] (one slack per pair); the 1-slack master is its [Shen2014 eq. 9] form with an
    ``O(|S|)`` oracle -- :class:`RankingTask` is the fast version of the latter.
    """

    n_outputs = 2

    def _bind(self, X, y, group=None) -> None:
        super()._bind(X, y, group)
        g = self.graph_
        # pairs of node (lo, t, hi) of the oracle's tree: order[lo:t] x order[t:hi]; the
        # nodes' pair sets are disjoint and cover the graph, so this lists every pair once
        a = g.node_t - g.node_lo
        b = g.node_hi - g.node_t
        sizes = a * b
        node = np.repeat(np.arange(len(sizes)), sizes)
        k = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        self.upper_ = g.order[g.node_lo[node] + k // b[node]]
        self.lower_ = g.order[g.node_t[node] + k % b[node]]
        d = self.loss_[self.lower_] - self.loss_[self.upper_]
        ones = np.ones_like(d)
        # a pair of weight omega enters the mean over |S| pairs scaled by |S| omega
        # (1 for normalize="pairs"): xi'_p >= |S| omega_p hinge_p
        f = len(d) * self.w_sample_[self.upper_]
        self.pair_loss_ = f * (ones if self.rescaling == "unit" else d)
        self.pair_scale_ = f * (d if self.rescaling == "slack" else ones)
        self.n_samples = len(d)

    def weak_weights(self, duals: DualPairs):
        p = duals.sample
        v = duals.value * self.pair_scale_[p] * (duals.label == 1)
        n = self.n_points_
        A = np.bincount(self.upper_[p], v, n) - np.bincount(self.lower_[p], v, n)
        return A[:, None]

    def joint_difference(self, outputs, slots, pairs):
        p = pairs.sample
        coef = self.pair_scale_[p] * (pairs.label == 1)
        return (outputs[:, self.upper_[p]] - outputs[:, self.lower_[p]]) * coef

    def _margins(self, F):
        s = np.asarray(F)[:, 0]
        return self.pair_scale_ * (s[self.upper_] - s[self.lower_])

    def loss_augmented(self, F):
        marg = self._margins(F)
        label = (self.pair_loss_ - marg > 0).astype(np.int64)
        return OracleResult(label=label, loss=self.pair_loss_ * label, margin=marg * label)

    def evaluate_outputs(self, F, label):
        label = np.asarray(label)
        return OracleResult(
            label=label, loss=self.pair_loss_ * label, margin=self._margins(F) * label
        )

    def initial_violators(self, rng):
        label = np.ones(self.n_samples, dtype=np.int64)
        return OracleResult(label=label, loss=self.pair_loss_.copy(), margin=np.zeros(len(label)))


class RankingTask(_RankingBase):
    """1-slack ranking with the O(n log n) most violated constraint (no pair lists).

    A plane is ``xi >= delta / |S| - sum_k (alpha_k / |S|) f(x_k)``, where ``(alpha,
    delta)`` is the most violated constraint of [Blaschko2014 Algs. 1 and 2] at
    the current scores; in the working set it is the (sample k, weight ``alpha_k / |S|``)
    entries, so the signed weights the weak learner sees are ``sum_r lambda_r alpha_r /
    |S|`` and the master is the same as with :class:`PairwiseRankingTask`'s 1-slack form
    (tested).  Only ``formulation="1-slack"``.
    """

    formulations = ("1-slack",)

    def __init__(
        self,
        graph: str = "complete",
        rescaling: str = "unit",
        top_k: int | None = None,
        target: str = "relevance",
        normalize: str = "pairs",
        n_jobs: int = 1,
    ) -> None:
        super().__init__(
            graph=graph, rescaling=rescaling, top_k=top_k, target=target, normalize=normalize
        )
        self.n_jobs = n_jobs

    def _bind(self, X, y, group=None) -> None:
        super()._bind(X, y, group)
        self.n_samples = self.n_pairs_

    def one_slack_cut(self, F):
        s = np.asarray(F)[:, 0]
        alpha, delta_g = self.graph_.most_violated(s, rescaling=self.rescaling, n_jobs=self.n_jobs)
        a = alpha * self.w_sample_  # alpha / |S| for normalize="pairs"
        nz = np.flatnonzero(a)
        pairs = DualPairs(nz, np.zeros(len(nz), dtype=np.int64), a[nz])
        rhs = float(delta_g @ self.w_group_)
        risk = max(0.0, rhs - float(a @ s))  # = weighted mean pairwise hinge at s
        return Cut(pairs, rhs, risk)

    def initial_cut(self, rng):
        return self.one_slack_cut(np.zeros((self.n_points_, 1)))

    # -- the fast master: Huber-smoothed pairwise hinge, O(n log^2 n) -------------------
    smooth_master = True

    def smoothing_scale(self):
        if self.rescaling == "unit":
            return 1.0
        return float(max(np.ptp(self.loss_), 1e-300))

    def smoothed_risk(self, F, beta):
        # Huber width 2 log(2) / beta: the same worst-case error as log-sum-exp over the
        # two outputs {kept, flipped} of a pair
        delta = 2.0 * np.log(2.0) / beta
        risk, smooth, A, dual = self.graph_.smoothed_hinge(
            np.asarray(F)[:, 0], delta, self.rescaling, self.w_sample_
        )
        return SmoothedRisk(risk, smooth, A[:, None], dual)

    def cut_value(self, F, cut):
        s = np.asarray(F)[:, 0]
        return cut.rhs - float(cut.pairs.value @ s[cut.pairs.sample])

    def weak_weights(self, duals: DualPairs):
        return np.bincount(duals.sample, duals.value, self.n_points_)[:, None]

    def joint_difference(self, outputs, slots, pairs):
        return outputs[:, pairs.sample]

    def aggregate_difference(self, outputs, col_hyp, slots, pairs, row_of_pair, n_rows):
        # row sums of value_k * phi(x_sample_k): one fused pass over the stored entries
        # (they number up to n per plane, so this is the hot loop of column pricing)
        phi = np.ascontiguousarray(outputs[np.asarray(col_hyp)], dtype=np.float64)
        return _row_sums(
            np.asarray(row_of_pair, dtype=np.int64),
            np.asarray(pairs.sample, dtype=np.int64),
            np.asarray(pairs.value, dtype=np.float64),
            phi,
            int(n_rows),
        )

    def _m_slack_only(self, *args):
        raise NotImplementedError(
            "RankingTask has no per-pair oracle; use formulation='1-slack' or PairwiseRankingTask"
        )

    loss_augmented = evaluate_outputs = initial_violators = _m_slack_only
