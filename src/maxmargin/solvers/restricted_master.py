"""The restricted-master protocol of StructBoost's column generation ([Shen2014 Alg. 1]).

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014 [Shen14].

A restricted master holds the problem over the columns (weak classifier, slot) found so
far and gives [Shen2014 Alg. 1] (:func:`maxmargin.solvers.column_generation.fit_structboost`) the
duals it prices with.  One master per module:

* :class:`~maxmargin.solvers.smoothed_master.SmoothedMaster` (``master="fast"``) -- the
  log-sum-exp smoothed problem by L-BFGS, certified by a gap (continuation) or the exact
  n-slack LP;
* :class:`~maxmargin.solvers.n_slack_master.NSlackMaster` (``master="exact"``,
  ``formulation="n-slack"``; the paper's "m-slack", [Shen2014 eq. 3]) -- the LP with row
  generation;
* :class:`~maxmargin.solvers.one_slack_master.OneSlackMaster` (``formulation="1-slack"``,
  [Shen2014 eq. 9]) -- Kelley's cutting planes, [Shen2014 Alg. 2].

The loop uses only the members below.  The optional ones have defaults here, so the loop
never asks a master what it is.
"""

from __future__ import annotations

import numpy as np

__all__ = ["POLISH_TOL", "RestrictedMaster"]

#: row and reduced-cost tolerance of the exact polish (relative to the loss / unit cost)
POLISH_TOL = 1e-9


class RestrictedMaster:
    """What [Shen2014 Alg. 1] asks of a restricted master (subclasses implement the abstract part).

    Required: ``w`` (weights of every stored column), :meth:`weak_weights` (the duals as
    the weak learner's sample weights), :meth:`add_columns`, :meth:`solve`,
    :meth:`record` (``objective``, ``dual_bound``, ``master_objective``, ``xi``,
    ``n_planes``), :meth:`certify` (the exact optimum, or the promised gap, over the
    current columns), ``certified`` and ``t_oracle`` (seconds in the task's oracle).
    """

    #: the exact optimum (or the promised gap) over the current columns is reached
    certified: bool = False
    #: a certificate cannot be reached (the continuation stalled at its sharpest
    #: smoothing): the loop stops with ``stop_reason="stalled"``
    stalled: bool = False
    #: the exact LP failed numerically (huge C): the loop stops with "numerical"
    failed: bool = False
    #: whether the fit ends with :meth:`certify` (False: ``certify="none"``)
    wants_certificate: bool = True
    #: seconds spent in the task's oracle (loss-augmented inference)
    t_oracle: float = 0.0

    # -- required -----------------------------------------------------------------------
    @property
    def w(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def weak_weights(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def add_columns(self, cols: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def solve(self, deadline: float | None) -> dict:  # pragma: no cover - abstract
        """Re-solve over the current columns; returns ``{"n_cp": inner steps}``."""
        raise NotImplementedError

    def record(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def certify(self, deadline: float | None) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- optional (defaults: an exact master) ------------------------------------------
    @property
    def pricing_threshold(self) -> float | None:
        """Gain a new weak learner must exceed (None: the loop's ``1 + eps_cg``)."""
        return None

    def can_tighten(self) -> bool:
        """Whether a cheap :meth:`tighten` should come before a certificate."""
        return False

    def tighten(self, deadline: float | None) -> int:
        """A few more inner steps at a tight tolerance; returns the steps taken."""
        return 0

    def full_gap_met(self) -> bool:
        """Whether the certified gap to the *full* problem (every weak classifier) is
        already within the promised tolerance, so no column need enter."""
        return False

    def note_pricing(self, best_gain: float) -> None:
        """The exact weak-learner search's largest gain at the current duals."""

    def note_best_gain(self, best_gain: float) -> None:
        """Any weak-learner search's largest gain at the current duals (exact or not):
        what an inexact master sets its next inner tolerance from."""

    @property
    def loose(self) -> bool:
        """The last solve stopped at a looser inner tolerance than the master's own
        (an inexact master): :meth:`finish` completes it before a certificate."""
        return False

    def finish(self, deadline: float | None) -> int:
        """Re-solve at the master's own inner tolerance after loose solves; returns the
        inner steps taken."""
        return 0

    def priced_again(self, cols: np.ndarray) -> np.ndarray:
        """Of the stored columns ``cols`` that priced again, those the master must
        re-open (outside its working set); :meth:`reopen` takes them."""
        return np.zeros(0, dtype=np.int64)

    def reopen(self, cols: np.ndarray) -> None:
        """Stored columns ``cols`` move again (see :meth:`priced_again`)."""

    def exact_scores(self) -> bool:
        """At the end of a fit: recompute what :meth:`record` reports at the current
        ``w`` from float64 scores, where the inner steps kept them in lower precision;
        True when the record changed (exact masters: never)."""
        return False

    def set_start(self, w: np.ndarray) -> None:
        """A starting point over the stored columns (warm start), if the master uses
        one; exact masters find their own."""
