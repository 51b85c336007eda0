"""The convergence monitor every iterative fit reports to, and its callbacks.

One object per fit (:class:`ConvergenceMonitor`) receives one record per iteration -- a
dict in the history schema of docs/architecture.md (``iteration``, ``objective``,
``dual_bound``, ``gap``, ``t_total`` and whatever the algorithm adds) -- and runs a list of
callbacks on it, the way LightGBM's ``CallbackEnv`` works.  Recording ``history_``,
printing progress (``verbose``), the ``max_time`` budget, early stopping and the user's
``callback=`` are all callbacks; a callback stops the fit by returning True or raising
:class:`StopFit`.  Ctrl-C is turned into a stopping rule by :meth:`ConvergenceMonitor.
interruptible`: the fit keeps the last completed iterate and says it was interrupted.

:class:`GapMonitor` adds what a primal-dual solver tracks on top (the best primal iterate,
the best dual bound, the relative-gap stopping rule ``gap <= tol * primal``, ``max_iter``):
it is the monitor of every structured-SVM solver, which return an :class:`SSVMResult`.

Every structured-SVM solver minimises the same primal ([Nowozin2011], "Structured Output
SVM")

    J(w) = 1/2 ||w||^2 + C/n sum_i H_i(w),
    H_i(w) = max_y Delta(y_i, y) - w.dPsi_i(y)              (margin rescaling)
    H_i(w) = max_y Delta(y_i, y) (1 - w.dPsi_i(y))           (slack rescaling)

over a :class:`~maxmargin.tasks.linear.LinearJointModel`; the dual value it records is a
lower bound on the optimum.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ConvergenceMonitor",
    "GapMonitor",
    "SSVMResult",
    "StopFit",
    "early_stopping",
    "print_progress",
    "time_limit",
]


@dataclass
class SSVMResult:
    """What a structured-SVM solver returns: weights, objective, certificate, history."""

    w: np.ndarray
    primal: float
    dual: float
    history: list = field(default_factory=list)
    converged: bool = False
    extra: dict = field(default_factory=dict)
    interrupted: bool = False  # Ctrl-C stopped the solver (w = best iterate so far)

    @property
    def gap(self) -> float:
        return self.primal - self.dual


class StopFit(Exception):
    """Raised by a callback to end the fit; ``reason`` goes to ``monitor.stop_reason``."""

    def __init__(self, reason: str = "callback"):
        super().__init__(reason)
        self.reason = reason


Callback = Callable[["ConvergenceMonitor", dict], "bool | None"]


def _format(value) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    return str(value)


def print_progress(fields=None, every: int = 1, stream=None) -> Callback:
    """A callback printing ``[name] key value ...`` for every ``every``-th record
    (``fields``: the keys to print, default all)."""

    def callback(mon: ConvergenceMonitor, rec: dict):
        if rec.get("iteration", 0) % every:
            return None
        keys = rec.keys() if fields is None else [k for k in fields if k in rec]
        body = "  ".join(f"{k} {_format(rec[k])}" for k in keys)
        print(f"[{mon.name}] {body}", file=stream or sys.stdout, flush=True)
        return None

    return callback


def time_limit(seconds: float) -> Callback:
    """A callback ending the fit once ``seconds`` have passed since the monitor started."""

    def callback(mon: ConvergenceMonitor, rec: dict):
        if mon.elapsed() >= seconds:
            raise StopFit("max_time")
        return None

    return callback


def early_stopping(key: str = "val_error", patience: int = 10, min_delta: float = 0.0):
    """A callback ending the fit when ``rec[key]`` (lower is better) has not improved by
    more than ``min_delta`` for ``patience`` records (records without ``key`` are
    ignored).  The best value and its iteration are kept on the monitor."""

    def callback(mon: ConvergenceMonitor, rec: dict):
        if key not in rec or not np.isfinite(rec[key]):
            return None
        best = mon.state.get("best_" + key)
        if best is None or rec[key] < best - min_delta:
            mon.state["best_" + key] = float(rec[key])
            mon.state["best_iteration"] = rec.get("iteration")
            mon.state["_since_best"] = 0
            return None
        mon.state["_since_best"] = mon.state.get("_since_best", 0) + 1
        if mon.state["_since_best"] >= patience:
            raise StopFit("early_stopping")
        return None

    return callback


def _user(fn) -> Callback:
    """The estimators' ``callback=`` (a function of the record) as a monitor callback."""

    def callback(mon: ConvergenceMonitor, rec: dict):
        return fn(rec)

    return callback


class ConvergenceMonitor:
    """Receives the per-iteration records of one fit and runs the callbacks on them.

    Parameters
    ----------
    name : str
        Shown in progress lines (``[name] iteration 3  objective ...``).
    verbose : int, default 0
        Adds :func:`print_progress` (printing ``fields`` if given).
    max_time : float or None
        Adds :func:`time_limit`.
    callback : callable or None
        The estimator's ``callback=``: called with each record; returning True stops.
    callbacks : sequence of callables ``(monitor, record) -> bool | None``
        Further callbacks (:func:`early_stopping`, ...), run after the built-in ones.
    fields : sequence of str, optional
        The keys the progress line shows (default: every key of the record).
    """

    def __init__(
        self,
        name: str = "fit",
        *,
        verbose: int = 0,
        max_time: float | None = None,
        callback=None,
        callbacks=(),
        fields=None,
    ):
        self.name = name
        self.max_time = None if max_time is None else float(max_time)
        self.t0 = time.perf_counter()
        self.history: list[dict] = []
        self.state: dict = {}
        self.stop_reason: str | None = None
        self.interrupted = False
        cbs: list[Callback] = []
        if verbose:
            cbs.append(print_progress(fields))
        if callback is not None:
            cbs.append(_user(callback))
        if self.max_time is not None:
            cbs.append(time_limit(self.max_time))
        cbs.extend(callbacks)
        self.callbacks = cbs

    def elapsed(self) -> float:
        """Seconds since the monitor was created (the fit started)."""
        return time.perf_counter() - self.t0

    def record(self, rec: dict, notify: bool = True) -> bool:
        """Append ``rec`` (``t_total`` added if missing) to the history and run the
        callbacks (none if not ``notify``: a record written after Ctrl-C); True when one
        of them asks to stop (``stop_reason`` says which)."""
        rec.setdefault("t_total", self.elapsed())
        self.history.append(rec)
        for cb in self.callbacks if notify else ():
            try:
                if cb(self, rec):
                    self.stop_reason = self.stop_reason or "callback"
                    return True
            except StopFit as stop:
                self.stop_reason = stop.reason
                return True
        return False

    def replace_last(self, rec: dict) -> None:
        """Replace the last record by ``rec`` (a final certificate's) and notify the
        callbacks of the new one (stop requests are ignored: the fit has ended)."""
        rec.setdefault("t_total", self.elapsed())
        self.history[-1] = rec
        for cb in self.callbacks:
            try:
                cb(self, rec)
            except StopFit:
                pass

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Run a fit's main loop so that Ctrl-C (KeyboardInterrupt) ends it like a
        stopping rule: ``interrupted`` is set and the caller keeps its last iterate.
        Re-raised when no iteration was recorded (nothing to keep)."""
        try:
            yield
        except KeyboardInterrupt:
            if not self.history:
                raise
            self.interrupted = True
            self.stop_reason = "interrupted"


class GapMonitor(ConvergenceMonitor):
    """A :class:`ConvergenceMonitor` for primal-dual solvers: keeps the best primal
    iterate and the best dual bound, stops on ``gap <= tol * primal`` (relative duality
    gap) or after ``max_iter`` iterations, and writes the shared record."""

    def __init__(self, tol, max_iter, max_time=None, callback=None, verbose=0, name="ssvm"):
        super().__init__(
            name,
            verbose=verbose,
            max_time=max_time,
            callback=callback,
            fields=("iteration", "objective", "dual_bound", "gap"),
        )
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.best_primal = np.inf
        self.last_primal = np.inf  # best primal among this iteration's candidates
        self.best_w = None
        self.best_dual = -np.inf
        self.n_oracle = 0

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """As :meth:`ConvergenceMonitor.interruptible`; :meth:`result` re-raises when
        no iterate was kept."""
        try:
            yield
        except KeyboardInterrupt:
            self.interrupted = True
            self.stop_reason = "interrupted"

    def offer_primal(self, value, w) -> None:
        self.last_primal = min(self.last_primal, float(value))
        if value < self.best_primal:
            self.best_primal = float(value)
            self.best_w = np.array(w, copy=True)

    def offer_dual(self, value) -> None:
        self.best_dual = max(self.best_dual, float(value))

    @property
    def gap(self) -> float:
        return self.best_primal - self.best_dual

    def record(self, iteration, **extra) -> bool:  # type: ignore[override]
        """Append this iteration's record; True when a stopping rule fires."""
        primal, dual = self.best_primal, self.best_dual
        gap = primal - dual
        rel = gap / max(abs(primal), 1e-12) if np.isfinite(gap) else np.inf
        rec = {  # the history schema shared by every estimator (docs/architecture.md)
            "iteration": int(iteration),
            "objective": primal,
            "primal": self.last_primal,
            "dual_bound": dual,
            "gap": rel,
            "n_oracle": self.n_oracle,
            "t_total": self.elapsed(),
        }
        rec.update(extra)
        self.last_primal = np.inf
        stop = super().record(rec)
        if self.converged():
            self.stop_reason = "converged"
            return True
        if iteration + 1 >= self.max_iter:
            self.stop_reason = self.stop_reason or "max_iter"
            return True
        return stop

    def converged(self) -> bool:
        gap = self.best_primal - self.best_dual
        return bool(np.isfinite(gap) and gap <= self.tol * max(abs(self.best_primal), 1e-12))

    def result(self, w_fallback, **extra):
        """The solver's :class:`SSVMResult`."""
        if self.interrupted and self.best_w is None:
            raise KeyboardInterrupt  # interrupted before any iterate: nothing to keep
        w = self.best_w if self.best_w is not None else w_fallback
        return SSVMResult(
            w=w,
            primal=self.best_primal,
            dual=self.best_dual,
            history=self.history,
            converged=self.converged() and not self.interrupted,
            extra=extra,
            interrupted=self.interrupted,
        )
