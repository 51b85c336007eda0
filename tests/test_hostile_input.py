"""Hostile, bad and odd input (issue 32): each case is generated here, one test per finding.

Model files are fuzzed, edited (with the checksum recomputed, as an attacker can), nested,
inflated into zip bombs and stuffed with members; data files carry markup, byte-order
marks, giant indices and the wrong layout; VOC files name files outside their folder;
outputs are written onto their inputs and onto a disk that fills up (``ENOSPC``
simulated).  The rule under test: a clear ``ValueError`` / exit status 2 naming the file,
never a crash, a silently wrong result or lost data.
"""

from __future__ import annotations

import errno
import io as pyio
import json
import os
import re
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from maxmargin import io as mmio
from maxmargin.cli import main

# --------------------------------------------------------------------------- helpers


def _npy(array) -> bytes:
    buf = pyio.BytesIO()
    np.lib.format.write_array(buf, np.asarray(array), allow_pickle=False)
    return buf.getvalue()


def _members(path):
    with zipfile.ZipFile(path) as zf:
        raw = {n.removesuffix(".npy"): zf.read(n) for n in zf.namelist()}
    meta = np.load(pyio.BytesIO(raw.pop(mmio.META_KEY)), allow_pickle=False)
    return json.loads(meta.tobytes()), raw


def _write_model(path, meta_bytes: bytes, raw: dict, compression=zipfile.ZIP_DEFLATED):
    """A model file from raw header bytes and raw .npy members (no checks at all)."""
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in raw.items():
            zf.writestr(name + ".npy", data)
        zf.writestr(mmio.META_KEY + ".npy", _npy(np.frombuffer(meta_bytes, dtype=np.uint8)))


def _reseal(document, raw):
    arrays = {k: np.load(pyio.BytesIO(v), allow_pickle=False) for k, v in raw.items()}
    document = {k: v for k, v in document.items() if k not in ("sha256", "signature")}
    document["arrays"] = {
        k: {"dtype": mmio._dtype_descr(a.dtype), "shape": list(a.shape)} for k, a in arrays.items()
    }
    document["sha256"] = mmio._checksum(document, arrays)
    return document


def _edit(path, name, change):
    """Replace array ``name`` by ``change(array)`` and recompute the checksum."""
    document, raw = _members(path)
    a = np.load(pyio.BytesIO(raw[name]), allow_pickle=False)
    raw[name] = _npy(change(a.copy()))
    _write_model(path, json.dumps(_reseal(document, raw)).encode(), raw)


@pytest.fixture(scope="module")
def iris(tmp_path_factory):
    """An svmlight training file, a CSV twin and a StructBoost model trained on the former."""
    from sklearn.datasets import dump_svmlight_file, load_iris

    root = tmp_path_factory.mktemp("iris")
    X, y = load_iris(return_X_y=True)
    dump_svmlight_file(X, y, str(root / "train.svm"), zero_based=False)
    np.savetxt(root / "label_first.csv", np.column_stack([y, X]), delimiter=",", fmt="%g")
    np.savetxt(root / "label_last.csv", np.column_stack([X, y]), delimiter=",", fmt="%g")
    model = root / "model.mm"
    assert main(["fit", str(root / "train.svm"), "-o", str(model), "--max-iter", "5"]) == 0
    return root


@pytest.fixture
def model_file(iris, tmp_path):
    path = tmp_path / "model.mm"
    path.write_bytes((iris / "model.mm").read_bytes())
    return path


def _cli(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


# --------------------------------------------------------------------------- 1. big indices
@pytest.mark.parametrize("command", ["fit", "predict"])
def test_1_svmlight_index_beyond_int32_is_a_clear_error(iris, tmp_path, capsys, command):
    bad = tmp_path / "x.svm"
    bad.write_text("1 1:0.5\n2 2000000000000:1\n")
    if command == "fit":
        rc, _, err = _cli(capsys, "fit", bad, "-o", tmp_path / "x.mm")
    else:
        rc, _, err = _cli(capsys, "predict", iris / "model.mm", bad)
    assert rc == 2, err
    assert "x.svm" in err and "line 2" in err and "too large" in err and "unexpected" not in err


# --------------------------------------------------------------------------- 2. nested JSON
@pytest.mark.parametrize("key", [None, "team secret"])
def test_2_deeply_nested_header_is_refused_before_parsing(model_file, key):
    _document, raw = _members(model_file)
    depth = 200_000
    nested = b'{"format": "maxmargin-model", "x": ' + b"[" * depth + b"]" * depth + b"}"
    _write_model(model_file, nested, raw)
    with pytest.raises(ValueError, match=r"model\.mm: .*nested deeper"):
        mmio.load(model_file, key=key)


def test_2_giant_integer_in_header_is_refused(model_file):
    document, raw = _members(model_file)
    text = json.dumps({**document, "format_version": 0}).replace(
        '"format_version": 0', '"format_version": ' + "9" * 5000
    )
    _write_model(model_file, text.encode(), raw)
    with pytest.raises(ValueError, match=r"model\.mm: .*more than \d+ digits"):
        mmio.load(model_file)


# --------------------------------------------------------------------------- 3. rich markup
def test_3_markup_in_labels_and_paths_is_printed_literally(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # long paths on one line
    rng = np.random.default_rng(0)
    folder = tmp_path / "[red]data[" / "x]"  # the path holds "[/x]"
    folder.mkdir(parents=True)
    data = folder / "train[b].csv"
    labels = np.repeat(["[other]", "[/bold]", "plain"], 20)
    X = rng.normal(size=(60, 3)) + np.repeat(np.arange(3), 20)[:, None]
    rows = ["f1,f2,f3,label"] + [f"{a:g},{b:g},{c:g},{lab}" for (a, b, c), lab in zip(X, labels)]
    data.write_text("\n".join(rows) + "\n")
    model = folder / "m[i].mm"
    rc, _, err = _cli(capsys, "fit", data, "-o", model, "--max-iter", "5", "--quiet")
    assert rc == 0, err
    rc, out, err = _cli(capsys, "evaluate", model, data)
    assert rc == 0, err
    assert "[other]" in out and "[/bold]" in out and "[red]data[" in out
    rc, out, err = _cli(capsys, "info", model)
    assert rc == 0, err
    assert "[other]" in out and "[red]data[" in out


# --------------------------------------------------------------------------- 4. wrong kind
@pytest.fixture(scope="module")
def segmenter_file(tmp_path_factory):
    from maxmargin.apps.segmentation import Segmenter

    rng = np.random.default_rng(0)
    images, masks = [], []
    for _ in range(2):
        m = np.zeros((32, 32), bool)
        m[8:24, 8:24] = True
        images.append((np.where(m, 200, 50) + rng.normal(0, 10, m.shape)).clip(0, 255))
        masks.append(m)
    seg = Segmenter(learner="unary", n_segments=20, unary_iter=3, patch_sizes=(8,))
    seg.fit([im.astype(np.uint8) for im in images], masks)
    path = tmp_path_factory.mktemp("seg") / "seg.mm"
    mmio.save(seg, path)
    return path


@pytest.mark.parametrize("command", ["evaluate", "predict"])
def test_4_segmenter_model_in_predict_or_evaluate(segmenter_file, iris, capsys, command):
    rc, out, err = _cli(capsys, command, segmenter_file, iris / "train.svm")
    assert rc == 2, err
    assert "Segmenter" in err and "segment predict" in err and out == ""


# --------------------------------------------------------------------------- 5. bombs
def _peak_load(path) -> tuple[str, int]:
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            mmio.load(path)
        return str(info.value), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_5_zip_bomb_is_refused_before_inflating(model_file):
    """A member that inflates to 256 MB while the header declares a few bytes: refused
    from the central directory, with a few MB of memory at most (tracemalloc counts
    NumPy's buffers too)."""
    document, raw = _members(model_file)
    name = sorted(raw)[0]
    header = np.lib.format.header_data_from_array_1_0(np.zeros(0, np.uint8))
    big = 256 * 2**20
    header["shape"] = (big,)
    buf = pyio.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    with zipfile.ZipFile(model_file, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for other, data in raw.items():
            if other != name:
                zf.writestr(other + ".npy", data)
        with zf.open(name + ".npy", "w", force_zip64=True) as member:
            member.write(buf.getvalue())
            chunk = bytes(2**22)
            for _ in range(big // len(chunk)):
                member.write(chunk)
        meta = json.dumps(document).encode()
        zf.writestr(mmio.META_KEY + ".npy", _npy(np.frombuffer(meta, dtype=np.uint8)))
    assert model_file.stat().st_size < 2 * 2**20
    message, peak = _peak_load(model_file)
    assert "declared sizes disagree" in message or "declares" in message
    assert peak < 16 * 2**20, peak


def test_5_lying_central_directory_is_never_inflated_past_its_size(model_file):
    """The directory says 100 bytes but the deflate stream holds 64 MB: at most the
    declared bytes are ever produced."""
    document, raw = _members(model_file)
    name = sorted(raw)[0]
    data = np.zeros(8 * 2**20)  # 64 MB
    raw[name] = _npy(data)
    _write_model(model_file, json.dumps(document).encode(), raw)
    blob = bytearray(model_file.read_bytes())
    eocd = blob.rfind(b"PK\x05\x06")
    (cd,) = struct.unpack_from("<I", blob, eocd + 16)
    while blob[cd : cd + 4] == b"PK\x01\x02":  # walk the central directory
        n, m, k = struct.unpack_from("<HHH", blob, cd + 28)
        if bytes(blob[cd + 46 : cd + 46 + n]) == (name + ".npy").encode():
            struct.pack_into("<I", blob, cd + 24, 200)  # declared uncompressed size
            break
        cd += 46 + n + m + k
    else:
        raise AssertionError("member not found")
    model_file.write_bytes(bytes(blob))
    message, peak = _peak_load(model_file)
    assert "model.mm" in message
    assert peak < 16 * 2**20, peak


def test_5_consistent_bomb_is_refused_from_the_directory(model_file):
    """Header and directory agree on a 1.5 GiB array that 2 MB of deflate data would have
    to produce (a ratio a real model never has): refused without reading the member."""
    document, raw = _members(model_file)
    n = (3 * 2**30 // 2) // 8
    document["arrays"]["slot_weights"] = {"dtype": "<f8", "shape": [n]}
    raw["slot_weights"] = np.random.default_rng(0).bytes(2 * 2**20)  # stands for deflate data
    _write_model(model_file, json.dumps(document).encode(), raw, zipfile.ZIP_STORED)
    blob = bytearray(model_file.read_bytes())
    eocd = blob.rfind(b"PK\x05\x06")
    (cd,) = struct.unpack_from("<I", blob, eocd + 16)
    while blob[cd : cd + 4] == b"PK\x01\x02":
        k, m, c = struct.unpack_from("<HHH", blob, cd + 28)
        if bytes(blob[cd + 46 : cd + 46 + k]) == b"slot_weights.npy":
            struct.pack_into("<H", blob, cd + 10, zipfile.ZIP_DEFLATED)
            struct.pack_into("<I", blob, cd + 24, n * 8 + 128)  # uncompressed size
            break
        cd += 46 + k + m + c
    model_file.write_bytes(bytes(blob))
    message, peak = _peak_load(model_file)
    assert "zip bomb" in message and "model.mm" in message
    assert peak < 16 * 2**20, peak


def test_5_too_many_members_and_huge_history(model_file):
    document, raw = _members(model_file)
    with zipfile.ZipFile(model_file, "w") as zf:
        for k in range(mmio.MAX_MEMBERS + 1):
            zf.writestr(f"a{k}.npy", b"")
    with pytest.raises(ValueError, match="members, over the limit"):
        mmio.load(model_file)
    history = [{"iteration": i, "objective": 1.0 / (i + 1), "gap": 0.5} for i in range(400_000)]
    document["meta"]["history"] = history
    _write_model(model_file, json.dumps(document).encode(), raw)
    message, peak = _peak_load(model_file)
    assert "over the limit" in message and "history" in message
    assert peak < 16 * 2**20, peak


def test_5_fuzzed_bytes_never_crash(model_file):
    """Random byte edits anywhere: ValueError naming the file, never anything else."""
    rng = np.random.default_rng(5)
    data = model_file.read_bytes()
    for _ in range(150):
        blob = bytearray(data)
        for pos in rng.integers(0, len(blob), size=rng.integers(1, 6)):
            blob[pos] = rng.integers(0, 256)
        model_file.write_bytes(bytes(blob))
        try:
            mmio.load(model_file)
        except ValueError as exc:
            assert "model.mm" in str(exc)


# --------------------------------------------------------------------------- 6. arrays
@pytest.mark.parametrize(
    "name,change,message",
    [
        ("task.gamma", lambda a: a * np.nan, "NaN"),
        ("task.delta", lambda a: np.full_like(a, np.nan), "NaN"),
        ("task.classes", lambda a: np.array([a[0], *a]), "more than once"),
        ("task.classes", lambda a: np.append(a, a.max() + 1), "disagree|classes"),
        ("slot_weights", lambda a: a > 0, "bool|not written"),
        (
            "slot_weights",
            lambda a: np.zeros(a.shape, dtype=[("w", "<f8")]),
            "dtype",
        ),
        ("task.gamma", lambda a: a.astype(bool), "float"),
    ],
)
def test_6_inconsistent_arrays_are_refused(model_file, name, change, message):
    _edit(model_file, name, change)
    with pytest.raises(ValueError, match=message):
        mmio.load(model_file)


def test_6_infinite_weights_give_no_scores(model_file):
    _edit(model_file, "task.gamma", lambda a: a * np.inf)
    with pytest.raises(ValueError, match=r"non-finite|NaN"):
        mmio.load(model_file)


# --------------------------------------------------------------------------- 7. layout
def test_7_svmlight_model_refuses_csv_data(iris, capsys):
    for name in ("label_first.csv", "label_last.csv"):
        rc, out, err = _cli(capsys, "predict", iris / "model.mm", iris / name)
        assert rc == 2 and out == ""
        assert name in err and "svmlight" in err


def test_7_csv_model_refuses_svmlight_data(iris, tmp_path, capsys):
    model = tmp_path / "csv.mm"
    rc, _, err = _cli(capsys, "fit", iris / "label_last.csv", "-o", model, "--max-iter", "3")
    assert rc == 0, err
    rc, _out, err = _cli(capsys, "evaluate", model, iris / "train.svm")
    assert rc == 2 and "train.svm" in err and "csv" in err


# --------------------------------------------------------------------------- 8. track
def _otb(root: Path, n=6, size=(40, 48), odd=None):
    import imageio.v3 as iio

    (root / "img").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for k in range(n):
        shape = (4, 4) if k == odd else size
        frame = rng.integers(0, 60, size=shape, dtype=np.uint8)
        if k != odd:
            frame[10 + k : 22 + k, 12:24] = 220
        iio.imwrite(root / "img" / f"{k + 1:04d}.png", frame)
    rows = [f"{13},{11 + k},{12},{12}" for k in range(n)]
    (root / "groundtruth_rect.txt").write_text("\n".join(rows) + "\n")
    return root


def test_8_track_frame_of_another_size_is_an_error(tmp_path):
    from maxmargin.apps.tracking import load_sequence

    seq = load_sequence(_otb(tmp_path / "seq", odd=4))
    seq.frame(0)
    with pytest.raises(ValueError, match=r"0005\.png: the frame is 4 x 4 pixels .* 48 x 40"):
        seq.frame(4)


def test_8_track_cli_stops_at_the_odd_frame(tmp_path, capsys):
    seq = _otb(tmp_path / "seq", odd=4)
    rc, _out, err = _cli(capsys, "track", seq, "--tracker", "adaboost", "--features", "raw")
    assert rc == 2 and "0005.png" in err


# --------------------------------------------------------------------------- 9. detect size
@pytest.fixture(scope="module")
def voc(tmp_path_factory):
    import imageio.v3 as iio

    from maxmargin.datasets import make_detection_scenes

    root = tmp_path_factory.mktemp("voc")
    (root / "img").mkdir()
    (root / "ann").mkdir()
    images, boxes = make_detection_scenes(6, random_state=0)
    for k, (im, b) in enumerate(zip(images, boxes)):
        iio.imwrite(root / "img" / f"s{k}.png", im)
        _voc_xml(root / "ann" / f"s{k}.xml", f"s{k}.png", im.shape, b)
    model = root / "det.mm"
    args = ["detect", "fit", root / "img", root / "ann", "-o", model, "--window", "3,3"]
    assert main([str(a) for a in args]) == 0
    return root


def _voc_xml(path, filename, shape, boxes):
    H, W = shape[:2]
    objs = "".join(
        f"<object><name>ring</name><bndbox><xmin>{int(x) + 1}</xmin><ymin>{int(y) + 1}</ymin>"
        f"<xmax>{int(x + w)}</xmax><ymax>{int(y + h)}</ymax></bndbox></object>"
        for x, y, w, h in boxes
    )
    path.write_text(
        f"<annotation><filename>{filename}</filename><size><width>{W}</width>"
        f"<height>{H}</height></size>{objs}</annotation>"
    )


def test_9_detect_predict_checks_xml_size(voc, tmp_path, capsys):
    import shutil

    ann = tmp_path / "ann"
    shutil.copytree(voc / "ann", ann)
    text = (ann / "s1.xml").read_text()
    w = re.search(r"<width>(\d+)</width>", text).group(1)
    (ann / "s1.xml").write_text(text.replace(f"<width>{w}</width>", f"<width>{int(w) * 2}</width>"))
    rc, _out, err = _cli(
        capsys,
        "detect",
        "predict",
        voc / "det.mm",
        voc / "img",
        "-o",
        tmp_path / "o",
        "--annotations",
        ann,
    )
    assert rc == 2 and "s1.xml" in err and "does not match" in err


def test_9_detect_predict_missing_annotation(voc, tmp_path, capsys):
    import shutil

    ann = tmp_path / "ann"
    shutil.copytree(voc / "ann", ann)
    (ann / "s2.xml").unlink()
    rc, _, err = _cli(
        capsys,
        "detect",
        "predict",
        voc / "det.mm",
        voc / "img",
        "-o",
        tmp_path / "o",
        "--annotations",
        ann,
    )
    assert rc == 2 and "s2" in err and "annotation" in err


# --------------------------------------------------------------------------- 10. segment
def _seg_folders(root: Path, n=3, mask_size=None, values=(0, 255)):
    import imageio.v3 as iio

    (root / "img").mkdir(parents=True)
    (root / "mask").mkdir()
    rng = np.random.default_rng(1)
    for k in range(n):
        m = np.zeros((32, 32), bool)
        m[6 + k : 22 + k, 8:24] = True
        img = (np.where(m, 190, 60) + rng.normal(0, 12, m.shape)).clip(0, 255).astype(np.uint8)
        iio.imwrite(root / "img" / f"i{k}.png", img)
        mask = np.where(m, values[-1], values[0]).astype(np.uint8)
        if mask_size is not None and k == 0:
            mask = np.repeat(np.repeat(mask, 2, axis=0), 2, axis=1)
        iio.imwrite(root / "mask" / f"i{k}.png", mask)
    return root


def test_10_segment_fit_refuses_image_without_mask(tmp_path, capsys):
    root = _seg_folders(tmp_path / "s")
    (root / "mask" / "i1.png").unlink()
    rc, _, err = _cli(
        capsys,
        "segment",
        "fit",
        root / "img",
        root / "mask",
        "-o",
        tmp_path / "m.mm",
        "--learner",
        "unary",
        "--unary-iter",
        "3",
        "--n-segments",
        "20",
    )
    assert rc == 2 and "i1.png" in err and "no mask" in err


def test_10_segment_predict_masks(segmenter_file, tmp_path, capsys):
    root = _seg_folders(tmp_path / "s", mask_size=2)
    base = ["segment", "predict", segmenter_file, root / "img", "-o", tmp_path / "o"]
    rc, _, err = _cli(capsys, *base, "--masks", root / "mask")
    assert rc == 2 and "i0.png" in err and "mask is 64 x 64" in err  # never resized
    (root / "mask" / "i0.png").unlink()
    rc, _, err = _cli(capsys, *base, "--masks", root / "mask")
    assert rc == 2 and "i0.png" in err and "no mask" in err  # never left out


def test_10_mask_value_sets(tmp_path):
    from maxmargin.apps.segmentation import load_image_folder

    root = _seg_folders(tmp_path / "a", values=(0, 1))  # a 0/1 mask is not all background
    _, masks, _ = load_image_folder(root / "img", root / "mask")
    assert all(m.any() and not m.all() for m in masks)
    import imageio.v3 as iio

    three = np.zeros((32, 32), np.uint8)
    three[:10], three[10:20] = 128, 255
    iio.imwrite(root / "mask" / "i0.png", three)
    with pytest.warns(UserWarning, match=r"i0\.png: the mask has 3 distinct values"):
        load_image_folder(root / "img", root / "mask")
    iio.imwrite(root / "mask" / "i0.png", np.zeros((32, 32), np.uint8))
    with pytest.warns(UserWarning, match=r"i0\.png: the mask is all background"):
        load_image_folder(root / "img", root / "mask")


# --------------------------------------------------------------------------- 11. qid
def test_11_grouped_ranker_refuses_data_without_qid(tmp_path, capsys):
    rng = np.random.default_rng(0)
    lines_q, lines = [], []
    for q in range(4):
        for _i in range(8):
            x = rng.normal(size=3)
            rel = int(x[0] > 0) + int(x[1] > 0.5)
            feats = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x))
            lines_q.append(f"{rel} qid:{q + 1} {feats}")
            lines.append(f"{rel} {feats}")
    (tmp_path / "q.svm").write_text("\n".join(lines_q) + "\n")
    (tmp_path / "noq.svm").write_text("\n".join(lines) + "\n")
    model = tmp_path / "r.mm"
    rc, _, err = _cli(
        capsys, "fit", "--rank", "--model", "ranksvm", tmp_path / "q.svm", "-o", model
    )
    assert rc == 0, err
    rc, _out, err = _cli(capsys, "evaluate", model, tmp_path / "noq.svm")
    assert rc == 2 and "noq.svm" in err and "qid" in err


# --------------------------------------------------------------------------- 12. full disk
def test_12_predict_output_survives_a_full_disk(iris, tmp_path, capsys, monkeypatch):
    out = tmp_path / "pred.txt"
    out.write_text("precious previous predictions\n")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    rc, _, err = _cli(capsys, "predict", iris / "model.mm", iris / "train.svm", "-o", out)
    assert rc == 2 and "pred.txt" in err and "No space left" in err
    assert out.read_text() == "precious previous predictions\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pred.txt"]


def test_12_atomic_write_on_error_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with mmio.atomic_write(target) as fh:
            fh.write(b"partial new content")
            raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


# --------------------------------------------------------------------------- 13. same path
def test_13_output_that_is_an_input_is_refused(iris, tmp_path, capsys):
    data = tmp_path / "same.svm"
    data.write_bytes((iris / "train.svm").read_bytes())
    before = data.read_bytes()
    rc, _, err = _cli(capsys, "fit", data, "-o", data, "--max-iter", "3", "--quiet")
    assert rc == 2 and "destroy" in err and data.read_bytes() == before
    model = tmp_path / "m.mm"
    model.write_bytes((iris / "model.mm").read_bytes())
    saved = model.read_bytes()
    rc, _, err = _cli(capsys, "predict", model, data, "-o", model)
    assert rc == 2 and model.read_bytes() == saved
    os.link(model, tmp_path / "hard.mm")  # a hard link is the same file too
    rc, _, err = _cli(capsys, "predict", model, data, "-o", tmp_path / "hard.mm")
    assert rc == 2 and model.read_bytes() == saved


# --------------------------------------------------------------------------- 14. containment
@pytest.mark.parametrize("filename", ["../outside/secret.png", "/etc/passwd", "sub/../../x.png"])
def test_14_voc_filename_cannot_leave_the_image_folder(tmp_path, filename):
    import imageio.v3 as iio

    from maxmargin.apps.detection import load_voc_folder

    (tmp_path / "img").mkdir()
    (tmp_path / "ann").mkdir()
    (tmp_path / "outside").mkdir()
    im = np.zeros((20, 20), np.uint8)
    iio.imwrite(tmp_path / "outside" / "secret.png", im)
    _voc_xml(tmp_path / "ann" / "a.xml", filename, im.shape, [(2, 2, 8, 8)])
    with pytest.raises(ValueError, match=r"a\.xml: file name .* (outside|absolute)"):
        load_voc_folder(tmp_path / "img", tmp_path / "ann")


# --------------------------------------------------------------------------- 15. empty key
def test_15_empty_model_key_is_an_error(iris, capsys, monkeypatch):
    monkeypatch.setenv(mmio.KEY_ENV, "")
    rc, _out, err = _cli(capsys, "info", iris / "model.mm")
    assert rc == 2 and "MAXMARGIN_MODEL_KEY" in err and "empty" in err


# --------------------------------------------------------------------------- 16. stale temps
def test_16_stale_temp_files_are_cleaned(iris, tmp_path):
    model = mmio.load(iris / "model.mm")
    target = tmp_path / "m.mm"
    dead = tmp_path / f".m.mm.{2**22 + 12345}-{'a' * 12}.tmp"  # no such process
    old = tmp_path / f".m.mm.{'b' * 12}.tmp"  # an older release's name, a day old
    alive = tmp_path / f".m.mm.{os.getppid()}-{'c' * 12}.tmp"  # a live writer
    other = tmp_path / f".other.mm.{'d' * 12}.tmp"
    for p in (dead, old, alive, other):
        p.write_bytes(b"half a model")
    os.utime(old, (1e9, 1e9))
    mmio.save(model, target)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([target.name, alive.name, other.name])


# --------------------------------------------------------------------------- 17. decode errors
def test_17_undecodable_frames_and_images_name_the_file(tmp_path, capsys):
    seq = _otb(tmp_path / "seq")
    (seq / "img" / "0003.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    from maxmargin.apps.tracking import load_sequence

    with pytest.raises(ValueError, match=r"0003\.png: cannot decode the frame"):
        load_sequence(seq).frame(2)
    root = _seg_folders(tmp_path / "s")
    (root / "img" / "i2.png").write_bytes(b"not an image at all")
    rc, _, err = _cli(
        capsys,
        "segment",
        "fit",
        root / "img",
        root / "mask",
        "-o",
        tmp_path / "m.mm",
        "--learner",
        "unary",
    )
    assert rc == 2 and "i2.png" in err and "cannot decode" in err and "pip install" not in err


# --------------------------------------------------------------------------- 18. messages
def test_18_bom_in_csv_header_is_stripped(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int)
    rows = ["label,a,b"] + [f"{c},{a:.3f},{b:.3f}" for c, (a, b) in zip(y, X)]
    data = tmp_path / "bom.csv"
    data.write_bytes(b"\xef\xbb\xbf" + ("\n".join(rows) + "\n").encode())
    rc, _, err = _cli(
        capsys,
        "fit",
        data,
        "-o",
        tmp_path / "m.mm",
        "--label-column",
        "label",
        "--quiet",
        "--max-iter",
        "3",
    )
    assert rc == 0, err
    rc, _, err = _cli(capsys, "evaluate", tmp_path / "m.mm", data)
    assert rc == 0, err


def test_18_messages_name_the_file(iris, tmp_path, capsys):
    labels_only = tmp_path / "labels.csv"
    labels_only.write_text("label\n1\n2\n1\n2\n")
    rc, _, err = _cli(capsys, "fit", labels_only, "-o", tmp_path / "m.mm")
    assert rc == 2 and "labels.csv" in err and "feature" in err
    tax = tmp_path / "tax.json"
    tax.write_text('{"a": ["b", "c"')
    rc, _, err = _cli(
        capsys, "fit", iris / "label_last.csv", "-o", tmp_path / "m.mm", "--taxonomy", tax
    )
    assert rc == 2 and "tax.json" in err


def test_18_track_box_errors_print_plain_numbers(tmp_path):
    from maxmargin.apps.tracking import load_sequence

    seq = _otb(tmp_path / "seq")
    gt = seq / "groundtruth_rect.txt"
    gt.write_text(gt.read_text().replace("13,11,12,12", "4999,11,12,12", 1))
    with pytest.raises(ValueError) as info:
        load_sequence(seq)
    assert "np.float64" not in str(info.value) and "(4998, 10, 12, 12)" in str(info.value)
