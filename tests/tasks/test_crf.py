import itertools
import warnings

import numpy as np
import pytest

from data_makers import brute_force_crf_hinges, make_graphs
from maxmargin import StructBoost
from maxmargin.tasks.crf import CRFGraph, CRFTask
from maxmargin.weak.nonneg import NonNegative


def explicit_energy(graph, H_u, H_v, w_u, w_v, y):
    """E from the definition (eq. 22) with weak outputs given per row."""
    n = len(y)
    e = float(w_u @ H_u[:, 2 * np.arange(n) + y].sum(axis=1))
    cut = y[graph.edges[:, 0]] != y[graph.edges[:, 1]]
    return e + float(w_v @ H_v[:, cut].sum(axis=1))


def test_w_psi_is_minus_energy():
    rng = np.random.default_rng(0)
    X, Y = make_graphs(rng, 1)
    task = CRFTask().bind(X, Y)
    n, nE = len(Y[0]), len(X[0].edges)
    H = rng.random((5, 2 * n + nE))  # non-negative weak outputs on every row
    slots = np.array([0, 0, 1, 1, 0])
    w = rng.random(5)
    W = np.zeros((5, 2))
    W[np.arange(5), slots] = w
    F = H.T @ W
    Eu, Ep = task.energies(F)
    for _ in range(10):
        y = rng.integers(0, 2, n)
        E_task = float(task._energy_of(Eu, Ep, y)[0])
        E_def = explicit_energy(
            X[0],
            H[slots == 0][:, : 2 * n],
            H[slots == 1][:, 2 * n :],
            w[slots == 0],
            w[slots == 1],
            y,
        )
        assert E_task == pytest.approx(E_def)
        # Psi_j = -(sum of the column's weak outputs on the labelling's rows): w.Psi = -E
        psi = -np.concatenate(
            [
                H[slots == 0][:, 2 * np.arange(n) + y].sum(axis=1),
                H[slots == 1][:, 2 * n :][:, y[X[0].edges[:, 0]] != y[X[0].edges[:, 1]]].sum(
                    axis=1
                ),
            ]
        )
        wv = np.concatenate([w[slots == 0], w[slots == 1]])
        assert float(wv @ psi) == pytest.approx(-E_task)


def brute_force_oracle(task, F, img):
    st = task.st_
    a, b = st.node_off[img], st.node_off[img + 1]
    Eu, Ep = task.energies(F)
    best = -np.inf
    y_true = task.y_.copy()
    for ys in itertools.product((0, 1), repeat=b - a):
        lab = y_true.copy()
        lab[a:b] = ys
        r = task._result(Eu, Ep, lab)
        best = max(best, r.loss[img] - r.margin[img])
    return best


@pytest.mark.parametrize("loss", ["hamming", "area"])
@pytest.mark.parametrize("seed", range(3))
def test_oracle_equals_enumeration(loss, seed):
    rng = np.random.default_rng(seed)
    X, Y = make_graphs(rng, 2, h=3, w=3)
    task = CRFTask(loss=loss).bind(X, Y)
    F = rng.normal(size=(len(task.weak_inputs()), 2))
    F[:, 1] = np.abs(F[:, 1])
    orc = task.most_violated(F)
    for i in range(2):
        assert orc.loss[i] - orc.margin[i] == pytest.approx(brute_force_oracle(task, F, i))
    # the plane is exactly the mean hinge at F, and its coefficients are eqs. 27-28
    cut = task.one_slack_cut(F)
    assert task.cut_value(F, cut) == pytest.approx(cut.risk)
    A = task.weak_weights(cut.pairs)
    assert np.sum(A * F) == pytest.approx(cut.rhs - cut.risk)


def test_loss_is_normalised():
    rng = np.random.default_rng(1)
    X, Y = make_graphs(rng, 2)
    for loss in ("hamming", "area"):
        task = CRFTask(loss=loss).bind(X, Y)
        orc = task.most_violated(np.zeros((len(task.weak_inputs()), 2)))
        assert np.allclose(orc.loss, 1.0)  # every node flipped at w = 0
    task = CRFTask(normalize=False).bind(X, Y)
    orc = task.most_violated(np.zeros((len(task.weak_inputs()), 2)))
    assert np.allclose(orc.loss, 16)


def test_structboost_crf_learns_submodular_energies():
    rng = np.random.default_rng(2)
    X, Y = make_graphs(rng, 12, noise=1.5)
    est = StructBoost(
        task=CRFTask(), weak_learner=NonNegative("stump"), C=50.0, max_iter=15, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, Y)
    assert est.master_ == "exact" and est.formulation_ == "1-slack"
    assert np.all(est.slot_weights_ >= 0)
    # eq. 24 on every edge of training and new graphs: theta(0,1) + theta(1,0) >= 0
    Xt, Yt = make_graphs(np.random.default_rng(5), 6, noise=1.5)
    for graphs in (X, Xt):
        st, Z = est.task_.prediction_layout(graphs)
        F = est.hypotheses_.evaluate(Z).T @ est.slot_weights_
        assert np.all(F[2 * st.N :, 1] >= 0)
    pred = est.predict(Xt)
    assert len(pred) == 6 and all(p.shape == y.shape for p, y in zip(pred, Yt))
    assert any(est.slot_weights_[:, 1] > 0)  # the pairwise part is used
    # training Hamming error below the unary-only rule's
    unary_err = np.mean(np.concatenate([np.argmin(g.unary.sum(2), 1) != y for g, y in zip(Xt, Yt)]))
    assert est.task_.hamming(Yt, pred) <= unary_err


def test_negative_pairwise_energy_raises():
    rng = np.random.default_rng(3)
    X, Y = make_graphs(rng, 1)
    task = CRFTask().bind(X, Y)
    F = np.zeros((len(task.weak_inputs()), 2))
    F[-1, 1] = -1.0
    with pytest.raises(ValueError, match="submodular"):
        task.most_violated(F)


def test_bad_inputs_raise():
    rng = np.random.default_rng(4)
    X, Y = make_graphs(rng, 2)
    with pytest.raises(ValueError, match="0 or 1"):
        CRFTask().bind(X, [Y[0], Y[1] + 1])
    with pytest.raises(ValueError, match="labels for a graph"):
        CRFTask().bind(X, [Y[0], Y[1][:-1]])
    with pytest.raises(ValueError, match="CRFGraph"):
        CRFTask().bind([np.zeros((3, 2))], [np.zeros(3)])
    with pytest.raises(ValueError, match="loss"):
        CRFTask(loss="nope").bind(X, Y)
    with pytest.raises(ValueError, match=r"m-slack|1-slack"):
        StructBoost(task=CRFTask(), master="exact", formulation="n-slack").fit(X, Y)


def test_linear_model_plane_is_consistent():
    rng = np.random.default_rng(6)
    X, Y = make_graphs(rng, 3)
    model = CRFTask().bind(X, Y).linear_model()
    w = rng.normal(size=model.dim)
    w[model.d_u :] = np.abs(w[model.d_u :])
    lab, loss, margin = model.loss_augmented(w)
    coef = rng.random(3)
    assert float(w @ model.plane(lab, coef)) == pytest.approx(float(coef @ margin))
    l2, m2 = model.evaluate(w, lab)
    assert np.allclose(l2, loss) and np.allclose(m2, margin)


def test_struct_svm_on_raw_potentials(tmp_path):
    from maxmargin import StructSVM, load, save

    rng = np.random.default_rng(7)
    X, Y = make_graphs(rng, 12, noise=1.5)
    est = StructSVM(task=CRFTask(), C=10.0, solver="1-slack", max_iter=100).fit(X, Y)
    Xt, Yt = make_graphs(np.random.default_rng(8), 6, noise=1.5)
    pred = est.predict(Xt)
    assert 0.0 <= est.score(Xt, Yt) <= 1.0
    unary_err = np.mean(np.concatenate([np.argmin(g.unary.sum(2), 1) != y for g, y in zip(Xt, Yt)]))
    assert est.task_.hamming(Yt, pred) <= unary_err
    save(est, tmp_path / "m")
    again = load(tmp_path / "m")
    assert all(np.array_equal(a, b) for a, b in zip(again.predict(Xt), pred))
    with pytest.raises(ValueError, match="1-slack"):
        StructSVM(task=CRFTask(), solver="n-slack").fit(X, Y)


def test_ssvm_certificate_on_raw_potentials_is_an_upper_bound():
    """The graph-cut oracle is exact only where every cut weight ``w_v.V_e`` is
    non-negative; the SSVM's reported objective must still bound the true primal at its
    weights from above, and its dual bound the optimum from below.  The independent
    answer: the true primal at ``coef_``, every labelling of every image enumerated
    (2 x 3 grids, 64 labellings each), on data whose fit has negative cut weights."""

    from maxmargin import StructSVM

    rng = np.random.default_rng(5)
    X, Y = make_graphs(rng, 6, h=2, w=3, noise=1.5)
    # pairwise features of both signs: the unconstrained QP is free to make cuts negative
    X = [CRFGraph(g.unary, g.edges, g.pairwise - 0.6, g.area) for g in X]
    est = StructSVM(task=CRFTask(), C=10.0, solver="1-slack", max_iter=60).fit(X, Y)
    w = est.coef_
    model = est.task_.linear_model()
    assert not model.oracle_exact(w)  # the case the bound is for
    d_u = model.d_u
    hinge = brute_force_crf_hinges(X, Y, w, d_u)
    primal = 0.5 * float(w @ w) + 10.0 * float(np.mean(hinge))
    assert est.objective_ >= primal * (1 - 1e-9)
    assert est.dual_objective_ <= est.objective_
