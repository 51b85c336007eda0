"""The numba Boykov-Kolmogorov max-flow against brute force and against PyMaxflow."""

import itertools

import numpy as np
import pytest

from maxmargin.inference import graphcut
from maxmargin.inference.bk_maxflow import BKWork, build_csr, maxflow, maxflow_range
from maxmargin.inference.graphcut import binary_graphcut, energy, loss_augmented_graphcut


def cut_value(labels, cs, ct, edges, c1, c2):
    """Capacity of the cut with sink side ``labels == 1``."""
    y = np.asarray(labels)
    p, q = edges[:, 0], edges[:, 1]
    return float(
        cs[y == 1].sum()
        + ct[y == 0].sum()
        + c1[(y[p] == 0) & (y[q] == 1)].sum()
        + c2[(y[p] == 1) & (y[q] == 0)].sum()
    )


def brute_min_cut(cs, ct, edges, c1, c2):
    """Minimum over all 2^n labellings (vectorised), and the minimisers."""
    n = len(cs)
    Y = np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64).reshape(-1, n)
    p, q = edges[:, 0], edges[:, 1]
    vals = (
        (Y == 1) @ cs
        + (Y == 0) @ ct
        + ((Y[:, p] == 0) & (Y[:, q] == 1)) @ c1
        + ((Y[:, p] == 1) & (Y[:, q] == 0)) @ c2
    )
    return vals.min(), Y[vals <= vals.min() + 1e-9 * max(1.0, abs(vals.min()))]


def random_caps(rng, k, kind):
    if kind == "float":
        c = rng.random(k) * 3.0
    elif kind == "int":  # many ties
        c = rng.integers(0, 4, k).astype(float)
    else:  # mixed scales: huge, tiny and zero capacities
        c = rng.random(k) * rng.choice([1e-6, 1.0, 1e9], k)
    c[rng.random(k) < 0.25] = 0.0
    return c


def random_graph(rng, n, density, kind):
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)], dtype=np.int64)
    edges = pairs.reshape(-1, 2)[rng.random(len(pairs)) < density]
    return (
        random_caps(rng, n, kind),
        random_caps(rng, n, kind),
        edges,
        random_caps(rng, len(edges), kind),
        random_caps(rng, len(edges), kind),
    )


@pytest.mark.parametrize("kind", ["float", "int", "scales"])
def test_maxflow_equals_brute_force_on_tiny_graphs(kind):
    """Hundreds of random graphs (n <= 12): the flow equals the cut of the labels, and
    the labels' cut is the minimum over all labellings (max-flow = min-cut)."""
    for seed in range(150):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 13))
        cs, ct, edges, c1, c2 = random_graph(rng, n, float(rng.uniform(0.1, 0.9)), kind)
        labels, flow = maxflow(cs, ct, edges, c1, c2)
        best, minimisers = brute_min_cut(cs, ct, edges, c1, c2)
        tol = 1e-9 * max(1.0, best)
        cut = cut_value(labels, cs, ct, edges, c1, c2)
        assert cut == pytest.approx(best, abs=tol), (kind, seed)
        assert flow == pytest.approx(best, abs=tol), (kind, seed)
        assert any(np.array_equal(labels, y) for y in minimisers)
        if kind == "int":  # exact arithmetic: the sink side is the minimal one
            assert np.array_equal(labels, minimisers.min(axis=0)), seed


def grid_graph(H, W, rng, smooth=1.0, integer=False):
    n = H * W
    idx = np.arange(n).reshape(H, W)
    edges = np.concatenate(
        [
            np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1),
            np.stack([idx[:-1].ravel(), idx[1:].ravel()], axis=1),
        ]
    )
    yy, xx = np.mgrid[:H, :W]
    u = 0.5 * (np.sin(xx / 17.0) + np.cos(yy / 23.0)).ravel() + rng.normal(size=n)
    lam = rng.random(len(edges)) * smooth
    if integer:
        u, lam = np.round(4 * u), np.round(4 * lam)
    return np.maximum(u, 0.0), np.maximum(-u, 0.0), edges, lam, lam


def pymaxflow(cs, ct, edges, c1, c2):
    maxflow_mod = pytest.importorskip("maxflow")
    g = maxflow_mod.Graph[float]()
    nodes = np.asarray(g.add_nodes(len(cs)))
    g.add_grid_tedges(nodes, cs, ct)
    if len(edges):
        g.add_edges(edges[:, 0], edges[:, 1], c1, c2)
    flow = g.maxflow()
    return np.asarray(g.get_grid_segments(nodes), dtype=np.int64), flow


@pytest.mark.parametrize("seed", range(6))
def test_maxflow_equals_pymaxflow_on_random_graphs(seed):
    rng = np.random.default_rng(1000 + seed)
    n = 300
    E = 1500
    edges = rng.integers(0, n, size=(E, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    integer = seed % 2 == 1
    cs, ct, c1, c2 = (random_caps(rng, k, "int" if integer else "float") for k in (n, n, E, E))
    c1, c2 = c1[: len(edges)], c2[: len(edges)]
    labels, flow = maxflow(cs, ct, edges, c1, c2)
    ref_labels, ref_flow = pymaxflow(cs, ct, edges, c1, c2)
    assert flow == pytest.approx(ref_flow, rel=1e-12)
    assert cut_value(labels, cs, ct, edges, c1, c2) == pytest.approx(ref_flow, rel=1e-12)
    # in exact arithmetic both return the minimal sink side, so with integer capacities
    # (exact in floating point, many ties) and with continuous random ones (a unique
    # minimiser almost surely) the labels agree
    assert np.array_equal(labels, ref_labels)


@pytest.mark.parametrize(
    ("H", "W", "integer"), [(200, 200, False), (60, 90, True), (316, 316, False)]
)
def test_maxflow_equals_pymaxflow_on_grids(H, W, integer):
    rng = np.random.default_rng(H + W)
    cs, ct, edges, c1, c2 = grid_graph(H, W, rng, integer=integer)
    labels, flow = maxflow(cs, ct, edges, c1, c2)
    ref_labels, ref_flow = pymaxflow(cs, ct, edges, c1, c2)
    assert flow == pytest.approx(ref_flow, rel=1e-10)
    assert cut_value(labels, cs, ct, edges, c1, c2) == pytest.approx(flow, rel=1e-10)
    if integer:
        assert np.array_equal(labels, ref_labels)
    else:  # continuous: compare the energies (labels may differ on rounding ties)
        assert cut_value(labels, cs, ct, edges, c1, c2) == pytest.approx(
            cut_value(ref_labels, cs, ct, edges, c1, c2), rel=1e-10
        )


def test_components_and_node_ranges_are_independent():
    """Many disconnected graphs in one call give the labels of each graph alone, and a
    node range closed under the arcs is solved without touching the rest."""
    rng = np.random.default_rng(5)
    parts = [random_graph(rng, int(rng.integers(2, 9)), 0.5, "float") for _ in range(30)]
    offs = np.cumsum([0] + [len(p[0]) for p in parts])
    cs = np.concatenate([p[0] for p in parts])
    ct = np.concatenate([p[1] for p in parts])
    edges = np.concatenate([p[2] + o for p, o in zip(parts, offs[:-1], strict=True)])
    c1 = np.concatenate([p[3] for p in parts])
    c2 = np.concatenate([p[4] for p in parts])
    labels, flow = maxflow(cs, ct, edges, c1, c2)
    total = 0.0
    for k, p in enumerate(parts):
        lk, fk = maxflow(*p)
        assert np.array_equal(labels[offs[k] : offs[k + 1]], lk)
        total += fk
    assert flow == pytest.approx(total, rel=1e-12)
    # one component through maxflow_range on the whole arrays
    n, E = len(cs), len(edges)
    first, head, sister, ae = (np.empty(k, dtype=np.int64) for k in (n + 1, 2 * E, 2 * E, 2 * E))
    build_csr(n, edges[:, 0].copy(), edges[:, 1].copy(), first, head, sister, ae)
    rcap = np.stack([c1, c2], axis=1).ravel()[ae]
    tr = cs - ct
    w = BKWork(n)
    out = np.full(n, -7, dtype=np.int64)
    k = 11
    lo, hi = int(offs[k]), int(offs[k + 1])
    maxflow_range(first, head, sister, rcap, tr, lo, hi, w.arrays, out)
    assert np.array_equal(out[lo:hi], labels[lo:hi])
    assert np.all(out[:lo] == -7) and np.all(out[hi:] == -7)


def test_maxflow_bad_input():
    e = np.array([[0, 1]])
    with pytest.raises(ValueError, match="non-negative"):
        maxflow([1.0, -1.0], [0.0, 0.0], e, [1.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        maxflow([1.0, np.inf], [0.0, 0.0], e, [1.0], [1.0])
    with pytest.raises(ValueError, match="endpoints"):
        maxflow([1.0, 1.0], [0.0, 0.0], np.array([[0, 2]]), [1.0], [1.0])
    with pytest.raises(ValueError, match="entries"):
        maxflow([1.0, 1.0], [0.0, 0.0], e, [1.0, 2.0], [1.0])
    labels, flow = maxflow(np.zeros(0), np.zeros(0), np.zeros((0, 2), dtype=np.int64),
                           np.zeros(0), np.zeros(0))  # fmt: skip
    assert labels.shape == (0,) and flow == 0.0


@pytest.mark.parametrize("seed", range(20))
def test_graphcut_backends_agree(seed):
    """binary_graphcut / loss_augmented_graphcut: the numba and PyMaxflow backends reach
    the same energy (and labels, when the minimiser is unique)."""
    pytest.importorskip("maxflow")
    rng = np.random.default_rng(seed)
    n = 400
    edges = rng.integers(0, n, size=(1200, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    unary = rng.normal(size=(n, 2))
    T = rng.normal(size=(len(edges), 2, 2))
    s = T[:, 0, 1] + T[:, 1, 0] - T[:, 0, 0] - T[:, 1, 1]
    T[:, 0, 1] += np.maximum(0.0, -s) + rng.random(len(edges))
    y1, e1 = binary_graphcut(unary, edges, T, backend="numba")
    y2, e2 = binary_graphcut(unary, edges, T, backend="pymaxflow")
    assert e1 == pytest.approx(e2, rel=1e-12, abs=1e-12)
    assert np.array_equal(y1, y2)  # continuous random energies: a unique minimiser
    yt = rng.integers(0, 2, n)
    pw = rng.random(len(edges))
    a = loss_augmented_graphcut(unary, edges, pw, yt, backend="numba")
    b = loss_augmented_graphcut(unary, edges, pw, yt, backend="pymaxflow")
    assert a[1] - a[2] == pytest.approx(b[1] - b[2], rel=1e-12, abs=1e-12)
    assert energy(unary, edges, pw, a[0]) == pytest.approx(a[1])


def test_graphcut_backend_choice(monkeypatch):
    rng = np.random.default_rng(0)
    unary = rng.normal(size=(5, 2))
    edges = np.array([[0, 1], [1, 2], [3, 4]])
    with pytest.raises(ValueError, match="backend"):
        binary_graphcut(unary, edges, np.ones(3), backend="boost")
    calls = []
    real = graphcut._numba_cut
    monkeypatch.setattr(graphcut, "_numba_cut", lambda *a: calls.append(1) or real(*a))
    binary_graphcut(unary, edges, np.ones(3))
    assert calls == [1]  # numba is the default
    monkeypatch.setattr(graphcut, "DEFAULT_BACKEND", "pymaxflow")
    pytest.importorskip("maxflow")
    binary_graphcut(unary, edges, np.ones(3))
    assert calls == [1]


def test_build_csr_range_lays_out_arcs_as_one_build():
    """Building the arc lists range by range (the shards, side by side) gives exactly
    the arrays of one build of the whole graph."""
    from maxmargin.inference.bk_maxflow import build_csr_range

    rng = np.random.default_rng(2)
    sizes = rng.integers(1, 12, 20)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    parts, eoffs = [], [0]
    for k in range(len(sizes)):
        e = rng.integers(0, sizes[k], size=(int(rng.integers(0, 30)), 2)) + offs[k]
        e = e[e[:, 0] != e[:, 1]]
        parts.append(e)
        eoffs.append(eoffs[-1] + len(e))
    edges = np.concatenate(parts)
    p, q = edges[:, 0].copy(), edges[:, 1].copy()
    n, E = int(offs[-1]), len(edges)
    one = [np.empty(k, dtype=np.int64) for k in (n + 1, 2 * E, 2 * E, 2 * E)]
    build_csr(n, p, q, *one)
    two = [np.full(k, -1, dtype=np.int64) for k in (n + 1, 2 * E, 2 * E, 2 * E)]
    for k in range(len(sizes))[::-1]:  # any order
        build_csr_range(p, q, offs[k], offs[k + 1], eoffs[k], eoffs[k + 1], *two)
    two[0][n] = 2 * E
    for x, y in zip(one, two, strict=True):
        assert np.array_equal(x, y)
    # the sister of an arc runs the other way
    tails = np.repeat(np.arange(n), np.diff(one[0]))
    assert np.array_equal(one[1][one[2]], tails)


@pytest.mark.parametrize("seed", range(5))
def test_alpha_expansion_backends_agree(seed):
    pytest.importorskip("maxflow")
    from maxmargin.inference.graphcut import alpha_expansion

    rng = np.random.default_rng(50 + seed)
    n, L = 120, 4
    edges = rng.integers(0, n, size=(300, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    unary = rng.normal(size=(n, L))
    pw = rng.random(len(edges))
    y1, e1 = alpha_expansion(unary, edges, pw, backend="numba")
    y2, e2 = alpha_expansion(unary, edges, pw, backend="pymaxflow")
    assert e1 == pytest.approx(e2, rel=1e-12)
    assert np.array_equal(y1, y2)


def test_crf_oracle_on_graphs_without_edges():
    """Images without edges (and a shard of them) go through the threaded CRF kernel."""
    from maxmargin.solvers.parallel import ShardedOracle
    from maxmargin.tasks.crf import CRFGraph, CRFTask

    rng = np.random.default_rng(0)
    X, Y = [], []
    for k in range(6):
        n = 5
        E = np.zeros((0, 2), dtype=np.int64) if k < 3 else np.array([[0, 1], [1, 2], [3, 4]])
        X.append(CRFGraph(rng.normal(size=(n, 2, 2)), E, np.abs(rng.normal(size=(len(E), 1)))))
        Y.append(rng.integers(0, 2, n))
    m = CRFTask().bind(X, Y).linear_model()
    w = rng.normal(size=m.dim)
    lab, loss, margin = m.loss_augmented(w)
    with ShardedOracle(m, n_jobs=2, n_shards=3) as orc:
        r = orc.run(w, plane=True)
    assert np.array_equal(r.labels, lab)
    np.testing.assert_allclose(r.loss, loss)
    np.testing.assert_allclose(r.margin, margin, atol=1e-12)
