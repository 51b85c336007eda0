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

(StructBoost's 1-slack master is the L1 / LP analogue: ``OneSlackMaster`` in
:mod:`maxmargin.solvers.column_generation`.)

One stopping rule for all: the relative duality gap ``(best primal - best master dual) /
best primal <= tol``, where the primal value comes from each oracle call (``Plane.primal``)
and the master dual is a valid lower bound at any accuracy; plus ``max_iter`` and
``max_time``.  One history record per round (:class:`~maxmargin.solvers.monitor.GapMonitor`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from maxmargin.solvers.monitor import GapMonitor
from maxmargin.solvers.qp_master import MasterSolution, OneSlackQPMaster

__all__ = ["Plane", "one_slack_cutting_planes"]


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


def one_slack_cutting_planes(
    find_plane,
    master: OneSlackQPMaster,
    tracker: GapMonitor,
    *,
    tol: float,
    max_iter: int,
    stabilize: bool = False,
) -> MasterSolution:
    """Run the loop until the tracker's rule fires; returns the last master solution.

    ``stabilize``: in-out stabilisation of Kelley's method (Ben-Ameur & Neto,
    "Acceleration of cutting-plane and column generation algorithms", Networks 49, 2007),
    as in StructBoost's LP loop: each round also asks for the plane at the mid-point of
    the best primal point so far and the master's point, and keeps it when it cuts off
    the master's point.  Both planes are valid, so the master's dual stays a lower bound;
    on ill-conditioned problems (raw pixel features) it roughly halves the rounds.

    The master is solved only as accurately as the outer gap needs (its dual stays a
    valid lower bound at any accuracy): its tolerance follows ``0.02 tol`` times the best
    primal, relative to the planes' scale, and never below :data:`MASTER_REL_FLOOR` of it.
    """
    sol = master.solve()
    bmax = 0.0
    with tracker.interruptible():
        for it in range(max_iter):
            t0 = time.perf_counter()
            best = tracker.best_w
            plane = mid = None
            if stabilize and best is not None and sol.w is not None:
                # in-out: the plane at the mid-point first; the master's own point is
                # queried only when that plane does not cut it off (a mis-price)
                mid = find_plane(replace(sol, w=0.5 * (best + sol.w)))
                if mid.primal is not None:
                    tracker.n_oracle += 1
                    tracker.offer_primal(mid.primal, mid.state)
                if mid.a is None or mid.b - float(mid.a @ sol.w) <= sol.xi:
                    mid = None  # does not cut off the master's point
            if mid is None:
                plane = find_plane(sol)
                if plane.primal is not None:
                    tracker.n_oracle += 1
                    tracker.offer_primal(plane.primal, plane.state)
            else:
                plane, mid = mid, None
            t1 = time.perf_counter()
            if not tracker.converged():
                master.add_plane(plane.a, plane.b, gram=plane.gram, payload=plane.payload)
                if mid is not None:
                    master.add_plane(mid.a, mid.b, payload=mid.payload)
                if np.isfinite(tracker.best_primal):
                    bmax = max(bmax, abs(plane.b))
                    scale = max(1.0, master.C * bmax)
                    # tol = 0 (run max_iter rounds) still solves the master to a
                    # relative 1e-10 rather than to an exact 0 (the SMO step limit)
                    rel = max(0.02 * tol, MASTER_REL_FLOOR)
                    master.tol = min(1e-9, rel * tracker.best_primal / scale)
                sol = master.solve()
                tracker.offer_dual(sol.dual)
            if tracker.record(  # this round's seconds in the oracle and in the master
                it,
                n_planes=master.n_planes,
                source=plane.source,
                t_oracle=t1 - t0,
                t_master=time.perf_counter() - t1,
                **plane.extra,
            ):
                break
    return sol
