"""
Scale-out on Dask
=================

Fits that spend their time in a loss-augmented oracle (structured SVMs, StructBoost on
chains and graphs) split it over fixed shards of the examples; through joblib's backend
the shards can run on a Dask cluster.  The shards and the order in which their results
are added are fixed, so the model does not depend on where or how the shards ran: the
distributed fit below equals the serial one exactly.

This example starts a small :class:`distributed.LocalCluster` (two worker processes,
one thread each) on this machine; on a real cluster, connect ``Client`` to its scheduler
instead.  Needs ``pip install maxmargin[dask]``.
"""

import time

import joblib
import numpy as np
from distributed import Client, LocalCluster

from maxmargin import ChainTask, StructSVM

rng = np.random.default_rng(0)
protos = rng.normal(size=(4, 6)) * 1.5  # one prototype per state


def make_chains(n):
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(3, 9))
        s = [int(rng.integers(4))]
        for _ in range(T - 1):
            s.append(s[-1] if rng.random() < 0.8 else int(rng.integers(4)))
        s = np.array(s)
        X.append(protos[s] + rng.normal(size=(T, 6)))
        Y.append(s)
    return X, Y


X, y = make_chains(300)
params = dict(task=ChainTask(), C=1.0, solver="1-slack", max_iter=30)

start = time.perf_counter()
serial = StructSVM(**params, n_jobs=1).fit(X, y)
t_serial = time.perf_counter() - start

# %%
# The same fit on a 2-worker LocalCluster
# ---------------------------------------
if __name__ == "__main__":
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        print(f"cluster: {len(client.scheduler_info()['workers'])} workers")
        start = time.perf_counter()
        with joblib.parallel_config(backend="dask"):
            dist = StructSVM(**params, n_jobs=2).fit(X, y)
        t_dask = time.perf_counter() - start

    print(
        f"serial fit {t_serial:.2f} s, Dask fit {t_dask:.2f} s (on a toy problem the "
        "scheduling overhead dominates; see the scaling guide for when it pays)"
    )
    print("models equal bit for bit:", np.array_equal(dist.coef_, serial.coef_))
    assert np.array_equal(dist.coef_, serial.coef_)
