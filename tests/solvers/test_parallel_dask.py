"""The sharded oracle on a dask.distributed LocalCluster through joblib's dask backend."""

import time

import joblib
import numpy as np
import pytest

from data_makers import make_chain_data
from maxmargin import StructSVM
from maxmargin.solvers.parallel import ShardedOracle
from maxmargin.tasks.chain import ChainTask

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn.exceptions.ConvergenceWarning",
    "ignore::DeprecationWarning",
    "ignore::ResourceWarning",
)


@pytest.mark.slow  # a local Dask cluster: about 36 s of one worker
def test_dask_local_cluster_equals_serial_and_cleans_up(monkeypatch):
    kinds = []
    place = ShardedOracle._place

    def spy(self):
        place(self)
        kinds.append((self._session.kind, len(self._futures or ())))

    monkeypatch.setattr(ShardedOracle, "_place", spy)
    X, y = make_chain_data(n=60, K=3, d=4, seed=5)
    kw = dict(task=ChainTask(), C=1.0, solver="1-slack", max_iter=12)
    serial = StructSVM(**kw, n_jobs=1).fit(X, y)
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,
    )
    client = distributed.Client(cluster)
    try:
        pids = list(client.run(lambda: __import__("os").getpid()).values())
        assert len(pids) == 2
        with joblib.parallel_config(backend="dask"):
            par = StructSVM(**kw, n_jobs=2).fit(X, y)
        assert kinds[-1] == ("dask", 60)  # shards scattered once
        assert np.array_equal(par.coef_, serial.coef_)
        assert par.history_[-1]["objective"] == serial.history_[-1]["objective"]
        # the scattered shards are released when the fit ends (asynchronously)
        deadline = time.monotonic() + 10
        while any(client.who_has().values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(client.who_has().values())
    finally:
        client.close()
        cluster.close()
    gone = psutil.wait_procs([p for p in map(_proc, pids) if p is not None], timeout=10)[1]
    assert not gone, f"worker processes left behind: {gone}"


def _proc(pid):
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None
