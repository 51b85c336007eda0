"""Shared makers for the detection tests: synthetic faces and scenes, the small FHOG
detector settings and scenes of the context / box-regression / FHOG tests, and a Ctrl-C
injected inside a cascade stage (imported by several test files, so kept out of any one
of them)."""

from __future__ import annotations

import platform

import numpy as np

from maxmargin.apps.detection.scan import resize
from maxmargin.datasets import make_detection_scenes

#: a small FHOG window detector without the location prior (3 x 3 cells, one aspect
#: ratio, two mining rounds): the settings of the context and box-regression tests
SMALL_FHOG = dict(
    window=(3, 3),
    C=0.1,
    features="fhog",
    location_prior=False,
    aspect_ratios=(1.0,),
    scale_step=1.2,
    max_rounds=2,
    random_state=0,
)


def small_scenes(n, seed):
    """``n`` synthetic 48 x 64 scenes with objects of side 24 (images, boxes)."""
    return make_detection_scenes(n, size=(48, 64), side=24, random_state=seed)


def two_aspect_scenes(n, seed):
    """Synthetic scenes whose boxes are annotated wide (even images) or tall (odd)."""
    X, B = small_scenes(n, seed)
    B = [np.asarray(b, dtype=np.float64).reshape(-1, 4).copy() for b in B]
    for i, b in enumerate(B):
        if i % 2:
            b[:, 0] += 2
            b[:, 2] -= 4
        else:
            b[:, 1] += 2
            b[:, 3] -= 4
    return X, B


def _face(rng):
    f = np.full((24, 24), 0.7)
    f[6:10, 4:10] = 0.15  # eyes
    f[6:10, 14:20] = 0.15
    f[16:19, 8:16] = 0.3  # mouth
    f += rng.normal(0, 0.08, (24, 24))
    return np.clip(f * rng.uniform(0.6, 1.2) + rng.uniform(-0.1, 0.1), 0, 1).astype(np.float32)


def _scene(rng, H=80, W=80):
    a = rng.random((H // 8 + 1, W // 8 + 1)).astype(np.float32)
    return np.clip(resize(a, (H, W)) + rng.normal(0, 0.1, (H, W)), 0, 1).astype(np.float32)


def interrupt_in_stage(monkeypatch, stage, at_round=2):
    """Make a Ctrl-C arrive inside the booster of ``stage`` (0-based), at its round
    ``at_round``: raised from the booster's own per-round hook (both stage learners), not
    from the cascade's ``callback``."""
    import maxmargin.learners.cascade as casc

    calls = {"n": 0}

    def wrap(real):
        def booster(*args, on_round, **kwargs):
            k = calls["n"]
            calls["n"] += 1

            def hook(rec):
                on_round(rec)
                if k == stage and rec["iteration"] >= at_round:
                    raise KeyboardInterrupt

            return real(*args, on_round=hook, **kwargs)

        return booster

    for name in ("fit_cost_sensitive_stage", "fit_asymmetric_stage"):
        monkeypatch.setattr(casc, name, wrap(getattr(casc, name)))
    return calls


# "Another CPU" for the cascade CPU tests: numba's generic target, OpenBLAS's baseline SSE3
# kernels and NumPy's AVX2 / AVX-512 loops switched off (each fit in its own subprocess)
OTHER_CPU = {"NUMBA_CPU_NAME": "generic"}
if platform.machine().lower() in ("x86_64", "amd64"):
    OTHER_CPU |= {
        "OPENBLAS_CORETYPE": "Prescott",
        "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    }


def iou(a, b):
    """Pascal overlap of two boxes ``(x, y, w, h)``, written out (0 for an empty union)."""
    iw = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    ih = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    inter = max(iw, 0.0) * max(ih, 0.0)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def shrunk(w, f, shape):
    """A window with context ``f`` (factors) -> the box it stands for, clipped."""
    cx, cy = w[0] + w[2] / 2, w[1] + w[3] / 2
    bw, bh = w[2] / f[0], w[3] / f[1]
    H, W = shape[:2]
    x0, y0 = min(max(cx - bw / 2, 0), W), min(max(cy - bh / 2, 0), H)
    x1, y1 = min(max(cx + bw / 2, 0), W), min(max(cy + bh / 2, 0), H)
    return np.array([x0, y0, x1 - x0, y1 - y0])
