"""Viterbi, loss-augmented and slack-rescaled Viterbi against brute force."""

import itertools

import numpy as np
import pytest
from numba import njit

from maxmargin.inference._threads import numba_threads, resolve_threads
from maxmargin.inference.viterbi import (
    _loss_aug_into,
    _slack_into,
    batch_evaluate,
    batch_loss_augmented,
    batch_viterbi,
    chain_score,
    sequence_shards,
    sharded_chain_complete,
    sharded_chain_forward,
    sharded_loss_augmented,
    viterbi,
)


# single-sequence oracles: references for the batch kernels, used only here (the package
# runs the batched / fused kernels)
@njit
def loss_augmented_viterbi(U, P, ytrue, L):
    """``argmax_y sum_t L[y*_t, y_t] + s(y)`` and the augmented value."""
    out = np.empty(U.shape[0], dtype=np.int64)
    v = _loss_aug_into(U, P, ytrue, L, True, out)
    return out, v


@njit
def slack_viterbi(U, P, ytrue, L):
    """``argmax_y Delta(y*, y) (1 - s(y*) + s(y))`` and its value (>= 0; y* if none)."""
    out = np.empty(U.shape[0], dtype=np.int64)
    v = _slack_into(U, P, ytrue, L, True, out)
    return out, v


def forward_backward(U, P, offsets, ytrue, L, pairwise, beta, bounds):
    """The smoothed chain risk's path in ChainTask: the forward pass
    (:func:`sharded_chain_forward`), then :func:`sharded_chain_complete` (backward pass,
    signed weights, margin-rescaled Viterbi) on the shards ``bounds``; returns ``(fa,
    logz, marg, pair, A, dual, labels, loss, margin)``."""
    N, K = U.shape
    n = len(offsets) - 1
    fa, logz = np.empty((N, K)), np.empty(n)
    sharded_chain_forward(U, P, offsets, ytrue, L, pairwise, beta, fa, logz, bounds)
    marg, pair = np.empty((N, K)), np.full((K, K), np.nan)
    A, dual = np.full((N, K + 1), np.nan), np.empty(len(bounds) - 1)
    lab, loss, mar = np.empty(N, np.int64), np.empty(n), np.empty(n)
    sharded_chain_complete(
        (U, P, offsets, ytrue, L, pairwise), beta, fa, logz, 1.0 / n, (marg, pair, A, dual),
        (lab, loss, mar), bounds,
    )  # fmt: skip
    return fa, logz, marg, pair, A, dual, lab, loss, mar


def _all(T, K):
    return [np.array(y) for y in itertools.product(range(K), repeat=T)]


@pytest.mark.parametrize("seed", range(8))
def test_viterbi_brute_force(seed):
    rng = np.random.default_rng(seed)
    T, K = int(rng.integers(1, 6)), int(rng.integers(2, 4))
    U, P = rng.normal(size=(T, K)), rng.normal(size=(K, K))
    y, s = viterbi(U, P)
    scores = [chain_score(U, P, c) for c in _all(T, K)]
    assert np.isclose(s, max(scores))
    assert np.isclose(chain_score(U, P, y), max(scores))


@pytest.mark.parametrize("seed", range(8))
def test_loss_augmented_brute_force(seed):
    rng = np.random.default_rng(seed)
    T, K = int(rng.integers(1, 6)), int(rng.integers(2, 4))
    U, P = rng.normal(size=(T, K)), rng.normal(size=(K, K))
    L = rng.random((K, K)) * 2
    np.fill_diagonal(L, 0)
    yt = rng.integers(0, K, T)
    y, v = loss_augmented_viterbi(U, P, yt, L)
    vals = [L[yt, c].sum() + chain_score(U, P, c) for c in _all(T, K)]
    assert np.isclose(v, max(vals))
    assert np.isclose(L[yt, y].sum() + chain_score(U, P, y), max(vals))


@pytest.mark.parametrize("seed", range(10))
def test_slack_rescaled_brute_force(seed):
    rng = np.random.default_rng(seed)
    T, K = int(rng.integers(1, 6)), int(rng.integers(2, 4))
    U, P = rng.normal(size=(T, K)) * 0.5, rng.normal(size=(K, K)) * 0.5
    L = 1.0 - np.eye(K)
    yt = rng.integers(0, K, T)
    y, v = slack_viterbi(U, P, yt, L)
    st = chain_score(U, P, yt)
    vals = [L[yt, c].sum() * (1 - st + chain_score(U, P, c)) for c in _all(T, K)]
    best = max(max(vals), 0.0)
    assert np.isclose(v, best)
    assert np.isclose(max(L[yt, y].sum() * (1 - st + chain_score(U, P, y)), 0.0), best)


def test_batch_kernels_match_single():
    rng = np.random.default_rng(0)
    K = 3
    lengths = [1, 4, 2, 5]
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    N = offsets[-1]
    U, P = rng.normal(size=(N, K)), rng.normal(size=(K, K))
    yt = rng.integers(0, K, N)
    L = 1.0 - np.eye(K)
    for slack in (False, True):
        lab = np.empty(N, dtype=np.int64)
        loss, margin = np.empty(4), np.empty(4)
        batch_loss_augmented(U, P, offsets, yt, L, True, slack, lab, loss, margin)
        l2, m2 = np.empty(4), np.empty(4)
        batch_evaluate(U, P, offsets, yt, lab, L, True, l2, m2)
        np.testing.assert_allclose(loss, l2)
        np.testing.assert_allclose(margin, m2)
        for i, (a, b) in enumerate(itertools.pairwise(offsets)):
            f = slack_viterbi if slack else loss_augmented_viterbi
            y1, _ = f(U[a:b], P, yt[a:b], L)
            np.testing.assert_array_equal(lab[a:b], y1)
            assert np.isclose(
                margin[i], chain_score(U[a:b], P, yt[a:b]) - chain_score(U[a:b], P, y1)
            )
    lab = np.empty(N, dtype=np.int64)
    batch_viterbi(U, P, offsets, True, lab)
    for a, b in itertools.pairwise(offsets):
        np.testing.assert_array_equal(lab[a:b], viterbi(U[a:b], P)[0])


def _brute_gibbs(U, P, offsets, ytrue, L, pairwise, beta):
    """Enumerated log-partition, position and summed pair marginals of the loss-augmented
    Gibbs chain ``p(z) ~ exp(beta (Delta(y*, z) + s(z)))``, in stable log space."""
    N, K = U.shape
    logz, marg, pair = [], np.zeros((N, K)), np.zeros((K, K))
    for a, b in itertools.pairwise(offsets):
        zs = _all(b - a, K)
        v = np.array(
            [
                beta
                * (
                    sum(U[a + t, z[t]] + L[ytrue[a + t], z[t]] for t in range(b - a))
                    + (sum(P[z[t], z[t + 1]] for t in range(b - a - 1)) if pairwise else 0.0)
                )
                for z in zs
            ]
        )
        mx = v.max()
        lz = mx + np.log(np.exp(v - mx).sum())
        p = np.exp(v - lz)
        logz.append(lz)
        for z, pz in zip(zs, p):
            marg[a + np.arange(b - a), z] += pz
            for t in range(b - a - 1):
                pair[z[t], z[t + 1]] += pz if pairwise else 0.0
    return np.array(logz), marg, pair


@pytest.mark.parametrize("pairwise", [True, False])
@pytest.mark.parametrize("beta", [0.3, 2.0, 400.0])
def test_forward_backward_matches_enumeration(pairwise, beta):
    """The scaled forward-backward (sharded_chain_forward / sharded_chain_complete, one
    shard) equals enumeration, also at a sharp beta where the scaled sums underflow and
    the log-space fallback runs; the signed weights and the dual part are those of the
    enumerated marginals."""
    rng = np.random.default_rng(int(beta * 10) + pairwise)
    K = 3
    offsets = np.array([0, 1, 4, 8, 10], dtype=np.int64)
    N = int(offsets[-1])
    U = rng.normal(size=(N, K)) * 3.0
    P = rng.normal(size=(K, K)) * 3.0
    ytrue = rng.integers(0, K, size=N)
    L = 1.0 - np.eye(K)
    lz_b, marg_b, pair_b = _brute_gibbs(U, P, offsets, ytrue, L, pairwise, beta)
    n = len(offsets) - 1
    one = np.array([0, n], dtype=np.int64)
    _, logz, marg, pair, A, dual, *_ = forward_backward(
        U, P, offsets, ytrue, L, pairwise, beta, one
    )
    np.testing.assert_allclose(logz, lz_b, rtol=1e-12)
    np.testing.assert_allclose(marg, marg_b, atol=1e-10)
    np.testing.assert_allclose(pair, pair_b, atol=1e-10)
    onehot = np.eye(K)[ytrue]
    np.testing.assert_allclose(A[:, :K], (onehot - marg_b) / n, atol=1e-10)
    assert not A[:, K:].any()
    assert dual[0] == pytest.approx(np.sum(marg_b * L[ytrue]) / n, abs=1e-10)


def test_sequence_shards_cover_every_sequence_once():
    offsets = np.array([0, 5, 6, 20, 21, 22, 40], dtype=np.int64)
    for S in (1, 2, 3, 64):
        b = sequence_shards(offsets, S)
        assert b[0] == 0 and b[-1] == 6 and np.all(np.diff(b) > 0)
        assert len(b) - 1 <= min(S, 6)
    # balanced by positions (20 + 20), not by sequences (3 + 3 happens to agree here)
    assert list(sequence_shards(offsets, 2)) == [0, 3, 6]
    assert list(sequence_shards(np.array([0, 30, 31, 32, 33, 40]), 2)) == [0, 1, 5]


@pytest.mark.parametrize("pairwise", [True, False])
@pytest.mark.parametrize("beta", [0.3, 400.0])
@pytest.mark.parametrize("slack", [False, True])
def test_sharded_kernels_equal_enumeration_for_any_thread_count(pairwise, beta, slack):
    """The sharded (numba-thread) chain kernels that ChainTask's oracle runs give on four
    shards the answers of one shard (and of the batch kernel, loss-augmented inference)
    -- per-sequence outputs bit for bit, the transition marginals (summed per shard, then
    over shards) to rounding -- and bit-identical answers for one and two threads."""
    rng = np.random.default_rng(7 + pairwise)
    K = 3
    lens = rng.integers(1, 6, size=9)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    N = int(offsets[-1])
    U = rng.normal(size=(N, K)) * 3.0
    P = rng.normal(size=(K, K)) * 3.0
    ytrue = rng.integers(0, K, size=N)
    L = 1.0 - np.eye(K)
    n = len(lens)
    one = np.array([0, n], dtype=np.int64)
    fa, logz, marg, pair, A, _, lab_m, loss_m, mar_m = forward_backward(
        U, P, offsets, ytrue, L, pairwise, beta, one
    )
    lab, loss, mar = np.empty(N, np.int64), np.empty(n), np.empty(n)
    batch_loss_augmented(U, P, offsets, ytrue, L, pairwise, slack, lab, loss, mar)
    lz_b, marg_b, pair_b = _brute_gibbs(U, P, offsets, ytrue, L, pairwise, beta)
    answers = []
    for threads in (1, 2):
        bounds = sequence_shards(offsets, 4)
        with numba_threads(threads):
            fa2, logz2, marg2, pair2, A2, _, lab3, loss3, mar3 = forward_backward(
                U, P, offsets, ytrue, L, pairwise, beta, bounds
            )
            lab2, loss2, mar2 = np.empty(N, np.int64), np.empty(n), np.empty(n)
            sharded_loss_augmented(
                U, P, offsets, ytrue, L, pairwise, slack, lab2, loss2, mar2, bounds
            )
        np.testing.assert_array_equal(fa2, fa)
        np.testing.assert_array_equal(logz2, logz)
        np.testing.assert_array_equal(marg2, marg)
        np.testing.assert_allclose(pair2, pair, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(pair2, pair_b, atol=1e-10)
        np.testing.assert_allclose(marg2, marg_b, atol=1e-10)
        np.testing.assert_allclose(logz2, lz_b, rtol=1e-12)
        np.testing.assert_array_equal(lab2, lab)
        np.testing.assert_array_equal(loss2, loss)
        np.testing.assert_array_equal(mar2, mar)
        np.testing.assert_array_equal(A2, A)
        for got, want in ((lab3, lab_m), (loss3, loss_m), (mar3, mar_m)):
            np.testing.assert_array_equal(got, want)  # the fused margin-rescaled Viterbi
        answers.append((fa2, logz2, marg2, pair2, A2, lab2, loss2, mar2, lab3))
    for a, b in zip(*answers):
        np.testing.assert_array_equal(a, b)


def test_resolve_threads():
    import numba

    cap = numba.config.NUMBA_NUM_THREADS
    assert resolve_threads(None) == 1
    assert resolve_threads(1) == 1
    assert resolve_threads(-1) == cap
    assert resolve_threads(10**6) == cap
    assert resolve_threads(0) == 1
