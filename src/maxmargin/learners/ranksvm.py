"""Structured output ranking SVM: a thin shell over :func:`maxmargin.solvers.ranking.fit_ranksvm`.

Blaschko, Mittal & Rahtu, "An O(n log n) cutting plane algorithm for structured output
ranking", GCPR 2014.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import (
    MONITOR_PARAMS,
    POSITIVE,
    POSITIVE_INT,
    Options,
    check_group,
    check_score_group,
    store_params,
    validate_params,
)
from maxmargin.inference.ranking import GRAPHS, RESCALINGS, PreferenceGraph, check_options
from maxmargin.learners._binary import SparseInput
from maxmargin.learners._persist import Persistent, fitted, store_solution
from maxmargin.metrics import ndcg_at_k, ranking_risk
from maxmargin.solvers.ranking import fit_ranksvm

__all__ = ["RankSVM"]


@register
class RankSVM(SparseInput, Persistent, BaseEstimator):
    """Linear structured-output ranking SVM (1-slack cutting planes, L2 regulariser).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the (normalised) hinge loss.
    graph : {"complete", "bipartite", "star"}, default="complete"
        Preference graph, built inside each group; see :mod:`maxmargin.inference.ranking`.
    rescaling : {"margin", "slack", "unit"}, default="margin"
        Hinge bound: margin rescaling ([Blaschko2014 eq. 3]), slack rescaling
        ([Blaschko2014 eq. 4]), or "unit": a unit margin for every ordered pair whatever its loss
        gap (the classic pairwise RankSVM / ordinal-regression hinge, [Shen2014 eq. 14]).
    top_k : int or None, default=None
        Upper-side size of the "bipartite" graph per group (None: all samples
        better than the group's worst level vs that level).
    target : {"relevance", "loss"}, default="relevance"
        Whether ``y`` holds relevance grades (higher is better; the loss is
        ``max(y) - y``) or structured losses Delta_i (lower is better).
    normalize : {"pairs", "query"}, default="pairs"
        Pair weights: ``"pairs"`` divides the hinge sum by the total number of
        edges; ``"query"`` gives every group with edges the same total weight
        (hinge averaged inside a group, then over groups).
    tol : float, default=1e-3
        Stop at this relative duality gap (best primal minus the master's dual, over
        the best primal).
    max_iter : int, default=1000
        Maximum number of cutting-plane rounds.
    max_time : float or None, default=None
        Wall-clock limit in seconds.
    n_jobs : int, default=1
        Threads for the oracle's parallel recursion levels.
    score_k : int, default=10
        Cut-off of the NDCG used by :meth:`score`.
    verbose : int, default=0
        Print progress when > 0.
    callback : callable or None, default=None
        Called with each history record.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The weight vector; there is no intercept (a ranking is invariant to a shift of
        the scores).
    n_iter_ : int
        Number of cutting-plane rounds run.
    history_ : list of dict
        Per round: ``objective`` (best primal), ``dual_bound`` (master dual), ``gap``
        (relative), ``violation`` (hinge bound at the round's w), ``xi``, ``n_planes``,
        ``t_oracle``, ``t_master``, ``t_total``.
    objective_ : float
        Best primal objective.
    dual_objective_ : float
        Dual objective of the final master.
    converged_ : bool
        True when the ``tol`` test was met.
    grouped_ : bool
        True when ``fit`` got query ids; ``score`` then needs them too.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from maxmargin import RankSVM
    >>> from maxmargin.metrics import auc
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> r = RankSVM(C=10.0, rescaling="unit").fit(X, y)
    >>> auc(y, r.decision_function(X)) > 0.95
    True

    References
    ----------
    Blaschko, Mittal & Rahtu, "An O(n log n) cutting plane algorithm for structured
    output ranking", GCPR 2014 [Blaschko2014]; Joachims, KDD 2006
    [Joachims2006] and Herbrich et al. 2000 [Herbrich2000] for the "unit" hinge
    (full citations: docs/references.md).
    """

    _parameter_constraints = {
        "C": [POSITIVE],
        "graph": [Options(*GRAPHS)],
        "rescaling": [Options(*RESCALINGS)],
        "top_k": [None, POSITIVE_INT],
        "target": [Options("relevance", "loss")],
        "normalize": [Options("pairs", "query")],
        "tol": [POSITIVE],
        "max_iter": [POSITIVE_INT],
        **MONITOR_PARAMS,
        "n_jobs": [POSITIVE_INT],
        "score_k": [POSITIVE_INT],
    }

    def __init__(
        self,
        *,
        C=1.0,
        graph="complete",
        rescaling="margin",
        top_k=None,
        target="relevance",
        normalize="pairs",
        tol=1e-3,
        max_iter=1000,
        max_time=None,
        n_jobs=1,
        score_k=10,
        verbose=0,
        callback=None,
    ):
        store_params(self, locals())

    def _losses(self, y):
        return y.max() - y if self.target == "relevance" else y

    def fit(self, X, y, group=None):
        """Fit the ranking SVM by 1-slack cutting planes.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs (at least two samples).
        y : array-like of shape (n_samples,)
            Relevance grades (higher ranks higher) or, with ``target="loss"``,
            structured losses (lower ranks higher).
        group : array-like of shape (n_samples,) or None, default=None
            Group (query) ids; the preference graph is built inside each group.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        validate_params(self)
        check_options(self.graph, self.rescaling, self.normalize)
        X, y = validate_data(self, X, y, accept_sparse="csr", y_numeric=True, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"RankSVM needs at least 2 samples to rank, got {n} sample")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or inf")
        group = check_group(group, n)
        pg = PreferenceGraph(
            self._losses(y), graph=self.graph, group=group, top_k=self.top_k, n_jobs=self.n_jobs
        )
        if pg.edges_per_group.sum() == 0:
            raise ValueError("the preference graph has no edges (all losses tied within groups)")
        res = fit_ranksvm(
            X,
            pg,
            float(self.C),
            rescaling=self.rescaling,
            normalize=self.normalize,
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            max_time=self.max_time,
            n_jobs=int(self.n_jobs),
            callback=self.callback,
            verbose=self.verbose,
        )
        self.coef_ = res.w
        store_solution(self, res)
        self.grouped_ = group is not None
        return self

    def decision_function(self, X):
        """Ranking scores ``<w, x>``; higher means ranked higher (lower loss)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        return np.asarray(X @ self.coef_)

    def predict(self, X):
        """Same as :meth:`decision_function` (a ranking is the prediction)."""
        return self.decision_function(X)

    def score(self, X, y, group=None):
        """Greater is better: mean NDCG@``score_k`` over groups when y are
        relevance grades, minus the pairwise ranking risk ([Blaschko2014 eq. 1]) when y are
        losses."""
        s = self.decision_function(X)
        group = check_score_group(self, group, len(s))
        y = np.asarray(y, dtype=np.float64)
        if self.target == "relevance":
            return ndcg_at_k(y, s, k=self.score_k, group=group)
        return -ranking_risk(y, s, group=group)

    # -- persistence ---------------------------------------------------------------------
    _saved_meta = (
        *fitted("n_features_in_", "history_", "objective_", "dual_objective_", "converged_"),
        *fitted("n_iter_"),
        ("grouped_", bool, False),
    )
    _saved_arrays = (("coef_", np.float64),)

    def _load_extra(self, meta, arrays):
        if self.coef_.shape != (self.n_features_in_,):
            raise ValueError("model file is inconsistent: weights do not match the features")
        if not np.all(np.isfinite(self.coef_)):
            raise ValueError("model file is inconsistent: non-finite weights")
