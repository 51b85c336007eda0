"""The columns of StructBoost's master: weak classifiers, their outputs and their slots.

A column is a weak structured learner ``psi_(phi, s)``: a weak classifier ``phi`` entering
slot ``s`` of the task's joint feature map ([Shen2014 eq. 11]; see
:mod:`maxmargin.tasks.base`).  Every master (smoothed, m-slack LP, 1-slack LP) needs the
classifiers' outputs ``H[h] = phi_h(z)`` on the task's weak inputs ``z``: the slot scores
of a weight vector are ``F = H' W`` with ``W[h, s]`` the weight of column ``(h, s)``, and a
column's gain under signed weights ``A`` is ``(H A)[h, s]``.  ``H`` lives in a growable
buffer (appending a classifier copies only its own row), and identical classifiers are
found by hashing a fixed sample of their outputs and comparing the outputs in full, so an
inexact master cannot make the same weak learner enter twice.  A float32 mirror of ``H``
serves the smoothed master's inner products (half the memory traffic); everything exact
(LP coefficients, certificates) uses float64.

Gains ``(H A)[h, s]`` of the columns -- exact from the float64 outputs (certificates,
LP coefficients) or fast from the float32 mirror (the smoothed master's per-step
gradient) -- and the line search's shifted scores ``F + H' dW``
(:meth:`ColumnStore.shifted_scores`, float32 outputs) take one of two routes, chosen by
the sizes alone:

* the classifiers sit in few of the task's slots (chains, trackers; ``_sparse_slots``):
  compiled kernels over the columns only, summing in float64 -- the dense ``H A`` over
  all slots would do up to ``n_slots`` times the needed work;
* otherwise (multi-class: classifiers in every slot): dense BLAS products in fixed
  pieces of rows (:func:`~maxmargin.inference._threads.product_pieces`), each piece one
  single-threaded call, in the outputs' precision.

Either way the work is cut into pieces fixed by the sizes (one column's dot product; one
block of weak inputs; one row piece), each computed by one thread in a fixed order, so
``threads`` (the fit's ``n_jobs``) changes the speed and never the numbers.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from maxmargin.inference._threads import numba_threads, product_pieces, run_pieces
from maxmargin.weak.base import Hypotheses

__all__ = ["ColumnStore"]

#: weak inputs per block of :func:`_shifted_scores` (a block's slot sums stay in cache)
_BLOCK = 256
#: below this many multiply-adds the kernels run on one thread (waking the pool costs more)
_PARALLEL_WORK = 1 << 17
#: the column kernels serve the fast products when at most 1 / _SLOT_FILL of the
#: (classifier, slot) pairs are columns
_SLOT_FILL = 4
_FAST = {"reassoc", "contract", "nsz"}  # reassociation: the dot products vectorise


@njit(cache=True, parallel=True, nogil=True)
def _transpose(A, out):  # pragma: no cover - compiled
    """``out[s, z] = A[z, s]`` (converted to out's dtype), over fixed blocks of z."""
    n_z, S = A.shape
    nb = (n_z + _BLOCK - 1) // _BLOCK
    for b in prange(nb):
        for z in range(b * _BLOCK, min(n_z, (b + 1) * _BLOCK)):
            for s in range(S):
                out[s, z] = A[z, s]


@njit(cache=True, parallel=True, nogil=True, fastmath=_FAST)
def _column_dots(H, AT, col_hyp, col_slot, out):  # pragma: no cover - compiled
    """``out[j] = sum_z H[col_hyp[j], z] AT[col_slot[j], z]`` in float64, one column per
    iteration (its order of summation does not depend on the threads)."""
    n_z = H.shape[1]
    for j in prange(len(col_hyp)):
        h, s = col_hyp[j], col_slot[j]
        acc = 0.0
        for z in range(n_z):
            acc += np.float64(H[h, z]) * np.float64(AT[s, z])
        out[j] = acc


@njit(cache=True, parallel=True, nogil=True)
def _shifted_scores(F, H, col_hyp, col_slot, dw, cols, out):  # pragma: no cover - compiled
    """``out = F + H' dW`` over the columns ``cols`` (those with ``dw != 0``), in fixed
    blocks of weak inputs: each block sums its columns in column order into a local
    (slot, input) buffer, then adds F."""
    n_z, S = F.shape
    nb = (n_z + _BLOCK - 1) // _BLOCK
    for b in prange(nb):
        a = b * _BLOCK
        e = min(n_z, a + _BLOCK)
        n = e - a
        acc = np.zeros((S, n))
        for jj in range(len(cols)):
            j = cols[jj]
            d = dw[j]
            row, acc_s = H[col_hyp[j], a:e], acc[col_slot[j]]  # 1-d views: the loop vectorises
            for i in range(n):
                acc_s[i] += d * np.float64(row[i])
        for i in range(n):
            for s in range(S):
                out[a + i, s] = F[a + i, s] + acc[s, i]


class ColumnStore:
    """Weak classifiers in the model and the (classifier, slot) columns built from them.

    Columns are numbered in the order they entered; ``col_hyp[j]`` and ``col_slot[j]`` say
    which classifier and slot column ``j`` is.  ``index[h, s]`` is the column number of
    ``(h, s)`` or -1.
    """

    def __init__(
        self,
        hyp_class,
        n_features: int,
        n_z: int,
        n_slots: int,
        threads: int = 1,
        capacity: int = 16,
    ) -> None:
        self.hyps = hyp_class.empty(n_features)
        #: threads for the pieces of the big products (results do not depend on it)
        self.threads = max(1, int(threads))
        self.n_z = int(n_z)
        self.n_slots = int(n_slots)
        # classifiers' rows allocated up front (the buffers double when they are full)
        cap = max(int(capacity), 16)
        self._H = np.zeros((cap, self.n_z))
        self._H32 = np.zeros((cap, self.n_z), dtype=np.float32)
        self._index = np.full((cap, self.n_slots), -1, dtype=np.int64)
        self.n_hyp = 0
        self.col_hyp = np.zeros(0, dtype=np.int64)
        self.col_slot = np.zeros(0, dtype=np.int64)
        self._seen: dict[bytes, list[int]] = {}
        # outputs hashed on a fixed sample of at most 256 inputs, then compared in full
        self._probe = np.unique(np.linspace(0, max(self.n_z - 1, 0), 256).astype(np.intp))

    # -- views ---------------------------------------------------------------------------
    @property
    def H(self) -> np.ndarray:
        """Outputs of every classifier on the weak inputs, shape (n_hyp, n_z)."""
        return self._H[: self.n_hyp]

    @property
    def H32(self) -> np.ndarray:
        """``H`` in float32, for approximate inner products."""
        return self._H32[: self.n_hyp]

    @property
    def index(self) -> np.ndarray:
        return self._index[: self.n_hyp]

    @property
    def n_columns(self) -> int:
        return len(self.col_hyp)

    # -- growth --------------------------------------------------------------------------
    def _grow(self, extra: int) -> None:
        need = self.n_hyp + extra
        if need <= len(self._H):
            return
        cap = max(need, 2 * len(self._H))
        H = np.zeros((cap, self.n_z))
        H[: self.n_hyp] = self.H
        H32 = np.zeros((cap, self.n_z), dtype=np.float32)
        H32[: self.n_hyp] = self.H32
        index = np.full((cap, self.n_slots), -1, dtype=np.int64)
        index[: self.n_hyp] = self.index
        self._H, self._H32, self._index = H, H32, index

    def _key(self, outputs: np.ndarray) -> bytes:
        return outputs[self._probe].tobytes() if self.n_z else b""

    def _lookup(self, outputs: np.ndarray, key: bytes) -> int:
        for h in self._seen.get(key, ()):
            if np.array_equal(self._H[h], outputs):
                return h
        return -1

    def find(self, outputs: np.ndarray) -> int:
        """Index of a stored classifier with exactly these outputs, or -1."""
        outputs = np.ascontiguousarray(outputs, dtype=np.float64)
        return self._lookup(outputs, self._key(outputs))

    def add(self, new_hyps: Hypotheses, outputs: np.ndarray, slots_per_hyp) -> np.ndarray:
        """Add classifiers (or reuse identical stored ones) in the given slots.

        Returns the numbers of the columns created (pairs already present are skipped);
        ``last_rows`` then holds the stored classifier number of each given classifier.
        """
        outputs = np.asarray(outputs, dtype=np.float64).reshape(len(new_hyps), self.n_z)
        new_cols = []
        taken = []  # new classifiers, in the order they get their numbers
        self._grow(len(new_hyps))
        self.last_rows = np.empty(len(new_hyps), dtype=np.int64)
        for k in range(len(new_hyps)):  # one step per new classifier (not per input)
            key = self._key(outputs[k])
            h = self._lookup(outputs[k], key)
            self.last_rows[k] = self.n_hyp if h < 0 else h
            if h < 0:
                h = self.n_hyp
                self._H[h] = outputs[k]
                self._H32[h] = outputs[k]
                taken.append(k)
                self.n_hyp += 1
                self._seen.setdefault(key, []).append(h)
            for s in np.asarray(slots_per_hyp[k], dtype=np.int64):
                if self._index[h, s] < 0:
                    self._index[h, s] = self.n_columns + len(new_cols)
                    new_cols.append((h, s))
        if taken:
            self.hyps = self.hyps.concat(new_hyps.take(np.array(taken)))
        if new_cols:
            hs = np.array(new_cols, dtype=np.int64)
            self.col_hyp = np.concatenate([self.col_hyp, hs[:, 0]])
            self.col_slot = np.concatenate([self.col_slot, hs[:, 1]])
        return np.arange(self.n_columns - len(new_cols), self.n_columns)

    # -- products ------------------------------------------------------------------------
    def weight_matrix(self, w: np.ndarray) -> np.ndarray:
        """Column weights as the (n_hyp, n_slots) matrix W."""
        W = np.zeros((self.n_hyp, self.n_slots))
        W[self.col_hyp, self.col_slot] = w
        return W

    def scores(self, w: np.ndarray) -> np.ndarray:
        """Slot scores ``F = H' W`` on the weak inputs, shape (n_z, n_slots)."""
        if self.n_hyp == 0:
            return np.zeros((self.n_z, self.n_slots))
        return self.H.T @ self.weight_matrix(w)

    def _sparse_slots(self) -> bool:
        """Whether the classifiers sit in few of the slots (a quarter or less of the
        (classifier, slot) pairs are columns): then the column kernels do less work than
        the dense ``H A`` over every slot, which is several times faster per product
        (BLAS) and wins when most pairs are columns (measured, docs/benchmarks.md)."""
        return _SLOT_FILL * self.n_columns <= self.n_hyp * self.n_slots

    def _threads_for(self, work: int) -> int:
        return self.threads if work >= _PARALLEL_WORK else 1

    def gains(self, A: np.ndarray, fast: bool = False) -> np.ndarray:
        """Gain ``sum_z A[z, s] phi_h(z)`` of every column under signed weights A.

        ``fast``: from the float32 outputs (the smoothed master's per-step gradient);
        otherwise from the float64 outputs (certificates, LP coefficients).  Sums are in
        float64 either way when the classifiers sit in few slots (the column kernels);
        otherwise dense BLAS products in the outputs' precision."""
        if self.n_columns == 0:
            return np.zeros(0)
        A = np.asarray(A, dtype=np.float64)
        if A.shape != (self.n_z, self.n_slots):
            raise ValueError(f"A must have shape {(self.n_z, self.n_slots)}, got {A.shape}")
        if self._sparse_slots():
            H = self.H32 if fast else self.H
            AT = np.empty((self.n_slots, self.n_z), dtype=H.dtype)
            out = np.empty(self.n_columns)
            with numba_threads(self._threads_for(self.n_columns * self.n_z)):
                _transpose(A, AT)
                _column_dots(H, AT, self.col_hyp, self.col_slot, out)
            return out
        if fast:
            H, A = self.H32, np.ascontiguousarray(A, dtype=np.float32)
        else:
            H, A = self.H, np.ascontiguousarray(A)
        G = np.empty((self.n_hyp, A.shape[1]), dtype=H.dtype)

        def piece(a, b):
            np.matmul(H[a:b], A, out=G[a:b])

        run_pieces(piece, product_pieces(self.n_hyp, H.size), self.threads)
        return G[self.col_hyp, self.col_slot].astype(np.float64, copy=False)

    def gains_of(self, A: np.ndarray, cols: np.ndarray, fast: bool = False) -> np.ndarray:
        """Gains of the columns ``cols`` only (see :meth:`gains`): the products touch only
        their classifiers' outputs, so a working set of columns costs its own size."""
        cols = np.asarray(cols, dtype=np.int64)
        if len(cols) == self.n_columns:
            return self.gains(A, fast)
        if len(cols) == 0:
            return np.zeros(0)
        A = np.asarray(A, dtype=np.float64)
        if A.shape != (self.n_z, self.n_slots):
            raise ValueError(f"A must have shape {(self.n_z, self.n_slots)}, got {A.shape}")
        H = self.H32 if fast else self.H
        if self._sparse_slots():
            AT = np.empty((self.n_slots, self.n_z), dtype=H.dtype)
            out = np.empty(len(cols))
            with numba_threads(self._threads_for(len(cols) * self.n_z)):
                _transpose(A, AT)
                _column_dots(H, AT, self.col_hyp[cols], self.col_slot[cols], out)
            return out
        hs = np.unique(self.col_hyp[cols])
        Hs = H[hs]
        A = np.ascontiguousarray(A, dtype=H.dtype)
        G = np.empty((len(hs), A.shape[1]), dtype=H.dtype)

        def piece(a, b):
            np.matmul(Hs[a:b], A, out=G[a:b])

        run_pieces(piece, product_pieces(len(hs), Hs.size), self.threads)
        rows = np.searchsorted(hs, self.col_hyp[cols])
        return G[rows, self.col_slot[cols]].astype(np.float64, copy=False)

    def shifted_scores(self, F: np.ndarray, dw: np.ndarray) -> np.ndarray:
        """``F + H' dW`` from the float32 outputs, summed in float64 (the smoothed
        master's line search): slot scores after the column weights change by ``dw``."""
        F = np.ascontiguousarray(F, dtype=np.float64)
        dw = np.asarray(dw, dtype=np.float64)
        if F.shape != (self.n_z, self.n_slots) or dw.shape != (self.n_columns,):
            raise ValueError("F or dw does not match the store's shape")
        if not self._sparse_slots():  # classifiers in most slots: dense pieces
            # only the classifiers whose weights move (a working set of the smoothed
            # master): the product costs their number, not the model's size
            nz = np.flatnonzero(dw)
            hs = np.unique(self.col_hyp[nz])
            dW = np.zeros((len(hs), self.n_slots), dtype=np.float32)
            dW[np.searchsorted(hs, self.col_hyp[nz]), self.col_slot[nz]] = dw[nz]
            H32 = self.H32[hs] if len(hs) < self.n_hyp else self.H32
            change = np.empty((self.n_z, self.n_slots), dtype=np.float32)

            def piece(a, b):
                np.matmul(H32[:, a:b].T, dW, out=change[a:b])

            run_pieces(piece, product_pieces(self.n_z, H32.size), self.threads)
            return F + change
        cols = np.flatnonzero(dw)
        out = np.empty_like(F)
        with numba_threads(self._threads_for(max(len(cols), 1) * self.n_z)):
            _shifted_scores(F, self.H32, self.col_hyp, self.col_slot, dw, cols, out)
        return out
