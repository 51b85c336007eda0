"""The one cutting-plane loop (``solvers.cutting_plane.kelley_loop``) on a problem small
enough to check by hand: Kelley's method for ``min_x f(x) = max(x^2, (x - 2)^2)`` on one
variable (optimum x* = 1, f* = 1), planes are tangents, the master an LP on a grid."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from maxmargin.solvers.cutting_plane import Plane, kelley_loop

GRID = np.linspace(-5.0, 5.0, 20001)


def f(x):
    return max(x * x, (x - 2.0) ** 2)


def grad(x):
    return 2.0 * x if x * x >= (x - 2.0) ** 2 else 2.0 * (x - 2.0)


class Tangents:
    """Master: min over the grid of the max of the tangents (a lower model of f)."""

    def __init__(self, stuck=False, tol=1e-6):
        self.cuts, self.queries, self.stuck, self.tol = [], [], stuck, tol

    def point(self, sol):
        return sol[0]

    def mix(self, centre, sol, t):
        return t * centre + (1.0 - t) * sol[0]

    def query(self, x):
        self.queries.append(x)
        return Plane(b=f(x) - grad(x) * x, a=np.array([grad(x)]), primal=f(x), state=x)

    def cuts_off(self, plane, sol):
        x, lower = sol
        return plane.b + plane.a[0] * x > lower + 1e-12

    def stop(self, rnd, best, sol):
        return "converged" if best.primal - sol[1] <= self.tol else None

    def add(self, plane, sol):
        self.cuts.append((plane.a[0], plane.b))
        return True

    def solve(self):
        if self.stuck:
            return (0.0, -1.0)
        model = np.max([a * GRID + b for a, b in self.cuts], axis=0)
        k = int(np.argmin(model))
        return (float(GRID[k]), float(model[k]))

    def unchanged(self, prev, sol):
        return prev == sol

    def record(self, rnd, plane, t_oracle, t_master, sol):
        return False


@pytest.mark.parametrize("stabilize", [None, 0.5])
def test_kelley_loop_reaches_the_optimum(stabilize):
    p = Tangents()
    sol, best, n, reason = kelley_loop(p, (-5.0, -np.inf), stabilize=stabilize)
    assert reason == "converged"
    # the grid step bounds how close the master's minimiser can get
    assert abs(best.state - 1.0) <= 1e-3 and best.primal - 1.0 <= 2e-3
    assert sol[1] <= 1.0 + 1e-12  # the master's value is a lower bound of f*
    assert n == len(p.cuts)


def test_stabilised_rounds_query_once_unless_mispriced():
    p = Tangents()
    _, _, n, _ = kelley_loop(p, (-5.0, -np.inf), stabilize=0.5)
    # mid-point first: a round asks the oracle a second time only on a mis-price (a round
    # that always asked at both points would make 2 (n + 1) queries)
    assert len(p.queries) <= 1.5 * (n + 1)


def test_max_rounds_and_the_stall_guard():
    p = Tangents(tol=0.0)
    _, _, n, reason = kelley_loop(p, (-5.0, -np.inf), max_rounds=3)
    assert (n, reason) == (3, "max_rounds")
    stuck = Tangents(stuck=True, tol=0.0)
    with pytest.warns(ConvergenceWarning, match="stalled"):
        _, _, n, reason = kelley_loop(stuck, (0.0, -1.0), stall_rounds=4, max_rounds=50)
    assert reason == "stalled" and n == 4


def test_one_slack_qp_stall_guard_stops_an_inexact_crf_oracle(monkeypatch):
    """The QP 1-slack loop's stall guard: on raw CRF potentials the learnt pairwise weight
    goes negative, graph cuts are then inexact and return planes that do not cut off the
    master's point, which from then on never moves.  The guard stops the loop after
    STALL_ROUNDS such rounds, warns, and returns what max_iter rounds would have.  (The
    CRF declares its pairwise weights non-negative, which prevents the stall: the model
    here drops that declaration; tests/tasks/test_crf.py fits the same data with it.)"""
    import maxmargin.solvers.cutting_plane as cutting_plane
    from data_makers import make_graphs
    from maxmargin.solvers.ssvm import solve_ssvm
    from maxmargin.tasks.crf import CRFTask

    X, Y = make_graphs(np.random.default_rng(11), 40, h=5, w=6, noise=1.5)
    m = CRFTask(loss="area").bind(X, Y).linear_model()
    m.nonneg_coords = None  # the unconstrained QP: the pairwise weight may go negative
    with pytest.warns(ConvergenceWarning, match="stalled"):
        r = solve_ssvm(m, 10.0, "1-slack", max_iter=150)
    assert len(r.history) < 60 and not r.converged
    assert not m.oracle_exact(r.w)  # the cause: a negative cut weight
    monkeypatch.setattr(cutting_plane, "STALL_ROUNDS", None)  # the loop without the guard
    full = solve_ssvm(m, 10.0, "1-slack", max_iter=150)
    assert len(full.history) == 150
    assert np.array_equal(r.w, full.w)
    assert (r.primal, r.dual) == (full.primal, full.dual)


def test_after_an_unchanged_solve_the_master_point_is_queried():
    """In-out planes that 'cut off' the master's point without moving it (rounding): after
    such a solve the next rounds ask the oracle at the master's point itself, not at the
    in-out point again; the stall guard still stops the loop."""

    class Unmoved(Tangents):
        def cuts_off(self, plane, sol):
            return True  # every in-out plane claims to cut the point off

        def solve(self):
            return (0.0, -1.0)  # ... and no solve moves it

    p = Unmoved(tol=0.0)
    with pytest.warns(ConvergenceWarning, match="stalled"):
        _, _, n, reason = kelley_loop(
            p, (1.0, -np.inf), stabilize=0.5, stall_rounds=3, requery_unmoved=True
        )
    assert n == 4  # the first solve moved the point, the next three did not
    assert reason == "stalled"
    # round 0 at the start point, round 1 at the in-out point 0.5 (1.0 is the best so
    # far), from round 2 on (after the first unchanged solve) at the master's point 0.0
    assert p.queries[:2] == [1.0, 0.5] and p.queries[2:] == [0.0] * (len(p.queries) - 2)
    # without the option (StructBoost's LP loop) the in-out point is asked every round
    p = Unmoved(tol=0.0)
    with pytest.warns(ConvergenceWarning, match="stalled"):
        kelley_loop(p, (1.0, -np.inf), stabilize=0.5, stall_rounds=3)
    assert p.queries == [1.0] + [0.5] * (len(p.queries) - 1)
