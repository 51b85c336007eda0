"""ChainTask with StructBoost: weak learners on positions and label-pair indicators,
checked against brute-force enumeration of every labelling of tiny chains."""

import itertools

import numpy as np
import pytest

import maxmargin
from data_makers import make_chain_data
from maxmargin import StructBoost, StructSVM
from maxmargin.tasks.chain import ChainTask
from maxmargin.weak import DecisionStump

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _score(U, P, y, transitions=True):
    s = sum(U[t, y[t]] for t in range(len(y)))
    if transitions:
        s += sum(P[y[t], y[t + 1]] for t in range(len(y) - 1))
    return s


def _brute(task, F):
    """Per sequence: max over all labellings of Delta + s(y') - s(y) (and its argmax)."""
    N, K = len(task.y_), len(task.classes_)
    U = F[:N, :K]
    P = F[N:, K].reshape(K, K) if task.transitions else np.zeros((K, K))
    best, arg = [], []
    for a, b in itertools.pairwise(task.offsets_):
        yt = task.y_[a:b]
        cands = list(itertools.product(range(K), repeat=b - a))
        vals = [
            np.sum(np.array(c) != yt)
            + _score(U[a:b], P, c, task.transitions)
            - _score(U[a:b], P, yt, task.transitions)
            for c in cands
        ]
        best.append(max(vals))
        arg.append(cands[int(np.argmax(vals))])
    return np.array(best), arg


@pytest.mark.parametrize("transitions", [True, False])
def test_oracle_and_cut_match_enumeration(transitions):
    X, y = make_chain_data(n=7, K=3, d=2, seed=4)
    task = ChainTask(transitions=transitions).bind(X, y)
    rng = np.random.default_rng(0)
    F = rng.normal(size=(task.weak_inputs().shape[0], task.n_slots))
    orc = task.most_violated(F)
    best, _ = _brute(task, F)
    np.testing.assert_allclose(orc.loss - orc.margin, best, atol=1e-12)
    cut = task.one_slack_cut(F)
    # the plane at the point it was found for is the mean hinge there
    assert task.cut_value(F, cut) == pytest.approx(np.mean(np.maximum(best, 0.0)))
    # a column's plane coefficient (gains of the weak weights) is the brute-force
    # sum_i c_i [psi(x_i, y_i) - psi(x_i, yhat_i)] of the joint feature definition
    Z = task.weak_inputs()
    stumps, _ = DecisionStump().best(DecisionStump().prepare(Z), rng.normal(size=(Z.shape[0], 4)))
    H = stumps.evaluate(Z)  # (n_hyp, n_z)
    A = task.weak_weights(cut.pairs)
    N, K = len(task.y_), len(task.classes_)
    c = (orc.hinge > 0) / task.n_samples
    for h in range(len(stumps)):
        for s in range(task.n_slots):
            direct = 0.0
            for i, (a, b) in enumerate(itertools.pairwise(task.offsets_)):
                yt, yh = task.y_[a:b], orc.label[a:b]
                for lab, sign in ((yt, 1.0), (yh, -1.0)):
                    if s < K:
                        psi = sum(H[h, a + t] for t in range(b - a) if lab[t] == s)
                    else:
                        psi = sum(H[h, N + lab[t] * K + lab[t + 1]] for t in range(b - a - 1))
                    direct += sign * c[i] * psi
            assert H[h] @ A[:, s] == pytest.approx(direct, abs=1e-12)


@pytest.mark.parametrize("master", ["exact", "fast"])
def test_structboost_chain_objective_by_enumeration(master):
    X, y = make_chain_data(n=12, K=3, d=3, seed=1)
    sb = StructBoost(
        task=ChainTask(),
        C=20.0,
        eps_cp=1e-4,
        max_iter=100,
        random_state=0,
        master=master,
        gap_tol=1e-3,
    ).fit(X, y)
    task = sb.task_
    F = sb.hypotheses_.evaluate(task.weak_inputs()).T @ sb.slot_weights_
    best, _ = _brute(task, F)
    primal = np.abs(sb.slot_weights_).sum() + 20.0 * np.mean(np.maximum(best, 0.0))
    assert sb.history_[-1]["objective"] == pytest.approx(primal, rel=1e-6)
    if master == "exact":  # the LP optimum, certified
        assert sb.converged_ and sb.history_[-1]["gap"] < 1e-3
    else:  # the smoothing continuation: a certified gap of at most gap_tol
        assert sb.history_[-1]["gap"] <= 1e-3 * (1 + 1e-9)
        assert sb.history_[-1]["dual_bound"] <= sb.history_[-1]["objective"]
    # prediction is Viterbi: the enumerated argmax of w.Psi on the training inputs
    pred = sb.predict(X)
    N, K = len(task.y_), len(task.classes_)
    U, P = F[:N, :K], F[N:, K].reshape(K, K)
    for (a, b), p in zip(itertools.pairwise(task.offsets_), pred):
        brute = max(itertools.product(range(K), repeat=b - a), key=lambda c: _score(U[a:b], P, c))
        assert _score(U[a:b], P, p) == pytest.approx(_score(U[a:b], P, brute))


def test_structboost_chain_learns_and_saves(tmp_path):
    X, y = make_chain_data(n=60, K=3, d=4, seed=0)
    Xt, yt = make_chain_data(n=100, K=3, d=4, seed=9)
    sb = StructBoost(task=ChainTask(), C=10.0, max_iter=40, random_state=0).fit(X, y)
    base = ChainTask(transitions=False).bind(Xt, yt)
    err = base.hamming(yt, sb.predict(Xt))
    svm = StructSVM(task=ChainTask(), C=10.0).fit(X, y)
    assert err < 0.1 and err <= base.hamming(yt, svm.predict(Xt)) + 0.03
    assert sb.slot_weights_[:, -1].any()  # transition weak learners were used
    path = tmp_path / "chain.mm.npz"
    maxmargin.save(sb, path)
    sb2 = maxmargin.load(path)
    for p, q in zip(sb.predict(Xt), sb2.predict(Xt)):
        assert np.array_equal(p, q)
    with pytest.raises(ValueError, match="features"):
        sb.predict([x[:, :2] for x in Xt])


def test_structboost_chain_n_jobs_bit_for_bit():
    X, y = make_chain_data(n=30, K=3, d=20, seed=2)
    kw = dict(task=ChainTask(), C=10.0, max_iter=15, random_state=0)
    a = StructBoost(**kw).fit(X, y)
    b = StructBoost(**kw, n_jobs=2).fit(X, y)
    assert np.array_equal(a.slot_weights_, b.slot_weights_)
    assert np.array_equal(a.hypotheses_.feature, b.hypotheses_.feature)


@pytest.mark.parametrize("master", ["fast", "exact"])
def test_structboost_chain_oracle_on_threads_bit_for_bit(monkeypatch, master):
    """With n_jobs the chain oracle (Viterbi, forward-backward) runs over fixed shards
    of the sequences on numba threads: the fit equals the serial one bit for bit."""
    import numba

    import maxmargin.tasks.chain as chain_mod

    monkeypatch.setattr(ChainTask, "_PARALLEL_WORK", 0)  # threads even for tiny data
    seen = []
    for name in ("sharded_chain_forward", "sharded_loss_augmented"):
        kernel = getattr(chain_mod, name)

        def spy(*args, _k=kernel):
            seen.append(numba.get_num_threads())
            return _k(*args)

        monkeypatch.setattr(chain_mod, name, spy)
    X, y = make_chain_data(n=40, K=3, d=12, seed=5)
    kw = dict(task=ChainTask(), C=10.0, max_iter=12, master=master, random_state=0)
    a = StructBoost(**kw).fit(X, y)
    assert set(seen) == {1}
    seen.clear()
    b = StructBoost(**kw, n_jobs=2).fit(X, y)
    assert set(seen) == {min(2, numba.config.NUMBA_NUM_THREADS)}
    assert np.array_equal(a.slot_weights_, b.slot_weights_)
    assert np.array_equal(a.hypotheses_.feature, b.hypotheses_.feature)
    assert a.objective_ == b.objective_


def _brute_smooth(task, F, beta):
    """Mean over sequences of (1/beta) log sum_z exp(beta (Delta + s(z) - s(y))) and the
    expected Hamming loss under the Gibbs distribution, by enumeration."""
    N, K = len(task.y_), len(task.classes_)
    U = F[:N, :K]
    P = F[N:, K].reshape(K, K) if task.transitions else np.zeros((K, K))
    vals, exp_loss = [], []
    for a, b in itertools.pairwise(task.offsets_):
        yt = task.y_[a:b]
        cands = list(itertools.product(range(K), repeat=b - a))
        loss = np.array([np.sum(np.array(c) != yt) for c in cands], dtype=float)
        v = np.array(
            [
                loss[j]
                + _score(U[a:b], P, c, task.transitions)
                - _score(U[a:b], P, yt, task.transitions)
                for j, c in enumerate(cands)
            ]
        )
        mx = v.max()
        lse = mx + np.log(np.exp(beta * (v - mx)).sum()) / beta
        p = np.exp(beta * (v - lse))
        vals.append(lse)
        exp_loss.append(p @ loss)
    return float(np.mean(vals)), float(np.mean(exp_loss))


@pytest.mark.parametrize("transitions", [True, False])
def test_smoothed_risk_matches_enumeration_and_its_gradient(transitions):
    X, y = make_chain_data(n=6, K=3, d=2, seed=2)
    task = ChainTask(transitions=transitions).bind(X, y)
    rng = np.random.default_rng(1)
    F = rng.normal(size=(task.weak_inputs().shape[0], task.n_slots))
    beta = 1.7
    sr = task.smoothed_risk(F, beta)
    smooth, exp_loss = _brute_smooth(task, F, beta)
    best, _ = _brute(task, F)
    assert sr.smooth == pytest.approx(smooth, rel=1e-10)
    assert sr.dual == pytest.approx(exp_loss, rel=1e-10)
    assert sr.risk == pytest.approx(np.mean(np.maximum(best, 0.0)), rel=1e-12)
    assert sr.risk <= sr.smooth + 1e-12  # the log-sum-exp bounds the hinge from above
    # d smooth / dF = -A, by central differences on every used entry of F
    used = [(r, c) for r in range(F.shape[0]) for c in range(F.shape[1])]
    for r, c in used[:: max(1, len(used) // 40)]:
        E = np.zeros_like(F)
        E[r, c] = 1e-6
        num = (_brute_smooth(task, F + E, beta)[0] - _brute_smooth(task, F - E, beta)[0]) / 2e-6
        assert -sr.weights[r, c] == pytest.approx(num, abs=1e-6)
    # sharp smoothing approaches the hinge
    assert task.smoothed_risk(F, 200.0).smooth == pytest.approx(sr.risk, abs=0.05)


def test_fast_master_reaches_the_exact_masters_optimum_on_chains():
    X, y = make_chain_data(n=12, K=3, d=3, seed=7)
    kw = dict(task=ChainTask(), C=20.0, max_iter=15, random_state=0)
    fast = StructBoost(master="fast", **kw).fit(X, y)
    exact = StructBoost(master="exact", **kw).fit(X, y)
    assert fast.master_ == "fast" and StructBoost(**kw).fit(X, y).master_ == "fast"
    # both certified optima over their columns; the final objectives agree closely
    assert fast.objective_ == pytest.approx(exact.objective_, rel=0.05)
    pred = fast.predict(X)
    acc = np.mean(np.concatenate(pred) == np.concatenate(y))
    assert acc > 0.8


def test_fast_master_chain_converges_after_the_continuation_certificate():
    """Once the smoothing continuation certifies its gap, pricing must not re-add the
    columns it accepted as optimal (gains within CONTINUATION_GAIN_TOL of 1): the fit
    ends converged, not at max_iter / a misreported max_time."""
    X, y = make_chain_data(n=12, K=3, d=3, seed=2)
    sb = StructBoost(task=ChainTask(), C=20.0, max_iter=100, random_state=0, gap_tol=1e-3).fit(X, y)
    assert sb.converged_
    assert sb.n_iter_ < 100
    last = sb.history_[-1]
    assert last["certified"] and last["gap"] <= 1e-3
    assert last["dual_bound"] <= last["objective"]
