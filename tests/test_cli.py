"""The ``maxmargin`` command line, run in-process on tiny generated data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from maxmargin import io as mmio
from maxmargin.cli import main


def _blobs(n_per_class=12, n_features=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = 4.0 * np.eye(3, n_features)
    X = np.vstack([c + rng.normal(scale=0.7, size=(n_per_class, n_features)) for c in centers])
    y = np.repeat([0, 1, 2], n_per_class)
    return X, y


@pytest.fixture
def csv_data(tmp_path):
    X, y = _blobs()
    path = tmp_path / "train.csv"
    lines = ["f1,f2,f3,label"] + [
        ",".join(f"{v:.6f}" for v in row) + f",{label}" for row, label in zip(X, y)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path, X, y


@pytest.fixture
def svm_data(tmp_path):
    X, y = _blobs(seed=1)
    path = tmp_path / "train.svm"
    lines = [
        f"{label} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row))
        for row, label in zip(X, y)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path, X, y


@pytest.fixture
def fitted(tmp_path, csv_data, capsys):
    path, _, _ = csv_data
    model = tmp_path / "model.mm"
    assert main(["fit", str(path), "-o", str(model), "--max-iter", "10", "--seed", "0"]) == 0
    capsys.readouterr()
    return model


def test_fit_predict_evaluate_round_trip(tmp_path, csv_data, fitted, capsys):
    path, X, _ = csv_data
    est = mmio.load(fitted)
    assert est.n_features_in_ == 3
    np.testing.assert_array_equal(np.sort(est.classes_), [0, 1, 2])

    out = tmp_path / "pred.txt"
    assert main(["predict", str(fitted), str(path), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines == [str(v) for v in est.predict(X)]

    assert main(["predict", str(fitted), str(path)]) == 0  # to stdout
    assert capsys.readouterr().out.splitlines() == lines

    assert main(["evaluate", str(fitted), str(path)]) == 0
    text = capsys.readouterr().out
    assert "accuracy" in text and "Confusion matrix" in text


def test_fit_human_output_and_progress(tmp_path, csv_data, capsys):
    path, _, _ = csv_data
    model = tmp_path / "m.mm"
    assert main(["fit", str(path), "-o", str(model), "--max-iter", "5"]) == 0
    captured = capsys.readouterr()
    assert "train error" in captured.out and "objective" in captured.out
    assert "StructBoost" in captured.err  # the progress display goes to stderr
    assert model.exists()


def test_fit_json(tmp_path, svm_data, capsys):
    path, X, y = svm_data
    model = tmp_path / "m.mm"
    argv = ["fit", str(path), "-o", str(model), "--max-iter", "5", "--json", "--C", "10"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert captured.err == ""  # no progress display with --json
    assert summary["n_samples"] == len(y) and summary["n_features"] == 3
    assert summary["n_classes"] == 3
    assert 1 <= summary["iterations"] <= 5
    assert 0.0 <= summary["train_error"] <= 1.0
    for key in ("objective", "fit_seconds", "model"):
        assert key in summary
    est = mmio.load(model)
    assert summary["train_error"] == pytest.approx(np.mean(est.predict(X) != y))


def test_predict_and_evaluate_json(tmp_path, csv_data, fitted, capsys):
    path, X, y = csv_data
    assert main(["predict", str(fitted), str(path), "--json"]) == 0
    predictions = json.loads(capsys.readouterr().out)["predictions"]
    assert predictions == mmio.load(fitted).predict(X).tolist()

    assert main(["evaluate", str(fitted), str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == len(y)
    assert report["accuracy"] == pytest.approx(1 - report["error_rate"])
    assert report["accuracy"] == pytest.approx(np.mean(np.array(predictions) == y))
    cm = np.array(report["confusion_matrix"])
    assert cm.shape == (3, 3) and cm.sum() == len(y)
    assert [c["support"] for c in report["per_class"]] == [12, 12, 12]
    assert sum(c["correct"] for c in report["per_class"]) == np.trace(cm)


def test_predict_unlabelled_csv(tmp_path, csv_data, fitted, capsys):
    _, X, _ = csv_data
    path = tmp_path / "unlabelled.csv"
    path.write_text("\n".join(",".join(map(str, row)) for row in X[:5]) + "\n")
    assert main(["predict", str(fitted), str(path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 5


def _assert_clean_error(capsys, *needles):
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err
    return err


def test_missing_data_file(tmp_path, capsys):
    missing = tmp_path / "missing.csv"
    assert main(["fit", str(missing), "-o", str(tmp_path / "m.mm")]) == 2
    _assert_clean_error(capsys, "missing.csv")


def test_missing_model_file(tmp_path, csv_data, capsys):
    path, _, _ = csv_data
    assert main(["predict", str(tmp_path / "nope.mm"), str(path)]) == 2
    _assert_clean_error(capsys, "nope.mm")


def test_corrupt_model(tmp_path, csv_data, fitted, capsys):
    path, _, _ = csv_data
    fitted.write_bytes(fitted.read_bytes()[:100])
    assert main(["evaluate", str(fitted), str(path)]) == 2
    _assert_clean_error(capsys, "model.mm", "corrupt")


def test_data_file_is_not_a_model(csv_data, capsys):
    path, _, _ = csv_data
    assert main(["predict", str(path), str(path)]) == 2
    _assert_clean_error(capsys, "not an .npz")


def test_non_numeric_data(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("1,2,0\n3,abc,1\n")
    assert main(["fit", str(path), "-o", str(tmp_path / "m.mm")]) == 2
    _assert_clean_error(capsys, "bad.csv", "'abc'", "line 2, column 2")
    assert not (tmp_path / "m.mm").exists()


def test_wrong_width_at_predict_time(tmp_path, fitted, capsys):
    path = tmp_path / "wide.csv"
    path.write_text("1,2,3,4,5,0\n")
    assert main(["predict", str(fitted), str(path)]) == 2
    _assert_clean_error(capsys, "expected 3")


def test_version_and_usage(capsys):
    assert main(["--version"]) == 0
    assert "maxmargin" in capsys.readouterr().out
    assert main([]) == 2
    assert main(["fit"]) == 2  # missing DATA and -o
    assert "usage" in capsys.readouterr().err


def test_demo_small(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--max-iter", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    methods = [r["method"] for r in result["results"]]
    assert len(methods) == 3 and methods[0] == "StructBoost"
    for row in result["results"]:
        assert 0.0 <= row["test_error"] <= 1.0 and row["fit_seconds"] >= 0
    assert result["n_train"] + result["n_test"] == 1797
    assert 1 <= result["structboost"]["iterations"] <= 5
    plot = out / "structboost_convergence.png"
    assert plot.exists() and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
