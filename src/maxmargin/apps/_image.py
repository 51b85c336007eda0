"""Image conversions and file endings shared by the applications (detection, tracking,
segmentation) and the command line."""

from __future__ import annotations

import numpy as np

__all__ = ["IMAGE_SUFFIXES", "to_grey"]

#: file endings read as images by the applications' folder loaders and the command line
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff")


def to_grey(image) -> np.ndarray:
    """A float32 grey image in [0, 1] from a grey (H, W) or RGB(A) (H, W, 3 / 4) uint8 or
    float image (ITU-R BT.601 luma weights 0.299, 0.587, 0.114; uint8 is divided by 255).
    Raises ValueError for a wrong shape or a float image holding NaN or inf."""
    a = np.asarray(image)
    if a.ndim == 3:
        if a.shape[2] not in (3, 4):
            raise ValueError(f"colour images must have 3 or 4 channels, got {a.shape}")
        g = a[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    elif a.ndim == 2:
        g = a.astype(np.float32)
    else:
        raise ValueError(f"images must be (H, W) or (H, W, 3) arrays, got shape {a.shape}")
    if a.dtype == np.uint8:
        g /= 255.0
    elif not np.isfinite(g).all():  # integer images are always finite
        raise ValueError("the image contains NaN or inf")
    return g
