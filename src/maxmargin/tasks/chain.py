"""Linear-chain sequence labelling task (HMM-like max-margin Markov network).

Inputs are sequences ``x = (x_0, ..., x_{T-1})`` of feature rows, outputs label
sequences ``y`` of the same length over K states.  The joint feature map has a unary
part ``sum_t x_t (x) e_{y_t}`` (one weight vector per state) and a transition part
``sum_t e_{y_t} (x) e_{y_{t+1}}`` (one weight per state pair), as in Taskar, Guestrin &
Koller, "Max-Margin Markov Networks", NIPS 2003 and Tsochantaridis et al., JMLR 2005.
The loss is the Hamming loss (number of wrong positions).  Prediction is Viterbi,
loss-augmented inference is Viterbi on loss-shifted unaries (margin rescaling) or a
Viterbi DP over the error count (slack rescaling), see :mod:`maxmargin.inference.viterbi`.

The task plugs into :class:`maxmargin.StructSVM` through
:meth:`ChainTask.linear_model`, and into :class:`maxmargin.StructBoost` through the
weak-learner protocol of :mod:`maxmargin.tasks.base` (1-slack formulation, exact master):

* weak inputs are the N positions' feature rows followed by K*K *pair rows*, one per
  label pair (a, b), whose only non-zero is an indicator feature of their own; the weak
  input matrix is sparse, ``[[X, 0], [0, I_(K*K)]]``;
* slot s < K is the unary part of state s, ``psi(x, y) = sum_t phi(x_t) [y_t = s]``, and
  slot K (with transitions) the pairwise part,
  ``psi(x, y) = sum_t phi(pair row (y_t, y_(t+1)))``: a stump on the indicator of
  pair (a, b) is +-1 on that pair's row and -+1 on the others, so up to a constant that
  cancels in every joint-feature difference it counts the transitions a -> b (times 2);
* the signed weights of a cutting plane put ``+c_i`` on (position t, slot y_t) and
  ``-c_i`` on (t, yhat_t), and the net transition counts on the pair rows in slot K --
  the chain analogue of the CRF node / edge samples of StructBoost Sec. 3.6 (Shen, Lin &
  van den Hengel, "StructBoost: Boosting methods for predicting structured output
  variables", IEEE TPAMI 36(10), 2014);
* the oracle is loss-augmented Viterbi on the unary scores ``F[t, s]`` and the
  transition scores ``F[N + a*K + b, K]`` (:func:`~maxmargin.inference.viterbi.
  batch_loss_augmented`).
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import scipy.sparse as sp

from maxmargin._validation import file_flag
from maxmargin.inference._threads import numba_threads
from maxmargin.inference.viterbi import (
    batch_viterbi,
    chain_true_scores,
    sequence_shards,
    sharded_chain_complete,
    sharded_chain_forward,
    sharded_loss_augmented,
)
from maxmargin.tasks.base import Cut, DualPairs, JointCutsOnly, OracleResult, StructuredTask
from maxmargin.tasks.linear import LinearJointModel
from maxmargin.tasks.smoothing import SmoothedRisk

__all__ = ["ChainTask", "stack_sequences"]


def stack_sequences(X):
    """Concatenate a list of (T_i, d) arrays (dense or sparse) into ``(X_flat, offsets)``."""
    if isinstance(X, np.ndarray) and X.dtype != object:
        raise ValueError(
            "ChainTask expects a list of (T_i, n_features) arrays, one per "
            f"sequence; got a single array of shape {X.shape}"
        )
    seqs = list(X)
    if not seqs:
        raise ValueError("need at least one sequence")
    sparse = any(sp.issparse(s) for s in seqs)
    mats = []
    for s in seqs:  # set-up only: a cheap view or conversion per sequence
        if sp.issparse(s):
            m = sp.csr_matrix(s, dtype=np.float64)
        else:
            m = np.asarray(s, dtype=np.float64)
            if m.ndim == 1:
                m = m[:, None]
            if m.ndim != 2:
                raise ValueError(f"each sequence must be a 2-d array, got shape {m.shape}")
        mats.append(m)
    lengths = np.fromiter((m.shape[0] for m in mats), dtype=np.int64, count=len(mats))
    if np.any(lengths < 1):
        raise ValueError("sequences must have at least one position")
    d = {m.shape[1] for m in mats}
    if len(d) != 1:
        raise ValueError(f"all sequences must have the same number of features, got {d}")
    offsets = np.zeros(len(mats) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if sparse:
        Xf = sp.vstack([sp.csr_matrix(m) for m in mats], format="csr")
        values = Xf.data
    else:
        Xf = np.concatenate(mats, axis=0)
        values = Xf
    if not np.all(np.isfinite(values)):
        raise ValueError("input sequences contain NaN or inf")
    return Xf, offsets


class ChainTask(JointCutsOnly, StructuredTask):
    """Linear-chain labelling with unary + transition features and Hamming loss.

    Trains with :class:`~maxmargin.StructSVM` (linear features) and with
    :class:`~maxmargin.StructBoost` (weak learners on the positions' features and on
    label-pair indicators; see the module docstring).

    Parameters
    ----------
    n_states : int or None
        Number of states; ``None`` takes the sorted distinct labels seen in training.
        With an integer, labels must be integers in ``0..n_states-1``.
    transitions : bool, default=True
        Whether the model has transition features (``False``: independent positions).
    """

    formulations = ("1-slack",)
    #: inputs are lists of sequences, not a feature matrix
    structured_inputs = True

    def __init__(self, n_states: int | None = None, transitions: bool = True) -> None:
        self.n_states = n_states
        self.transitions = transitions

    def bind(self, X, y, **fit_params) -> ChainTask:
        """Copy bound to training sequences X (list of (T_i, d)) and labels y (list)."""
        bound = copy.deepcopy(self)
        bound._dense_losses_cache = None
        bound._Z = None
        bound._shards_cache = None
        bound._pair_counts_cache = None
        bound._inner_cache = None
        bound._bind(X, y, **fit_params)
        return bound

    def _bind(self, X, y) -> None:
        self.X_, self.offsets_ = stack_sequences(X)
        ys = list(y)
        if len(ys) != len(self.offsets_) - 1:
            raise ValueError(f"X has {len(self.offsets_) - 1} sequences but y has {len(ys)}")
        flat = np.concatenate([np.asarray(s).ravel() for s in ys])
        if len(flat) != self.offsets_[-1] or any(
            len(np.asarray(s).ravel()) != b - a
            for s, a, b in zip(ys, self.offsets_[:-1], self.offsets_[1:])
        ):
            raise ValueError("every label sequence must have the length of its input sequence")
        if self.n_states is None:
            self.classes_, codes = np.unique(flat, return_inverse=True)
        else:
            K = int(self.n_states)
            if K < 2:
                raise ValueError(f"n_states must be >= 2, got {self.n_states!r}")
            codes = np.asarray(flat)
            if not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or codes.max() >= K:
                raise ValueError(f"labels must be integers in 0..{K - 1}")
            self.classes_ = np.arange(K)
        if len(self.classes_) < 2:
            raise ValueError("need at least 2 states")
        self.y_ = codes.astype(np.int64)
        K = len(self.classes_)
        self.gamma_ = np.eye(K)
        self.delta_ = 1.0 - np.eye(K)
        self.n_samples = len(self.offsets_) - 1
        self.d_ = int(self.X_.shape[1])
        self.n_slots = K + (1 if self.transitions else 0)

    linear_ssvm = True

    @property
    def n_features_in(self) -> int:
        return int(self.X_.shape[1])

    def predict_linear(self, X, w):
        """Viterbi label sequences under the SSVM's weights ``w = [W (d x K), P (K x K)]``."""
        d, K = self.d_, self.gamma_.shape[1]
        W = w[: d * K].reshape(d, K)
        P = w[d * K :].reshape(K, K) if self.transitions else np.zeros((K, K))
        return self.predict(X, W, P)

    def score_predictions(self, y_true, y_pred) -> float:
        return 1.0 - self.hamming(y_true, y_pred)

    def linear_model(self) -> LinearJointModel:
        return LinearJointModel(
            self.X_,
            self.offsets_,
            self.y_,
            self.gamma_,
            self.delta_,
            pairwise=bool(self.transitions),
        )

    def predict(self, X, W, P):
        """MAP label sequences of new sequences X under unary weights W (d, K) and
        transition scores P (K, K), by Viterbi (:mod:`maxmargin.inference.viterbi`)."""
        Xf, offsets = stack_sequences(X)
        if Xf.shape[1] != W.shape[0]:
            raise ValueError(
                f"X has {Xf.shape[1]} features, but the model was trained with {W.shape[0]}"
            )
        U = np.ascontiguousarray(np.asarray(Xf @ W), dtype=np.float64)
        labels = np.empty(U.shape[0], dtype=np.int64)
        batch_viterbi(U, np.ascontiguousarray(P), offsets, bool(self.transitions), labels)
        return self.split_labels(labels, offsets)

    # -- StructBoost: weak inputs and signed weights ----------------------------------
    def _stack_inputs(self, Xf) -> sp.csr_matrix:
        """``[[X, 0], [0, I_(K*K)]]`` (positions, then pair rows) as CSR."""
        K = len(self.classes_)
        Xs = sp.csr_matrix(Xf, dtype=np.float64)
        if not self.transitions:
            return Xs
        return sp.block_diag((Xs, sp.identity(K * K, format="csr")), format="csr")

    def weak_inputs(self):
        if getattr(self, "_Z", None) is None:
            self._Z = self._stack_inputs(self.X_)
        return self._Z

    def weak_weights(self, duals: DualPairs) -> np.ndarray:
        n_z = self.weak_inputs().shape[0]
        S = self.n_slots
        flat = np.bincount(duals.sample * S + duals.label, weights=duals.value, minlength=n_z * S)
        return flat.reshape(n_z, S)

    def select_columns(self, gains, threshold):
        # every slot (each state's unary part, the transitions) takes its own best
        return [(s, np.array([s])) for s in range(self.n_slots) if gains[s] > threshold]

    def joint_difference(self, outputs, slots, pairs):
        slots = np.asarray(slots, dtype=np.int64)
        return outputs[:, pairs.sample] * (pairs.label[None, :] == slots[:, None])

    # -- StructBoost: the 1-slack oracle ----------------------------------------------
    def _scores(self, F, n_positions):
        """Unary scores (N, K) and transition scores (K, K) from slot scores F."""
        F = np.asarray(F, dtype=np.float64)
        K = len(self.classes_)
        U = np.ascontiguousarray(F[:n_positions, :K])
        if self.transitions:
            P = np.ascontiguousarray(F[n_positions : n_positions + K * K, K].reshape(K, K))
        else:
            P = np.zeros((K, K))
        return U, P

    def most_violated(self, F) -> OracleResult:
        """Loss-augmented Viterbi of every training sequence; ``label`` holds the
        concatenated states, ``loss`` (Hamming count) and ``margin`` are per sequence."""
        return self._loss_augmented(*self._scores(F, len(self.y_)))

    def _loss_augmented(self, U, P) -> OracleResult:
        N = len(self.y_)
        labels = np.empty(N, dtype=np.int64)
        loss = np.empty(self.n_samples)
        margin = np.empty(self.n_samples)
        with numba_threads(self._threads_for(N)):
            sharded_loss_augmented(
                U, P, self.offsets_, self.y_, self.delta_, bool(self.transitions), False,
                labels, loss, margin, self._shards(),
            )  # fmt: skip
        return OracleResult(label=labels, loss=loss, margin=margin)

    # the oracle runs over fixed shards of the sequences (the same answers, bit for bit,
    # for any number of threads: ``oracle_threads``); below this many position-state
    # pairs one thread is faster than waking the pool
    _PARALLEL_WORK = 20_000

    def _shards(self) -> np.ndarray:
        b = getattr(self, "_shards_cache", None)
        if b is None:
            b = self._shards_cache = sequence_shards(self.offsets_)
        return b

    def _threads_for(self, N: int) -> int:
        K = len(self.classes_)
        return self._oracle_threads if N * K >= self._PARALLEL_WORK else 1

    def _cut_from_labels(self, orc: OracleResult) -> Cut:
        m = self.n_samples
        K = len(self.classes_)
        N = len(self.y_)
        c = (orc.hinge > 0).astype(np.float64) / m
        cp = np.repeat(c, np.diff(self.offsets_))  # per position
        lab, y = orc.label, self.y_
        wrong = np.flatnonzero((lab != y) & (cp > 0))
        rows = [wrong, wrong]
        slots = [y[wrong], lab[wrong]]
        vals = [cp[wrong], -cp[wrong]]
        if self.transitions:
            t = self._inner_positions()
            t = t[cp[t] > 0]
            net = np.bincount(y[t] * K + y[t + 1], weights=cp[t], minlength=K * K)
            net -= np.bincount(lab[t] * K + lab[t + 1], weights=cp[t], minlength=K * K)
            nz = np.flatnonzero(net)
            rows.append(N + nz)
            slots.append(np.full(len(nz), K, dtype=np.int64))
            vals.append(net[nz])
        pairs = DualPairs(
            np.concatenate(rows).astype(np.int64),
            np.concatenate(slots).astype(np.int64),
            np.concatenate(vals),
        )
        rhs = float(np.sum(c * orc.loss))
        return Cut(pairs, rhs, float(orc.hinge.mean()), orc)

    def _inner_positions(self) -> np.ndarray:
        """Positions t whose successor t+1 is in the same sequence."""
        t = getattr(self, "_inner_cache", None)
        if t is None:
            t = self._inner_cache = self._find_inner_positions()
        return t

    def _find_inner_positions(self) -> np.ndarray:
        N = len(self.y_)
        inner = np.ones(max(N - 1, 0), dtype=bool)
        ends = self.offsets_[1:-1] - 1
        inner[ends[(ends >= 0) & (ends < len(inner))]] = False
        return np.flatnonzero(inner)

    def one_slack_cut(self, F) -> Cut:
        return self._cut_from_labels(self.most_violated(F))

    def initial_cut(self, rng) -> Cut:
        return self.one_slack_cut(np.zeros((self.weak_inputs().shape[0], self.n_slots)))

    def cut_value(self, F, cut) -> float:
        F = np.asarray(F)
        return cut.rhs - float(cut.pairs.value @ F[cut.pairs.sample, cut.pairs.label])

    # -- StructBoost's fast master: sequence-level log-sum-exp (forward-backward) -----
    smooth_master = True
    #: the exact 1-slack master needs hundreds of cutting planes per solve here: the fast
    #: master ends with smoothing continuation instead
    exact_polish = False

    def smoothing_scale(self) -> float:
        """The largest Hamming loss of a training sequence (its length)."""
        return float(max(np.diff(self.offsets_).max(), 1))

    def smoothed_risk(self, F, beta) -> SmoothedRisk:
        """Mean over sequences of ``(1/beta) log sum_z exp(beta (Delta(y_i, z) + s(z) -
        s(y_i)))`` -- the log-sum-exp of the listed-output tasks, taken over all ``K^T``
        labellings by the forward algorithm -- and its gradient from the forward-backward
        marginals: ``A[t, k] = ([y_t = k] - P(z_t = k)) / m`` for the unary slots,
        ``A[pair (a, b), transition slot] = (#(a, b) in y - E #(a, b) in z) / m``.  The
        duals ``mu_i(z) = P_i(z) / m`` are box-feasible; ``dual = E_mu Delta``."""
        return self.complete_smoothed_risk(F, beta, self.smoothed_value(F, beta)[1])

    def smoothed_value(self, F, beta):
        """The smoothed risk alone (the forward pass; what a line search needs) and the
        state :meth:`complete_smoothed_risk` continues from (the backward pass, the
        gradient and the hard hinge by loss-augmented Viterbi)."""
        N, m = len(self.y_), self.n_samples
        K = len(self.classes_)
        U, P = self._scores(F, N)
        fa = np.empty((N, K))
        logz = np.empty(m)
        s_true = np.empty(m)
        with numba_threads(self._threads_for(N)):
            sharded_chain_forward(
                U, P, self.offsets_, self.y_, self.delta_, bool(self.transitions), float(beta),
                fa, logz, self._shards(),
            )  # fmt: skip
        chain_true_scores(U, P, self.offsets_, self.y_, bool(self.transitions), s_true)
        smooth = float(np.mean(logz / float(beta) - s_true))
        return smooth, (U, P, float(beta), fa, logz, smooth)

    def complete_smoothed_risk(self, F, beta, state) -> SmoothedRisk:
        U, P, b, fa, logz, smooth = state
        if b != float(beta):
            raise ValueError("state from smoothed_value at a different beta")
        N, m = len(self.y_), self.n_samples
        K = len(self.classes_)
        y = self.y_
        marg = np.empty((N, K))
        pair = np.zeros((K, K))
        shards = self._shards()
        A = np.empty((self.weak_inputs().shape[0], self.n_slots))
        dual_parts = np.empty(len(shards) - 1)
        labels = np.empty(N, dtype=np.int64)
        loss = np.empty(m)
        margin = np.empty(m)
        with numba_threads(self._threads_for(N)):  # marginals, gradient, hard hinge
            sharded_chain_complete(
                (U, P, self.offsets_, y, self.delta_, bool(self.transitions)), b, fa, logz,
                1.0 / m, (marg, pair, A, dual_parts), (labels, loss, margin), shards,
            )  # fmt: skip
        risk = float(OracleResult(label=labels, loss=loss, margin=margin).hinge.mean())
        if self.transitions:
            A[N:, :K] = 0.0
            A[N : N + K * K, K] = (self._pair_counts() - pair.ravel()) / m
        dual = float(np.sum(dual_parts))
        return SmoothedRisk(risk, smooth, A, dual)

    def _pair_counts(self) -> np.ndarray:
        """How often each state pair (a, b) follows in the training labels, (K * K,)."""
        c = getattr(self, "_pair_counts_cache", None)
        if c is None:
            K = len(self.classes_)
            y, t = self.y_, self._inner_positions()
            c = np.bincount(y[t] * K + y[t + 1], minlength=K * K).astype(np.float64)
            self._pair_counts_cache = c
        return c

    # -- StructBoost: prediction --------------------------------------------------------
    def prediction_layout(self, X):
        """Stacked new sequences and their weak inputs (for :meth:`predict_from_scores`)."""
        Xf, offsets = stack_sequences(X)
        if Xf.shape[1] != self.d_:
            raise ValueError(
                f"X has {Xf.shape[1]} features, but the model was trained with {self.d_}"
            )
        return offsets, self._stack_inputs(Xf)

    def predict_from_scores(self, offsets, F) -> list[np.ndarray]:
        """Viterbi labellings of stacked sequences from slot scores on their inputs."""
        N = int(offsets[-1])
        U, P = self._scores(F, N)
        labels = np.empty(N, dtype=np.int64)
        batch_viterbi(U, P, offsets, bool(self.transitions), labels)
        return self.split_labels(labels, offsets)

    # -- persistence -----------------------------------------------------------------
    def _get_state(self):
        arrays = {"classes": np.asarray(self.classes_)}
        if getattr(self, "d_", None) is not None:
            arrays["d"] = np.asarray([self.d_], dtype=np.int64)
        return {"n_states": self.n_states, "transitions": bool(self.transitions)}, arrays

    def _set_state(self, meta, arrays):
        self.n_states = meta["n_states"]
        self.transitions = file_flag(meta["transitions"], "transitions")
        self.classes_ = arrays["classes"]
        K = len(self.classes_)
        self.gamma_ = np.eye(K)
        self.delta_ = 1.0 - np.eye(K)
        self.n_slots = K + (1 if self.transitions else 0)
        self.d_ = int(arrays["d"][0]) if "d" in arrays else None
        self._Z = None

    def split_labels(self, flat, offsets):
        """Decoded label sequences (a list) from concatenated codes."""
        dec = self.classes_[flat]
        return [dec[a:b] for a, b in itertools.pairwise(offsets)]

    def hamming(self, y_true, y_pred) -> float:
        """Fraction of wrong positions over all sequences (letter error for OCR)."""
        t = np.concatenate([np.asarray(s).ravel() for s in y_true])
        p = np.concatenate([np.asarray(s).ravel() for s in y_pred])
        return float(np.mean(t != p))
