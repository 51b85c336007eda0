"""Console, JSON and table output shared by the ``maxmargin`` commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # as a shell reports SIGINT


def stdout_console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def describe(exc: BaseException) -> str:
    """One-line message for an expected failure (no errno noise for OS errors)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def plain(value: Any) -> Any:
    """Convert numpy scalars/arrays to JSON-friendly Python values."""
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(plain(obj), indent=None) + "\n")
    sys.stdout.flush()


def label_text(value: Any) -> str:
    """How a class label is written: ``3`` not ``3.0`` / ``np.int64(3)``."""
    value = plain(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def finite_or_none(value: Any) -> float | None:
    """A metric for the JSON output: NaN (undefined, e.g. no pairs) becomes null."""
    value = float(value)
    return value if np.isfinite(value) else None


def fmt(value: Any, spec: str = ".6g") -> str:
    try:
        return format(float(value), spec)
    except (TypeError, ValueError):
        return "-"


def cell(value: Any) -> Any:
    """A table cell or title shown literally: rich never applies markup to user data
    (a label ``[other]`` or a path with ``[/x]`` prints as written)."""
    from rich.text import Text

    return Text(value if isinstance(value, str) else label_text(value))


def print_kv_table(title: str, values: dict[str, Any], console: Any = None) -> None:
    from rich.table import Table

    table = Table(title=cell(title), show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value", justify="right")
    for key, value in values.items():
        text = fmt(value) if isinstance(value, float) else str(value)
        table.add_row(cell(key.replace("_", " ")), cell(text))
    (console or stdout_console()).print(table)


def model_key() -> str | None:
    """The model-signing key from ``$MAXMARGIN_MODEL_KEY`` (None when unset): models are
    then saved signed and only files signed with that key are loaded."""
    import os

    from maxmargin.io import KEY_ENV

    value = os.environ.get(KEY_ENV)
    if value is None:
        return None
    if not value.strip():
        # the API refuses key="" too: an empty key must not silently disable signing
        raise ValueError(
            f"${KEY_ENV} is set but empty: give it a non-empty key, or unset it to "
            "use unsigned model files"
        )
    return value


def folder_files(*folders: str | None) -> list[Path]:
    """The files directly in each of ``folders`` that is a folder (None skipped)."""
    files: list[Path] = []
    for folder in folders:
        if folder is not None and Path(folder).is_dir():
            files += [p for p in Path(folder).iterdir() if p.is_file()]
    return files


def image_paths(items, empty: str = "no images") -> list[Path]:
    """Image files named by ``items``: a file as it is, a folder's images sorted by name;
    ValueError for a missing item or (message ``empty``) when none is found."""
    from maxmargin.apps._image import IMAGE_SUFFIXES

    paths: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            paths += sorted(q for q in p.iterdir() if q.suffix.lower() in IMAGE_SUFFIXES)
        elif p.exists():
            paths.append(p)
        else:
            raise ValueError(f"no such image or folder: {p}")
    if not paths:
        raise ValueError(empty)
    return paths


def check_distinct_stems(paths: list[Path], output: str) -> None:
    """Two different images with one name stem would write the same output files."""
    seen: dict[str, Path] = {}
    for p in paths:
        other = seen.setdefault(p.stem, p)
        if other.resolve() != p.resolve():
            raise ValueError(
                f"{p}: another image, {other}, has the same name; their outputs "
                f"{p.stem}{output} would overwrite each other (rename one)"
            )
