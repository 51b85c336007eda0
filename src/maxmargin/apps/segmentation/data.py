"""Image / mask folders (e.g. the Weizmann horses of Borenstein & Ullman, "Class-specific,
top-down segmentation", ECCV 2002)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from maxmargin.apps._image import IMAGE_SUFFIXES

__all__ = ["IMAGE_SUFFIXES", "binary_mask", "load_image", "load_image_folder"]


def load_image(path, what: str = "image") -> np.ndarray:
    """One image file as an array (imageio); ValueError naming the file if it cannot be
    decoded."""
    from maxmargin._validation import read_image

    return read_image(path, what=what)


def binary_mask(mask: np.ndarray, threshold: int, path) -> np.ndarray:
    """A mask file's pixels as a boolean foreground array.

    Grey masks are thresholded at ``threshold`` (JPEG masks have intermediate values at
    the edges); a mask whose values are all 0 or 1 is a 0/1 mask (foreground = 1: the
    threshold would make it all background).  A colour mask whose channels differ (a
    label image, not a figure/ground mask) raises ``ValueError`` naming the file.
    Warnings (``UserWarning``, naming the file): a mask that is all foreground or all
    background, and a lossless (PNG, BMP, TIFF) mask with 3 to 16 distinct values -- a
    label image with e.g. a "void" value, which the threshold splits in two.
    """
    import warnings

    m = np.asarray(mask)
    if m.ndim == 3:
        if m.shape[2] >= 3 and not (
            np.array_equal(m[:, :, 0], m[:, :, 1]) and np.array_equal(m[:, :, 0], m[:, :, 2])
        ):
            raise ValueError(
                f"{path}: a colour mask whose channels differ (a label image?); a mask is a "
                "grey or black-and-white image, white = foreground"
            )
        m = m[:, :, 0]
    if m.dtype == bool:
        out = m
    elif m.size and m.min() >= 0 and m.max() <= 1:
        out = m >= 1
    else:
        out = m >= threshold
    if out.all() or not out.any():
        which = "foreground" if out.all() else "background"
        warnings.warn(
            f"{path}: the mask is all {which} at threshold {threshold} (values "
            f"{m.min()}..{m.max()}); check the file or the threshold",
            UserWarning,
            stacklevel=2,
        )
    elif str(path).lower().endswith((".png", ".bmp", ".tif", ".tiff")):
        n_values = np.unique(m).size
        if 2 < n_values <= 16:
            warnings.warn(
                f"{path}: the mask has {n_values} distinct values (a label image?); pixels "
                f">= {threshold} are taken as foreground, the rest as background",
                UserWarning,
                stacklevel=2,
            )
    return out


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
        missing = [s for s in stems if s not in mfiles]
        if missing:  # never dropped silently: every image needs its mask
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise ValueError(
                f"{images[missing[0]]}: no mask named {missing[0]}.* in {mask_dir}{more}; "
                "give every image a mask, or move the image out of the folder"
            )
    imgs, ms = [], []
    for s in stems:
        img = load_image(images[s])
        if mask_dir is not None:
            m = binary_mask(load_image(mfiles[s], what="mask"), threshold, mfiles[s])
            if img.shape[:2] != m.shape:
                if not resize_to_mask:
                    raise ValueError(
                        f"{mfiles[s]}: the mask is {m.shape[1]} x {m.shape[0]} pixels but "
                        f"its image {images[s].name} is {img.shape[1]} x {img.shape[0]}: "
                        "image and mask differ in size (pass resize_to_mask=True / "
                        "--resize-to-mask to resize images to their masks)"
                    )
                from skimage.transform import resize

                img = resize(img, m.shape, anti_aliasing=True, preserve_range=True)
                img = np.clip(np.rint(img), 0, 255).astype(np.uint8)
            ms.append(m)
        imgs.append(img)
    return imgs, (ms if mask_dir is not None else None), stems
