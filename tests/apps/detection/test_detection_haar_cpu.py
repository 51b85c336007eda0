"""The face cascade (Haar features, bootstrapping by the compiled scan) fitted as on another
CPU gives exactly the model fitted on this one (issue 31): the feature kernels and the scan
sum in a fixed order in float64, and the boosting uses neither BLAS nor NumPy's exp / log
(:mod:`maxmargin.solvers.asymmetric_boost`), so no result depends on the CPU's vector
width or on which BLAS kernels it gets.  "Another CPU" is :data:`OTHER_CPU`: numba's
generic target, OpenBLAS's baseline SSE3 kernels (``OPENBLAS_CORETYPE=Prescott``) and
NumPy's AVX2 / AVX-512 loops switched off -- with the BLAS dot products that the stage
boosting used before, the Gentle stages' leaf values and thresholds differed in their last
bits under exactly this.  Each fit runs in its own subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from detection_makers import OTHER_CPU

import maxmargin

SRC = str(Path(maxmargin.__file__).resolve().parents[1])
TESTS = str(Path(__file__).resolve().parent)

#: the environment of a fit "on another CPU" (x86-64: also another BLAS kernel and no AVX2 /
#: AVX-512 in NumPy; elsewhere numba's generic target only)
FIT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from maxmargin import BoostedCascade
    from maxmargin.apps.detection import HaarCascadeDetector
    from detection_makers import _face, _scene

    learner, out = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    faces = np.stack([_face(rng) for _ in range(200)])
    negs = [_scene(rng) for _ in range(20)]
    casc = BoostedCascade(
        stage_learner=learner, n_stages=3, target_recall=0.95, target_far=1e-3,
        max_weak=(2, 5, 10), max_bins=64,
    )
    det = HaarCascadeDetector(cascade=casc, n_features=200, n_negatives=300, random_state=0)
    det.fit(faces, negs)
    img = _scene(rng, 90, 100)
    img[30:54, 40:64] = _face(rng)
    b, s, d, ne = det.scan(img)
    meta, arrays = det._get_state()
    np.savez(out, scores=s, n_eval=ne, **arrays)
    """
)


def _fit(tmp_path, learner, env_extra):
    script = tmp_path / "fit_haar.py"
    script.write_text(FIT)
    out = tmp_path / f"haar_{learner}_{len(env_extra)}.npz"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, TESTS]), **env_extra}
    subprocess.run(
        [sys.executable, str(script), learner, str(out)], check=True, env=env, timeout=1200
    )
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("learner", ["gentle", "real", "lacboost"])
def test_face_cascade_does_not_depend_on_the_cpu(tmp_path, learner):
    host = _fit(tmp_path, learner, {})
    generic = _fit(tmp_path, learner, OTHER_CPU)
    assert host.keys() == generic.keys()
    for k in host:  # stumps, splits, thresholds, features, scan scores: bit for bit
        np.testing.assert_array_equal(host[k], generic[k], err_msg=k)
