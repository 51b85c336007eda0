"""Shared machinery of the multi-class boosting estimators (MultiBoost family, AdaBoost
baselines): validation, per-iteration history, staged prediction, pickle-free persistence.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._validation import (
    MONITOR_PARAMS,
    POSITIVE_INT,
    RANDOM_STATE,
    as_generator,
    validate_params,
)
from maxmargin.exceptions import warn_interrupted
from maxmargin.learners._binary import SparseInput, fit_classes
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.weak import WeakLearner, is_weak_learner_name, make_weak_learner

__all__ = ["BoostingBuilder", "MultiClassBoosting"]

_CHUNK = 256  # weak learners evaluated at a time at prediction (bounds memory)


def _as_output_matrix(outputs) -> np.ndarray:
    """Weak-learner outputs as int8 when they are in {-1, 0, +1} (8x less memory)."""
    outputs = np.asarray(outputs)
    if np.all(np.isin(outputs, (-1.0, 0.0, 1.0))):
        return outputs.astype(np.int8)
    return outputs.astype(np.float32)


class BoostingBuilder:
    """Model under construction: weak learners, variables (weak learner, output column)
    and the log of weight changes per iteration (for staged prediction), plus the
    validation scores kept up to date incrementally."""

    def __init__(self, n_outputs: int, X_val=None) -> None:
        self.R = n_outputs
        self.hyps = None
        self.n_hyp = 0
        self.var_hyp: list[np.ndarray] = []
        self.var_out: list[np.ndarray] = []
        self.n_vars = 0
        self.coef = np.zeros(0)
        self.log: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.X_val = X_val
        if X_val is not None:  # validation outputs, row 0 the constant; grown by doubling
            self.H_val = np.ones((64, X_val.shape[0]), dtype=np.float32)
            self.raw_val = np.zeros((X_val.shape[0], n_outputs))

    def add_hypotheses(self, hyps) -> np.ndarray:
        self.hyps = hyps if self.hyps is None else self.hyps.concat(hyps)
        k = len(hyps)
        self.n_hyp += k
        if self.X_val is not None:
            if self.n_hyp + 1 > len(self.H_val):
                grown = np.empty((2 * (self.n_hyp + 1), self.H_val.shape[1]), np.float32)
                grown[: len(self.H_val)] = self.H_val
                self.H_val = grown
            self.H_val[self.n_hyp + 1 - k : self.n_hyp + 1] = hyps.evaluate(self.X_val)
        return np.arange(self.n_hyp - k, self.n_hyp)

    def add_vars(self, hyp, out) -> np.ndarray:
        """Variables (weak learner ``hyp`` or -1 for the constant 1, output column ``out``)."""
        hyp = np.atleast_1d(np.asarray(hyp, dtype=np.int64))
        out = np.broadcast_to(np.asarray(out, dtype=np.int64), hyp.shape).copy()
        self.var_hyp.append(hyp)
        self.var_out.append(out)
        self.n_vars += len(hyp)
        self.coef = np.concatenate([self.coef, np.zeros(len(hyp))])
        return np.arange(self.n_vars - len(hyp), self.n_vars)

    def set_coef(self, iteration: int, coef) -> None:
        """Record the weights after ``iteration`` (all variables so far)."""
        coef = np.asarray(coef, dtype=np.float64)
        changed = np.flatnonzero(coef != self.coef)
        delta = coef[changed] - self.coef[changed]
        self.coef = coef.copy()
        self.log.append((iteration, changed, coef[changed]))
        if self.X_val is not None and len(changed):
            hyp = np.concatenate(self.var_hyp)[changed] + 1
            out = np.concatenate(self.var_out)[changed]
            M = np.zeros((len(changed), self.R))
            M[np.arange(len(changed)), out] = delta
            self.raw_val += self.H_val[hyp].T.astype(np.float64) @ M

    def finish(self, n_features: int, hypotheses_class) -> dict:
        """Final arrays, dropping weak learners and variables that never had weight."""
        var_hyp = np.concatenate(self.var_hyp) if self.var_hyp else np.zeros(0, np.int64)
        var_out = np.concatenate(self.var_out) if self.var_out else np.zeros(0, np.int64)
        it = np.concatenate(
            [np.full(len(c), i, np.int64) for i, c, _ in self.log] or [np.zeros(0, np.int64)]
        )
        var = np.concatenate([c for _, c, _ in self.log] or [np.zeros(0, np.int64)])
        val = np.concatenate([v for _, _, v in self.log] or [np.zeros(0)])
        used_vars = np.unique(var)
        used_hyp = np.unique(var_hyp[used_vars][var_hyp[used_vars] >= 0])
        hyp_map = np.full(self.n_hyp + 1, -1, np.int64)
        hyp_map[used_hyp + 1] = np.arange(len(used_hyp))
        var_map = np.full(self.n_vars, -1, np.int64)
        var_map[used_vars] = np.arange(len(used_vars))
        hyps = (
            self.hyps.take(used_hyp)
            if self.hyps is not None
            else hypotheses_class.empty(n_features)
        )
        return {
            "hypotheses": hyps,
            "var_hyp": hyp_map[var_hyp[used_vars] + 1],
            "var_out": var_out[used_vars],
            "coef": self.coef[used_vars],
            "path_iter": it,
            "path_var": var_map[var],
            "path_value": val,
        }


class MultiClassBoosting(SparseInput, Persistent, ClassifierMixin, BaseEstimator):
    """Shared machinery of the multi-class boosting estimators of this package.

    A fitted model is a batch of weak learners ``hypotheses_`` and variables ``j`` with
    weight ``coef_[j]`` on weak learner ``var_hyp_[j]`` (-1: the constant 1) in raw output
    column ``var_out_[j]``; ``_decode`` maps raw outputs to class scores.  The weight
    changes of every iteration (``path_*``) give :meth:`staged_predict`.
    """

    # -- hooks ------------------------------------------------------------------------------
    def _prepare_fit(self, n_classes: int) -> None:
        """Called once the classes are known, before boosting starts."""

    def _n_outputs(self, n_classes: int) -> int:
        return n_classes

    def _decode(self, raw: np.ndarray) -> np.ndarray:
        return raw

    def _boost(self, X, y, n_classes, weak, builder, record):  # pragma: no cover - abstract
        raise NotImplementedError

    def _extra_state(self):
        return {}, {}

    def _set_extra_state(self, meta, arrays) -> None:
        pass

    # -- parameters ---------------------------------------------------------------------
    _parameter_constraints = {
        "max_iter": [POSITIVE_INT],
        "weak_learner": [str, WeakLearner],
        **MONITOR_PARAMS,
        "random_state": RANDOM_STATE,
    }

    def _validate_hyperparameters(self) -> None:
        validate_params(self)
        make_weak_learner(self.weak_learner)

    def _rng(self) -> np.random.Generator:
        return as_generator(self.random_state)

    # -- fitting ------------------------------------------------------------------------
    def fit(self, X, y, eval_set=None):
        """Fit the boosted classifier.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs; CSR / CSC input is read by the weak learners as is.
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).
        eval_set : tuple (X_val, y_val) or None, default=None
            Validation data whose error is recorded in ``history_`` (``val_error``) at
            every iteration; kept up to date incrementally, so it costs little.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._validate_hyperparameters()
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=["csr", "csc"])
        y_idx = fit_classes(self, y)
        K = len(self.classes_)
        X_val = y_val = None
        if eval_set is not None:
            if not (isinstance(eval_set, (tuple, list)) and len(eval_set) == 2):
                raise ValueError("eval_set must be a pair (X_val, y_val)")
            X_val = validate_data(
                self, eval_set[0], dtype=np.float64, reset=False, accept_sparse=["csr", "csc"]
            )
            y_val = np.asarray(eval_set[1])
            if y_val.shape != (X_val.shape[0],):
                raise ValueError("eval_set: y_val must be 1-d with one label per row of X_val")
        weak = make_weak_learner(self.weak_learner)
        self._prepare_fit(K)
        builder = BoostingBuilder(self._n_outputs(K), X_val)
        monitor = ConvergenceMonitor(
            type(self).__name__, verbose=self.verbose, callback=self.callback,
            max_time=self.max_time,
        )  # fmt: skip
        history = monitor.history

        def record(iteration, objective, raw_train, **extra):
            pred = np.argmax(self._decode(raw_train), axis=1)
            rec = {  # the shared history schema (docs/architecture.md)
                "iteration": iteration,
                "objective": float(objective),
                "dual_bound": float(extra.pop("dual_bound", np.nan)),
                "gap": float("nan"),
                "train_error": float(np.mean(pred != y_idx)),
                "n_weak": int(builder.n_hyp),
            }
            if np.isfinite(rec["dual_bound"]):
                rec["gap"] = (rec["objective"] - rec["dual_bound"]) / max(abs(objective), 1e-300)
            if X_val is not None:
                pv = self.classes_[np.argmax(self._decode(builder.raw_val), axis=1)]
                rec["val_error"] = float(np.mean(pv != y_val))
            rec.update(
                {
                    k: (float(v) if isinstance(v, (float, np.floating)) else v)
                    for k, v in extra.items()
                }
            )
            return monitor.record(rec)

        try:
            self.converged_ = bool(self._boost(X, y_idx, K, weak, builder, record))
        except KeyboardInterrupt:
            if not history:
                raise  # interrupted before the first iteration: nothing to keep
            # the builder holds the weights of the last completed iteration (variables
            # added since have weight 0)
            self.converged_ = False
            warn_interrupted(len(history))
        state = builder.finish(X.shape[1], weak.hypotheses_class)
        self.hypotheses_ = state.pop("hypotheses")
        for k, v in state.items():
            setattr(self, f"{k}_", v)
        self.history_ = history
        self.n_iter_ = len(history)
        self.objective_ = history[-1]["objective"] if history else float("nan")
        return self

    # -- prediction -----------------------------------------------------------------------
    def _weight_matrix(self, coef) -> np.ndarray:
        W = np.zeros((len(self.hypotheses_) + 1, self._n_outputs(len(self.classes_))))
        np.add.at(W, (self.var_hyp_ + 1, self.var_out_), coef)
        return W

    def _raw(self, X) -> np.ndarray:
        W = self._weight_matrix(self.coef_)
        raw = np.repeat(W[:1], X.shape[0], axis=0)
        for s in range(0, len(self.hypotheses_), _CHUNK):
            idx = np.arange(s, min(s + _CHUNK, len(self.hypotheses_)))
            raw += self.hypotheses_.take(idx).evaluate(X).T @ W[idx + 1]
        return raw

    def _check_X(self, X):
        check_is_fitted(self, "coef_")
        return validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=["csr", "csc"])

    def decision_function(self, X):
        """Class scores (n, K); for two classes the score of ``classes_[1]`` (n,)."""
        scores = self._decode(self._raw(self._check_X(X)))
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict(self, X):
        scores = self._decode(self._raw(self._check_X(X)))
        return self.classes_[np.argmax(scores, axis=1)]

    def staged_decision_function(self, X):
        """Class scores (n, K) after each boosting iteration."""
        X = self._check_X(X)
        H = [np.ones((1, X.shape[0]), dtype=np.float32)]
        for s in range(0, len(self.hypotheses_), _CHUNK):
            idx = np.arange(s, min(s + _CHUNK, len(self.hypotheses_)))
            H.append(_as_output_matrix(self.hypotheses_.take(idx).evaluate(X)))
        H = np.concatenate(H)
        R = self._n_outputs(len(self.classes_))
        raw = np.zeros((X.shape[0], R))
        w = np.zeros(len(self.coef_))
        bounds = np.searchsorted(self.path_iter_, np.arange(self.n_iter_ + 1))
        for t in range(self.n_iter_):
            sl = slice(bounds[t], bounds[t + 1])
            var, val = self.path_var_[sl], self.path_value_[sl]
            if len(var):
                M = np.zeros((len(var), R))
                np.add.at(M, (np.arange(len(var)), self.var_out_[var]), val - w[var])
                w[var] = val
                raw += H[self.var_hyp_[var] + 1].T.astype(np.float64) @ M
            yield self._decode(raw)

    def staged_predict(self, X):
        """Predicted labels after each boosting iteration (``n_iter_`` arrays)."""
        for scores in self.staged_decision_function(X):
            yield self.classes_[np.argmax(scores, axis=1)]

    # -- persistence ----------------------------------------------------------------------
    _saved_meta = fitted("n_features_in_", "history_", "objective_", "n_iter_", "converged_")
    _saved_arrays = (
        ("classes_", None),
        ("var_hyp_", np.int64),
        ("var_out_", np.int64),
        ("coef_", np.float64),
        ("path_iter_", np.int64),
        ("path_var_", np.int64),
        ("path_value_", np.float64),
    )
    _saved_hypotheses = "hypotheses_"

    def _save_extra(self, meta, arrays):
        if self.classes_.dtype == object:
            arrays["classes"] = self.classes_.astype(str)
        extra_meta, extra_arrays = self._extra_state()
        meta["extra"] = extra_meta
        arrays.update({f"extra.{k}": v for k, v in extra_arrays.items()})

    @classmethod
    def _loaded_params(cls, params, task):
        if not is_weak_learner_name(params.get("weak_learner")):
            params["weak_learner"] = "stump"
        return params

    def _load_extra(self, meta, arrays):
        self._set_extra_state(
            meta.get("extra", {}), {k[6:]: v for k, v in arrays.items() if k.startswith("extra.")}
        )
        n_hyp, R = len(self.hypotheses_), self._n_outputs(len(self.classes_))
        n = len(self.coef_)
        if (
            len(self.var_hyp_) != n
            or len(self.var_out_) != n
            or np.any(self.var_hyp_ >= n_hyp)
            or np.any(self.var_hyp_ < -1)
            or np.any(self.var_out_ < 0)
            or np.any(self.var_out_ >= R)
            or np.any(self.path_var_ < 0)
            or np.any(self.path_var_ >= max(n, 1))
            or np.any(np.diff(self.path_iter_) < 0)
        ):
            raise ValueError(
                "model file is inconsistent: variables do not match the weak learners and classes"
            )
