"""Image-folder selections of the detection benchmarks: ``DIR[:STEP[:OFFSET]]`` specs,
the files they select, and the check that no image is both a training and a test negative
(tested in ``tests/test_detection_bench.py``)."""

from __future__ import annotations

from pathlib import Path


def parse_image_spec(spec):
    """``DIR[:STEP[:OFFSET]]`` -> ``(Path(DIR), STEP, OFFSET)`` (STEP 1 and OFFSET 0 if
    omitted); a ``ValueError`` for a STEP < 1, an OFFSET < 0 or a non-integer."""
    parts = str(spec).split(":")
    nums = []
    while len(parts) > 1 and len(nums) < 2 and parts[-1].strip().lstrip("-").isdigit():
        nums.insert(0, int(parts.pop()))
    d = ":".join(parts)
    if not d:
        raise ValueError(f"no folder in {spec!r}")
    step = nums[0] if nums else 1
    offset = nums[1] if len(nums) > 1 else 0
    if step < 1 or offset < 0:
        raise ValueError(f"{spec!r}: STEP must be >= 1 and OFFSET >= 0")
    return Path(d), step, offset


def select_image_files(specs, option="--extra-negatives"):
    """The image files of the ``DIR[:STEP[:OFFSET]]`` folders: every STEP-th file in
    natural order starting at the OFFSET-th (0-based); returns ``(files, per-spec
    counts)``.  A missing folder, a bad spec or a spec selecting nothing exits with a
    message naming ``option``."""
    from maxmargin.apps.detection.data import IMAGE_SUFFIXES, _natural_key

    files, counts = [], {}
    for spec in specs:
        try:
            d, step, offset = parse_image_spec(spec)
        except ValueError as e:
            raise SystemExit(f"{option}: {e}") from None
        if not d.is_dir():
            raise SystemExit(f"{option}: not a folder: {spec}")
        sel = sorted(
            (f for f in d.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES), key=_natural_key
        )[offset::step]
        if not sel:
            raise SystemExit(f"{option}: no images in {spec}")
        files += sel
        counts[str(spec)] = len(sel)
    return files, counts


def check_disjoint(train_files, test_files):
    """Exit with a message if an image file is both a training and a test negative
    (compared as resolved paths)."""
    both = sorted({f.resolve() for f in train_files} & {f.resolve() for f in test_files})
    if both:
        more = f" and {len(both) - 3} more" if len(both) > 3 else ""
        raise SystemExit(
            "--extra-negatives and --test-negatives share "
            f"{len(both)} image(s): {', '.join(map(str, both[:3]))}{more}"
        )
