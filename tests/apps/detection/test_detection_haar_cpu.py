"""The face cascade (Haar features, bootstrapping by the compiled scan) fitted with numba's
generic CPU target gives exactly the model fitted with the host target (issue 31): the
feature kernels and the scan sum in a fixed order in float64, so no result depends on the
CPU's vector width.  Each fit runs in its own subprocess (``NUMBA_CPU_NAME=generic`` or
not), as in ``test_detection_cascade_cpu.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import maxmargin

SRC = str(Path(maxmargin.__file__).resolve().parents[1])
TESTS = str(Path(__file__).resolve().parent)

FIT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from maxmargin import BoostedCascade
    from maxmargin.apps.detection import HaarCascadeDetector
    from detection_makers import _face, _scene

    out = sys.argv[1]
    rng = np.random.default_rng(0)
    faces = np.stack([_face(rng) for _ in range(200)])
    negs = [_scene(rng) for _ in range(20)]
    casc = BoostedCascade(n_stages=3, target_recall=0.95, target_far=1e-3, max_weak=(2, 5, 10))
    det = HaarCascadeDetector(cascade=casc, n_features=200, n_negatives=300, random_state=0)
    det.fit(faces, negs)
    img = _scene(rng, 90, 100)
    img[30:54, 40:64] = _face(rng)
    b, s, d, ne = det.scan(img)
    meta, arrays = det._get_state()
    np.savez(out, scores=s, n_eval=ne, **arrays)
    """
)


def _fit(tmp_path, env_extra):
    script = tmp_path / "fit_haar.py"
    script.write_text(FIT)
    out = tmp_path / f"haar_{len(env_extra)}.npz"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, TESTS]), **env_extra}
    subprocess.run([sys.executable, str(script), str(out)], check=True, env=env, timeout=1200)
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def test_face_cascade_does_not_depend_on_the_cpu(tmp_path):
    host = _fit(tmp_path, {})
    generic = _fit(tmp_path, {"NUMBA_CPU_NAME": "generic"})
    assert host.keys() == generic.keys()
    for k in host:  # stumps, splits, thresholds, features, scan scores: bit for bit
        np.testing.assert_array_equal(host[k], generic[k], err_msg=k)
