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

and a class-name registry (:func:`register_model`).  Built-in learners are
listed by dotted path and imported only when first needed.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import secrets
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "load", "register_model", "registered_models", "save"]

FORMAT_NAME = "maxmargin-model"
FORMAT_VERSION = 1
META_KEY = "__meta__"

# Built-in persistable estimators, imported lazily by "module:attribute".
_BUILTIN_MODELS: dict[str, str] = {
    "StructBoost": "maxmargin.learners.structboost:StructBoost",
    "StructBoostClassifier": "maxmargin.learners.structboost:StructBoostClassifier",
    "StructBoostRanker": "maxmargin.learners.structboost_ranker:StructBoostRanker",
    "SSVMClassifier": "maxmargin.learners.ssvm:SSVMClassifier",
    "StructSVM": "maxmargin.learners.ssvm:StructSVM",
    "KernelSSVM": "maxmargin.learners.kernel_ssvm:KernelSSVM",
    "LatentSSVM": "maxmargin.learners.latent_ssvm:LatentSSVM",
    "RankSVM": "maxmargin.learners.ranksvm:RankSVM",
    "MultiBoostCW": "maxmargin.learners.multiboost:MultiBoostCW",
    "MultiBoost": "maxmargin.learners.multiboost:MultiBoost",
    "AdaBoostMH": "maxmargin.learners.adaboost:AdaBoostMH",
    "AdaBoostECC": "maxmargin.learners.adaboost:AdaBoostECC",
    "AdaBoostMO": "maxmargin.learners.adaboost:AdaBoostMO",
    "Segmenter": "maxmargin.apps.segmentation.segmenter:Segmenter",
    "HOGSVMDetector": "maxmargin.apps.detection.detector:HOGSVMDetector",
    "CascadeDetector": "maxmargin.apps.detection.detector:CascadeDetector",
    "ProposalRanker": "maxmargin.apps.detection.detector:ProposalRanker",
    "SVMClassifier": "maxmargin.learners.svm:SVMClassifier",
    "SimilarityFeatures": "maxmargin.learners.similarity:SimilarityFeatures",
    "SparseKernelSVM": "maxmargin.learners.sparse_kernel_svm:SparseKernelSVM",
    "AdditiveKernelMap": "maxmargin.learners.kernel_approx:AdditiveKernelMap",
    "BinaryAdaBoost": "maxmargin.learners.binary_adaboost:BinaryAdaBoost",
    "BoostedCascade": "maxmargin.learners.cascade:BoostedCascade",
    "TCBoostClassifier": "maxmargin.learners.tcboost:TCBoostClassifier",
    "ForwardFeatureSelector": "maxmargin.learners.feature_selection:ForwardFeatureSelector",
}
_REGISTRY: dict[str, type] = {}

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
def register_model(cls: T | None = None, *, name: str | None = None) -> Any:
    """Register a persistable estimator class under ``name`` (default: its ``__name__``).

    Usable as ``@register_model`` or ``@register_model(name="Other")``.  The class
    must provide ``_get_state`` and a ``_from_state`` classmethod.
    """

    def decorate(klass: T) -> T:
        if not (callable(getattr(klass, "_get_state", None))):
            raise TypeError(f"{klass.__name__} has no _get_state() method")
        if not (callable(getattr(klass, "_from_state", None))):
            raise TypeError(f"{klass.__name__} has no _from_state() classmethod")
        key = name or klass.__name__
        other = _REGISTRY.get(key)
        if other is not None and other is not klass:
            raise ValueError(f"model name {key!r} is already registered to {other!r}")
        _REGISTRY[key] = klass
        return klass

    if cls is None:
        return decorate
    return decorate(cls)


def registered_models() -> list[str]:
    """Names of all classes that :func:`load` can rebuild (built-ins included)."""
    return sorted(set(_REGISTRY) | set(_BUILTIN_MODELS))


def _resolve_class(name: str) -> type:
    """Return the class registered as ``name``, importing a built-in on first use."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    target = _BUILTIN_MODELS.get(name)
    if target is None:
        raise KeyError(name)
    module_name, _, attr = target.partition(":")
    klass = getattr(importlib.import_module(module_name), attr)
    _REGISTRY.setdefault(name, klass)
    return klass


def _class_name(model: Any) -> str:
    """Registered name of ``type(model)``; raises ``ValueError`` if it has none."""
    klass = type(model)
    for key, value in _REGISTRY.items():
        if value is klass:
            return key
    # A built-in can be recognised by its dotted path without importing anything.
    dotted = f"{klass.__module__}:{klass.__qualname__}"
    for key, target in _BUILTIN_MODELS.items():
        if target == dotted:
            return key
    raise ValueError(
        f"cannot save a {klass.__name__}: the class is not registered for persistence "
        "(decorate it with maxmargin.io.register_model)"
    )


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
    directory = path.parent if str(path.parent) else Path(".")
    tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # os.open with 0o666 honours the umask, like an ordinary open(path, "wb").
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            # The same layout as np.savez_compressed, written directly so array names
            # can never collide with savez's own keyword arguments.
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for name, array in payload.items():
                    with zf.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, array, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


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


# --------------------------------------------------------------------------- load
def load(path: str | os.PathLike[str], *, key: bytes | str | None = None) -> Any:
    """Read a model written by :func:`save` and rebuild the estimator.

    A missing file raises ``FileNotFoundError``; every other problem (not a model
    file, truncated, wrong format, newer format version, checksum mismatch,
    unknown class, missing array, ...) raises ``ValueError`` naming the file.  With
    ``key``, the file must carry a valid HMAC signature made with that key (see
    :func:`save`); the signature is checked before the estimator is rebuilt.
    """
    import hmac

    path = Path(path)
    document, arrays = _read_npz(path)

    def fail(problem: str) -> ValueError:
        return ValueError(f"{path}: {problem}")

    if key is not None:
        signature = document.get("signature")
        if not isinstance(signature, str):
            raise fail("the file is not signed, but a key was given")
        if not hmac.compare_digest(signature, _signature(key, document["sha256"])):
            raise fail("bad signature: the file was not signed with this key")

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
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise fail(f"could not rebuild {name} from the saved state: {exc!r}") from exc
    names = document.get("feature_names_in")
    if names is not None:
        n = getattr(est, "n_features_in_", None)
        if not isinstance(names, list) or not all(isinstance(v, str) for v in names):
            raise fail("feature_names_in must be a list of strings")
        if n is not None and len(names) != n:
            raise fail(f"{len(names)} feature names for {n} features")
        est.feature_names_in_ = np.asarray(names, dtype=object)
    return est


def file_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The verified envelope of a model file: class, format and package versions,
    checksum and the arrays' names, dtypes and shapes (the model is not rebuilt)."""
    document, _ = _read_npz(Path(path))
    return {k: document[k] for k in document if k not in ("meta",)}


def _read_npz(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read and fully verify a model file; returns (document, arrays)."""

    def fail(problem: str) -> ValueError:
        return ValueError(f"{path}: {problem}")

    with open(path, "rb") as fh:  # FileNotFoundError / IsADirectoryError propagate
        head = fh.read(4)
        if not head:
            raise fail("empty file (not a maxmargin model)")
        if head != b"PK\x03\x04":
            raise fail("not a maxmargin model file (not an .npz/zip archive)")
        fh.seek(0)
        try:
            npz = np.load(fh, allow_pickle=False)
        except Exception as exc:  # BadZipFile, EOFError, zlib.error, ...: all mean corrupt
            raise fail(f"truncated or corrupted model file ({exc})") from exc
        with npz:
            if META_KEY not in npz.files:
                raise fail(f"not a maxmargin model file (no {META_KEY} entry)")
            document = _parse_document(_read_member(npz, META_KEY, fail), fail)
            spec = document["arrays"]
            stored = set(npz.files) - {META_KEY}
            missing = sorted(set(spec) - stored)
            if missing:
                raise fail(f"missing array(s) {', '.join(map(repr, missing))} (truncated file?)")
            extra = sorted(stored - set(spec))
            if extra:
                raise fail(f"unexpected array(s) {', '.join(map(repr, extra))} (file was modified)")
            arrays = {name: _read_member(npz, name, fail) for name in sorted(spec)}

    for name, a in arrays.items():
        want = spec[name]
        if not isinstance(want, dict) or _dtype_descr(a.dtype) != want.get("dtype"):
            raise fail(f"array {name!r} has dtype {a.dtype}, the header says {want!r}")
        if list(a.shape) != want.get("shape"):
            raise fail(f"array {name!r} has shape {a.shape}, the header says {want!r}")
    if _checksum(document, arrays) != document["sha256"]:
        raise fail("checksum mismatch: the file is corrupted or was modified after saving")
    return document, arrays


def _read_member(npz: Any, name: str, fail: Callable[[str], ValueError]) -> np.ndarray:
    try:
        a = npz[name]
    except Exception as exc:  # zipfile/zlib/npy errors all mean a damaged file
        if isinstance(exc, ValueError) and "pickle" in str(exc):
            raise fail(f"array {name!r} holds pickled objects, which are never loaded") from exc
        problem = f"array {name!r} is unreadable ({exc}); the file is truncated or corrupted"
        raise fail(problem) from exc
    if a.dtype.hasobject:  # cannot happen with allow_pickle=False, but be explicit
        raise fail(f"array {name!r} has object dtype, which is refused")
    return a


def _parse_document(raw: np.ndarray, fail: Callable[[str], ValueError]) -> dict[str, Any]:
    """Decode and validate the ``__meta__`` JSON header."""
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise fail(f"malformed {META_KEY} entry (expected a 1-d uint8 array)")
    try:
        document = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise fail(f"malformed {META_KEY} entry (not valid JSON: {exc})") from exc
    if not isinstance(document, dict):
        raise fail(f"malformed {META_KEY} entry (not a JSON object)")
    if document.get("format") != FORMAT_NAME:
        raise fail(
            f"not a maxmargin model file (format is {document.get('format')!r}, "
            f"expected {FORMAT_NAME!r})"
        )
    version = document.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise fail(f"invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise fail(
            f"written with model format version {version} (by maxmargin "
            f"{document.get('maxmargin_version', '?')}); this maxmargin "
            f"({_maxmargin_version()}) reads format version {FORMAT_VERSION} or older; "
            "upgrade maxmargin"
        )
    for key, kind in (("class", str), ("meta", dict), ("arrays", dict), ("sha256", str)):
        if not isinstance(document.get(key), kind):
            raise fail(f"malformed header: {key!r} is missing or not a {kind.__name__}")
    return document
