"""Binary pairwise CRFs over graphs: the CRF parameter learning task of StructBoost.

Shen, Lin & van den Hengel, "StructBoost: Boosting methods for predicting structured
output variables", IEEE TPAMI 36(10), 2014, Sec. 3.6 ([Shen2014 eqs. 22-30]).  An input ``x`` is a
graph (:class:`CRFGraph`) with, per node ``p`` and label ``l``, a vector of unary
potentials ``U(l, x_p)`` (d_u values), and per edge ``(p, q)`` a vector of pairwise
potentials ``V_pq`` (d_v values, the value of ``V(y_p, y_q, x)`` when the labels
differ; it is 0 when they agree, [Shen2014 eqs. 33-34]).  The energy ([Shen2014 eq. 22]) is

    E(x, y) = sum_p sum_j w_j phi_j(U(y_p, x_p)) + sum_(p,q) [y_p != y_q] sum_j w'_j phi'_j(V_pq)

and ``w.Psi(x, y) = -E(x, y)`` with ``Psi = -[sum_p Phi(U(y_p)), sum_pq [y_p!=y_q] Phi'(V_pq)]``.
(The PDF's ``w = -w1 (.) w2`` should read ``w = [w1; w2]`` with the minus sign in Psi:
StructBoost keeps ``w >= 0``.)  With ``phi' >= 0`` and ``w' >= 0`` every pairwise term
``theta_pq(a, b) = [a != b] w'.phi'(V_pq)`` satisfies [Shen2014 eq. 24] (``theta(0,0) + theta(1,1) =
0 <= theta(0,1) + theta(1,0)``), so prediction ([Shen2014 eq. 23]) and the loss-augmented oracle
([Shen2014 eqs. 29/30]) are exact graph cuts (:mod:`maxmargin.inference.graphcut`).  Use
:class:`maxmargin.weak.nonneg.NonNegative` weak learners (outputs in [0, 1]); the task
raises if a learned pairwise energy is negative.

Weak-learner samples ([Shen2014 eqs. 27-28]): one row per (node, label) holding ``U(l, x_p)`` (the
unary slot 0) and one row per edge holding ``V_pq`` (the pairwise slot 1), stacked with
zero padding into one matrix ``Z`` of ``d_u + d_v`` columns.  A 1-slack cutting plane is
a signed weight per row of ``Z`` (as for :class:`~maxmargin.tasks.ranking.RankingTask`):
for the labelling ``y'`` of image i with weight ``c_i``, ``+c_i`` on row ``(p, y'_p)`` and
``-c_i`` on row ``(p, y_ip)`` where they differ, and ``c_i ([y'_p != y'_q] - [y_ip !=
y_iq])`` on edge rows; its gain for a weak classifier is exactly [Shen2014 eqs. 27-28].

Loss: the Hamming loss of [Shen2014 eq. 26] (``loss="hamming"``) or its area-weighted form
(``loss="area"``, node weights = superpixel sizes), divided by the image's total weight
when ``normalize=True`` (so every image's loss is a fraction in [0, 1]; [Shen2014 eq. 26] is
``normalize=False``).

The same task trains a linear structured SVM on the raw potentials (the paper's SSVM
row, after Szummer, Kohli & Hoiem, "Learning CRFs using graph cuts", ECCV 2008) through
:meth:`CRFTask.linear_model` and the 1-slack solver, ``Psi`` with ``phi`` the identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from maxmargin._validation import file_flag
from maxmargin.inference._threads import numba_threads, shard_threads
from maxmargin.inference.bk_maxflow import BKWork, build_csr_range, maxflow_range
from maxmargin.inference.graphcut import binary_graphcut
from maxmargin.tasks.base import Cut, DualPairs, JointCutsOnly, OracleResult, StructuredTask

__all__ = [
    "CRFGraph",
    "CRFLinearModel",
    "CRFShard",
    "CRFShardedCuts",
    "CRFTask",
    "crf_shard_from_energies",
    "crf_shard_oracle",
]


@dataclass
class CRFGraph:
    """One CRF input.

    unary : (n, 2, d_u) array, ``unary[p, l]`` = the potentials ``U(l, x_p)``.
    edges : (E, 2) int array of node pairs.
    pairwise : (E, d_v) array, the potentials of an edge whose labels differ.
    area : (n,) array or None, node sizes (for ``loss="area"``).
    """

    unary: np.ndarray
    edges: np.ndarray
    pairwise: np.ndarray
    area: np.ndarray | None = None


def _check_graph(g, d=None) -> CRFGraph:
    if not isinstance(g, CRFGraph):
        raise ValueError(f"CRF inputs must be CRFGraph instances, got {type(g).__name__}")
    U = np.asarray(g.unary, dtype=np.float64)
    if U.ndim == 2:
        U = U[:, :, None]
    if U.ndim != 3 or U.shape[1] != 2 or U.shape[0] < 1:
        raise ValueError(f"unary must have shape (n_nodes, 2, d_u), got {U.shape}")
    n = U.shape[0]
    E = np.asarray(g.edges, dtype=np.int64).reshape(-1, 2)
    if len(E) and (E.min() < 0 or E.max() >= n or np.any(E[:, 0] == E[:, 1])):
        raise ValueError("edges must join two different nodes in 0..n_nodes-1")
    V = np.asarray(g.pairwise, dtype=np.float64)
    if V.ndim == 1:
        V = V[:, None]
    if V.ndim != 2 or V.shape[0] != len(E):
        raise ValueError(f"pairwise must have shape ({len(E)}, d_v), got {V.shape}")
    area = np.ones(n) if g.area is None else np.asarray(g.area, dtype=np.float64).ravel()
    if area.shape != (n,) or np.any(area <= 0):
        raise ValueError("area must hold one positive value per node")
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(V))):
        raise ValueError("potentials contain NaN or inf")
    if d is not None and (U.shape[2], V.shape[1]) != d:
        raise ValueError(f"graphs have (d_u, d_v) = {(U.shape[2], V.shape[1])}, expected {d}")
    return CRFGraph(U, E, V, area)


class _Stacked:
    """Several graphs as one disconnected graph (one graph cut solves them all)."""

    def __init__(self, graphs, d=None):
        graphs = list(graphs)
        if not graphs:
            raise ValueError("need at least one graph")
        gs = [_check_graph(g, d) for g in graphs]
        d0 = (gs[0].unary.shape[2], gs[0].pairwise.shape[1])
        gs = [_check_graph(g, d0) for g in gs]
        self.d = d0
        n = np.array([g.unary.shape[0] for g in gs])
        ne = np.array([len(g.edges) for g in gs])
        self.node_off = np.concatenate([[0], np.cumsum(n)])
        self.edge_off = np.concatenate([[0], np.cumsum(ne)])
        self.m = len(gs)
        self.N = int(self.node_off[-1])
        self.n_edges = int(self.edge_off[-1])
        self.U = np.concatenate([g.unary for g in gs])  # (N, 2, d_u)
        self.V = np.concatenate([g.pairwise for g in gs]) if self.n_edges else np.zeros((0, d0[1]))
        self.edges = (
            np.concatenate([g.edges + o for g, o in zip(gs, self.node_off[:-1])])
            if self.n_edges
            else np.zeros((0, 2), dtype=np.int64)
        )
        self.area = np.concatenate([g.area for g in gs])
        self.node_img = np.repeat(np.arange(self.m), n)
        self.edge_img = np.repeat(np.arange(self.m), ne)

    def weak_inputs(self) -> np.ndarray:
        du, dv = self.d
        Z = np.zeros((2 * self.N + self.n_edges, du + dv))
        Z[: 2 * self.N, :du] = self.U.reshape(2 * self.N, du)
        Z[2 * self.N :, du:] = self.V
        return Z

    def split(self, labels) -> list[np.ndarray]:
        return [labels[a:b] for a, b in zip(self.node_off[:-1], self.node_off[1:])]

    def per_image(self, node_vals=None, edge_vals=None) -> np.ndarray:
        out = np.zeros(self.m)
        if node_vals is not None:
            out += np.bincount(self.node_img, weights=node_vals, minlength=self.m)
        if edge_vals is not None and self.n_edges:
            out += np.bincount(self.edge_img, weights=edge_vals, minlength=self.m)
        return out


def _solve(st: _Stacked, Eu, Ep) -> np.ndarray:
    """MAP labelling of all stacked graphs under unary (N, 2) and cut (E,) energies."""
    return binary_graphcut(Eu, st.edges, Ep)[0]


def _check_cut_weights(Ep):
    if len(Ep) and Ep.min() < -1e-9 * max(1.0, float(np.abs(Ep).max())):
        raise ValueError(
            "a learned pairwise energy is negative, so the CRF is not submodular (eq. 24): "
            "pairwise weak learners must have non-negative outputs (use "
            "weak_learner=NonNegative('stump'))"
        )
    return np.maximum(Ep, 0.0)


class CRFTask(JointCutsOnly, StructuredTask):
    """Binary CRF parameter learning over graphs (StructBoost Sec. 3.6).

    Inputs are lists of :class:`CRFGraph`, outputs lists of 0/1 label arrays (one per
    node).  Only the 1-slack formulation: the outputs of an image cannot be listed.

    Parameters
    ----------
    loss : {"hamming", "area"}, default="hamming"
        Hamming loss over nodes ([Shen2014 eq. 26]) or weighted by node area.
    normalize : bool, default=True
        Divide each image's loss by its number of nodes (or total area).
    """

    formulations = ("1-slack",)
    extra_capabilities = frozenset({"sharded_oracle"})
    #: inputs are lists of graphs, not a feature matrix
    structured_inputs = True

    def __init__(self, loss: str = "hamming", normalize: bool = True) -> None:
        self.loss = loss
        self.normalize = normalize

    # -- binding ---------------------------------------------------------------------
    def _node_loss(self, st: _Stacked, area) -> np.ndarray:
        if self.loss not in ("hamming", "area"):
            raise ValueError(f"loss must be 'hamming' or 'area', got {self.loss!r}")
        lw = np.ones(st.N) if self.loss == "hamming" else np.asarray(area, dtype=np.float64)
        if self.normalize:
            lw = lw / np.bincount(st.node_img, weights=lw, minlength=st.m)[st.node_img]
        return lw

    def _bind(self, X, y) -> None:
        if isinstance(X, CRFGraph):
            raise ValueError("X must be a list of CRFGraph, not a single graph")
        st = _Stacked(X)
        ys = list(y)
        if len(ys) != st.m:
            raise ValueError(f"X has {st.m} graphs but y has {len(ys)} labellings")
        labs = [np.asarray(v).ravel() for v in ys]
        for k, v in enumerate(labs):
            if len(v) != st.node_off[k + 1] - st.node_off[k]:
                raise ValueError(
                    f"labelling {k} has {len(v)} labels for a graph of "
                    f"{st.node_off[k + 1] - st.node_off[k]} nodes"
                )
        flat = np.concatenate(labs)
        if not np.all(np.isin(flat, (0, 1))):
            raise ValueError("CRF labels must be 0 or 1")
        self.st_ = st
        self.y_ = flat.astype(np.int64)
        self.lw_ = self._node_loss(st, st.area)
        self.n_samples = st.m
        self.n_slots = 2
        self.d_ = st.d
        self._Z = st.weak_inputs()
        self.slot_of_row_ = np.concatenate(
            [np.zeros(2 * st.N, dtype=np.int64), np.ones(st.n_edges, dtype=np.int64)]
        )
        e = st.edges
        self._cut_true = (self.y_[e[:, 0]] != self.y_[e[:, 1]]).astype(np.float64)

    # -- weak learners ---------------------------------------------------------------
    def weak_inputs(self) -> np.ndarray:
        return self._Z

    def weak_weights(self, duals: DualPairs) -> np.ndarray:
        a = np.bincount(duals.sample, weights=duals.value, minlength=len(self._Z))
        A = np.zeros((len(self._Z), 2))
        A[np.arange(len(a)), self.slot_of_row_] = a
        return A

    def select_columns(self, gains, threshold):
        # one unary and one pairwise weak learner per iteration (Sec. 3.6)
        return [(s, np.array([s])) for s in range(2) if gains[s] > threshold]

    def joint_difference(self, outputs, slots, pairs):
        slots = np.asarray(slots, dtype=np.int64)
        mask = self.slot_of_row_[pairs.sample][None, :] == slots[:, None]
        return outputs[:, pairs.sample] * mask

    # -- energies --------------------------------------------------------------------
    def energies(self, F):
        """Unary energies (N, 2) and cut energies (E,) from slot scores F (n_z, 2)."""
        st = self.st_
        F = np.asarray(F)
        Eu = F[: 2 * st.N, 0].reshape(st.N, 2)
        Ep = _check_cut_weights(F[2 * st.N :, 1])
        return Eu, Ep

    def _energy_of(self, Eu, Ep, labels) -> np.ndarray:
        st = self.st_
        e = st.edges
        cut = labels[e[:, 0]] != labels[e[:, 1]]
        return st.per_image(Eu[np.arange(st.N), labels], Ep * cut)

    # -- the 1-slack oracle ----------------------------------------------------------
    def most_violated(self, F) -> OracleResult:
        """[Shen2014 eq. 30] for every image: ``argmin_y E(y) - Delta(y_i, y)`` by one graph cut.

        ``label`` holds the concatenated node labels; ``loss`` and ``margin`` are per
        image (margin = E(y') - E(y_i) = w.dPsi_i(y')).  With a sharded oracle attached
        (``StructBoost(n_jobs=...)``, :meth:`attach_sharded_oracle`) the cuts run per
        shard of images on its workers."""
        st = self.st_
        Eu, Ep = self.energies(F)
        sharded = getattr(self, "_sharded_oracle", None)
        if sharded is not None:
            lab, loss, margin = sharded.run_energies(Eu, Ep)
            return OracleResult(label=lab, loss=loss, margin=margin)
        aug = Eu.copy()
        aug[np.arange(st.N), 1 - self.y_] -= self.lw_
        lab = _solve(st, aug, Ep)
        return self._result(Eu, Ep, lab)

    def attach_sharded_oracle(self, oracle) -> None:
        """Route :meth:`most_violated` through ``oracle`` (a placed
        :class:`~maxmargin.solvers.parallel.ShardedOracle` over :meth:`linear_model`), or
        back to the single graph cut with ``None``."""
        self._sharded_oracle = oracle

    def _result(self, Eu, Ep, lab) -> OracleResult:
        st = self.st_
        loss = st.per_image(self.lw_ * (lab != self.y_))
        margin = self._energy_of(Eu, Ep, lab) - self._energy_of(Eu, Ep, self.y_)
        return OracleResult(label=lab, loss=loss, margin=margin)

    def _cut_from_labels(self, orc: OracleResult) -> Cut:
        st = self.st_
        m = st.m
        c = (orc.hinge > 0).astype(np.float64) / m
        lab = orc.label
        cn = c[st.node_img]
        wrong = np.flatnonzero((lab != self.y_) & (cn > 0))
        rows = [2 * wrong + lab[wrong], 2 * wrong + self.y_[wrong]]
        vals = [cn[wrong], -cn[wrong]]
        e = st.edges
        dcut = (lab[e[:, 0]] != lab[e[:, 1]]) - self._cut_true
        ce = c[st.edge_img] * dcut
        ed = np.flatnonzero(ce != 0)
        rows.append(2 * st.N + ed)
        vals.append(ce[ed])
        sample = np.concatenate(rows).astype(np.int64)
        pairs = DualPairs(sample, np.zeros(len(sample), dtype=np.int64), np.concatenate(vals))
        rhs = float(np.sum(c * orc.loss))
        return Cut(pairs, rhs, float(orc.hinge.mean()), orc)

    def one_slack_cut(self, F) -> Cut:
        return self._cut_from_labels(self.most_violated(F))

    def initial_cut(self, rng) -> Cut:
        return self.one_slack_cut(np.zeros((len(self._Z), 2)))

    def cut_value(self, F, cut) -> float:
        F = np.asarray(F)
        s = cut.pairs.sample
        return cut.rhs - float(cut.pairs.value @ F[s, self.slot_of_row_[s]])

    # -- prediction ------------------------------------------------------------------
    def prediction_layout(self, X):
        """Stacked new graphs and their weak inputs (for :meth:`predict_from_scores`)."""
        st = _Stacked([X] if isinstance(X, CRFGraph) else X, self.d_)
        return st, st.weak_inputs()

    def predict_from_scores(self, st, F) -> list[np.ndarray]:
        """MAP labellings ([Shen2014 eq. 23]) of stacked graphs from slot scores on their inputs."""
        F = np.asarray(F)
        Eu = F[: 2 * st.N, 0].reshape(st.N, 2)
        Ep = _check_cut_weights(F[2 * st.N :, 1])
        return st.split(_solve(st, Eu, Ep))

    def predict_linear(self, X, w) -> list[np.ndarray]:
        """MAP labellings of new graphs under linear weights ``w = [w_u, w_v]`` (the
        SSVM on raw potentials); cut weights below 0 are clipped (see CRFLinearModel)."""
        st = _Stacked([X] if isinstance(X, CRFGraph) else X, self.d_)
        du = self.d_[0]
        Eu = st.U @ w[:du]
        Ep = st.V @ w[du:] if st.n_edges else np.zeros(0)
        return st.split(_solve(st, Eu, np.maximum(Ep, 0.0)))

    def hamming(self, y_true, y_pred) -> float:
        t = np.concatenate([np.asarray(v).ravel() for v in y_true])
        p = np.concatenate([np.asarray(v).ravel() for v in y_pred])
        return float(np.mean(t != p))

    # -- the linear structured SVM on raw potentials -------------------------------
    linear_ssvm = True
    linear_solvers = ("1-slack",)  # the graph-cut oracle gives joint planes only

    @property
    def n_features_in(self) -> int:
        return int(sum(self.d_))

    def score_predictions(self, y_true, y_pred) -> float:
        return 1.0 - self.hamming(y_true, y_pred)

    def linear_slots_ok(self, n_slots: int) -> bool:
        return True  # the linear model's slots are the potentials' ([w_u, w_v])

    def linear_model(self) -> CRFLinearModel:
        return CRFLinearModel(self)

    def _get_state(self):
        return {"loss": self.loss, "normalize": bool(self.normalize)}, {
            "d": np.asarray(self.d_, dtype=np.int64)
        }

    def _set_state(self, meta, arrays):
        self.loss = meta["loss"]
        self.normalize = file_flag(meta["normalize"], "normalize")
        self.d_ = tuple(int(v) for v in arrays["d"])
        self.n_slots = 2


class CRFLinearModel:
    """Linear joint features of a bound :class:`CRFTask` for the 1-slack SSVM solver.

    ``w = [w_u (d_u), w_v (d_v)]``, ``E(y) = sum_p w_u.U(y_p, x_p) + sum_pq [y_p != y_q]
    w_v.V_pq``, ``w.Psi = -E``.  The graph cut is exact when every cut weight ``c_e =
    w_v.V_e`` is non-negative (the energy is then submodular: ``theta(0,0) + theta(1,1) =
    0 <= theta(0,1) + theta(1,0) = c_e``); a negative ``c_e`` rewards cutting the edge and
    the cut is no longer the minimum.

    :attr:`nonneg_coords` declares ``w_j >= 0`` for every pairwise coordinate ``j`` whose
    training potentials ``V[:, j]`` are all non-negative (all of them for contrast-type
    potentials such as the Segmenter's); the 1-slack QP master enforces it (Szummer,
    Kohli & Hoiem, "Learning CRFs using graph cuts", ECCV 2008: non-negative pairwise
    weights), so with non-negative potentials every cut weight is non-negative at every
    master point and the oracle is exact on the training graphs.  A column with a
    negative potential is left free: no sign of its weight keeps all cut weights
    non-negative.  Inference still uses the cut weights ``max(0, c_e)`` (exact when all
    are non-negative), and losses and margins are always evaluated with the true
    energies, so every plane is valid.  Where some cut weight is negative the oracle's
    hinge is only a lower bound of the true one; the primal value the solver offers to
    its certificate is then :meth:`hinge_upper_bound`'s.
    """

    #: the estimator's layout bookkeeping: (n_features = dim, n_slots = 1, n_states = 2,
    #: no transition block)
    pairwise = False

    def __init__(self, task: CRFTask) -> None:
        self.task = task
        st = task.st_
        self.st = st
        self.n_samples = st.m
        self.n_positions = st.N
        self.d_u, self.d_v = st.d
        self.dim = self.d_u + self.d_v
        self.y = task.y_
        # the solver's bookkeeping of a layout (n_features, n_slots, n_states, pairwise)
        self.n_features, self.n_slots, self.n_states = self.dim, 1, 2
        #: coordinates of ``w`` the solver keeps >= 0 (read by the SSVM solvers: the
        #: pairwise weights of non-negative potential columns; None: unconstrained)
        cols = np.flatnonzero(np.all(st.V >= 0.0, axis=0))
        self.nonneg_coords = self.d_u + cols if len(cols) else None

    def check_rescaling(self, rescaling):
        if rescaling != "margin":
            raise ValueError("CRF models support only rescaling='margin'")

    def energies(self, w, st=None):
        st = self.st if st is None else st
        Eu = st.U @ w[: self.d_u]  # (N, 2)
        Ep = st.V @ w[self.d_u :] if st.n_edges else np.zeros(0)
        return Eu, Ep

    def unary(self, w, X=None):
        return self.energies(w)

    def oracle_exact(self, w) -> bool:
        """Whether the graph-cut oracle's answer at ``w`` is the exact loss-augmented
        maximum: every cut weight ``c_e = w_v.V_e`` non-negative (submodular energies)."""
        st = self.st
        return not st.n_edges or bool(np.all(st.V @ w[self.d_u :] >= 0.0))

    def hinge_upper_bound(self, w, labels, hinge):
        """Per-image upper bounds of the true hinge at ``w`` from the oracle's answer.

        The oracle maximises ``loss(y) - E'(y)`` with the clipped energies ``E'``
        (negative cut weights set to 0), exactly.  As ``E = E' + sum_(c_e < 0) c_e
        [y_p != y_q] >= E' - sum_(c_e < 0) |c_e|``, the true maximum exceeds the value of
        the oracle's labelling ``y*`` under the true energies by at most the ``|c_e|`` of
        the negative edges that ``y*`` does not cut: ``hinge_i <= hinge_i(y*) + sum_(e in
        i, c_e < 0, y*_p == y*_q) |c_e|`` -- equal to the oracle's hinge when every cut
        weight is non-negative.  A valid primal bound at any ``w``."""
        st = self.st
        hinge = np.asarray(hinge, dtype=np.float64)
        if not st.n_edges:
            return hinge
        c = st.V @ w[self.d_u :]
        neg = c < 0.0
        if not neg.any():
            return hinge
        e = st.edges
        uncut = labels[e[:, 0]] == labels[e[:, 1]]
        extra = np.bincount(st.edge_img, np.where(neg & uncut, -c, 0.0), minlength=st.m)
        return hinge + extra

    def loss_augmented(self, w, rescaling="margin", U=None):
        t = self.task
        st = self.st
        Eu, Ep = self.energies(w) if U is None else U
        aug = Eu.copy()
        aug[np.arange(st.N), 1 - t.y_] -= t.lw_
        lab = _solve(st, aug, np.maximum(Ep, 0.0))
        r = t._result(Eu, Ep, lab)
        return lab, r.loss, r.margin

    def evaluate(self, w, labels, U=None):
        Eu, Ep = self.energies(w) if U is None else U
        r = self.task._result(Eu, Ep, np.asarray(labels, dtype=np.int64))
        return r.loss, r.margin

    def plane(self, labels, coef):
        """``sum_i coef_i dPsi_i(labels_i)``, dPsi = [sum_p U(y'_p) - U(y_p), sum_e V_e dcut]."""
        st, y = self.st, self.y
        c = np.asarray(coef, dtype=np.float64)[st.node_img]
        rows = np.arange(st.N)
        a_u = (c[:, None] * (st.U[rows, labels] - st.U[rows, y])).sum(axis=0)
        e = st.edges
        dcut = (labels[e[:, 0]] != labels[e[:, 1]]).astype(np.float64) - self.task._cut_true
        ce = np.asarray(coef, dtype=np.float64)[st.edge_img] * dcut
        a_v = ce @ st.V if st.n_edges else np.zeros(self.d_v)
        return np.concatenate([a_u, a_v])

    def objective(self, w, C, hinge):
        return 0.5 * float(w @ w) + C * float(np.mean(hinge))

    def predict(self, w, X) -> list[np.ndarray]:
        return self.task.predict_linear(X, w)

    def sharded_cuts(self, bounds, threads: int = 1) -> CRFShardedCuts:
        """The oracle over the fixed shards ``bounds`` of the images on numba threads
        (``threads`` for building the arc lists)."""
        st, t = self.st, self.task
        images = CRFShard(st.U, st.V, st.edges, self.y, t.lw_, st.node_img, st.edge_img,
                          t._cut_true, len(st.node_off) - 1)  # fmt: skip
        return CRFShardedCuts(images, st.node_off, st.edge_off, bounds, threads)

    def shard(self, a: int, b: int) -> CRFShard:
        """Images ``a..b-1`` as a :class:`CRFShard` (for the sharded oracle)."""
        st, t = self.st, self.task
        n0, n1 = int(st.node_off[a]), int(st.node_off[b])
        e0, e1 = int(st.edge_off[a]), int(st.edge_off[b])
        c = np.ascontiguousarray
        return CRFShard(
            c(st.U[n0:n1]),
            c(st.V[e0:e1]),
            c(st.edges[e0:e1] - n0),
            c(self.y[n0:n1]),
            c(t.lw_[n0:n1]),
            c(st.node_img[n0:n1] - a),
            c(st.edge_img[e0:e1] - a),
            c(t._cut_true[e0:e1]),
            int(b - a),
        )


# ---------------------------------------------------------------------------------------
# the per-shard oracle of the linear CRF (StructSVM with n_jobs; solvers/parallel.py)
# ---------------------------------------------------------------------------------------
class CRFShard(NamedTuple):
    """Images ``a..b-1`` of a bound :class:`CRFTask`, everything re-based to the shard:
    what a worker needs for the loss-augmented graph cuts and the shard's 1-slack plane."""

    U: np.ndarray  # (N_s, 2, d_u) unary potentials
    V: np.ndarray  # (E_s, d_v) pairwise potentials
    edges: np.ndarray  # (E_s, 2) node pairs, shard-local
    y: np.ndarray  # (N_s,) true labels
    lw: np.ndarray  # (N_s,) node loss weights
    node_img: np.ndarray  # (N_s,) shard-local image of every node
    edge_img: np.ndarray  # (E_s,) shard-local image of every edge
    cut_true: np.ndarray  # (E_s,) 1.0 where the true labels differ across the edge
    m: int  # images in the shard


@njit(cache=True, nogil=True)
def _crf_shard_core(
    data, w, use_w, Eu, Ep, graph, span, flow, out, plane
):  # pragma: no cover - compiled
    """The loss-augmented oracle of images ``i0:i1`` (nodes ``n0:n1``, edges ``e0:e1``)
    in one pass: the energies (from ``w`` if ``use_w``, in a fixed order, no BLAS), the
    graph cut of [Shen2014 eq. 30] (cut weights clipped at 0; Boykov-Kolmogorov, which releases the
    GIL), then per image the loss and the margin ``E(y') - E(y_i)`` under the true
    energies, and if ``plane`` is not empty the shard's 1-slack sums over the violators:
    ``plane[:d] = sum_i dPsi_i``, ``plane[d] = sum_i Delta_i``, ``plane[d + 1]`` the
    sum of the hinges, and ``plane[d + 2]`` the magnitudes of the negative cut weights
    the labelling leaves uncut, summed over all the shard's images (the hinges plus this
    bound the true hinges from above: :meth:`CRFLinearModel.hinge_upper_bound`, per
    image).  Writes only the ranges given, so shards run side by side.

    The arguments come bundled: ``data`` the stacked images ``(U, V, edges, y, lw,
    node_img, edge_img, cut_true)`` (:class:`CRFShardedCuts`), ``graph`` their arc lists
    ``(first, head, sister, arc_edge)``, ``span = (i0, i1, n0, n1, e0, e1)``, ``flow =
    (rcap, tr, work)`` the max-flow's residual capacities, terminal capacities and work
    arrays (:attr:`BKWork.arrays`), ``out = (lab, loss, margin)`` the answers."""
    U, V, edges, y, lw, node_img, edge_img, cut_true = data
    first, head, sister, arc_edge = graph
    i0, i1, n0, n1, e0, e1 = span
    rcap, tr, work = flow
    lab, loss, margin = out
    du = U.shape[2]
    dv = V.shape[1]
    if use_w:
        for p in range(n0, n1):
            for lb in range(2):
                s = 0.0
                for j in range(du):
                    s += U[p, lb, j] * w[j]
                Eu[p, lb] = s
        for e in range(e0, e1):
            s = 0.0
            for j in range(dv):
                s += V[e, j] * w[du + j]
            Ep[e] = s
    # [Shen2014 eq. 30]: the loss enters the unaries, aug[p, 1 - y_p] = Eu[p, 1 - y_p] - lw_p
    for p in range(n0, n1):
        a1 = Eu[p, 1] - lw[p] if y[p] == 0 else Eu[p, 1]
        a0 = Eu[p, 0] - lw[p] if y[p] == 1 else Eu[p, 0]
        tr[p] = a1 - a0  # > 0: label 1 (sink side) pays it through the source arc
    for a in range(first[n0], first[n1]):
        c = Ep[arc_edge[a] >> 1]
        rcap[a] = c if c > 0.0 else 0.0  # Potts: the cut weight in both directions
    maxflow_range(first, head, sister, rcap, tr, n0, n1, work, lab)
    m = i1 - i0
    e_lab = np.zeros(m)
    e_true = np.zeros(m)
    for i in range(i0, i1):
        loss[i] = 0.0
    for p in range(n0, n1):
        i = node_img[p]
        if lab[p] != y[p]:
            loss[i] += lw[p]
        e_lab[i - i0] += Eu[p, lab[p]]
        e_true[i - i0] += Eu[p, y[p]]
    for e in range(e0, e1):
        i = edge_img[e] - i0
        if lab[edges[e, 0]] != lab[edges[e, 1]]:
            e_lab[i] += Ep[e]
        if cut_true[e] != 0.0:
            e_true[i] += Ep[e]
    for i in range(i0, i1):
        margin[i] = e_lab[i - i0] - e_true[i - i0]
    if plane.shape[0] == 0:
        return
    for j in range(plane.shape[0]):
        plane[j] = 0.0
    d = du + dv
    viol = np.zeros(m, dtype=np.bool_)
    b = 0.0
    h = 0.0
    for i in range(i0, i1):
        hi = loss[i] - margin[i]
        if hi > 0.0:
            viol[i - i0] = True
            b += loss[i]
            h += hi
    for p in range(n0, n1):
        if viol[node_img[p] - i0] and lab[p] != y[p]:
            for j in range(du):
                plane[j] += U[p, lab[p], j] - U[p, y[p], j]
    for e in range(e0, e1):
        if viol[edge_img[e] - i0]:
            dc = -cut_true[e]
            if lab[edges[e, 0]] != lab[edges[e, 1]]:
                dc += 1.0
            if dc != 0.0:
                for j in range(dv):
                    plane[du + j] += dc * V[e, j]
    # the inexact oracle's slack (CRFLinearModel.hinge_upper_bound): every image's
    # negative cut weights that its labelling leaves uncut (0 when all are >= 0)
    s = 0.0
    for e in range(e0, e1):
        if Ep[e] < 0.0 and lab[edges[e, 0]] == lab[edges[e, 1]]:
            s -= Ep[e]
    plane[d] = b
    plane[d + 1] = h
    plane[d + 2] = s


@njit(cache=True, nogil=True, parallel=True)
def _crf_shards(data, w, use_w, Eu, Ep, graph, bounds, flow, out, planes):  # pragma: no cover
    """:func:`_crf_shard_core` for every shard ``c`` (images ``img_b[c]:img_b[c+1]``) on
    numba's threads; shard ``c``'s plane goes to ``planes[c]`` (``planes`` with 0 columns:
    no planes).  A shard writes only its own rows, so the answers do not depend on the
    number of threads.  ``bounds = (img_b, node_b, edge_b)``: the shards' first image,
    node and edge; the other arguments as there."""
    img_b, node_b, edge_b = bounds
    rcap, tr, work = flow  # (a tuple inside a tuple is no argument of a parallel loop)
    for c in prange(img_b.shape[0] - 1):
        span = (img_b[c], img_b[c + 1], node_b[c], node_b[c + 1], edge_b[c], edge_b[c + 1])
        _crf_shard_core(data, w, use_w, Eu, Ep, graph, span, (rcap, tr, work), out, planes[c])


@njit(cache=True, nogil=True, parallel=True)
def _crf_csr(p, q, node_b, edge_b, first, head, sister, arc_edge):  # pragma: no cover
    """The arc lists of every shard on numba's threads (the layout of one build)."""
    for c in prange(node_b.shape[0] - 1):
        build_csr_range(p, q, node_b[c], node_b[c + 1], edge_b[c], edge_b[c + 1], first,
                        head, sister, arc_edge)  # fmt: skip


class CRFShardedCuts:
    """The CRF oracle over fixed shards of the images on numba threads: the arrays of all
    images, their arc lists (CSR, built once) and the work arrays, reused by every call.

    Parameters
    ----------
    images : CRFShard
        The stacked images (node / edge arrays, image numbers 0..m-1).
    node_off, edge_off : (m + 1,) arrays
        First node / edge of every image.
    bounds : (S + 1,) array
        The fixed shards: images ``bounds[c]:bounds[c+1]``.

    :meth:`run` (energies from ``w``, StructSVM) and :meth:`run_energies` (energies given,
    StructBoost) return per-image answers and, for ``run``, the shards' planes
    ``(S, d + 3)`` (sum of dPsi, of the violators' losses, of the hinges, and the slack
    of the hinges' upper bound: :func:`_crf_shard_core`).  The same data
    give the same bits for every thread count; one shard of a stack gives the same bits
    as that shard's images alone (the process path calls this class on a shard).
    """

    def __init__(self, images: CRFShard, node_off, edge_off, bounds, threads=1):
        c = np.ascontiguousarray
        self.U = c(images.U, dtype=np.float64)
        self.V = c(images.V, dtype=np.float64)
        self.edges = c(images.edges, dtype=np.int64).reshape(-1, 2)
        self.y = c(images.y, dtype=np.int64)
        self.lw = c(images.lw, dtype=np.float64)
        self.node_img = c(images.node_img, dtype=np.int64)
        self.edge_img = c(images.edge_img, dtype=np.int64)
        self.cut_true = c(images.cut_true, dtype=np.float64)
        bounds = np.asarray(bounds, dtype=np.int64)
        self.img_b = c(bounds)
        self.node_b = c(np.asarray(node_off, dtype=np.int64)[bounds])
        self.edge_b = c(np.asarray(edge_off, dtype=np.int64)[bounds])
        N, E = len(self.y), len(self.edges)
        self.N, self.E, self.m = N, E, len(node_off) - 1
        self.d = self.U.shape[2] + self.V.shape[1]
        self.first = np.empty(N + 1, dtype=np.int64)
        self.head = np.empty(2 * E, dtype=np.int64)
        self.sister = np.empty(2 * E, dtype=np.int64)
        self.arc_edge = np.empty(2 * E, dtype=np.int64)
        with numba_threads(threads):  # the shards' arc lists side by side
            _crf_csr(c(self.edges[:, 0]), c(self.edges[:, 1]), self.node_b, self.edge_b,
                     self.first, self.head, self.sister, self.arc_edge)  # fmt: skip
        self.first[N] = 2 * E
        self.work = BKWork(N)
        self.rcap = np.empty(2 * E)
        self.tr = np.empty(N)
        self.Eu = np.empty((N, 2))
        self.Ep = np.empty(E)
        self.data = (self.U, self.V, self.edges, self.y, self.lw, self.node_img,
                     self.edge_img, self.cut_true)  # fmt: skip
        self.graph = (self.first, self.head, self.sister, self.arc_edge)
        self.bounds = (self.img_b, self.node_b, self.edge_b)

    @classmethod
    def from_shard(cls, sh: CRFShard) -> CRFShardedCuts:
        """One shard's images as a one-shard problem (the worker side)."""
        n_img = np.bincount(sh.node_img, minlength=sh.m)
        e_img = np.bincount(sh.edge_img, minlength=sh.m)
        offsets = [np.concatenate([[0], np.cumsum(k)]) for k in (n_img, e_img)]
        return cls(sh, *offsets, np.array([0, sh.m]))

    @property
    def n_shards(self) -> int:
        return len(self.img_b) - 1

    def _call(self, w, use_w, Eu, Ep, want_plane, threads, keep_labels=True):
        if keep_labels:
            lab = np.empty(self.N, dtype=np.int64)
        else:  # a buffer reused by every call: no fresh pages to fault in on the threads
            lab = getattr(self, "_lab", None)
            if lab is None:
                lab = self._lab = np.empty(self.N, dtype=np.int64)
        loss = np.empty(self.m)
        margin = np.empty(self.m)
        planes = np.zeros((self.n_shards, self.d + 3 if want_plane else 0))
        k = self.work
        with shard_threads(threads):  # images of uneven cost: shards to the next free thread
            _crf_shards(
                self.data, w, use_w, Eu, Ep, self.graph, self.bounds,
                (self.rcap, self.tr, k.arrays), (lab, loss, margin), planes,
            )  # fmt: skip
        return lab, loss, margin, planes

    def run(self, w, want_plane: bool = True, threads: int = 1, keep_labels: bool = True):
        """``(labels, loss, margin, planes)`` under linear weights ``w`` (cut weights
        clipped at 0 for the cut, margins with the true energies).  With
        ``keep_labels=False`` the labels are a work buffer that the next call overwrites."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"w has {w.size} entries, the CRF has {self.d} features")
        return self._call(w, True, self.Eu, self.Ep, want_plane, threads, keep_labels)

    def run_energies(self, Eu, Ep, threads: int = 1):
        """``(labels, loss, margin)`` under unary (N, 2) and cut (E,) energies (the cut
        clipped at 0 for inference, margins with ``Ep`` as given)."""
        Eu = np.ascontiguousarray(Eu, dtype=np.float64)
        Ep = np.ascontiguousarray(Ep, dtype=np.float64)
        if Eu.shape != (self.N, 2) or Ep.shape != (self.E,):
            raise ValueError("energies do not match the CRF")
        lab, loss, margin, _ = self._call(np.zeros(self.d), False, Eu, Ep, False, threads)
        return lab, loss, margin


def _as_cuts(sh) -> CRFShardedCuts:
    return sh if isinstance(sh, CRFShardedCuts) else CRFShardedCuts.from_shard(sh)


def crf_shard_oracle(sh, w: np.ndarray, want_plane: bool):
    """Loss-augmented labelling ([Shen2014 eq. 30], one graph cut over the shard's images, cut
    weights clipped at 0 as in :class:`CRFLinearModel`) of every image of the shard;
    returns ``(labels, loss, margin, plane)`` with the shard's plane ``[sum dPsi,
    sum of the violators' losses, sum of the hinges, the hinges' upper-bound slack]``
    (:func:`_crf_shard_core`; empty unless ``want_plane``).
    Deterministic: the same shard and ``w`` give the same bits on any worker, and the
    same bits as the shard inside :class:`CRFShardedCuts` of all images.  ``sh`` is a
    :class:`CRFShard` or its :meth:`CRFShardedCuts.from_shard` (reusable work arrays)."""
    lab, loss, margin, planes = _as_cuts(sh).run(w, want_plane)
    return lab, loss, margin, planes[0]


def crf_shard_from_energies(sh, Eu: np.ndarray, Ep: np.ndarray):
    """The shard's loss-augmented graph cut under given unary (N_s, 2) and cut (E_s,)
    energies (the cut clipped at 0 for inference, margins with ``Ep`` as given);
    returns ``(labels, loss, margin)``.  StructBoost's sharded oracle sends the energies
    from its slot scores."""
    return _as_cuts(sh).run_energies(Eu, Ep)
