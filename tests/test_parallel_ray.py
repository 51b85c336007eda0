"""The sharded oracle on Ray's joblib backend (skipped when ray is not installed: it is
the optional extra ``maxmargin[ray]``, not part of ``dev``)."""

import joblib
import numpy as np
import pytest

from maxmargin import StructSVM
from maxmargin.tasks.chain import ChainTask
from test_chain import make_chain_data

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.filterwarnings("ignore::Warning")


def test_ray_backend_equals_serial():
    from ray.util.joblib import register_ray

    X, y = make_chain_data(n=40, K=3, d=4, seed=6)
    kw = dict(task=ChainTask(), C=1.0, solver="1-slack", max_iter=4)
    serial = StructSVM(**kw, n_jobs=1).fit(X, y)
    register_ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with joblib.parallel_config(backend="ray"):
            par = StructSVM(**kw, n_jobs=2).fit(X, y)
    finally:
        ray.shutdown()
    assert np.array_equal(par.coef_, serial.coef_)
