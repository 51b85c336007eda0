"""Totally-corrective multi-class boosting: MultiBoost-cw and MultiBoost.

* :class:`MultiBoostCW` -- class-wise weak learners (Lin, Shen, van den Hengel, Suter,
  ACCV 2012): every column-generation iteration adds K weak learners, one per class, from
  the dual (4); the master (2) is solved by fast coordinate descent (FCD, Alg. 2).
* :class:`MultiBoost` -- one weak learner shared by all classes (Shen & Hao, CVPR 2011;
  eq. 6 of Lin et al.), master solved by L-BFGS-B or FCD.

Both minimise ``||w||_1 + C/p sum_i sum_{y != y_i} exp(F_y(x_i) - F_{y_i}(x_i))``, see
:mod:`maxmargin.solvers.fcd`.  The module also holds the shared estimator machinery
(validation, per-iteration history, staged prediction, pickle-free persistence) used by
the AdaBoost baselines in :mod:`maxmargin.learners.adaboost`.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._validation import check_number as _check_number
from maxmargin._validation import json_params as _json_params
from maxmargin.solvers.fcd import MasterProblem
from maxmargin.weak import HYPOTHESES, WEAK_LEARNERS, make_weak_learner

__all__ = ["MultiBoost", "MultiBoostCW"]

_CHUNK = 256  # weak learners evaluated at a time at prediction (bounds memory)


def _as_output_matrix(outputs) -> np.ndarray:
    """Weak-learner outputs as int8 when they are in {-1, 0, +1} (8x less memory)."""
    outputs = np.asarray(outputs)
    if np.all(np.isin(outputs, (-1.0, 0.0, 1.0))):
        return outputs.astype(np.int8)
    return outputs.astype(np.float32)


class _Builder:
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


class _MultiClassBoosting(ClassifierMixin, BaseEstimator):
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

    # -- common parameters --------------------------------------------------------------
    def _validate_common(self) -> None:
        _check_number("max_iter", self.max_iter, low=1, low_open=False, integer=True)
        _check_number("max_time", self.max_time, low=0, allow_none=True)
        if self.callback is not None and not callable(self.callback):
            raise ValueError("callback must be callable or None")
        make_weak_learner(self.weak_learner)

    def _validate_hyperparameters(self) -> None:
        self._validate_common()

    def _rng(self) -> np.random.Generator:
        rs = self.random_state
        if isinstance(rs, np.random.Generator):
            return rs
        if isinstance(rs, np.random.RandomState):
            return np.random.default_rng(rs.randint(2**31))
        return np.random.default_rng(rs)

    # -- fitting ------------------------------------------------------------------------
    def fit(self, X, y, eval_set=None):
        """Train on X (n, d) and labels y.

        ``eval_set=(X_val, y_val)`` records the validation error of every iteration
        in ``history_`` (kept incrementally, so it costs little).
        """
        self._validate_hyperparameters()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        K = len(self.classes_)
        if K < 2:
            raise ValueError(f"y has {K} class; {type(self).__name__} needs at least 2 classes")
        X_val = y_val = None
        if eval_set is not None:
            if not (isinstance(eval_set, (tuple, list)) and len(eval_set) == 2):
                raise ValueError("eval_set must be a pair (X_val, y_val)")
            X_val = validate_data(self, eval_set[0], dtype=np.float64, reset=False)
            y_val = np.asarray(eval_set[1])
            if y_val.shape != (X_val.shape[0],):
                raise ValueError("eval_set: y_val must be 1-d with one label per row of X_val")
        weak = make_weak_learner(self.weak_learner)
        self._prepare_fit(K)
        builder = _Builder(self._n_outputs(K), X_val)
        history: list[dict] = []
        t_start = time.perf_counter()

        def record(iteration, objective, raw_train, **extra):
            pred = np.argmax(self._decode(raw_train), axis=1)
            rec = {
                "iteration": iteration,
                "objective": float(objective),
                "train_error": float(np.mean(pred != y_idx)),
                "n_weak": int(builder.n_hyp),
            }
            if X_val is not None:
                pv = self.classes_[np.argmax(self._decode(builder.raw_val), axis=1)]
                rec["val_error"] = float(np.mean(pv != y_val))
            rec.update(
                {
                    k: (float(v) if isinstance(v, (float, np.floating)) else v)
                    for k, v in extra.items()
                }
            )
            rec["seconds"] = time.perf_counter() - t_start
            history.append(rec)
            if self.verbose:
                msg = "  ".join(
                    f"{k} {v:.5g}" if isinstance(v, float) else f"{k} {v}" for k, v in rec.items()
                )
                print(msg, file=sys.stdout, flush=True)
            if self.callback is not None:
                self.callback(rec)
            return self.max_time is not None and rec["seconds"] >= self.max_time

        self.converged_ = bool(self._boost(X, y_idx, K, weak, builder, record))
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
        return validate_data(self, X, dtype=np.float64, reset=False)

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
    def _get_state(self):
        check_is_fitted(self, "coef_")
        classes = self.classes_
        if classes.dtype == object:
            classes = classes.astype(str)
        arrays = {f"hyp.{k}": v for k, v in self.hypotheses_.to_arrays().items()}
        arrays.update(
            {
                "classes": classes,
                "var_hyp": self.var_hyp_,
                "var_out": self.var_out_,
                "coef": self.coef_,
                "path_iter": self.path_iter_,
                "path_var": self.path_var_,
                "path_value": self.path_value_,
            }
        )
        extra_meta, extra_arrays = self._extra_state()
        arrays.update({f"extra.{k}": v for k, v in extra_arrays.items()})
        meta = {
            "params": _json_params(self),
            "hypotheses_class": type(self.hypotheses_).__name__,
            "n_features_in": int(self.n_features_in_),
            "history": self.history_,
            "objective": float(self.objective_),
            "n_iter": int(self.n_iter_),
            "converged": bool(self.converged_),
            "extra": extra_meta,
        }
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        try:
            hyp_cls = HYPOTHESES[meta["hypotheses_class"]]
        except KeyError as exc:
            raise ValueError(f"model file names an unknown component: {exc}") from None
        params = dict(meta["params"])
        if params.get("weak_learner") not in WEAK_LEARNERS:
            params["weak_learner"] = "stump"
        est = cls(**params)
        est.hypotheses_ = hyp_cls.from_arrays(
            {k[4:]: v for k, v in arrays.items() if k.startswith("hyp.")}
        )
        est.classes_ = np.asarray(arrays["classes"])
        for name in ("var_hyp", "var_out", "path_iter", "path_var"):
            setattr(est, f"{name}_", np.asarray(arrays[name], dtype=np.int64))
        est.coef_ = np.asarray(arrays["coef"], dtype=np.float64)
        est.path_value_ = np.asarray(arrays["path_value"], dtype=np.float64)
        est.n_features_in_ = int(meta["n_features_in"])
        est.history_ = list(meta["history"])
        est.objective_ = float(meta["objective"])
        est.n_iter_ = int(meta["n_iter"])
        est.converged_ = bool(meta["converged"])
        est._set_extra_state(
            meta.get("extra", {}), {k[6:]: v for k, v in arrays.items() if k.startswith("extra.")}
        )
        n_hyp, R = len(est.hypotheses_), est._n_outputs(len(est.classes_))
        n = len(est.coef_)
        if (
            len(est.var_hyp_) != n
            or len(est.var_out_) != n
            or np.any(est.var_hyp_ >= n_hyp)
            or np.any(est.var_hyp_ < -1)
            or np.any(est.var_out_ < 0)
            or np.any(est.var_out_ >= R)
            or np.any(est.path_var_ < 0)
            or np.any(est.path_var_ >= max(n, 1))
            or np.any(np.diff(est.path_iter_) < 0)
        ):
            raise ValueError(
                "model file is inconsistent: variables do not match the weak learners and classes"
            )
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


class _ColumnGenerationBoost(_MultiClassBoosting):
    """Column generation (Alg. 1) over problem (2); ``_shared`` picks eq. (6) over (4)."""

    _shared = False

    def _validate_hyperparameters(self) -> None:
        self._validate_common()
        _check_number("C", self.C, low=0)
        _check_number("eps", self.eps, low=0, low_open=False)
        _check_number("eps_cg", self.eps_cg, low=0, low_open=False)
        _check_number("tol", self.tol, low=0, low_open=False)
        _check_number("tau_max", self.tau_max, low=1, low_open=False, integer=True)
        if self.solver not in ("fcd", "lbfgs"):
            raise ValueError(f"solver must be 'fcd' or 'lbfgs', got {self.solver!r}")

    def _solver_options(self, rng) -> dict:
        if self.solver == "fcd":
            return {
                "eps": float(self.eps),
                "tau_max": int(self.tau_max),
                "rng": rng,
                "large_C": bool(self.large_C),
            }
        return {}

    def _boost(self, X, y, K, weak, builder, record):
        mp = MasterProblem(
            y,
            K,
            float(self.C),
            require_discrete=self.solver == "fcd",
            capacity=K * min(int(self.max_iter), 256),
        )
        prepared = weak.prepare(X)
        options = self._solver_options(self._rng())
        prev = mp.objective()
        classes = np.arange(K)
        for it in range(int(self.max_iter)):
            t0 = time.perf_counter()
            hyps, gains = weak.best(prepared, mp.dual_weights())  # (4): one column per class
            if self._shared:  # (6): the single best (weak learner, class) pair
                c = int(np.argmax(gains))
                hyps, gains = hyps.take([c]), gains[[c]]
            t_weak = time.perf_counter() - t0
            if gains.max() <= 1.0 + self.eps_cg:  # no violated dual constraint (3b)
                return True
            hidx = mp.add_hypotheses(hyps.evaluate(X))
            if not np.array_equal(builder.add_hypotheses(hyps), hidx):  # pragma: no cover
                raise RuntimeError("weak-learner bookkeeping out of step")
            if self._shared:
                new = mp.add_variables(np.repeat(hidx, K), classes)
                builder.add_vars(np.repeat(hidx, K), classes)
            else:
                new = mp.add_variables(hidx, classes)
                builder.add_vars(hidx, classes)
            info = mp.solve(self.solver, new, **options)
            builder.set_coef(it, mp.w)
            obj = mp.objective()
            stop = record(
                it,
                obj,
                mp.scores(),
                gain=float(gains.max()),
                t_weak=t_weak,
                t_master=info.pop("seconds"),
                **info,
            )
            if stop or abs(prev - obj) < self.tol * abs(prev):
                return False
            prev = obj
        return False


_PARAMS_DOC = """
    Parameters
    ----------
    C : float
        Weight of the exponential loss (2); the papers pick it in [1e2, 1e5].
    max_iter : int
        Column-generation iterations.
    weak_learner : str or WeakLearner, default="stump"
        Name in :data:`maxmargin.weak.WEAK_LEARNERS` or an instance.
    solver : {"fcd", "lbfgs"}
        Master solver: FCD (needs weak-learner outputs in {-1, 0, +1}) or L-BFGS-B.
    tau_max : int
        FCD working-set iterations per master solve (1: stage-wise).
    eps : float
        FCD tolerance on the KKT violation, eqs. (17)-(18) (0.1 in the paper).
    large_C : bool
        Use the large-C update (13) instead of (12) (when V- > 0).
    tol : float
        Stop when the relative change of the objective is below ``tol`` (Alg. 1 l. 7).
    eps_cg : float
        Stop when no weak learner has dual gain above ``1 + eps_cg`` (optimality).
    max_time : float or None
        Wall-clock limit in seconds.
    random_state : int, Generator or None
        Random picks of FCD (Alg. 2 line 6).
    verbose : int
    callback : callable or None
        Called with each iteration's record.

    Attributes
    ----------
    classes_, hypotheses_, coef_, var_hyp_, var_out_ : the model (see ``_MultiClassBoosting``)
    history_ : list of dict
        Per iteration: objective, train_error, val_error (with ``eval_set``), n_weak,
        gain, t_weak, t_master, solver statistics, seconds (since fit started).
    n_iter_, objective_, converged_
"""


class MultiBoostCW(_ColumnGenerationBoost):
    __doc__ = (
        """MultiBoost-cw: class-wise weak learners, master (2) by FCD (Lin et al., ACCV 2012).

    ``MultiBoostCW(C=1e8, tau_max=1)`` is the stage-wise variant CW-1 of the paper.
    """
        + _PARAMS_DOC
        + """
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin.learners.multiboost import MultiBoostCW
    >>> X, y = load_iris(return_X_y=True)
    >>> MultiBoostCW(max_iter=20).fit(X, y).score(X, y) > 0.9
    True
    """
    )

    def __init__(
        self,
        C: float = 1e4,
        max_iter: int = 100,
        weak_learner="stump",
        solver: str = "fcd",
        tau_max: int = 2,
        eps: float = 0.1,
        large_C: bool = False,
        tol: float = 1e-6,
        eps_cg: float = 1e-6,
        max_time: float | None = None,
        random_state=None,
        verbose: int = 0,
        callback=None,
    ):
        self.C = C
        self.max_iter = max_iter
        self.weak_learner = weak_learner
        self.solver = solver
        self.tau_max = tau_max
        self.eps = eps
        self.large_C = large_C
        self.tol = tol
        self.eps_cg = eps_cg
        self.max_time = max_time
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback


class MultiBoost(_ColumnGenerationBoost):
    __doc__ = (
        """MultiBoost: one weak learner shared by all classes (Shen & Hao, CVPR 2011).

    Each iteration adds the weak learner of eq. (6) with K new weights; the master is
    solved by L-BFGS-B (as in the papers) or by FCD (``solver="fcd"``).
    """
        + _PARAMS_DOC
    )

    _shared = True

    def __init__(
        self,
        C: float = 1e4,
        max_iter: int = 100,
        weak_learner="stump",
        solver: str = "lbfgs",
        tau_max: int = 2,
        eps: float = 0.1,
        large_C: bool = False,
        tol: float = 1e-6,
        eps_cg: float = 1e-6,
        max_time: float | None = None,
        random_state=None,
        verbose: int = 0,
        callback=None,
    ):
        self.C = C
        self.max_iter = max_iter
        self.weak_learner = weak_learner
        self.solver = solver
        self.tau_max = tau_max
        self.eps = eps
        self.large_C = large_C
        self.tol = tol
        self.eps_cg = eps_cg
        self.max_time = max_time
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
