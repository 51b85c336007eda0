"""RankSVM reaches the optimum of the explicitly written pairwise QP."""

import zlib

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone

from maxmargin.learners.ranksvm import RankSVM
from maxmargin.metrics import ndcg_at_k


def _pairwise_qp(X, loss, group, graph, rescaling, C, normalize):
    """n-slack pairwise QP (one slack per preference pair), solved with SLSQP."""
    edges = []
    for gv in np.unique(group):
        idx = np.flatnonzero(group == gv)
        lg = loss[idx]
        up = {"star": lg == lg.min(), "bipartite": lg < lg.max()}.get(graph)
        eg = [
            (idx[a], idx[b])
            for a in range(len(idx))
            for b in range(len(idx))
            if lg[a] < lg[b] and (up is None or (up[a] and not up[b]))
        ]
        edges.append(eg)
    flat = [e for eg in edges for e in eg]
    if normalize == "pairs":
        om = np.full(len(flat), 1 / len(flat))
    else:
        G = sum(1 for eg in edges if eg)
        om = np.concatenate([np.full(len(eg), 1 / (G * len(eg))) for eg in edges if eg])
    I, J = np.array(flat).T
    D, dX = loss[J] - loss[I], X[I] - X[J]
    d, m = X.shape[1], len(flat)
    lhs = D[:, None] * dX if rescaling == "slack" else dX
    if rescaling == "unit":  # eq. 14 of StructBoost: unit margin whatever the loss gap
        D = np.ones_like(D)
    res = minimize(
        lambda z: 0.5 * z[:d] @ z[:d] + C * om @ z[d:],
        np.zeros(d + m),
        jac=lambda z: np.r_[z[:d], C * om],
        constraints=[
            {
                "type": "ineq",
                "fun": lambda z: lhs @ z[:d] - D + z[d:],
                "jac": lambda z: np.c_[lhs, np.eye(m)],
            }
        ],
        bounds=[(None, None)] * d + [(0, None)] * m,
        method="SLSQP",
        options={"ftol": 1e-13, "maxiter": 1000},
    )
    return res.x[:d], res.fun


@pytest.mark.parametrize("graph", ["complete", "bipartite", "star"])
@pytest.mark.parametrize("rescaling", ["margin", "slack", "unit"])
@pytest.mark.parametrize("normalize", ["pairs", "query"])
def test_reaches_pairwise_qp_optimum(graph, rescaling, normalize):
    rng = np.random.default_rng(zlib.crc32(f"{graph}{rescaling}{normalize}".encode()))
    n, d, C = 14, 3, 3.0
    X = rng.normal(size=(n, d))
    loss = rng.integers(0, 3, n).astype(float)
    group = rng.integers(0, 2, n)
    m = RankSVM(
        C=C, graph=graph, rescaling=rescaling, target="loss", tol=1e-9, normalize=normalize
    ).fit(X, loss, group=group)
    w_ref, f_ref = _pairwise_qp(X, loss, group, graph, rescaling, C, normalize)
    assert m.history_[-1]["objective"] == pytest.approx(f_ref, rel=1e-6)
    np.testing.assert_allclose(m.coef_, w_ref, atol=1e-4)
    assert m.history_[-1]["gap"] <= 1e-8


def test_relevance_target_learns_and_api():
    rng = np.random.default_rng(0)
    n, d = 300, 5
    X = rng.normal(size=(n, d))
    w_true = rng.normal(size=d)
    rel = np.digitize(X @ w_true + 0.3 * rng.normal(size=n), [-1, 1]).astype(float)
    group = np.repeat(np.arange(10), 30)
    m = RankSVM(C=10.0, graph="complete", normalize="query").fit(X, rel, group)
    s = m.decision_function(X)
    assert np.allclose(m.predict(X), s)
    assert m.score(X, rel, group) == pytest.approx(ndcg_at_k(rel, s, k=10, group=group))
    assert m.score(X, rel, group) > 0.9
    assert np.corrcoef(m.coef_, w_true)[0, 1] > 0.95
    h = m.history_[-1]
    assert {"objective", "dual_bound", "gap", "n_planes", "t_oracle", "t_master"} <= set(h)
    assert clone(m).get_params() == m.get_params()


def test_input_validation():
    X, y = np.ones((4, 2)), np.array([0.0, 1, 2, 0])
    with pytest.raises(ValueError):
        RankSVM(C=0).fit(X, y)
    with pytest.raises(ValueError):
        RankSVM().fit(X, y[:3])
    with pytest.raises(ValueError):
        RankSVM().fit(np.where(np.eye(4, 2) > 0, np.nan, 1.0), y)
    with pytest.raises(ValueError):
        RankSVM().fit(X, np.array([0.0, np.inf, 1, 2]))
    with pytest.raises(ValueError):
        RankSVM().fit(np.empty((0, 2)), np.empty(0))
    with pytest.raises(ValueError):
        RankSVM().fit(X, np.zeros(4))  # no preference pairs
    with pytest.raises(ValueError):
        RankSVM(graph="chain").fit(X, y)
    with pytest.raises(ValueError):
        RankSVM().fit(X, y, group=[0, 1])
