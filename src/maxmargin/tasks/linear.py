"""Linear joint features ``Psi(x, y)`` for the structured SVM solvers.

Every task the SSVM family trains is represented by one :class:`LinearJointModel`: a set
of sequences of *positions* (a flat classification example is a sequence of length 1),
each position t with an input row ``x_t`` (dense or sparse) and a state ``y_t`` among K,
a (K, S) state-coding matrix ``Gamma`` and a (K, K) per-position loss matrix ``L``:

    Psi(x, y) = [ sum_t x_t (x) Gamma[y_t] ,  sum_{t<T-1} e_{y_t} (x) e_{y_{t+1}} ]
    Delta(y*, y) = sum_t L[y*_t, y_t]

The transition block is present only for chains (``pairwise=True``).  With T = 1 this is
exactly the :class:`~maxmargin.tasks.base.LabelCodingTask` feature map
``Phi(x) (x) Gamma(y)`` (binary, Crammer-Singer multi-class, hierarchical), so
``U = X W Gamma^T`` are the label scores and the ``slot scores`` ``F = X W`` of the
task protocol; with ``Gamma = I`` and the Hamming loss it is the linear-chain model of
:class:`~maxmargin.tasks.chain.ChainTask`.

The weight vector is ``w = [vec(W) (d*S, row-major), vec(P) (K*K)]``.  Joint-feature
differences ``dPsi_i(y) = Psi(x_i, y*_i) - Psi(x_i, y)`` are never stored densely per
constraint: the solvers keep labellings and use the batch BLAS path (:meth:`plane`,
:meth:`unary`) or the per-example numba kernels below.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from maxmargin.inference._threads import numba_threads
from maxmargin.inference.viterbi import (
    _loss_aug_into,
    _slack_into,
    batch_evaluate,
    batch_loss_augmented,
    chain_score,
)

__all__ = ["JointLayout", "LinearJointModel", "from_label_coding", "rescaled_hinge"]


def rescaled_hinge(loss, margin, rescaling):
    """Hinge ``max(0, Delta - m)`` (margin) or ``Delta * max(0, 1 - m)`` (slack)."""
    if rescaling == "slack":
        return loss * np.maximum(0.0, 1.0 - margin)
    return np.maximum(0.0, loss - margin)


@njit(parallel=True, cache=True)
def _dense_row_counts(X, counts):  # pragma: no cover - numba
    for i in prange(X.shape[0]):
        c = 0
        for j in range(X.shape[1]):
            if X[i, j] != 0.0:
                c += 1
        counts[i] = c


@njit(parallel=True, cache=True)
def _dense_rows_fill(X, indptr, indices, data):  # pragma: no cover - numba
    for i in prange(X.shape[0]):
        k = indptr[i]
        for j in range(X.shape[1]):
            v = X[i, j]
            if v != 0.0:
                indices[k] = j
                data[k] = v
                k += 1


def dense_to_csr(X: np.ndarray, threads: int = 1):
    """CSR arrays ``(indptr, indices, data)`` (int64, int64, float64) of a dense C-ordered
    matrix, rows split over ``threads`` numba threads (no arithmetic: the same arrays
    for any thread count; the non-zeros are those of ``scipy.sparse.csr_matrix(X)``)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    counts = np.empty(X.shape[0], dtype=np.int64)
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    with numba_threads(threads):
        _dense_row_counts(X, counts)
        np.cumsum(counts, out=indptr[1:])
        indices = np.empty(indptr[-1], dtype=np.int64)
        data = np.empty(indptr[-1], dtype=np.float64)
        _dense_rows_fill(X, indptr, indices, data)
    return indptr, indices, data


class JointLayout(NamedTuple):
    """Everything the per-example numba kernels read about a :class:`LinearJointModel`,
    passed as one argument (numba compiles a NamedTuple of arrays like a struct)."""

    n_unary: int  # length of the unary block of w (d * S)
    S: int  # slots per input feature
    K: int  # states per position
    indptr: np.ndarray  # CSR rows of the positions' inputs
    indices: np.ndarray
    data: np.ndarray
    offsets: np.ndarray  # sequence i is positions offsets[i]:offsets[i+1]
    ytrue: np.ndarray  # true state of every position
    gamma: np.ndarray  # (K, S) state coding
    loss: np.ndarray  # (K, K) per-position loss
    onehot: bool  # gamma is the identity (skip the coding product)
    pairwise: bool  # chain transitions present


class LinearJointModel:
    """Training data with linear joint features; the oracles of every SSVM solver.

    Parameters
    ----------
    X : ndarray or sparse matrix, shape (n_positions, d)
    offsets : int array (n + 1,)
        Sequence i is rows ``offsets[i]:offsets[i+1]``.
    y : int array (n_positions,)
        True states.
    gamma : (K, S) state coding.
    loss : (K, K) per-position loss, zero diagonal, non-negative.
    pairwise : bool
        Whether transition features are part of ``Psi``.
    """

    def __init__(self, X, offsets, y, gamma, loss, pairwise: bool):
        if sp.issparse(X):
            self.X = sp.csr_matrix(X, dtype=np.float64)
            self.X.sort_indices()
        else:
            self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.gamma = np.ascontiguousarray(gamma, dtype=np.float64)
        self.loss = np.ascontiguousarray(loss, dtype=np.float64)
        self.pairwise = bool(pairwise)
        self.n_samples = len(self.offsets) - 1
        self.n_positions, self.n_features = self.X.shape
        self.n_states, self.n_slots = self.gamma.shape
        K, S = self.gamma.shape
        self.onehot = K == S and np.array_equal(self.gamma, np.eye(K))
        self.n_unary = self.n_features * S
        self.dim = self.n_unary + (K * K if self.pairwise else 0)
        self.lengths = np.diff(self.offsets)
        self.max_length = int(self.lengths.max()) if self.n_samples else 0
        # positions t whose successor t+1 is in the same sequence
        inner = np.ones(max(self.n_positions - 1, 0), dtype=bool)
        ends = self.offsets[1:-1] - 1
        inner[ends[(ends >= 0) & (ends < len(inner))]] = False
        self._tpos = np.flatnonzero(inner)
        self._csr = None
        self._seq_gram = None
        if self.n_positions != len(self.y) or self.offsets[-1] != self.n_positions:
            raise ValueError("offsets, X and y disagree on the number of positions")
        if np.any(self.lengths < 1):
            raise ValueError("every sequence needs at least one position")
        if self.loss.shape != (K, K) or np.any(np.diag(self.loss) != 0) or np.any(self.loss < 0):
            raise ValueError("loss matrix must be (K, K), zero on the diagonal, non-negative")
        # slack rescaling is exact for flat tasks (any loss) and Hamming chains
        self._slack_ok = self.max_length == 1 or np.array_equal(self.loss, 1.0 - np.eye(K))

    # ------------------------------------------------------------------ layout
    def split(self, w):
        """Views ``(W (d, S), P (K, K))`` of a flat weight vector (P is zero if absent)."""
        W = w[: self.n_unary].reshape(self.n_features, self.n_slots)
        if self.pairwise:
            P = w[self.n_unary :].reshape(self.n_states, self.n_states)
        else:
            P = np.zeros((self.n_states, self.n_states))
        return W, P

    def csr(self, threads: int = 1):
        """CSR arrays ``(indptr, indices, data)`` for the per-example numba kernels
        (a dense ``X`` converted on ``threads`` numba threads, see :func:`dense_to_csr`)."""
        if self._csr is None:
            if sp.issparse(self.X):
                M = self.X
                M.sort_indices()
                self._csr = (
                    M.indptr.astype(np.int64),
                    M.indices.astype(np.int64),
                    M.data.astype(np.float64),
                )
            else:
                self._csr = dense_to_csr(self.X, threads)
        return self._csr

    def shard_layout(self, a: int, b: int, threads: int = 1) -> JointLayout:
        """The kernel arrays of sequences ``a..b-1`` (offsets and CSR rows re-based; the
        column and value arrays are views of the whole model's)."""
        indptr, indices, data = self.csr(threads)
        p0, p1 = int(self.offsets[a]), int(self.offsets[b])
        q0, q1 = int(indptr[p0]), int(indptr[p1])
        return JointLayout(
            int(self.n_unary),
            int(self.n_slots),
            int(self.n_states),
            indptr[p0 : p1 + 1] - q0,
            indices[q0:q1],
            data[q0:q1],
            self.offsets[a : b + 1] - p0,
            self.y[p0:p1],
            self.gamma,
            self.loss,
            bool(self.onehot),
            bool(self.pairwise),
        )

    def layout(self) -> JointLayout:
        """The arrays of the per-example numba kernels as one :class:`JointLayout`."""
        return JointLayout(
            int(self.n_unary),
            int(self.n_slots),
            int(self.n_states),
            *self.csr(),
            self.offsets,
            self.y,
            self.gamma,
            self.loss,
            bool(self.onehot),
            bool(self.pairwise),
        )

    def seq_gram(self):
        """Flattened Gram matrices ``X_i X_i^T`` of every sequence (and their offsets)."""
        if self._seq_gram is None:
            L = self.lengths
            goff = np.zeros(self.n_samples + 1, dtype=np.int64)
            np.cumsum(L * L, out=goff[1:])
            if self.max_length == 1:
                X = self.X
                g = (
                    np.asarray(X.multiply(X).sum(axis=1)).ravel()
                    if sp.issparse(X)
                    else np.einsum("ij,ij->i", X, X)
                )
            else:
                g = np.empty(goff[-1])
                for i in range(self.n_samples):
                    Xi = self.X[self.offsets[i] : self.offsets[i + 1]]
                    Gi = Xi @ Xi.T
                    Gi = Gi.toarray() if sp.issparse(Gi) else Gi
                    g[goff[i] : goff[i + 1]] = np.asarray(Gi).ravel()
            self._seq_gram = (goff, np.ascontiguousarray(g, dtype=np.float64))
        return self._seq_gram

    def check_rescaling(self, rescaling):
        if rescaling not in ("margin", "slack"):
            raise ValueError(f"rescaling must be 'margin' or 'slack', got {rescaling!r}")
        if rescaling == "slack" and not self._slack_ok:
            raise ValueError("slack rescaling on sequences needs the Hamming loss")

    # ------------------------------------------------------------------ batch oracles
    def unary(self, w, X=None):
        """Unary state scores ``U = X W Gamma^T`` (n_positions, K)."""
        W, _ = self.split(w)
        X = self.X if X is None else X
        F = np.asarray(X @ W)
        return np.ascontiguousarray(F if self.onehot else F @ self.gamma.T)

    def loss_augmented(self, w, rescaling="margin", U=None):
        """Most violated labelling of every sequence: ``(labels, loss, margin)``."""
        U = self.unary(w) if U is None else U
        _, P = self.split(w)
        labels = np.empty(self.n_positions, dtype=np.int64)
        loss = np.empty(self.n_samples)
        margin = np.empty(self.n_samples)
        if self.max_length == 1 and rescaling == "margin":  # flat tasks: pure NumPy
            rows = np.arange(self.n_positions)
            aug = U + self.loss[self.y]
            labels = np.argmax(aug, axis=1)
            loss = self.loss[self.y, labels]
            margin = U[rows, self.y] - U[rows, labels]
            return labels, loss, margin
        batch_loss_augmented(
            U,
            np.ascontiguousarray(P),
            self.offsets,
            self.y,
            self.loss,
            self.pairwise,
            rescaling == "slack",
            labels,
            loss,
            margin,
        )
        return labels, loss, margin

    def evaluate(self, w, labels, U=None):
        """Loss and margin ``w . dPsi_i`` of given labellings."""
        U = self.unary(w) if U is None else U
        if self.max_length == 1:
            rows = np.arange(self.n_positions)
            return self.loss[self.y, labels], U[rows, self.y] - U[rows, labels]
        _, P = self.split(w)
        loss = np.empty(self.n_samples)
        margin = np.empty(self.n_samples)
        batch_evaluate(
            U,
            np.ascontiguousarray(P),
            self.offsets,
            self.y,
            np.ascontiguousarray(labels, dtype=np.int64),
            self.loss,
            self.pairwise,
            loss,
            margin,
        )
        return loss, margin

    def plane(self, labels, coef):
        """Dense ``sum_i coef_i dPsi_i(labels_i)`` (the 1-slack cutting plane direction)."""
        coef = np.asarray(coef, dtype=np.float64)
        pc = coef if self.max_length == 1 else np.repeat(coef, self.lengths)
        diff = self.gamma[self.y] - self.gamma[labels]
        diff *= pc[:, None]
        out = np.empty(self.dim)
        out[: self.n_unary] = np.asarray(self.X.T @ diff).ravel()
        if self.pairwise:
            K = self.n_states
            t = self._tpos
            c = pc[t]
            T = np.bincount(self.y[t] * K + self.y[t + 1], weights=c, minlength=K * K)
            T -= np.bincount(labels[t] * K + labels[t + 1], weights=c, minlength=K * K)
            out[self.n_unary :] = T
        return out

    def objective(self, w, C, hinge):
        """Primal ``1/2 ||w||^2 + C/n sum_i H_i``."""
        return 0.5 * float(w @ w) + C * float(np.mean(hinge))


def from_label_coding(task, X) -> LinearJointModel:
    """Model of a bound :class:`~maxmargin.tasks.base.LabelCodingTask` on inputs X."""
    n = X.shape[0]
    return LinearJointModel(X, np.arange(n + 1), task.y_, task.gamma_, task.delta_, pairwise=False)


# ---------------------------------------------------------------------------
# per-example numba kernels (n-slack, Frank-Wolfe, stochastic subgradient)
# ---------------------------------------------------------------------------
@njit(cache=True)
def seq_unary(indptr, indices, data, a, b, W, gamma, onehot, U):
    """``U[t] = Gamma (x_t W)`` for positions a..b-1 of one sequence into ``U`` (T, K)."""
    S = W.shape[1]
    K = gamma.shape[0]
    z = np.empty(S)
    for t in range(a, b):
        z[:] = 0.0
        for p in range(indptr[t], indptr[t + 1]):
            xv = data[p]
            row = W[indices[p]]
            for s in range(S):
                z[s] += xv * row[s]
        if onehot:
            for k in range(K):
                U[t - a, k] = z[k]
        else:
            for k in range(K):
                acc = 0.0
                for s in range(S):
                    acc += gamma[k, s] * z[s]
                U[t - a, k] = acc


@njit(cache=True)
def example_oracle(U, P, ytrue, loss_mat, pairwise, slack, out):
    """Loss-augmented labelling of one sequence into ``out``; returns (loss, margin)."""
    if slack:
        _slack_into(U, P, ytrue, loss_mat, pairwise, out)
    else:
        _loss_aug_into(U, P, ytrue, loss_mat, pairwise, out)
    loss = 0.0
    for t in range(len(out)):
        loss += loss_mat[ytrue[t], out[t]]
    margin = chain_score(U, P, ytrue, pairwise) - chain_score(U, P, out, pairwise)
    return loss, margin


@njit(cache=True)
def example_loss_augmented(L, i, W, P, slack, U, lab):
    """Loss-augmented labelling of sequence i under ``(W, P)`` into ``lab[:T]``, using
    ``U`` as scratch; returns (loss, margin)."""
    a, b = L.offsets[i], L.offsets[i + 1]
    T = b - a
    seq_unary(L.indptr, L.indices, L.data, a, b, W, L.gamma, L.onehot, U)
    return example_oracle(U[:T], P, L.ytrue[a:b], L.loss, L.pairwise, slack, lab[:T])


@njit(cache=True)
def add_dpsi(w, L, i, yhat, coef):
    """``w += coef * dPsi_i(yhat)`` for sequence i of layout ``L`` (flat w)."""
    a, b = L.offsets[i], L.offsets[i + 1]
    S, K = L.S, L.K
    for t in range(a, b):
        yt = L.ytrue[t]
        yh = yhat[t - a]
        if yt == yh:
            continue
        for p in range(L.indptr[t], L.indptr[t + 1]):
            base = L.indices[p] * S
            cv = coef * L.data[p]
            if L.onehot:
                w[base + yt] += cv
                w[base + yh] -= cv
            else:
                for s in range(S):
                    w[base + s] += cv * (L.gamma[yt, s] - L.gamma[yh, s])
    if L.pairwise:
        for t in range(a, b - 1):
            w[L.n_unary + L.ytrue[t] * K + L.ytrue[t + 1]] += coef
            w[L.n_unary + yhat[t - a] * K + yhat[t - a + 1]] -= coef


@njit(cache=True)
def dpsi_dot(gram, T, GG, ytrue, ya, yb, pairwise):
    """``<dPsi(ya), dPsi(yb)>`` of one sequence from its input Gram ``gram`` (T*T flat)."""
    acc = 0.0
    for t in range(T):
        for u in range(T):
            kx = gram[t * T + u]
            if kx == 0.0:
                continue
            g = (
                GG[ytrue[t], ytrue[u]]
                - GG[ytrue[t], yb[u]]
                - GG[ya[t], ytrue[u]]
                + GG[ya[t], yb[u]]
            )
            acc += kx * g
    if pairwise:
        for t in range(T - 1):
            for u in range(T - 1):
                m = 0.0
                if ytrue[t] == ytrue[u] and ytrue[t + 1] == ytrue[u + 1]:
                    m += 1.0
                if ytrue[t] == yb[u] and ytrue[t + 1] == yb[u + 1]:
                    m -= 1.0
                if ya[t] == ytrue[u] and ya[t + 1] == ytrue[u + 1]:
                    m -= 1.0
                if ya[t] == yb[u] and ya[t + 1] == yb[u + 1]:
                    m += 1.0
                acc += m
    return acc
