"""Totally-corrective boosting (seed 002, Ch. 3): column generation over weak learners with
every weight re-optimised after each addition."""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from maxmargin._registry import register
from maxmargin._validation import (
    MONITOR_PARAMS,
    POSITIVE,
    POSITIVE_INT,
    Options,
    store_params,
    validate_params,
)
from maxmargin.exceptions import warn_interrupted
from maxmargin.learners._binary import BinaryClassifier
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.solvers.tc_boost import (
    LOSSES,
    dual_objective,
    loss_weights,
    primal_objective,
    solve_master,
)
from maxmargin.weak import WeakLearner, is_weak_learner_name, make_weak_learner
from maxmargin.weak.subset import feature_subset_search

__all__ = ["TCBoostClassifier"]


@register
class TCBoostClassifier(Persistent, BinaryClassifier, BaseEstimator):
    """Binary totally-corrective boosting with L1 or L2 regularisation.

    Minimises over the weights ``w >= 0`` of weak learners ``h_t``::

        R(w) + C * mean_i L(y_i F(x_i)),   F(x) = sum_t w_t h_t(x),

    ``R = ||w||_1`` (``penalty="l1"``) or ``1/2 ||w||^2`` (``"l2"``), ``L`` the hinge,
    exponential or logistic loss ([Sun2012 eqs. 3.7/3.8]).  Each round prices the weak
    learners with the sample weights ``a_i = -C/n L'(y_i F(x_i))`` (for the hinge: the
    master's multipliers), adds the one maximising ``sum_i a_i y_i h(x_i)`` ([Sun2012 eq. 3.6]) and
    re-solves for all weights (see :mod:`maxmargin.solvers.tc_boost`).  With L1 and the
    hinge this is LPBoost, and the optimum equals
    :class:`~maxmargin.StructBoostClassifier`'s on two classes (same ``C``).

    L1 stops when no weak learner has ``gain > 1 + eps_cg`` (no violated dual constraint);
    the recorded ``dual_bound`` then holds for the problem over the whole weak-learner
    class (for exact searches such as ``"stump"``).  L2 has no such rule: it runs
    ``max_iter`` rounds, and its ``gap`` is that of the restricted master.
    ``weak_learner="real_stump"`` / ``"realboost_stump"`` give the totally-corrective
    AdaBoost with continuous (Gentle / Real) weak learners of Sec. 3.3.

    Parameters
    ----------
    loss : {"hinge", "exp", "logistic"}, default="exp"
    penalty : {"l1", "l2"}, default="l1"
    C : float, default=10.0
        Weight of the mean loss.  With L1, no weak learner enters unless its gain exceeds
        1, which needs ``C > 1`` for learners with outputs in [-1, 1] and the hinge.
    weak_learner : str or WeakLearner, default="stump"
    feature_subset : dict or None, default=None
        Search the weak learners over a feature subset drawn by PLS importance and
        refreshed every few rounds (thesis Sec. 3.4): the keyword arguments of
        :class:`~maxmargin.weak.FeatureSubset`, e.g. ``{"size": 200, "refresh": 25}``.
        Before stopping, every feature is priced once, so convergence and the dual bound
        still hold for the whole weak-learner class (rounds priced on a subset record
        ``dual_bound = nan``, ``priced_all = False``).
    max_iter : int, default=100
        Maximum number of weak learners.
    eps_cg : float, default=1e-6
        L1 column-generation tolerance.
    max_time : float or None
    verbose : int, default=0
    callback : callable or None

    Attributes
    ----------
    classes_, hypotheses_ (the weak learners), coef_ (their weights), objective_,
    history_ (per round ``iteration``, ``objective``, ``dual_bound``, ``gap``, ``gain``,
    ``n_weak``, ``t_total``), n_iter_, converged_.

    References
    ----------
    A. Demiriz, K. P. Bennett, J. Shawe-Taylor, "Linear programming boosting via column
    generation", Machine Learning 46 (2002).  M. K. Warmuth, J. Liao, G. Rätsch,
    "Totally corrective boosting algorithms that maximize the margin", ICML 2006.
    C. Shen, H. Li, "On the dual formulation of boosting algorithms", IEEE TPAMI 32
    (2010).  Thesis seed 002, Sec. 3.1 and 3.3.
    """

    _parameter_constraints = {
        "loss": [Options(*LOSSES)],
        "penalty": [Options("l1", "l2")],
        "C": [POSITIVE],
        "weak_learner": [str, WeakLearner],
        "feature_subset": [None, dict],
        "max_iter": [POSITIVE_INT],
        "eps_cg": [POSITIVE],
        **MONITOR_PARAMS,
    }

    def __init__(
        self,
        *,
        loss="exp",
        penalty="l1",
        C=10.0,
        weak_learner="stump",
        feature_subset=None,
        max_iter=100,
        eps_cg=1e-6,
        max_time=None,
        verbose=0,
        callback=None,
    ):
        store_params(self, locals())

    def fit(self, X, y):
        """Fit on X (dense or CSR) and binary labels y."""
        validate_params(self)
        weak = make_weak_learner(self.weak_learner)
        search = feature_subset_search(weak, self.feature_subset)
        X, ys = self._binary_data(X, y)
        n = X.shape[0]
        c = float(self.C) / n
        loss, penalty = self.loss, self.penalty
        prepared = search.prepare(X)
        full_prepared = prepared if search is weak else None
        hyps = None
        M = np.empty((n, 0))
        w = np.empty(0)
        a = loss_weights(np.zeros(n), c, loss)
        mon = ConvergenceMonitor(
            "tcboost",
            verbose=self.verbose,
            callback=self.callback,
            fields=("iteration", "objective", "gap", "gain"),
        )
        history = mon.history
        t0 = time.perf_counter()
        converged = False
        it = 0
        interrupted = False
        try:
            while True:
                new, gain = search.best(prepared, (a * ys)[:, None])
                gain = float(gain[0])
                priced_all = search is weak
                if not priced_all and (
                    (penalty == "l1" and gain <= 1.0 + self.eps_cg) or gain <= 1e-12
                ):
                    # the subset has nothing left: price every feature before stopping
                    if full_prepared is None:
                        full_prepared = weak.prepare(X)
                    new, gain = weak.best(full_prepared, (a * ys)[:, None])
                    gain, priced_all = float(gain[0]), True
                    prepared.features = None  # redraw the subset next round
                g = M.T @ a
                objective = primal_objective(M, w, c, loss, penalty)
                # the dual bound needs the best gain over all weak learners (a subset's
                # best is only a lower bound on it)
                dual = (
                    dual_objective(a, g, c, loss, penalty, gain_max=gain)
                    if priced_all
                    else float("nan")
                )
                rec = {
                    "iteration": it,
                    "objective": objective,
                    "dual_bound": dual,
                    "gap": (objective - dual) / max(abs(objective), 1e-12),
                    "gain": gain,
                    "priced_all": priced_all,
                    "n_weak": int(M.shape[1]),
                    "t_total": time.perf_counter() - t0,
                }
                mon.record(rec)
                if priced_all and penalty == "l1" and gain <= 1.0 + self.eps_cg:
                    converged = True
                    break
                if priced_all and gain <= 1e-12:  # nothing left to gain (data fitted exactly)
                    converged = True
                    break
                if it >= self.max_iter:
                    break
                if self.max_time is not None and rec["t_total"] >= self.max_time:
                    break
                col = new.evaluate(X)[0]
                hyps = new if hyps is None else hyps.concat(new)
                M = np.column_stack([M, ys * col])
                w, a = solve_master(M, c, loss, penalty, w0=w, a0=a)
                it += 1
        except KeyboardInterrupt:
            if not history:
                raise  # nothing completed: nothing to keep
            interrupted, converged = True, False
            # keep the last solved master: its weights cover the first len(w) learners
            if hyps is not None and len(hyps) > len(w):
                hyps = hyps.take(np.arange(len(w)))
            warn_interrupted(len(history))
        if penalty == "l1" and not converged and not interrupted:
            warnings.warn(
                f"TCBoostClassifier stopped after {it} weak learners with a violated dual "
                f"constraint (gain {history[-1]['gain']:.4g} > 1)",
                ConvergenceWarning,
                stacklevel=2,
            )
        if hyps is None:
            hyps = weak.hypotheses_class.empty(X.shape[1])
        self.hypotheses_ = hyps
        self.coef_ = np.asarray(w, dtype=np.float64)
        self.objective_ = float(history[-1]["objective"])
        self.history_ = history
        self.n_iter_ = len(w)
        self.converged_ = bool(converged)
        return self

    def decision_function(self, X):
        """``F(x) = sum_t w_t h_t(x)``; positive means ``classes_[1]``."""
        X = self._inputs(X)
        if len(self.hypotheses_) == 0:
            return np.zeros(X.shape[0])
        return np.asarray(self.hypotheses_.evaluate(X), dtype=np.float64).T @ self.coef_

    # -------------------------------------------------------------- persistence
    _saved_meta = fitted("n_features_in_", "history_", "objective_", "n_iter_", "converged_")
    _saved_arrays = (("classes_", None), ("coef_", np.float64))
    _saved_hypotheses = "hypotheses_"

    @classmethod
    def _loaded_params(cls, params, task):
        if not is_weak_learner_name(params.get("weak_learner")):  # an instance was stored by name
            params["weak_learner"] = "stump"
        return params

    def _load_extra(self, meta, arrays):
        if self.coef_.shape != (len(self.hypotheses_),):
            raise ValueError("model file is inconsistent: weights do not match the learners")
