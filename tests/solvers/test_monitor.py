"""The convergence monitor and its callbacks (maxmargin.solvers.monitor)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

from maxmargin import SSVMClassifier, StructBoostClassifier
from maxmargin.solvers.monitor import (
    ConvergenceMonitor,
    GapMonitor,
    StopFit,
    early_stopping,
    time_limit,
)


def _run(mon, values):
    """Feed records until the monitor says stop; returns how many were fed."""
    for k, v in enumerate(values):
        if mon.record({"iteration": k, "objective": v, "val_error": v}):
            return k + 1
    return len(values)


def test_history_and_user_callback_in_order():
    seen = []
    mon = ConvergenceMonitor("t", callback=seen.append)
    assert _run(mon, [3.0, 2.0, 1.0]) == 3
    assert [r["iteration"] for r in mon.history] == [0, 1, 2]
    assert seen == mon.history and all("t_total" in r for r in seen)
    assert mon.stop_reason is None


def test_user_callback_returning_true_stops():
    mon = ConvergenceMonitor("t", callback=lambda rec: rec["iteration"] >= 1)
    assert _run(mon, [3.0, 2.0, 1.0]) == 2
    assert mon.stop_reason == "callback"


def test_time_limit_and_stopfit_reason():
    mon = ConvergenceMonitor("t", max_time=0.0)
    assert _run(mon, [1.0, 1.0]) == 1
    assert mon.stop_reason == "max_time"

    def stop(mon, rec):
        raise StopFit("mine")

    mon = ConvergenceMonitor("t", callbacks=[stop])
    assert _run(mon, [1.0]) == 1 and mon.stop_reason == "mine"
    assert time_limit(1e9)(mon, {}) is None


def test_early_stopping_waits_patience_records():
    mon = ConvergenceMonitor("t", callbacks=[early_stopping("val_error", patience=2)])
    # best at index 1; indices 2 and 3 do not improve -> stop after the 4th record
    assert _run(mon, [5.0, 1.0, 1.5, 1.2, 0.1]) == 4
    assert mon.stop_reason == "early_stopping"
    assert mon.state["best_val_error"] == 1.0 and mon.state["best_iteration"] == 1


def test_progress_lines(capsys):
    mon = ConvergenceMonitor("probe", verbose=1, fields=("iteration", "objective"))
    mon.record({"iteration": 0, "objective": 0.5, "hidden": 7})
    out = capsys.readouterr().out
    assert out.startswith("[probe] iteration 0  objective 0.5") and "hidden" not in out


def test_interruptible_keeps_history_or_reraises():
    mon = ConvergenceMonitor("t")
    with pytest.raises(KeyboardInterrupt):
        with mon.interruptible():
            raise KeyboardInterrupt  # nothing recorded: nothing to keep
    mon.record({"iteration": 0, "objective": 1.0})
    with mon.interruptible():
        raise KeyboardInterrupt
    assert mon.interrupted and mon.stop_reason == "interrupted"


def test_replace_last_notifies_without_stopping():
    seen = []
    mon = ConvergenceMonitor("t", callback=lambda r: seen.append(r) or True)
    mon.record({"iteration": 0, "objective": 2.0})
    mon.replace_last({"iteration": 0, "objective": 1.0})
    assert len(mon.history) == 1 and mon.history[0]["objective"] == 1.0 and len(seen) == 2


def test_gap_monitor_rules():
    mon = GapMonitor(tol=0.1, max_iter=10)
    mon.offer_primal(1.0, np.zeros(2))
    mon.offer_dual(0.5)
    assert not mon.record(0)  # relative gap 0.5 > 0.1
    mon.offer_dual(0.95)
    assert mon.record(1) and mon.stop_reason == "converged"
    mon = GapMonitor(tol=0.0, max_iter=2)
    mon.offer_primal(1.0, np.zeros(2))
    assert not mon.record(0) and mon.record(1) and mon.stop_reason == "max_iter"


@pytest.mark.parametrize(
    "make",
    [
        lambda cb: StructBoostClassifier(C=50, max_iter=30, callback=cb, random_state=0),
        lambda cb: SSVMClassifier(C=10, solver="1-slack", max_iter=50, callback=cb),
    ],
    ids=["structboost", "ssvm"],
)
def test_estimators_stop_when_the_callback_says_so(make):
    """A user callback returning True ends the fit after that record, through the one
    monitor every estimator reports to (StructBoost then certifies its last master: the
    final record replaces the last one and is reported again)."""
    X, y = load_digits(n_class=3, return_X_y=True)
    seen = []
    est = make(lambda rec: seen.append(rec) or len(seen) >= 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X / 16, y)
    assert len(est.history_) == 3
    assert len(seen) in (3, 4)
    assert seen[-1]["iteration"] == est.history_[-1]["iteration"]
