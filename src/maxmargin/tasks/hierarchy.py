"""Hierarchical classification with a class taxonomy ([Shen2014] Sec. 3.4).

Two tasks, both trained with the tree loss of :class:`~maxmargin.tasks.taxonomy.Taxonomy`
(height of the lowest common ancestor, [Shen2014]; or half the path length, [Nowozin2011]
after [Cai2004]; keys of docs/references.md):

* :class:`HierarchyTask` -- ``Psi(x, y) = Phi(x) (x) Gamma(y)`` with the 0/1 ancestor
  coding of [Shen2014 eqs. 19-20]: a class scores the sum of the node scores on its path to the
  root.  A :class:`~maxmargin.tasks.base.LabelCodingTask`, so the loss-augmented oracle,
  the signed weights of the weak learners and the linear (SSVM) form ``F = X @ W`` all
  come from the (K, S) coding and the (K, K) loss matrix.
* :class:`LabelAugmentedTask` -- the alternative at the end of Sec. 3.4 (after
  [Paisitkriangkrai2014]): label-augmented data ``x'_y = x (x) Gamma(y)`` and a single
  weight vector, ``F(x, y) = w . Phi(x'_y)``.  Weak learners are trained on the (example,
  label) pairs.

Which classes can be predicted.  ``label_set="observed"`` (default) restricts the output
space to the classes present in the training labels (as every scikit-learn classifier
does; a flat taxonomy then gives exactly :class:`MultiClassTask`); ``"all"`` uses every
leaf of the taxonomy, so an unseen leaf can still be predicted from the scores of its
ancestors, and the training constraints push it below each example's true class.
Columns of the coding that are constant over the chosen classes (the root, leaves that are
not predicted, a node above all of them) cancel in every ``Gamma(y_i) - Gamma(y)`` and are
dropped; ``nodes_`` names the nodes of the remaining slots.
"""

from __future__ import annotations

import json

import numpy as np

from maxmargin.tasks.base import (
    DualPairs,
    LabelCodingTask,
    OracleResult,
    StructuredTask,
    _coded_margins,
)
from maxmargin.tasks.taxonomy import LOSS_KINDS, Taxonomy

__all__ = ["HierarchyTask", "LabelAugmentedTask", "as_taxonomy"]

LABEL_SETS = ("observed", "all")


def as_taxonomy(spec) -> Taxonomy:
    """A :class:`Taxonomy` from a Taxonomy, a dict (JSON object or nested tree), a JSON
    text, or a path to a ``.json`` file or a text file of ``parent child`` lines."""
    if isinstance(spec, Taxonomy):
        return spec
    if isinstance(spec, dict):
        return Taxonomy.from_json(spec)
    if isinstance(spec, str) and spec.lstrip().startswith("{"):
        return Taxonomy.from_json(spec)
    try:
        with open(spec, encoding="utf-8") as fh:
            head = fh.read(4096).lstrip()
    except TypeError:
        raise ValueError(
            f"taxonomy must be a Taxonomy, a dict or a file path, got {type(spec).__name__}"
        ) from None
    except OSError as exc:
        raise ValueError(f"cannot read taxonomy file {spec!r}: {exc}") from None
    return Taxonomy.from_json(spec) if head.startswith("{") else Taxonomy.from_text(spec)


class _TaxonomyCoding:
    """Shared by both tasks: output space, coding and loss from a taxonomy."""

    def _check_spec(self) -> None:
        if self.loss not in LOSS_KINDS:
            raise ValueError(f"loss must be one of {LOSS_KINDS}, got {self.loss!r}")
        if self.label_set not in LABEL_SETS:
            raise ValueError(f"label_set must be one of {LABEL_SETS}, got {self.label_set!r}")

    def _encode(self, y):
        self._check_spec()
        tax = as_taxonomy(self.taxonomy)
        y = np.asarray(y)
        idx = tax.index(y)  # raises naming labels that are not leaves
        leaves = np.unique(idx) if self.label_set == "observed" else np.arange(tax.n_classes)
        if len(leaves) < 2:
            raise ValueError(f"need at least 2 classes to train, got {len(leaves)}")
        self._tax = tax
        self.leaves_ = leaves  # leaf node id of each class code
        codes = np.searchsorted(leaves, idx).astype(np.intp)
        return tax.classes[leaves], codes

    def _coding_and_loss(self) -> tuple[np.ndarray, np.ndarray]:
        G = self._tax.coding()[self.leaves_]  # (K, n_nodes), rows of the classes
        keep = np.flatnonzero(G.min(axis=0) != G.max(axis=0))
        self.nodes_ = keep  # node id of every slot
        D = self._tax.loss_matrix(self.loss)[np.ix_(self.leaves_, self.leaves_)]
        return G[:, keep], D

    def taxonomy_json(self) -> str:
        """The taxonomy as JSON text (kept in model files for inspection and refits)."""
        return as_taxonomy(self.taxonomy).to_json()


class HierarchyTask(_TaxonomyCoding, LabelCodingTask):
    """Classes are the leaves of a tree; ``Gamma`` is the ancestor coding (Sec. 3.4).

    ``F(x, y) = sum_{z: y <= z} f_z(x)`` with one ensemble ``f_z`` per tree node and the tree
    loss ``Delta`` in the margin constraints, so a confusion inside a subtree costs less
    than one across subtrees.  With a flat taxonomy this is :class:`MultiClassTask`.

    Parameters
    ----------
    taxonomy : Taxonomy, dict or path
        The class tree (see :func:`as_taxonomy`); training labels must be its leaves.
    loss : {"height", "half_path", "zero_one"}, default="height"
        Tree loss: height of the lowest common ancestor ([Shen2014]), half the tree distance
        ([Nowozin2011]), or the flat 0/1 loss (ancestor coding only).
    sharing : {"shared", "per_class"}
        How weak classifiers enter the slots (nodes); see :class:`LabelCodingTask`.
    label_set : {"observed", "all"}
        Predict only the training classes, or every leaf of the taxonomy.
    """

    def __init__(
        self,
        taxonomy=None,
        loss: str = "height",
        sharing: str = "shared",
        label_set: str = "observed",
    ) -> None:
        super().__init__(sharing=sharing)
        self.taxonomy = taxonomy
        self.loss = loss
        self.label_set = label_set

    def coding_matrix(self):
        self.gamma_full_, self.delta_full_ = self._coding_and_loss()
        return self.gamma_full_

    def loss_matrix(self):
        return self.delta_full_

    # -- persistence: arrays plus the taxonomy as JSON (for inspection, not needed) ------
    def _get_state(self):
        meta, arrays = super()._get_state()
        meta.update(loss=self.loss, label_set=self.label_set, taxonomy=self.taxonomy_json())
        arrays["nodes"] = np.asarray(self.nodes_, dtype=np.int64)
        arrays["leaves"] = np.asarray(self.leaves_, dtype=np.int64)
        return meta, arrays

    def _set_state(self, meta, arrays):
        super()._set_state(meta, arrays)
        self.loss = meta.get("loss", "height")
        self.label_set = meta.get("label_set", "observed")
        self.taxonomy = json.loads(meta["taxonomy"]) if "taxonomy" in meta else None
        self.nodes_ = arrays.get("nodes")
        self.leaves_ = arrays.get("leaves")


class LabelAugmentedTask(_TaxonomyCoding, StructuredTask):
    """Label-augmented data ``x'_y = x (x) Gamma(y)`` and one weight vector (Sec. 3.4, end).

    The weak inputs are the ``m * K`` (example, label) pairs ``z_(i, y) = x_i (x) Gamma(y)``
    (row ``i * K + y``, ``d * S`` features, block ``s`` holding ``x`` if ``y`` is under node
    ``s`` and 0 otherwise); there is one slot, and ``Psi_j(x, y) = phi_j(x'_y)``.  At
    prediction time a learner must evaluate its weak classifiers on
    :meth:`prediction_inputs` ``(X)`` instead of ``X``.  The master has one weight per weak
    learner, independent of the number of classes.  See docs/hierarchy.md for how this
    relates to :class:`HierarchyTask`: a stump on ``x'_y`` is a one-sided stump gated by a
    single node, so the model is the ancestor coding with one node per weak learner.
    """

    n_slots = 1

    def __init__(self, taxonomy=None, loss: str = "height", label_set: str = "observed"):
        self.taxonomy = taxonomy
        self.loss = loss
        self.label_set = label_set

    # -- binding -------------------------------------------------------------------------
    def _bind(self, X, y) -> None:
        self.classes_, self.y_ = self._encode(y)
        self.gamma_, self.delta_ = self._coding_and_loss()
        self.n_samples = len(self.y_)
        self.Z_ = self.prediction_inputs(X)
        K = len(self.classes_)
        self.n_outputs = K
        self._own = np.arange(self.n_samples) * K + self.y_  # row of z_(i, y_i)

    def prediction_inputs(self, X) -> np.ndarray:
        """Rows ``x_i (x) Gamma(y)`` for every example i and class y, shape (n*K, d*S)."""
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
        n, d = X.shape
        K, S = self.gamma_.shape
        Z = X[:, None, None, :] * self.gamma_[None, :, :, None]  # (n, K, S, d)
        return Z.reshape(n * K, S * d)

    def decode(self, codes):
        return self.classes_[codes]

    # -- weak learners -------------------------------------------------------------------
    def weak_inputs(self):
        return self.Z_

    def weak_weights(self, duals: DualPairs):
        K = len(self.classes_)
        A = np.zeros(len(self.Z_))
        np.add.at(A, self._own[duals.sample], duals.value)
        np.add.at(A, duals.sample * K + duals.label, -duals.value)
        return A[:, None]

    def select_columns(self, gains, threshold):
        return [(0, np.array([0]))] if gains[0] > threshold else []

    def joint_difference(self, outputs, slots, pairs):
        K = len(self.classes_)
        return outputs[:, self._own[pairs.sample]] - outputs[:, pairs.sample * K + pairs.label]

    # -- oracles -------------------------------------------------------------------------
    def slot_scores_to_label_scores(self, F):
        return np.asarray(F).reshape(-1, len(self.classes_))

    def _result(self, scores, label):
        rows = np.arange(len(scores))
        margin = scores[rows, self.y_] - scores[rows, label]
        return OracleResult(label=label, loss=self.delta_[self.y_, label], margin=margin)

    def loss_augmented(self, F):
        scores = self.slot_scores_to_label_scores(F)
        return self._result(scores, np.argmax(self.delta_[self.y_] + scores, axis=1))

    def evaluate_outputs(self, F, label):
        return self._result(self.slot_scores_to_label_scores(F), label)

    def dense_losses(self):
        return self.delta_[self.y_]

    def dense_margins(self, F):
        scores = np.ascontiguousarray(self.slot_scores_to_label_scores(F), dtype=np.float64)
        return _coded_margins(scores, self.y_, self.delta_)

    def initial_violators(self, rng):
        aug = self.delta_[self.y_]
        best = aug == aug.max(axis=1, keepdims=True)
        label = np.argmax(best * (1.0 + rng.random(best.shape)), axis=1)
        return OracleResult(
            label=label, loss=aug[np.arange(len(label)), label], margin=np.zeros(len(label))
        )

    def predict_codes(self, F):
        return np.argmax(self.slot_scores_to_label_scores(F), axis=1)

    # -- persistence ---------------------------------------------------------------------
    def _get_state(self):
        return (
            {"loss": self.loss, "label_set": self.label_set, "taxonomy": self.taxonomy_json()},
            {
                "classes": np.asarray(self.classes_),
                "gamma": self.gamma_,
                "delta": self.delta_,
                "nodes": np.asarray(self.nodes_, dtype=np.int64),
                "leaves": np.asarray(self.leaves_, dtype=np.int64),
            },
        )

    def _set_state(self, meta, arrays):
        self.loss, self.label_set = meta["loss"], meta["label_set"]
        self.taxonomy = json.loads(meta["taxonomy"])
        self.classes_, self.gamma_, self.delta_ = (
            arrays["classes"],
            arrays["gamma"],
            arrays["delta"],
        )
        self.nodes_, self.leaves_ = arrays["nodes"], arrays["leaves"]
