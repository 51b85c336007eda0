"""AUC / ordinal StructBoost (StructBoost Sec. 3.2, eq. 14).

Independent answers: the full eq. (14) LP with every stump and every pair written out
here and solved by scipy's linprog; the pair set enumerated by brute force; the 1-slack
plane summed pair by pair.  Theorem 2.1: 1-slack (fast oracle), 1-slack (pair lists)
and m-slack reach the same objective.
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning

from maxmargin import StructBoostRanker, load, save
from maxmargin.metrics import auc, pairwise_accuracy
from maxmargin.solvers.column_generation import fit_structboost
from maxmargin.tasks import PairwiseRankingTask, RankingTask
from maxmargin.weak import DecisionStump
from maxmargin.weak.reference import all_stumps

GRAPHS = [("complete", None), ("bipartite", None), ("bipartite", 2), ("star", None)]
RESCALINGS = ["unit", "margin", "slack"]


def brute_pairs(loss, group, graph, top_k):
    """(i, j, d) for every pair where i should rank above j, by enumeration."""
    out = []
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        lg = loss[idx]
        if graph == "star":
            up = lg == lg.min()
        elif graph == "bipartite":
            up = lg <= np.sort(lg)[top_k - 1] if top_k else lg < lg.max()
        else:
            up = None
        for a, b in itertools.product(range(len(idx)), repeat=2):
            if lg[a] < lg[b] and (up is None or (up[a] and not up[b])):
                out.append((idx[a], idx[b], lg[b] - lg[a]))
    return out


def small_data(seed, n=16, levels=3, groups=2):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, 2)).astype(float)
    y = rng.integers(0, levels, size=n).astype(float)
    y[:levels] = np.arange(levels)
    group = rng.integers(0, groups, size=n)
    return X, y, group


@pytest.mark.parametrize("graph,top_k", GRAPHS)
def test_pair_list_is_the_graph(graph, top_k):
    X, y, group = small_data(3, n=25, levels=4, groups=3)
    t = PairwiseRankingTask(graph=graph, top_k=top_k).bind(X, y, group=group)
    got = sorted(zip(t.upper_.tolist(), t.lower_.tolist(), strict=True))
    ref = brute_pairs(y.max() - y, group, graph, top_k)
    assert got == sorted((i, j) for i, j, _ in ref)
    assert t.n_samples == len(ref)


@pytest.mark.parametrize("graph,top_k", GRAPHS)
@pytest.mark.parametrize("rescaling", RESCALINGS)
@pytest.mark.parametrize("normalize", ["pairs", "query"])
def test_fast_cut_equals_pairwise_cut(graph, top_k, rescaling, normalize):
    """The O(n log n) plane is the sum of the per-pair most violated outputs."""
    X, y, group = small_data(5, n=30, levels=4, groups=3)
    rng = np.random.default_rng(0)
    kw = dict(graph=graph, rescaling=rescaling, top_k=top_k, normalize=normalize)
    fast = RankingTask(**kw).bind(X, y, group=group)
    pairwise = PairwiseRankingTask(**kw).bind(X, y, group=group)
    for F in (np.zeros((30, 1)), rng.integers(-3, 4, (30, 1)) / 2.0, rng.normal(size=(30, 1))):
        a, b = fast.one_slack_cut(F), pairwise.one_slack_cut(F)
        assert a.rhs == pytest.approx(b.rhs, abs=1e-12)
        assert a.risk == pytest.approx(b.risk, abs=1e-12)
        np.testing.assert_allclose(
            fast.weak_weights(a.pairs), pairwise.weak_weights(b.pairs), atol=1e-12
        )
        # the plane's value at other scores, both ways and from the definition
        G = rng.normal(size=(30, 1))
        s = G[:, 0]
        ref = b.rhs - float(pairwise.weak_weights(b.pairs)[:, 0] @ s)
        assert fast.cut_value(G, a) == pytest.approx(ref, abs=1e-12)
        assert pairwise.cut_value(G, b) == pytest.approx(ref, abs=1e-12)


def eq14_lp_optimum(
    X, y, group, C, graph="complete", rescaling="unit", top_k=None, normalize="pairs"
):
    """min 1'w + C sum omega_p xi_p  s.t.  sigma_p w.(Phi_i - Phi_j) + xi_p >= Delta_p,
    omega_p = 1/|S| ("pairs") or 1/(G |S_g|) for a pair of group g ("query")."""
    Phi = all_stumps(X).evaluate(X).T  # (n, n_stumps)
    pairs = brute_pairs(y.max() - y, group, graph, top_k)
    E = len(pairs)
    if normalize == "pairs":
        omega = np.full(E, 1.0 / E)
    else:
        g_of = np.array([group[i] for i, _, _ in pairs])
        per = {g: np.sum(g_of == g) for g in np.unique(g_of)}
        omega = np.array([1.0 / (len(per) * per[g]) for g in g_of])
    rows, rhs = [], []
    for p, (i, j, d) in enumerate(pairs):
        scale = d if rescaling == "slack" else 1.0
        slack = np.zeros(E)
        slack[p] = 1.0
        rows.append(np.concatenate([scale * (Phi[i] - Phi[j]), slack]))
        rhs.append(1.0 if rescaling == "unit" else d)
    cost = np.concatenate([np.ones(Phi.shape[1]), C * omega])
    res = linprog(cost, A_ub=-np.array(rows), b_ub=-np.array(rhs), bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def run(task, formulation, max_cp_rounds=None, master="exact"):
    res = fit_structboost(
        task,
        DecisionStump(),
        C=task.C_,
        master=master,
        formulation=formulation,
        eps_cp=1e-10,
        eps_cg=1e-9,
        max_iter=1000,
        rng=np.random.default_rng(0),
        max_cp_rounds=max_cp_rounds,
    )
    assert res.converged
    return res


@pytest.mark.parametrize("rescaling", RESCALINGS)
@pytest.mark.parametrize("graph,top_k", [("complete", None), ("bipartite", 2)])
@pytest.mark.parametrize("C", [2.0, 20.0])
@pytest.mark.parametrize("max_cp_rounds", [None, 2])
@pytest.mark.parametrize("normalize", ["pairs", "query"])
def test_all_forms_reach_the_full_lp(rescaling, graph, top_k, C, max_cp_rounds, normalize):
    """Theorem 2.1: m-slack, 1-slack with pair lists and 1-slack with the O(n log n)
    oracle all reach the optimum of eq. (14) over all stumps."""
    X, y, group = small_data(11, n=14, levels=3, groups=2)
    opt = eq14_lp_optimum(X, y, group, C, graph, rescaling, top_k, normalize)
    kw = dict(graph=graph, rescaling=rescaling, top_k=top_k, normalize=normalize)
    forms = [
        (PairwiseRankingTask(**kw), "m-slack", "fast"),
        (PairwiseRankingTask(**kw), "m-slack", "exact"),
        (PairwiseRankingTask(**kw), "1-slack", "exact"),
        (RankingTask(**kw), "1-slack", "exact"),
        (RankingTask(**kw), "1-slack", "fast"),
    ]
    for task, formulation, master in forms:
        bound = task.bind(X, y, group=group)
        bound.C_ = C
        res = run(bound, formulation, max_cp_rounds, master)
        name = (type(task).__name__, formulation, master)
        assert res.objective == pytest.approx(opt, rel=1e-6), name
        assert res.history[-1]["master_objective"] == pytest.approx(opt, rel=1e-6), name


def test_ranker_formulations_agree_on_real_data():
    """Same eq. (14) objective from both estimator formulations (binary AUC)."""
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:120, :6], y[:120]
    objs = []
    for formulation in ("1-slack", "m-slack"):
        r = StructBoostRanker(
            C=50,
            max_iter=500,
            formulation=formulation,
            eps_cp=1e-9,
            max_cp_rounds=None,
            certify="exact",
        ).fit(X, y)
        assert r.converged_
        objs.append(r.objective_)
    assert objs[0] == pytest.approx(objs[1], rel=1e-6)


def test_auc_learning_and_api():
    X, y = load_breast_cancer(return_X_y=True)
    r = StructBoostRanker(C=100, max_iter=30).fit(X[:300], y[:300])
    s = r.decision_function(X[300:])
    assert s.shape == (len(X) - 300,)
    assert auc(y[300:], s) > 0.95
    assert r.score(X[300:], y[300:]) == pytest.approx(auc(y[300:], s))
    assert r.n_pairs_ == int(y[:300].sum() * (300 - y[:300].sum()))
    staged = list(r.staged_decision_function(X[300:]))
    assert len(staged) == r.n_iter_
    np.testing.assert_allclose(staged[-1], s)
    np.testing.assert_array_equal(r.predict(X[300:]), s)
    # objective recorded = ||w||_1 + C * mean pairwise hinge, recomputed here.  Both sides
    # are float64 sums of the same terms in other orders: each score is a sum of at most
    # max_iter = 30 products (relative error <= 30 eps), the hinge a mean of pair terms of
    # size <= 1 + 2 max|s|, so the two agree to about 1e-13 relative; 1e-11 leaves room.
    # (The master's float32 score updates, once reported as the objective, were 4e-9 off.)
    s_tr = r.decision_function(X[:300])
    pos, neg = s_tr[y[:300] == 1], s_tr[y[:300] == 0]
    hinge = np.maximum(0, 1 - (pos[:, None] - neg[None, :])).mean()
    l1 = np.abs(r.slot_weights_).sum()
    assert r.objective_ == pytest.approx(l1 + 100 * hinge, rel=1e-11)


def test_ordinal_with_groups_orders_levels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=300), [-1, 0, 1])
    group = rng.integers(0, 5, 300)
    r = StructBoostRanker(C=100, max_iter=40, rescaling="margin").fit(X, y, group=group)
    assert pairwise_accuracy(y, r.decision_function(X), group) > 0.85


def test_save_load_round_trip(tmp_path):
    X, y = load_breast_cancer(return_X_y=True)
    r = StructBoostRanker(C=100, max_iter=10, graph="bipartite").fit(X[:200], y[:200])
    save(r, tmp_path / "r.npz")
    r2 = load(tmp_path / "r.npz")
    assert type(r2) is StructBoostRanker
    np.testing.assert_array_equal(r2.decision_function(X), r.decision_function(X))
    assert r2.n_pairs_ == r.n_pairs_ and r2.graph == "bipartite"


def test_clone_keeps_params():
    r = StructBoostRanker(C=7.0, rescaling="slack", formulation="m-slack")
    assert clone(r).get_params() == r.get_params()


@pytest.mark.parametrize(
    "params, message",
    [
        ({"formulation": "auto"}, "formulation"),
        ({"graph": "chain"}, "graph"),
        ({"rescaling": "both"}, "rescaling"),
        ({"top_k": 1.5}, "top_k"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"normalize": "docs"}, "normalize"),
        ({"C": -1.0}, "C"),
        ({"max_iter": 0}, "max_iter"),
    ],
)
def test_bad_hyperparameters(params, message):
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(ValueError, match=message):
        StructBoostRanker(**params).fit(X[:50], y[:50])


def test_bad_data():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:50], y[:50].astype(float)
    with pytest.raises(ValueError, match="no pairs"):
        StructBoostRanker().fit(X, np.ones(50))
    with pytest.raises(ValueError, match="no pairs"):  # every group has a single level
        StructBoostRanker().fit(X, y, group=np.arange(50))
    with pytest.raises(ValueError, match="group"):
        StructBoostRanker().fit(X, y, group=np.zeros(49))
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError):
        StructBoostRanker().fit(X, bad)
    Xb = X.copy()
    Xb[0, 0] = np.inf
    with pytest.raises(ValueError):
        StructBoostRanker().fit(Xb, y)
    r = StructBoostRanker(max_iter=3).fit(X, y)
    with pytest.raises(ValueError):
        r.decision_function(X[:, :5])
    with pytest.raises(ValueError, match="1-slack"):
        fit_structboost(
            RankingTask().bind(X, y),
            DecisionStump(),
            C=10.0,
            master="exact",
            formulation="m-slack",
        )

    class _NoSmoothedRisk(RankingTask):
        smooth_master = False

    with pytest.raises(ValueError, match="listable"):
        fit_structboost(_NoSmoothedRisk().bind(X, y), DecisionStump(), C=10.0, master="fast")


class _InconsistentTask(RankingTask):
    """Reports a risk its planes cannot reach: the LP never moves."""

    def one_slack_cut(self, F):
        cut = super().one_slack_cut(F)
        return type(cut)(cut.pairs, cut.rhs, cut.risk + 0.5)


def test_stalled_cutting_planes_stop_with_a_warning():
    X, y, group = small_data(2, n=20)
    task = _InconsistentTask().bind(X, y, group=group)
    # without the guard this call never returns (the LP never moves)
    with pytest.warns(ConvergenceWarning, match="stalled"):
        fit_structboost(
            task,
            DecisionStump(),
            C=10.0,
            master="exact",
            formulation="1-slack",
            max_iter=5,
            max_cp_rounds=None,
        )


def test_query_normalisation_objective_by_hand():
    """normalize="query": ||w||_1 + C * mean over queries of the mean pairwise hinge."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(90, 3))
    y = rng.integers(0, 3, 90).astype(float)
    group = np.repeat([0, 1, 2], [10, 30, 50])  # very different pair counts per query
    r = StructBoostRanker(C=30, max_iter=15, normalize="query").fit(X, y, group=group)
    s = r.decision_function(X)
    per_query = []
    for g in range(3):
        yg, sg = y[group == g], s[group == g]
        up = yg[:, None] > yg[None, :]
        per_query.append(np.maximum(0, 1 - (sg[:, None] - sg[None, :]))[up].mean())
    expect = np.abs(r.slot_weights_).sum() + 30 * np.mean(per_query)
    assert r.objective_ == pytest.approx(expect, rel=1e-9)
    plain = StructBoostRanker(C=30, max_iter=15).fit(X, y, group=group)
    assert plain.objective_ != pytest.approx(r.objective_, rel=1e-3)


def _huber(u, d):
    return np.where(u <= 0, 0.0, np.where(u < d, u * u / (2 * d), u - d / 2))


@pytest.mark.parametrize("rescaling", RESCALINGS)
@pytest.mark.parametrize("graph", ["complete", "bipartite", "star"])
@pytest.mark.parametrize("normalize", ["pairs", "query"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_huber_smoothed_hinge_equals_the_sum_over_listed_pairs(rescaling, graph, normalize, seed):
    """PreferenceGraph.smoothed_hinge (sorting + prefix sums over the oracle's tree)
    equals the Huber hinge summed pair by pair, with its gradient and dual value."""
    rng = np.random.default_rng(seed)
    n = 40
    X = rng.normal(size=(n, 2))
    y = rng.integers(0, 4, n).astype(float)
    group = rng.integers(0, 3, n) if seed else None
    t = PairwiseRankingTask(graph=graph, rescaling=rescaling, normalize=normalize)
    t = t.bind(X, y, group=group)
    s = rng.normal(size=n) * 2
    if seed == 2:
        s = np.round(s)  # ties, and hinge arguments exactly at 0 and delta
    delta = 0.5 if seed == 2 else 0.3
    i, j = t.upper_, t.lower_
    d = t.loss_[j] - t.loss_[i]
    om = t.w_sample_[i]
    arg = (d if rescaling == "margin" else 1.0) - s[i] + s[j]
    kappa = d if rescaling == "slack" else 1.0
    hp = np.clip(arg / delta, 0, 1)
    A = np.zeros(n)
    np.add.at(A, i, om * kappa * hp)
    np.add.at(A, j, -om * kappa * hp)
    risk, smooth, A_fast, dual = t.graph_.smoothed_hinge(s, delta, rescaling, t.w_sample_)
    assert risk == pytest.approx(np.sum(om * kappa * np.maximum(0, arg)), rel=1e-10, abs=1e-12)
    assert smooth == pytest.approx(np.sum(om * kappa * _huber(arg, delta)), rel=1e-10, abs=1e-12)
    ell = 1.0 if rescaling == "unit" else d
    assert dual == pytest.approx(np.sum(om * ell * hp), rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(A_fast, A, atol=1e-12)
    # the smoothed risk is within delta/2 of the hinge (per unit of pair weight)
    assert risk - delta / 2 * np.sum(om * kappa) - 1e-12 <= smooth <= risk + 1e-12
