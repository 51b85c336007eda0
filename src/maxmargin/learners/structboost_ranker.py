"""StructBoost for AUC maximisation, ordinal regression and ranking (Sec. 3.2, [Shen2014 eq. 14]).

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014; the 1-slack planes come from the
O(n log n) search of Blaschko, Mittal & Rahtu, GCPR 2014.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from maxmargin._registry import register
from maxmargin._validation import (
    POSITIVE_INT,
    Options,
    check_group,
    check_score_group,
    store_params,
)
from maxmargin.inference.ranking import GRAPHS, RESCALINGS, check_options
from maxmargin.learners.structboost import StructBoost
from maxmargin.metrics import pairwise_accuracy
from maxmargin.solvers.smoothed_master import GAP_TOL
from maxmargin.tasks.base import StructuredTask
from maxmargin.tasks.ranking import PairwiseRankingTask, RankingTask

__all__ = ["StructBoostRanker"]

RANKER_FORMULATIONS = ("1-slack", "n-slack")


@register
class StructBoostRanker(StructBoost):
    """Boosted ranking function ``f(x) = sum_j w_j phi_j(x)`` trained on preference pairs.

    Solves [Shen2014 eq. 14]: ``min ||w||_1 + C / |S| sum_(i,j) xi_ij`` over
    ``w >= 0`` subject to ``f(x_i) - f(x_j) >= 1 - xi_ij`` for every pair (i, j) in
    ``S`` (i more relevant than j, inside the same group).  Binary ``y`` makes this AUC
    maximisation; graded ``y`` ordinal regression; ``group`` (query ids) learning to rank.

    Parameters
    ----------
    C : float, default=100.0
        Weight of the average pairwise hinge loss.
    max_iter : int, default=200
        Boosting (column-generation) iterations.
    weak_learner : str or WeakLearner, default="stump"
        Name in :data:`maxmargin.weak.WEAK_LEARNERS` or an instance.
    formulation : {"1-slack", "n-slack"}, default="1-slack"
        "1-slack": one slack and cutting planes found in O(n log n) per round
        (:class:`~maxmargin.tasks.ranking.RankingTask`, [Blaschko2014]); "n-slack" (the
        paper's "m-slack", also accepted): its baseline with one slack per pair
        (:class:`~maxmargin.tasks.ranking.PairwiseRankingTask`), memory ``O(|S|)``.  Same
        optimum (Theorem 2.1, tested).
    graph : {"complete", "bipartite", "star"}, default="complete"
        Which pairs form ``S`` inside a group (see :mod:`maxmargin.inference.ranking`);
        "complete" is every pair with different relevance.
    rescaling : {"unit", "margin", "slack"}, default="unit"
        "unit" is [Shen2014 eq. 14]: margin 1 and weight 1 for every pair.  "margin" / "slack"
        use the relevance gap of the pair as the margin / as a weight.
    top_k : int or None, default=None
        Upper side of the "bipartite" graph.
    normalize : {"pairs", "query"}, default="pairs"
        "pairs": the hinge is averaged over all pairs ([Shen2014 eq. 14], ``C / |S|``); "query":
        averaged inside each group, then over the groups that have pairs, so every query
        counts equally (learning to rank).  Same as ``"pairs"`` without groups.
    eps_cp : float, default=0.01
        Cutting-plane tolerance on the average hinge ([Shen2014 Alg. 2 line 10]).
    eps_cg : float, default=1e-6
        Column generation stops when no weak learner has gain above ``1 + eps_cg``.
    master : {"auto", "fast", "exact"}, default="auto"
        How the restricted master is solved (see :class:`~maxmargin.StructBoost`);
        "fast" applies to the n-slack form only.
    tol : float, default=1e-4
        Relative tolerance of the fast master's inner loop.
    max_time : float or None, default=None
        Wall-clock limit in seconds for the whole fit.
    max_cp_rounds : int or None, default=10
        Cutting-plane rounds per boosting iteration (None: to ``eps_cp``).
    n_jobs : int, default=1
        Threads of the ranking oracle's parallel recursion levels (here ``n_jobs`` does
        not parallelise the stump search, unlike :class:`StructBoost`).
    random_state : int, RandomState, Generator or None, default=None
        Tie breaking of the initial violators ([Shen2014 Alg. 1 line 2]).
    verbose : int, default=0
        Print one line per iteration when > 0.
    callback : callable or None, default=None
        Called with each iteration's record (the dict appended to ``history_``).
    certify : {"gap", "exact", "none"}, default="gap"
        How a fit of the fast master ends (see :class:`~maxmargin.StructBoost`): a
        certified relative gap of at most ``gap_tol`` by smoothing continuation, the exact
        1-slack optimum ([Shen2014 Alg. 2] to ``eps_cp``), or the smoothed solution as is.
    gap_tol : float, default=1e-2
        Relative duality gap of ``certify="gap"``.

    Attributes
    ----------
    task_, hypotheses_, slot_weights_, weight_path_, master_, formulation_
        The fitted model, as in :class:`~maxmargin.StructBoost`.
    history_ : list of dict
        Per-iteration records, as in :class:`~maxmargin.StructBoost`.
    objective_ : float
        Final primal objective.
    gap_ : float
        Relative duality gap of the final model over its weak learners.
    n_iter_ : int
        Number of boosting iterations run.
    converged_ : bool
        True when the column-generation test ``gain <= 1 + eps_cg`` was met.
    n_pairs_ : int
        Number of preference pairs ``|S|`` in the training data.
    grouped_ : bool
        True when ``fit`` got query ids; ``score`` then needs them too.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from maxmargin import StructBoostRanker
    >>> from maxmargin.metrics import auc
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> r = StructBoostRanker(C=100, max_iter=20, random_state=0).fit(X, y)
    >>> auc(y, r.decision_function(X)) > 0.95
    True

    References
    ----------
    Shen, Lin & van den Hengel, IEEE TPAMI 2014 [Shen2014], Sec. 3.2; Blaschko, Mittal &
    Rahtu, GCPR 2014 [Blaschko2014] (full citations: docs/references.md).
    """

    def __init__(
        self,
        *,
        C: float = 100.0,
        max_iter: int = 200,
        weak_learner="stump",
        formulation: str = "1-slack",
        graph: str = "complete",
        rescaling: str = "unit",
        top_k: int | None = None,
        normalize: str = "pairs",
        eps_cp: float = 0.01,
        eps_cg: float = 1e-6,
        master: str = "auto",
        tol: float = 1e-4,
        max_time: float | None = None,
        max_cp_rounds: int | None = 10,
        n_jobs: int = 1,
        random_state=None,
        verbose: int = 0,
        callback=None,
        certify: str = "gap",
        gap_tol: float = GAP_TOL,
    ):
        store_params(self, locals())

    # StructBoost parameters this class does not take: the task is built from y (and
    # every solve of the master goes to ``tol``)
    task, warm_start, polish, inner_tol = None, False, True, "fixed"
    columns_per_iter = 1  # one slot: one candidate per search, nothing to add

    _parameter_constraints = {
        **{k: v for k, v in StructBoost._parameter_constraints.items() if k != "task"},
        "formulation": [Options(*RANKER_FORMULATIONS, "m-slack")],
        "graph": [Options(*GRAPHS)],
        "rescaling": [Options(*RESCALINGS)],
        "top_k": [None, POSITIVE_INT],
        "normalize": [Options("pairs", "query")],
        "n_jobs": [POSITIVE_INT],
    }

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        check_options(self.graph, self.rescaling, self.normalize)

    def _search_n_jobs(self):
        return None  # n_jobs is the ranking oracle's thread count

    def _make_task(self, y) -> StructuredTask:
        common = dict(
            graph=self.graph, rescaling=self.rescaling, top_k=self.top_k, normalize=self.normalize
        )
        if self.formulation in ("n-slack", "m-slack"):
            return PairwiseRankingTask(**common)
        return RankingTask(**common, n_jobs=int(self.n_jobs))

    def fit(self, X, y, group=None):
        """Fit the ranking function by column generation.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Relevance: higher ranks higher (0/1 for AUC, grades for ordinal regression).
        group : array-like of shape (n_samples,) or None, default=None
            Group (query) ids; preference pairs only form inside a group.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        group = check_group(group, np.shape(X)[0])
        self._fit(X, y, y_numeric=True, group=group)
        self.grouped_ = group is not None
        self.n_pairs_ = int(self.task_.n_pairs_)
        return self

    def decision_function(self, X):
        """Ranking scores ``f(x)``; higher ranks higher."""
        check_is_fitted(self, "slot_weights_")
        return self._slot_scores(X)[:, 0]

    def predict(self, X):
        """Same as :meth:`decision_function` (the scores are the ranking)."""
        return self.decision_function(X)

    def staged_decision_function(self, X):
        """Scores after each boosting iteration."""
        check_is_fitted(self, "slot_weights_")
        for W in self.weight_path_:
            yield self._slot_scores(X, W)[:, 0]

    def staged_predict(self, X):
        return self.staged_decision_function(X)

    def score(self, X, y, group=None):
        """Pairwise accuracy (the AUC for binary y), averaged over groups."""
        group = check_score_group(self, group, np.shape(X)[0])
        return pairwise_accuracy(np.asarray(y, dtype=np.float64), self.decision_function(X), group)

    _saved_meta = (*StructBoost._saved_meta, ("n_pairs_", int, 0), ("grouped_", bool, False))
