"""Shared pieces of the structured SVM solvers: result, history, stopping rule.

Every solver minimises the same primal ([Nowozin2011], "Structured Output SVM")

    J(w) = 1/2 ||w||^2 + C/n sum_i H_i(w),
    H_i(w) = max_y Delta(y_i, y) - w.dPsi_i(y)              (margin rescaling)
    H_i(w) = max_y Delta(y_i, y) (1 - w.dPsi_i(y))           (slack rescaling)

over a :class:`~maxmargin.tasks.linear.LinearJointModel`, records one history entry per
iteration with the primal objective of the returned iterate, a lower bound on the
optimum (a dual value) and their relative difference, and stops once
``gap <= tol * primal`` (relative duality gap), after ``max_iter`` iterations or after
``max_time`` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SSVMResult", "Tracker"]


@dataclass
class SSVMResult:
    """What a solver returns: weights, objective, certificate and history."""

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


class Tracker:
    """Keeps the best primal iterate, the best dual bound and the history."""

    def __init__(self, tol, max_iter, max_time, callback=None, verbose=0, name="ssvm"):
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.max_time = None if max_time is None else float(max_time)
        self.callback = callback
        self.verbose = verbose
        self.name = name
        self.t0 = time.perf_counter()
        self.best_primal = np.inf
        self.last_primal = np.inf  # best primal among this iteration's candidates
        self.best_w = None
        self.best_dual = -np.inf
        self.history: list[dict] = []
        self.n_oracle = 0
        self.interrupted = False

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Run a solver's main loop so that Ctrl-C (KeyboardInterrupt) ends it like a
        stopping rule: :meth:`result` then returns the best iterate so far, flagged
        ``interrupted``."""
        try:
            yield
        except KeyboardInterrupt:
            self.interrupted = True

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

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def record(self, iteration, **extra) -> bool:
        """Append a history entry; returns True when a stopping rule fires."""
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
        self.history.append(rec)
        self.last_primal = np.inf
        if self.verbose:
            print(
                f"[{self.name}] iter {iteration:5d} primal {primal:.6g} dual {dual:.6g} "
                f"rel_gap {rel:.3g} {rec['t_total']:.2f}s",
                flush=True,
            )
        if self.callback is not None:
            self.callback(rec)
        return self.converged() or self.out_of_budget(iteration)

    def converged(self) -> bool:
        gap = self.best_primal - self.best_dual
        return bool(np.isfinite(gap) and gap <= self.tol * max(abs(self.best_primal), 1e-12))

    def out_of_budget(self, iteration) -> bool:
        if iteration + 1 >= self.max_iter:
            return True
        return self.max_time is not None and self.elapsed() >= self.max_time

    def result(self, w_fallback, **extra) -> SSVMResult:
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
