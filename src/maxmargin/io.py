"""Saving and loading fitted models in a versioned, pickle-free format.

A model file is a single compressed ``.npz`` archive (as ``numpy.savez_compressed``) holding
the estimator's arrays plus one ``__meta__`` entry: a UTF-8 JSON document stored
as a ``uint8`` array.  The document records the format name and version, the
maxmargin version that wrote it, the registered class name, the estimator's own
JSON metadata, the name/dtype/shape of every array, and a SHA-256 checksum over
all of that and the raw array bytes, so truncation and tampering are detected.

Nothing is ever unpickled or evaluated: files are read with
``np.load(..., allow_pickle=False)`` and object arrays are refused, so loading an
untrusted file cannot execute code.  Estimators take part through two hooks::

    est._get_state() -> (meta: dict, arrays: dict[str, np.ndarray])
    Cls._from_state(meta, arrays) -> est

and the package's one estimator registry (:mod:`maxmargin._registry`, which
:func:`register_model` writes to): a file names its class, and the class is found there
(the built-in estimators' packages are imported only when first needed).

Loading is one validation layer, in this order, so that a hostile file costs little:

1. the zip central directory is read and checked *before anything is decompressed*: at
   most :data:`MAX_MEMBERS` members, only stored or deflated ``.npy`` members with unique
   names, a compression ratio deflate can produce (:data:`MAX_RATIO`), at most
   :data:`MAX_MODEL_BYTES` in total;
2. the ``__meta__`` header (at most :data:`MAX_META_BYTES`) is scanned for nesting depth
   (:data:`MAX_JSON_DEPTH`) and giant integers (:data:`MAX_INT_DIGITS` digits) before it
   is parsed;
3. with a key, the HMAC signature is checked next, before any array is read;
4. every array's declared dtype (plain bool/int/uint/float/str only) and shape must
   account for exactly the member's declared uncompressed size: a file whose declared
   sizes disagree with its content is refused before it is inflated; more than
   :data:`BOMB_BYTES` at a ratio above :data:`BOMB_RATIO` is refused as a zip bomb even
   when the header agrees;
5. the arrays are read (never more than declared), then the checksum;
6. every array is validated: no NaN (infinity is legitimate in a few arrays, e.g. stump
   thresholds; the estimators' own checks and the score probe refuse it where it is not),
   no duplicate ``classes``, a task's gamma/delta float and of matching shapes; the rebuilt
   model must write the same dtypes and shapes again, and a classifier or ranker must
   give one finite score per class on a probe row (so a ``classes`` array longer than
   the weight matrix is refused).

:func:`atomic_write` is the one writer for every output of the package and its
command line: a temporary file in the same directory, fsync, ``os.replace``; stale
temporary files of a killed writer are removed by the next write to the same path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import struct
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from maxmargin import _registry

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MAX_MEMBERS",
    "MAX_META_BYTES",
    "MAX_MODEL_BYTES",
    "atomic_write",
    "check_distinct_output",
    "load",
    "register_model",
    "registered_models",
    "save",
]

FORMAT_NAME = "maxmargin-model"
FORMAT_VERSION = 1
META_KEY = "__meta__"

#: most members (arrays) a model file may hold
MAX_MEMBERS = 4096
#: most bytes of the zip central directory
MAX_DIRECTORY_BYTES = 4 * 2**20
#: most bytes of the ``__meta__`` JSON header (a fit's history lives there)
MAX_META_BYTES = 16 * 2**20
#: deepest nesting of JSON objects/arrays in the header
MAX_JSON_DEPTH = 64
#: longest integer literal in the header (an int64 has at most 19 digits)
MAX_INT_DIGITS = 20
#: most bytes of all arrays together, uncompressed
MAX_MODEL_BYTES = 8 * 2**30
#: deflate cannot compress more than about 1032:1; a member declaring more lies
MAX_RATIO = 1100
#: a file inflating to more than BOMB_BYTES at a ratio above BOMB_RATIO is refused as a
#: zip bomb even when its header agrees (real model arrays compress far less than 200:1)
BOMB_BYTES = 2**30
BOMB_RATIO = 200
#: a .npy member's header (magic, version, dict) is at most this many bytes
_MAX_NPY_HEADER = 4096
#: array dtypes a model file may hold: bool, integers, floats, fixed-width strings
_PLAIN_DESCR = re.compile(r"^[<>|=]?(?:b1|[iu][1248]|f[248]|U\d{1,6}|S\d{1,6})$")

T = TypeVar("T", bound=type)

#: header fields outside the checksum (the checksum itself and the signature over it)
_UNHASHED = ("sha256", "signature")
#: environment variable holding the key for signed model files (used by the CLI)
KEY_ENV = "MAXMARGIN_MODEL_KEY"


def _signature(key: bytes | str, sha256: str) -> str:
    import hmac

    if isinstance(key, str):
        key = key.encode("utf-8")
    if not key:
        raise ValueError("the signing key is empty")
    return hmac.new(key, sha256.encode("ascii"), "sha256").hexdigest()


# --------------------------------------------------------------------------- registry
def _persistable(klass: type) -> bool:
    return callable(getattr(klass, "_get_state", None)) and callable(
        getattr(klass, "_from_state", None)
    )


def register_model(cls: T | None = None, *, name: str | None = None) -> Any:
    """Register a persistable estimator class under ``name`` (default: its ``__name__``)
    in the package's one registry (:func:`maxmargin._registry.register`).

    Usable as ``@register_model`` or ``@register_model(name="Other")``.  The class
    must provide ``_get_state`` and a ``_from_state`` classmethod.
    """

    def decorate(klass: T) -> T:
        if not (callable(getattr(klass, "_get_state", None))):
            raise TypeError(f"{klass.__name__} has no _get_state() method")
        if not (callable(getattr(klass, "_from_state", None))):
            raise TypeError(f"{klass.__name__} has no _from_state() classmethod")
        return _registry.register(name)(klass)

    if cls is None:
        return decorate
    return decorate(cls)


def registered_models() -> list[str]:
    """Names of all classes that :func:`load` can rebuild (built-ins included)."""
    return sorted(k for k, v in _registry.estimators().items() if _persistable(v))


def _resolve_class(name: str) -> type:
    """Return the persistable class registered as ``name`` (``KeyError`` if none)."""
    klass = _registry.lookup(name)
    if not _persistable(klass):
        raise KeyError(name)
    return klass


def _class_name(model: Any) -> str:
    """Registered name of ``type(model)``; raises ``ValueError`` if it has none."""
    key = _registry.name_of(type(model))
    if key is None or not _persistable(type(model)):
        raise ValueError(
            f"cannot save a {type(model).__name__}: the class is not registered for "
            "persistence (decorate it with maxmargin.io.register_model)"
        )
    return key


# --------------------------------------------------------------------------- format
def _json_default(obj: Any) -> Any:
    """Let numpy scalars through ``json.dumps``; refuse everything else non-JSON."""
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serialisable")


def _canonical_json(obj: Any) -> bytes:
    """Deterministic JSON bytes (sorted keys, no whitespace) used for checksumming."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=_json_default
    ).encode("ascii")


def _dtype_descr(dtype: np.dtype) -> str:
    """A stable textual description of ``dtype`` (keeps structured field layouts)."""
    return str(np.lib.format.dtype_to_descr(dtype))


def _array_spec(arrays: Mapping[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    return {
        name: {"dtype": _dtype_descr(a.dtype), "shape": list(a.shape)} for name, a in arrays.items()
    }


def _checksum(document: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 over the document (minus its checksum) and every array's name/dtype/shape/bytes."""
    h = hashlib.sha256()

    def chunk(data: bytes) -> None:  # length-prefixed so field boundaries are unambiguous
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    chunk(_canonical_json({k: v for k, v in document.items() if k not in _UNHASHED}))
    for name in sorted(arrays):
        a = arrays[name]
        chunk(name.encode("utf-8"))
        chunk(_dtype_descr(a.dtype).encode("ascii"))
        chunk(_canonical_json(list(a.shape)))
        chunk(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _maxmargin_version() -> str:
    try:
        import maxmargin

        version = getattr(maxmargin, "__version__", None)
        if version:
            return str(version)
        from importlib.metadata import version as dist_version

        return dist_version("maxmargin")
    except Exception:  # version is informational only
        return "unknown"


def _check_arrays(arrays: Any, where: str) -> dict[str, np.ndarray]:
    """Validate the estimator's arrays: string names, no reserved name, no object dtype."""
    if not isinstance(arrays, Mapping):
        raise TypeError(f"{where} must return a dict of arrays, got {type(arrays).__name__}")
    out: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"array names must be non-empty strings, got {name!r}")
        if name == META_KEY or "/" in name or "\x00" in name:
            raise ValueError(f"invalid array name {name!r}")
        a = np.asarray(value)
        if a.dtype.hasobject:
            raise ValueError(
                f"array {name!r} has object dtype; only plain numeric, boolean and "
                "string arrays can be saved (object arrays would need pickle)"
            )
        out[name] = a
    return out


# --------------------------------------------------------------------------- save
def save(
    model: Any,
    path: str | os.PathLike[str],
    *,
    key: bytes | str | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> Path:
    """Write a fitted ``model`` to ``path`` (used as given; no suffix is appended).

    The file is written to a temporary file in the same directory, flushed and
    fsynced, then moved into place with ``os.replace``, so readers never see a
    half-written model.  Raises ``ValueError`` for unfitted or unregistered
    estimators, object arrays, or non-JSON metadata.  Returns the path.

    ``key``: sign the file with HMAC-SHA256 over its checksum, for teams that share model
    files; :func:`load` with the same key then refuses any file not signed with it.
    ``annotations``: JSON metadata about the model's use (the command line records the
    training file's column layout there); read back with :func:`file_info`.
    """
    path = Path(path)
    if not _is_fitted(model):
        from sklearn.exceptions import NotFittedError  # a ValueError subclass

        raise NotFittedError(
            f"this {type(model).__name__} is not fitted yet; call fit() before saving it"
        )
    class_name = _class_name(model)
    state = model._get_state()
    if not (isinstance(state, tuple) and len(state) == 2):
        raise TypeError("_get_state() must return a (meta, arrays) tuple")
    meta, arrays = state
    if not isinstance(meta, Mapping):
        raise TypeError(f"_get_state() meta must be a dict, got {type(meta).__name__}")
    arrays = _check_arrays(arrays, "_get_state()")

    document: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "maxmargin_version": _maxmargin_version(),
        "class": class_name,
        "meta": dict(meta),
        "arrays": _array_spec(arrays),
    }
    if annotations is not None:
        document["annotations"] = dict(annotations)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:  # scikit-learn's column-name check survives the round trip
        document["feature_names_in"] = [str(v) for v in names]
    try:
        # Round-trip through JSON so the checksum covers exactly what load() will see.
        document = json.loads(_canonical_json(document))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"model metadata is not JSON serialisable: {exc}") from exc
    document["sha256"] = _checksum(document, arrays)
    if key is not None:
        document["signature"] = _signature(key, document["sha256"])
    header = len(_canonical_json(document))
    if header > MAX_META_BYTES:
        raise ValueError(
            f"{path}: the model's metadata is {header / 2**20:.1f} MiB, over the "
            f"{MAX_META_BYTES / 2**20:.0f} MiB a model file may hold (a very long fit "
            "history?); the file was not written"
        )
    _write_npz(path, document, arrays)
    return path


def _is_fitted(model: Any) -> bool:
    """scikit-learn's rule: ``__sklearn_is_fitted__()`` or any public ``attr_`` set."""
    probe = getattr(model, "__sklearn_is_fitted__", None)
    if callable(probe):
        return bool(probe())
    return any(k.endswith("_") and not k.startswith("__") for k in getattr(model, "__dict__", {}))


def _write_npz(path: Path, document: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
    """Atomically write ``arrays`` plus the JSON ``document`` as ``__meta__`` to ``path``."""
    payload = dict(arrays)
    payload[META_KEY] = np.frombuffer(_canonical_json(document), dtype=np.uint8)
    with atomic_write(path) as fh:
        # The same layout as np.savez_compressed, written directly so array names
        # can never collide with savez's own keyword arguments.
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, array in payload.items():
                with zf.open(name + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)


# --------------------------------------------------------------------------- atomic writes
#: a writer's temporary file: ``.<name>.<pid>-<hex>.tmp`` (older releases: ``.<name>.<hex>.tmp``)
_TMP_PATTERN = re.compile(r"^\.(?P<name>.+)\.(?:(?P<pid>\d+)-)?[0-9a-f]{12}\.tmp$")
#: a temporary file this old is stale whatever its process id says
STALE_TMP_SECONDS = 3600.0


def _stale(entry: os.DirEntry, name: str, now: float) -> bool:
    m = _TMP_PATTERN.match(entry.name)
    if m is None or m.group("name") != name:
        return False
    try:
        if now - entry.stat(follow_symlinks=False).st_mtime > STALE_TMP_SECONDS:
            return True
    except OSError:
        return False
    pid = m.group("pid")
    if pid is None or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True  # its writer is gone (killed during a save)
    except (OSError, OverflowError, ValueError):
        return False
    return False


def clean_stale_temp_files(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files a killed writer left next to ``path`` (those of a dead
    process on this machine, or older than :data:`STALE_TMP_SECONDS`); returns them."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if entry.is_file(follow_symlinks=False) and _stale(entry, path.name, now):
            try:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            except OSError:
                pass
    return removed


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], *, inputs: Iterable[Any] = ()) -> Iterator[Any]:
    """Open a binary file handle whose content replaces ``path`` only when the block ends
    without an exception: a temporary file in the same directory, flushed and fsynced,
    then ``os.replace``.  On any error (a full disk, an interrupt) the temporary file is
    removed and an existing ``path`` is left as it was.  ``inputs``: files the output
    must not be (see :func:`check_distinct_output`).
    """
    path = Path(path)
    check_distinct_output(path, inputs)
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory (give a file name)", str(path))
    directory = path.parent if str(path.parent) else Path(".")
    clean_stale_temp_files(path)
    tmp = directory / f".{path.name}.{os.getpid()}-{secrets.token_hex(6)}.tmp"
    # os.open with 0o666 honours the umask, like an ordinary open(path, "wb").
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.filename is None and exc.errno:
            # name the output, not the temporary file, in the message
            raise OSError(exc.errno, os.strerror(exc.errno), str(path)) from exc
        if isinstance(exc, OSError) and exc.filename == str(tmp):
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    _fsync_dir(directory)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, **kw: Any) -> Path:
    """Write ``data`` to ``path`` with :func:`atomic_write`."""
    with atomic_write(path, **kw) as fh:
        fh.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str, **kw: Any) -> Path:
    """Write UTF-8 ``text`` to ``path`` with :func:`atomic_write`."""
    return atomic_write_bytes(path, text.encode("utf-8"), **kw)


def _fsync_dir(directory: Path) -> None:
    """Persist the rename itself (best effort; not possible on every platform)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_distinct_output(output: str | os.PathLike[str], inputs: Iterable[Any]) -> None:
    """Raise ``ValueError`` if ``output`` is the same file as one of ``inputs`` (same
    device and inode, so hard links and symbolic links count): writing it would destroy
    that input."""
    out = Path(output)
    try:
        st = out.stat()
    except OSError:
        return  # does not exist (yet): cannot be an input
    for item in inputs:
        if item is None:
            continue
        try:
            other = os.stat(item)
        except (OSError, TypeError, ValueError):
            continue
        if (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino):
            raise ValueError(
                f"{out}: the output is the input file {item}; writing it would destroy "
                "that input (give another output name)"
            )


# --------------------------------------------------------------------------- load
def load(path: str | os.PathLike[str], *, key: bytes | str | None = None) -> Any:
    """Read a model written by :func:`save` and rebuild the estimator.

    A missing file raises ``FileNotFoundError``; every other problem (not a model
    file, truncated, wrong format, newer format version, checksum mismatch,
    unknown class, missing array, declared sizes over the limits or disagreeing with
    the content, non-finite or inconsistent arrays, ...) raises ``ValueError`` naming
    the file (the checks and their order are listed in the module documentation).
    With ``key``, the file must carry a valid HMAC signature made with that key (see
    :func:`save`); the signature is checked before any array is read.
    """
    path = Path(path)
    if key is not None and not (key if isinstance(key, bytes) else str(key)):
        raise ValueError(f"{path}: the signing key is empty (give a non-empty key, or None)")
    document, arrays = _read_npz(path, key=key)

    def fail(problem: str) -> ValueError:
        return ValueError(f"{path}: {problem}")

    name = document["class"]
    try:
        klass = _resolve_class(name)
    except KeyError:
        raise fail(
            f"unknown model class {name!r} (known: {', '.join(registered_models())})"
        ) from None
    except (ImportError, AttributeError) as exc:
        raise fail(f"model class {name!r} could not be imported: {exc}") from exc
    try:
        est = klass._from_state(document["meta"], arrays)
    # OverflowError: JSON allows Infinity, and int(inf) of a count raises it
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as exc:
        raise fail(f"could not rebuild {name} from the saved state: {exc!r}") from exc
    names = document.get("feature_names_in")
    if names is not None:
        n = getattr(est, "n_features_in_", None)
        if not isinstance(names, list) or not all(isinstance(v, str) for v in names):
            raise fail("feature_names_in must be a list of strings")
        if n is not None and len(names) != n:
            raise fail(f"{len(names)} feature names for {n} features")
        est.feature_names_in_ = np.asarray(names, dtype=object)
    _check_rebuilt(est, name, arrays, fail)
    return est


def file_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The verified envelope of a model file: class, format and package versions,
    checksum and the arrays' names, dtypes and shapes (the model is not rebuilt).

    The envelope of the file :func:`load` verified last is reused while the file is
    unchanged (same inode, size and modification time), so ``load`` + ``file_info``
    read a file once."""
    path = Path(path)
    document = _verified_envelope(path)
    if document is None:
        document, _ = _read_npz(path)
    return {k: document[k] for k in document if k not in ("meta",)}


#: (identity of the file, document) of the last file _read_npz verified
_LAST_VERIFIED: list[tuple[tuple, dict[str, Any]]] = []


def _identity(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _verified_envelope(path: Path) -> dict[str, Any] | None:
    ident = _identity(path)
    for known, document in _LAST_VERIFIED:
        if ident is not None and known == ident:
            return document
    return None


def _end_of_directory(fh: Any, size: int, fail: Callable[[str], ValueError]) -> tuple[int, int]:
    """``(member count, central directory bytes)`` from the zip end records, read from
    the file's tail only (nothing else is parsed or decompressed)."""
    tail_len = min(size, 22 + 65535)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        raise fail("truncated or corrupted model file (no zip end-of-directory record)")
    count, cd_size = struct.unpack("<xxxxxxxxxxHI", tail[at : at + 16])
    if count == 0xFFFF or cd_size == 0xFFFFFFFF:  # zip64: the real values are elsewhere
        loc = at - 20
        if loc < 0 or tail[loc : loc + 4] != b"PK\x06\x07":
            raise fail("truncated or corrupted model file (no zip64 locator)")
        (offset,) = struct.unpack("<Q", tail[loc + 8 : loc + 16])
        if offset + 56 > size:
            raise fail("truncated or corrupted model file (zip64 record beyond the end)")
        fh.seek(offset)
        rec = fh.read(56)
        if rec[:4] != b"PK\x06\x06":
            raise fail("truncated or corrupted model file (bad zip64 end record)")
        count, cd_size = struct.unpack("<QQ", rec[32:48])
    return count, cd_size


def _npy_data_bytes(spec: Any, name: str, fail: Callable[[str], ValueError]) -> int:
    """Bytes of array ``name``'s data from its declared dtype and shape (plain dtypes only)."""
    if not isinstance(spec, dict):
        raise fail(f"malformed header: array {name!r} has no dtype/shape entry")
    descr, shape = spec.get("dtype"), spec.get("shape")
    if not isinstance(descr, str) or not _PLAIN_DESCR.match(descr):
        raise fail(
            f"array {name!r} declares dtype {descr!r}; a model file holds only bool, "
            "integer, float and fixed-width string arrays"
        )
    if (
        not isinstance(shape, list)
        or len(shape) > 32
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise fail(f"array {name!r} declares an invalid shape {shape!r}")
    n = np.dtype(descr).itemsize
    for d in shape:
        n *= d
        if n > MAX_MODEL_BYTES:
            break
    return n


def _read_npz(
    path: Path, key: bytes | str | None = None
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read and fully verify a model file; returns (document, arrays)."""

    def fail(problem: str) -> ValueError:
        return ValueError(f"{path}: {problem}")

    with open(path, "rb") as fh:  # FileNotFoundError / IsADirectoryError propagate
        head = fh.read(4)
        if not head:
            raise fail("empty file (not a maxmargin model)")
        if head != b"PK\x03\x04":
            raise fail("not a maxmargin model file (not an .npz/zip archive)")
        size = os.fstat(fh.fileno()).st_size
        # 1. the central directory, before anything is decompressed
        count, cd_size = _end_of_directory(fh, size, fail)
        if count > MAX_MEMBERS:
            raise fail(f"the archive declares {count} members, over the limit of {MAX_MEMBERS}")
        if cd_size > min(MAX_DIRECTORY_BYTES, size):
            raise fail(
                f"the archive declares a {cd_size}-byte directory "
                f"(file size {size}, limit {MAX_DIRECTORY_BYTES}): corrupted or hostile"
            )
        fh.seek(0)
        try:
            zf = zipfile.ZipFile(fh)
        except Exception as exc:  # BadZipFile, EOFError, ...: all mean corrupt
            raise fail(f"truncated or corrupted model file ({exc})") from exc
        with zf:
            members = _check_directory(zf, size, fail)
            if META_KEY not in members:
                raise fail(f"not a maxmargin model file (no {META_KEY} entry)")
            # 2. the header, bounded, scanned, parsed
            meta_info = members[META_KEY]
            if meta_info.file_size > MAX_META_BYTES + _MAX_NPY_HEADER:
                raise fail(
                    f"the {META_KEY} header declares {meta_info.file_size} bytes, over the "
                    f"limit of {MAX_META_BYTES} (hostile file, or a very long fit history)"
                )
            raw = _read_member(zf, meta_info, META_KEY, fail)
            document = _parse_document(raw, fail)
            # 3. the signature, before any array is read
            if key is not None:
                _check_signature(document, key, fail)
            # 4. declared shapes against declared member sizes
            spec = document["arrays"]
            stored = set(members) - {META_KEY}
            missing = sorted(set(spec) - stored)
            if missing:
                raise fail(f"missing array(s) {', '.join(map(repr, missing))} (truncated file?)")
            extra = sorted(stored - set(spec))
            if extra:
                raise fail(f"unexpected array(s) {', '.join(map(repr, extra))} (file was modified)")
            total = 0
            for name in sorted(spec):
                want = _npy_data_bytes(spec[name], name, fail)
                got = members[name].file_size
                if not want <= got - 10 <= want + _MAX_NPY_HEADER:
                    raise fail(
                        f"array {name!r}: the archive declares {got} bytes but its dtype and "
                        f"shape in the header need {want} (+ a small .npy header): the "
                        "file's declared sizes disagree with its content"
                    )
                total += got
            if total > MAX_MODEL_BYTES:
                raise fail(
                    f"the arrays declare {total / 2**30:.1f} GiB, over the limit of "
                    f"{MAX_MODEL_BYTES / 2**30:.0f} GiB"
                )
            packed = sum(members[name].compress_size for name in spec)
            if total > BOMB_BYTES and total > BOMB_RATIO * max(packed, 1):
                raise fail(
                    f"the arrays declare {total / 2**30:.1f} GiB from {packed / 2**20:.1f} MiB "
                    f"compressed (ratio {total / max(packed, 1):.0f}:1): refused as a zip bomb "
                    f"(limit: {BOMB_RATIO}:1 above {BOMB_BYTES / 2**30:.0f} GiB, "
                    "maxmargin.io.BOMB_RATIO)"
                )
            # 5. the arrays (never more bytes than declared)
            arrays = {name: _read_member(zf, members[name], name, fail) for name in sorted(spec)}

    for name, a in arrays.items():
        want = spec[name]
        if _dtype_descr(a.dtype) != want.get("dtype"):
            raise fail(f"array {name!r} has dtype {a.dtype}, the header says {want!r}")
        if list(a.shape) != want.get("shape"):
            raise fail(f"array {name!r} has shape {a.shape}, the header says {want!r}")
    if _checksum(document, arrays) != document["sha256"]:
        raise fail("checksum mismatch: the file is corrupted or was modified after saving")
    # 6. the values
    for name, a in arrays.items():
        _check_values(name, a, fail)
    ident = _identity(path)
    _LAST_VERIFIED[:] = [] if ident is None else [(ident, document)]
    return document, arrays


def _check_directory(
    zf: zipfile.ZipFile, size: int, fail: Callable[[str], ValueError]
) -> dict[str, zipfile.ZipInfo]:
    """Members by array name, after checking every central-directory entry."""
    members: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        if not info.filename.endswith(".npy") or "/" in info.filename or info.is_dir():
            raise fail(f"unexpected archive member {info.filename!r} (not a model file)")
        name = info.filename[:-4]
        if name in members:
            raise fail(f"archive member {info.filename!r} appears twice (file was modified)")
        if info.flag_bits & 0x1:
            raise fail(f"archive member {info.filename!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise fail(
                f"archive member {info.filename!r} uses compression method "
                f"{info.compress_type} (a model file is stored or deflated)"
            )
        if info.compress_size > size or info.header_offset > size:
            raise fail(f"archive member {info.filename!r} lies beyond the end of the file")
        limit = info.compress_size if info.compress_type == zipfile.ZIP_DEFLATED else 0
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise fail(f"archive member {info.filename!r} declares inconsistent sizes")
        if limit and info.file_size > MAX_RATIO * limit + 1024:
            raise fail(
                f"archive member {info.filename!r} declares {info.file_size} bytes from "
                f"{info.compress_size} compressed, a ratio deflate cannot produce "
                "(a zip bomb or corrupted file)"
            )
        members[name] = info
    return members


def _check_signature(document: dict[str, Any], key: bytes | str, fail: Callable) -> None:
    import hmac

    signature = document.get("signature")
    if not isinstance(signature, str):
        raise fail("the file is not signed, but a key was given")
    if not hmac.compare_digest(signature, _signature(key, document["sha256"])):
        raise fail("bad signature: the file was not signed with this key")


def _read_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, fail: Callable[[str], ValueError]
) -> np.ndarray:
    """One .npy member, read through its declared size (zipfile never inflates more)."""
    try:
        with zf.open(info) as member:
            version = np.lib.format.read_magic(member)
            if version not in ((1, 0), (2, 0), (3, 0)):
                raise ValueError(f"unknown .npy version {version}")
            reader = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = reader(member, max_header_size=_MAX_NPY_HEADER)
            if dtype.hasobject:
                raise fail(f"array {name!r} holds pickled objects, which are never loaded")
            count = 1
            for d in shape:
                count *= d
            nbytes = count * dtype.itemsize
            data = member.read(nbytes + 1)
    except ValueError as exc:
        if str(exc).startswith(str(fail(""))):
            raise
        problem = f"array {name!r} is unreadable ({exc}); the file is truncated or corrupted"
        raise fail(problem) from exc
    except Exception as exc:  # zipfile/zlib/npy errors all mean a damaged file
        problem = f"array {name!r} is unreadable ({exc}); the file is truncated or corrupted"
        raise fail(problem) from exc
    if len(data) != nbytes:
        raise fail(
            f"array {name!r} holds {len(data)} bytes, its .npy header needs {nbytes}; the "
            "file is truncated or corrupted"
        )
    a = np.frombuffer(data, dtype=dtype, count=count)
    if fortran:
        return a.reshape(shape[::-1]).T.copy()
    return a.reshape(shape).copy() if a.size else a.reshape(shape)


_SCAN_CHUNK = 2**20


def _scan_json(text: bytes, fail: Callable[[str], ValueError]) -> None:
    """Refuse JSON nested deeper than :data:`MAX_JSON_DEPTH` or with number literals of
    more than :data:`MAX_INT_DIGITS` digits, before ``json.loads`` sees it (which would
    recurse once per level, or convert a 5000-digit integer).

    Linear time, bounded memory: escape pairs are removed first (``\\\\`` then ``\\"``,
    left to right as JSON pairs them), so every remaining quote opens or closes a
    string; brackets are then counted outside strings in 1 MiB chunks."""
    text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    parity = depth = run = longest = 0
    for start in range(0, len(text), _SCAN_CHUNK):
        c = np.frombuffer(text, np.uint8, count=min(_SCAN_CHUNK, len(text) - start), offset=start)
        q = (c == ord('"')).view(np.uint8)
        inside = np.bitwise_xor.accumulate(q) ^ np.uint8(parity)
        parity = int(inside[-1])
        outside = (inside == 0) & (q == 0)
        # the longest run of digits outside strings (carried across chunks)
        breaks = np.flatnonzero(~(outside & (c >= ord("0")) & (c <= ord("9"))))
        if breaks.size == 0:
            run += c.size
            longest = max(longest, run)
        else:
            inner = int((np.diff(breaks) - 1).max()) if breaks.size > 1 else 0
            longest = max(longest, run + int(breaks[0]), inner)
            run = c.size - 1 - int(breaks[-1])
            longest = max(longest, run)
        if longest > MAX_INT_DIGITS:
            raise fail(
                f"malformed {META_KEY} entry (a number with more than {MAX_INT_DIGITS} digits)"
            )
        step = (outside & ((c == ord("[")) | (c == ord("{")))).astype(np.int32)
        step -= outside & ((c == ord("]")) | (c == ord("}")))
        running = np.cumsum(step, dtype=np.int32)
        if depth + int(running.max()) > MAX_JSON_DEPTH:
            raise fail(
                f"malformed {META_KEY} entry (JSON nested deeper than {MAX_JSON_DEPTH} levels)"
            )
        depth += int(running[-1])


def _parse_document(raw: np.ndarray, fail: Callable[[str], ValueError]) -> dict[str, Any]:
    """Decode and validate the ``__meta__`` JSON header."""
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise fail(f"malformed {META_KEY} entry (expected a 1-d uint8 array)")
    if raw.size > MAX_META_BYTES:
        raise fail(f"the {META_KEY} header is over the limit of {MAX_META_BYTES} bytes")
    text = raw.tobytes()
    _scan_json(text, fail)
    try:
        document = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise fail(f"malformed {META_KEY} entry (not valid JSON: {exc})") from exc
    if not isinstance(document, dict):
        raise fail(f"malformed {META_KEY} entry (not a JSON object)")
    if document.get("format") != FORMAT_NAME:
        raise fail(
            f"not a maxmargin model file (format is {str(document.get('format'))[:80]!r}, "
            f"expected {FORMAT_NAME!r})"
        )
    version = document.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise fail(f"invalid format_version {str(version)[:40]!r}")
    if version > FORMAT_VERSION:
        raise fail(
            f"written with model format version {version} (by maxmargin "
            f"{str(document.get('maxmargin_version', '?'))[:40]}); this maxmargin "
            f"({_maxmargin_version()}) reads format version {FORMAT_VERSION} or older; "
            "upgrade maxmargin"
        )
    for key, kind in (("class", str), ("meta", dict), ("arrays", dict), ("sha256", str)):
        if not isinstance(document.get(key), kind):
            raise fail(f"malformed header: {key!r} is missing or not a {kind.__name__}")
    return document


# --------------------------------------------------------------------------- values
def _check_values(name: str, a: np.ndarray, fail: Callable[[str], ValueError]) -> None:
    """Every loaded array: no NaN (infinity is legitimate in a few places, e.g. stump
    thresholds, and is checked by the estimators and by the score probe), and class
    labels without duplicates."""
    if a.dtype.kind in "fc" and a.size and np.isnan(a).any():
        raise fail(f"array {name!r} holds non-finite values (NaN)")
    if name.rsplit(".", 1)[-1] == "classes" and a.ndim == 1 and np.unique(a).size != a.size:
        raise fail(f"array {name!r} lists a class more than once")


def _check_rebuilt(est: Any, name: str, arrays: Mapping[str, np.ndarray], fail: Callable) -> None:
    """The rebuilt model must write the same array dtypes and shapes again (a file whose
    arrays the estimator converted on load -- bool or int weights -- was not written by
    it), and a classifier or ranker must give finite scores of the right width."""
    try:
        _, again = est._get_state()
    except Exception as exc:
        raise fail(f"the rebuilt {name} is inconsistent ({type(exc).__name__}: {exc})") from exc
    for key, b in (again or {}).items():
        a = arrays.get(key)
        if a is None:
            continue
        b = np.asarray(b)
        if a.dtype.kind != b.dtype.kind or a.shape != b.shape:
            raise fail(
                f"array {key!r} is {a.dtype}{list(a.shape)} but a {name} holds "
                f"{b.dtype}{list(b.shape)}: the file was not written by maxmargin"
            )
    n = getattr(est, "n_features_in_", None)
    score = getattr(est, "decision_function", None)
    if not (isinstance(n, int | np.integer) and n >= 1 and callable(score)):
        return
    from sklearn.base import is_classifier

    # classifiers and rankers score feature rows; a structured model (boxes, chains, ...)
    # scores its task's inputs, which a probe row is not
    ranker = type(est).__name__ in ("RankSVM", "StructBoostRanker")
    if not (is_classifier(est) or ranker):
        return
    import warnings

    probe = np.zeros((2, int(n)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = np.asarray(score(probe))
            classes = getattr(est, "classes_", None)
            predict = getattr(est, "predict", None)
            predicted = predict(probe) if classes is not None and callable(predict) else None
    except Exception as exc:
        raise fail(
            f"the {name}'s arrays are inconsistent: a prediction fails "
            f"({type(exc).__name__}: {exc})"
        ) from exc
    if s.dtype.kind not in "fiub" or not np.all(np.isfinite(s)):
        raise fail(f"the {name} gives non-finite scores: its arrays are inconsistent")
    if s.shape[:1] != (2,):
        raise fail(f"the {name} gives scores of shape {s.shape} for 2 samples")
    if classes is not None:
        k = len(classes)
        width = 1 if s.ndim == 1 else s.shape[1]
        if width != k and not (k == 2 and width == 1):
            raise fail(
                f"the {name} lists {k} classes but scores {width}: its classes and weights disagree"
            )
        if predicted is not None and not np.all(
            np.isin(np.asarray(predicted), np.asarray(classes))
        ):
            raise fail(f"the {name} predicts a label outside its classes")
