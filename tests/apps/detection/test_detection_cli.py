"""``maxmargin detect fit|predict`` end to end on tiny synthetic images (issue 13)."""

import json

import numpy as np
import pytest

import maxmargin
from maxmargin.cli import main
from maxmargin.datasets import make_detection_scenes


def _write_voc(folder, name, img, boxes):
    H, W = img.shape[:2]
    objs = "".join(
        f"<object><name>ring</name><bndbox><xmin>{int(x) + 1}</xmin><ymin>{int(y) + 1}</ymin>"
        f"<xmax>{int(x + w)}</xmax><ymax>{int(y + h)}</ymax></bndbox></object>"
        for x, y, w, h in boxes
    )
    (folder / f"{name}.xml").write_text(
        f"<annotation><filename>{name}.png</filename><size><width>{W}</width>"
        f"<height>{H}</height><depth>1</depth></size>{objs}</annotation>"
    )


@pytest.fixture(scope="module")
def voc(tmp_path_factory):
    import imageio.v3 as iio

    root = tmp_path_factory.mktemp("voc")
    for part, seed, n in (("train", 0, 8), ("test", 1, 3)):
        (root / part / "img").mkdir(parents=True)
        (root / part / "ann").mkdir()
        images, boxes = make_detection_scenes(n, random_state=seed)
        for k, (im, b) in enumerate(zip(images, boxes)):
            iio.imwrite(root / part / "img" / f"s{k}.png", im)
            _write_voc(root / part / "ann", f"s{k}", im, b)
    return root


@pytest.mark.parametrize("model", ["svm", "cascade", "ranker"])
def test_detect_fit_predict(voc, tmp_path, capsys, model):
    m = tmp_path / "m.npz"
    args = ["detect", "fit", str(voc / "train/img"), str(voc / "train/ann"), "-o", str(m)]
    args += ["--model", model, "--window", "3,3", "--json"]
    if model == "cascade":
        args += ["--n-stages", "3", "--max-weak", "10", "--plot", str(tmp_path / "stages.png")]
    assert main(args) == 0
    fit = json.loads(capsys.readouterr().out)
    assert fit["n_images"] == 8 and m.exists()
    if model == "svm":
        assert fit["mining"][0]["n_hard"] > fit["mining"][-1]["n_hard"]
    if model == "cascade":
        assert (tmp_path / "stages.png").stat().st_size > 0
    out = tmp_path / "out"
    pred = ["detect", "predict", str(m), str(voc / "test/img"), "-o", str(out)]
    rc = main([*pred, "--annotations", str(voc / "test/ann"), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n_images"] == 3
    assert (out / "s0_boxes.png").stat().st_size > 0
    rows = np.loadtxt(out / "s0_boxes.txt", ndmin=2)
    assert rows.shape[1] == 5
    if model == "ranker":
        assert set(res["auc"]) >= {"1", "10", "100", "1000"}
        assert (out / "recall_overlap.png").stat().st_size > 0
    else:
        assert 0.0 <= res["average_precision"] <= 1.0


def test_detect_cli_errors(voc, tmp_path, capsys):
    bad = tmp_path / "ann"
    bad.mkdir()
    for p in (voc / "train/ann").iterdir():
        (bad / p.name).write_text(p.read_text())
    (bad / "s0.xml").write_text("<annotation><size>")
    rc = main(["detect", "fit", str(voc / "train/img"), str(bad), "-o", str(tmp_path / "m")])
    assert rc == 2
    assert "corrupt XML" in capsys.readouterr().err
    rc = main(["detect", "predict", str(tmp_path / "none.npz"), str(voc), "-o", str(tmp_path)])
    assert rc == 2


def test_detect_fit_window_options(voc, tmp_path, capsys):
    m = tmp_path / "m.npz"
    base = ["detect", "fit", str(voc / "train/img"), str(voc / "train/ann"), "-o", str(m)]
    base += ["--window", "3,3"]
    rc = main([*base, "--aspect-ratios", "1,1.5", "--colour", "--no-location-prior"])
    assert rc == 0
    est = maxmargin.load(m)
    assert est.aspect_ratios == (1.0, 1.5) and est.colour and not est.location_prior
    capsys.readouterr()
    assert main([*base, "--aspect-ratios", "1,-2"]) == 2
    assert "aspect-ratios" in capsys.readouterr().err


def test_detect_fit_cascade_channels_and_stage_caps(voc, tmp_path, capsys):
    m = tmp_path / "c.npz"
    base = ["detect", "fit", str(voc / "train/img"), str(voc / "train/ann"), "-o", str(m)]
    base += ["--window", "3,3", "--model", "cascade", "--n-stages", "3"]
    assert main([*base, "--channels", "--max-weak", "2,5"]) == 0
    est = maxmargin.load(m)
    assert est.channels and est.max_weak == [2, 5]
    assert est.cascade_.stages_[0]["n_weak"] <= 2
    capsys.readouterr()
    assert main([*base, "--max-weak", "2,0"]) == 2
    assert "max-weak" in capsys.readouterr().err
    # the defaults: the cascade with channel features and the stage schedule, the svm
    # without channels; --no-channels turns them off
    assert main(base) == 0
    est = maxmargin.load(m)
    assert est.channels and est.max_weak == [2, 5, 10, 20, 50]
    assert main([*base, "--no-channels"]) == 0
    assert not maxmargin.load(m).channels
    assert not est.chain and not est.cascade_.chain and not est.bootstrap
    # --chain / --bootstrap reach the cascade and its file
    assert main([*base, "--chain", "--bootstrap", "--n-stages", "2"]) == 0
    est = maxmargin.load(m)
    assert est.chain and est.cascade_.chain and est.bootstrap
    svm = ["detect", "fit", str(voc / "train/img"), str(voc / "train/ann"), "-o", str(m)]
    assert main([*svm, "--window", "3,3"]) == 0
    assert not maxmargin.load(m).channels


def test_detect_fit_negative_images(voc, tmp_path, capsys):
    import imageio.v3 as iio

    neg = tmp_path / "neg"
    neg.mkdir()
    rng = np.random.default_rng(0)
    for k in range(2):  # object-free noise images
        iio.imwrite(neg / f"n{k}.png", rng.integers(0, 255, size=(48, 64), dtype=np.uint8))
    m = tmp_path / "m.npz"
    base = ["detect", "fit", str(voc / "train/img"), str(voc / "train/ann"), "-o", str(m)]
    base += ["--window", "3,3", "--json"]
    args = [*base, "--model", "cascade", "--n-stages", "2", "--max-weak", "5"]
    assert main([*args, "--negative-images", str(neg)]) == 0
    fit = json.loads(capsys.readouterr().out)
    assert fit["n_negative_images"] == 2
    assert maxmargin.load(m).n_extra_negatives_ > 0
    assert main([*base, "--model", "svm", "--negative-images", str(neg)]) == 2
    assert "cascade option" in capsys.readouterr().err
    for flag in ("--chain", "--bootstrap"):
        assert main([*base, "--model", "svm", flag]) == 2
        assert f"{flag} is a cascade option" in capsys.readouterr().err
    assert main([*args, "--negative-images", str(tmp_path / "missing")]) == 2
