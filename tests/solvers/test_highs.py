"""Every HiGHS instance of the package runs on one thread (solvers/_highs.py)."""

import highspy
import numpy as np

from maxmargin.solvers._highs import new_highs
from maxmargin.solvers.qp_master import OneSlackQPMaster


def _lp_status():
    """A tiny LP solved the way the LP masters solve theirs: min x, x >= 1."""
    h = new_highs()
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    h.addVars(1, np.array([1.0]), np.array([inf]))
    h.changeColCost(0, 1.0)
    h.run()
    return h.getModelStatus()


def test_a_qp_then_an_lp_in_a_fresh_process_both_solve():
    """HiGHS creates its task scheduler once per process with the first run's thread
    count; an instance asking for another count later fails.  The QP master's HiGHS
    solver ran with the default count, after which every LP polish failed as
    "numerical" (seen as an order-dependent StructBoostRanker test failure)."""
    highspy.Highs.resetGlobalScheduler(True)  # as in a fresh process
    m = OneSlackQPMaster(C=1.0, dim=2, solver="highs")
    m.add_plane(np.array([1.0, 0.0]), 1.0)
    sol = m.solve()
    assert np.isfinite(sol.primal)
    assert _lp_status() == highspy.HighsModelStatus.kOptimal
