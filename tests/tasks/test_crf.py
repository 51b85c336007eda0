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


def _brute_force_map(g, w, d_u):
    """The minimum-energy labelling of one small graph, every labelling enumerated."""
    Eu = g.unary @ w[:d_u]
    c = g.pairwise @ w[d_u:]
    best, arg = np.inf, None
    for lab in itertools.product((0, 1), repeat=len(Eu)):
        lab = np.array(lab)
        e = Eu[np.arange(len(lab)), lab].sum() + c[lab[g.edges[:, 0]] != lab[g.edges[:, 1]]].sum()
        if e < best - 1e-12:
            best, arg = e, lab
    return best, arg


def test_graph_cut_is_exact_when_the_declared_pairwise_weights_are_nonneg():
    """The sign convention, checked by enumeration (3 x 3 grids, 512 labellings): with
    non-negative pairwise potentials, ``w_v >= 0`` (the declared constraint) gives graph-cut
    MAP energies equal to the enumerated minimum for every draw; ``w_v <= 0`` (the other
    sign) does not.  The linear model declares exactly the pairwise coordinates."""
    rng = np.random.default_rng(12)
    X, Y = make_graphs(rng, 1, h=3, w=3)
    g = X[0]
    model = CRFTask().bind(X, Y).linear_model()
    d_u = model.d_u
    assert model.nonneg_coords.tolist() == list(range(d_u, model.dim))
    task = model.task
    mismatch = {1.0: 0, -1.0: 0}
    for _ in range(40):
        for sign in (1.0, -1.0):
            w = rng.normal(size=model.dim)
            w[d_u:] = sign * np.abs(w[d_u:]) * 3.0
            best, _ = _brute_force_map(g, w, d_u)
            lab = task.predict_linear(X, w)[0]
            c = g.pairwise @ w[d_u:]
            Eu = g.unary @ w[:d_u]
            e = (
                Eu[np.arange(len(lab)), lab].sum()
                + c[lab[g.edges[:, 0]] != lab[g.edges[:, 1]]].sum()
            )
            mismatch[sign] += int(e > best + 1e-9 * max(1.0, abs(best)))
            assert e >= best - 1e-9 * max(1.0, abs(best))
    assert mismatch[1.0] == 0 and mismatch[-1.0] > 0


def test_columns_with_negative_potentials_are_not_declared():
    rng = np.random.default_rng(13)
    X, Y = make_graphs(rng, 2)
    X = [CRFGraph(g.unary, g.edges, g.pairwise * np.array([1.0, -1.0]), g.area) for g in X]
    model = CRFTask().bind(X, Y).linear_model()
    assert model.nonneg_coords.tolist() == [model.d_u]  # V_0 = 1 only; V_1 <= 0 left free
    X = [CRFGraph(g.unary, g.edges, -np.abs(g.pairwise), g.area) for g in X]
    assert CRFTask().bind(X, Y).linear_model().nonneg_coords is None


def _nslack_reference(X, Y, C):
    """min_{w_v >= 0} 1/2 ||w||^2 + C/n sum_i max_y (Delta_i(y) - w.dPsi_i(y)) written out
    with every labelling of every image (the n-slack QP, whose optimum is the 1-slack
    one), by scipy's SLSQP; returns the exactly feasible point's objective."""
    from scipy.optimize import minimize

    n = len(X)
    d_u, d_v = X[0].unary.shape[2], X[0].pairwise.shape[1]
    D = d_u + d_v
    rows, rhs, owner = [], [], []
    for i, (g, y) in enumerate(zip(X, Y)):
        cut_t = y[g.edges[:, 0]] != y[g.edges[:, 1]]
        idx = np.arange(len(y))
        for lab in itertools.product((0, 1), repeat=len(y)):
            lab = np.array(lab)
            cut = lab[g.edges[:, 0]] != lab[g.edges[:, 1]]
            # w.dPsi = E(y') - E(y_i) (margin), Delta = Hamming, normalised
            du = (g.unary[idx, lab] - g.unary[idx, y]).sum(axis=0)
            dv = ((cut.astype(float) - cut_t)[:, None] * g.pairwise).sum(axis=0)
            rows.append(np.concatenate([du, dv]))
            rhs.append(float(np.mean(lab != y)))
            owner.append(i)
    A, b, owner = np.array(rows), np.array(rhs), np.array(owner)
    M = np.zeros((len(b), n))
    M[np.arange(len(b)), owner] = 1.0

    def f(z):
        return 0.5 * z[:D] @ z[:D] + C / n * z[D:].sum()

    def jac(z):
        return np.concatenate([z[:D], np.full(n, C / n)])

    cons = {"type": "ineq", "fun": lambda z: A @ z[:D] + M @ z[D:] - b,
            "jac": lambda z: np.hstack([A, M])}  # fmt: skip
    bounds = [(None, None)] * d_u + [(0, None)] * d_v + [(0, None)] * n
    r = minimize(f, np.zeros(D + n), jac=jac, bounds=bounds, constraints=[cons],
                 method="SLSQP", options={"ftol": 1e-15, "maxiter": 1000})  # fmt: skip
    w = r.x[:D].copy()
    w[d_u:] = np.maximum(w[d_u:], 0.0)
    xi = np.maximum(0.0, np.max(np.where(M > 0, (b - A @ w)[:, None], -np.inf), axis=0))
    return w, 0.5 * w @ w + C * float(xi.mean())


def test_constrained_ssvm_crf_matches_the_enumerated_qp():
    """On tiny graphs (2 x 3, 64 labellings each) whose unconstrained fit has a negative
    pairwise weight, the default (constrained) 1-slack fit closes its certificate, and its
    certified interval [dual, primal] contains the constrained optimum computed from all
    labellings (scipy; its exactly feasible value is an upper bound of the optimum, so
    ``dual <= P_ref`` must hold, and ``P_ref >= primal - (primal - dual)``: both values
    within the certified gap of each other, plus scipy's own accuracy)."""
    from maxmargin.solvers.ssvm import solve_ssvm

    rng = np.random.default_rng(21)
    X, Y = make_graphs(rng, 5, h=2, w=3, noise=1.5)
    C = 10.0
    model = CRFTask().bind(X, Y).linear_model()
    free = CRFTask().bind(X, Y).linear_model()
    free.nonneg_coords = None  # the unconstrained model, for contrast
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rf = solve_ssvm(free, C, "1-slack", tol=1e-6, max_iter=200)
    assert rf.w[free.d_u :].min() < 0  # the constraint matters here
    r = solve_ssvm(model, C, "1-slack", tol=1e-6, max_iter=200)
    assert r.converged and (r.primal - r.dual) <= 1e-6 * r.primal
    assert r.w[model.d_u :].min() >= 0.0 and model.oracle_exact(r.w)
    # the reported primal is the true objective at w (every labelling enumerated)
    hinge = brute_force_crf_hinges(X, Y, r.w, model.d_u)
    assert r.primal == pytest.approx(0.5 * r.w @ r.w + C * hinge.mean(), rel=1e-9)
    w_ref, P_ref = _nslack_reference(X, Y, C)
    assert r.dual <= P_ref * (1 + 1e-9)
    assert P_ref >= r.dual - 1e-9 and abs(P_ref - r.primal) <= (r.primal - r.dual) + 1e-6 * P_ref
    # strong convexity: ||w - w*|| <= sqrt(2 gap) for each point
    assert (
        np.linalg.norm(r.w - w_ref)
        <= np.sqrt(2 * (r.primal - r.dual)) + np.sqrt(2 * max(P_ref - r.dual, 0.0)) + 1e-6
    )


def test_constrained_ssvm_crf_converges_where_the_unconstrained_one_stalls():
    """The stall guard's data (tests/solvers/test_kelley_loop.py): without the declared
    constraint the learnt pairwise weight goes negative and the loop stalls with the gap
    open; with it (the default) the loop closes the gap, the pairwise weights stay >= 0
    and the oracle is exact at the answer."""
    from sklearn.exceptions import ConvergenceWarning

    from maxmargin.solvers.ssvm import solve_ssvm

    X, Y = make_graphs(np.random.default_rng(11), 40, h=5, w=6, noise=1.5)
    m = CRFTask(loss="area").bind(X, Y).linear_model()
    r = solve_ssvm(m, 10.0, "1-slack", max_iter=150)
    assert r.converged and r.primal - r.dual <= 1e-3 * r.primal
    assert r.w[m.d_u :].min() >= 0.0 and m.oracle_exact(r.w)
    m.nonneg_coords = None
    with pytest.warns(ConvergenceWarning, match="stalled"):
        free = solve_ssvm(m, 10.0, "1-slack", max_iter=150)
    assert not free.converged and (free.primal - free.dual) > 0.5 * free.primal
    assert free.dual <= r.primal  # the unconstrained optimum is below the constrained one


@pytest.mark.parametrize("solver", ["n-slack", "frank-wolfe"])
def test_solvers_that_cannot_enforce_the_constraint_refuse(solver):
    from maxmargin.solvers.ssvm import solve_ssvm

    X, Y = make_graphs(np.random.default_rng(14), 2)
    m = CRFTask().bind(X, Y).linear_model()
    with pytest.raises(ValueError, match="does not enforce"):
        solve_ssvm(m, 1.0, solver)
