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
:meth:`ChainTask.linear_model`; it does not (yet) provide the weak-learner protocol of
StructBoost.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import scipy.sparse as sp

from maxmargin.inference.viterbi import batch_viterbi
from maxmargin.tasks.linear import LinearJointModel

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
    lengths = []
    mats = []
    for s in seqs:
        if sp.issparse(s):
            m = sp.csr_matrix(s, dtype=np.float64)
        else:
            m = np.asarray(s, dtype=np.float64)
            if m.ndim == 1:
                m = m[:, None]
            if m.ndim != 2:
                raise ValueError(f"each sequence must be a 2-d array, got shape {m.shape}")
            if not np.all(np.isfinite(m)):
                raise ValueError("input sequences contain NaN or inf")
        if m.shape[0] < 1:
            raise ValueError("sequences must have at least one position")
        lengths.append(m.shape[0])
        mats.append(m)
    d = {m.shape[1] for m in mats}
    if len(d) != 1:
        raise ValueError(f"all sequences must have the same number of features, got {d}")
    offsets = np.zeros(len(mats) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if any(sp.issparse(m) for m in mats):
        Xf = sp.vstack([sp.csr_matrix(m) for m in mats], format="csr")
    else:
        Xf = np.vstack(mats)
    return Xf, offsets


class ChainTask:
    """Linear-chain labelling with unary + transition features and Hamming loss.

    Parameters
    ----------
    n_states : int or None
        Number of states; ``None`` takes the sorted distinct labels seen in training.
        With an integer, labels must be integers in ``0..n_states-1``.
    transitions : bool, default=True
        Whether the model has transition features (``False``: independent positions).
    """

    def __init__(self, n_states: int | None = None, transitions: bool = True) -> None:
        self.n_states = n_states
        self.transitions = transitions

    def bind(self, X, y) -> ChainTask:
        """Copy bound to training sequences X (list of (T_i, d)) and labels y (list)."""
        bound = copy.deepcopy(self)
        bound._bind(X, y)
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

    # -- persistence -----------------------------------------------------------------
    def _get_state(self):
        return {"n_states": self.n_states, "transitions": bool(self.transitions)}, {
            "classes": np.asarray(self.classes_)
        }

    def _set_state(self, meta, arrays):
        self.n_states = meta["n_states"]
        self.transitions = bool(meta["transitions"])
        self.classes_ = arrays["classes"]
        K = len(self.classes_)
        self.gamma_ = np.eye(K)
        self.delta_ = 1.0 - np.eye(K)

    def split_labels(self, flat, offsets):
        """Decoded label sequences (a list) from concatenated codes."""
        dec = self.classes_[flat]
        return [dec[a:b] for a, b in itertools.pairwise(offsets)]

    def hamming(self, y_true, y_pred) -> float:
        """Fraction of wrong positions over all sequences (letter error for OCR)."""
        t = np.concatenate([np.asarray(s).ravel() for s in y_true])
        p = np.concatenate([np.asarray(s).ravel() for s in y_pred])
        return float(np.mean(t != p))
