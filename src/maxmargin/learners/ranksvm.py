"""Structured output ranking SVM trained with 1-slack cutting planes.

Blaschko, Mittal & Rahtu, "An O(n log n) cutting plane algorithm for
structured output ranking", GCPR 2014: minimise

    1/2 ||w||^2 + C * xi   s.t.  xi >= sum_{(i,j) in E} omega_ij * hinge_ij(w)  for all nu,

the 1-slack form of eqs. (2)-(5) (hinge with margin or slack rescaling,
``omega`` the pair weights, see ``normalize``).  Each iteration asks the
O(n log n) oracle of :mod:`maxmargin.solvers.ranking` for the most violated
constraint and re-solves the master QP (:class:`OneSlackQPMaster`).
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin.metrics import ndcg_at_k, ranking_risk
from maxmargin.solvers.qp_master import OneSlackQPMaster
from maxmargin.solvers.ranking import PreferenceGraph, check_options

__all__ = ["RankSVM"]


class RankSVM(BaseEstimator):
    """Linear structured-output ranking SVM (1-slack cutting planes, L2 regulariser).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the (normalised) hinge loss.
    graph : {"complete", "bipartite", "star"}, default="complete"
        Preference graph, built inside each group; see
        :mod:`maxmargin.solvers.ranking`.
    rescaling : {"margin", "slack", "unit"}, default="margin"
        Hinge bound: margin rescaling (eq. 3), slack rescaling (eq. 4), or "unit": a
        unit margin for every ordered pair whatever its loss gap (the classic
        pairwise RankSVM / ordinal-regression hinge, StructBoost eq. 14).
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
    eps : float, default=1e-3
        Stop when the most violated constraint exceeds the working-set slack
        by at most ``eps`` (Joachims et al. 2009), or the duality gap
        (best primal minus master dual) is below ``eps``.
    max_iter : int, default=1000
        Maximum number of cutting-plane iterations.
    max_time : float or None
        Wall-clock limit in seconds.
    n_jobs : int, default=1
        Threads for the oracle's parallel recursion levels.
    score_k : int, default=10
        Cut-off of the NDCG used by :meth:`score`.
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    n_iter_ : int
    history_ : list of dict
        Per iteration: ``iter``, ``primal`` (objective at the current w),
        ``best_primal``, ``dual`` (master dual, a lower bound), ``gap``,
        ``violation``, ``xi``, ``n_planes``, ``oracle_time``, ``master_time``.

    Ranking is invariant to a shift of the scores, so there is no intercept.
    """

    def __init__(
        self,
        C=1.0,
        graph="complete",
        rescaling="margin",
        top_k=None,
        target="relevance",
        normalize="pairs",
        eps=1e-3,
        max_iter=1000,
        max_time=None,
        n_jobs=1,
        score_k=10,
        verbose=0,
    ):
        self.C = C
        self.graph = graph
        self.rescaling = rescaling
        self.top_k = top_k
        self.target = target
        self.normalize = normalize
        self.eps = eps
        self.max_iter = max_iter
        self.max_time = max_time
        self.n_jobs = n_jobs
        self.score_k = score_k
        self.verbose = verbose

    def _check_params(self):
        if not (isinstance(self.C, numbers.Real) and np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a positive finite number, got {self.C!r}")
        check_options(self.graph, self.rescaling, self.normalize)
        if self.target not in ("relevance", "loss"):
            raise ValueError(f"target must be 'relevance' or 'loss', got {self.target!r}")
        if not self.eps > 0:
            raise ValueError(f"eps must be > 0, got {self.eps!r}")
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter!r}")

    def _losses(self, y):
        return y.max() - y if self.target == "relevance" else y

    def fit(self, X, y, group=None):
        """Fit on features X, grades or losses y, and optional group (query) ids."""
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or inf")
        n, d = X.shape
        if group is not None:
            group = np.asarray(group)
            if group.shape != (n,):
                raise ValueError(f"group has shape {group.shape}, expected ({n},)")
        pg = PreferenceGraph(self._losses(y), graph=self.graph, group=group, top_k=self.top_k)
        if pg.edges_per_group.sum() == 0:
            raise ValueError("the preference graph has no edges (all losses tied within groups)")
        w_group, w_sample = pg.hinge_weights(self.normalize)

        master = OneSlackQPMaster(C=float(self.C), dim=d)
        w = np.zeros(d)
        xi = 0.0
        dual = 0.0
        best_primal = np.inf
        self.history_ = []
        t_start = time.perf_counter()
        converged = False
        for it in range(int(self.max_iter)):
            t0 = time.perf_counter()
            alpha, delta_g = pg.most_violated(X @ w, rescaling=self.rescaling, n_jobs=self.n_jobs)
            a = X.T @ (alpha * w_sample)
            b = float(delta_g @ w_group)
            violation = max(0.0, b - float(a @ w))  # hinge bound at w
            t_oracle = time.perf_counter() - t0
            primal = 0.5 * float(w @ w) + self.C * violation
            best_primal = min(best_primal, primal)
            stop = violation <= xi + self.eps or best_primal - dual <= self.eps
            t_master = 0.0
            if not stop:
                t0 = time.perf_counter()
                master.add_plane(a, b)
                sol = master.solve()
                t_master = time.perf_counter() - t0
                w, xi, dual = sol.w, sol.xi, sol.dual
            self.history_.append(
                {
                    "iter": it,
                    "primal": primal,
                    "best_primal": best_primal,
                    "dual": dual,
                    "gap": best_primal - dual,
                    "violation": violation,
                    "xi": xi,
                    "n_planes": master.n_planes,
                    "oracle_time": t_oracle,
                    "master_time": t_master,
                }
            )
            if self.verbose:
                print(
                    f"[RankSVM] it {it:4d} primal {primal:.6g} gap {best_primal - dual:.3g} "
                    f"viol {violation:.4g} xi {xi:.4g} planes {master.n_planes}"
                )
            if stop:
                converged = True
                break
            if self.max_time is not None and time.perf_counter() - t_start > self.max_time:
                break
        if not converged:
            warnings.warn(
                f"RankSVM did not converge in {len(self.history_)} iterations "
                f"(gap {best_primal - dual:.3g})",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.coef_ = w
        self.n_iter_ = len(self.history_)
        return self

    def decision_function(self, X):
        """Ranking scores ``<w, x>``; higher means ranked higher (lower loss)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_

    def predict(self, X):
        """Same as :meth:`decision_function` (a ranking is the prediction)."""
        return self.decision_function(X)

    def score(self, X, y, group=None):
        """Greater is better: mean NDCG@``score_k`` over groups when y are
        relevance grades, minus the pairwise ranking risk (eq. 1) when y are
        losses."""
        s = self.decision_function(X)
        y = np.asarray(y, dtype=np.float64)
        if self.target == "relevance":
            return ndcg_at_k(y, s, k=self.score_k, group=group)
        return -ranking_risk(y, s, group=group)
