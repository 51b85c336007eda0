"""``max_time`` counted in pieces of work, not in seconds (issue 28).

The fit's clock is replaced by a counter that only the indivisible pieces of work
advance -- one weak-learner search, one compiled L-BFGS step, one full refresh of the
gains, one LP of the aggregated dual bound, one HiGHS solve of the exact polish -- one
unit each, at their start.  Every deadline check of the fit then sees exactly how many
pieces have started, so the promise of ``max_time`` is a count, on any machine:

* a certificate asked for once the deadline has passed starts no piece at all (it
  returns the last iterate with its certified gap);
* a certificate begun before the deadline starts at most one piece after it -- the
  aggregated bound's LP closing the round whose steps the deadline stopped (the round's
  bound is what keeps its gap honest), or the polish's LP solve begun before its check
  --, and the iterations at most one (the step a solve takes before its first check).

This replaces a wall-clock test whose slack had to absorb the certificate's own time and
so could no longer catch a certificate that ignored the deadline.

Removing the deadline guard of ``SmoothedMaster.certify`` makes the first rule fail (a
refresh and a round of steps past the deadline).
"""

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import load_digits

from maxmargin import StructBoostClassifier
from maxmargin.solvers import column_generation, lp_master, smoothed_master, smoothed_problem
from maxmargin.weak.stump import DecisionStump


@pytest.fixture
def piece_clock(monkeypatch):
    """The fake clock and the log of pieces: (phase, clock when the piece started)."""
    state = {"t": 0.0, "phase": "iterations", "log": [], "certify_at": []}
    fake = SimpleNamespace(perf_counter=lambda: state["t"])
    for mod in (column_generation, smoothed_master, smoothed_problem, lp_master):
        monkeypatch.setattr(mod, "time", fake)

    def piece(fn):
        def run(*a, **k):
            state["log"].append((state["phase"], state["t"]))
            state["t"] += 1.0
            return fn(*a, **k)

        return run

    monkeypatch.setattr(smoothed_problem, "coded_smoothed_steps",
                        piece(smoothed_problem.coded_smoothed_steps))  # fmt: skip
    monkeypatch.setattr(smoothed_master, "aggregated_dual_bound",
                        piece(smoothed_master.aggregated_dual_bound))  # fmt: skip
    for cls, name in (
        (smoothed_problem.SmoothedProblem, "refresh"),
        (DecisionStump, "best"),
        (lp_master.NSlackLP, "solve"),  # one HiGHS solve of the exact polish
    ):
        monkeypatch.setattr(cls, name, piece(getattr(cls, name)))
    real_certify = smoothed_master.SmoothedMaster.certify

    def certify(self, deadline):
        state["certify_at"].append((state["t"], deadline))
        state["phase"] = "certificate"
        try:
            return real_certify(self, deadline)
        finally:
            state["phase"] = "iterations"

    monkeypatch.setattr(smoothed_master.SmoothedMaster, "certify", certify)
    return state


@pytest.mark.parametrize("certify", ["gap", "exact"])
@pytest.mark.parametrize("max_time", [1.0, 3.0, 10.0, 30.0, 100.0, 300.0])
def test_no_piece_starts_past_the_deadline(piece_clock, max_time, certify):
    X, y = load_digits(return_X_y=True)
    clf = StructBoostClassifier(
        C=100.0, max_iter=100_000, max_time=max_time, certify=certify, random_state=0
    ).fit(X[:400], y[:400])
    deadline = max_time  # the clock starts at 0 and only the pieces advance it
    log = piece_clock["log"]
    assert piece_clock["certify_at"], "the fit asked for no certificate"
    # past the deadline: the steps check ``now > deadline``, so a piece starting at the
    # deadline's very count is not late (a real clock never repeats a reading)
    late = [(phase, t) for phase, t in log if t > deadline]
    late_iter = [t for phase, t in late if phase == "iterations"]
    assert len(late_iter) <= 1
    for start, dl in piece_clock["certify_at"]:
        assert dl == deadline
        if start >= deadline:
            # asked for once the deadline is reached: not one piece of certificate work
            assert [t for phase, t in log if phase == "certificate" and t >= start] == []
    late_cert = [t for phase, t in late if phase == "certificate"]
    assert len(late_cert) <= 1
    # whatever stopped it, the reported gap is a valid certificate of the last iterate
    last = clf.history_[-1]
    assert last["objective"] >= last["dual_bound"] - 1e-9 * abs(last["objective"])
    assert np.isfinite(clf.gap_)
