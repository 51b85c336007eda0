"""The task protocol: what a structured learner needs to know about the output space.

A *task* (ARCHITECTURE.md, "the one idea") owns the joint feature map, the loss and the
oracles.  For boosting, the joint features are weak *structured* learners
``psi_j(x, y)``; every task in this package builds them from ordinary weak
classifiers ``phi`` evaluated on task-chosen samples ``z`` and a *slot*:
``psi_(phi, s)(x, y) = sum_z phi(z) * coding``.  The bridge to the weak learners is
:meth:`StructuredTask.weak_weights`: it turns the dual solution ``mu_(i, y)`` of the
master problem into signed sample weights ``A`` (one column per slot) so that the
gain of a new weak classifier for slot ``s`` is ``sum_k A[k, s] * phi(z_k)``
(StructBoost, Shen et al., TPAMI 2014, [Shen2014 eq. 11]).  Weak learners never see structure;
tasks never see stumps.

A task is a specification (its constructor arguments) that is *bound* to training data
by :meth:`StructuredTask.bind`; the bound copy holds the encoded labels and answers the
oracle calls of the solvers.  Labels inside the solvers are always integer codes (or
task-specific integer arrays); decoding back to user labels is the task's job.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

from maxmargin.inference._threads import resolve_threads
from maxmargin.tasks.smoothing import SmoothedRisk, softmax_rows

__all__ = ["Cut", "DualPairs", "LabelCodingTask", "OracleResult", "StructuredTask"]


@njit(cache=True)
def _coded_margins(G, y, delta):  # pragma: no cover - compiled
    """``a[i, k] = delta[y_i, k] + G[i, k] - G[i, y_i]`` in one pass."""
    m, K = G.shape
    out = np.empty((m, K))
    for i in range(m):
        yi = y[i]
        own = G[i, yi]
        for k in range(K):
            out[i, k] = delta[yi, k] + G[i, k] - own
    return out


@njit(cache=True)
def _onehot_weights(Mu, y):  # pragma: no cover - compiled
    """``A = (sum_k Mu[i, k]) e_(y_i) - Mu`` (one-hot coding) in one pass."""
    m, K = Mu.shape
    A = np.empty((m, K))
    for i in range(m):
        t = 0.0
        for k in range(K):
            t += Mu[i, k]
            A[i, k] = -Mu[i, k]
        A[i, y[i]] += t
    return A


#: tasks with more outputs per example than this are not listed densely (the smoothed
#: master stores an (m, n_outputs) matrix)
MAX_DENSE_OUTPUTS = 4096


@dataclass(frozen=True)
class DualPairs:
    """Sparse dual weights ``mu_(i, y)``: one entry per (sample, output) pair.

    ``sample[k]`` is the training index i, ``label[k]`` the output y (an integer code for
    label-coding tasks) and ``value[k]`` the weight.  Entries may repeat the same pair;
    they add up.  The same triple form describes a cutting plane: the plane's
    coefficient of column j is ``sum_k value[k] * dpsi_j(sample[k], label[k])``.
    """

    sample: np.ndarray
    label: np.ndarray
    value: np.ndarray

    def __post_init__(self) -> None:
        if not (len(self.sample) == len(self.label) == len(self.value)):
            raise ValueError("DualPairs arrays must have equal lengths")


@dataclass(frozen=True)
class OracleResult:
    """Output of the loss-augmented oracle for every training example.

    ``label[i] = argmax_y Delta(y_i, y) - w.dPsi_i(y)``, ``loss[i] = Delta(y_i, label[i])``
    and ``margin[i] = w.dPsi_i(label[i])``, so the hinge term of example i is
    ``max(0, loss[i] - margin[i])`` ([Shen2014 Alg. 2, lines 7-8]).
    """

    label: np.ndarray
    loss: np.ndarray
    margin: np.ndarray

    @property
    def hinge(self) -> np.ndarray:
        return np.maximum(0.0, self.loss - self.margin)


@dataclass(frozen=True)
class Cut:
    """One 1-slack cutting plane ``xi >= rhs - sum_k value_k w.dpsi(sample_k, label_k)``.

    ``pairs`` says which joint-feature differences the plane sums (with their weights),
    ``rhs`` is its constant ([Shen2014 eq. 9b]: ``(1/m) sum_i c_i Delta(y_i, y'_i)``) and ``risk``
    its value at the scores it was found for -- for the most violated plane, the
    average hinge loss there, i.e. the 1-slack ``xi`` of that point.  ``source``
    optionally keeps the oracle result it was built from.
    """

    pairs: DualPairs
    rhs: float
    risk: float
    source: OracleResult | None = None


class StructuredTask(ABC):
    """Protocol shared by StructBoost (and later the SSVM family) for one kind of output.

    Subclasses define the slots of the joint feature map and the four operations below.
    Everything is batched over examples: solvers never loop over samples in Python.
    """

    #: number of slots (columns of the signed-weight matrix; K for multi-class)
    n_slots: int
    #: number of training examples m once bound
    n_samples: int
    #: number of possible outputs per example (inf when not enumerable)
    n_outputs: float = float("inf")

    def __repr__(self) -> str:
        """``Name(param=value, ...)`` from the constructor's parameters (stable: model
        listings and test ids do not depend on object addresses)."""
        import inspect

        params = [
            p
            for p in inspect.signature(type(self).__init__).parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        args = []
        for p in params:
            v = getattr(self, p.name, p.default)
            if v is not p.default and not (isinstance(v, np.ndarray) or v == p.default):
                args.append(f"{p.name}={v!r}")
        return f"{type(self).__name__}({', '.join(args)})"

    # -- binding ---------------------------------------------------------------------
    def bind(self, X, y, **fit_params) -> StructuredTask:
        """Return a copy of this task bound to training data (labels encoded).

        ``fit_params`` are task-specific extras such as ``group`` for ranking."""
        bound = copy.deepcopy(self)
        bound._dense_losses_cache = None
        bound._bind(X, y, **fit_params)
        return bound

    @abstractmethod
    def _bind(self, X, y) -> None:
        """Store the encoded training labels (called on a fresh copy)."""

    #: numba threads of the task's own oracle (set by :meth:`oracle_threads`; tasks
    #: whose oracle runs over fixed shards of the examples read it)
    _oracle_threads: int = 1

    @contextmanager
    def oracle_threads(self, n_jobs):
        """Within the block, the task's oracle (loss-augmented inference, smoothed risk)
        may use ``n_jobs`` numba threads (``None``: one; ``-1``: all).  Tasks whose
        oracle runs over fixed shards of the examples (:class:`~maxmargin.tasks.chain.
        ChainTask`) give the same answers, bit for bit, for every thread count; the
        others ignore it."""
        old = self._oracle_threads
        self._oracle_threads = resolve_threads(n_jobs)
        try:
            yield self
        finally:
            self._oracle_threads = old

    # -- weak learners ---------------------------------------------------------------
    @abstractmethod
    def weak_inputs(self) -> np.ndarray:
        """Samples z_k on which weak classifiers are trained and evaluated."""

    @abstractmethod
    def weak_weights(self, duals: DualPairs) -> np.ndarray:
        """Map dual weights mu_(i, y) to signed weights A (n_z, n_slots)."""

    @abstractmethod
    def select_columns(self, gains: np.ndarray, threshold: float) -> list[tuple[int, np.ndarray]]:
        """Which new columns to add given the best weak classifier's gain for each slot.

        ``gains[s]`` is the gain of the best weak classifier found for slot ``s``.
        Returns ``[(candidate_slot, slots_to_add), ...]``: the weak classifier found for
        ``candidate_slot`` enters the master once for every slot in ``slots_to_add``.
        Only candidates whose gain exceeds ``threshold`` (= 1 + eps_cg) may be returned.
        """

    # -- joint features --------------------------------------------------------------
    @abstractmethod
    def joint_difference(
        self, outputs: np.ndarray, slots: np.ndarray, pairs: DualPairs
    ) -> np.ndarray:
        """dpsi_j(i, y) = psi_j(x_i, y_i) - psi_j(x_i, y) for columns j and pairs (i, y).

        ``outputs`` (n_cols, n_z) are the columns' weak classifiers evaluated on
        :meth:`weak_inputs`, ``slots`` (n_cols,) their slots.  Returns (n_cols, n_pairs).
        """

    def aggregate_difference(
        self, outputs, col_hyp, slots, pairs: DualPairs, row_of_pair: np.ndarray, n_rows: int
    ) -> np.ndarray:
        """Row sums ``sum_(k in row r) value_k dpsi_j(sample_k, label_k)``, (n_rows, n_cols).

        Column j is the weak classifier ``outputs[col_hyp[j]]`` in slot ``slots[j]``.  This
        is how a new column gets its coefficient in every stored cutting plane.
        """
        n_cols = len(slots)
        out = np.zeros((n_rows, n_cols))
        step = max(1, (1 << 22) // max(1, n_cols))
        for lo in range(0, len(row_of_pair), step):
            sl = slice(lo, lo + step)
            part = DualPairs(pairs.sample[sl], pairs.label[sl], pairs.value[sl])
            d = self.joint_difference(outputs[col_hyp], slots, part) * part.value
            for j in range(n_cols):
                out[:, j] += np.bincount(row_of_pair[sl], weights=d[j], minlength=n_rows)
        return out

    # -- oracles ---------------------------------------------------------------------
    @abstractmethod
    def slot_scores_to_label_scores(self, F: np.ndarray) -> np.ndarray:
        """Joint scores w.Psi(x_i, y) for every i and output y from slot scores F."""

    @abstractmethod
    def loss_augmented(self, F: np.ndarray) -> OracleResult:
        """Most violated output of every example given slot scores F (n_z, n_slots)."""

    @abstractmethod
    def evaluate_outputs(self, F: np.ndarray, label: np.ndarray) -> OracleResult:
        """Loss and margin of given outputs (one per example) under slot scores F."""

    @abstractmethod
    def initial_violators(self, rng: np.random.Generator) -> OracleResult:
        """Most violated outputs at w = 0 (ties broken at random), [Shen2014 Alg. 1 line 2]."""

    @abstractmethod
    def predict_codes(self, F: np.ndarray) -> np.ndarray:
        """argmax_y w.Psi(x, y) from slot scores, as integer codes."""

    # -- enumerable outputs: the smoothed master and the exact m-slack LP ------------
    @property
    def dense_outputs(self) -> bool:
        """Whether every example's outputs are the codes ``0 .. n_outputs - 1``, few enough
        to list: then the fast smoothed master and the exact m-slack polish apply."""
        return bool(np.isfinite(self.n_outputs)) and self.n_outputs <= MAX_DENSE_OUTPUTS

    def dense_losses(self) -> np.ndarray:
        """``Delta(y_i, y)`` for every example and output code, shape (m, n_outputs)."""
        F0 = np.zeros((self.weak_inputs().shape[0], self.n_slots))
        K = int(self.n_outputs)
        m = self.n_samples
        return np.stack(
            [self.evaluate_outputs(F0, np.full(m, y, dtype=np.int64)).loss for y in range(K)],
            axis=1,
        )

    def dense_margins(self, F: np.ndarray) -> np.ndarray:
        """``a_iy = Delta(y_i, y) - w.dPsi_i(y)`` for every output (0 at y = y_i), (m, K).

        The hinge of example i is ``max_y a_iy`` ([Shen2014 eq. 3] with the slack
        eliminated).  Generic version: one :meth:`evaluate_outputs` call per output code.
        """
        K = int(self.n_outputs)
        m = self.n_samples
        out = np.empty((m, K))
        for y in range(K):
            r = self.evaluate_outputs(F, np.full(m, y, dtype=np.int64))
            out[:, y] = r.loss - r.margin
        return out

    def dense_weak_weights(self, Mu: np.ndarray) -> np.ndarray:
        """Signed weights A for dense duals ``Mu[i, y] = mu_(i, y)`` (see weak_weights)."""
        i, y = np.nonzero(Mu)
        return self.weak_weights(DualPairs(i, y, Mu[i, y]))

    # -- the fast master's smoothed risk -----------------------------------------------
    @property
    def smooth_master(self) -> bool:
        """Whether :meth:`smoothed_risk` exists (listed outputs, or an override)."""
        return self.dense_outputs

    #: whether the fast master ends with the exact LP (False: smoothing continuation,
    #: for tasks whose exact master is impractical, e.g. chains)
    exact_polish: bool = True

    def smoothing_scale(self) -> float:
        """Scale of the losses; the smoothing width is a fixed fraction of it."""
        return float(max(self._dense_losses_cached().max(), 1e-300))

    def _dense_losses_cached(self) -> np.ndarray:
        cached = getattr(self, "_dense_losses_cache", None)
        if cached is None:
            cached = np.ascontiguousarray(self.dense_losses(), dtype=np.float64)
            self._dense_losses_cache = cached
        return cached

    def smoothed_risk(self, F: np.ndarray, beta: float) -> SmoothedRisk:
        """Log-sum-exp smoothed mean hinge at slot scores F (module
        :mod:`maxmargin.tasks.smoothing`); ``support`` is the softmax matrix (m, K)."""
        aug = np.ascontiguousarray(self.dense_margins(F), dtype=np.float64)
        hinge, lse = softmax_rows(aug, beta)  # aug now holds the softmax P
        m = self.n_samples
        dual = float(np.einsum("ij,ij->", aug, self._dense_losses_cached())) / m
        return SmoothedRisk(hinge / m, lse / m, self.dense_weak_weights(aug / m), dual, aug)

    def smoothed_value(self, F: np.ndarray, beta: float):
        """``(smooth, state)``: the smoothed risk alone, for line-search trials, and a
        state from which :meth:`complete_smoothed_risk` finishes the full
        :class:`SmoothedRisk` if the trial is accepted.  Tasks whose gradient costs more
        than the value (chains: the backward pass) override both; by default the state
        is the whole :meth:`smoothed_risk`."""
        r = self.smoothed_risk(F, beta)
        return r.smooth, r

    def complete_smoothed_risk(self, F: np.ndarray, beta: float, state) -> SmoothedRisk:
        """The :class:`SmoothedRisk` at F from the state of :meth:`smoothed_value` at F."""
        return state

    # -- 1-slack planes (tasks with a faster joint oracle override these) -----------
    #: master formulations the task can be trained with
    formulations: tuple[str, ...] = ("1-slack", "n-slack")

    # -- what the task can do ----------------------------------------------------------
    #: capabilities a subclass adds to those derived below (e.g. ``"sharded_oracle"``)
    extra_capabilities: frozenset[str] = frozenset()

    @property
    def capabilities(self) -> frozenset[str]:
        """What the task can do, read by the solvers instead of the task's type:

        * ``"listed_outputs"`` -- every output of an example can be listed
          (:attr:`dense_outputs`: dense losses and margins, the n-slack LP);
        * ``"smoothed_risk"`` -- :meth:`smoothed_risk` exists (the smoothed master);
        * ``"exact_polish"`` -- the smoothed master may end with the exact LP;
        * ``"n_slack"`` / ``"one_slack"`` -- the master formulations it supports;
        * ``"sharded_oracle"`` -- the oracle can run on fixed shards of the examples in
          worker processes (``attach_sharded_oracle``; CRF graph cuts);
        * ``"linear_ssvm"`` -- a linear structured SVM can train it (``StructSVM``).
        """
        caps = set(self.extra_capabilities)
        if self.dense_outputs:
            caps.add("listed_outputs")
        if self.smooth_master:
            caps.add("smoothed_risk")
        if self.exact_polish:
            caps.add("exact_polish")
        if "n-slack" in self.formulations:
            caps.add("n_slack")
        if "1-slack" in self.formulations:
            caps.add("one_slack")
        if self.linear_ssvm:
            caps.add("linear_ssvm")
        return frozenset(caps)

    # -- the linear structured SVM (learners/ssvm.StructSVM) ---------------------------
    #: the task has linear joint features a structured SVM can train
    #: (``linear_model()`` after binding, or the label coding for feature matrices)
    linear_ssvm: bool = False
    #: SSVM solvers its linear model supports (None: every solver)
    linear_solvers: tuple[str, ...] | None = None
    #: inputs are lists of structures (sequences, graphs, candidate sets), not a matrix
    structured_inputs: bool = False

    @property
    def n_features_in(self) -> int:
        """Input features of a bound task with structured inputs (the estimator's
        ``n_features_in_``)."""
        raise NotImplementedError(f"{type(self).__name__} does not report its input features")

    def predict_linear(self, X, w):
        """Predictions for structured inputs X under linear weights w (bound task)."""
        raise NotImplementedError(f"{type(self).__name__} has no linear prediction")

    def score_predictions(self, y_true, y_pred) -> float:
        """The estimator's ``score``: the share of exactly right outputs (tasks whose
        outputs have parts override it, e.g. 1 - Hamming error)."""
        return float(np.mean(y_pred == np.asarray(y_true)))

    def linear_slots_ok(self, n_slots: int) -> bool:
        """Whether a saved linear model's slot count fits this task (model files)."""
        return n_slots == self.n_slots

    def one_slack_cut(self, F: np.ndarray) -> Cut:
        """Most violated 1-slack plane at slot scores F ([Shen2014 eq. 9b], c_i = [hinge_i > 0])."""
        return self._cut_from(self.loss_augmented(F))

    def initial_cut(self, rng: np.random.Generator) -> Cut:
        """The 1-slack plane of the initial violators ([Shen2014 Alg. 1 line 2])."""
        return self._cut_from(self.initial_violators(rng))

    def _cut_from(self, orc: OracleResult) -> Cut:
        m = self.n_samples
        c = np.flatnonzero(orc.hinge > 0)
        pairs = DualPairs(c, orc.label[c], np.full(len(c), 1.0 / m))
        return Cut(pairs, float(orc.loss[c].sum() / m), float(orc.hinge.mean()), orc)

    def cut_value(self, F: np.ndarray, cut: Cut) -> float:
        """Value ``rhs - sum_k value_k w.dpsi_k`` of a plane at slot scores F."""
        at = self.evaluate_outputs(F, cut.source.label)
        c = cut.pairs.sample
        return float(np.sum(at.loss[c] - at.margin[c]) / self.n_samples)


class JointCutsOnly:
    """Mixin of the tasks whose oracle gives joint 1-slack planes only (chains, CRFs):
    the per-example operations of the m-slack masters and of listed outputs raise."""

    def _no_m_slack(self, *args):
        raise NotImplementedError(
            f"{type(self).__name__} has only the 1-slack oracle "
            "(use master='exact', formulation='1-slack')"
        )

    loss_augmented = evaluate_outputs = initial_violators = _no_m_slack
    slot_scores_to_label_scores = predict_codes = _no_m_slack


class LabelCodingTask(StructuredTask):
    """Tasks with ``Psi(x, y) = Phi(x) (x) Gamma(y)`` over a finite label set.

    ``Gamma`` is a (K, S) label-coding matrix and ``Delta`` a (K, K) loss matrix.
    Binary (LPBoost, ``Gamma(y) = y / 2``), multi-class (one-hot) and hierarchical
    (ancestor coding) classification differ only in these two matrices
    (StructBoost Sec. 3.1, 3.3, 3.4).  For a weak classifier phi entering slot s,
    ``dpsi(i, y) = phi(x_i) * (Gamma[y_i, s] - Gamma[y, s])`` and the signed weights are
    ``A[i, s] = sum_y mu_(i, y) * (Gamma[y_i, s] - Gamma[y, s])``.

    Parameters
    ----------
    sharing : {"shared", "per_class"}
        ``"shared"``: one weak classifier per iteration, chosen for the slot where it gains
        most ([Shen2014 eq. 18]), enters with one column per slot.  ``"per_class"``: every slot gets
        its own best weak classifier each iteration (as in MultiBoost-cw, [Lin2012]).
    """

    linear_ssvm = True

    def __init__(self, sharing: str = "shared") -> None:
        self.sharing = sharing

    # subclasses provide these three
    @abstractmethod
    def _encode(self, y) -> tuple[np.ndarray, np.ndarray]:
        """Return (classes, integer codes) for training labels y."""

    @abstractmethod
    def coding_matrix(self) -> np.ndarray:
        """Gamma, shape (K, S)."""

    @abstractmethod
    def loss_matrix(self) -> np.ndarray:
        """Delta, shape (K, K), zero diagonal and positive elsewhere."""

    # -- binding ---------------------------------------------------------------------
    def _bind(self, X, y) -> None:
        if self.sharing not in ("shared", "per_class"):
            raise ValueError(f"sharing must be 'shared' or 'per_class', got {self.sharing!r}")
        # sparse input stays sparse (CSC: stumps read and evaluate it column by column)
        self.X_ = (
            sp.csc_matrix(X, dtype=np.float64)
            if sp.issparse(X)
            else np.asarray(X, dtype=np.float64)
        )
        self.classes_, self.y_ = self._encode(y)
        self.gamma_ = np.ascontiguousarray(self.coding_matrix(), dtype=np.float64)
        self.delta_ = np.ascontiguousarray(self.loss_matrix(), dtype=np.float64)
        K = len(self.classes_)
        if self.gamma_.shape[0] != K or self.delta_.shape != (K, K):
            raise ValueError("coding or loss matrix does not match the number of classes")
        if np.any(np.diag(self.delta_) != 0) or np.any(self.delta_ + np.eye(K) <= 0):
            raise ValueError("loss matrix must be zero on the diagonal and positive elsewhere")
        self.n_slots = self.gamma_.shape[1]
        self._identity_coding = bool(
            self.gamma_.shape == (K, K) and np.array_equal(self.gamma_, np.eye(K))
        )
        self.n_samples = len(self.y_)
        self.n_outputs = K
        self._gamma_true = self.gamma_[self.y_]  # (m, S)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        return self.classes_[codes]

    # -- weak learners ---------------------------------------------------------------
    def weak_inputs(self) -> np.ndarray:
        return self.X_

    def weak_weights(self, duals: DualPairs) -> np.ndarray:
        # sum_y mu_(i,y) (Gamma[y_i] - Gamma[y]) = (sum_y mu_(i,y)) Gamma[y_i] - B[i] Gamma
        # with B[i, y] = mu_(i, y), aggregated by bincount (no Python loop over pairs)
        m, K = self.n_samples, len(self.gamma_)
        B = np.bincount(
            duals.sample * K + duals.label, weights=duals.value, minlength=m * K
        ).reshape(m, K)
        return B.sum(axis=1)[:, None] * self._gamma_true - B @ self.gamma_

    def aggregate_difference(self, outputs, col_hyp, slots, pairs, row_of_pair, n_rows):
        # per weak classifier h: v_k = value_k phi_h(x_{i_k}); the row sums of
        # v_k (Gamma[y_{i_k}] - Gamma[label_k]) are (T - L) @ Gamma with T, L (n_rows, K)
        # bincounts of v over (row, true label) and (row, label)
        K = len(self.gamma_)
        col_hyp = np.asarray(col_hyp)
        slots = np.asarray(slots)
        out = np.empty((n_rows, len(slots)))
        true_idx = row_of_pair * K + self.y_[pairs.sample]
        lab_idx = row_of_pair * K + pairs.label
        for h in np.unique(col_hyp):
            v = pairs.value * outputs[h, pairs.sample]
            T = np.bincount(true_idx, weights=v, minlength=n_rows * K)
            L = np.bincount(lab_idx, weights=v, minlength=n_rows * K)
            D = (T - L).reshape(n_rows, K) @ self.gamma_  # (n_rows, S)
            cols = np.flatnonzero(col_hyp == h)
            out[:, cols] = D[:, slots[cols]]
        return out

    def select_columns(self, gains, threshold):
        gains = np.asarray(gains)
        if self.sharing == "shared":
            s = int(np.argmax(gains))
            if gains[s] <= threshold:
                return []
            return [(s, np.arange(self.n_slots))]
        return [(int(s), np.array([s])) for s in np.flatnonzero(gains > threshold)]

    # -- joint features --------------------------------------------------------------
    def joint_difference(self, outputs, slots, pairs):
        slots = np.asarray(slots, dtype=np.intp)
        coef = self._gamma_true[pairs.sample][:, slots] - self.gamma_[pairs.label][:, slots]
        return outputs[:, pairs.sample] * coef.T

    # -- oracles ---------------------------------------------------------------------
    def slot_scores_to_label_scores(self, F):
        if self._identity_coding:
            return F
        return F @ self.gamma_.T  # (n, K)

    def loss_augmented(self, F):
        scores = self.slot_scores_to_label_scores(F)
        rows = np.arange(len(scores))
        own = scores[rows, self.y_]
        aug = self.delta_[self.y_] + scores - own[:, None]
        label = np.argmax(aug, axis=1)
        loss = self.delta_[self.y_, label]
        return OracleResult(label=label, loss=loss, margin=own - scores[rows, label])

    def evaluate_outputs(self, F, label):
        scores = self.slot_scores_to_label_scores(F)
        rows = np.arange(len(scores))
        margin = scores[rows, self.y_] - scores[rows, label]
        return OracleResult(label=label, loss=self.delta_[self.y_, label], margin=margin)

    def dense_losses(self):
        return self.delta_[self.y_]

    def dense_margins(self, F):
        scores = self.slot_scores_to_label_scores(F)
        return _coded_margins(np.ascontiguousarray(scores, dtype=np.float64), self.y_, self.delta_)

    def dense_weak_weights(self, Mu):
        # A = (sum_y Mu[i, y]) Gamma[y_i] - Mu Gamma (the bincount of weak_weights, dense)
        if self._identity_coding:
            return _onehot_weights(np.ascontiguousarray(Mu, dtype=np.float64), self.y_)
        return Mu.sum(axis=1)[:, None] * self._gamma_true - Mu @ self.gamma_

    def initial_violators(self, rng):
        aug = self.delta_[self.y_]
        best = aug == aug.max(axis=1, keepdims=True)
        # random tie break: add a uniform jitter only among the maximal entries
        label = np.argmax(best * (1.0 + rng.random(best.shape)), axis=1)
        loss = self.delta_[self.y_, label]
        return OracleResult(label=label, loss=loss, margin=np.zeros(len(label)))

    def predict_codes(self, F):
        return np.argmax(self.slot_scores_to_label_scores(F), axis=1)

    # -- persistence -----------------------------------------------------------------
    def _get_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """State a fitted model needs at prediction time (no training data)."""
        return {"sharing": self.sharing}, {
            "classes": np.asarray(self.classes_),
            "gamma": self.gamma_,
            "delta": self.delta_,
        }

    def _set_state(self, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        self.sharing = meta["sharing"]
        classes, gamma, delta = arrays["classes"], arrays["gamma"], arrays["delta"]
        K = len(classes) if classes.ndim == 1 else -1
        if gamma.dtype.kind != "f" or delta.dtype.kind != "f":
            raise ValueError(
                f"the task's gamma / delta must be float arrays, got {gamma.dtype} / {delta.dtype}"
            )
        if K < 1 or gamma.ndim != 2 or gamma.shape[0] != K or delta.shape != (K, K):
            raise ValueError(
                f"the task's arrays disagree: {K} classes, gamma {gamma.shape}, "
                f"delta {delta.shape} (expected ({K}, n_slots) and ({K}, {K}))"
            )
        self.classes_ = classes
        self.gamma_ = gamma
        self.delta_ = delta
        self.n_slots = self.gamma_.shape[1]
        K = len(self.gamma_)
        self._identity_coding = bool(
            self.gamma_.shape == (K, K) and np.array_equal(self.gamma_, np.eye(K))
        )
