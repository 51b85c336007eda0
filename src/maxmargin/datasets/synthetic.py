"""Synthetic data: the 2-D Gaussian mixture of seed 002, Sec. 5.3.3 (MKMIS features) and
small detection scenes (a textured object on clutter)."""

from __future__ import annotations

import numpy as np

from maxmargin._validation import as_generator

__all__ = ["make_detection_scenes", "make_gaussian_mixture_toy"]

#: (mean, standard deviation) of the isotropic components, equal weights per class
POSITIVE = (((3.0, -3.0), 1.0), ((-3.0, 3.0), 1.0), ((1.0, 1.0), 0.5), ((-1.0, -1.0), 0.5))
NEGATIVE = (((2.0, 2.0), 2.0), ((-2.0, -2.0), 2.0))


def make_gaussian_mixture_toy(n_per_class=160, random_state=None):
    """``n_per_class`` points of each class (the seed uses 160 for training, 800 for
    testing): positives from four equally weighted components (means (3, -3), (-3, 3) with
    sigma 1; (1, 1), (-1, -1) with sigma 0.5), negatives from two ((2, 2), (-2, -2), sigma
    2).  Components are drawn uniformly per point.  Returns ``X (2n, 2)``, ``y`` in {0, 1}
    (1: positive), positives first."""
    rng = as_generator(random_state)

    def draw(components):
        k = rng.integers(0, len(components), n_per_class)
        means = np.array([c[0] for c in components])[k]
        sig = np.array([c[1] for c in components])[k]
        return means + sig[:, None] * rng.standard_normal((n_per_class, 2))

    X = np.vstack([draw(POSITIVE), draw(NEGATIVE)])
    y = np.r_[np.ones(n_per_class, dtype=int), np.zeros(n_per_class, dtype=int)]
    return X, y


def make_detection_scenes(n_images=8, size=(64, 80), side=24, max_objects=2, random_state=None):
    """Grey uint8 images of ``size`` with 1 to ``max_objects`` copies of one object -- a
    bright ring with a dark centre, ``side`` x ``side`` pixels, its size jittered by up to
    25% -- on smooth random clutter, objects not overlapping.  Returns
    ``(images, boxes)``: a list of arrays and a list of (k, 4) 0-based ``(x, y, w, h)``
    boxes.  For tests and examples of :mod:`maxmargin.apps.detection`."""
    rng = as_generator(random_state)
    H, W = size
    images, boxes = [], []
    for _ in range(int(n_images)):
        img = np.kron(rng.random((H // 8 + 1, W // 8 + 1)), np.ones((8, 8)))[:H, :W] * 0.5
        bb = []
        for _ in range(int(rng.integers(1, max_objects + 1))):
            s = round(side * rng.uniform(0.85, 1.25))
            if s >= min(H, W):
                s = min(H, W) - 1
            for _ in range(20):
                x, y = int(rng.integers(0, W - s + 1)), int(rng.integers(0, H - s + 1))
                ok = all(
                    x + s <= bx or bx + bw <= x or y + s <= by or by + bh <= y
                    for bx, by, bw, bh in bb
                )
                if ok:
                    break
            else:
                continue
            yy, xx = np.mgrid[0:s, 0:s]
            r = np.hypot(yy - (s - 1) / 2, xx - (s - 1) / 2) / (s / 2)
            patch = np.where(r < 0.45, 0.05, np.where(r < 0.9, 0.95, img[y : y + s, x : x + s]))
            img[y : y + s, x : x + s] = patch
            bb.append((x, y, s, s))
        img = np.clip(img + 0.03 * rng.standard_normal(img.shape), 0, 1)
        images.append((img * 255).astype(np.uint8))
        boxes.append(np.array(bb, dtype=np.float64).reshape(-1, 4))
    return images, boxes
