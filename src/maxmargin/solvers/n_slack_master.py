"""StructBoost's n-slack restricted master ([Shen2014 eq. 3], the paper's "m-slack").

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014 [Shen14].  The LP itself (HiGHS, rows and
columns added lazily) is :class:`~maxmargin.solvers.lp_master.NSlackLP`.
"""

from __future__ import annotations

import numpy as np

from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.lp_master import NSlackLP
from maxmargin.solvers.restricted_master import POLISH_TOL, RestrictedMaster

__all__ = ["NSlackMaster"]


class NSlackMaster(RestrictedMaster):
    """The paper's m-slack master ([Shen2014 eq. 3]): rows violated by more than ``eps_cp`` added
    each iteration (row generation), zero columns and rows dropped from the LP."""

    formulation = "n-slack"

    @property
    def t_oracle(self) -> float:
        return self.lp.t_oracle

    def __init__(self, task, store: ColumnStore, C: float, *, eps_cp: float, eps_cg: float, rng):
        self.task, self.store, self.C = task, store, C
        self.eps_cp, self.eps_cg = eps_cp, eps_cg
        self.lp = NSlackLP(task, store, C)
        init = task.initial_violators(rng)  # [Shen2014 Alg. 1 line 2]
        self.lp.add_rows(np.arange(task.n_samples), init.label)
        self.lp.run(row_tol=eps_cp, col_tol=eps_cg)
        self.certified = False

    @property
    def w(self) -> np.ndarray:
        return self.lp.w

    def weak_weights(self) -> np.ndarray:
        return self.lp.weak_weights()

    def add_columns(self, cols: np.ndarray) -> None:
        self.lp.activate(cols)
        self.certified = False

    def solve(self, deadline: float | None) -> dict:
        n0 = self.lp.n_solves
        self.lp.run(row_tol=self.eps_cp, col_tol=self.eps_cg, deadline=deadline)
        return {"n_cp": self.lp.n_solves - n0}

    def record(self) -> dict:
        return self.lp.record()

    def certify(self, deadline: float | None) -> bool:
        if not self.certified:
            tol = POLISH_TOL * max(float(self.lp._dense_losses().max()), 1.0)
            self.certified = self.lp.run(row_tol=tol, col_tol=POLISH_TOL, deadline=deadline)
        return self.certified
