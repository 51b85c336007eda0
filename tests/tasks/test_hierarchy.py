"""HierarchyTask / LabelAugmentedTask: oracles against brute force, flat = multi-class,
fit and save/load round trips, error messages (StructBoost Sec. 3.4, seed 000)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maxmargin.learners.structboost import StructBoost
from maxmargin.tasks.classification import MultiClassTask
from maxmargin.tasks.hierarchy import HierarchyTask, LabelAugmentedTask, as_taxonomy
from maxmargin.tasks.taxonomy import Taxonomy

GLASS = {"glass": {"window": [1, 2, 3], "non_window": [5, 6, 7]}}
GLASS_FLOAT = {"glass": {"window": {"float": [1, 3], "non_float": [2]}, "non_window": [5, 6, 7]}}


@st.composite
def trees(draw):
    """Random rooted trees with >= 2 leaves: node i > 0 hangs below a node < i."""
    n = draw(st.integers(3, 12))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    if sum(1 for i in range(n) if i not in parents) < 2:
        parents = [-1] + [0] * (n - 1)
    return Taxonomy.from_parents(parents)


def brute_force(tax, task, G, y_idx, kind):
    """max_y Delta(y_i, y) + sum_{z anc y} G[i, z] - sum_{z anc y_i} G[i, z], by loops."""
    leaves = task.leaves_
    best = np.empty(len(y_idx))
    for i, yi in enumerate(y_idx):
        own = G[i, tax.ancestors(yi)].sum()
        best[i] = max(
            float(tax.loss(yi, v, kind)) + G[i, tax.ancestors(v)].sum() - own for v in leaves
        )
    return best


@settings(max_examples=40, deadline=None)
@given(
    tree=trees(),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(["height", "half_path", "zero_one"]),
    label_set=st.sampled_from(["observed", "all"]),
)
def test_loss_augmented_equals_brute_force(tree, seed, kind, label_set):
    rng = np.random.default_rng(seed)
    n = 15
    y_idx = rng.integers(0, tree.n_classes, n)
    y_idx[:2] = [0, tree.n_classes - 1]  # at least two classes observed
    y = tree.classes[y_idx]
    task = HierarchyTask(tree, loss=kind, label_set=label_set).bind(np.zeros((n, 1)), y)
    G = rng.normal(size=(n, tree.n_nodes))  # a score for every node, dropped ones too
    if rng.random() < 0.3:
        G = np.round(G)  # ties
    res = task.loss_augmented(G[:, task.nodes_])
    want = brute_force(tree, task, G, y_idx, kind)
    np.testing.assert_allclose(res.loss - res.margin, want, atol=1e-9)
    # the chosen label attains the maximum and is a class of the output space
    assert set(task.classes_[res.label].tolist()) <= set(task.classes_.tolist())
    # label-augmented task: pair scores are the class scores
    aug = LabelAugmentedTask(tree, loss=kind, label_set=label_set).bind(np.zeros((n, 1)), y)
    pair_scores = np.stack([G[i, tree.ancestors(v)].sum() for i in range(n) for v in aug.leaves_])
    res2 = aug.loss_augmented(pair_scores[:, None])
    np.testing.assert_allclose(res2.loss - res2.margin, want, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(tree=trees())
def test_coding_and_loss_restricted_to_observed_classes(tree):
    y = tree.classes[[0, tree.n_classes - 1, 0]]
    task = HierarchyTask(tree, loss="half_path").bind(np.zeros((3, 1)), y)
    K = len(task.classes_)
    assert K == 2 and task.gamma_.shape == (K, len(task.nodes_))
    # kept columns are not constant; |Gamma(a) - Gamma(b)|^2 is still the tree distance
    assert np.all(task.gamma_.min(0) != task.gamma_.max(0))
    d = ((task.gamma_[0] - task.gamma_[1]) ** 2).sum()
    assert d == tree.distance(task.leaves_[0], task.leaves_[1])
    np.testing.assert_allclose(task.delta_[0, 1], d / 2)
    full = HierarchyTask(tree, label_set="all").bind(np.zeros((3, 1)), y)
    assert len(full.classes_) == tree.n_classes


def _data(seed=0, n=90, K=4):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n) + 1
    X = rng.normal(size=(n, 5)) + y[:, None] * np.array([1.0, -0.5, 0, 0, 0.3])
    return X, y


def test_flat_taxonomy_is_multiclass():
    X, y = _data()
    flat = Taxonomy.flat(y)
    kw = dict(C=50.0, max_iter=15, random_state=0)
    a = StructBoost(task=HierarchyTask(flat), **kw).fit(X, y)
    b = StructBoost(task=MultiClassTask(), **kw).fit(X, y)
    np.testing.assert_array_equal(a.task_.gamma_, np.eye(4))
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_hierarchy_fit_and_state_round_trip():
    X, y = _data(1, K=4)
    tax = Taxonomy.from_dict({"r": {"a": [1, 2], "b": [3, 4]}})
    est = StructBoost(task=HierarchyTask(tax), C=50.0, max_iter=20, random_state=0).fit(X, y)
    assert np.mean(est.predict(X) == y) > 0.6
    meta, arrays = est.task_._get_state()
    json.dumps(meta)  # JSON-serialisable
    task = HierarchyTask.__new__(HierarchyTask)
    task._set_state(meta, arrays)
    F = est._slot_scores(X)
    np.testing.assert_array_equal(task.decode(task.predict_codes(F)), est.predict(X))
    assert as_taxonomy(task.taxonomy) == tax


def test_structboost_save_load(tmp_path):
    from maxmargin.io import load, save

    X, y = _data(2, K=4)
    tax = Taxonomy.from_dict({"r": {"a": [1, 2], "b": [3, 4]}})
    for task in (HierarchyTask(tax, loss="half_path"), LabelAugmentedTask(tax)):
        est = StructBoost(task=task, C=50.0, max_iter=15, random_state=0).fit(X, y)
        save(est, tmp_path / "m.npz")
        back = load(tmp_path / "m.npz")
        np.testing.assert_array_equal(back.predict(X), est.predict(X))
        np.testing.assert_allclose(back.decision_function(X), est.decision_function(X))


@pytest.mark.parametrize("spec", ["object", "dict", "json", "text"])
def test_classifier_taxonomy_parameter(tmp_path, spec):
    from maxmargin.io import load, save
    from maxmargin.learners.structboost import StructBoostClassifier

    X, y = _data(3, K=4)
    tax = Taxonomy.from_dict({"r": {"a": [1, 2], "b": [3, 4]}})
    arg = {"object": tax, "dict": json.loads(tax.to_json())}.get(spec)
    if spec == "json":
        arg = tmp_path / "t.json"
        tax.to_json(arg)
    elif spec == "text":
        arg = tmp_path / "t.txt"
        arg.write_text(tax.to_text())
    clf = StructBoostClassifier(
        taxonomy=arg, tree_loss="height", C=50.0, max_iter=15, random_state=0
    ).fit(X, y)
    assert type(clf.task_).__name__ == "HierarchyTask"
    np.testing.assert_array_equal(clf.classes_, [1, 2, 3, 4])
    save(clf, tmp_path / "c.npz")
    back = load(tmp_path / "c.npz")
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    assert as_taxonomy(back.taxonomy) == tax


def test_label_augmented_stump_is_gated_one_sided_stump():
    """A stump on x'_y = x (x) Gamma(y) splitting block s, feature j at t with polarity p
    gives dpsi = (Gamma_s(y_i) - Gamma_s(y)) * p * (sign(x_j - t) - sign(0 - t))."""
    X, y = _data(4, n=30, K=4)
    tax = Taxonomy.from_dict(GLASS_FLOAT)
    y = np.array([1, 2, 3, 5, 6, 7])[y % 6]
    task = LabelAugmentedTask(tax).bind(X, y)
    from maxmargin.weak.stump import Stumps

    S, d = task.gamma_.shape[1], X.shape[1]
    rng = np.random.default_rng(0)
    s, j = rng.integers(0, S, 8), rng.integers(0, d, 8)
    t, p = rng.normal(size=8), rng.choice([-1.0, 1.0], 8)
    hyps = Stumps(s * d + j, t, p, S * d)
    K = len(task.classes_)
    pairs_i = np.repeat(np.arange(len(y)), K)
    pairs_y = np.tile(np.arange(K), len(y))
    from maxmargin.tasks.base import DualPairs

    pairs = DualPairs(pairs_i, pairs_y, np.ones(len(pairs_i)))
    got = task.joint_difference(hyps.evaluate(task.weak_inputs()), np.zeros(8), pairs)
    gate = task.gamma_[task.y_[pairs_i]][:, s] - task.gamma_[pairs_y][:, s]  # (n_pairs, 8)
    h = p * (np.where(X[pairs_i][:, j] > t, 1.0, -1.0) - np.where(0.0 > t, 1.0, -1.0))
    np.testing.assert_allclose(got, (gate * h).T)


def test_errors():
    tax = Taxonomy.from_dict(GLASS)
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match=r"4.*missing from the taxonomy"):
        HierarchyTask(tax).bind(X, [1, 2, 4, 5])
    with pytest.raises(ValueError, match="internal nodes"):
        HierarchyTask(Taxonomy.from_dict({"r": {"a": ["x", "y"], "b": ["z", "w"]}})).bind(
            X, ["x", "a", "z", "w"]
        )
    with pytest.raises(ValueError, match="loss must be one of"):
        HierarchyTask(tax, loss="depth").bind(X, [1, 2, 5, 6])
    with pytest.raises(ValueError, match="label_set"):
        HierarchyTask(tax, label_set="some").bind(X, [1, 2, 5, 6])
    with pytest.raises(ValueError, match="at least 2 classes"):
        HierarchyTask(tax).bind(X, [1, 1, 1, 1])
    with pytest.raises(ValueError, match="cannot read taxonomy file"):
        as_taxonomy("/nonexistent/tax.json")
    with pytest.raises(ValueError, match="taxonomy must be"):
        as_taxonomy(3.5)
    with pytest.raises(ValueError, match="cycle"):
        as_taxonomy({"edges": [["a", "b"], ["b", "a"], ["r", "c"]]})


def test_linear_ssvm_with_hierarchy_task():
    """The linear form F = X @ W: StructSVM takes a HierarchyTask unchanged."""
    from maxmargin.learners import ssvm

    X, y = _data(5, K=4)
    X = np.hstack([X, np.ones((len(X), 1))])
    kw = dict(C=100.0, solver="1-slack", max_iter=200)
    a = ssvm.StructSVM(task=HierarchyTask(Taxonomy.flat(y)), **kw).fit(X, y)
    b = ssvm.StructSVM(task=MultiClassTask(), **kw).fit(X, y)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-3)
    tax = Taxonomy.from_dict({"r": {"a": [1, 2], "b": [3, 4]}})
    c = ssvm.StructSVM(task=HierarchyTask(tax), **kw).fit(X, y)
    assert c.coef_.shape == (X.shape[1] * len(c.task_.nodes_),)
    assert np.mean(c.predict(X) == y) > 0.4  # chance is 0.25


def test_cli_fit_and_evaluate_with_taxonomy(tmp_path, capsys):
    from maxmargin import cli

    X, y = _data(6, K=4)
    data = tmp_path / "d.svm"
    data.write_text(
        "".join(
            f"{c} " + " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(x)) + "\n"
            for x, c in zip(X, y, strict=True)
        )
    )
    tax = tmp_path / "t.txt"
    tax.write_text("r a\nr b\na 1\na 2\nb 3\nb 4\n")
    model = tmp_path / "m.npz"
    assert (
        cli.main(
            [
                "fit",
                str(data),
                "-o",
                str(model),
                "--taxonomy",
                str(tax),
                "--max-iter",
                "10",
                "--formulation",
                "m-slack",
                "--quiet",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert cli.main(["evaluate", str(model), str(data), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tree_loss"]["kind"] == "height"
    assert 0 <= report["tree_loss"]["mean"] <= 2 * report["error_rate"] + 1e-12


def test_ssvm_classifier_with_taxonomy_round_trip(tmp_path):
    """SSVMClassifier(taxonomy=...): tree-loss SSVM (seed 004), saved and loaded."""
    import maxmargin
    from maxmargin import SSVMClassifier

    X, y = _data(7, K=4)
    tax = {"r": {"a": [1, 2], "b": [3, 4]}}
    clf = SSVMClassifier(C=100.0, taxonomy=tax, tree_loss="half_path").fit(X, y)
    assert type(clf.task_).__name__ == "HierarchyTask"
    assert np.mean(clf.predict(X) == y) > 0.4  # chance is 0.25
    maxmargin.save(clf, tmp_path / "m.npz")
    again = maxmargin.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(again.predict(X), clf.predict(X))
    with pytest.raises(ValueError, match="tree_loss"):
        SSVMClassifier(taxonomy=tax, tree_loss="depth").fit(X, y)
