import itertools

import numpy as np
import pytest

from maxmargin.inference.graphcut import (
    alpha_expansion,
    binary_graphcut,
    energy,
    loss_augmented_graphcut,
)


def random_graph(rng, n, L=2, table=False, density=0.4):
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    edges = pairs[rng.random(len(pairs)) < density]
    unary = rng.normal(size=(n, L))
    if table:
        T = rng.normal(size=(len(edges), L, L))
        if L == 2:  # make submodular: t01 + t10 >= t00 + t11
            s = T[:, 0, 1] + T[:, 1, 0] - T[:, 0, 0] - T[:, 1, 1]
            T[:, 0, 1] += np.maximum(0.0, -s) + rng.random(len(edges))
        return unary, edges, T
    return unary, edges, rng.random(len(edges)) * 2.0


def brute_force(unary, edges, pairwise, extra=None):
    n, L = unary.shape
    best, arg = np.inf, None
    for ys in itertools.product(range(L), repeat=n):
        y = np.array(ys)
        e = energy(unary, edges, pairwise, y) - (0.0 if extra is None else extra(y))
        if e < best - 1e-12:
            best, arg = e, y
    return arg, best


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("table", [False, True])
def test_binary_graphcut_equals_brute_force(seed, table):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 13))
    unary, edges, pw = random_graph(rng, n, table=table)
    y, e = binary_graphcut(unary, edges, pw)
    _, e_bf = brute_force(unary, edges, pw)
    assert e == pytest.approx(e_bf, abs=1e-9)
    assert e == pytest.approx(energy(unary, edges, pw, y))


@pytest.mark.parametrize("seed", range(8))
def test_loss_augmented_equals_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 12))
    unary, edges, pw = random_graph(rng, n)
    y_true = rng.integers(0, 2, n)
    w = rng.random(n) * 2 if seed % 2 else np.ones(n)
    y, e, loss = loss_augmented_graphcut(unary, edges, pw, y_true, node_loss=w)
    _, best = brute_force(unary, edges, pw, extra=lambda z: float(w[z != y_true].sum()))
    assert e - loss == pytest.approx(best, abs=1e-9)
    assert loss == pytest.approx(float(w[y != y_true].sum()))


def test_components_are_solved_together():
    rng = np.random.default_rng(3)
    u1, e1, p1 = random_graph(rng, 6)
    u2, e2, p2 = random_graph(rng, 5)
    y1, _ = binary_graphcut(u1, e1, p1)
    y2, _ = binary_graphcut(u2, e2, p2)
    y, _ = binary_graphcut(np.vstack([u1, u2]), np.vstack([e1, e2 + 6]), np.concatenate([p1, p2]))
    assert energy(u1, e1, p1, y[:6]) == pytest.approx(energy(u1, e1, p1, y1))
    assert energy(u2, e2, p2, y[6:]) == pytest.approx(energy(u2, e2, p2, y2))


def test_non_submodular_raises():
    unary = np.zeros((2, 2))
    with pytest.raises(ValueError, match="submodular"):
        binary_graphcut(unary, np.array([[0, 1]]), np.array([-1.0]))


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match="pairwise"):
        binary_graphcut(np.zeros((3, 2)), np.array([[0, 1]]), np.ones(2))
    with pytest.raises(ValueError, match="endpoints"):
        binary_graphcut(np.zeros((3, 2)), np.array([[0, 3]]), np.ones(1))
    with pytest.raises(ValueError, match="y_true"):
        loss_augmented_graphcut(np.zeros((3, 2)), np.zeros((0, 2)), np.zeros(0), [0, 1])


@pytest.mark.parametrize("seed", range(6))
def test_alpha_expansion_binary_is_exact(seed):
    rng = np.random.default_rng(200 + seed)
    unary, edges, pw = random_graph(rng, 9)
    _, e = alpha_expansion(unary, edges, pw, init=np.zeros(9, dtype=np.int64))
    _, e_bf = brute_force(unary, edges, pw)
    assert e == pytest.approx(e_bf, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("table", [False, True])
def test_alpha_expansion_never_increases_energy(seed, table):
    rng = np.random.default_rng(300 + seed)
    n, L = 8, 3
    unary, edges, pw = random_graph(rng, n, L=L, table=table)
    init = rng.integers(0, L, n)
    y, e = alpha_expansion(unary, edges, pw, init=init)
    assert e <= energy(unary, edges, pw, init) + 1e-12
    assert e == pytest.approx(energy(unary, edges, pw, y))
    if not table:  # Potts with w >= 0 is metric: within factor 2 of the optimum
        _, e_bf = brute_force(unary, edges, pw)
        assert e >= e_bf - 1e-9
