"""Sharded CRF oracle (graph cuts per shard on workers): parallel == serial, bit for bit,
and the sharded answers equal the single-process oracle of CRFLinearModel."""

import joblib
import numba
import numpy as np
import pytest

from data_makers import brute_force_crf_hinges, make_graphs
from maxmargin import StructSVM
from maxmargin.solvers.parallel import ShardedOracle
from maxmargin.solvers.ssvm import solve_ssvm
from maxmargin.tasks.crf import CRFTask

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def crf_data():
    return make_graphs(np.random.default_rng(11), 40, h=5, w=6, noise=1.5)


@pytest.fixture(scope="module")
def crf_model(crf_data):
    X, Y = crf_data
    return CRFTask(loss="area").bind(X, Y).linear_model()


def test_sharded_crf_oracle_equals_batch_oracle(crf_model):
    m = crf_model
    rng = np.random.default_rng(0)
    w_fit = solve_ssvm(m, 10.0, "1-slack", max_iter=30).w
    n_active = n_inactive = 0
    for scale in (0.3, 1.0, 1.5, 2.0, 3.0, 30.0):
        w = scale * w_fit + 0.05 * rng.normal(size=m.dim)
        labels, loss, margin = m.loss_augmented(w)
        with ShardedOracle(m, n_jobs=1, n_shards=7) as orc:
            r = orc.run(w, plane=True)
        assert np.array_equal(r.labels, labels)
        np.testing.assert_allclose(r.loss, loss, rtol=1e-12)
        np.testing.assert_allclose(r.margin, margin, rtol=1e-10, atol=1e-10)
        active = np.maximum(0.0, loss - margin) > 0
        n_active += int(active.sum())
        n_inactive += int((~active).sum())
        np.testing.assert_allclose(r.a, m.plane(labels, active.astype(float)), atol=1e-9)
        assert r.b == pytest.approx(float(np.sum(loss[active])))
        assert r.hinge_sum == pytest.approx(float(np.sum(np.maximum(0.0, loss - margin))))
    assert n_active > 0 and n_inactive > 0  # the violator selection was exercised


# the whole fit over loky processes (about 10 s of one worker, an end-to-end run) is in
# `make test-slow`; the threading case checks the same sharded fit, the shard function the
# worker processes run is test_crf_threaded_shards_equal_one_shard_problems's, and the loky
# placement itself is test_parallel_oracle.py's loky cases'
@pytest.mark.parametrize("backend", [pytest.param("loky", marks=pytest.mark.slow), "threading"])
def test_crf_ssvm_parallel_equals_serial(crf_model, backend):
    kw = dict(max_iter=15, tol=0.0)
    serial = solve_ssvm(crf_model, 10.0, "1-slack", n_jobs=1, **kw)
    with joblib.parallel_config(backend=backend):
        par = solve_ssvm(crf_model, 10.0, "1-slack", n_jobs=2, **kw)
        par3 = solve_ssvm(crf_model, 10.0, "1-slack", n_jobs=3, **kw)
    assert len(serial.history) == len(par.history) == 15
    assert np.array_equal(serial.w, par.w) and np.array_equal(serial.w, par3.w)
    assert [h["primal"] for h in serial.history] == [h["primal"] for h in par.history]


def test_crf_struct_svm_n_jobs_fit(crf_data):
    X, Y = crf_data
    kw = dict(task=CRFTask(), C=10.0, solver="1-slack", max_iter=40)
    a = StructSVM(**kw, n_jobs=1).fit(X, Y)
    b = StructSVM(**kw, n_jobs=2).fit(X, Y)
    ref = StructSVM(**kw).fit(X, Y)  # the single-process path: the same problem
    assert np.array_equal(a.coef_, b.coef_)
    # both certificates bracket the same optimum (the graph-cut oracle is exact only for
    # non-negative cut weights, so neither need close its gap: CRFLinearModel)
    assert a.dual_objective_ <= ref.objective_ * (1 + 1e-12)
    assert ref.dual_objective_ <= a.objective_ * (1 + 1e-12)
    pred = b.predict(X)
    assert b.task_.hamming(Y, pred) < 0.2
    with pytest.raises(ValueError, match="margin"):
        solve_ssvm(a.task_.linear_model(), 1.0, "1-slack", rescaling="slack", n_jobs=1)


def test_structboost_crf_oracle_sharded_equals_serial(crf_data, monkeypatch):
    """StructBoost's own oracle on CRFTask (graph cuts per shard of images on the
    workers, energies from the slot scores): the sharded answers equal the single graph
    cut, and every integer n_jobs gives the same model bit for bit."""
    from maxmargin import StructBoost
    from maxmargin.weak.nonneg import NonNegative

    X, Y = crf_data
    task = CRFTask().bind(X, Y)
    rng = np.random.default_rng(3)
    F = np.abs(rng.normal(size=(len(task.weak_inputs()), 2)))
    serial = task.most_violated(F)
    with ShardedOracle(task.linear_model(), n_jobs=1, n_shards=7) as orc:
        task.attach_sharded_oracle(orc)
        try:
            sharded = task.most_violated(F)
        finally:
            task.attach_sharded_oracle(None)
    assert np.array_equal(sharded.label, serial.label)
    np.testing.assert_allclose(sharded.loss, serial.loss, rtol=1e-12)
    np.testing.assert_allclose(sharded.margin, serial.margin, rtol=1e-10, atol=1e-12)
    kw = dict(task=CRFTask(), weak_learner=NonNegative("stump"), C=10.0, max_iter=8,
              random_state=0)  # fmt: skip
    calls = []
    run = ShardedOracle.run_energies
    monkeypatch.setattr(
        ShardedOracle, "run_energies", lambda self, *a: calls.append(1) or run(self, *a)
    )
    fits = [StructBoost(**kw, n_jobs=n).fit(X, Y) for n in (1, 2, 3)]
    assert len(calls) >= 3 * 8  # the oracle really ran sharded, every iteration
    for other in fits[1:]:
        assert np.array_equal(other.slot_weights_, fits[0].slot_weights_)
        assert [h["objective"] for h in other.history_] == [
            h["objective"] for h in fits[0].history_
        ]
    assert getattr(fits[0].task_, "_sharded_oracle", None) is None  # detached after fit
    ref = StructBoost(**kw).fit(X, Y)  # n_jobs=None: one graph cut over all images
    assert fits[0].objective_ == pytest.approx(ref.objective_, rel=1e-6)


def test_crf_default_runs_on_numba_threads(crf_model):
    """Without a joblib backend chosen, the CRF shards run in one numba kernel (our
    max-flow releases the GIL): no worker processes, no shard files."""
    with ShardedOracle(crf_model, n_jobs=2) as orc:
        assert orc.backend_kind == "numba"
        assert orc._session.parallel is None and orc._folder is None
        assert orc.threads == min(2, numba.config.NUMBA_NUM_THREADS)
    with joblib.parallel_config(backend="loky"), ShardedOracle(crf_model, n_jobs=2) as orc:
        assert orc.backend_kind == "files"


def test_crf_threaded_shards_equal_one_shard_problems(crf_model):
    """The kernel over all shards gives, bit for bit, what each shard gives alone (the
    worker-process path) and the same for every thread count; its labels minimise the
    loss-augmented energy (checked against the PyMaxflow graph cut of each image)."""
    from maxmargin.inference._threads import numba_threads
    from maxmargin.inference.graphcut import loss_augmented_graphcut
    from maxmargin.solvers.parallel import shard_bounds, tree_sum
    from maxmargin.tasks.crf import CRFShardedCuts, crf_shard_oracle

    m = crf_model
    rng = np.random.default_rng(4)
    w = solve_ssvm(m, 10.0, "1-slack", max_iter=20).w + 0.3 * rng.normal(size=m.dim)
    bounds = shard_bounds(m.n_samples, 7)
    cuts = m.sharded_cuts(bounds)
    lab, loss, margin, planes = cuts.run(w, True, threads=1)
    for threads in (2, 3):
        with numba_threads(threads):  # capped at NUMBA_NUM_THREADS
            again = cuts.run(w, True, threads=threads)
        for x, z in zip((lab, loss, margin, planes), again, strict=True):
            assert np.array_equal(x, z)
    st, t = m.st, m.task
    for c in range(len(bounds) - 1):
        a, b = int(bounds[c]), int(bounds[c + 1])
        n0, n1 = int(st.node_off[a]), int(st.node_off[b])
        one = crf_shard_oracle(CRFShardedCuts.from_shard(m.shard(a, b)), w, True)
        assert np.array_equal(one[0], lab[n0:n1])
        assert np.array_equal(one[1], loss[a:b]) and np.array_equal(one[2], margin[a:b])
        assert np.array_equal(one[3], planes[c])
    Eu, Ep = m.energies(w)
    for i in range(m.n_samples):
        n0, n1 = int(st.node_off[i]), int(st.node_off[i + 1])
        e0, e1 = int(st.edge_off[i]), int(st.edge_off[i + 1])
        _, e_ref, l_ref = loss_augmented_graphcut(
            Eu[n0:n1], st.edges[e0:e1] - n0, np.maximum(Ep[e0:e1], 0.0), t.y_[n0:n1],
            node_loss=t.lw_[n0:n1], backend="pymaxflow",
        )  # fmt: skip
        yi = lab[n0:n1]
        cut = yi[st.edges[e0:e1, 0] - n0] != yi[st.edges[e0:e1, 1] - n0]
        e_ours = Eu[np.arange(n0, n1), yi].sum() + np.maximum(Ep[e0:e1], 0.0)[cut].sum()
        assert e_ours - loss[i] <= e_ref - l_ref + 1e-9
    # the planes summed along the tree are the plane of the violators
    ab = tree_sum(lambda k: planes[k], 0, len(planes))
    active = (loss - margin > 0).astype(float)
    np.testing.assert_allclose(ab[:-3], m.plane(lab, active), atol=1e-9)
    assert ab[-3] == pytest.approx(float(loss[active > 0].sum()))
    assert ab[-2] == pytest.approx(float(np.maximum(0.0, loss - margin).sum()))
    hinge = np.maximum(0.0, loss - margin)  # the slack of the hinges' upper bound
    assert ab[-1] == pytest.approx(float(np.sum(m.hinge_upper_bound(w, lab, hinge) - hinge)))


def test_crf_struct_svm_threads_bit_identical(crf_data):
    """StructSVM(CRFTask) 1-slack on numba threads: n_jobs 1, 2, 3 and -1 give the same
    model bit for bit (the default backend, no joblib)."""
    X, Y = crf_data
    kw = dict(task=CRFTask(loss="area"), C=10.0, solver="1-slack", max_iter=25, tol=0.0)
    fits = [StructSVM(**kw, n_jobs=n).fit(X, Y) for n in (1, 2, 3, -1)]
    for f in fits[1:]:
        assert np.array_equal(f.coef_, fits[0].coef_)
        assert f.objective_ == fits[0].objective_


def test_crf_sharded_risk_bound_equals_serial():
    """Where some cut weight is negative the graph cut is inexact, and the 1-slack solver
    certifies with an upper bound of the risk.  The sharded plane-only path (no labels
    leave the workers) must offer the serial path's bound, hinge_upper_bound -- the
    oracle's hinges plus the negative cut weights each labelling leaves uncut -- not a
    looser one (it added every negative cut weight, so StructSVM(CRFTask) reported
    0.312 with n_jobs and 0.151 without on crf_data, and, the primal choosing the best
    point and the in-out centre, returned a different model).  Checked on 2 x 3 grids
    against the true hinges by enumeration, on both the numba and the worker paths."""
    from maxmargin.solvers import parallel
    from maxmargin.solvers.parallel import ShardedModel
    from maxmargin.tasks.crf import CRFGraph

    X, Y = make_graphs(np.random.default_rng(5), 6, h=2, w=3, noise=1.5)
    # pairwise features of both signs: cut weights of both signs
    X = [CRFGraph(g.unary, g.edges, g.pairwise - 0.6, g.area) for g in X]
    m = CRFTask().bind(X, Y).linear_model()
    rng = np.random.default_rng(1)
    n_slack = n_neg_cut = 0
    for _ in range(12):
        w = rng.normal(size=m.dim)
        lab, loss, margin = m.loss_augmented(w)
        hinge = np.maximum(0.0, loss - margin)
        serial = m.hinge_upper_bound(w, lab, hinge)
        true = brute_force_crf_hinges(X, Y, w, m.d_u)
        assert np.all(true <= serial + 1e-12)  # the serial bound is a bound
        with ShardedOracle(m, n_jobs=1, n_shards=4) as orc:
            risk = ShardedModel(m, orc).one_slack_plane_only(w)[2]
            # the same sums in another order: equal to rounding (terms O(1), 6 images)
            assert risk == pytest.approx(float(serial.mean()), rel=1e-12, abs=1e-12)
            assert true.mean() <= risk + 1e-12
            r = orc.run(w, plane=True, examples=False)
            # the worker processes' function on the same shards: the same bits
            node = parallel._run_node(orc._worker_shards(), 0, w, False, True, None, False)
            assert np.array_equal(orc._unpack(node[3])[0], r.a)
            assert orc._unpack(node[3])[1:] == (r.b, r.hinge_sum, r.hinge_slack)
        assert r.hinge_sum == pytest.approx(float(hinge.sum()), rel=1e-12, abs=1e-12)
        assert r.hinge_sum + r.hinge_slack == pytest.approx(
            float(serial.sum()), rel=1e-12, abs=1e-12
        )
        c = m.st.V @ w[m.d_u :]
        cut = lab[m.st.edges[:, 0]] != lab[m.st.edges[:, 1]]
        n_slack += r.hinge_slack > 0
        n_neg_cut += bool(np.any(cut & (c < 0)))  # where "every negative weight" is looser
    assert n_slack > 0 and n_neg_cut > 0  # both cases exercised


@pytest.mark.parametrize("loss", ["area", "hamming"])
def test_crf_struct_svm_n_jobs_certifies_as_serial(crf_data, loss):
    """The case that showed it (crf_data, 1-slack, C=10, max_iter=30; area loss: 0.312
    with n_jobs, 0.151 without): each fit's objective_ is the serial certificate at its
    coef_, so n_jobs and n_jobs=None certify every point alike.  (The second pairwise
    column shifted by -0.6 takes both signs, so the task leaves its weight free and the
    cut weights can go negative: the inexact case, now that non-negative columns get
    w_j >= 0.)"""
    from maxmargin.tasks.crf import CRFGraph

    X, Y = crf_data
    X = [CRFGraph(g.unary, g.edges, g.pairwise - np.array([0.0, 0.6]), g.area) for g in X]
    kw = dict(task=CRFTask(loss=loss), C=10.0, solver="1-slack", max_iter=30)
    fits = {n: StructSVM(**kw, n_jobs=n).fit(X, Y) for n in (None, 1)}
    m = fits[None].task_.linear_model()

    def certificate(w):  # the serial path's primal at w
        lab, l_, mg = m.loss_augmented(w)
        return m.objective(w, 10.0, m.hinge_upper_bound(w, lab, np.maximum(0.0, l_ - mg)))

    for f in fits.values():
        assert not m.oracle_exact(f.coef_)  # the inexact case the bound is for
        assert f.objective_ == pytest.approx(certificate(f.coef_), rel=1e-12)
    for f in fits.values():
        w = f.coef_
        with ShardedOracle(m, n_jobs=1) as orc:
            r = orc.run(w, plane=True, examples=False)
        sharded = 0.5 * float(w @ w) + 10.0 * (r.hinge_sum + r.hinge_slack) / m.n_samples
        assert sharded == pytest.approx(certificate(w), rel=1e-12)
    # both certified brackets hold the same optimum
    assert fits[1].dual_objective_ <= fits[None].objective_ * (1 + 1e-12)
    assert fits[None].dual_objective_ <= fits[1].objective_ * (1 + 1e-12)


def test_crf_struct_svm_n_jobs_same_optimum_at_convergence(crf_data):
    """Where the graph cut is exact at the optimum (pairwise features without the constant
    column, so the learnt cut weights stay >= 0) both paths close their gaps, and since
    each certified bracket [dual, objective] holds the optimum, the two objectives agree
    within the larger gap: the same optimum along different iterates (n_jobs=None's BLAS
    products and the shards' fixed-order sums differ in the last bits)."""
    from maxmargin.tasks.crf import CRFGraph

    X, Y = crf_data
    X = [CRFGraph(g.unary, g.edges, g.pairwise[:, 1:], g.area) for g in X]
    tol = 1e-6
    kw = dict(task=CRFTask(loss="area"), C=10.0, solver="1-slack", max_iter=500, tol=tol)
    fits = [StructSVM(**kw, n_jobs=n).fit(X, Y) for n in (None, 1)]
    m = fits[0].task_.linear_model()
    for f in fits:
        assert m.oracle_exact(f.coef_)
        assert f.objective_ - f.dual_objective_ <= tol * f.objective_  # converged
    a, b = fits
    assert a.dual_objective_ <= b.objective_ * (1 + 1e-12)
    assert b.dual_objective_ <= a.objective_ * (1 + 1e-12)
    gap = max(f.objective_ - f.dual_objective_ for f in fits)
    assert abs(a.objective_ - b.objective_) <= gap * (1 + 1e-9)
