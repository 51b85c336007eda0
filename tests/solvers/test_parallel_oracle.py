"""Sharded loss-augmented oracle (solvers/parallel.py): parallel == serial, bit for bit.

Process pools are started once per session by joblib (loky reuses its executor), so
these tests share one pool of two workers.
"""

import contextlib
import os

import joblib
import numba
import numpy as np
import pytest

from data_makers import make_chain_data
from maxmargin import LatentSSVM, SSVMClassifier, StructSVM
from maxmargin.exceptions import ParallelFitError
from maxmargin.solvers import parallel
from maxmargin.solvers.parallel import ShardedOracle, shard_bounds
from maxmargin.solvers.ssvm import SOLVERS, solve_ssvm
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.linear import rescaled_hinge

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def chain_model():
    X, y = make_chain_data(n=90, K=4, d=5, seed=3)
    return ChainTask().bind(X, y).linear_model()


def test_shard_bounds_depend_on_n_only():
    b = shard_bounds(1000)
    assert b[0] == 0 and b[-1] == 1000 and len(b) == parallel.DEFAULT_N_SHARDS + 1
    assert np.all(np.diff(b) >= 15)
    assert np.array_equal(shard_bounds(5), np.arange(6))  # at most one shard per example
    with pytest.raises(ValueError):
        shard_bounds(10, 0)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_sharded_oracle_equals_batch_oracle(chain_model, rescaling):
    """Per-shard answers reduce to the batch oracle's labels / losses / margins and to
    the 1-slack plane of the violators (to rounding: the plane is summed differently)."""
    m = chain_model
    w = np.random.default_rng(0).normal(size=m.dim)
    labels, loss, margin = m.loss_augmented(w, rescaling)
    with ShardedOracle(m, n_jobs=1, n_shards=7) as orc:
        r = orc.run(w, rescaling, plane=True)
    assert np.array_equal(r.labels, labels)
    np.testing.assert_allclose(r.loss, loss)
    np.testing.assert_allclose(r.margin, margin, atol=1e-10)
    active = rescaled_hinge(loss, margin, rescaling) > 0
    coef = np.where(active, loss if rescaling == "slack" else 1.0, 0.0)
    np.testing.assert_allclose(r.a, m.plane(labels, coef), atol=1e-9)
    assert r.b == pytest.approx(float(np.sum(loss[active])))
    # the plane alone (1-slack without an output cache): nothing per example comes back
    with ShardedOracle(m, n_jobs=1, n_shards=7) as orc:
        r2 = orc.run(w, rescaling, plane=True, examples=False)
    assert r2.labels is None and r2.loss is None
    assert np.array_equal(r2.a, r.a) and r2.b == r.b
    hinge = rescaled_hinge(loss, margin, rescaling)
    assert r2.hinge_sum == pytest.approx(float(np.sum(hinge)))


# None: the default, threads.  The 1-slack fit over loky processes is the longest case
# (about 16 s of one worker in `make test`): it runs in `make test-slow`; the 1-slack
# sharding is the threads case's, the loky placement the other solvers' loky cases'
@pytest.mark.parametrize(
    "solver, backend",
    [
        pytest.param(s, b, marks=pytest.mark.slow) if (s, b) == ("1-slack", "loky") else (s, b)
        for b in (None, "loky")
        for s in SOLVERS
    ],
)
def test_parallel_equals_serial_every_solver(chain_model, solver, backend):
    kw = dict(max_iter=8, random_state=0)
    serial = solve_ssvm(chain_model, 1.0, solver, n_jobs=1, **kw)
    ctx = joblib.parallel_config(backend=backend) if backend else contextlib.nullcontext()
    with ctx:
        par = solve_ssvm(chain_model, 1.0, solver, n_jobs=2, **kw)
    assert np.array_equal(par.w, serial.w)
    assert par.primal == serial.primal and par.dual == serial.dual
    # the sharded path is the same optimisation as the default one, to rounding
    legacy = solve_ssvm(chain_model, 1.0, solver, **kw)
    assert legacy.primal == pytest.approx(serial.primal, rel=1e-6)


def test_one_slack_output_cache_parallel_equals_serial(chain_model):
    kw = dict(max_iter=12, cache_size=3)
    serial = solve_ssvm(chain_model, 1.0, "1-slack", n_jobs=1, **kw)
    par = solve_ssvm(chain_model, 1.0, "1-slack", n_jobs=2, **kw)
    assert np.array_equal(par.w, serial.w)


def test_linear_kernel_defaults_to_threads(chain_model):
    """Without a backend chosen by the caller the (GIL-free) linear kernel runs on
    threads with the shards shared in memory; a chosen backend wins."""
    with ShardedOracle(chain_model, n_jobs=2) as orc:
        assert orc._session.kind == "threads" and orc._folder is None
        assert orc.backend_kind == "numba" and orc.threads == min(2, numba.config.NUMBA_NUM_THREADS)
        r = orc.run(np.ones(chain_model.dim), plane=True)
    with ShardedOracle(chain_model, n_jobs=1) as orc:
        r1 = orc.run(np.ones(chain_model.dim), plane=True)
    assert np.array_equal(r.a, r1.a) and r.b == r1.b
    with joblib.parallel_config(backend="loky"), ShardedOracle(chain_model, n_jobs=2) as orc:
        assert orc._session.kind == "files"


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_in_process_oracle_is_one_threaded_loop_equal_to_the_shard_tasks(
    chain_model, rescaling, monkeypatch
):
    """n_jobs=1 and threads run every shard in one numba parallel loop over the whole
    model; its answers and tree-summed plane equal the per-shard tasks' exactly (the
    path processes and Dask take)."""
    calls = []
    real = parallel._shards_on_threads

    def spy(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(parallel, "_shards_on_threads", spy)
    w = np.random.default_rng(0).normal(size=chain_model.dim)
    with ShardedOracle(chain_model, n_jobs=2) as orc:
        r = orc.run(w, rescaling, plane=True)
        ref = parallel._run_node(orc.shards, 0, w, rescaling == "slack", True, None, True)
    assert calls == [1]
    assert np.array_equal(r.labels, ref[0]) and np.array_equal(r.loss, ref[1])
    assert np.array_equal(r.margin, ref[2])
    assert np.array_equal(r.a, ref[3][:-2]) and r.b == ref[3][-2]
    assert r.hinge_sum == ref[3][-1]


def test_parallel_runs_in_worker_processes(chain_model):
    """With loky, n_jobs=2 really leaves the process: shards are written once and
    memory-mapped."""
    with joblib.parallel_config(backend="loky"), ShardedOracle(chain_model, n_jobs=2) as orc:
        assert orc._session.kind == "files" and orc._session.n_workers == 2
        folder = orc._folder
        assert len(os.listdir(folder)) == orc.n_shards
        orc.run(np.zeros(chain_model.dim), plane=True)
        orc.run(np.ones(chain_model.dim), plane=True)
        assert orc.bytes_sent == 2 * 2 * chain_model.dim * 8  # w per worker and call
        received = orc.bytes_received
        orc.run(np.ones(chain_model.dim), plane=True, examples=False)
        assert orc.bytes_received - received == 2 * (chain_model.dim + 2) * 8  # 2 planes
    assert not os.path.exists(folder)  # shard files removed after the fit


def test_three_workers_tree_reduction_equals_serial(chain_model):
    """n_jobs=3 runs 4 nodes of the reduction tree: still the serial sums exactly
    (threads: the same node tasks as processes, without starting a 3-process pool)."""
    serial = solve_ssvm(chain_model, 1.0, "1-slack", n_jobs=1, max_iter=10)
    with joblib.parallel_config(backend="threading"):
        par = solve_ssvm(chain_model, 1.0, "1-slack", n_jobs=3, max_iter=10)
    assert np.array_equal(par.w, serial.w)
    assert parallel.tree_nodes(0, 10, 2) == [(0, 2), (2, 5), (5, 7), (7, 10)]
    got = parallel.tree_sum(lambda k: np.float64(0.1) * (k + 1), 0, 10)
    assert got == ((0.1 + 0.2) + (0.30000000000000004 + (0.4 + 0.5))) + (
        (0.6000000000000001 + 0.7000000000000001) + (0.8 + (0.9 + 1.0))
    )


def test_threading_backend_equals_serial(chain_model):
    serial = solve_ssvm(chain_model, 1.0, "1-slack", n_jobs=1, max_iter=10)
    with joblib.parallel_config(backend="threading"):
        par = solve_ssvm(chain_model, 1.0, "1-slack", n_jobs=2, max_iter=10)
    assert np.array_equal(par.w, serial.w)


def test_estimators_n_jobs_bit_for_bit(digits_split):
    Xtr, ytr, Xte, _ = digits_split
    Xtr, ytr = Xtr[:400], ytr[:400]
    a = SSVMClassifier(C=10.0, max_iter=30, random_state=0, n_jobs=1).fit(Xtr, ytr)
    b = SSVMClassifier(C=10.0, max_iter=30, random_state=0, n_jobs=2).fit(Xtr, ytr)
    assert np.array_equal(a.coef_, b.coef_)
    assert np.array_equal(a.predict(Xte), b.predict(Xte))
    X, y = make_chain_data(n=40, K=3, d=4, seed=1)
    kw = dict(task=ChainTask(), C=1.0, solver="n-slack", max_iter=10, random_state=0)
    c = StructSVM(**kw, n_jobs=1).fit(X, y)
    d = StructSVM(**kw, n_jobs=-1).fit(X, y)
    assert np.array_equal(c.coef_, d.coef_)
    with pytest.raises(ValueError, match="n_jobs"):
        StructSVM(**kw, n_jobs=0).fit(X, y)


def test_latent_ssvm_n_jobs(iris):
    X, y = iris
    kw = dict(n_latent=2, C=10.0, max_outer=3, max_iter=30, tol=1e-2, random_state=0)
    a = LatentSSVM(**kw, n_jobs=1).fit(X, y)
    b = LatentSSVM(**kw, n_jobs=2).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.latent_, b.latent_)


def test_dead_worker_aborts_fit(monkeypatch):
    """A worker process that dies mid-fit gives ParallelFitError, never a model."""
    X, y = make_chain_data(n=40, K=3, d=4, seed=2)
    est = StructSVM(task=ChainTask(), C=1.0, max_iter=10, n_jobs=2)
    monkeypatch.setattr(ShardedOracle, "_die_at_call", 2)  # the third oracle call
    with joblib.parallel_config(backend="loky"), pytest.raises(ParallelFitError, match="aborted"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
    monkeypatch.setattr(ShardedOracle, "_die_at_call", None)
    with joblib.parallel_config(backend="loky"):  # the pool recovers
        ok = StructSVM(task=ChainTask(), C=1.0, max_iter=10, n_jobs=2).fit(X, y)
    ref = StructSVM(task=ChainTask(), C=1.0, max_iter=10, n_jobs=1).fit(X, y)
    assert np.array_equal(ok.coef_, ref.coef_)


def test_worker_exception_propagates_unchanged(chain_model):
    with ShardedOracle(chain_model, n_jobs=2) as orc, pytest.raises(ValueError):
        orc.run(np.zeros(3))  # wrong length of w: the worker's own error


def test_unsupported_model_refuses_n_jobs():
    from maxmargin.tasks.crf import CRFTask

    with pytest.raises(ValueError, match="n_jobs"):
        ShardedOracle(CRFTask(), n_jobs=2)  # an unbound task, not a joint model
