"""Taxonomy: tree losses and ancestor coding (StructBoost Sec. 3.4) + validation errors."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maxmargin.tasks.taxonomy import LOSS_KINDS, Taxonomy

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "taxonomies"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "multiclass"

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def random_trees(draw):
    """A random tree as (parent array, node names): node i > 0 hangs below some j < i."""
    n = draw(st.integers(2, 18))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    if draw(st.booleans()):
        names = draw(st.permutations([10 * k + 3 for k in range(n)]))
    else:
        names = [f"n{k}" for k in draw(st.permutations(range(n)))]
    return parents, list(names)


def brute_ancestors(parents, names):
    """name -> set of ancestor-or-self names, by walking the parent array."""
    out = {}
    for i in range(len(parents)):
        s, v = set(), i
        while v >= 0:
            s.add(names[v])
            v = parents[v]
        out[names[i]] = s
    return out


# -- properties on random trees ----------------------------------------------------------
@SETTINGS
@given(random_trees())
def test_structure_and_ids(tree):
    parents, names = tree
    t = Taxonomy.from_parents(parents, names)
    leaves = [names[i] for i in range(len(parents)) if i not in parents]
    assert t.classes.tolist() == np.unique(np.array(leaves)).tolist()
    assert t.n_nodes == len(parents) and t.n_classes == len(leaves)
    assert t.nodes[: t.n_classes] == t.classes.tolist()  # class index == node id
    assert t.root == t.n_nodes - 1 and t.depth[t.root] == 0 and t.parent[t.root] == -1
    anc = brute_ancestors(parents, names)
    for v in range(t.n_nodes):
        got = {t.nodes[a] for a in t.ancestors(v)}
        assert got == anc[t.nodes[v]]
        assert t.depth[v] == len(got) - 1
        assert t.ancestors(v)[-1] == t.root
        if v != t.root:
            assert t.height[t.parent[v]] >= t.height[v] + 1
    assert np.all(t.height[: t.n_classes] == 0)


@SETTINGS
@given(random_trees())
def test_coding_counts_common_ancestors(tree):
    parents, names = tree
    t = Taxonomy.from_parents(parents, names)
    G = t.coding()
    assert G.shape == (t.n_classes, t.n_nodes)
    assert set(np.unique(G)) <= {0.0, 1.0}
    assert np.all(G[:, t.root] == 1)  # root column constant
    assert np.array_equal(G[:, : t.n_classes], np.eye(t.n_classes))  # leaf y codes itself
    anc = brute_ancestors(parents, names)
    gram = G @ G.T
    k = np.arange(t.n_classes)
    common = t.common_ancestors(k[:, None], k[None, :])
    for i, j in itertools.product(range(t.n_classes), repeat=2):
        expect = len(anc[t.classes[i].item()] & anc[t.classes[j].item()])
        assert gram[i, j] == expect == common[i, j]
    # half the path length is half the squared coding distance
    sq = ((G[:, None, :] - G[None, :, :]) ** 2).sum(-1)
    assert np.allclose(t.loss_matrix("half_path"), sq / 2)
    G0 = t.coding(drop_root=True)
    assert G0.shape == (t.n_classes, t.n_nodes - 1)
    assert np.allclose(G0 @ G0.T, gram - 1)


@SETTINGS
@given(random_trees())
def test_tree_losses(tree):
    parents, names = tree
    t = Taxonomy.from_parents(parents, names)
    K = t.n_classes
    off = ~np.eye(K, dtype=bool)
    for kind in LOSS_KINDS:
        D = t.loss_matrix(kind)
        assert D.shape == (K, K)
        assert np.all(np.diag(D) == 0)  # Delta(y, y) = 0
        assert np.array_equal(D, D.T)  # symmetric
        assert np.all(D[off] > 0)  # and positive otherwise
    H, P = t.loss_matrix("height"), t.loss_matrix("half_path")
    assert np.array_equal(t.loss_matrix("zero_one"), off.astype(float))
    # the height loss is the height of the lca (checked by brute force) ...
    anc = brute_ancestors(parents, names)
    for i, j in itertools.product(range(K), repeat=2):
        common = anc[t.classes[i].item()] & anc[t.classes[j].item()]
        lowest = max(common, key=lambda v: t.depth[t.node_id(v)])
        assert t.lca(i, j) == t.node_id(lowest)
        assert H[i, j] == t.height[t.node_id(lowest)]
    # ... an ultrametric, at least the half-path loss, equal to it on level trees
    for a, b, c in itertools.product(range(K), repeat=3):
        assert H[a, c] <= max(H[a, b], H[b, c])
        assert P[a, c] <= P[a, b] + P[b, c]
    assert np.all(H >= P)
    if len(set(t.depth[:K].tolist())) == 1:
        assert np.array_equal(H, P)


@SETTINGS
@given(random_trees())
def test_round_trips_and_vectorised_lca(tree):
    parents, names = tree
    t = Taxonomy.from_parents(parents, names)
    others = [
        Taxonomy.from_edges(t.edges()),
        Taxonomy.from_json(t.to_json()),
        Taxonomy.from_json(json.loads(t.to_json())),
        Taxonomy.from_text(t.to_text()),
    ]
    if all(isinstance(v, str) for v in names):  # dict keys survive only as given
        others.append(Taxonomy.from_dict(t.to_dict()))
    for u in others:
        assert u == t
        assert u.classes.tolist() == t.classes.tolist()
        for kind in LOSS_KINDS:
            assert np.array_equal(u.loss_matrix(kind), t.loss_matrix(kind))
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, t.n_nodes, size=(2, 50))
    lca = t.lca(a, b)
    assert lca.shape == (50,)
    for x, y, z in zip(a, b, lca, strict=True):
        common = set(t.ancestors(x)) & set(t.ancestors(y))
        assert z == max(common, key=lambda v: t.depth[v])


# -- worked examples ---------------------------------------------------------------------
def test_fig2_of_structboost():
    """Seed 000, Fig. 2: leaves 1-6, parents 7 = {1,2,3}, 8 = {4,5,6}, root 9."""
    t = Taxonomy.from_dict({9: {7: [1, 2, 3], 8: [4, 5, 6]}})
    assert t.nodes == list(range(1, 10))
    assert t.coding()[2].tolist() == [0, 0, 1, 0, 0, 0, 1, 0, 1]  # Gamma(3)
    H = t.loss_matrix("height")
    assert H[0, 2] == 1 and H[0, 3] == 2
    assert np.array_equal(H, t.loss_matrix("half_path"))


def test_lecture_example_half_path():
    """Seed 004: Delta(cat, dog) = 1, Delta(cat, bus) = 2 in a two-level tree."""
    t = Taxonomy.from_dict({"root": {"animal": ["cat", "dog"], "vehicle": ["bus", "car"]}})
    cat, dog, bus = t.index(["cat", "dog", "bus"])
    assert t.loss(cat, dog, "half_path") == 1 and t.loss(cat, bus, "half_path") == 2


def test_unbalanced_height_vs_half_path():
    t = Taxonomy.from_dict({"r": {"a": {"b": [1, 2]}, 3: None}})
    i1, i2, ic = t.index([1, 2, 3])
    assert t.loss(i1, i2, "height") == 1
    assert t.loss(i1, ic, "height") == 3  # height of the root
    assert t.loss(i1, ic, "half_path") == 2  # (3 + 1) / 2


def test_index_and_flat():
    t = Taxonomy.flat([3, 1, 2])
    assert t.classes.tolist() == [1, 2, 3]
    assert np.array_equal(t.loss_matrix("height"), 1 - np.eye(3))
    y = np.array([3.0, 1.0, 3.0, 2.0])  # float labels as sklearn's svmlight loader gives
    assert t.index(y).tolist() == [2, 0, 2, 1]


def test_text_form(tmp_path):
    text = "# glass\nglass window\nglass non_window  # comment\nwindow 1\nwindow 2\n\n"
    text += "non_window 5\n"
    t = Taxonomy.from_text(text)
    assert t.classes.tolist() == [1, 2, 5]
    p = tmp_path / "tax.txt"
    p.write_text(text)
    assert Taxonomy.from_text(p) == t
    q = tmp_path / "tax.json"
    t.to_json(q, source="test")
    u = Taxonomy.from_json(q)
    assert u == t and u.meta == {"source": "test"}


# -- malformed taxonomies ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Taxonomy.from_edges([("a", "b"), ("b", "a")]), "cycle"),
        (lambda: Taxonomy.from_edges([("r", "a"), ("a", "a")]), "cycle"),
        (lambda: Taxonomy.from_edges([("r", 1), ("x", "y"), ("y", "x")]), r"cycle.*'x'"),
        (lambda: Taxonomy.from_parents([1, 0]), "cycle"),
        (lambda: Taxonomy.from_parents([-1, 2, 1]), "cycle"),
        (lambda: Taxonomy.from_edges([("r", 1), ("s", 2)]), r"2 roots \('r', 's'\)"),
        (lambda: Taxonomy.from_parents([-1, -1, 0]), "2 roots"),
        (lambda: Taxonomy.from_dict({"r": [1], "s": [2]}), "2 roots"),
        (
            lambda: Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", 1), ("b", 1)]),
            "node 1 has two parents",
        ),
        (lambda: Taxonomy.from_dict({"r": {"a": [1, 2], "b": [2, 3]}}), "two parents"),
        (lambda: Taxonomy.from_edges([("r", 1), ("r", 1)]), "listed twice"),
        (lambda: Taxonomy.from_edges([]), "empty"),
        (lambda: Taxonomy.from_parents([]), "empty"),
        (lambda: Taxonomy.from_dict({}), "empty"),
        (lambda: Taxonomy.from_parents([-1, 5]), "not a node index"),
        (lambda: Taxonomy.from_parents([-1, 0], labels=["a", "a"]), "unique"),
        (lambda: Taxonomy.from_edges([("r", 1), ("r", "x")]), "mutually comparable"),
        (lambda: Taxonomy.from_dict({"r": {"a": 3}}), "must be a dict, a list or None"),
        (lambda: Taxonomy.from_text("r a b\n"), "line 1"),
        (lambda: Taxonomy.from_json({"edges": [], "tree": {}}), "only one"),
        (lambda: Taxonomy.from_json({"name": "x", "source": "y"}), "needs one of"),
        (lambda: Taxonomy.from_dict({"r": [1, 2]}, classes=[1, 2, 4]), r"labels 4 are missing"),
        (lambda: Taxonomy.from_dict({"r": {"a": [1, 2]}}, classes=[1, 2, "a"]), "internal"),
        (lambda: Taxonomy.from_dict({"r": [1, 2, 3]}, classes=[1, 2]), "3 are not among"),
    ],
)
def test_malformed(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_check_labels_names_problems():
    t = Taxonomy.from_dict({"glass": {"window": [1, 2, 3], "non_window": [5, 6, 7]}})
    t.check_labels([1, 2, 7, 7.0])
    with pytest.raises(ValueError, match=r"labels 4, 8 are missing"):
        t.check_labels(np.array([1, 4, 8, 2]))
    with pytest.raises(ValueError, match="'window' are internal nodes"):
        Taxonomy.from_dict({"r": {"window": ["a", "b"]}}).check_labels(["a", "window"])
    with pytest.raises(ValueError, match="missing"):
        t.index([1, 4])
    with pytest.raises(ValueError, match="unknown tree loss"):
        t.loss_matrix("depth")


# -- the benchmark taxonomies -------------------------------------------------------------
BENCH_FILES = sorted(BENCH.glob("*.json"))
DATA_FILES = {
    "glass": ["glass/glass.scale"],
    "glass_float": ["glass/glass.scale"],
    "satimage": ["satimage/satimage.scale", "satimage/satimage.scale.t"],
    "segment": ["segment/segment.scale"],
}


@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.stem)
def test_benchmark_taxonomies(path):
    obj = json.loads(path.read_text())
    assert obj.get("source"), f"{path.name} must cite its source"
    t = Taxonomy.from_json(path)  # validates leaves == "classes"
    assert sorted(int(k) for k in obj["class_names"]) == t.classes.tolist()
    for rel in DATA_FILES.get(path.stem, []):
        f = DATA / rel
        if not f.exists():
            pytest.skip(f"{f} not available")
        y = np.array(
            [float(line.split(None, 1)[0]) for line in f.read_text().splitlines() if line.strip()]
        )
        t.check_labels(y)
        assert np.unique(y).tolist() == t.classes.tolist()
