"""Class taxonomies (label trees) for hierarchical classification.

StructBoost (Shen et al., IEEE TPAMI 2014 [Shen2014], Sec. 3.4) codes a class ``y`` of a label
tree by its ancestors, ``Gamma(y)[z] = 1`` iff node ``z`` is ``y`` itself or an ancestor of
``y`` ([Shen2014 eqs. 19-20]), and uses a *tree loss* ``Delta(y, y')``: "the height of the first
common ancestor".  The SSVM tutorial ([Nowozin2011], after [Cai2004]) uses
half the path length between the two classes.  :class:`Taxonomy` holds the tree, checks
that it is one, and computes both losses and the coding.

Node ids.  Nodes are arbitrary hashable names; internally they get integer ids:

* leaves first, ``0 .. n_classes - 1``, in the order of ``classes`` (sorted as
  ``numpy.unique`` sorts the labels), so *class index == node id*;
* then the internal nodes by decreasing depth, ties broken by their first leaf (in class
  order), so the root is last.  Children are ordered the same way, so the ids do not
  depend on how the tree was written down.  For the tree of Fig. 2 of [Shen2014] this
  reproduces the paper's numbering (leaves 1-6, parents 7-8, root 9).

Heights.  ``height[v]`` is the length (in edges) of the longest downward path from ``v``
to a leaf; leaves have height 0 and every parent is strictly higher than its children.
The "height" loss is ``height[lca(y, y')]``; for a tree whose leaves all have the same
depth it equals ``depth(y) - depth(lca)`` and also the half-path loss.
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path

import numpy as np

__all__ = ["LOSS_KINDS", "Taxonomy"]

#: tree losses understood by :meth:`Taxonomy.loss_matrix`
LOSS_KINDS = ("height", "half_path", "zero_one")

_TREE_KEYS = ("edges", "tree", "parents")


def _fmt(items, limit: int = 10) -> str:
    items = list(items)
    text = ", ".join(repr(v) for v in items[:limit])
    return text + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _sort_labels(labels: list) -> list:
    """Sort class labels the way ``numpy.unique`` would (plain ``sorted``)."""
    try:
        return sorted(labels)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in labels})
        raise ValueError(
            f"class labels (leaves) must be mutually comparable to be sorted like "
            f"numpy.unique; got a mix of types {kinds}"
        ) from None


def _distinct(y) -> list:
    """Distinct values of ``y`` as Python objects, without coercing mixed types."""
    if isinstance(y, np.ndarray) and y.dtype.kind in "biufUS":
        return np.unique(y).tolist()
    return list(dict.fromkeys(np.asarray(y, dtype=object).ravel().tolist()))


def _parse_token(tok: str):
    """Text-form node name: an int if it looks like one, else the string."""
    try:
        return int(tok)
    except ValueError:
        return tok


class Taxonomy:
    """A rooted tree whose leaves are the class labels.

    Build it with :meth:`from_parents`, :meth:`from_dict`, :meth:`from_edges`,
    :meth:`from_json` or :meth:`from_text`; every constructor validates that the input is
    one tree (no cycles, one root, one parent per node) and raises ``ValueError`` naming
    the offending nodes otherwise.  Passing ``classes=`` additionally checks that the
    leaves are exactly those labels.

    Attributes
    ----------
    nodes : list
        Node names indexed by node id (leaves first, root last).
    classes : numpy.ndarray
        The leaf labels, sorted; ``classes[i]`` is node id ``i``.
    parent : numpy.ndarray of int
        Parent id of every node, ``-1`` for the root.
    depth : numpy.ndarray of int
        Edges from the root (root depth 0).
    height : numpy.ndarray of int
        Longest downward path to a leaf (leaves 0).
    meta : dict
        Extra fields (e.g. ``"source"``) read from / written to JSON.
    """

    def __init__(
        self,
        edges: Iterable[tuple[Hashable, Hashable]],
        *,
        nodes=(),
        classes=None,
        meta: Mapping | None = None,
    ) -> None:
        """Build from ``(parent, child)`` pairs; ``nodes`` may add isolated nodes."""
        edges = [tuple(e) for e in edges]
        parent_of: dict = {}
        order: dict = {}  # every node, in order of first appearance

        def see(v):
            try:
                order.setdefault(v, len(order))
            except TypeError:
                raise ValueError(f"node names must be hashable, got {v!r}") from None

        for v in nodes:
            see(v)
        seen_edges = set()
        for e in edges:
            if len(e) != 2:
                raise ValueError(f"an edge must be a (parent, child) pair, got {e!r}")
            p, c = e
            see(p)
            see(c)
            if p == c:
                raise ValueError(f"node {p!r} is its own parent (a cycle)")
            if (p, c) in seen_edges:
                raise ValueError(f"edge {p!r} -> {c!r} is listed twice")
            seen_edges.add((p, c))
            if c in parent_of:
                raise ValueError(
                    f"node {c!r} has two parents ({parent_of[c]!r} and {p!r}); "
                    "a taxonomy must be a tree"
                )
            parent_of[c] = p
        if not order:
            raise ValueError("empty taxonomy: no nodes given")

        roots = [v for v in order if v not in parent_of]
        if not roots:
            raise ValueError(
                "no root: every node has a parent, so the parent links contain a cycle "
                f"({_fmt(self._a_cycle(parent_of, next(iter(order))))})"
            )
        if len(roots) > 1:
            raise ValueError(
                f"taxonomy has {len(roots)} roots ({_fmt(roots)}); it must have exactly one "
                "(add a common root node)"
            )
        root = roots[0]

        children: dict = {v: [] for v in order}
        for c, p in parent_of.items():
            children[p].append(c)

        # breadth-first from the root: depths; unreachable nodes lie on a cycle
        depth_of = {root: 0}
        queue = [root]
        for v in queue:
            for c in children[v]:
                depth_of[c] = depth_of[v] + 1
                queue.append(c)
        if len(depth_of) != len(order):
            stray = next(v for v in order if v not in depth_of)
            raise ValueError(
                "the parent links contain a cycle "
                f"({_fmt(self._a_cycle(parent_of, stray))}), not reachable from root {root!r}"
            )

        leaves = _sort_labels([v for v in order if not children[v]])
        # canonical order: a node's key is its first leaf in class order
        first_leaf = {v: i for i, v in enumerate(leaves)}
        for v in reversed(queue):  # children before parents
            if children[v]:
                first_leaf[v] = min(first_leaf[c] for c in children[v])
        for v in children:
            children[v].sort(key=first_leaf.__getitem__)
        internal = [v for v in order if children[v]]
        internal.sort(key=lambda v: (-depth_of[v], first_leaf[v]))
        names = leaves + internal  # the root is last (or the only node)

        self.nodes: list = names
        self._id = {v: i for i, v in enumerate(names)}
        n = len(names)
        self.n_nodes = n
        self.n_classes = len(leaves)
        self.classes = np.array(leaves)
        if self.classes.ndim != 1:  # e.g. tuple names: keep them as objects
            self.classes = np.empty(len(leaves), dtype=object)
            self.classes[:] = leaves
        self.root = self._id[root]
        self.parent = np.array(
            [self._id[parent_of[v]] if v in parent_of else -1 for v in names], dtype=np.intp
        )
        self.depth = np.array([depth_of[v] for v in names], dtype=np.intp)
        self._children = [[self._id[c] for c in children[v]] for v in names]
        height = np.zeros(n, dtype=np.intp)
        for v in sorted(range(n), key=lambda i: -self.depth[i]):  # deepest first
            if self._children[v]:
                height[v] = 1 + max(height[c] for c in self._children[v])
        self.height = height
        self.meta = dict(meta or {})
        if classes is not None:
            self._check_classes(classes)

    # -- helpers for validation ---------------------------------------------------------
    @staticmethod
    def _a_cycle(parent_of: dict, start) -> list:
        """Follow parent links from ``start`` until a node repeats; return that loop."""
        path, pos = [], {}
        v = start
        while v not in pos:
            pos[v] = len(path)
            path.append(v)
            v = parent_of[v]
        loop = path[pos[v] :]
        return [*loop, loop[0]]

    def _check_classes(self, classes) -> None:
        classes = _distinct(classes)
        leaf_set = set(self.classes.tolist())
        internal = [c for c in classes if c in self._id and c not in leaf_set]
        if internal:
            raise ValueError(
                f"class labels {_fmt(internal)} are internal nodes of the taxonomy, not leaves"
            )
        missing = [c for c in classes if c not in self._id]
        if missing:
            raise ValueError(f"class labels {_fmt(missing)} are missing from the taxonomy")
        extra = sorted(leaf_set - set(classes), key=self._id.__getitem__)
        if extra:
            raise ValueError(f"taxonomy leaves {_fmt(extra)} are not among the given classes")

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_edges(cls, edges, *, classes=None, meta=None) -> Taxonomy:
        """From ``[(parent, child), ...]``; the leaves are the class labels."""
        return cls(edges, classes=classes, meta=meta)

    @classmethod
    def flat(cls, classes, root="root") -> Taxonomy:
        """Two-level tree ``root -> every class``: all tree losses become the 0/1 loss."""
        return cls([(root, c) for c in np.unique(np.asarray(classes)).tolist()])

    @classmethod
    def from_parents(cls, parents, labels=None, *, classes=None, meta=None) -> Taxonomy:
        """From a parent array: ``parents[i]`` is the index of node i's parent, ``-1`` for
        the root.  ``labels[i]`` names node i (default: ``i``)."""
        parents = np.asarray(parents)
        if parents.ndim != 1:
            raise ValueError(f"parents must be a 1-d array, got shape {parents.shape}")
        if parents.size == 0:
            raise ValueError("empty taxonomy: parents array is empty")
        if parents.dtype.kind not in "iu":
            if parents.dtype.kind == "f" and np.all(parents == np.round(parents)):
                parents = parents.astype(np.intp)
            else:
                raise ValueError(f"parents must hold integer indices, got dtype {parents.dtype}")
        n = parents.size
        bad = np.flatnonzero((parents < -1) | (parents >= n))
        if bad.size:
            raise ValueError(
                f"parents[{bad[0]}] = {parents[bad[0]]} is not a node index "
                f"in [0, {n}) or -1 for the root"
            )
        names = list(range(n)) if labels is None else list(labels)
        if len(names) != n:
            raise ValueError(f"labels has {len(names)} names for {n} nodes")
        if len(set(names)) != n:
            dup = [v for i, v in enumerate(names) if v in names[:i]]
            raise ValueError(f"node labels must be unique; repeated: {_fmt(dup)}")
        edges = [(names[p], names[i]) for i, p in enumerate(parents.tolist()) if p >= 0]
        return cls(edges, nodes=names, classes=classes, meta=meta)

    @classmethod
    def from_dict(cls, nested: Mapping, *, classes=None, meta=None) -> Taxonomy:
        """From a nested dict with a single top-level key, the root.

        A value is a dict ``{child: subtree}``, a list whose items are leaf labels or
        one-key dicts, or ``None`` (a leaf).  Example:
        ``{"glass": {"window": [1, 2, 3], "non_window": [5, 6, 7]}}``.
        """
        if not isinstance(nested, Mapping):
            raise ValueError(f"from_dict needs a mapping, got {type(nested).__name__}")
        if len(nested) == 0:
            raise ValueError("empty taxonomy: the dict has no root key")
        if len(nested) > 1:
            raise ValueError(
                f"taxonomy has {len(nested)} roots ({_fmt(nested)}); the nested dict must have "
                "exactly one top-level key"
            )
        edges: list = []
        nodes: list = []

        def walk(node, sub, depth):
            if depth > 10_000:
                raise ValueError("taxonomy dict is nested too deeply (self-referencing?)")
            nodes.append(node)
            if sub is None:
                return
            if isinstance(sub, Mapping):
                for child, subsub in sub.items():
                    edges.append((node, child))
                    walk(child, subsub, depth + 1)
            elif isinstance(sub, list | tuple):
                for item in sub:
                    if isinstance(item, Mapping):
                        for child, subsub in item.items():
                            edges.append((node, child))
                            walk(child, subsub, depth + 1)
                    else:
                        edges.append((node, item))
                        nodes.append(item)
            else:
                raise ValueError(
                    f"children of {node!r} must be a dict, a list or None, "
                    f"got {type(sub).__name__} {sub!r}"
                )

        ((root, sub),) = nested.items()
        walk(root, sub, 0)
        return cls(edges, nodes=nodes, classes=classes, meta=meta)

    @classmethod
    def from_json(cls, path_or_obj, *, classes=None) -> Taxonomy:
        """From a JSON file, JSON text or an already parsed object.

        The object holds exactly one of ``"edges"`` (``[[parent, child], ...]``),
        ``"tree"`` (the nested dict of :meth:`from_dict`) or ``"parents"`` (with optional
        ``"labels"``); an optional ``"classes"`` list is checked against the leaves.
        Every other key (``"name"``, ``"source"``, ...) is kept in :attr:`meta`.
        A bare nested dict (one key, not one of the above) is read as ``"tree"``.
        """
        obj = path_or_obj
        if isinstance(obj, str) and obj.lstrip().startswith(("{", "[")):
            obj = json.loads(obj)
        elif isinstance(obj, str | os.PathLike):
            with open(obj, encoding="utf-8") as fh:
                obj = json.load(fh)
        if not isinstance(obj, Mapping):
            raise ValueError(f"taxonomy JSON must be an object, got {type(obj).__name__}")
        present = [k for k in _TREE_KEYS if k in obj]
        if not present:
            if len(obj) == 1:
                return cls.from_dict(obj, classes=classes)
            raise ValueError(f"taxonomy JSON needs one of the keys {list(_TREE_KEYS)}")
        if len(present) > 1:
            raise ValueError(f"taxonomy JSON has {present}; give only one tree description")
        meta = {k: v for k, v in obj.items() if k not in (*_TREE_KEYS, "labels", "classes")}
        if classes is None:
            classes = obj.get("classes")
        kind = present[0]
        if kind == "edges":
            return cls.from_edges(obj["edges"], classes=classes, meta=meta)
        if kind == "tree":
            return cls.from_dict(obj["tree"], classes=classes, meta=meta)
        return cls.from_parents(obj["parents"], obj.get("labels"), classes=classes, meta=meta)

    @classmethod
    def from_text(cls, text_or_path, *, classes=None) -> Taxonomy:
        """From text with one ``parent child`` edge per line (``#`` starts a comment).

        Names that parse as integers become ``int`` (so they match numeric data labels),
        everything else stays a string.  Accepts the text itself or a file path.
        """
        text = text_or_path
        if isinstance(text, os.PathLike) or (
            isinstance(text, str) and "\n" not in text and Path(text).is_file()
        ):
            text = Path(text).read_text(encoding="utf-8")
        edges = []
        for lineno, line in enumerate(str(text).splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f"line {lineno}: expected 'parent child', got {line!r}")
            edges.append((_parse_token(parts[0]), _parse_token(parts[1])))
        return cls.from_edges(edges, classes=classes)

    # -- export -------------------------------------------------------------------------
    def edges(self) -> list[tuple]:
        """``(parent, child)`` name pairs, depth first from the root (preorder)."""
        out, stack = [], [self.root]
        while stack:
            v = stack.pop()
            stack.extend(reversed(self._children[v]))
            if self.parent[v] >= 0:
                out.append((self.nodes[self.parent[v]], self.nodes[v]))
        return out

    def to_dict(self) -> dict:
        """Nested dict (inverse of :meth:`from_dict`); leaves are listed in lists."""

        def sub(v):
            kids = self._children[v]
            if not kids:
                return None
            if all(not self._children[c] for c in kids):
                return [self.nodes[c] for c in kids]
            return {self.nodes[c]: sub(c) for c in kids}

        return {self.nodes[self.root]: sub(self.root)}

    def to_json(self, path=None, **meta) -> str:
        """JSON text ``{..meta.., "classes": [...], "edges": [[parent, child], ...]}``.

        The edge form round-trips node names of any JSON type exactly (a nested dict would
        turn integer internal-node names into strings).  Writes to ``path`` if given.
        """

        def plain(v):
            return v.item() if isinstance(v, np.generic) else v

        fields = {**self.meta, **meta}
        fields.pop("edges", None)
        fields["classes"] = [plain(v) for v in self.classes.tolist()]
        lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in fields.items()]
        edges = ",\n  ".join(json.dumps([plain(p), plain(c)]) for p, c in self.edges())
        text = "{\n" + "\n".join(lines) + f'\n "edges": [\n  {edges}\n ]\n}}'
        if path is not None:
            from maxmargin.io import atomic_write_text

            atomic_write_text(path, text + "\n")
        return text

    def to_text(self) -> str:
        """One ``parent child`` line per edge (names must not contain spaces)."""
        return "".join(f"{p} {c}\n" for p, c in self.edges())

    # -- lookups ------------------------------------------------------------------------
    def node_id(self, name) -> int:
        """Integer id of a node name."""
        try:
            return self._id[name]
        except (KeyError, TypeError):
            raise ValueError(f"{name!r} is not a node of the taxonomy") from None

    def children(self, node: int) -> np.ndarray:
        """Ids of the children of node id ``node``."""
        return np.array(self._children[node], dtype=np.intp)

    def ancestors(self, node: int, include_self: bool = True) -> np.ndarray:
        """Ids on the path from node id ``node`` up to the root (the node first)."""
        path = []
        v = int(node) if include_self else int(self.parent[node])
        while v >= 0:
            path.append(v)
            v = int(self.parent[v])
        return np.array(path, dtype=np.intp)

    def check_labels(self, y) -> None:
        """Raise ``ValueError`` naming the labels in ``y`` that are not leaves."""
        values = _distinct(y)
        leaf_set = set(self.classes.tolist())
        internal = [v for v in values if v in self._id and v not in leaf_set]
        missing = [v for v in values if v not in self._id]
        problems = []
        if missing:
            problems.append(f"labels {_fmt(missing)} are missing from the taxonomy")
        if internal:
            problems.append(f"labels {_fmt(internal)} are internal nodes, not leaves")
        if problems:
            raise ValueError("; ".join(problems) + f" (leaves: {_fmt(self.classes.tolist())})")

    def index(self, y) -> np.ndarray:
        """Class indices (= leaf node ids) of the labels ``y``; checks them first."""
        self.check_labels(y)
        values, inverse = np.unique(np.asarray(y), return_inverse=True)
        ids = np.array([self._id[v] for v in values.tolist()], dtype=np.intp)
        return ids[inverse.reshape(np.shape(y))]

    # -- tree arithmetic (vectorised over node ids) ------------------------------------
    def lca(self, a, b) -> np.ndarray:
        """Lowest common ancestor of node ids ``a`` and ``b`` (broadcast arrays).

        Lifts the deeper node to the other's depth, then both together: at most
        ``max(depth)`` vectorised steps.
        """
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.intp), np.asarray(b, dtype=np.intp))
        a, b = a.copy(), b.copy()
        for _ in range(int(self.depth.max()) if self.n_nodes else 0):
            da, db = self.depth[a], self.depth[b]
            up_a = (da > db) | ((da == db) & (a != b))
            up_b = (db > da) | ((da == db) & (a != b))
            if not (up_a.any() or up_b.any()):
                break
            a = np.where(up_a, self.parent[a], a)
            b = np.where(up_b, self.parent[b], b)
        return a

    def distance(self, a, b) -> np.ndarray:
        """Number of edges on the path between node ids ``a`` and ``b``."""
        c = self.lca(a, b)
        return self.depth[np.asarray(a)] + self.depth[np.asarray(b)] - 2 * self.depth[c]

    def common_ancestors(self, a, b) -> np.ndarray:
        """``Gamma(a) . Gamma(b)``: nodes that are ancestors-or-self of both (incl. root)."""
        return self.depth[self.lca(a, b)] + 1

    def loss(self, a, b, kind: str = "height") -> np.ndarray:
        """Tree loss between class indices ``a`` (true) and ``b`` (predicted).

        ``"height"``: height of the lowest common ancestor ([Shen2014], Sec. 3.4).
        ``"half_path"``: half the number of edges between them ([Nowozin2011]; [Cai2004]).
        ``"zero_one"``: 1 if they differ.  All are 0 iff ``a == b`` and symmetric.
        """
        a, b = np.asarray(a, dtype=np.intp), np.asarray(b, dtype=np.intp)
        if kind == "height":
            return self.height[self.lca(a, b)].astype(np.float64)
        if kind == "half_path":
            return self.distance(a, b) / 2.0
        if kind == "zero_one":
            return (a != b).astype(np.float64)
        raise ValueError(f"unknown tree loss {kind!r}; choose one of {LOSS_KINDS}")

    def loss_matrix(self, kind: str = "height") -> np.ndarray:
        """(n_classes, n_classes) matrix ``Delta[y, y']`` in class order."""
        k = np.arange(self.n_classes)
        return self.loss(k[:, None], k[None, :], kind)

    def ancestor_matrix(self) -> np.ndarray:
        """(n_nodes, n_nodes) 0/1 matrix, ``A[v, z] = 1`` iff z is v or an ancestor of v."""
        A = np.zeros((self.n_nodes, self.n_nodes), dtype=np.float64)
        v = np.arange(self.n_nodes)
        cur = v.copy()
        alive = np.ones(self.n_nodes, dtype=bool)
        while alive.any():
            A[v[alive], cur[alive]] = 1.0
            cur = np.where(alive, self.parent[cur], cur)
            alive &= cur >= 0
        return A

    def coding(self, drop_root: bool = False) -> np.ndarray:
        """Ancestor coding ``Gamma``, shape (n_classes, n_nodes) ([Shen2014 eqs. 19-20]).

        Row y has ones at leaf y, its ancestors and the root, so ``Gamma @ Gamma.T``
        counts common ancestors and ``|Gamma(y) - Gamma(y')|^2 = distance(y, y')``.  The
        root column (last) is all ones: it adds nothing to ``Gamma(y_i) - Gamma(y)`` and
        is kept only for fidelity with the paper; ``drop_root=True`` removes it.
        """
        G = self.ancestor_matrix()[: self.n_classes]
        if drop_root:
            G = np.delete(G, self.root, axis=1)
        return G

    # -- misc ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n_nodes

    def __repr__(self) -> str:
        name = f" {self.meta['name']!r}" if "name" in self.meta else ""
        return (
            f"Taxonomy{name}(n_classes={self.n_classes}, n_nodes={self.n_nodes}, "
            f"depth={int(self.depth.max())}, root={self.nodes[self.root]!r})"
        )

    def __eq__(self, other) -> bool:
        if not isinstance(other, Taxonomy):
            return NotImplemented
        return self.nodes == other.nodes and np.array_equal(self.parent, other.parent)

    __hash__ = None  # mutable attributes; equality is structural
