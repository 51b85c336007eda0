"""The sharded oracle and the blocked stump search on Ray's joblib backend: the shards /
feature blocks go into Ray's object store once per fit, tasks carry only their object
references, and the fits equal the serial ones bit for bit.  (Skipped when ray is not
installed; it is in the ``dev`` extra, so ``make test`` runs it.)"""

import joblib
import numpy as np
import pytest

from data_makers import make_chain_data, make_graphs
from maxmargin import StructBoostClassifier, StructSVM
from maxmargin.exceptions import ParallelFitError
from maxmargin.solvers.parallel import ShardedOracle
from maxmargin.solvers.parallel_weak import BlockedStumpSearch
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.crf import CRFTask
from maxmargin.weak import DecisionStump

ray = pytest.importorskip("ray")

# slow (about 3 minutes of one worker: a Ray cluster per test): `make test-slow`, run by CI
pytestmark = [pytest.mark.filterwarnings("ignore::Warning"), pytest.mark.slow]


@pytest.fixture(scope="module")
def ray_backend():
    from ray.util.joblib import register_ray

    register_ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _spy_place(monkeypatch):
    seen = []
    place = ShardedOracle._place

    def spy(self):
        place(self)
        seen.append((self._session.kind, list(self._refs or ())))

    monkeypatch.setattr(ShardedOracle, "_place", spy)
    return seen


def test_ray_chain_ssvm_equals_serial_with_shards_in_object_store(ray_backend, monkeypatch):
    X, y = make_chain_data(n=40, K=3, d=4, seed=6)
    kw = dict(task=ChainTask(), C=1.0, solver="1-slack", max_iter=4)
    serial = StructSVM(**kw, n_jobs=1).fit(X, y)
    seen = _spy_place(monkeypatch)
    with joblib.parallel_config(backend="ray"):
        par = StructSVM(**kw, n_jobs=2).fit(X, y)
    kind, refs = seen[-1]
    assert kind == "ray" and len(refs) == 40
    # placed once: every task names an object reference, no shard data
    assert all(isinstance(r.obj, ray.ObjectRef) for r in refs)
    assert np.array_equal(par.coef_, serial.coef_)
    assert par.history_[-1]["objective"] == serial.history_[-1]["objective"]


def test_ray_oracle_sends_only_w(ray_backend):
    X, y = make_chain_data(n=30, K=3, d=4, seed=2)
    model = ChainTask().bind(X, y).linear_model()
    w = np.random.default_rng(0).normal(size=model.dim)
    with ShardedOracle(model, n_jobs=1) as orc:
        ref = orc.run(w, plane=True)
    with joblib.parallel_config(backend="ray"), ShardedOracle(model, n_jobs=2) as orc:
        assert orc.backend_kind == "ray"
        for _ in range(2):
            r = orc.run(w, plane=True)
            assert np.array_equal(r.labels, ref.labels) and np.array_equal(r.a, ref.a)
        assert orc.bytes_sent == 2 * 2 * w.nbytes  # w per task and call, nothing else
    assert orc._refs is None  # the object store's copies are released with the fit


def test_ray_crf_ssvm_equals_serial(ray_backend):
    X, Y = make_graphs(np.random.default_rng(11), 12, h=4, w=5, noise=1.5)
    kw = dict(task=CRFTask(loss="area"), C=10.0, solver="1-slack", max_iter=6, tol=0.0)
    serial = StructSVM(**kw, n_jobs=1).fit(X, Y)
    with joblib.parallel_config(backend="ray"):
        par = StructSVM(**kw, n_jobs=2).fit(X, Y)
    assert np.array_equal(par.coef_, serial.coef_)


def test_ray_blocked_stump_search_equals_serial(ray_backend):
    rng = np.random.default_rng(0)
    Z = rng.integers(0, 4, size=(80, 23)).astype(float)
    A = rng.normal(size=(80, 3))
    weak = DecisionStump()
    ref, gref = weak.best(weak.prepare(Z), A)
    with joblib.parallel_config(backend="ray"):
        with BlockedStumpSearch(weak, n_jobs=2, n_blocks=5) as blocked:
            assert blocked._session.kind == "ray"
            prep = blocked.prepare(Z)
            assert all(isinstance(b.obj, ray.ObjectRef) and b.Z is None for b in prep.blocks)
            for _ in range(2):
                cand, gain = blocked.best(prep, A)
                assert np.array_equal(gain, gref)
                assert np.array_equal(cand.feature, ref.feature)
                assert np.array_equal(cand.threshold, ref.threshold)
            assert blocked.bytes_sent == 2 * 2 * A.nbytes


def test_ray_structboost_equals_serial(ray_backend):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 6))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 2] > 0.8)
    kw = dict(C=10.0, max_iter=5, random_state=0)
    a = StructBoostClassifier(**kw).fit(X, y)
    with joblib.parallel_config(backend="ray"):
        b = StructBoostClassifier(**kw, n_jobs=2).fit(X, y)
    assert np.array_equal(a.slot_weights_, b.slot_weights_)
    assert np.array_equal(a.hypotheses_.feature, b.hypotheses_.feature)


def test_ray_actor_death_aborts_the_fit(ray_backend, monkeypatch):
    X, y = make_chain_data(n=40, K=3, d=4, seed=6)
    monkeypatch.setattr(ShardedOracle, "_die_at_call", 1)  # the task's actor exits
    est = StructSVM(task=ChainTask(), C=1.0, solver="1-slack", max_iter=4, n_jobs=2)
    with joblib.parallel_config(backend="ray"), pytest.raises(ParallelFitError):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
