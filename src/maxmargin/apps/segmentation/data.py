"""Image / mask folders (e.g. the Weizmann horses of Borenstein & Ullman, "Class-specific,
top-down segmentation", ECCV 2002)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["IMAGE_SUFFIXES", "load_image", "load_image_folder"]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff")


def load_image(path) -> np.ndarray:
    """One image file as an array (imageio)."""
    import imageio.v3 as iio

    return np.asarray(iio.imread(Path(path)))


def _listing(folder: Path) -> dict[str, Path]:
    if not folder.is_dir():
        raise ValueError(f"not a folder: {folder}")
    files = {p.stem: p for p in sorted(folder.iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES}
    if not files:
        raise ValueError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in {folder}")
    return files


def load_image_folder(
    image_dir,
    mask_dir=None,
    *,
    threshold: int = 128,
    resize_to_mask: bool = False,
    names=None,
):
    """Images (and masks) of two folders matched by file name stem.

    Returns ``(images, masks, names)`` (``masks`` is None without ``mask_dir``).  Masks
    are thresholded at ``threshold`` (grey JPEG masks have intermediate values at the
    edges), giving boolean arrays.  ``resize_to_mask``: resize each image to its mask's
    size (the Weizmann ``rgb/`` photos are larger than their masks); otherwise sizes must
    match.  ``names``: only these stems, in this order.

    Raises ValueError for missing or empty folders, unmatched names and size mismatches.
    """
    images = _listing(Path(image_dir))
    stems = list(images) if names is None else list(names)
    missing = [s for s in stems if s not in images]
    if missing:
        raise ValueError(f"no image named {missing[0]!r} in {image_dir}")
    if mask_dir is not None:
        mfiles = _listing(Path(mask_dir))
        stems = [s for s in stems if s in mfiles] if names is None else stems
        missing = [s for s in stems if s not in mfiles]
        if missing or not stems:
            raise ValueError(
                f"no mask for image {missing[0]!r} in {mask_dir}"
                if missing
                else f"no image in {image_dir} has a mask in {mask_dir}"
            )
    imgs, ms = [], []
    for s in stems:
        img = load_image(images[s])
        if mask_dir is not None:
            m = load_image(mfiles[s])
            if m.ndim == 3:
                m = m[:, :, 0]
            m = m >= threshold
            if img.shape[:2] != m.shape:
                if not resize_to_mask:
                    raise ValueError(
                        f"{s}: image {img.shape[:2]} and mask {m.shape} differ in size "
                        "(pass resize_to_mask=True to resize images to their masks)"
                    )
                from skimage.transform import resize

                img = resize(img, m.shape, anti_aliasing=True, preserve_range=True)
                img = np.clip(np.rint(img), 0, 255).astype(np.uint8)
            ms.append(m)
        imgs.append(img)
    return imgs, (ms if mask_dir is not None else None), stems
