"""Model persistence: round trips, integrity checks, atomic writes, no pickle."""

from __future__ import annotations

import io as pyio
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from maxmargin import io as mmio


@mmio.register_model
class DummyCentroid(ClassifierMixin, BaseEstimator):
    """Nearest-centroid classifier implementing the persistence hooks."""

    def __init__(self, shrink=0.0):
        self.shrink = shrink

    def fit(self, X, y):
        X = np.asarray(X, dtype=float)
        self.classes_, yi = np.unique(y, return_inverse=True)
        self.centroids_ = np.stack([X[yi == k].mean(axis=0) for k in range(len(self.classes_))])
        self.counts_ = np.bincount(yi).astype(np.int32)
        self.n_features_in_ = X.shape[1]
        self.history_ = [{"iteration": 1, "objective": 0.5}]
        return self

    def decision_function(self, X):
        d = np.asarray(X, dtype=float)[:, None, :] - self.centroids_[None]
        return -(d**2).sum(axis=2) * (1 - self.shrink)

    def predict(self, X):
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]

    def _get_state(self):
        meta = {
            "params": self.get_params(),
            "n_features_in": self.n_features_in_,
            "history": self.history_,
        }
        arrays = {"classes": self.classes_, "centroids": self.centroids_, "counts": self.counts_}
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        est = cls(**meta["params"])
        est.n_features_in_ = meta["n_features_in"]
        est.history_ = meta["history"]
        est.classes_ = arrays["classes"]
        est.centroids_ = arrays["centroids"]
        est.counts_ = arrays["counts"]
        return est


def _data(seed=0, n=60, labels=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.array(labels), n // len(labels))
    X = rng.normal(size=(len(y), 4)) + np.repeat(np.arange(len(labels)), n // len(labels))[:, None]
    return X, y


@pytest.fixture
def model_file(tmp_path):
    X, y = _data()
    path = tmp_path / "model.mm"
    mmio.save(DummyCentroid(shrink=0.25).fit(X, y), path)
    return path


def _members(path):
    """(header document, {array name: raw .npy member bytes}) of a model file."""
    with zipfile.ZipFile(path) as zf:
        raw = {name.removesuffix(".npy"): zf.read(name) for name in zf.namelist()}
    meta = np.load(pyio.BytesIO(raw.pop(mmio.META_KEY)), allow_pickle=False)
    return json.loads(meta.tobytes()), raw


def _rewrite(path, document, raw_members):
    """Write a model file from a header and raw members, bypassing save()'s checks."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in raw_members.items():
            zf.writestr(name + ".npy", data)
        buf = pyio.BytesIO()
        blob = json.dumps(document).encode()
        np.lib.format.write_array(buf, np.frombuffer(blob, dtype=np.uint8))
        zf.writestr(mmio.META_KEY + ".npy", buf.getvalue())


def _npy_bytes(array):
    buf = pyio.BytesIO()
    np.lib.format.write_array(buf, array)
    return buf.getvalue()


def _reseal(document, raw_members):
    """Recompute the checksum so a crafted file gets past the integrity check."""
    arrays = {k: np.load(pyio.BytesIO(v), allow_pickle=False) for k, v in raw_members.items()}
    document = {k: v for k, v in document.items() if k != "sha256"}
    document["sha256"] = mmio._checksum(document, arrays)
    return document


# --------------------------------------------------------------------------- round trips
def test_dummy_round_trip_identical_predictions(tmp_path):
    X, y = _data()
    est = DummyCentroid(shrink=0.25).fit(X, y)
    path = mmio.save(est, tmp_path / "m.mm")
    loaded = mmio.load(path)
    assert type(loaded) is DummyCentroid
    assert loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    assert loaded.classes_.dtype == est.classes_.dtype
    assert loaded.counts_.dtype == np.int32
    np.testing.assert_equal(loaded.history_, est.history_)  # NaN-aware


def test_structboost_round_trip_identical_predictions(tmp_path):
    from maxmargin.learners.structboost import StructBoostClassifier

    X, y = _data(n=45, labels=(0, 1, 2))
    est = StructBoostClassifier(max_iter=8, random_state=0).fit(X, y)
    path = mmio.save(est, tmp_path / "sb.mm")
    loaded = mmio.load(path)
    assert type(loaded) is StructBoostClassifier
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(loaded.classes_, est.classes_)
    assert loaded.n_features_in_ == est.n_features_in_
    assert len(loaded.history_) == len(est.history_)
    params = {k: v for k, v in est.get_params().items() if k != "callback"}
    assert {k: v for k, v in loaded.get_params().items() if k != "callback"} == params


def test_file_layout_and_header(model_file):
    document, raw = _members(model_file)
    assert document["format"] == "maxmargin-model"
    assert document["format_version"] == 1
    assert document["class"] == "DummyCentroid"
    assert isinstance(document["maxmargin_version"], str)
    assert document["meta"]["params"] == {"shrink": 0.25}
    assert set(document["arrays"]) == set(raw) == {"classes", "centroids", "counts"}
    assert len(document["sha256"]) == 64
    with np.load(model_file, allow_pickle=False) as npz:  # plain .npz, readable by numpy
        assert npz["centroids"].shape == (3, 4)


def test_builtin_models_are_imported_lazily():
    # Bypass the package __init__ (which imports the learners) to see what io.py pulls in.
    pkg_dir = str(Path(mmio.__file__).parent)
    code = (
        "import sys, types; "
        f"pkg = types.ModuleType('maxmargin'); pkg.__path__ = [{pkg_dir!r}]; "
        "sys.modules['maxmargin'] = pkg; "
        "import maxmargin.io as m; "
        "assert not any(k.startswith('maxmargin.learners') for k in sys.modules), sys.modules; "
        "assert m._resolve_class('StructBoostClassifier').__name__ == 'StructBoostClassifier'; "
        "assert 'maxmargin.learners.structboost' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------- save-side checks
def test_save_unfitted_raises(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        mmio.save(DummyCentroid(), tmp_path / "m.mm")
    assert list(tmp_path.iterdir()) == []


def test_save_unregistered_class_raises(tmp_path):
    class Unregistered(DummyCentroid):
        pass

    X, y = _data()
    with pytest.raises(ValueError, match="not registered"):
        mmio.save(Unregistered().fit(X, y), tmp_path / "m.mm")


def test_save_refuses_object_arrays(tmp_path):
    X, y = _data()
    est = DummyCentroid().fit(X, y)
    est.classes_ = est.classes_.astype(object)
    with pytest.raises(ValueError, match="object dtype"):
        mmio.save(est, tmp_path / "m.mm")
    assert list(tmp_path.iterdir()) == []


def test_save_refuses_non_json_meta(tmp_path):
    X, y = _data()
    est = DummyCentroid(shrink={1, 2}).fit(X, y)  # a set is not JSON
    with pytest.raises(ValueError, match="JSON"):
        mmio.save(est, tmp_path / "m.mm")


# --------------------------------------------------------------------------- atomic writes
def test_atomic_write_leaves_no_temp_file(tmp_path, model_file):
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.mm"]
    X, y = _data(seed=1)
    mmio.save(DummyCentroid().fit(X, y), model_file)  # overwrite in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.mm"]
    assert mmio.load(model_file).shrink == 0.0


def test_failed_write_keeps_old_file_and_cleans_up(tmp_path, model_file, monkeypatch):
    before = model_file.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", boom)
    X, y = _data(seed=2)
    with pytest.raises(OSError, match="disk full"):
        mmio.save(DummyCentroid().fit(X, y), model_file)
    assert model_file.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.mm"]


# --------------------------------------------------------------------------- load-side checks
def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        mmio.load(tmp_path / "nope.mm")


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9, 0.99])
def test_truncated_file(model_file, fraction):
    data = model_file.read_bytes()
    model_file.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ValueError, match=r"model\.mm: .*(empty|truncated|corrupt)"):
        mmio.load(model_file)


def test_every_truncation_is_detected(model_file):
    data = model_file.read_bytes()
    for cut in range(0, len(data), 7):
        model_file.write_bytes(data[:cut])
        with pytest.raises(ValueError):
            mmio.load(model_file)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"1,2,3\n4,5,6\n", "not an .npz"),
        (b"\x80\x04\x95 pickle-ish bytes", "not an .npz"),
    ],
)
def test_not_a_model_file(tmp_path, content, message):
    path = tmp_path / "bad.mm"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        mmio.load(path)


def test_plain_npz_without_meta(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, w=np.zeros(3))
    with pytest.raises(ValueError, match="no __meta__"):
        mmio.load(path)


def test_tampered_array_fails_checksum(model_file):
    document, raw = _members(model_file)
    centroids = np.load(pyio.BytesIO(raw["centroids"]), allow_pickle=False)
    raw["centroids"] = _npy_bytes(centroids + 1e-9)
    _rewrite(model_file, document, raw)
    with pytest.raises(ValueError, match="checksum mismatch"):
        mmio.load(model_file)


def test_tampered_meta_fails_checksum(model_file):
    document, raw = _members(model_file)
    document["meta"]["params"]["shrink"] = 0.5
    _rewrite(model_file, document, raw)
    with pytest.raises(ValueError, match="checksum mismatch"):
        mmio.load(model_file)


def test_flipped_payload_byte_is_detected(model_file):
    data = bytearray(model_file.read_bytes())
    with zipfile.ZipFile(model_file) as zf:
        info = zf.getinfo("centroids.npy")
    data[info.header_offset + 30 + len(info.filename) + 40] ^= 0xFF  # inside the deflate stream
    model_file.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"model\.mm"):
        mmio.load(model_file)


def test_wrong_format_name(model_file):
    document, raw = _members(model_file)
    document["format"] = "something-else"
    _rewrite(model_file, document, raw)
    with pytest.raises(ValueError, match="format is 'something-else'"):
        mmio.load(model_file)


def test_newer_format_version(model_file):
    document, raw = _members(model_file)
    document["format_version"] = 99
    _rewrite(model_file, document, raw)
    with pytest.raises(ValueError, match=r"format version 99.*upgrade"):
        mmio.load(model_file)


def test_unknown_class(model_file):
    document, raw = _members(model_file)
    document["class"] = "NoSuchModel"
    _rewrite(model_file, _reseal(document, raw), raw)
    with pytest.raises(ValueError, match="unknown model class 'NoSuchModel'"):
        mmio.load(model_file)


def test_missing_array(model_file):
    document, raw = _members(model_file)
    del raw["counts"]
    _rewrite(model_file, document, raw)
    with pytest.raises(ValueError, match=r"missing array.*'counts'"):
        mmio.load(model_file)


def test_unexpected_extra_array(model_file):
    document, raw = _members(model_file)
    raw["payload"] = _npy_bytes(np.arange(3))
    _rewrite(model_file, document, raw)
    with pytest.raises(ValueError, match=r"unexpected array.*'payload'"):
        mmio.load(model_file)


def test_pickled_object_array_is_never_unpickled(model_file):
    document, raw = _members(model_file)
    buf = pyio.BytesIO()
    np.lib.format.write_array(buf, np.array([os.getcwd, None], dtype=object), allow_pickle=True)
    raw["classes"] = buf.getvalue()
    _rewrite(model_file, document, raw)
    with pytest.raises(ValueError, match="pickled objects"):
        mmio.load(model_file)


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "some-model-name.mm"
    path.write_bytes(b"garbage")
    with pytest.raises(ValueError, match=re.escape(str(path))):
        mmio.load(path)


# ------------------------------------------------------ consistent edits, checksum recomputed
def _structboost_file(tmp_path, weak_learner):
    from maxmargin import StructBoostClassifier

    X, y = _data()
    path = tmp_path / f"sb_{weak_learner}.mm"
    est = StructBoostClassifier(max_iter=8, weak_learner=weak_learner, random_state=0)
    mmio.save(est.fit(X, y), path)
    return path


def _edit(path, name, change):
    document, raw = _members(path)
    arr = np.load(pyio.BytesIO(raw[name]), allow_pickle=False)
    raw[name] = _npy_bytes(change(arr.copy()))
    _rewrite(path, _reseal(document, raw), raw)


@pytest.mark.parametrize(
    "weak_learner,name,change,message",
    [
        ("stump", "hyp.feature", lambda a: a + 1000, "out of range"),
        ("stump", "hyp.feature", lambda a: a - 1000, "out of range"),
        ("stump", "hyp.threshold", lambda a: a * np.nan, "NaN"),
        ("stump", "hyp.polarity", lambda a: 3 * a, "polarity"),
        ("stump", "hyp.feature", lambda a: a[:-1], "has shape|different lengths"),
        ("stump", "slot_weights", lambda a: a * np.inf, "non-finite"),
        ("tree", "hyp.feature", lambda a: a + 1000, "out of range"),
        ("tree", "hyp.depth", lambda a: a + 1, "depth"),
        ("real_stump", "hyp.v_lo", lambda a: a * np.nan, "non-finite"),
        ("perceptron", "hyp.activation", lambda a: a + 7, "activation"),
    ],
)
def test_consistent_hostile_edit_is_refused(tmp_path, weak_learner, name, change, message):
    """An edited file whose checksum was recomputed still gets a clear error before any
    numba kernel indexes with its arrays."""
    path = _structboost_file(tmp_path, weak_learner)
    _edit(path, name, change)
    with pytest.raises(ValueError, match=message):
        mmio.load(path)


def test_signed_model_files(tmp_path, monkeypatch):
    X, y = _data()
    est = DummyCentroid().fit(X, y)
    signed, plain = tmp_path / "signed.mm", tmp_path / "plain.mm"
    mmio.save(est, signed, key="team secret")
    mmio.save(est, plain)
    np.testing.assert_array_equal(mmio.load(signed, key="team secret").predict(X), est.predict(X))
    mmio.load(signed)  # the checksum still guards integrity without a key
    with pytest.raises(ValueError, match="bad signature"):
        mmio.load(signed, key="another key")
    with pytest.raises(ValueError, match="not signed"):
        mmio.load(plain, key="team secret")
    # a consistent edit with a recomputed checksum cannot recompute the signature
    document, raw = _members(signed)
    document["meta"]["params"]["shrink"] = 0.5
    _rewrite(signed, _reseal(document, raw), raw)
    mmio.load(signed)  # without a key the edit passes the checksum ...
    with pytest.raises(ValueError, match="bad signature"):
        mmio.load(signed, key="team secret")  # ... but not the signature


def test_an_infinite_count_in_a_file_is_a_value_error(model_file, monkeypatch):
    """JSON allows ``Infinity``; a learner's ``int(count)`` of it raises OverflowError,
    which load reports as the file's fault (ValueError), never as a crash."""
    document, raw = _members(model_file)
    document["meta"]["n_features_in"] = float("inf")
    _rewrite(model_file, _reseal(document, raw), raw)
    rebuild = DummyCentroid._from_state.__func__

    def strict(cls, meta, arrays):
        est = rebuild(cls, meta, arrays)
        est.n_features_in_ = int(meta["n_features_in"])  # as the learners do
        return est

    monkeypatch.setattr(DummyCentroid, "_from_state", classmethod(strict))
    with pytest.raises(ValueError, match=r"could not rebuild DummyCentroid.*OverflowError"):
        mmio.load(model_file)
