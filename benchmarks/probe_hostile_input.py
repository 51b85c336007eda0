"""Probe: 800+ bad, hostile or odd inputs through the CLI and the Python API (issue 32).

Every case is generated here (nothing from ../shared is needed) and its outcome is
classified:

* ``refused``      -- a clean refusal (exit status 2 / ValueError-like) naming the file;
* ``unclear``      -- refused, but the message does not name the file;
* ``crash``        -- exit status 1 ("unexpected ...") or an exception of another kind;
* ``silent_wrong`` -- accepted although the input is bad, or an odd-but-valid input
  accepted with a result that differs from the reference;
* ``data_lost``    -- an input or a previous output was modified or destroyed, or a
  temporary file was left behind;
* ``ok``           -- an odd-but-valid input accepted with the reference result, or a
  harmless byte edit (e.g. a zip timestamp) loaded with identical predictions;
* ``false_refusal`` -- an odd-but-valid input refused;
* ``needs_key``    -- an attacker's consistent edit of values (e.g. relabelled classes)
  with the checksum recomputed: a valid model, so it loads without a key (no checksum can
  tell), and the same edit of a signed file is refused with the key.

The goal: 0 crash, 0 silent_wrong, 0 data_lost.  Model files whose declared sizes
disagree with their content are also timed (wall clock, tracemalloc peak).

    python benchmarks/probe_hostile_input.py [--out benchmarks/results/probe_hostile_input.json]
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io as pyio
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_result
from maxmargin import io as mmio
from maxmargin.cli import main

CLEAR = (ValueError, TypeError, FileNotFoundError, IsADirectoryError, PermissionError)


class Probe:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.rows: list[dict] = []
        self.timings: list[dict] = []

    # ------------------------------------------------------------------ recording
    def record(self, category: str, name: str, outcome: str, detail: str = "") -> None:
        self.rows.append(
            {"category": category, "case": name, "outcome": outcome, "detail": detail[:300]}
        )

    # ------------------------------------------------------------------ runners
    @staticmethod
    def cli(args) -> tuple[int, str, str]:
        out, err = pyio.StringIO(), pyio.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main([str(a) for a in args])
            except BaseException as exc:  # main() must never raise
                rc = -1
                err.write(f"RAISED {type(exc).__name__}: {exc}")
        return rc, out.getvalue(), err.getvalue()

    def snapshot(self, paths) -> dict:
        snap = {}
        for p in paths:
            p = Path(p)
            snap[p] = p.read_bytes() if p.is_file() else None
        return snap

    def lost(self, snap: dict, folders=()) -> str:
        for p, before in snap.items():
            now = p.read_bytes() if p.is_file() else None
            if now != before:
                return f"{p} changed"
        for d in {*(p.parent for p in snap), *map(Path, folders)}:
            if d.is_dir():
                tmp = [q.name for q in d.iterdir() if q.name.endswith(".tmp")]
                if tmp:
                    for q in tmp:
                        (d / q).unlink()
                    return f"temporary files left: {tmp}"
        return ""

    def expect_refusal(self, category, name, args, names, protected=(), folders=()):
        snap = self.snapshot(protected)
        rc, out, err = self.cli(args)
        lost = self.lost(snap, folders)
        if lost:
            outcome = "data_lost"
        elif rc == 2:
            outcome = "refused" if any(str(n) in err for n in names) else "unclear"
        elif rc == 0:
            outcome = "silent_wrong"
        else:
            outcome = "crash"
        last = err.strip().splitlines()[-1] if err.strip() else ""
        self.record(category, name, outcome, lost or last)
        return rc, out, err

    def expect_accept(self, category, name, args, check, protected=()):
        snap = self.snapshot(protected)
        rc, out, err = self.cli(args)
        lost = self.lost(snap)
        if lost:
            outcome = "data_lost"
        elif rc == 0:
            outcome = "ok" if check(out) else "silent_wrong"
        elif rc == 2:
            outcome = "false_refusal"
        else:
            outcome = "crash"
        self.record(category, name, outcome, lost or err.strip()[-300:])

    def api(self, category, name, fn, names=(), accept=None):
        """``fn()`` must raise a clear error (naming one of ``names`` if given); with
        ``accept``, returning a value that ``accept(value)`` approves is also fine."""
        try:
            value = fn()
        except CLEAR as exc:
            msg = str(exc)
            ok = not names or any(str(n) in msg for n in names)
            self.record(category, name, "refused" if ok else "unclear", msg)
            return
        except Exception as exc:
            self.record(category, name, "crash", f"{type(exc).__name__}: {exc}")
            return
        if accept is not None and accept(value):
            self.record(category, name, "ok")
        else:
            self.record(category, name, "silent_wrong", "no error")


# ====================================================================== fixtures
def make_fixtures(root: Path) -> dict:
    from sklearn.datasets import dump_svmlight_file, load_iris

    from maxmargin import StructBoostClassifier
    from maxmargin.learners.adaboost import AdaBoostMH
    from maxmargin.learners.multiboost import MultiBoostCW
    from maxmargin.learners.ranksvm import RankSVM
    from maxmargin.learners.ssvm import SSVMClassifier

    X, y = load_iris(return_X_y=True)
    f = {"X": X, "y": y}
    dump_svmlight_file(X, y, str(root / "train.svm"), zero_based=False)
    np.savetxt(
        root / "train.csv",
        np.column_stack([X, y]),
        delimiter=",",
        fmt="%g",
        header="a,b,c,d,label",
        comments="",
    )
    f["svm"], f["csv"] = root / "train.svm", root / "train.csv"
    assert _main(["fit", f["svm"], "-o", root / "svm.mm", "--max-iter", "5", "--quiet"]) == 0
    assert _main(["fit", f["csv"], "-o", root / "csv.mm", "--max-iter", "5", "--quiet"]) == 0
    f["svm_model"], f["csv_model"] = root / "svm.mm", root / "csv.mm"
    rng = np.random.default_rng(0)
    models = {
        "structboost": StructBoostClassifier(max_iter=5, random_state=0).fit(X, y),
        "ssvm": SSVMClassifier(C=1.0).fit(X, y),
        "multiboost_cw": MultiBoostCW(max_iter=5).fit(X, y),
        "adaboost_mh": AdaBoostMH(max_iter=5).fit(X, y),
        "ranksvm": RankSVM(C=1.0).fit(X, y.astype(float), group=np.repeat(np.arange(5), 30)),
    }
    f["models"] = {}
    for name, est in models.items():
        path = root / f"{name}.mm"
        mmio.save(est, path)
        f["models"][name] = path
    f["rng"] = rng
    return f


def _main(args) -> int:
    return main([str(a) for a in args])


def _members(path):
    with zipfile.ZipFile(path) as zf:
        raw = {n.removesuffix(".npy"): zf.read(n) for n in zf.namelist()}
    meta = np.load(pyio.BytesIO(raw.pop(mmio.META_KEY)), allow_pickle=False)
    return json.loads(meta.tobytes()), raw


def _npy(a) -> bytes:
    buf = pyio.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def _write_model(path, meta: bytes, raw: dict, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for k, v in raw.items():
            zf.writestr(k + ".npy", v)
        zf.writestr(mmio.META_KEY + ".npy", _npy(np.frombuffer(meta, dtype=np.uint8)))


def _reseal(document, raw):
    arrays = {k: np.load(pyio.BytesIO(v), allow_pickle=False) for k, v in raw.items()}
    document = {k: v for k, v in document.items() if k not in ("sha256", "signature")}
    document["arrays"] = {
        k: {"dtype": mmio._dtype_descr(a.dtype), "shape": list(a.shape)} for k, a in arrays.items()
    }
    document["sha256"] = mmio._checksum(document, arrays)
    return document


def _predict(est, X):
    if hasattr(est, "classes_") and hasattr(est, "predict"):
        return np.asarray(est.predict(X))
    return np.asarray(est.decision_function(X))


# ====================================================================== model files
def model_cases(p: Probe, f: dict) -> None:
    X = f["X"]
    work = p.root / "models"
    work.mkdir()
    target = work / "victim.mm"

    def load_case(category, name, blob=None, key=None, timed=False):
        if blob is not None:
            target.write_bytes(blob)
        t0 = time.perf_counter()
        if timed:
            tracemalloc.start()
        try:
            est = mmio.load(target, key=key)
        except CLEAR as exc:
            ok = "victim.mm" in str(exc)
            p.record(category, name, "refused" if ok else "unclear", str(exc))
            est = None
        except Exception as exc:
            p.record(category, name, "crash", f"{type(exc).__name__}: {exc}")
            est = None
        finally:
            if timed:
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                p.timings.append(
                    {
                        "case": name,
                        "file_bytes": target.stat().st_size,
                        "seconds": round(time.perf_counter() - t0, 4),
                        "peak_mib": round(peak / 2**20, 2),
                    }
                )
        return est

    for mname, path in f["models"].items():
        ref_est = mmio.load(path)
        ref = _predict(ref_est, X)
        data = path.read_bytes()
        # truncations
        for frac in np.linspace(0, 0.995, 24):
            load_case(
                "model:truncated", f"{mname} cut at {frac:.3f}", data[: int(len(data) * frac)]
            )
        # random byte edits: refused, or loaded with identical predictions (a timestamp)
        rng = np.random.default_rng(len(mname))
        for k in range(50):
            blob = bytearray(data)
            for pos in rng.integers(0, len(blob), size=rng.integers(1, 4)):
                blob[pos] = rng.integers(0, 256)
            target.write_bytes(bytes(blob))
            try:
                est = mmio.load(target)
            except CLEAR as exc:
                ok = "victim.mm" in str(exc)
                p.record(
                    "model:fuzzed", f"{mname} fuzz {k}", "refused" if ok else "unclear", str(exc)
                )
                continue
            except Exception as exc:
                p.record(
                    "model:fuzzed", f"{mname} fuzz {k}", "crash", f"{type(exc).__name__}: {exc}"
                )
                continue
            same = np.array_equal(_predict(est, X), ref)
            p.record(
                "model:fuzzed",
                f"{mname} fuzz {k}",
                "ok" if same else "silent_wrong",
                "loaded; harmless byte" if same else "loaded with different predictions",
            )
        # consistent edits with a recomputed checksum (the checksum is not a signature):
        # an edit that loads and changes predictions is re-tried on a signed copy
        document, raw = _members(path)
        signed_path = work / f"{mname}.signed.mm"
        mmio.save(ref_est, signed_path, key="probe-key")
        signed_doc, _ = _members(signed_path)
        edits = {
            "nan": lambda a: a * np.nan if a.dtype.kind == "f" else None,
            "append": lambda a: np.append(a, a.ravel()[:1]) if a.ndim == 1 and a.size else None,
            "drop": lambda a: a[:-1] if a.ndim >= 1 and len(a) > 1 else None,
            "bool": lambda a: a.astype(bool) if a.dtype.kind in "fiu" else None,
            "structured": lambda a: np.zeros(a.shape, dtype=[("v", "<f8")]),
            "complex": lambda a: a.astype(complex) if a.dtype.kind == "f" else None,
            "transpose": lambda a: a.T.copy() if a.ndim == 2 and a.shape[0] != a.shape[1] else None,
            "extra_dim": lambda a: a[None] if a.size else None,
            "int_big": lambda a: (
                np.full(a.shape, 2**40, np.int64) if a.dtype.kind in "iu" else None
            ),
            "negative": lambda a: -np.abs(a) - 1 if a.dtype.kind in "i" else None,
        }
        for arr_name in sorted(raw):
            a = np.load(pyio.BytesIO(raw[arr_name]), allow_pickle=False)
            for edit, change in edits.items():
                b = change(a.copy())
                if b is None:
                    continue
                raw2 = dict(raw)
                raw2[arr_name] = _npy(b)
                try:
                    meta = json.dumps(_reseal(document, raw2)).encode()
                except Exception:
                    continue
                buf = pyio.BytesIO()
                _write_model(buf, meta, raw2)
                target.write_bytes(buf.getvalue())
                name = f"{mname} {arr_name} {edit}"
                try:
                    est = mmio.load(target)
                except CLEAR as exc:
                    p.record(
                        "model:edited",
                        name,
                        "refused" if "victim.mm" in str(exc) else "unclear",
                        str(exc),
                    )
                    continue
                except Exception as exc:
                    p.record("model:edited", name, "crash", f"{type(exc).__name__}: {exc}")
                    continue
                try:
                    same = np.array_equal(_predict(est, X), ref)
                except Exception as exc:
                    p.record(
                        "model:edited", name, "crash", f"after load: {type(exc).__name__}: {exc}"
                    )
                    continue
                if same:
                    p.record("model:edited", name, "ok", "loaded, same predictions")
                    continue
                # the same edit of a signed file, loaded with its key
                resealed = _reseal(signed_doc, raw2)
                resealed["signature"] = signed_doc["signature"]
                buf = pyio.BytesIO()
                _write_model(buf, json.dumps(resealed).encode(), raw2)
                target.write_bytes(buf.getvalue())
                try:
                    mmio.load(target, key="probe-key")
                    outcome, detail = "silent_wrong", "loaded, predictions differ, even with a key"
                except CLEAR as exc:
                    outcome, detail = (
                        "needs_key",
                        f"value edit: loads without a key; with one: {exc}",
                    )
                p.record("model:edited", name, outcome, detail)

    # structural attacks on one model
    path = f["models"]["structboost"]
    document, raw = _members(path)

    def build(meta: bytes, members=raw, compression=zipfile.ZIP_DEFLATED) -> bytes:
        buf = pyio.BytesIO()
        _write_model(buf, meta, members, compression)
        return buf.getvalue()

    meta = json.dumps(document).encode()
    for depth in (65, 100, 1000, 10_000, 200_000):
        nested = b'{"format": "maxmargin-model", "x": ' + b"[" * depth + b"]" * depth + b"}"
        load_case("model:nested", f"depth {depth}", build(nested))
        load_case("model:nested", f"depth {depth} with key", build(nested), key="k")
        nested_obj = (
            b'{"format": "maxmargin-model", "x": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
        )
        load_case("model:nested", f"object depth {depth}", build(nested_obj))
    for digits in (25, 100, 4301, 5000, 100_000):
        text = meta.replace(b'"format_version": 1', b'"format_version": ' + b"9" * digits)
        load_case("model:bigint", f"{digits}-digit format_version", build(text))
        text = meta.replace(b'"format_version": 1', b'"format_version": 1, "n": ' + b"7" * digits)
        load_case("model:bigint", f"{digits}-digit extra number", build(text))
    for n_hist in (50_000, 200_000, 400_000):
        d2 = json.loads(meta)
        d2["meta"]["history"] = [
            {"iteration": i, "objective": 1.0 / (i + 1)} for i in range(n_hist)
        ]
        blob = build(json.dumps(d2).encode())
        load_case("model:history", f"{n_hist}-entry history", blob, timed=True)
    # bombs: a member inflating far beyond what the header declares
    for mib in (16, 128, 512):
        header = np.lib.format.header_data_from_array_1_0(np.zeros(0, np.uint8))
        header["shape"] = (mib * 2**20,)
        hb = pyio.BytesIO()
        np.lib.format.write_array_header_1_0(hb, header)
        buf = pyio.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for k, v in raw.items():
                if k != "slot_weights":
                    zf.writestr(k + ".npy", v)
            with zf.open("slot_weights.npy", "w", force_zip64=True) as m:
                m.write(hb.getvalue())
                chunk = bytes(2**22)
                for _ in range(mib // 4):
                    m.write(chunk)
            zf.writestr(mmio.META_KEY + ".npy", _npy(np.frombuffer(meta, dtype=np.uint8)))
        load_case(
            "model:bomb",
            f"{mib} MiB bomb ({len(buf.getvalue())} bytes)",
            buf.getvalue(),
            timed=True,
        )
    # a real 96 MB stored member of random bytes whose header declares 3 floats
    big = np.random.default_rng(1).integers(0, 255, size=96 * 2**20, dtype=np.uint8)
    members = dict(raw)
    members["slot_weights"] = _npy(big)
    load_case(
        "model:bomb",
        "96 MiB stored member, header says small",
        build(meta, members, zipfile.ZIP_STORED),
        timed=True,
    )
    # the same file in a fresh process: peak resident memory (VmHWM, reset at exec, unlike
    # ru_maxrss which a forked child inherits) after importing maxmargin.io and after the
    # refusal, in KiB
    code = (
        "import sys\n"
        "def hwm():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            return int(line.split()[1])\n"
        "from maxmargin import io as mmio\n"
        "base = hwm()\n"
        "try:\n"
        "    mmio.load(sys.argv[1])\n"
        "except ValueError:\n"
        "    pass\n"
        "print(base, hwm())\n"
    )
    rss = subprocess.run(
        [sys.executable, "-c", code, str(target)], capture_output=True, text=True, check=True
    ).stdout.split()
    p.timings.append(
        {
            "case": "96 MiB stored member, fresh process: max RSS growth of the refusal",
            "file_bytes": target.stat().st_size,
            "rss_before_mib": round(int(rss[0]) / 1024, 1),
            "rss_after_mib": round(int(rss[1]) / 1024, 1),
        }
    )
    # a central directory that declares 1 TB for a member (sizes disagree with content)
    blob = bytearray(build(meta))
    eocd = blob.rfind(b"PK\x05\x06")
    (cd,) = struct.unpack_from("<I", blob, eocd + 16)
    for declared in (2**31, 2**32 - 1, 1000):
        b2 = bytearray(blob)
        struct.pack_into("<I", b2, cd + 24, declared)
        load_case("model:bomb", f"directory declares {declared} bytes", bytes(b2), timed=True)
    # too many members; encrypted flag; unknown method; duplicate names; paths
    buf = pyio.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k in range(5000):
            zf.writestr(f"a{k}.npy", b"")
    load_case("model:structure", "5000 members", buf.getvalue(), timed=True)
    for flag_name, offset, value in (("encrypted", 8, 1), ("method 99", 10, 99)):
        b2 = bytearray(blob)
        struct.pack_into("<H", b2, cd + offset, value)
        load_case("model:structure", flag_name, bytes(b2))
    buf = pyio.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, v in raw.items():
            zf.writestr(k + ".npy", v)
        zf.writestr("slot_weights.npy", raw["slot_weights"])
        zf.writestr(mmio.META_KEY + ".npy", _npy(np.frombuffer(meta, dtype=np.uint8)))
    load_case("model:structure", "duplicate member", buf.getvalue())
    buf = pyio.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../../evil.npy", raw["slot_weights"])
        zf.writestr(mmio.META_KEY + ".npy", _npy(np.frombuffer(meta, dtype=np.uint8)))
    load_case("model:structure", "member with a path", buf.getvalue())
    for content, name in (
        (b"", "empty"),
        (b"PK\x03\x04", "magic only"),
        (b"\x93NUMPY", "npy"),
        (b"\x80\x04\x95pickle", "pickle"),
        (os.urandom(4096), "random"),
    ):
        load_case("model:structure", name, content)
    buf = pyio.BytesIO()
    np.savez(buf, w=np.zeros(3))
    load_case("model:structure", "plain npz", buf.getvalue())
    pick = pyio.BytesIO()
    np.lib.format.write_array(pick, np.array([os.getcwd, None], dtype=object), allow_pickle=True)
    members = dict(raw)
    members["task.classes"] = pick.getvalue()
    load_case("model:structure", "pickled object array", build(meta, members))
    # signatures
    signed = work / "signed.mm"
    mmio.save(mmio.load(path), signed, key="secret")
    load_case("model:key", "wrong key", signed.read_bytes(), key="other")
    load_case("model:key", "unsigned file with key", path.read_bytes(), key="secret")
    load_case("model:key", "empty key", signed.read_bytes(), key="")
    d2, r2 = _members(signed)
    d2["meta"]["params"]["C"] = 1.0
    d2 = _reseal(d2, r2)
    d2["signature"] = json.loads(json.dumps(_members(signed)[0]))["signature"]
    load_case("model:key", "edited after signing", build(json.dumps(d2).encode(), r2), key="secret")


# ====================================================================== data files
def data_cases(p: Probe, f: dict) -> None:
    work = p.root / "data"
    work.mkdir()
    svm_model, csv_model = f["svm_model"], f["csv_model"]
    X, y = f["X"], f["y"]
    _, ref, _ = p.cli(["predict", svm_model, f["svm"]])
    _, out_csv, _ = p.cli(["predict", csv_model, f["csv"]])
    svm_lines = f["svm"].read_text().splitlines()
    csv_lines = f["csv"].read_text().splitlines()

    bad_svm = {
        "index 2^31": "1 1:0.5\n2 2147483648:1\n",
        "index 2^40": "1 1:0.5\n2 1099511627776:1\n",
        "index 10^30": "1 1:0.5\n2 1000000000000000000000000000000:1\n",
        "negative index": "1 -3:0.5\n",
        "nan value": "1 1:nan 2:1\n2 1:1 2:1\n",
        "inf value": "1 1:inf 2:1\n2 1:1 2:1\n",
        "nan label": "nan 1:1\n1 1:2\n",
        "no features": "1\n2\n",
        "text junk": "hello world\nfoo bar\n",
        "binary": "\x00\x01\x02\x03",
        "empty": "",
        "comments only": "# nothing\n# here\n",
        "bad value": "1 1:abc\n",
        "colon only": "1 :\n",
    }
    for name, text in bad_svm.items():
        path = work / f"bad_{len(p.rows)}.svm"
        path.write_bytes(text.encode("latin-1"))
        for cmd in (
            ["fit", path, "-o", work / "o.mm", "--max-iter", "2", "--quiet"],
            ["predict", svm_model, path],
            ["evaluate", svm_model, path],
        ):
            p.expect_refusal(
                "data:svmlight", f"{cmd[0]} {name}", cmd, [path.name], protected=[svm_model]
            )
    bad_csv = {
        "ragged": "a,b,c,d,label\n1,2,3,4,0\n1,2,3\n",
        "empty cell": "a,b,c,d,label\n1,,3,4,0\n1,2,3,4,1\n",
        "nan": "a,b,c,d,label\n1,nan,3,4,0\n1,2,3,4,1\n",
        "inf": "a,b,c,d,label\n1,inf,3,4,0\n1,2,3,4,1\n",
        "header only": "a,b,c,d,label\n",
        "labels only": "label\n0\n1\n",
        "text feature": "a,b,c,d,label\n1,x,3,4,0\n1,2,3,4,1\n",
        "missing label": "a,b,c,d,label\n1,2,3,4,\n1,2,3,4,1\n",
        "utf16": "a,b\n1,2\n".encode("utf-16").decode("latin-1"),
        "latin1 bytes": "a,b,c,d,label\n1,2,3,4,caf\xe9\n",
        "binary": "\x00\x01,\x02",
        "empty": "",
        "reordered": "b,a,c,d,label\n1,2,3,4,0\n2,3,4,5,1\n",
        "missing column": "a,b,c,label\n1,2,3,0\n2,3,4,1\n",
        "extra column": "a,b,c,d,e,label\n1,2,3,4,5,0\n2,3,4,5,6,1\n",
        "renamed label": "a,b,c,d,class\n1,2,3,4,0\n2,3,4,5,1\n",
        "row index": ",a,b,c,d,label\n0,1,2,3,4,0\n1,2,3,4,5,1\n",
    }
    for name, text in bad_csv.items():
        path = work / f"bad_{len(p.rows)}.csv"
        path.write_bytes(text.encode("latin-1"))
        cmds = [["evaluate", csv_model, path]]
        if name not in ("missing label", "renamed label"):
            cmds.append(["predict", csv_model, path])
        if name not in (
            "reordered",
            "missing column",
            "extra column",
            "renamed label",
            "missing label",
        ):
            cmds.append(["fit", path, "-o", work / "o.mm", "--max-iter", "2", "--quiet"])
        for cmd in cmds:
            p.expect_refusal(
                "data:csv", f"{cmd[0]} {name}", cmd, [path.name], protected=[csv_model]
            )
    # qid tokens: a ranker refuses partial or huge ones; a classifier ignores them
    for name, text in (
        ("partial qid", "1 qid:1 1:1 2:0.5\n0 1:2 2:1\n1 qid:2 1:0 2:3\n"),
        ("huge qid", "1 qid:99999999999999999999999 1:1\n0 qid:1 1:0\n"),
    ):
        path = work / f"q_{len(p.rows)}.svm"
        path.write_text(text)
        p.expect_refusal(
            "data:qid",
            f"fit --rank {name}",
            ["fit", "--rank", path, "-o", work / "r.mm", "--quiet"],
            [path.name],
        )
        plain = work / f"plain_{len(p.rows)}.svm"
        plain.write_text(
            "\n".join(
                " ".join(t for t in ln.split() if not t.startswith("qid:"))
                for ln in text.splitlines()
            )
            + "\n"
        )
        _, want, _ = p.cli(["predict", svm_model, plain])
        p.expect_accept(
            "data:qid",
            f"classifier predict {name} (qid ignored)",
            ["predict", svm_model, path],
            lambda o, w=want: o == w,
        )
    # layout mismatches
    label_first = work / "label_first.csv"
    np.savetxt(label_first, np.column_stack([y, X]), delimiter=",", fmt="%g")
    label_last = work / "label_last.csv"
    np.savetxt(label_last, np.column_stack([X, y]), delimiter=",", fmt="%g")
    for path in (label_first, label_last, f["csv"]):
        for cmd in ("predict", "evaluate"):
            p.expect_refusal(
                "data:layout", f"svm model, {cmd} {path.name}", [cmd, svm_model, path], [path.name]
            )
    for cmd in ("predict", "evaluate"):
        p.expect_refusal(
            "data:layout", f"csv model, {cmd} svmlight", [cmd, csv_model, f["svm"]], [f["svm"].name]
        )
        tsv_as_svm = work / "data.svm"
        tsv_as_svm.write_text(f["csv"].read_text())
        p.expect_refusal(
            "data:layout",
            f"svm model, {cmd} csv named .svm",
            [cmd, svm_model, tsv_as_svm],
            [tsv_as_svm.name],
        )
    # odd but valid: must give the reference predictions
    import gzip

    odd_svm = {
        "crlf": "\r\n".join(svm_lines) + "\r\n",
        "comments": "# a comment\n" + "\n".join(f"{ln} # row" for ln in svm_lines) + "\n",
        "blank lines": "\n\n" + "\n\n".join(svm_lines) + "\n",
        "tabs": "\n".join(ln.replace(" ", "\t") for ln in svm_lines) + "\n",
        "bom": "\ufeff" + "\n".join(svm_lines) + "\n",
    }
    for name, text in odd_svm.items():
        path = work / f"odd_{len(p.rows)}.svm"
        path.write_text(text, encoding="utf-8")
        p.expect_accept(
            "odd:svmlight", f"predict {name}", ["predict", svm_model, path], lambda o: o == ref
        )
    gz = work / "train.svm.gz"
    gz.write_bytes(gzip.compress(f["svm"].read_bytes()))
    p.expect_accept("odd:svmlight", "predict gz", ["predict", svm_model, gz], lambda o: o == ref)
    odd_csv = {
        "bom": "\ufeff" + "\n".join(csv_lines) + "\n",
        "crlf": "\r\n".join(csv_lines) + "\r\n",
        "spaces": "\n".join(ln.replace(",", ", ") for ln in csv_lines) + "\n",
        "trailing blank": "\n".join(csv_lines) + "\n\n\n",
        "quoted header": "\n".join(['"a","b","c","d","label"', *csv_lines[1:]]) + "\n",
    }
    for name, text in odd_csv.items():
        path = work / f"odd_{len(p.rows)}.csv"
        path.write_text(text, encoding="utf-8")
        p.expect_accept(
            "odd:csv", f"predict {name}", ["predict", csv_model, path], lambda o: o == out_csv
        )
    # markup in labels and paths: printed literally, never interpreted
    for label in ("[other]", "[/]", "[/bold]", "[red]x[/red]", "[link=file:///etc/passwd]a[/link]"):
        folder = work / f"m{len(p.rows)}[" / "x]"
        folder.mkdir(parents=True)
        data = folder / "d[b].csv"
        labs = np.where(y == 0, label, "plain")
        data.write_text(
            "a,b,c,d,label\n"
            + "".join(f"{r[0]:g},{r[1]:g},{r[2]:g},{r[3]:g},{lab}\n" for r, lab in zip(X, labs))
        )
        model = folder / "m.mm"
        p.expect_accept(
            "odd:markup",
            f"fit label {label}",
            ["fit", data, "-o", model, "--max-iter", "3", "--quiet"],
            lambda o: True,
        )
        os.environ["COLUMNS"] = "400"
        p.expect_accept(
            "odd:markup",
            f"evaluate label {label}",
            ["evaluate", model, data],
            lambda o, lab=label: lab in o and "[" in o,
        )
        p.expect_accept(
            "odd:markup", f"info label {label}", ["info", model], lambda o, lab=label: lab in o
        )
        os.environ.pop("COLUMNS", None)
    # taxonomy files
    for name, text in (
        ("truncated", '{"a": ["b"'),
        ("not json", "\x00\x01"),
        ("empty", ""),
        ("deep", "[" * 100000 + "]" * 100000),
        ("cycle", "a b\nb a\n"),
    ):
        tax = work / f"tax_{len(p.rows)}.json"
        tax.write_text(text)
        p.expect_refusal(
            "data:taxonomy",
            f"fit taxonomy {name}",
            ["fit", f["csv"], "-o", work / "t.mm", "--taxonomy", tax, "--max-iter", "2"],
            [tax.name],
        )
    # ranking: qid
    lines_q, lines = [], []
    rng = np.random.default_rng(0)
    for q in range(4):
        for _ in range(8):
            x = rng.normal(size=3)
            rel = int(x[0] > 0) + int(x[1] > 0.5)
            feats = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x))
            lines_q.append(f"{rel} qid:{q + 1} {feats}")
            lines.append(f"{rel} {feats}")
    (work / "q.svm").write_text("\n".join(lines_q) + "\n")
    (work / "noq.svm").write_text("\n".join(lines) + "\n")
    assert (
        _main(
            ["fit", "--rank", "--model", "ranksvm", work / "q.svm", "-o", work / "r.mm", "--quiet"]
        )
        == 0
    )
    p.expect_refusal(
        "data:qid",
        "evaluate grouped ranker without qid",
        ["evaluate", work / "r.mm", work / "noq.svm"],
        ["noq.svm"],
    )
    p.expect_accept(
        "data:qid",
        "evaluate grouped ranker with qid",
        ["evaluate", work / "r.mm", work / "q.svm", "--json"],
        lambda o: json.loads(o)["n_groups"] == 4,
    )
    # wrong kinds of model for predict / evaluate / info
    for name in ("empty key env",):
        os.environ[mmio.KEY_ENV] = ""
        p.expect_refusal("env", name, ["info", svm_model], ["MAXMARGIN_MODEL_KEY"])
        p.expect_refusal(
            "env",
            name + " fit",
            ["fit", f["svm"], "-o", work / "k.mm", "--quiet"],
            ["MAXMARGIN_MODEL_KEY"],
        )
        os.environ.pop(mmio.KEY_ENV)


# ====================================================================== outputs
def output_cases(p: Probe, f: dict) -> None:
    work = p.root / "outputs"
    work.mkdir()
    svm_model = work / "m.mm"
    svm_model.write_bytes(f["svm_model"].read_bytes())
    data = work / "d.svm"
    data.write_bytes(f["svm"].read_bytes())
    prev = work / "pred.txt"
    # same path as an input
    for name, args, protected in (
        ("fit -o data", ["fit", data, "-o", data, "--quiet", "--max-iter", "2"], [data]),
        ("predict -o model", ["predict", svm_model, data, "-o", svm_model], [svm_model, data]),
        ("predict -o data", ["predict", svm_model, data, "-o", data], [svm_model, data]),
        (
            "fit -o taxonomy",
            ["fit", f["csv"], "-o", work / "tax.json", "--taxonomy", work / "tax.json"],
            [],
        ),
    ):
        if "taxonomy" in name:
            (work / "tax.json").write_text('{"root": ["0", "1", "2"]}')
            protected = [work / "tax.json"]
        p.expect_refusal("output:same", name, args, ["destroy", "input"], protected=protected)
    os.link(data, work / "hard.svm")
    os.symlink(svm_model, work / "sym.mm")
    p.expect_refusal(
        "output:same",
        "predict -o hard link of data",
        ["predict", svm_model, data, "-o", work / "hard.svm"],
        ["destroy"],
        protected=[data],
    )
    p.expect_refusal(
        "output:same",
        "predict -o symlink to model",
        ["predict", svm_model, data, "-o", work / "sym.mm"],
        ["destroy"],
        protected=[svm_model],
    )
    p.expect_refusal(
        "output:same",
        "fit -o hard link of data",
        ["fit", data, "-o", work / "hard.svm", "--quiet"],
        ["destroy"],
        protected=[data],
    )
    p.expect_refusal(
        "output:path",
        "predict -o a directory",
        ["predict", svm_model, data, "-o", work],
        [str(work)],
    )
    p.expect_refusal(
        "output:path",
        "predict -o missing dir",
        ["predict", svm_model, data, "-o", work / "no/x.txt"],
        ["no"],
    )
    p.expect_refusal(
        "output:path",
        "fit -o missing dir",
        ["fit", data, "-o", work / "no/x.mm", "--quiet"],
        ["no"],
    )
    # a full disk (ENOSPC) at every write stage: previous output intact, no temporary file
    real_fsync, real_write, real_replace = os.fsync, os.write, os.replace

    def enospc(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    for stage in ("fsync", "replace"):
        for name, args, victim in (
            ("predict -o", ["predict", svm_model, data, "-o", prev], prev),
            (
                "fit -o",
                ["fit", data, "-o", work / "fit.mm", "--quiet", "--max-iter", "2"],
                work / "fit.mm",
            ),
        ):
            victim.write_bytes(b"previous content\n")
            setattr(os, stage, enospc)
            try:
                p.expect_refusal(
                    "output:enospc",
                    f"{name} ENOSPC at {stage}",
                    args,
                    [victim.name, "space"],
                    protected=[victim, data, svm_model],
                    folders=[work],
                )
            finally:
                os.fsync, os.replace = real_fsync, real_replace
    # an exception inside the writer (as a full disk during write) through the API
    for k in range(5):
        victim = work / f"api{k}.mm"
        mmio.save(mmio.load(svm_model), victim)
        before = victim.read_bytes()
        original = np.lib.format.write_array

        def boom(*a, **kw):
            raise OSError(errno.ENOSPC, "No space left on device")

        np.lib.format.write_array = boom
        try:
            mmio.save(mmio.load(f["models"]["ssvm"]), victim)
            outcome = "silent_wrong"
        except OSError:
            outcome = "refused"
        except Exception:
            outcome = "crash"
        finally:
            np.lib.format.write_array = original
        left = [q.name for q in work.iterdir() if q.name.endswith(".tmp")]
        if victim.read_bytes() != before or left:
            outcome = "data_lost"
        p.record("output:enospc", f"save during write_array {k}", outcome)
    del real_write
    # SIGKILL during a save: the previous model survives; the next save cleans the temp
    script = (
        "import sys, numpy as np\n"
        "from maxmargin import io as mmio\n"
        "from maxmargin.learners.ssvm import SSVMClassifier\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.normal(size=(400, 3000)); y = rng.integers(0, 40, 400)\n"
        "est = SSVMClassifier(C=1.0, max_iter=2).fit(X, y)\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    mmio.save(est, sys.argv[1])\n"
    )
    victim = work / "killed.mm"
    mmio.save(mmio.load(f["models"]["ssvm"]), victim)
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(victim)], stdout=subprocess.PIPE, env=os.environ
    )
    proc.stdout.readline()
    rng = np.random.default_rng(0)
    for k in range(6):
        time.sleep(float(rng.uniform(0.05, 0.6)))
        try:
            mmio.load(victim)
            outcome = "ok"
        except Exception as exc:
            outcome = "data_lost"
            p.record("interrupt", f"load during saves {k}", outcome, str(exc))
            continue
        p.record("interrupt", f"load during saves {k}", outcome)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        mmio.load(victim)
        p.record("interrupt", "SIGKILL mid-save: previous model loads", "ok")
    except Exception as exc:
        p.record("interrupt", "SIGKILL mid-save: previous model loads", "data_lost", str(exc))
    stale = [q for q in work.iterdir() if q.name.startswith(".killed.mm.")]
    mmio.save(mmio.load(f["models"]["ssvm"]), victim)
    left = [q.name for q in work.iterdir() if q.name.startswith(".killed.mm.")]
    p.record(
        "interrupt",
        "stale temp cleaned by the next save",
        "ok" if not left else "data_lost",
        f"{len(stale)} stale before, left {left}",
    )


# ====================================================================== vision
def _otb(root: Path, n=6, odd=None, corrupt=None, size=(40, 48), boxes=None, ext=".png"):
    import imageio.v3 as iio

    (root / "img").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for k in range(n):
        shape = (4, 4) if k == odd else size
        frame = rng.integers(0, 60, size=shape, dtype=np.uint8)
        if k != odd:
            frame[10 + k : 22 + k, 12:24] = 220
        path = root / "img" / f"{k + 1:04d}{ext}"
        if k == corrupt:
            path.write_bytes(b"\x89PNG\r\n\x1a\nthis is not really a png")
        else:
            iio.imwrite(path, frame)
    rows = boxes or [f"13,{11 + k},12,12" for k in range(n)]
    (root / "groundtruth_rect.txt").write_text("\n".join(rows) + "\n")
    return root


def vision_cases(p: Probe, f: dict) -> None:
    import imageio.v3 as iio

    work = p.root / "vision"
    work.mkdir()
    base = ["--tracker", "adaboost", "--features", "raw", "--quiet"]
    # track: odd frames at each position, corrupt frames, bad boxes
    for k in range(1, 6):
        seq = _otb(work / f"odd{k}", odd=k)
        p.expect_refusal(
            "track", f"frame {k + 1} is 4x4", ["track", seq, *base], [f"{k + 1:04d}.png"]
        )
        seq = _otb(work / f"cor{k}", corrupt=k)
        p.expect_refusal(
            "track", f"frame {k + 1} undecodable", ["track", seq, *base], [f"{k + 1:04d}.png"]
        )
    seq = _otb(work / "notimg", corrupt=0)
    p.expect_refusal("track", "first frame undecodable", ["track", seq, *base], ["0001.png"])
    seq = work / "fakejpg"
    _otb(seq)
    (seq / "img" / "0003.png").unlink()
    (seq / "img" / "0003.jpg").write_text("plain text, not a jpeg")
    p.expect_refusal("track", "text file named .jpg", ["track", seq, *base], ["0003.jpg"])
    bad_boxes = {
        "box outside": ["4999,11,12,12"] + [f"13,{11 + k},12,12" for k in range(1, 6)],
        "zero size": ["13,11,0,12"] + [f"13,{11 + k},12,12" for k in range(1, 6)],
        "nan box": ["nan,11,12,12"] + [f"13,{11 + k},12,12" for k in range(1, 6)],
        "three values": ["13,11,12"] + [f"13,{11 + k},12,12" for k in range(1, 6)],
        "text": ["a,b,c,d"] + [f"13,{11 + k},12,12" for k in range(1, 6)],
        "too few rows": ["13,11,12,12"],
    }
    seq = _otb(work / "binarygt")
    (seq / "groundtruth_rect.txt").write_bytes(b"\xff\xfe\x00binary\x80")
    p.expect_refusal(
        "track", "binary ground truth", ["track", seq, *base], ["groundtruth_rect.txt"]
    )
    for name, rows in bad_boxes.items():
        seq = _otb(work / f"box{len(p.rows)}", boxes=rows)
        _, _, err = p.expect_refusal(
            "track", name, ["track", seq, *base], ["groundtruth_rect.txt", str(seq)]
        )
        if "np.float64" in err:
            p.rows[-1]["outcome"] = "unclear"
    # output folder holding the inputs: outputs never replace a frame
    seq = _otb(work / "ok")
    p.expect_accept(
        "track",
        "valid sequence with --out",
        ["track", seq, *base, "--out", work / "trackout"],
        lambda o: "overlap" in o,
        protected=list((seq / "img").iterdir()),
    )

    # segment
    def seg_folders(
        root,
        n=3,
        values=(0, 255),
        mask_scale=None,
        missing=None,
        corrupt_img=None,
        corrupt_mask=None,
        colour=False,
    ):
        (root / "img").mkdir(parents=True)
        (root / "mask").mkdir()
        rng = np.random.default_rng(1)
        for k in range(n):
            m = np.zeros((32, 32), bool)
            m[6 + k : 22 + k, 8:24] = True
            img = (np.where(m, 190, 60) + rng.normal(0, 12, m.shape)).clip(0, 255).astype(np.uint8)
            iio.imwrite(root / "img" / f"i{k}.png", img)
            mask = np.where(m, values[-1], values[0]).astype(np.uint8)
            if len(values) == 3:
                mask[:4] = values[1]
            if mask_scale and k == 0:
                mask = np.repeat(np.repeat(mask, 2, axis=0), 2, axis=1)
            if colour:
                mask = np.stack([mask, 255 - mask, mask], axis=2)
            if k != missing:
                iio.imwrite(root / "mask" / f"i{k}.png", mask)
        if corrupt_img is not None:
            (root / "img" / f"i{corrupt_img}.png").write_bytes(b"broken")
        if corrupt_mask is not None:
            (root / "mask" / f"i{corrupt_mask}.png").write_bytes(b"broken")
        return root

    sfit = ["--learner", "unary", "--unary-iter", "3", "--n-segments", "20"]
    for name, kw, names in (
        ("image without mask", {"missing": 1}, ["i1.png"]),
        ("mask of another size", {"mask_scale": 2}, ["i0.png"]),
        ("undecodable image", {"corrupt_img": 2}, ["i2.png"]),
        ("undecodable mask", {"corrupt_mask": 0}, ["i0.png"]),
        ("colour label mask", {"colour": True}, ["i0.png"]),
    ):
        root = seg_folders(work / f"seg{len(p.rows)}", **kw)
        p.expect_refusal(
            "segment",
            f"fit: {name}",
            ["segment", "fit", root / "img", root / "mask", "-o", work / "s.mm", *sfit],
            names,
        )
    root = seg_folders(work / "segok")
    assert _main(["segment", "fit", root / "img", root / "mask", "-o", work / "seg.mm", *sfit]) == 0
    seg_model = work / "seg.mm"
    for name, kw, names in (
        ("image without mask", {"missing": 1}, ["i1.png"]),
        ("mask of another size", {"mask_scale": 2}, ["i0.png"]),
        ("undecodable image", {"corrupt_img": 2}, ["i2.png"]),
        ("undecodable mask", {"corrupt_mask": 0}, ["i0.png"]),
    ):
        root = seg_folders(work / f"seg{len(p.rows)}", **kw)
        p.expect_refusal(
            "segment",
            f"predict: {name}",
            [
                "segment",
                "predict",
                seg_model,
                root / "img",
                "-o",
                work / "so",
                "--masks",
                root / "mask",
            ],
            names,
        )
    # mask value sets: warnings naming the file, 0/1 masks read correctly
    for name, values, expect in (
        ("0/1 mask", (0, 1), None),
        ("3-valued mask", (0, 128, 255), "distinct values"),
        ("all background", (0, 0), "all background"),
    ):
        root = seg_folders(work / f"seg{len(p.rows)}", values=values)
        rc, _, err = p.cli(
            ["segment", "fit", root / "img", root / "mask", "-o", work / "v.mm", *sfit, "--json"]
        )
        if rc != 0:
            p.record("segment", f"fit: {name}", "false_refusal" if rc == 2 else "crash", err[-300:])
        elif expect is None:
            from maxmargin.apps.segmentation import load_image_folder

            _, masks, _ = load_image_folder(root / "img", root / "mask")
            good = all(m.any() and not m.all() for m in masks)
            p.record("segment", f"fit: {name}", "ok" if good else "silent_wrong")
        else:
            p.record(
                "segment",
                f"fit: {name}",
                "refused" if (expect in err and "i0.png" in err) else "silent_wrong",
                err.strip()[:300],
            )
    p.expect_refusal(
        "segment",
        "predict with a classifier model",
        ["segment", "predict", f["svm_model"], root / "img", "-o", work / "so"],
        ["Segmenter"],
    )
    for cmd in ("predict", "evaluate"):
        p.expect_refusal(
            "kind", f"{cmd} with a Segmenter", [cmd, seg_model, f["svm"]], ["Segmenter"]
        )

    # detect
    from maxmargin.datasets import make_detection_scenes

    def voc_xml(path, filename, shape, boxes, extra=""):
        H, W = shape[:2]
        objs = "".join(
            f"<object><name>ring</name><bndbox><xmin>{int(x) + 1}</xmin><ymin>{int(y) + 1}</ymin>"
            f"<xmax>{int(x + w)}</xmax><ymax>{int(y + h)}</ymax></bndbox></object>"
            for x, y, w, h in boxes
        )
        path.write_text(
            f"<annotation><filename>{filename}</filename><size><width>{W}</width>"
            f"<height>{H}</height></size>{objs}{extra}</annotation>"
        )

    voc = work / "voc"
    (voc / "img").mkdir(parents=True)
    (voc / "ann").mkdir()
    images, boxes = make_detection_scenes(6, random_state=0)
    for k, (im, b) in enumerate(zip(images, boxes)):
        iio.imwrite(voc / "img" / f"s{k}.png", im)
        voc_xml(voc / "ann" / f"s{k}.xml", f"s{k}.png", im.shape, b)
    det = work / "det.mm"
    assert _main(["detect", "fit", voc / "img", voc / "ann", "-o", det, "--window", "3,3"]) == 0
    secret = work / "secret"
    secret.mkdir()
    iio.imwrite(secret / "secret.png", images[0])
    for k, fname in enumerate(
        [
            "../secret/secret.png",
            str(secret / "secret.png"),
            "/etc/passwd",
            "sub/../../secret/secret.png",
            "..",
            "/",
            "../../../../../../etc/hostname",
        ]
    ):
        d = work / f"trav{k}"
        (d / "img").mkdir(parents=True)
        (d / "ann").mkdir()
        voc_xml(d / "ann" / "a.xml", fname, images[0].shape, boxes[0])
        p.expect_refusal(
            "detect:containment",
            f"<filename> {fname}",
            ["detect", "fit", d / "img", d / "ann", "-o", work / "t.mm"],
            ["a.xml"],
        )
    import shutil

    def edited_ann(tag, change):
        d = work / f"ann{len(p.rows)}"
        shutil.copytree(voc / "ann", d)
        text = (d / "s1.xml").read_text()
        (d / "s1.xml").write_text(change(text))
        return d

    import re as _re

    edits = {
        "size doubled": lambda t: _re.sub(
            r"<width>(\d+)</width>", lambda m: f"<width>{int(m.group(1)) * 2}</width>", t
        ),
        "size missing": lambda t: _re.sub(r"<size>.*</size>", "", t),
        "corrupt xml": lambda t: t[: len(t) // 2],
        "text coordinate": lambda t: t.replace("<xmin>", "<xmin>x", 1),
        "inverted box": lambda t: _re.sub(
            r"<xmin>(\d+)</xmin>(.*?)<xmax>(\d+)</xmax>",
            r"<xmin>\3</xmin>\2<xmax>\1</xmax>",
            t,
            count=1,
        ),
        "box outside": lambda t: _re.sub(r"<xmax>(\d+)</xmax>", "<xmax>99999</xmax>", t, count=1),
        "nan size": lambda t: _re.sub(r"<width>(\d+)</width>", "<width>nan</width>", t),
    }
    for name, change in edits.items():
        ann = edited_ann(name, change)
        if name not in ("box outside",):  # predict clips boxes (clip=True) by design
            p.expect_refusal(
                "detect",
                f"predict --annotations: {name}",
                ["detect", "predict", det, voc / "img", "-o", work / "do", "--annotations", ann],
                ["s1.xml"],
            )
        p.expect_refusal(
            "detect",
            f"fit: {name}",
            ["detect", "fit", voc / "img", ann, "-o", work / "t.mm", "--window", "3,3"],
            ["s1.xml"],
        )
    ann = work / "ann_missing"
    shutil.copytree(voc / "ann", ann)
    (ann / "s2.xml").unlink()
    p.expect_refusal(
        "detect",
        "predict: missing annotation",
        ["detect", "predict", det, voc / "img", "-o", work / "do", "--annotations", ann],
        ["s2"],
    )
    bad_img = work / "badimg"
    shutil.copytree(voc / "img", bad_img)
    (bad_img / "s3.png").write_bytes(b"nope")
    p.expect_refusal(
        "detect",
        "predict: undecodable image",
        ["detect", "predict", det, bad_img, "-o", work / "do"],
        ["s3.png"],
    )
    p.expect_refusal(
        "detect",
        "fit: undecodable image",
        ["detect", "fit", bad_img, voc / "ann", "-o", work / "t.mm"],
        ["s3.png"],
    )
    p.expect_accept(
        "detect",
        "predict -o the image folder (no name collides)",
        ["detect", "predict", det, voc / "img", "-o", voc / "img"],
        lambda o: "images" in o,
        protected=list((voc / "img").iterdir()),
    )
    for q in list((voc / "img").glob("*_boxes.*")):
        q.unlink()
    clash = work / "clash"
    clash.mkdir()
    iio.imwrite(clash / "a.png", images[0])
    iio.imwrite(clash / "a_boxes.png", images[1])  # an input named like a's output
    p.expect_refusal(
        "detect",
        "predict output would replace an input image",
        ["detect", "predict", det, clash, "-o", clash],
        ["destroy"],
        protected=list(clash.iterdir()),
    )
    seg_clash = work / "segclash"
    seg_clash.mkdir()
    iio.imwrite(seg_clash / "a.png", images[0])
    iio.imwrite(seg_clash / "a_mask.png", images[1])
    p.expect_refusal(
        "segment",
        "predict output would replace an input image",
        ["segment", "predict", seg_model, seg_clash, "-o", seg_clash],
        ["destroy"],
        protected=list(seg_clash.iterdir()),
    )
    for cmd in ("predict", "evaluate"):
        p.expect_refusal("kind", f"{cmd} with a detector", [cmd, det, f["svm"]], ["HOGSVMDetector"])
    p.expect_refusal(
        "kind",
        "detect predict with a classifier",
        ["detect", "predict", f["svm_model"], voc / "img", "-o", work / "do"],
        ["not a detection model"],
    )


# ====================================================================== Python API
def api_cases(p: Probe, f: dict) -> None:
    from maxmargin import StructBoostClassifier
    from maxmargin.learners.adaboost import AdaBoostMH
    from maxmargin.learners.multiboost import MultiBoostCW
    from maxmargin.learners.ranksvm import RankSVM
    from maxmargin.learners.ssvm import SSVMClassifier

    X, y = f["X"], f["y"]
    makers = {
        "StructBoostClassifier": lambda: StructBoostClassifier(max_iter=3, random_state=0),
        "SSVMClassifier": lambda: SSVMClassifier(C=1.0),
        "MultiBoostCW": lambda: MultiBoostCW(max_iter=3),
        "AdaBoostMH": lambda: AdaBoostMH(max_iter=3),
        "RankSVM": lambda: RankSVM(C=1.0),
    }
    Xn = X.copy()
    Xn[3, 1] = np.nan
    Xi = X.copy()
    Xi[5, 0] = np.inf
    bad_fit = {
        "NaN in X": (Xn, y),
        "inf in X": (Xi, y),
        "y too short": (X, y[:-1]),
        "empty X": (X[:0], y[:0]),
        "3-d X": (X[:, :, None], y),
        "string X": (np.full(X.shape, "a"), y),
        "1-d X": (X[:, 0], y),
        "NaN in y": (X, np.where(np.arange(len(y)) == 3, np.nan, y)),
        "no features": (X[:, :0], y),
        "complex X": (X.astype(complex), y),
    }
    for est_name, make in makers.items():
        for case, (Xb, yb) in bad_fit.items():
            p.api("api:fit", f"{est_name} {case}", lambda m=make, a=Xb, b=yb: m().fit(a, b))
        if est_name != "RankSVM":
            p.api("api:fit", f"{est_name} one class", lambda m=make: m().fit(X, np.zeros(len(X))))
        fitted = make().fit(X, y.astype(float) if est_name == "RankSVM" else y)
        for case, Xb in {
            "predict NaN": Xn,
            "predict inf": Xi,
            "predict 3 features": X[:, :3],
            "predict 5 features": np.hstack([X, X[:, :1]]),
            "predict 1-d": X[0],
            "predict strings": np.full(X.shape, "a"),
            "predict 3-d": X[:, :, None],
        }.items():
            fn = fitted.decision_function if est_name == "RankSVM" else fitted.predict
            p.api("api:predict", f"{est_name} {case}", lambda fn=fn, a=Xb: fn(a))
        p.api(
            "api:predict",
            f"{est_name} unfitted predict",
            lambda m=make: m().predict(X) if hasattr(m(), "predict") else m().decision_function(X),
        )
        for param, value in (
            ("C", -1.0),
            ("C", np.nan),
            ("C", "big"),
            ("max_iter", -3),
            ("max_iter", 2.5),
            ("random_state", "x"),
        ):
            est = make()
            if param not in est.get_params():
                continue
            est.set_params(**{param: value})
            target = y.astype(float) if est_name == "RankSVM" else y
            p.api(
                "api:params",
                f"{est_name} {param}={value!r}",
                lambda e=est, t=target: e.fit(X, t),
            )
    # loader API
    work = p.root / "api"
    work.mkdir()
    from maxmargin.datasets import load_dataset

    for name, text in (
        ("index 2^31", "1 2147483648:1\n"),
        ("utf16", "a,b\n".encode("utf-16").decode("latin-1")),
        ("bom csv", "\ufeffa,label\n1,0\n2,1\n"),
    ):
        path = work / f"x{len(p.rows)}.{'csv' if 'csv' in name or 'utf' in name else 'svm'}"
        path.write_bytes(text.encode("utf-8" if "bom" in name else "latin-1"))
        if name == "bom csv":
            p.api(
                "api:loader",
                name,
                lambda q=path: load_dataset(q, label_column="label"),
                accept=lambda v: v[0].shape == (2, 1) and list(v[1]) == [0, 1],
            )
        else:
            p.api("api:loader", name, lambda q=path: load_dataset(q), names=[path.name])
    # key handling
    p.api(
        "api:key",
        "save with empty key",
        lambda: mmio.save(mmio.load(f["svm_model"]), work / "k.mm", key=""),
    )
    p.api("api:key", "load with empty key", lambda: mmio.load(f["svm_model"], key=""))


# ====================================================================== main
def run(out_path: str, cpu_lock: str = "held") -> dict:
    with tempfile.TemporaryDirectory(prefix="probe_hostile_") as tmp:
        root = Path(tmp)
        os.environ.pop(mmio.KEY_ENV, None)
        p = Probe(root)
        f = make_fixtures(root)
        t0 = time.perf_counter()
        sections = {
            "model": model_cases,
            "data": data_cases,
            "outputs": output_cases,
            "vision": vision_cases,
            "api": api_cases,
        }
        seconds = {}
        for name, fn in sections.items():
            t = time.perf_counter()
            print(f"section {name} ...", file=sys.stderr, flush=True)
            fn(p, f)
            seconds[name] = round(time.perf_counter() - t, 1)
        counts = Counter(r["outcome"] for r in p.rows)
        by_category: dict[str, Counter] = {}
        for r in p.rows:
            by_category.setdefault(r["category"], Counter())[r["outcome"]] += 1
        bad = [
            r
            for r in p.rows
            if r["outcome"] in ("crash", "silent_wrong", "data_lost", "unclear", "false_refusal")
        ]
        disagreeing = [t for t in p.timings if "history" not in t["case"] and "seconds" in t]
        payload = {
            "command": " ".join([sys.executable, *sys.argv]),
            "cpu_lock": cpu_lock,
            "timing_note": "wall-clock seconds are a result only when cpu_lock is 'held'; "
            "tracemalloc peaks and RSS growth do not depend on the machine's load",
            "n_cases": len(p.rows),
            "counts": dict(counts),
            "by_category": {k: dict(v) for k, v in sorted(by_category.items())},
            "not_clean": bad,
            "model_file_timings": p.timings,
            "max_seconds_sizes_disagree": max(t["seconds"] for t in disagreeing),
            "max_peak_mib_sizes_disagree": max(t["peak_mib"] for t in disagreeing),
            "section_seconds": seconds,
            "total_seconds": round(time.perf_counter() - t0, 1),
        }
        path = write_result(out_path, payload)
        print(
            json.dumps(
                {
                    k: payload[k]
                    for k in (
                        "n_cases",
                        "counts",
                        "max_seconds_sizes_disagree",
                        "max_peak_mib_sizes_disagree",
                    )
                }
            )
        )
        for r in bad:
            print(f"  {r['outcome']:14s} {r['category']:22s} {r['case']}: {r['detail'][:160]}")
        print(f"wrote {path}")
        return payload


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/probe_hostile_input.json")
    ap.add_argument(
        "--cpu-lock",
        choices=["held", "not-held"],
        default="held",
        help="whether this run holds /tmp/maxmargin-cpu.lock (recorded with the timings)",
    )
    args = ap.parse_args()
    run(args.out, args.cpu_lock)
