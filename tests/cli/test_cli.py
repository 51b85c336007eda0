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


def test_fit_weak_learner_defaults_to_the_models_own(tmp_path, csv_data, fitted):
    # no --weak-learner: the estimator's default ("auto" for StructBoost), resolved to the
    # exact stump on these few rows; an explicit --weak-learner is passed through
    est = mmio.load(fitted)
    assert est.weak_learner == "auto" and est.weak_learner_ == "stump"
    path, _, _ = csv_data
    model = tmp_path / "h.mm"
    argv = ["fit", str(path), "-o", str(model), "--max-iter", "3", "--weak-learner", "hist_stump"]
    assert main([*argv, "--quiet"]) == 0
    assert mmio.load(model).weak_learner_ == "hist_stump"


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
    err = capsys.readouterr().err
    # the model was trained on a file with a header: a headerless file gets a warning first
    assert "warning: " in err and "no header" in err
    assert "error: " in err and "expected 3" in err and "Traceback" not in err


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


# --------------------------------------------------------------------------- ranking (--rank)
def _ranking(n_queries=6, per_query=8, seed=0):
    """Relevance grades 0..2 driven by the first two features, query ids 1..n_queries."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per_query, 4))
    score = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.3, size=len(X))
    y = np.clip(np.round(score + 1), 0, 2).astype(int)
    qid = np.repeat(np.arange(1, n_queries + 1), per_query)
    return X, y, qid


def _write_svmlight(path, X, y, qid=None):
    lines = []
    for i, (row, label) in enumerate(zip(X, y)):
        head = f"{label}" + ("" if qid is None else f" qid:{qid[i]}")
        lines.append(head + " " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def rank_data(tmp_path):
    X, y, qid = _ranking()
    # .txt as LETOR / svm_rank files are: the format is found by content
    return _write_svmlight(tmp_path / "rank.txt", X, y, qid), X, y, qid


@pytest.fixture
def ranker(tmp_path, rank_data, capsys):
    path, _, _, _ = rank_data
    model = tmp_path / "ranker.mm"
    argv = ["fit", "--rank", str(path), "-o", str(model), "--max-iter", "10", "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    return model


def _n_pairs(y, qid):
    return sum(int(np.sum(y[qid == q][:, None] > y[qid == q][None, :])) for q in np.unique(qid))


def test_fit_rank_json(tmp_path, rank_data, capsys):
    from maxmargin import StructBoostRanker
    from maxmargin.metrics import pairwise_accuracy

    path, X, y, qid = rank_data
    model = tmp_path / "r.mm"
    argv = ["fit", "--rank", str(path), "-o", str(model), "--max-iter", "10", "--json"]
    assert main([*argv, "--seed", "0"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    summary = json.loads(captured.out)
    est = mmio.load(model)
    assert isinstance(est, StructBoostRanker)
    assert summary["n_samples"] == len(y) and summary["n_features"] == 4
    assert summary["n_groups"] == 6
    assert summary["n_pairs"] == est.n_pairs_ == _n_pairs(y, qid)
    assert summary["formulation"] == "1-slack"  # "auto" means 1-slack with --rank
    assert (summary["graph"], summary["rescaling"]) == ("complete", "unit")
    assert 1 <= summary["iterations"] <= 10 and summary["n_weak"] >= 1
    assert summary["objective"] == pytest.approx(est.objective_)
    scores = est.decision_function(X)
    assert summary["train_pairwise_accuracy"] == pytest.approx(pairwise_accuracy(y, scores, qid))
    assert summary["train_pairwise_accuracy"] > 0.8
    assert summary["train_auc"] is None  # three relevance levels
    assert summary["fit_seconds"] >= 0


def test_fit_rank_human_output_and_progress(tmp_path, rank_data, capsys):
    path, _, _, _ = rank_data
    assert main(["fit", "--rank", str(path), "-o", str(tmp_path / "r.mm"), "--max-iter", "5"]) == 0
    captured = capsys.readouterr()
    assert "StructBoostRanker fit" in captured.out and "pairwise accuracy" in captured.out
    assert "StructBoostRanker" in captured.err  # the progress display


def test_fit_rank_options_reach_the_model(tmp_path, rank_data, capsys):
    path, _, _, _ = rank_data
    model = tmp_path / "r.mm"
    argv = ["fit", "--rank", str(path), "-o", str(model), "--max-iter", "5", "--json"]
    argv += ["--formulation", "m-slack", "--graph", "bipartite", "--top-k", "2"]
    argv += ["--rescaling", "margin", "--C", "10", "--normalize", "query"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["formulation"] == "m-slack" and summary["graph"] == "bipartite"
    assert summary["normalize"] == "query"
    est = mmio.load(model)
    assert (est.graph, est.rescaling, est.top_k, est.C) == ("bipartite", "margin", 2, 10.0)
    assert est.normalize == "query"
    assert summary["n_pairs"] == est.n_pairs_ < _n_pairs(*_ranking()[1:])


def test_rank_predict_writes_scores(tmp_path, rank_data, ranker, capsys):
    path, X, _, _ = rank_data
    scores = mmio.load(ranker).decision_function(X)
    out = tmp_path / "scores.txt"
    assert main(["predict", str(ranker), str(path), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines == [repr(float(s)) for s in scores]
    np.testing.assert_array_equal([float(v) for v in lines], scores)  # full precision

    assert main(["predict", str(ranker), str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"scores": scores.tolist()}


def test_rank_evaluate_json_matches_metrics(rank_data, ranker, capsys):
    from maxmargin.metrics import mean_average_precision, ndcg_at_k, pairwise_accuracy

    path, X, y, qid = rank_data
    assert main(["evaluate", str(ranker), str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    scores = mmio.load(ranker).decision_function(X)
    assert report["n"] == len(y) and report["n_groups"] == 6 and report["groups"] == "qid"
    assert report["pairwise_accuracy"] == pytest.approx(pairwise_accuracy(y, scores, qid))
    assert report["ndcg@10"] == pytest.approx(ndcg_at_k(y, scores, k=10, group=qid))
    assert report["map"] == pytest.approx(mean_average_precision(y, scores, qid))
    assert report["auc"] is None
    assert "confusion_matrix" not in report
    levels = report["per_level"]
    assert [r["label"] for r in levels] == [0, 1, 2]
    assert sum(r["count"] for r in levels) == len(y)
    assert levels[0]["mean_score"] < levels[2]["mean_score"]


def test_rank_evaluate_human_output(rank_data, ranker, capsys):
    path, _, _, _ = rank_data
    assert main(["evaluate", str(ranker), str(path)]) == 0
    out = capsys.readouterr().out
    assert "Ranking evaluation" in out and "pairwise accuracy" in out
    assert "NDCG@10" in out and "MAP" in out and "Per relevance level" in out
    assert "Confusion matrix" not in out and "AUC" not in out


def test_rank_binary_file_without_qid(tmp_path, capsys):
    """An SVM-light classification file (-1/+1, no qid): one query, AUC maximisation."""
    from maxmargin.metrics import auc, mean_average_precision, ndcg_at_k, pairwise_accuracy

    X, y3, _ = _ranking(seed=3)
    y = np.where(y3 >= 1, 1, -1)
    path = _write_svmlight(tmp_path / "auc.svm", X, y)
    model = tmp_path / "auc.mm"
    argv = ["fit", "--rank", str(path), "-o", str(model), "--max-iter", "10", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    scores = mmio.load(model).decision_function(X)
    assert summary["n_groups"] == 1
    assert summary["n_pairs"] == int(np.sum(y > 0) * np.sum(y < 0))
    assert summary["train_auc"] == pytest.approx(auc(y, scores))
    assert summary["train_auc"] == pytest.approx(summary["train_pairwise_accuracy"])

    assert main(["evaluate", str(model), str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_groups"] == 1 and report["groups"] is None
    assert report["auc"] == pytest.approx(auc(y, scores))
    assert report["pairwise_accuracy"] == pytest.approx(pairwise_accuracy(y, scores))
    assert report["ndcg@10"] == pytest.approx(ndcg_at_k(y, scores, k=10))
    assert report["map"] == pytest.approx(mean_average_precision(y, scores))

    assert main(["evaluate", str(model), str(path)]) == 0
    out = capsys.readouterr().out
    assert "AUC" in out and "no qid" in out


def test_rank_on_csv(tmp_path, csv_data, capsys):
    path, _, _ = csv_data
    argv = ["fit", "--rank", str(path), "-o", str(tmp_path / "r.mm"), "--max-iter", "5"]
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_groups"] == 1 and summary["n_pairs"] == 3 * 12 * 12


def test_rank_no_pairs_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "flat.txt"
    path.write_text("1 qid:1 1:0.1\n1 qid:1 1:0.2\n0 qid:2 1:0.3\n")
    model = tmp_path / "r.mm"
    assert main(["fit", "--rank", str(path), "-o", str(model)]) == 2
    err = _assert_clean_error(capsys, "no pairs", "single relevance level")
    assert err.count("\n") == 1  # no progress bar left above the message
    assert not model.exists()


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--rank", "--taxonomy", "t.txt"], ["--taxonomy", "--rank"]),
        (["--rank", "--sharing", "per_class"], ["--sharing", "--rank"]),
        (["--graph", "star"], ["--graph", "--rank"]),
        (["--normalize", "query"], ["--normalize", "--rank"]),
        (["--rank", "--top-k", "3"], ["--top-k", "bipartite"]),
        (["--rank", "--graph", "bipartite", "--top-k", "0"], ["top_k"]),
    ],
)
def test_rank_option_errors(tmp_path, rank_data, capsys, extra, needles):
    path, _, _, _ = rank_data
    model = tmp_path / "r.mm"
    assert main(["fit", str(path), "-o", str(model), "--max-iter", "3", *extra]) == 2
    _assert_clean_error(capsys, *needles)
    assert not model.exists()


def test_rank_bad_files(tmp_path, capsys):
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("1 qid:1 1:0.1\n0 1:0.2\n2 qid:2 1:0.3\n")
    assert main(["fit", "--rank", str(mixed), "-o", str(tmp_path / "r.mm")]) == 2
    _assert_clean_error(capsys, "mixed.txt", "only 2 of 3 lines have a qid")

    text = tmp_path / "text.csv"
    text.write_text("a,b,label\n1,2,good\n3,4,bad\n")
    assert main(["fit", "--rank", str(text), "-o", str(tmp_path / "r.mm")]) == 2
    _assert_clean_error(capsys, "text.csv", "numeric relevance")


def test_rank_evaluate_errors(tmp_path, rank_data, ranker, capsys):
    path, _, _, _ = rank_data
    assert main(["evaluate", str(ranker), str(path), "--taxonomy", "t.txt"]) == 2
    _assert_clean_error(capsys, "--taxonomy", "ranking model")
    wide = _write_svmlight(tmp_path / "wide.txt", np.ones((2, 7)), [1, 0], [1, 1])
    assert main(["evaluate", str(ranker), str(wide)]) == 2
    _assert_clean_error(capsys, "wide.txt")


def test_classifier_fit_ignores_qid(tmp_path, rank_data, capsys):
    """Without --rank a ranking file is read as a classification file, as before."""
    path, _, y, _ = rank_data
    argv = ["fit", str(path), "-o", str(tmp_path / "c.mm"), "--max-iter", "3", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_classes"] == len(np.unique(y))


def test_fit_with_an_empty_model_fails_unless_allowed(tmp_path, csv_data, capsys):
    path, _, _ = csv_data
    model = tmp_path / "empty.mm"
    # C = 0.5 < 1: no stump can have gain > 1, the model predicts a constant
    assert main(["fit", str(path), "-o", str(model), "--C", "0.5", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "empty" in err and "--allow-empty" in err and not model.exists()
    args = ["fit", str(path), "-o", str(model), "--C", "0.5", "--quiet", "--allow-empty"]
    assert main(args) == 0
    assert model.exists() and "warning:" in capsys.readouterr().err


def test_ctrl_c_during_fit_saves_the_last_completed_iteration(
    tmp_path, csv_data, capsys, monkeypatch
):
    from maxmargin.learners import structboost
    from maxmargin.weak import DecisionStump

    class Interrupting(DecisionStump):
        calls = 0

        def best(self, prepared, A):
            Interrupting.calls += 1
            if Interrupting.calls == 4:
                raise KeyboardInterrupt
            return super().best(prepared, A)

    monkeypatch.setattr(structboost, "make_weak_learner", lambda spec: Interrupting())
    path, X, _ = csv_data
    model = tmp_path / "interrupted.mm"
    assert main(["fit", str(path), "-o", str(model), "--quiet", "--seed", "0"]) == 130
    assert "interrupted" in capsys.readouterr().err
    est = mmio.load(model)
    assert len(est.history_) == 3 and not est.converged_
    assert est.predict(X).shape == (len(X),)


def test_info_describes_a_model(fitted, capsys):
    assert main(["info", str(fitted), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["estimator"] == "StructBoostClassifier"
    assert report["n_features"] == 3 and report["classes"] == [0, 1, 2]
    assert report["iterations"] >= 1 and len(report["sha256"]) == 64
    assert report["parameters"]["max_iter"] == 10
    assert main(["info", str(fitted)]) == 0
    assert "StructBoostClassifier" in capsys.readouterr().out


def test_predict_scores(fitted, csv_data, capsys):
    path, X, _ = csv_data
    assert main(["predict", str(fitted), str(path), "--scores"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    est = mmio.load(fitted)
    np.testing.assert_allclose(np.array(rows, dtype=float), est.decision_function(X), rtol=1e-12)


def test_unwritable_output_fails_before_training(tmp_path, csv_data, capsys):
    path, _, _ = csv_data
    missing = tmp_path / "no" / "such" / "dir" / "model.mm"
    assert main(["fit", str(path), "-o", str(missing), "--max-iter", "500"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_debug_flag_anywhere(tmp_path, capsys):
    for argv in (
        ["--debug", "info", str(tmp_path / "x.mm")],
        ["info", str(tmp_path / "x.mm"), "--debug"],
    ):
        with pytest.raises(FileNotFoundError):
            main(argv)


def test_segment_fit_predict(tmp_path, capsys):
    import imageio.v3 as iio

    rng = np.random.default_rng(0)
    size = 32
    yy, xx = np.mgrid[:size, :size]
    for d in ("img", "mask", "empty"):
        (tmp_path / d).mkdir()
    for k in range(4):
        m = (yy - 16 - rng.integers(-4, 5)) ** 2 + (xx - 16) ** 2 <= 64
        img = np.where(m[..., None], 0.7, 0.3) + 0.1 * rng.normal(size=(size, size, 3))
        iio.imwrite(tmp_path / "img" / f"s{k}.png", (np.clip(img, 0, 1) * 255).astype(np.uint8))
        iio.imwrite(tmp_path / "mask" / f"s{k}.png", m.astype(np.uint8) * 255)
    model = tmp_path / "seg.mm"
    args = ["segment", "fit", str(tmp_path / "img"), str(tmp_path / "mask"), "-o", str(model)]
    rc = main([*args, "--n-segments", "30", "--unary-iter", "5", "--max-iter", "3", "--json"])
    assert rc == 0 and model.exists()
    assert json.loads(capsys.readouterr().out)["n_images"] == 4
    out = tmp_path / "out"
    rc = main(
        [
            "segment",
            "predict",
            str(model),
            str(tmp_path / "img" / "s0.png"),
            str(tmp_path / "img"),
            "-o",
            str(out),
            "--masks",
            str(tmp_path / "mask"),
            "--json",
        ]
    )
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n_images"] == 5 and 0.5 < res["metrics"]["accuracy"] <= 1.0
    overlay = iio.imread(out / "s1_overlay.png")
    assert overlay.shape == (size, size, 3) and overlay.dtype == np.uint8
    assert set(np.unique(iio.imread(out / "s1_mask.png"))) <= {0, 255}
    # bad input: empty folder, missing model, non-model file
    assert (
        main(["segment", "fit", str(tmp_path / "empty"), str(tmp_path / "mask"), "-o", str(model)])
        == 2
    )
    assert "no images" in capsys.readouterr().err
    assert (
        main(
            ["segment", "predict", str(tmp_path / "nope.mm"), str(tmp_path / "img"), "-o", str(out)]
        )
        == 2
    )


@pytest.mark.parametrize("model", ["multiboost-cw", "adaboost-mh", "ssvm", "svm"])
def test_fit_other_model_families(tmp_path, csv_data, capsys, model):
    path, X, y = csv_data
    out = tmp_path / f"{model}.mm"
    args = ["fit", str(path), "-o", str(out), "--model", model, "--max-iter", "10", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    est = mmio.load(out)
    assert summary["estimator"] == type(est).__name__ != "StructBoostClassifier"
    assert np.mean(est.predict(X) == y) > 0.8


def test_fit_chooses_C_by_cross_validation(tmp_path, csv_data, capsys):
    path, _, _ = csv_data
    out = tmp_path / "cv.mm"
    args = ["fit", str(path), "-o", str(out), "--C", "0.5,50", "--max-iter", "5", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [r["C"] for r in summary["cv"]] == [0.5, 50.0]
    # C = 0.5 admits no weak learner (constant model, accuracy 1/3): 50 must win
    assert summary["C"] == 50.0 and mmio.load(out).C == 50.0
    assert main(["fit", str(path), "-o", str(out), "--C", "1,-2"]) == 2


def test_model_key_from_the_environment(tmp_path, csv_data, capsys, monkeypatch):
    path, _, _ = csv_data
    model = tmp_path / "signed.mm"
    monkeypatch.setenv("MAXMARGIN_MODEL_KEY", "k1")
    assert main(["fit", str(path), "-o", str(model), "--max-iter", "3", "--quiet"]) == 0
    assert main(["predict", str(model), str(path)]) == 0
    monkeypatch.setenv("MAXMARGIN_MODEL_KEY", "k2")
    assert main(["predict", str(model), str(path)]) == 2
    assert "bad signature" in capsys.readouterr().err


def test_csv_columns_matched_by_name_against_the_training_file(tmp_path, fitted, csv_data, capsys):
    _, X, y = csv_data
    reordered = tmp_path / "reordered.csv"
    rows = [",".join(f"{v:.6f}" for v in row[[1, 0, 2]]) + f",{c}" for row, c in zip(X, y)]
    reordered.write_text("f2,f1,f3,label\n" + "\n".join(rows) + "\n")
    assert main(["predict", str(fitted), str(reordered)]) == 2
    assert "reordered" in capsys.readouterr().err
    # label column moved to the front, features in order: found by name, same predictions
    moved = tmp_path / "moved.csv"
    rows = [f"{c}," + ",".join(f"{v:.6f}" for v in row) for row, c in zip(X, y)]
    moved.write_text("label,f1,f2,f3\n" + "\n".join(rows) + "\n")
    assert main(["evaluate", str(fitted), str(moved), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] > 0.8
    # unlabelled file with the same header: predict works, evaluate says what is missing
    nolabel = tmp_path / "nolabel.csv"
    nolabel.write_text("f1,f2,f3\n" + "\n".join(",".join(map(str, r)) for r in X) + "\n")
    assert main(["predict", str(fitted), str(nolabel)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(fitted), str(nolabel)]) == 2
    assert "'label'" in capsys.readouterr().err


def test_svmlight_index_base_recorded_at_fit(tmp_path, capsys):
    X, y = _blobs(seed=3)
    train = tmp_path / "train0.svm"  # zero-based: feature 0 present
    train.write_text(
        "\n".join(f"{c} " + " ".join(f"{j}:{v:.6f}" for j, v in enumerate(r)) for r, c in zip(X, y))
        + "\n"
    )
    model = tmp_path / "m.mm"
    assert main(["fit", str(train), "-o", str(model), "--max-iter", "10", "--quiet"]) == 0
    # a test file without any feature-0 entry would be read one-based by detection
    test = tmp_path / "test.svm"
    test.write_text(
        "\n".join(
            f"{c} " + " ".join(f"{j}:{v:.6f}" for j, v in enumerate(r) if j) for r, c in zip(X, y)
        )
        + "\n"
    )
    out = tmp_path / "p.txt"
    assert main(["predict", str(model), str(test), "-o", str(out)]) == 0
    ref = mmio.load(model).predict(np.column_stack([np.zeros(len(X)), X[:, 1:]]))
    np.testing.assert_array_equal(np.loadtxt(out), ref)


def test_index_like_first_column_is_refused(tmp_path, capsys):
    X, y = _blobs()
    path = tmp_path / "indexed.csv"
    rows = [
        f"{i}," + ",".join(f"{v:.6f}" for v in r) + f",{c}" for i, (r, c) in enumerate(zip(X, y))
    ]
    path.write_text(",f1,f2,f3,label\n" + "\n".join(rows) + "\n")
    assert main(["fit", str(path), "-o", str(tmp_path / "m.mm"), "--quiet"]) == 2
    assert "row index" in capsys.readouterr().err


def test_headerless_csv_label_position_recorded_at_fit(tmp_path, capsys):
    X, y = _blobs(seed=4)
    train = tmp_path / "train.csv"  # no header, label first
    train.write_text(
        "\n".join(f"{c}," + ",".join(f"{v:.6f}" for v in r) for r, c in zip(X, y)) + "\n"
    )
    model = tmp_path / "m.mm"
    args = ["fit", str(train), "-o", str(model), "--label-column", "0", "--max-iter", "10"]
    assert main([*args, "--quiet"]) == 0
    # evaluate on the same file without --label-column: the label is column 0, as at fit
    assert main(["evaluate", str(model), str(train), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] > 0.8
    # an unlabelled file (features only) still predicts
    feats = tmp_path / "feats.csv"
    feats.write_text("\n".join(",".join(f"{v:.6f}" for v in r) for r in X) + "\n")
    assert main(["predict", str(model), str(feats)]) == 0
    assert len(capsys.readouterr().out.split()) == len(X)


def test_fit_rank_with_ranksvm(tmp_path, rank_data, capsys):
    from maxmargin import RankSVM

    path, X, _, _ = rank_data
    model = tmp_path / "rsvm.mm"
    argv = ["fit", "--rank", "--model", "ranksvm", str(path), "-o", str(model), "--json"]
    assert main([*argv, "--C", "10", "--graph", "bipartite"]) == 0
    summary = json.loads(capsys.readouterr().out)
    est = mmio.load(model)
    assert isinstance(est, RankSVM) and summary["estimator"] == "RankSVM"
    assert (est.C, est.graph, est.rescaling) == (10.0, "bipartite", "margin")
    assert summary["n_weak"] is None  # a linear model has no weak learners
    assert est.coef_.shape == (X.shape[1],)
    assert main(["evaluate", str(model), str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["groups"] == "qid" and report["pairwise_accuracy"] > 0.7
    # a ranker family without --rank, a classifier family with it: clear errors
    assert main(["fit", "--model", "ranksvm", str(path), "-o", str(model)]) == 2
    assert "needs --rank" in capsys.readouterr().err
    assert main(["fit", "--rank", "--model", "svm", str(path), "-o", str(model)]) == 2
    assert "must be one of" in capsys.readouterr().err


def test_positive_list_is_the_one_parser_of_comma_options():
    """``positive_list`` (``--C``, ``--scales``, ``--window``, ``--aspect-ratios``,
    ``--max-weak``): finite positive numbers, empty items skipped, the option named."""
    import argparse

    from maxmargin.cli.commands import _C_list
    from maxmargin.cli.detect import _caps, _pair
    from maxmargin.cli.parser import positive_list

    assert positive_list("1,2.5,", "--scales") == [1.0, 2.5]
    assert positive_list("3", "--max-weak", int) == [3]
    assert _pair("8,16") == (8, 16) and _caps("5") == 5 and _caps("5,7") == [5, 7]
    assert _C_list("1,10") == [1.0, 10.0]
    for bad in ("", "0", "1,-2", "inf", "nan", "a,b"):
        with pytest.raises(ValueError, match="--scales must be"):
            positive_list(bad, "--scales")
    with pytest.raises(ValueError, match=r"--window must be .*integers"):
        positive_list("1.5,2", "--window", int)
    with pytest.raises(ValueError, match="--window must be two"):
        _pair("8,16,4")
    with pytest.raises(argparse.ArgumentTypeError, match="C must be positive"):
        _C_list("0,1")
