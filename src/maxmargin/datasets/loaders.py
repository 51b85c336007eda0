"""Reading labelled data sets from svmlight/LIBSVM and delimited-text (CSV/TSV) files.

Everything funnels through :func:`load_dataset`, which returns ``(X, y)`` with
``X`` a float64 array (or CSR matrix) and ``y`` integer labels when all labels
are whole numbers, float labels otherwise, and string labels for CSV files whose
label column is not numeric.  With ``query_id=True`` it returns ``(X, y, qid)``:
the ``qid:`` query ids of an svmlight/SVM-light ranking file (``2 qid:1 1:0.5``),
or ``None`` when the file has none (CSV files never do).  Bad input raises
``ValueError`` naming the file and, for text files, the offending line and
column, so command-line users see what to fix instead of a traceback.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "describe_data_file",
    "detect_format",
    "load_csv",
    "load_dataset",
    "load_svmlight",
    "peek_n_columns",
]

_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_SVMLIGHT_TOKEN = re.compile(r"^(?:qid:[-+]?[0-9]+|[0-9]+:\S+)$")  # qid:3 or 12:0.5
_SNIFF_LINES = 20


def _open_text(path: Path) -> IO[str]:
    """Open ``path`` as text, transparently decompressing .gz/.bz2/.xz."""
    opener = _COMPRESSED.get(path.suffix.lower())
    # utf-8-sig: a byte-order mark (as spreadsheet programs write) is not part of the
    # first header name
    if opener is not None:
        return opener(path, "rt", encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _base_suffix(path: Path) -> str:
    """File extension ignoring a compression suffix (``data.csv.gz`` -> ``.csv``)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def _content_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, stripped_line)`` for non-blank, non-comment lines."""
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                text = line.strip()
                if text and not text.startswith("#"):
                    yield lineno, text
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc.reason})") from exc
    except (OSError, EOFError) as exc:
        if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError):
            raise
        raise ValueError(f"{path}: cannot read the file ({exc})") from exc


def _looks_like_svmlight(line: str) -> bool:
    """``label idx:val ...`` (a trailing ``# comment`` allowed)."""
    tokens = line.split("#", 1)[0].split()
    return (
        len(tokens) >= 2
        and ":" not in tokens[0]
        and all(_SVMLIGHT_TOKEN.match(t) for t in tokens[1:])
    )


def detect_format(path: str | os.PathLike[str]) -> str:
    """Guess ``"csv"`` or ``"svmlight"``: by extension first, then by sniffing content."""
    path = Path(path)
    suffix = _base_suffix(path)
    if suffix in {".csv", ".tsv"}:
        return "csv"
    if suffix in {".svm", ".svmlight", ".libsvm"}:
        return "svmlight"
    for i, (_, line) in enumerate(_content_lines(path)):
        if _looks_like_svmlight(line):
            return "svmlight"
        if i >= _SNIFF_LINES:
            break
    return "csv"


def load_dataset(
    path: str | os.PathLike[str],
    format: str = "auto",
    n_features: int | None = None,
    label_column: int | str | None = -1,
    dense: bool = True,
    *,
    zero_based: bool | str = "auto",
    query_id: bool = False,
) -> tuple[Any, ...]:
    """Load ``(X, y)`` (or ``(X, y, qid)``) from an svmlight/LIBSVM or CSV/TSV file.

    ``format``: ``"auto"`` (extension, then content sniffing), ``"svmlight"`` or
    ``"csv"``.  ``n_features``: the expected width; svmlight data is padded to it
    (test files often lack the highest feature indices), CSV data must match it.
    ``label_column`` (CSV only): index or header name of the label column, or
    ``None`` for unlabelled data (``y`` is then ``None``).  ``dense``: return a
    NumPy array instead of a CSR matrix.  ``zero_based`` (svmlight only) is passed
    to scikit-learn; ``"auto"`` treats files without a feature 0 as one-based.
    ``query_id``: also return the svmlight ``qid:`` query ids as a third element
    (an int64 array, or ``None`` if the file has no qid; always ``None`` for CSV).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if path.is_dir():
        raise ValueError(f"{path}: is a directory, not a data file")
    fmt = format.lower()
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt in {"libsvm", "svm"}:
        fmt = "svmlight"
    if fmt == "svmlight":
        return load_svmlight(
            path, n_features=n_features, dense=dense, zero_based=zero_based, query_id=query_id
        )
    if fmt in {"csv", "tsv"}:
        X, y = load_csv(path, n_features=n_features, label_column=label_column, dense=dense)
        return (X, y, None) if query_id else (X, y)
    raise ValueError(f"unknown data format {format!r} (use 'auto', 'svmlight' or 'csv')")


# --------------------------------------------------------------------------- svmlight
#: a file whose column count exceeds this many times its stored values (+1e6) is
#: refused: one huge index would make every dense step allocate rows of that width
MAX_SPARSE_WIDTH_RATIO = 100
#: above this many cells a "dense" load stays sparse instead (8 bytes each: 2 GB)
MAX_DENSE_CELLS = 250_000_000


def load_svmlight(
    path: str | os.PathLike[str],
    n_features: int | None = None,
    dense: bool = True,
    zero_based: bool | str = "auto",
    *,
    query_id: bool = False,
) -> tuple[Any, ...]:
    """Load an svmlight/LIBSVM file (``.gz``/``.bz2`` handled by scikit-learn).

    Returns ``(X, y)``, or ``(X, y, qid)`` with ``query_id=True``: ``qid`` holds the
    ``qid:`` query id of every line (int64), or is ``None`` when no line has one.
    A file where only some lines have a qid is rejected.
    """
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    if next(_content_lines(path), None) is None:
        raise ValueError(f"{path}: empty file (no data lines)")
    try:
        X, y, *rest = load_svmlight_file(
            _without_bom(path),
            n_features=n_features,
            dtype=np.float64,
            zero_based=zero_based,
            query_id=query_id,
        )
    except ValueError as exc:
        raise ValueError(f"{path}: cannot parse as svmlight/LIBSVM: {exc}") from exc
    except OverflowError:
        raise ValueError(_index_overflow(path)) from None
    except (OSError, EOFError, RuntimeError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot read as svmlight/LIBSVM: {exc}") from exc
    if X.shape[0] == 0:
        raise ValueError(f"{path}: empty file (no data lines)")
    X = sp.csr_matrix(X)
    if X.nnz == 0:
        raise ValueError(
            f"{path}: no feature values at all (every line has only a label): nothing to learn from"
        )
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size:
        row = int(np.searchsorted(X.indptr, bad[0], side="right")) - 1
        raise ValueError(f"{path}: NaN or infinite feature value in sample {row + 1}")
    if not np.all(np.isfinite(y)):
        row = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"{path}: NaN or infinite label in sample {row + 1}")
    if n_features is None and X.shape[1] > MAX_SPARSE_WIDTH_RATIO * max(X.nnz, 1) + 1_000_000:
        col = int(X.indices.max()) if X.nnz else X.shape[1] - 1
        row = int(np.searchsorted(X.indptr, int(np.argmax(X.indices)), side="right"))
        raise ValueError(
            f"{path}: feature index {col + 1} (line {row}) is implausibly large for "
            f"{X.nnz} stored values ({X.shape[1]} columns would be created); fix the "
            "file or give n_features explicitly"
        )
    if dense and X.shape[0] * X.shape[1] > MAX_DENSE_CELLS:
        dense = False  # too wide to densify: keep CSR (every estimator accepts it)
    X = X.toarray() if dense else X
    if not query_id:
        return X, _tidy_labels(y)
    qid: np.ndarray | None = np.asarray(rest[0], dtype=np.int64)
    if qid.size == 0:
        qid = None
    elif qid.size != X.shape[0]:
        # scikit-learn only records the qid of the lines that have one
        raise ValueError(
            f"{path}: only {qid.size} of {X.shape[0]} lines have a qid: "
            "give every line a query id, or none"
        )
    return X, _tidy_labels(y), qid


#: scikit-learn's svmlight reader stores feature indices as 32-bit integers
MAX_SVMLIGHT_INDEX = 2**31 - 1
_INDEX = re.compile(r"(?:^|\s)(\d+):")
_QID = re.compile(r"(?:^|\s)qid:([-+]?\d+)")


def _index_overflow(path: Path) -> str:
    """The message for an svmlight file with a feature index of 2^31 or more."""
    for lineno, line in _content_lines(path):
        for m in _INDEX.finditer(line.split("#", 1)[0]):
            if int(m.group(1)) > MAX_SVMLIGHT_INDEX:
                return (
                    f"{path}: line {lineno}: feature index {m.group(1)} is too large (at "
                    f"most {MAX_SVMLIGHT_INDEX}); feature indices count columns -- fix or "
                    "renumber them"
                )
        m = _QID.search(line)
        if m and abs(int(m.group(1))) > 2**63 - 1:
            return (
                f"{path}: line {lineno}: query id {m.group(1)} is too large (at most "
                f"{2**63 - 1}); renumber the queries"
            )
    return f"{path}: a number in the file is too large to read (feature index or qid)"


_BOM = b"\xef\xbb\xbf"


def _without_bom(path: Path) -> Any:
    """What scikit-learn's svmlight reader is given: the path, or -- for a file that
    starts with a UTF-8 byte-order mark, which it cannot parse -- the bytes after it."""
    opener = _COMPRESSED.get(path.suffix.lower())
    with (opener or open)(path, "rb") as fh:
        head = fh.read(3)
        if head != _BOM:
            return str(path)
        return io.BytesIO(fh.read())


def _tidy_labels(y: np.ndarray) -> np.ndarray:
    """Whole-number float labels become int64 so classes print as ``3``, not ``3.0``."""
    y = np.asarray(y)
    if y.dtype.kind == "f" and y.size and np.all(y == np.round(y)) and np.all(np.abs(y) < 2**53):
        return y.astype(np.int64)
    return y


# --------------------------------------------------------------------------- csv
def _split_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)``; delimiter from the extension or the first line."""
    lines = _content_lines(path)
    first = next(lines, None)
    if first is None:
        return
    suffix = _base_suffix(path)
    text = first[1]
    if suffix == ".tsv" or "\t" in text:
        delimiter: str | None = "\t"
    elif "," in text:
        delimiter = ","
    elif ";" in text:
        delimiter = ";"
    else:
        delimiter = None  # runs of whitespace

    def chain() -> Iterator[tuple[int, str]]:
        yield first
        yield from lines

    for lineno, line in chain():
        if delimiter is None:
            fields = line.split()
        else:
            fields = next(csv.reader([line], delimiter=delimiter, skipinitialspace=True))
        yield lineno, [f.strip() for f in fields]


def _to_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def peek_n_columns(path: str | os.PathLike[str]) -> int:
    """Number of columns in the first content row of a CSV/TSV file (0 if empty)."""
    first = next(_split_rows(Path(path)), None)
    return 0 if first is None else len(first[1])


def load_csv(
    path: str | os.PathLike[str],
    n_features: int | None = None,
    label_column: int | str | None = -1,
    dense: bool = True,
) -> tuple[Any, np.ndarray | None]:
    """Load a delimited text file; a non-numeric first row is taken as a header."""
    path = Path(path)
    rows = list(_split_rows(path))
    if not rows:
        raise ValueError(f"{path}: empty file (no data lines)")
    width = len(rows[0][1])
    for lineno, fields in rows:
        if len(fields) != width:
            raise ValueError(
                f"{path}: line {lineno} has {len(fields)} columns, expected {width} (ragged rows)"
            )

    if isinstance(label_column, str) and not _is_int_text(label_column):
        header = rows[0][1]
        if label_column not in header:
            raise ValueError(
                f"{path}: label column {label_column!r} not found in the header "
                f"(columns: {', '.join(header)})"
            )
        label_idx: int | None = header.index(label_column)
        has_header = True
    else:
        label_idx = None if label_column is None else _column_index(path, label_column, width)
        has_header = _has_header(rows, label_idx)
    names = rows[0][1] if has_header else None
    data_rows = rows[1:] if has_header else rows
    if not data_rows:
        raise ValueError(f"{path}: no data rows after the header")

    feature_idx = [j for j in range(width) if j != label_idx]
    if not feature_idx:
        raise ValueError(
            f"{path}: no feature columns (the file's only column is the label); "
            "a data file needs at least one feature column"
        )
    if n_features is not None and len(feature_idx) != n_features:
        raise ValueError(
            f"{path}: has {len(feature_idx)} feature columns, expected {n_features}"
            + (" (is the label column set correctly?)" if label_idx is not None else "")
        )
    X = np.empty((len(data_rows), len(feature_idx)), dtype=np.float64)
    for i, (lineno, fields) in enumerate(data_rows):
        for k, j in enumerate(feature_idx):
            value = _to_float(fields[j])
            where = f"line {lineno}, column {j + 1}" + (f" ({names[j]!r})" if names else "")
            if value is None:
                shown = fields[j] if fields[j] else "<empty>"
                raise ValueError(f"{path}: non-numeric value {shown!r} at {where}")
            if not math.isfinite(value):
                raise ValueError(f"{path}: {fields[j]!r} (NaN or infinite) at {where}")
            X[i, k] = value
    y = None if label_idx is None else _parse_labels(path, data_rows, label_idx)
    return (X if dense else sp.csr_matrix(X)), y


def _is_int_text(text: str) -> bool:
    return bool(re.fullmatch(r"[-+]?\d+", text.strip()))


def _column_index(path: Path, label_column: int | str, width: int) -> int:
    idx = int(label_column)
    if not -width <= idx < width:
        raise ValueError(f"{path}: label column {idx} is out of range for {width} columns")
    return idx % width


def _has_header(rows: list[tuple[int, list[str]]], label_idx: int | None) -> bool:
    """First row is a header if a feature cell is non-numeric, or only its label is."""
    first = rows[0][1]
    if any(_to_float(v) is None for j, v in enumerate(first) if j != label_idx):
        return True
    if label_idx is not None and _to_float(first[label_idx]) is None and len(rows) > 1:
        # e.g. "1,2,class" above numeric labels: a header with numeric feature names
        return all(_to_float(fields[label_idx]) is not None for _, fields in rows[1:])
    return False


def _parse_labels(path: Path, rows: list[tuple[int, list[str]]], idx: int) -> np.ndarray:
    """Numeric labels if every one parses as a number, else string labels."""
    raw = [fields[idx] for _, fields in rows]
    for (lineno, _), text in zip(rows, raw):
        if not text:
            raise ValueError(f"{path}: missing label at line {lineno}, column {idx + 1}")
    values = [_to_float(t) for t in raw]
    if all(v is not None for v in values):
        for (lineno, _), v in zip(rows, values):
            if not math.isfinite(v):
                raise ValueError(f"{path}: NaN or infinite label at line {lineno}")
        return _tidy_labels(np.asarray(values, dtype=np.float64))
    return np.asarray(raw, dtype=str)


_ZERO_INDEX = re.compile(r"(?:^|\s)0:")


def describe_data_file(
    path: str | os.PathLike[str], format: str = "auto", label_column: int | str | None = -1
) -> dict[str, Any]:
    """How a data file lays out its columns, to record with a model trained on it.

    svmlight: ``{"format": "svmlight", "zero_based": bool}`` (whether the file uses
    feature index 0; later files must use the same convention).  CSV: ``{"format":
    "csv", "label": header name or index, "features": [header names] or None}``.
    """
    path = Path(path)
    fmt = detect_format(path) if format == "auto" else format.lower()
    if fmt in {"svmlight", "libsvm", "svm"}:
        zero = any(_ZERO_INDEX.search(line.split("#", 1)[0]) for _, line in _content_lines(path))
        return {"format": "svmlight", "zero_based": bool(zero)}
    rows = list(_split_rows(path))
    width = len(rows[0][1]) if rows else 0
    if isinstance(label_column, str) and not _is_int_text(label_column):
        idx: int | None = rows[0][1].index(label_column)
        has_header = True
    else:
        idx = None if label_column is None else _column_index(path, label_column, width)
        has_header = bool(rows) and _has_header(rows, idx)
    names = rows[0][1] if has_header else None
    return {
        "format": "csv",
        "label": (names[idx] if names else idx) if idx is not None else None,
        "features": [n for j, n in enumerate(names) if j != idx] if names else None,
    }
