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


class WorkingSet:
    """Rows stored in append-only batches; deletion only marks rows dead.

    Rows are numbered 0..n_rows-1 in insertion order among the live ones, matching the
    row order of the LP master (which deletes the same rows).  Concatenated arrays are
    built lazily, once per boosting iteration rather than once per cutting plane.
    """

    def __init__(self) -> None:
        self._batches: list[tuple[np.ndarray, ...]] = []
        self._alive = np.zeros(0, dtype=bool)
        self._cache: tuple[np.ndarray, ...] | None = None
        self.n_rows = 0

    def add_rows(self, row_pairs: DualPairs, row_of_pair: np.ndarray, n_new=None) -> None:
        """Append ``n_new`` rows (default: as many as ``row_of_pair`` names);
        ``row_of_pair`` numbers them 0..r-1 locally, in order.  A row may have no pairs
        (a plane whose joint-feature sum is zero)."""
        row_of_pair = np.asarray(row_of_pair, dtype=np.int64)
        if n_new is None:
            n_new = int(row_of_pair.max()) + 1 if len(row_of_pair) else 0
        base = len(self._alive)
        self._batches.append(
            (
                row_of_pair + base,
                np.asarray(row_pairs.sample, dtype=np.int64),
                np.asarray(row_pairs.label),
                np.asarray(row_pairs.value, dtype=np.float64),
            )
        )
        self._alive = np.concatenate([self._alive, np.ones(n_new, dtype=bool)])
        self.n_rows += n_new
        self._cache = None

    def delete_rows(self, rows: np.ndarray) -> None:
        """Remove rows by their current index; the rest keep their order."""
        if len(rows) == 0:
            return
        self._alive[np.flatnonzero(self._alive)[rows]] = False
        self.n_rows = int(self._alive.sum())
        self._cache = None
        if self.n_rows < 0.5 * len(self._alive):
            self._compact()

    def _compact(self) -> None:
        row, sample, label, weight = self._arrays()
        self._batches = [(row, sample, label, weight)]
        self._alive = np.ones(self.n_rows, dtype=bool)
        self._cache = (row, sample, label, weight)

    def _arrays(self) -> tuple[np.ndarray, ...]:
        """(current row index, sample, label, weight) of every live pair."""
        if self._cache is None:
            if not self._batches:
                empty = np.zeros(0, dtype=np.int64)
                self._cache = (empty, empty, empty, np.zeros(0))
            else:
                grow, sample, label, weight = (np.concatenate(a) for a in zip(*self._batches))
                keep = self._alive[grow]
                current = np.cumsum(self._alive) - 1
                self._cache = (current[grow[keep]], sample[keep], label[keep], weight[keep])
        return self._cache

    def dual_pairs(self, row_dual: np.ndarray, tol: float = 0.0) -> DualPairs:
        """mu_(i, y) = sum_rows lambda_r * weight_r(i, y) over rows with lambda_r > tol.

        Only the entries of active rows are touched: stored entries are ordered by row
        (rows are appended in order and deletion keeps the order), so each active row is
        one contiguous slice.  An LP basis has few positive duals, while 1-slack planes
        can hold up to m entries each.
        """
        row, sample, label, weight = self._arrays()
        row_dual = np.asarray(row_dual)
        active = np.flatnonzero(row_dual > tol)
        lo = np.searchsorted(row, active, side="left")
        hi = np.searchsorted(row, active, side="right")
        lengths = hi - lo
        total = int(lengths.sum())
        # indices lo[a] .. hi[a]-1 of every active row a, concatenated
        idx = np.repeat(lo - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        idx += np.arange(total)
        return DualPairs(sample[idx], label[idx], row_dual[row[idx]] * weight[idx])

    def column_coefficients(
        self, task, outputs: np.ndarray, col_hyp: np.ndarray, slots: np.ndarray
    ) -> np.ndarray:
        """Coefficients (n_rows, n_cols) of new columns in every stored row.

        Column j is weak classifier ``outputs[col_hyp[j]]`` in slot ``slots[j]``.
        """
        row, sample, label, weight = self._arrays()
        return task.aggregate_difference(
            outputs, col_hyp, slots, DualPairs(sample, label, weight), row, self.n_rows
        )
