"""Stage-wise binary AdaBoost: Discrete, Real and Gentle (seed 002, Sec. 3.2).

:func:`adaboost_rounds` is the package's one binary AdaBoost: :class:`BinaryAdaBoost`, the
segmenter's unary classifiers and the AdaBoost tracker all run it."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from maxmargin._registry import register
from maxmargin._validation import (
    MONITOR_PARAMS,
    POSITIVE_INT,
    Options,
    store_params,
    validate_params,
)
from maxmargin.exceptions import warn_interrupted
from maxmargin.learners._binary import BinaryClassifier
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.weak import DecisionStump, RealStump
from maxmargin.weak.base import EDGE_CAP, edge_weight
from maxmargin.weak.subset import feature_subset_search

__all__ = ["BinaryAdaBoost", "adaboost_rounds", "discrete_adaboost"]


def adaboost_rounds(weak, prepared, X, ys, *, variant="discrete", sample_weight=None):
    """Stage-wise binary AdaBoost, one round per iteration, until the caller stops.

    ``ys`` in {-1, +1}; the round's sample weights ``D_i`` are proportional to
    ``w_i exp(-y_i F(x_i))`` (``w`` = ``sample_weight``, uniform if None), recomputed from
    the scores in the log domain so long runs cannot overflow.  Each round picks the weak
    learner's best hypothesis ``h`` for the weights ``D y`` and yields ``(h, alpha, edge,
    F)`` after ``F += alpha h``: for ``"discrete"`` the edge ``r = sum_i D_i y_i h(x_i)``
    and ``alpha =`` :func:`~maxmargin.weak.base.edge_weight` ``(r)``; ``"real"`` and
    ``"gentle"`` as in :class:`BinaryAdaBoost` (edge nan).
    """
    n = len(ys)
    F = np.zeros(n)
    base = None if sample_weight is None else np.log(sample_weight)
    while True:
        z = -ys * F if base is None else base - ys * F
        D = np.exp(z - z.max())
        D /= D.sum()
        h, _ = weak.best(prepared, (D * ys)[:, None])
        out = np.asarray(h.evaluate(X)[0], dtype=np.float64)
        edge = float("nan")
        if variant == "discrete":
            edge = float(D @ (ys * out))
            alpha = edge_weight(edge)
        elif variant == "real":
            alpha = _real_scale(out, D, ys, n)
        else:
            alpha = 1.0
        F += alpha * out
        yield h, alpha, edge, F


def discrete_adaboost(weak, X, ys, n_rounds, *, sample_weight=None):
    """At most ``n_rounds`` rounds of discrete AdaBoost (:func:`adaboost_rounds`), ending
    early when no hypothesis has a positive edge (``<= 1e-12``) or one is perfect (edge at
    :data:`~maxmargin.weak.base.EDGE_CAP`).  Returns ``(hypotheses or None, weights)``."""
    hyps, alphas = None, []
    rounds = adaboost_rounds(weak, weak.prepare(X), X, ys, sample_weight=sample_weight)
    for _, (h, alpha, edge, _F) in zip(range(int(n_rounds)), rounds):
        if edge <= 1e-12:
            break
        hyps = h if hyps is None else hyps.concat(h)
        alphas.append(alpha)
        if edge >= EDGE_CAP:
            break
    return hyps, np.asarray(alphas, dtype=np.float64)


def _real_scale(out, D, ys, n):
    """The factor turning the stump's [-1, 1]-scaled outputs back into Real AdaBoost's
    smoothed half log-odds ``1/2 log((P + eps) / (N + eps))`` on its larger side."""
    k = int(np.argmax(np.abs(out)))
    if out[k] == 0:
        return 0.0
    side = out == out[k]
    eps = 1.0 / (2.0 * n)
    P = float(D[side & (ys > 0)].sum())
    N = float(D[side & (ys < 0)].sum())
    return 0.5 * np.log((P + eps) / (N + eps)) / out[k]


@register
class BinaryAdaBoost(Persistent, BinaryClassifier, BaseEstimator):
    """Discrete, Real or Gentle AdaBoost with stumps, minimising ``sum_i exp(-y_i F(x_i))``
    stage-wise (one weak learner added per round, earlier weights frozen).

    With sample weights ``D_i`` proportional to ``exp(-y_i F(x_i))`` (summing to one):

    * ``"discrete"`` (Freund & Schapire): the {-1, +1} stump of largest edge
      ``r = sum_i D_i y_i h(x_i)`` and ``F += 1/2 log((1 + r) / (1 - r)) h``;
    * ``"real"`` (Schapire & Singer): on each side of the best split (the one minimising
      ``sum_sides sqrt(P N)``), ``F += 1/2 log((P + eps) / (N + eps))`` with ``P``, ``N``
      the positive / negative weight on that side and ``eps = 1 / (2n)``;
    * ``"gentle"`` (Friedman, Hastie & Tibshirani): the weighted least-squares stump,
      ``F += (P - N) / (P + N)`` on each side (a Newton step, [Sun2012 eq. 3.26]).

    The model is ``F(x) = sum_t coef_t h_t(x)``, ``h_t`` a stump (``hypotheses_``) with
    outputs in [-1, 1]; ``coef_`` restores the log-odds scale for ``"real"``.

    Parameters
    ----------
    variant : {"discrete", "real", "gentle"}, default="discrete"
    feature_subset : dict or None, default=None
        Fit each round's stump on a feature subset drawn by PLS importance and refreshed
        every few rounds (thesis Sec. 3.4): the keyword arguments of
        :class:`~maxmargin.weak.FeatureSubset`, e.g. ``{"size": 200, "refresh": 25}``.
    max_iter : int, default=100
    max_time : float or None
    verbose : int, default=0
    callback : callable or None

    Attributes
    ----------
    classes_, hypotheses_, coef_, history_ (``iteration``, ``objective`` = mean
    exponential loss, ``dual_bound`` and ``gap`` = nan as in the other stage-wise
    learners, ``t_total``), n_iter_.

    References
    ----------
    Y. Freund, R. E. Schapire, "A decision-theoretic generalization of on-line learning
    and an application to boosting", JCSS 55 (1997).  R. E. Schapire, Y. Singer,
    "Improved boosting algorithms using confidence-rated predictions", Machine Learning 37
    (1999).  J. Friedman, T. Hastie, R. Tibshirani, "Additive logistic regression: a
    statistical view of boosting", Annals of Statistics 28 (2000).
    """

    _parameter_constraints = {
        "variant": [Options("discrete", "real", "gentle")],
        "feature_subset": [None, dict],
        "max_iter": [POSITIVE_INT],
        **MONITOR_PARAMS,
    }

    def __init__(
        self,
        *,
        variant="discrete",
        feature_subset=None,
        max_iter=100,
        max_time=None,
        verbose=0,
        callback=None,
    ):
        store_params(self, locals())

    def fit(self, X, y):
        validate_params(self)
        X, ys = self._binary_data(X, y)
        weak = DecisionStump() if self.variant == "discrete" else RealStump(mode=self.variant)
        weak = feature_subset_search(weak, self.feature_subset)
        rounds = adaboost_rounds(weak, weak.prepare(X), X, ys, variant=self.variant)
        hyps = None
        coefs: list[float] = []
        mon = ConvergenceMonitor(
            "adaboost", verbose=self.verbose, callback=self.callback, max_time=self.max_time,
            fields=("iteration", "objective"),
        )  # fmt: skip
        history = mon.history
        try:
            for it, (h, alpha, _edge, F) in zip(range(int(self.max_iter)), rounds):
                hyps = h if hyps is None else hyps.concat(h)
                coefs.append(float(alpha))
                z = -ys * F
                objective = float(np.exp(z - z.max()).mean() * np.exp(z.max()))
                rec = {
                    "iteration": it,
                    "objective": objective,
                    "dual_bound": float("nan"),
                    "gap": float("nan"),
                }
                if mon.record(rec):
                    break
        except KeyboardInterrupt:
            if not history:
                raise  # nothing completed: nothing to keep
            # keep the rounds that were recorded (a half-done round is dropped)
            hyps = hyps.take(np.arange(len(history)))
            coefs = coefs[: len(history)]
            warn_interrupted(len(history))
        self.hypotheses_ = hyps
        self.coef_ = np.asarray(coefs)
        self.history_ = history
        self.objective_ = history[-1]["objective"]
        self.n_iter_ = len(coefs)
        return self

    def decision_function(self, X):
        X = self._inputs(X)
        return np.asarray(self.hypotheses_.evaluate(X), dtype=np.float64).T @ self.coef_

    _saved_meta = fitted("n_features_in_", "history_", "objective_")
    _saved_arrays = (("classes_", None), ("coef_", np.float64))
    _saved_hypotheses = "hypotheses_"

    def _load_extra(self, meta, arrays):
        if self.coef_.shape != (len(self.hypotheses_),):
            raise ValueError("model file is inconsistent: weights do not match the learners")
        self.n_iter_ = len(self.coef_)
