"""Declarative model-file state for estimators (what :func:`maxmargin.save` writes and
:func:`maxmargin.load` restores, without pickle).

An estimator lists its fitted attributes once::

    class RankSVM(Persistent, BaseEstimator):
        _saved_meta = (*fitted("n_features_in_", "history_"), ("grouped_", bool, False))
        _saved_arrays = (("coef_", np.float64),)

and gets ``_get_state`` / ``_from_state``: scalars and lists go to the JSON header under the
attribute's name without underscores (``n_features_in_`` -> ``"n_features_in"``), arrays
to the archive, a batch of weak learners (``_saved_hypotheses``) as ``hyp.*`` arrays with
its class name, a fitted task (``_task_classes``) as ``task.*`` arrays and its state.  A
third tuple entry is the default for files written before the attribute
existed.  ``_load_extra`` checks the restored model's consistency (the loader's promise:
no array reaches a kernel unchecked) and rebuilds derived attributes; ``_save_extra`` adds
anything irregular.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from maxmargin._validation import json_params
from maxmargin.exceptions import warn_interrupted, warn_unconverged
from maxmargin.weak import HYPOTHESES

__all__ = ["Persistent", "fitted", "store_solution"]

#: converters of the fitted attributes most estimators store
_STANDARD = {
    "n_features_in_": int,
    "history_": list,
    "objective_": float,
    "dual_objective_": float,
    "converged_": bool,
    "n_iter_": int,
}


def fitted(*attrs: str) -> tuple:
    """``_saved_meta`` entries for standard fitted attributes (``n_features_in_``,
    ``history_``, ``objective_``, ``dual_objective_``, ``converged_``, ``n_iter_``)."""
    return tuple((a, _STANDARD[a]) for a in attrs)


def store_solution(est, res, stacklevel: int = 3) -> None:
    """Set the standard fitted attributes of ``est`` from a solver result (``history``,
    ``primal``, ``dual``, ``converged``, ``interrupted``) and warn, as seen from the
    caller's own ``stacklevel``, when the fit was interrupted or stopped above ``tol``."""
    est.history_ = res.history
    est.objective_ = float(res.primal)
    est.dual_objective_ = float(res.dual)
    est.converged_ = bool(res.converged)
    est.n_iter_ = len(res.history)
    if res.interrupted:
        warn_interrupted(est.n_iter_, stacklevel=stacklevel + 1)
    elif not res.converged:
        warn_unconverged(type(est).__name__, res, stacklevel=stacklevel + 1)


def _key(attr: str) -> str:
    return attr.strip("_")


class Persistent:
    """Mixin: ``_get_state`` / ``_from_state`` from the declarations below."""

    #: (attribute, converter[, default]) stored in the JSON header
    _saved_meta: tuple = ()
    #: (attribute, dtype or None) stored as arrays
    _saved_arrays: tuple = ()
    #: attribute holding a :class:`~maxmargin.weak.Hypotheses` batch, or None
    _saved_hypotheses: str | None = None
    #: constructor parameters that are not stored (callables)
    _params_drop: tuple = ("callback",)
    #: task classes by name when the fitted ``task_`` is stored (``task.*`` arrays)
    _task_classes: dict = {}

    def _get_state(self):
        check_is_fitted(self)
        meta = {"params": json_params(self, drop=self._params_drop)}
        for attr, conv, *_ in self._saved_meta:
            meta[_key(attr)] = conv(getattr(self, attr))
        arrays = {_key(attr): np.asarray(getattr(self, attr)) for attr, _ in self._saved_arrays}
        if self._saved_hypotheses:
            hyp = getattr(self, self._saved_hypotheses)
            meta["hypotheses_class"] = type(hyp).__name__
            arrays.update({f"hyp.{k}": v for k, v in hyp.to_arrays().items()})
        if self._task_classes:
            task_meta, task_arrays = self.task_._get_state()
            meta["task_class"] = type(self.task_).__name__
            meta["task"] = task_meta
            arrays.update({f"task.{k}": v for k, v in task_arrays.items()})
        self._save_extra(meta, arrays)
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        task = cls._restore_task(meta, arrays) if cls._task_classes else None
        est = cls(**cls._loaded_params(dict(meta["params"]), task))
        if task is not None:
            est.task_ = task
        for attr, conv, *default in cls._saved_meta:
            key = _key(attr)
            if key in meta:
                setattr(est, attr, conv(meta[key]))
            elif default:
                setattr(est, attr, default[0])
            else:
                raise ValueError(f"model file is inconsistent: {key!r} is missing")
        for attr, dtype in cls._saved_arrays:
            key = _key(attr)
            if key not in arrays:
                raise ValueError(f"model file is inconsistent: array {key!r} is missing")
            setattr(est, attr, np.asarray(arrays[key], dtype=dtype))
        if cls._saved_hypotheses:
            try:
                hyp_cls = HYPOTHESES[meta["hypotheses_class"]]
            except KeyError as exc:
                raise ValueError(f"model file names an unknown component: {exc}") from None
            hyp = hyp_cls.from_arrays({k[4:]: v for k, v in arrays.items() if k.startswith("hyp.")})
            setattr(est, cls._saved_hypotheses, hyp)
        est._load_extra(meta, arrays)
        return est

    @classmethod
    def _restore_task(cls, meta, arrays):
        try:
            task_cls = cls._task_classes[meta["task_class"]]
        except KeyError as exc:
            raise ValueError(f"model file names an unknown task: {exc}") from None
        task = task_cls.__new__(task_cls)
        task_arrays = {k[5:]: v for k, v in arrays.items() if k.startswith("task.")}
        task._set_state(meta["task"], task_arrays)
        return task

    @classmethod
    def _loaded_params(cls, params: dict, task) -> dict:
        """Constructor parameters from the file (override to map stored values back);
        ``task``: the restored task, when one is stored."""
        return params

    def _save_extra(self, meta: dict, arrays: dict) -> None:
        """Add irregular state to ``meta`` / ``arrays`` (default: nothing)."""

    def _load_extra(self, meta: dict, arrays: dict) -> None:
        """Check the restored state and rebuild derived attributes (default: nothing)."""
