"""``max_time`` bounds the whole StructBoost fit, the final certificate included (issue 28).

The bound itself is checked in pieces of work, on a counting clock, by
``test_structboost_max_time_pieces.py`` (it replaced a wall-clock test here whose slack had
to absorb the certificate's own time).  This file keeps the direct check of the guard: a
certificate asked for after the deadline never starts the continuation.
"""

import pytest
from sklearn.datasets import load_digits

from maxmargin import StructBoostClassifier


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:600], y[:600]


def test_no_certificate_work_once_the_time_is_spent(digits, monkeypatch):
    """A certificate asked for after the deadline does nothing (returns not certified)
    instead of a refresh and a round of steps past ``max_time``."""
    from maxmargin.solvers import smoothed_master

    calls = []
    real = smoothed_master.SmoothedMaster._certify_by_continuation

    def spy(self, deadline):
        calls.append(deadline)
        return real(self, deadline)

    monkeypatch.setattr(smoothed_master.SmoothedMaster, "_certify_by_continuation", spy)
    X, y = digits
    clf = StructBoostClassifier(C=100.0, max_iter=100_000, max_time=1e-9).fit(X[:200], y[:200])
    assert calls == [] and not clf.history_[-1]["certified"]
