"""The 1-slack cutting-plane loop shared by every L2-regularised 1-slack learner.

Joachims, Finley & Yu, "Cutting-plane training of structural SVMs", Machine Learning 77
(2009), [Joachims2009 Alg. 4] (margin rescaling) and [Joachims2009 Alg. 5] (slack rescaling): for

    min_w 1/2 ||w||^2 + C xi   s.t.  <w, a> >= b - xi  for every plane (a, b)

keep a working set of planes, solve its dual (:class:`~maxmargin.solvers.qp_master.
OneSlackQPMaster`), ask for the most violated plane at the master's solution, repeat.
Every learner supplies only ``find_plane(solution) -> Plane``:

* :func:`maxmargin.solvers.ssvm_one_slack.fit_one_slack` -- structured SVMs, planes from
  the loss-augmented oracle (or the output cache);
* :func:`maxmargin.solvers.ssvm_kernel.fit_kernel_one_slack` -- joint-kernel SSVMs, in
  the master's Gram-only mode;
* :func:`maxmargin.solvers.ranking.fit_ranksvm` -- RankSVM, planes from the O(n log n)
  ranking oracle.

StructBoost's 1-slack master, the L1 / LP analogue
(:class:`~maxmargin.solvers.one_slack_master.OneSlackMaster`), runs the same loop,
:func:`kelley_loop`: every 1-slack learner of the package -- QP or LP master -- goes
through that one function, with in-out stabilisation and the stall guard as options.

One stopping rule for all: the relative duality gap ``(best primal - best master dual) /
best primal <= tol``, where the primal value comes from each oracle call (``Plane.primal``)
and the master dual is a valid lower bound at any accuracy; plus ``max_iter`` and
``max_time``.  One history record per round (:class:`~maxmargin.solvers.monitor.GapMonitor`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from maxmargin.solvers.monitor import GapMonitor
from maxmargin.solvers.qp_master import MasterSolution, OneSlackQPMaster

__all__ = ["Plane", "PlaneProblem", "kelley_loop", "one_slack_cutting_planes"]


@dataclass
class Plane:
    """A plane ``<w, a> >= b - xi`` found at the master's current solution.

    ``a``: the direction (explicit mode) or None with ``gram`` (Gram-only mode: inner
    products with the stored planes, then ``<a, a>``); ``payload``: kept with the plane
    by the master; ``primal``/``state``: the exact primal objective at the current point
    and what to keep if it is the best so far (None if no oracle ran); ``source``: a
    label for the history.
    """

    b: float
    a: np.ndarray | None = None
    gram: np.ndarray | None = None
    payload: object = None
    primal: float | None = None
    state: object = None
    source: str = "oracle"
    extra: dict = field(default_factory=dict)


#: the master's relative accuracy when the outer ``tol`` asks for less than this / 0.02
#: (``tol=0``: an exact 0 would run every master solve to its step limit)
MASTER_REL_FLOOR = 1e-10
#: rounds whose planes leave the master's point where it was before a cutting-plane loop
#: gives up (the stall guard of :func:`kelley_loop`)
STALL_ROUNDS = 5


class PlaneProblem(Protocol):
    """What :func:`kelley_loop` needs from a master problem and its oracle.

    ``sol`` is whatever :meth:`solve` returns; a *point* is whatever :meth:`query`
    takes (``w``, or ``(w, F)`` with StructBoost's slot scores).
    """

    def point(self, sol):
        """The master solution's point."""

    def mix(self, centre, sol, t: float):
        """The in-out query point ``t centre + (1 - t) point(sol)`` (None: no such point,
        e.g. a Gram-only master that never forms ``w``)."""

    def query(self, point) -> Plane:
        """The oracle at ``point``: its most violated plane, with ``primal`` (the exact
        objective at ``point``) and ``state = point`` when the oracle ran."""

    def cuts_off(self, plane: Plane, sol) -> bool:
        """Whether ``plane`` is violated at the master's solution."""

    def stop(self, rnd: int, best: Plane | None, sol) -> str | None:
        """Checked after the round's queries, before any plane is added: a reason to
        stop (e.g. ``"converged"``, ``"time"``) or None."""

    def add(self, plane: Plane, sol) -> bool:
        """Add the plane (or not); False when nothing was added."""

    def solve(self):
        """Re-solve the master on the working set."""

    def unchanged(self, prev, sol) -> bool:
        """Whether a solve left the master's point where it was (the stall guard)."""

    def record(self, rnd: int, plane: Plane, t_oracle: float, t_master: float, sol) -> bool:
        """End of a round (history, printing); True stops the loop."""


class UnstabilisedPlanes:
    """The :class:`PlaneProblem` methods of a problem run without stabilisation or stall
    guard (column generation, n-slack, hard-negative mining): no in-out point, every
    plane counts as cutting off, a solve always moves the point."""

    def mix(self, centre, sol, t):  # pragma: no cover - unstabilised
        return None

    def cuts_off(self, plane, sol) -> bool:  # pragma: no cover - unstabilised
        return True

    def unchanged(self, prev, sol) -> bool:
        return False


def _better(best: Plane | None, plane: Plane) -> Plane | None:
    if plane.primal is None:
        return best
    return plane if best is None or plane.primal < best.primal else best


def kelley_loop(
    problem: PlaneProblem,
    sol,
    *,
    best: Plane | None = None,
    stabilize: float | None = None,
    stall_rounds: int | None = None,
    max_rounds: int | None = None,
    requery_unmoved: bool = False,
):
    """Kelley's cutting-plane method, the one loop of every 1-slack learner.

    Each round asks the oracle for the most violated plane, adds it to the working set
    and re-solves the master, until ``problem.stop`` gives a reason, nothing is added
    (no plane violated at the master's point: converged), ``problem.record`` says stop,
    ``max_rounds`` rounds were solved, or -- the stall guard -- ``stall_rounds`` solves
    in a row left the master's point unchanged (a ``ConvergenceWarning``).

    ``stabilize=t``: in-out stabilisation (Ben-Ameur & Neto, "Acceleration of
    cutting-plane and column generation algorithms", Networks 49, 2007).  The oracle is
    asked first at ``t best + (1 - t) point(sol)``, ``best`` the point of lowest exact
    objective seen so far; if that plane cuts off the master's point it is the round's
    plane, else (a mis-price) the oracle is asked at the master's point itself.  With
    ``requery_unmoved`` (the QP loop), after a solve that left the master's point
    unchanged (an in-out plane that cut it off only by rounding) the next round asks at
    the master's point directly.  Planes from any point are valid, so the master's value
    stays a lower bound.

    Returns ``(sol, best, n_solves, reason)``; ``best`` is the :class:`Plane` whose
    ``state`` is the best point seen (None if no oracle reported a primal value) and
    ``reason`` one of ``"converged"`` (nothing violated), ``"record"``, ``"max_rounds"``,
    ``"stalled"`` or the reason ``problem.stop`` gave.
    """
    stalled = 0
    n_solves = 0
    rnd = 0
    while True:
        t0 = time.perf_counter()
        plane = None
        # after a solve that left the point where it was, the in-out plane did not
        # really cut it off (rounding): ask at the master's point itself, whose plane
        # either moves the master or, for an exact oracle, closes the gap
        if stabilize is not None and best is not None and not (requery_unmoved and stalled):
            q = problem.mix(best.state, sol, stabilize)
            if q is not None:
                plane = problem.query(q)
                best = _better(best, plane)
                if not problem.cuts_off(plane, sol):
                    plane = None
        if plane is None:
            plane = problem.query(problem.point(sol))
            best = _better(best, plane)
        t1 = time.perf_counter()
        reason = problem.stop(rnd, best, sol)
        if reason is None and stall_rounds is not None and stalled >= stall_rounds:
            reason = "stalled"
            warnings.warn(
                f"cutting planes stalled: {stall_rounds} rounds of planes left the "
                "master's point unchanged (the master's numerical tolerance, a task whose "
                "planes disagree with its risk, or an oracle that is not exact at this "
                "point, e.g. graph cuts on non-submodular energies); stopping this loop",
                ConvergenceWarning,
                stacklevel=4,
            )
        added = reason is None and problem.add(plane, sol)
        if added:
            prev, sol = sol, problem.solve()
            n_solves += 1
            stalled = stalled + 1 if problem.unchanged(prev, sol) else 0
        if problem.record(rnd, plane, t1 - t0, time.perf_counter() - t1, sol):
            reason = reason or "record"
        elif reason is None and not added:
            reason = "converged"
        elif reason is None and max_rounds is not None and n_solves >= max_rounds:
            reason = "max_rounds"
        if reason is not None:
            return sol, best, n_solves, reason
        rnd += 1


class _QPPlanes:
    """:class:`PlaneProblem` over :class:`OneSlackQPMaster`: planes from ``find_plane``,
    the gap rule and the history from a :class:`GapMonitor`."""

    def __init__(self, find_plane, master: OneSlackQPMaster, tracker: GapMonitor, tol: float):
        self.find_plane, self.master, self.tracker, self.tol = find_plane, master, tracker, tol
        self.bmax = 0.0
        self.sol = None

    def point(self, sol):
        return sol

    def mix(self, centre, sol, t):
        if sol.w is None or centre is None or self.tracker.converged():
            return None
        return replace(sol, w=t * centre + (1.0 - t) * sol.w)

    def query(self, point) -> Plane:
        plane = self.find_plane(point)
        if plane.primal is not None:
            self.tracker.n_oracle += 1
            self.tracker.offer_primal(plane.primal, plane.state)
        return plane

    def cuts_off(self, plane, sol) -> bool:
        return plane.a is not None and plane.b - float(plane.a @ sol.w) > sol.xi

    def stop(self, rnd, best, sol):
        return "converged" if self.tracker.converged() else None

    def add(self, plane, sol) -> bool:
        master, tracker = self.master, self.tracker
        master.add_plane(plane.a, plane.b, gram=plane.gram, payload=plane.payload)
        if np.isfinite(tracker.best_primal):
            self.bmax = max(self.bmax, abs(plane.b))
            scale = max(1.0, master.C * self.bmax)
            # tol = 0 (run max_iter rounds) still solves the master to a relative 1e-10
            # rather than to an exact 0 (the SMO step limit)
            rel = max(0.02 * self.tol, MASTER_REL_FLOOR)
            master.tol = min(1e-9, rel * tracker.best_primal / scale)
        return True

    def solve(self):
        sol = self.master.solve()
        self.tracker.offer_dual(sol.dual)
        return sol

    def unchanged(self, prev, sol) -> bool:
        # a plane violated at the previous solution raises the master's optimum; one that
        # is not (an inexact oracle's, e.g. graph cuts on non-submodular energies) leaves
        # the solution where it was, and so would every later round at the same point
        same = sol.dual <= prev.dual + 1e-12 * max(1.0, abs(prev.dual))
        if sol.w is None:  # Gram-only mode: the multipliers of the planes kept by both
            return same and sol.xi == prev.xi
        return same and np.array_equal(sol.w, prev.w)

    def record(self, rnd, plane, t_oracle, t_master, sol) -> bool:
        return self.tracker.record(  # this round's seconds in the oracle and in the master
            rnd,
            n_planes=self.master.n_planes,
            source=plane.source,
            t_oracle=t_oracle,
            t_master=t_master,
            **plane.extra,
        )


def one_slack_cutting_planes(
    find_plane,
    master: OneSlackQPMaster,
    tracker: GapMonitor,
    *,
    tol: float,
    max_iter: int,
    stabilize: bool = False,
) -> MasterSolution:
    """:func:`kelley_loop` on a QP master until the tracker's rule fires; returns the
    last master solution.

    ``find_plane(sol) -> Plane``: the learner's oracle at the master's solution (or at
    a copy of it whose ``w`` is the in-out query point).  ``stabilize``: in-out
    stabilisation with weight 1/2 (on ill-conditioned problems, raw pixel features, it
    roughly halves the rounds).  The gap rule, ``max_iter``, ``max_time``, callbacks and
    the history are the tracker's (:class:`~maxmargin.solvers.monitor.GapMonitor`).

    The master is solved only as accurately as the outer gap needs (its dual stays a
    valid lower bound at any accuracy): its tolerance follows ``0.02 tol`` times the best
    primal, relative to the planes' scale, and never below :data:`MASTER_REL_FLOOR` of it.
    """
    problem = _QPPlanes(find_plane, master, tracker, tol)
    sol = master.solve()
    with tracker.interruptible():
        sol, _, _, _ = kelley_loop(
            problem,
            sol,
            stabilize=0.5 if stabilize else None,
            stall_rounds=STALL_ROUNDS,
            max_rounds=None,
            requery_unmoved=True,
        )
    return sol
