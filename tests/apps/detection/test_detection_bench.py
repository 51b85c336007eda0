"""The image selection of benchmarks/bench_detection.py (``--extra-negatives`` and
``--test-negatives``, in benchmarks/benchlib/image_specs.py): ``DIR[:STEP[:OFFSET]]`` in
natural order, and the check that no image is both a training and a test negative."""

import pytest

from benchlib import image_specs  # benchmarks/ is on pytest's pythonpath


@pytest.fixture(scope="module")
def bench():
    return image_specs


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "frames"
    d.mkdir()
    for k in range(1, 13):  # img1 .. img12: natural order differs from the lexical one
        (d / f"img{k}.jpg").write_bytes(b"")
    (d / "notes.txt").write_text("not an image")
    return d


def test_parse_image_spec(bench, tmp_path):
    d = str(tmp_path)
    assert bench.parse_image_spec(d) == (tmp_path, 1, 0)
    assert bench.parse_image_spec(f"{d}:10") == (tmp_path, 10, 0)
    assert bench.parse_image_spec(f"{d}:10:5") == (tmp_path, 10, 5)
    for bad in (f"{d}:0", f"{d}:10:-1", ":3"):
        with pytest.raises(ValueError):
            bench.parse_image_spec(bad)


def test_select_image_files_step_and_offset(bench, folder):
    names = lambda spec: [f.name for f in bench.select_image_files([spec])[0]]  # noqa: E731
    assert names(str(folder)) == [f"img{k}.jpg" for k in range(1, 13)]
    assert names(f"{folder}:10") == ["img1.jpg", "img11.jpg"]
    assert names(f"{folder}:10:5") == ["img6.jpg"]
    assert names(f"{folder}:3:1") == ["img2.jpg", "img5.jpg", "img8.jpg", "img11.jpg"]
    files, counts = bench.select_image_files([f"{folder}:2", f"{folder}:4:1"])
    assert counts == {f"{folder}:2": 6, f"{folder}:4:1": 3} and len(files) == 9
    with pytest.raises(SystemExit, match="--test-negatives: no images"):
        bench.select_image_files([f"{folder}:1:12"], "--test-negatives")
    with pytest.raises(SystemExit, match="not a folder"):
        bench.select_image_files([f"{folder / 'missing'}:2"])


def test_train_and_test_negatives_must_be_disjoint(bench, folder, monkeypatch):
    train, _ = bench.select_image_files([f"{folder}:2"])  # img1, img3, ...
    test, _ = bench.select_image_files([f"{folder}:2:1"])  # img2, img4, ...
    bench.check_disjoint(train, test)
    monkeypatch.chdir(folder.parent)  # the same file by a relative path is caught too
    clash, _ = bench.select_image_files(["frames:10:10"])  # img11
    with pytest.raises(SystemExit, match="share 1 image"):
        bench.check_disjoint(train, clash)
