"""A cascade fitted with numba's generic CPU target gives exactly the stages of one fitted
with the host target (issue 31): no CPU-dependent tie-breaking or reduction order in the
boosting.  The generic fit runs in a subprocess with ``NUMBA_CPU_NAME=generic`` (numba
compiles for the baseline x86-64 / AArch64 CPU, no AVX), the host fit in another
subprocess without it (each with its own numba cache entries)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from detection_makers import OTHER_CPU  # numba generic, another BLAS kernel, no AVX2

import maxmargin

SRC = str(Path(maxmargin.__file__).resolve().parents[1])

FIT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from maxmargin import BoostedCascade
    from maxmargin.apps.detection import CascadeDetector
    from maxmargin.datasets import make_detection_scenes

    learner, out = sys.argv[1], sys.argv[2]
    images, boxes = make_detection_scenes(8, random_state=3)
    det = CascadeDetector(window=(3, 3), n_negatives=2000, random_state=0)
    det._fit_prior(images, boxes)
    X, y, mask = det.training_set(images, boxes)
    cas = BoostedCascade(
        stage_learner=learner, n_stages=4, max_weak=(3, 6, 10), target_far=1e-3,
        rule="two-point", random_state=0,
    ).fit(X, y, validation_mask=mask)
    meta, arrays = cas._get_state()
    np.savez(out, **arrays)
    """
)


def _fit(tmp_path, learner, env_extra):
    script = tmp_path / "fit.py"
    script.write_text(FIT)
    out = tmp_path / f"{learner}_{len(env_extra)}.npz"
    env = {**os.environ, "PYTHONPATH": SRC, **env_extra}
    subprocess.run(
        [sys.executable, str(script), learner, str(out)], check=True, env=env, timeout=1200
    )
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("learner", ["gentle", "lacboost"])
def test_cascade_stages_do_not_depend_on_the_cpu(tmp_path, learner):
    host = _fit(tmp_path, learner, {})
    generic = _fit(tmp_path, learner, OTHER_CPU)
    assert host.keys() == generic.keys()
    # the same weak classifiers, splits and stage thresholds, bit for bit
    for k in ("ptr", "feature", "split", "thresholds"):
        np.testing.assert_array_equal(host[k], generic[k], err_msg=k)
    for k in ("v_lo", "v_hi"):
        np.testing.assert_array_equal(host[k], generic[k], err_msg=k)
