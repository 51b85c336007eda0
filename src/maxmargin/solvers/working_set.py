"""Stored cutting planes: each row of the master remembers the (sample, output) pairs it sums.

A 1-slack plane ([Shen2014 eq. 9b]) is ``(1/m) sum_i c_i [dPsi_i(y'_i), Delta(y_i, y'_i)]``:
it keeps the violators (c_i = 1), their outputs y'_i and weight 1/m.  An m-slack row
([Shen2014 eq. 3b]) is the single pair (i, y).  Keeping the pairs is what lets column generation
price a brand-new weak learner in every old row (Sec. 2.2 re-uses the working set across
boosting iterations), and what maps the LP duals lambda back to mu_(i, y) ([Shen2014 Alg. 2 l. 11]).
"""

from __future__ import annotations

import numpy as np

from maxmargin.tasks.base import DualPairs

__all__ = ["WorkingSet"]


class WorkingSet:
    """Rows stored as entries in growable buffers; deletion only marks rows dead.

    Rows are numbered 0..n_rows-1 in insertion order among the live ones, matching the
    row order of the LP master (which deletes the same rows).  Entries are kept in row
    order with their *global* row id (insertion number), so appending costs only the new
    entries, an active row's entries are one contiguous slice, and dead rows' entries are
    dropped by an occasional compaction.
    """

    def __init__(self) -> None:
        self._row = np.zeros(0, dtype=np.int64)  # global row id of each entry
        self._sample = np.zeros(0, dtype=np.int64)
        self._label = np.zeros(0, dtype=np.int64)
        self._weight = np.zeros(0)
        self._size = 0  # entries in use (the buffers may be longer)
        self._alive = np.zeros(0, dtype=bool)  # per global row
        self._cache: tuple[np.ndarray, ...] | None = None
        self.n_rows = 0

    def _reserve(self, extra: int) -> None:
        need = self._size + extra
        if need <= len(self._row):
            return
        cap = max(need, 2 * len(self._row), 1024)
        for name in ("_row", "_sample", "_label", "_weight"):
            old = getattr(self, name)
            buf = np.empty(cap, dtype=old.dtype)
            buf[: self._size] = old[: self._size]
            setattr(self, name, buf)

    def add_rows(self, row_pairs: DualPairs, row_of_pair: np.ndarray, n_new=None) -> None:
        """Append ``n_new`` rows (default: as many as ``row_of_pair`` names);
        ``row_of_pair`` numbers them 0..r-1 locally, in order.  A row may have no pairs
        (a plane whose joint-feature sum is zero)."""
        row_of_pair = np.asarray(row_of_pair, dtype=np.int64)
        if n_new is None:
            n_new = int(row_of_pair.max()) + 1 if len(row_of_pair) else 0
        k = len(row_of_pair)
        self._reserve(k)
        sl = slice(self._size, self._size + k)
        self._row[sl] = row_of_pair + len(self._alive)
        self._sample[sl] = row_pairs.sample
        self._label[sl] = row_pairs.label
        self._weight[sl] = row_pairs.value
        self._size += k
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
        """Drop dead rows' entries; live rows get global ids 0..n_rows-1."""
        row, sample, label, weight = self._arrays()
        self._row, self._sample = row.copy(), sample.copy()
        self._label, self._weight = label.copy(), weight.copy()
        self._size = len(row)
        self._alive = np.ones(self.n_rows, dtype=bool)
        self._cache = None

    def _arrays(self) -> tuple[np.ndarray, ...]:
        """(current row index, sample, label, weight) of every live entry."""
        if self._cache is None:
            n = self._size
            row = self._row[:n]
            arrays = (self._sample[:n], self._label[:n], self._weight[:n])
            if self.n_rows == len(self._alive):  # nothing deleted: ids are current
                self._cache = (row, *arrays)
            else:
                keep = self._alive[row]
                current = np.cumsum(self._alive) - 1
                self._cache = (current[row[keep]], *(a[keep] for a in arrays))
        return self._cache

    def dual_pairs(self, row_dual: np.ndarray, tol: float = 0.0) -> DualPairs:
        """mu_(i, y) = sum_rows lambda_r * weight_r(i, y) over rows with lambda_r > tol.

        Only the entries of active rows are touched (each is one contiguous slice): an
        LP basis has few positive duals, while 1-slack planes can hold up to m entries.
        """
        row_dual = np.asarray(row_dual)
        active = np.flatnonzero(row_dual > tol)
        glob = np.flatnonzero(self._alive)[active]
        row = self._row[: self._size]
        lo = np.searchsorted(row, glob, side="left")
        hi = np.searchsorted(row, glob, side="right")
        lengths = hi - lo
        # indices lo[a] .. hi[a]-1 of every active row a, concatenated
        idx = np.repeat(lo - (np.cumsum(lengths) - lengths), lengths)
        idx += np.arange(len(idx))
        lam = np.repeat(row_dual[active], lengths)
        return DualPairs(self._sample[idx], self._label[idx], lam * self._weight[idx])

    def column_coefficients(
        self, task, outputs: np.ndarray, col_hyp: np.ndarray, slots: np.ndarray
    ) -> np.ndarray:
        """Coefficients (n_rows, n_cols) of new columns in every stored row.

        Column j is weak classifier ``outputs[col_hyp[j]]`` in slot ``slots[j]``.  Sums
        run over every stored row by global id, dead ones included (at most half of the
        entries, see :meth:`delete_rows`), and the live rows are picked afterwards: no
        gather of the live entries.
        """
        n = self._size
        pairs = DualPairs(self._sample[:n], self._label[:n], self._weight[:n])
        out = task.aggregate_difference(
            outputs, col_hyp, slots, pairs, self._row[:n], len(self._alive)
        )
        return out if self.n_rows == len(self._alive) else out[self._alive]
