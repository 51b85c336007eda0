"""Stored cutting planes: each row of the master remembers the (sample, output) pairs it sums.

A 1-slack plane (StructBoost eq. 9b) is ``(1/m) sum_i c_i [dPsi_i(y'_i), Delta(y_i, y'_i)]``:
it keeps the violators (c_i = 1), their outputs y'_i and weight 1/m.  An m-slack row
(eq. 3b) is the single pair (i, y).  Keeping the pairs is what lets column generation
price a brand-new weak learner in every old row (Sec. 2.2 re-uses the working set across
boosting iterations), and what maps the LP duals lambda back to mu_(i, y) (Alg. 2 l. 11).
"""

from __future__ import annotations

import numpy as np

from maxmargin.tasks.base import DualPairs

__all__ = ["WorkingSet"]

_CHUNK = 1 << 22  # pair-column products evaluated per block, bounds temporary memory


class WorkingSet:
    """Append-only list of rows, stored as concatenated pair arrays with row ids."""

    def __init__(self) -> None:
        self._row, self._sample, self._label, self._weight = [], [], [], []
        self._cache: tuple[np.ndarray, ...] | None = None
        self.n_rows = 0

    def add_rows(self, row_pairs: DualPairs, row_of_pair: np.ndarray) -> None:
        """Append rows; ``row_of_pair`` numbers them 0..r-1 locally, in order."""
        self._row.append(np.asarray(row_of_pair, dtype=np.int64) + self.n_rows)
        self._sample.append(np.asarray(row_pairs.sample, dtype=np.int64))
        self._label.append(np.asarray(row_pairs.label))
        self._weight.append(np.asarray(row_pairs.value, dtype=np.float64))
        self.n_rows += int(row_of_pair.max()) + 1 if len(row_of_pair) else 0
        self._cache = None

    def _arrays(self) -> tuple[np.ndarray, ...]:
        if self._cache is None:
            if not self._row:
                empty = np.zeros(0, dtype=np.int64)
                self._cache = (empty, empty, empty, np.zeros(0))
            else:
                self._cache = tuple(np.concatenate(a) for a in
                                    (self._row, self._sample, self._label, self._weight))
        return self._cache

    def delete_rows(self, rows: np.ndarray) -> None:
        """Remove rows (e.g. planes inactive for long); the rest are renumbered in order."""
        if len(rows) == 0:
            return
        row, sample, label, weight = self._arrays()
        gone = np.zeros(self.n_rows, dtype=bool)
        gone[rows] = True
        new_id = np.cumsum(~gone) - 1
        keep = ~gone[row]
        self._row = [new_id[row[keep]]]
        self._sample, self._label, self._weight = [sample[keep]], [label[keep]], [weight[keep]]
        self.n_rows = int((~gone).sum())
        self._cache = None

    def dual_pairs(self, row_dual: np.ndarray, tol: float = 0.0) -> DualPairs:
        """mu_(i, y) = sum_rows lambda_r * weight_r(i, y) over rows with lambda_r > tol."""
        row, sample, label, weight = self._arrays()
        lam = row_dual[row]
        keep = lam > tol
        return DualPairs(sample[keep], label[keep], lam[keep] * weight[keep])

    def column_coefficients(self, task, outputs: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Coefficients (n_rows, n_cols) of new columns in every stored row."""
        row, sample, label, weight = self._arrays()
        n_cols = len(slots)
        coef = np.zeros((self.n_rows, n_cols))
        step = max(1, _CHUNK // max(1, n_cols))
        for lo in range(0, len(row), step):
            sl = slice(lo, lo + step)
            pairs = DualPairs(sample[sl], label[sl], weight[sl])
            d = task.joint_difference(outputs, slots, pairs) * weight[sl]  # (n_cols, n)
            for j in range(n_cols):
                coef[:, j] += np.bincount(row[sl], weights=d[j], minlength=self.n_rows)
        return coef
