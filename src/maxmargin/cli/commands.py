"""The ``maxmargin`` subcommands: fit, predict, evaluate and demo.

Each takes the parsed arguments and returns an exit status; errors are raised and
reported by :func:`maxmargin.cli.main`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from maxmargin._registry import lookup
from maxmargin.cli.output import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    cell,
    error,
    finite_or_none,
    fmt,
    label_text,
    model_key,
    plain,
    print_json,
    print_kv_table,
    stdout_console,
)
from maxmargin.cli.parser import positive_list
from maxmargin.cli.plots import plot_convergence, staged_errors
from maxmargin.cli.progress import FitProgress


def _is_ranker(model: Any) -> bool:
    return isinstance(model, tuple(lookup(name) for name in _RANKERS.values()))


def _fit_timed(est: Any, X: Any, y: Any, *, data: str | None = None, **fit_params: Any) -> float:
    start = time.perf_counter()
    try:
        est.fit(X, y, **fit_params)
    except ValueError as exc:  # the estimator's data checks: name the file they concern
        if data is None or str(data) in str(exc):
            raise
        raise ValueError(f"{data}: {exc}") from exc
    return time.perf_counter() - start


def _fit_reporting(
    est: Any, X: Any, y: Any, data: str | None = None, **fit_params: Any
) -> tuple[float, set[str]]:
    """Fit, printing the estimator's warnings as ``warning: ...`` lines on stderr;
    returns (seconds, names of the warning classes seen).  A ValueError names ``data``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seconds = _fit_timed(est, X, y, data=data, **fit_params)
    seen = set()
    for w in caught:
        seen.add(type(w.message).__name__)
        print(f"warning: {w.message}", file=sys.stderr)
    return seconds, seen


def _check_fit_outcome(args: argparse.Namespace, seen: set[str]) -> int | None:
    """Exit status for a fit that should not be saved silently, else None."""
    if "EmptyModelWarning" in seen and not args.allow_empty:
        error(
            "the model is empty (it predicts a constant); not saved.  Raise --C, or pass "
            "--allow-empty to save it anyway"
        )
        return EXIT_FAILURE
    return None


def _report_interrupted(seen: set[str], out: Path) -> int | None:
    if "FitInterruptedWarning" in seen:
        error(f"interrupted: the model of the last completed iteration was saved to {out}")
        return EXIT_INTERRUPTED
    return None


def _history(est: Any) -> list[dict[str, Any]]:
    return list(getattr(est, "history_", None) or [])


def _n_weak(est: Any, default: int) -> int | None:
    """Weak learners in a boosted model (None for a linear or kernel model)."""
    history = _history(est)
    if history and "n_weak" in history[-1]:
        return int(history[-1]["n_weak"])
    if hasattr(est, "coef_") or hasattr(est, "dual_coef_") or hasattr(est, "w_"):
        return None
    return default


def _save_fitted(est, args, X, layout, before: dict, after: dict) -> tuple[Path, dict]:
    """Save a fitted model to ``args.output`` (the data layout annotated) and the fit's
    summary: the file and data, ``before``, the iterations and objective, ``after``."""
    from maxmargin.io import save

    out = save(est, args.output, key=model_key(), annotations={"data": layout})
    n_iter = len(_history(est))
    return out, {
        "model": str(out),
        "data": str(args.data),
        "n_samples": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        **before,
        "iterations": n_iter,
        "n_weak": _n_weak(est, n_iter),
        "objective": float(getattr(est, "objective_", float("nan"))),
        **after,
    }


def _load_training_data(args: argparse.Namespace) -> tuple[Any, np.ndarray]:
    from maxmargin.datasets import load_dataset

    X, y = load_dataset(args.data, format=args.format, label_column=args.label_column)
    return X, y


def _load_ranking_data(args: argparse.Namespace) -> tuple[Any, np.ndarray, np.ndarray | None]:
    """``(X, relevance, qid)`` for ``fit --rank``; qid is None without ``qid:`` tokens."""
    from maxmargin.datasets import load_dataset

    X, y, qid = load_dataset(
        args.data, format=args.format, label_column=args.label_column, query_id=True
    )
    _check_relevance(args.data, y)
    return X, y, qid


def _check_relevance(data: str, y: np.ndarray | None) -> None:
    if y is not None and y.dtype.kind not in "iuf":
        raise ValueError(
            f"{data}: ranking needs numeric relevance labels (higher = better), "
            "got text labels (check --label-column)"
        )


def _zero_based(args: argparse.Namespace, layout: dict | None) -> bool | str:
    flag = getattr(args, "zero_based", None)
    if flag is not None and flag != "auto":
        return flag == "yes"
    if flag is None and layout and layout.get("format") == "svmlight":
        return bool(layout["zero_based"])
    return "auto"


def _training_layout(model_path: str) -> dict | None:
    """The column layout of the model's training file, as recorded by ``fit``."""
    from maxmargin.io import file_info

    return (file_info(model_path).get("annotations") or {}).get("data")


def _load_data_for_model(
    args: argparse.Namespace, model: Any, need_labels: bool, query_id: bool = False
) -> tuple[Any, ...]:
    """Load DATA at the model's width, with the training file's layout (recorded at
    fit): the same svmlight index base, and CSV columns matched by header name (label
    column and feature order) -- a mismatch is an error, never a silent shift.  CSV files
    without a label column are accepted for predict.

    Returns ``(X, y)``, or ``(X, y, qid)`` with ``query_id=True``."""
    from maxmargin.datasets import load_dataset, peek_n_columns

    _check_tabular_model(model, args.model)
    n_features = getattr(model, "n_features_in_", None)
    layout = _training_layout(args.model)
    label_column = args.label_column
    fmt = args.format
    path = Path(args.data)
    data_format = _check_input_layout(path, fmt, layout, args.model)
    is_csv = data_format == "csv"
    unlabelled = False
    if label_column is None and is_csv:
        if not need_labels and n_features is not None and peek_n_columns(path) == n_features:
            unlabelled = True  # every column is a feature
        if layout and layout.get("format") == "csv":
            label_column, unlabelled = _match_csv_columns(path, layout, need_labels, unlabelled)
    if unlabelled:
        label_column = None
    elif label_column is None:
        label_column = -1
    loaded = load_dataset(
        args.data,
        format=fmt,
        n_features=n_features,
        label_column=label_column,
        query_id=query_id,
        zero_based=_zero_based(args, layout),
    )
    if query_id and loaded[2] is None and getattr(model, "grouped_", False):
        raise ValueError(
            f"{args.data}: has no qid: query ids, but the ranker {args.model} was trained "
            "with them; give every line its qid (one big query would compare samples of "
            "different queries)"
        )
    return loaded


_OTHER_COMMANDS = {
    "Segmenter": "maxmargin segment predict",
    "HOGSVMDetector": "maxmargin detect predict",
    "CascadeDetector": "maxmargin detect predict",
    "ProposalRanker": "maxmargin detect predict",
}


def _check_tabular_model(model: Any, path: str) -> None:
    """``predict`` / ``evaluate`` need a classifier or ranker on feature vectors."""
    kind = type(model).__name__
    n = getattr(model, "n_features_in_", None)
    ok = n is not None and callable(getattr(model, "predict", None))
    if ok and not _is_ranker(model):
        ok = getattr(model, "classes_", None) is not None
    if not ok:
        other = _OTHER_COMMANDS.get(kind)
        hint = f"; use `{other}`" if other else ""
        raise ValueError(
            f"{path} is a {kind} model, not a classifier or ranker of data files{hint}"
        )


def _check_input_layout(path: Path, fmt: str, layout: dict | None, model_path: str) -> str | None:
    """The one input-layout check of every command reading data for a saved model: the
    data file must have the format the model's training file had (recorded at fit) --
    an svmlight model reads no CSV file and vice versa (their label and feature columns
    differ).  Returns the data file's format (None if it is not a file)."""
    from maxmargin.datasets import detect_format

    if not path.is_file():
        return None
    data_format = detect_format(path) if fmt == "auto" else fmt
    data_format = {"libsvm": "svmlight", "svm": "svmlight", "tsv": "csv"}.get(
        data_format, data_format
    )
    trained = (layout or {}).get("format")
    if trained is not None and data_format != trained:
        how = "--format" if fmt != "auto" else "its extension and content"
        raise ValueError(
            f"{path}: is {data_format} data (by {how}) but the model {model_path} was trained "
            f"on {trained} data, whose label and feature columns are laid out differently; "
            f"give a {trained} file (or --format {trained} if this file is one)"
        )
    return data_format


def _match_csv_columns(path: Path, layout: dict, need_labels: bool, unlabelled: bool):
    """``(label column, unlabelled)`` of a CSV file read for a model trained on a CSV file
    with ``layout``: by header name (which must match the training file's), else by the
    training file's label position."""
    from maxmargin.datasets import describe_data_file

    features, label = layout.get("features"), layout.get("label")
    if not features:  # the training file had no header: the label at the same position
        return (None, True) if unlabelled else (label, False)
    header = describe_data_file(path, "csv", None)["features"]
    if header is None:
        print(
            f"warning: {path} has no header; its columns are taken by position "
            f"(the model was trained on {', '.join(features)})",
            file=sys.stderr,
        )
        return (None, True) if unlabelled else (None, False)
    if label in header:
        rest = [h for h in header if h != label]
        column = label
    elif need_labels:
        raise ValueError(
            f"{path}: no column {label!r}, the label column of the model's training file "
            "(give --label-column to use another)"
        )
    else:
        rest, column = header, None
    if rest != features:
        missing = [f for f in features if f not in rest]
        extra = [h for h in rest if h not in features]
        what = f"missing {missing}" if missing else f"unexpected {extra}" if extra else "reordered"
        raise ValueError(
            f"{path}: feature columns differ from the model's training file ({what}); "
            f"expected, in order: {', '.join(features)}"
        )
    return column, column is None


def _layout_of(args: argparse.Namespace) -> dict:
    """The training file's column layout, recorded in the model file."""
    from maxmargin.datasets import describe_data_file

    layout = describe_data_file(args.data, args.format, args.label_column)
    names = layout.get("features") or []
    if names and names[0].strip() in {"", "Unnamed: 0", "row.names", "index"}:
        raise ValueError(
            f"{args.data}: the first column ({names[0]!r}) looks like a row index, not a "
            "feature; remove it from the file"
        )
    return layout


def _load_model(path: str) -> Any:
    from maxmargin.io import load

    return load(path, key=model_key())


def _read_taxonomy(path: str) -> Any:
    """``as_taxonomy(path)`` with every failure naming the file."""
    from maxmargin.tasks.hierarchy import as_taxonomy

    if not Path(path).is_file():
        raise ValueError(f"{path}: no such taxonomy file")
    try:
        return as_taxonomy(path)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        message = str(exc)
        if str(path) in message:
            raise
        raise ValueError(f"{path}: not a valid taxonomy file ({message})") from exc


def _taxonomy_params(args: argparse.Namespace) -> dict[str, Any]:
    """``taxonomy=`` / ``tree_loss=`` for StructBoostClassifier when --taxonomy is given."""
    if args.taxonomy is None:
        return {}
    return {"taxonomy": _read_taxonomy(args.taxonomy), "tree_loss": args.tree_loss or "height"}


def _model_taxonomy(model: Any, path: str | None) -> tuple[Any, str] | None:
    """The taxonomy to score tree loss with: --taxonomy, else the model's own, else None."""
    from maxmargin.tasks.hierarchy import as_taxonomy

    kind = getattr(model, "tree_loss", "height")
    if path is not None:
        return _read_taxonomy(path), kind
    spec = getattr(model, "taxonomy", None)
    if spec is None:
        spec = getattr(getattr(model, "task_", None), "taxonomy", None)
    return (as_taxonomy(spec), kind) if spec is not None else None


def _ranking_metrics(
    y: np.ndarray, scores: np.ndarray, qid: np.ndarray | None
) -> dict[str, float | None]:
    """Pairwise accuracy, AUC (binary labels only, else None), NDCG@10 and MAP, each
    averaged over the queries (one query when ``qid`` is None); NaN becomes None."""
    from maxmargin.metrics import auc, mean_average_precision, ndcg_at_k, pairwise_accuracy

    relevance = np.asarray(y, dtype=np.float64)
    levels = np.unique(relevance)
    binary = levels.size == 2
    return {
        "pairwise_accuracy": finite_or_none(pairwise_accuracy(relevance, scores, qid)),
        # the higher of the two labels is the positive class (0/1, -1/+1, 1/2 ...)
        "auc": finite_or_none(auc((relevance == levels[-1]).astype(np.float64), scores, qid))
        if binary
        else None,
        "ndcg@10": finite_or_none(ndcg_at_k(relevance, scores, k=10, group=qid)),
        "map": finite_or_none(mean_average_precision(relevance, scores, qid)),
    }


def _n_groups(qid: np.ndarray | None) -> int:
    return 1 if qid is None else len(np.unique(qid))


def _check_fit_options(args: argparse.Namespace) -> None:
    """Reject classifier-only options with --rank and ranking-only options without it."""
    classifier_only = {
        "--taxonomy": args.taxonomy,
        "--sharing": args.sharing,
        "--tree-loss": args.tree_loss,
    }
    ranking_only = {
        "--graph": args.graph,
        "--rescaling": args.rescaling,
        "--top-k": args.top_k,
        "--normalize": args.normalize,
    }
    if not args.rank and args.model not in _CLASSIFIERS:
        raise ValueError(f"--model {args.model} is a ranker: it needs --rank")
    if args.rank:
        given = [name for name, value in classifier_only.items() if value is not None]
        if given:
            raise ValueError(
                f"{', '.join(given)} cannot be used with --rank (classifier options; "
                "a ranker learns one score per sample)"
            )
        if args.top_k is not None and (args.graph or "complete") != "bipartite":
            raise ValueError("--top-k needs --graph bipartite")
    else:
        given = [name for name, value in ranking_only.items() if value is not None]
        if given:
            raise ValueError(f"{', '.join(given)} can only be used with --rank")


def _check_output_path(path: str, inputs: tuple = ()) -> None:
    """Fail before training, not after, when MODEL cannot be written (or is an input)."""
    from maxmargin.io import check_distinct_output

    out = Path(path)
    check_distinct_output(out, inputs)
    if out.is_dir():
        raise ValueError(f"{out}: is a directory (give a model file name)")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{parent}: directory does not exist (for the model file {out})")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{parent}: not writable (for the model file {out})")


#: --model choices for classifiers: the registered estimator (maxmargin._registry)
_CLASSIFIERS = {
    "structboost": "StructBoostClassifier",
    "multiboost-cw": "MultiBoostCW",
    "multiboost": "MultiBoost",
    "adaboost-mh": "AdaBoostMH",
    "adaboost-ecc": "AdaBoostECC",
    "adaboost-mo": "AdaBoostMO",
    "ssvm": "SSVMClassifier",
    "svm": "SVMClassifier",
}
#: --model choices with --rank
_RANKERS = {"structboost": "StructBoostRanker", "ranksvm": "RankSVM"}


def _classifier(args: argparse.Namespace, C: float, callback: Any) -> Any:
    """The --model estimator with every command-line option it accepts."""
    cls = lookup(_CLASSIFIERS[args.model])
    wanted = {
        "C": C,
        "max_iter": args.max_iter,
        "weak_learner": args.weak_learner,
        "sharing": args.sharing or "shared",
        "formulation": args.formulation,
        "master": args.master,
        "tol": args.tol,
        "eps_cp": args.eps_cp,
        "eps_cg": args.eps_cg,
        "max_time": args.max_time,
        "random_state": args.seed,
        "callback": callback,
        **_taxonomy_params(args),
    }
    accepted = cls().get_params(deep=False)
    given = {"--taxonomy": args.taxonomy, "--sharing": args.sharing}
    for flag, value in given.items():
        key = flag[2:]
        if value is not None and key not in accepted:
            raise ValueError(f"{flag} does not apply to --model {args.model}")
    if "C" not in accepted and C != 100.0:
        raise ValueError(f"--model {args.model} has no C parameter")
    if args.weak_learner is None:  # the model's own default (StructBoost's "auto")
        del wanted["weak_learner"]
    return cls(**{k: v for k, v in wanted.items() if k in accepted})


def _select_C(args: argparse.Namespace, X: Any, y: np.ndarray) -> tuple[list[float], list]:
    """Pick C from the --C list by stratified k-fold cross-validation (mean accuracy);
    returns ([best C], one row per C)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    cv = StratifiedKFold(n_splits=args.cv, shuffle=True, random_state=args.seed)
    rows = []
    for C in args.C:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores = cross_val_score(_classifier(args, C, None), X, y, cv=cv)
        rows.append({"C": C, "mean_score": float(scores.mean()), "std_score": float(scores.std())})
    best = max(rows, key=lambda r: r["mean_score"])["C"]
    return [best], rows


def cmd_fit(args: argparse.Namespace) -> int:
    """Train a StructBoostClassifier (or with --rank a StructBoostRanker) on DATA and
    save it to MODEL."""
    _check_fit_options(args)
    _check_output_path(args.output, (args.data, args.taxonomy))
    if args.rank:
        return _fit_ranker(args)

    X, y = _load_training_data(args)
    layout = _layout_of(args)
    show = not (args.json or args.quiet)
    Cs = args.C
    cv_table = None
    if len(Cs) > 1:
        Cs, cv_table = _select_C(args, X, y)
    name = _CLASSIFIERS[args.model]
    with FitProgress(args.max_iter, name, enabled=show) as progress:
        est = _classifier(args, Cs[0], progress)
        seconds, seen = _fit_reporting(est, X, y, data=args.data)
    if (status := _check_fit_outcome(args, seen)) is not None:
        return status
    after = {
        "train_error": float(np.mean(est.predict(X) != y)),
        "fit_seconds": round(seconds, 4),
        "estimator": type(est).__name__,
        "C": Cs[0],
    }
    out, summary = _save_fitted(est, args, X, layout, {"n_classes": len(est.classes_)}, after)
    if cv_table is not None:
        summary["cv"] = cv_table
    if args.json:
        print_json(summary)
    elif not args.quiet:
        if cv_table is not None:
            print_kv_table(
                f"C by {args.cv}-fold cross-validation (mean accuracy)",
                {
                    f"C = {r['C']:g}": f"{r['mean_score']:.4f} +- {r['std_score']:.4f}"
                    for r in cv_table
                },
            )
        print_kv_table(f"{name} fit", {k: v for k, v in summary.items() if k != "cv"})
    return _report_interrupted(seen, out) or EXIT_OK


def _fit_ranker(args: argparse.Namespace) -> int:
    """``fit --rank``: a StructBoostRanker on relevance grades, queries from svmlight qid."""

    formulation = "1-slack" if args.formulation == "auto" else args.formulation
    if len(args.C) > 1:
        raise ValueError("--rank takes one --C value (C selection is for classifiers)")
    if args.model not in _RANKERS:
        raise ValueError(
            f"--rank trains a ranker: --model must be one of {', '.join(_RANKERS)}, "
            f"got {args.model}"
        )
    name = _RANKERS[args.model]
    cls = lookup(name)
    X, y, qid = _load_ranking_data(args)
    layout = _layout_of(args)
    show = not (args.json or args.quiet)
    wanted = {
        "C": args.C[0],
        "max_iter": args.max_iter,
        "weak_learner": args.weak_learner,
        "formulation": formulation,
        "master": args.master,
        "tol": args.tol,
        "graph": args.graph or "complete",
        "rescaling": args.rescaling or ("unit" if args.model == "structboost" else "margin"),
        "top_k": args.top_k,
        "normalize": args.normalize or "pairs",
        "eps_cp": args.eps_cp,
        "eps_cg": args.eps_cg,
        "max_time": args.max_time,
        "random_state": args.seed,
    }
    if args.weak_learner is None:  # the model's own default
        del wanted["weak_learner"]
    accepted = cls().get_params(deep=False)
    with FitProgress(args.max_iter, name, enabled=show) as progress:
        est = cls(**{k: v for k, v in wanted.items() if k in accepted}, callback=progress)
        seconds, seen = _fit_reporting(est, X, y, data=args.data, group=qid)
    if (status := _check_fit_outcome(args, seen)) is not None:
        return status
    train = _ranking_metrics(y, est.decision_function(X), qid)
    before = {
        "n_groups": _n_groups(qid),
        "n_pairs": int(est.n_pairs_) if hasattr(est, "n_pairs_") else None,
        "estimator": name,
        "formulation": formulation if "formulation" in accepted else None,
        "graph": est.graph,
        "rescaling": est.rescaling,
        "normalize": est.normalize,
    }
    after = {
        "train_pairwise_accuracy": train["pairwise_accuracy"],
        "train_auc": train["auc"],
        "fit_seconds": round(seconds, 4),
    }
    out, summary = _save_fitted(est, args, X, layout, before, after)
    if args.json:
        print_json(summary)
    elif not args.quiet:
        shown = {k: v for k, v in summary.items() if v is not None}
        if qid is None:
            shown["n_groups"] = "1 (no qid: one query)"
        print_kv_table(f"{name} fit", shown)
    return _report_interrupted(seen, out) or EXIT_OK


def cmd_predict(args: argparse.Namespace) -> int:
    """Write one predicted label (classifier) or score (ranker) per line, or a JSON
    document with --json."""
    if args.output:
        _check_output_path(args.output, (args.model, args.data))
    model = _load_model(args.model)
    X, _ = _load_data_for_model(args, model, need_labels=False)
    if getattr(args, "scores", False) and not _is_ranker(model):
        scores = np.asarray(model.decision_function(X), dtype=np.float64)
        if args.json:
            classes = plain(np.asarray(model.classes_))
            text = json.dumps({"classes": classes, "scores": scores.tolist()}) + "\n"
        else:
            rows = scores.reshape(len(scores), -1)
            text = "".join(" ".join(repr(float(v)) for v in row) + "\n" for row in rows)
    elif _is_ranker(model):
        scores = np.asarray(model.decision_function(X), dtype=np.float64)
        if args.json:
            text = json.dumps({"scores": scores.tolist()}) + "\n"
        else:
            text = "".join(repr(float(s)) + "\n" for s in scores)
    elif args.json:
        predictions = model.predict(X)
        text = json.dumps({"predictions": plain(np.asarray(predictions))}) + "\n"
    else:
        predictions = model.predict(X)
        text = "".join(label_text(p) + "\n" for p in predictions)
    if args.output:
        from maxmargin.io import atomic_write_text

        atomic_write_text(args.output, text, inputs=(args.model, args.data))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_OK


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Error rate, accuracy, confusion matrix and per-class counts of MODEL on DATA
    (ranking metrics for a ranker)."""
    from sklearn.metrics import confusion_matrix

    model = _load_model(args.model)
    _check_tabular_model(model, args.model)
    if _is_ranker(model):
        return _evaluate_ranker(args, model)
    X, y = _load_data_for_model(args, model, need_labels=True)
    classes = np.asarray(model.classes_)
    numeric = "iufb"
    if (classes.dtype.kind in numeric) != (y.dtype.kind in numeric):
        raise ValueError(
            f"{args.data}: labels are {'numeric' if y.dtype.kind in numeric else 'text'} but "
            f"the model was trained on {'numeric' if classes.dtype.kind in numeric else 'text'}"
            " labels (check --label-column)"
        )
    pred = np.asarray(model.predict(X))
    labels = np.unique(np.concatenate([classes, y]))
    cm = confusion_matrix(y, pred, labels=labels)
    n = len(y)
    accuracy = float(np.trace(cm) / n)
    per_class = [
        {
            "label": plain(label),
            "support": int(cm[i].sum()),
            "predicted": int(cm[:, i].sum()),
            "correct": int(cm[i, i]),
            "error_rate": float(1 - cm[i, i] / cm[i].sum()) if cm[i].sum() else None,
        }
        for i, label in enumerate(labels)
    ]
    tree = _model_taxonomy(model, args.taxonomy)
    tree_loss = None
    if tree is not None:
        tax, kind = tree
        tree_loss = {
            "kind": kind,
            "mean": float(tax.loss(tax.index(y), tax.index(pred), kind).mean()),
        }
    report = {
        "model": str(args.model),
        "data": str(args.data),
        "n": n,
        "accuracy": accuracy,
        "error_rate": 1.0 - accuracy,
        "tree_loss": tree_loss,
        "labels": plain(labels),
        "confusion_matrix": cm.tolist(),
        "per_class": per_class,
    }
    if args.json:
        print_json(report)
        return EXIT_OK
    from rich.table import Table

    console = stdout_console()
    print_kv_table(
        "Evaluation",
        {
            "model": args.model,
            "data": args.data,
            "n": n,
            "accuracy": f"{accuracy:.4f}",
            "error rate": f"{1.0 - accuracy:.4f}",
            **(
                {f"tree loss ({tree_loss['kind']})": f"{tree_loss['mean']:.4f}"}
                if tree_loss
                else {}
            ),
        },
        console=console,
    )
    matrix = Table(title="Confusion matrix (rows = true)")
    matrix.add_column("true \\ pred", style="bold")
    for label in labels:
        matrix.add_column(cell(label), justify="right")
    for i, label in enumerate(labels):
        matrix.add_row(cell(label), *(str(v) for v in cm[i]))
    console.print(matrix)
    counts = Table(title="Per class")
    for name in ("label", "support", "predicted", "correct", "error rate"):
        counts.add_column(name, justify="left" if name == "label" else "right")
    for row in per_class:
        counts.add_row(
            cell(row["label"]),
            str(row["support"]),
            str(row["predicted"]),
            str(row["correct"]),
            fmt(row["error_rate"], ".4f"),
        )
    console.print(counts)
    return EXIT_OK


def _evaluate_ranker(args: argparse.Namespace, model: Any) -> int:
    """Pairwise accuracy, AUC, NDCG@10 and MAP of a ranker, per query when DATA has qid."""
    if args.taxonomy is not None:
        raise ValueError("--taxonomy applies to classifiers, not to a ranking model")
    X, y, qid = _load_data_for_model(args, model, need_labels=True, query_id=True)
    _check_relevance(args.data, y)
    scores = np.asarray(model.decision_function(X), dtype=np.float64)
    metrics = _ranking_metrics(y, scores, qid)
    levels, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    per_level = [
        {
            "label": plain(level),
            "count": int(count),
            "mean_score": float(scores[inverse.ravel() == i].mean()),
        }
        for i, (level, count) in enumerate(zip(levels, counts))
    ]
    report = {
        "model": str(args.model),
        "data": str(args.data),
        "n": len(y),
        "n_groups": _n_groups(qid),
        "groups": "qid" if qid is not None else None,
        **metrics,
        "per_level": per_level,
    }
    if args.json:
        print_json(report)
        return EXIT_OK
    from rich.table import Table

    console = stdout_console()
    names = {"pairwise_accuracy": "pairwise accuracy", "auc": "AUC", "ndcg@10": "NDCG@10"}
    print_kv_table(
        "Ranking evaluation",
        {
            "model": args.model,
            "data": args.data,
            "n": len(y),
            "queries": f"{report['n_groups']} (metrics: mean over queries)"
            if qid is not None
            else "1 (no qid: the whole file)",
            **{
                names.get(key, key.upper()): fmt(value, ".4f")
                for key, value in metrics.items()
                if value is not None or key != "auc"
            },
        },
        console=console,
    )
    table = Table(title="Per relevance level")
    for name in ("label", "count", "mean score"):
        table.add_column(name, justify="left" if name == "label" else "right")
    for row in per_level:
        table.add_row(cell(row["label"]), str(row["count"]), fmt(row["mean_score"]))
    console.print(table)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """StructBoost vs AdaBoost (stumps) vs Crammer-Singer LinearSVC on the digits data."""
    stage = "loading the digits data"
    try:
        import warnings

        from sklearn.datasets import load_digits
        from sklearn.ensemble import AdaBoostClassifier
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.model_selection import train_test_split
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import LinearSVC
        from sklearn.tree import DecisionTreeClassifier

        X, y = load_digits(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=args.seed
        )
        show = not (args.json or args.quiet)

        # numba compiles on the first call (cached on disk after that): a short warm-up fit
        # with the same settings takes the compilation out of the timed fit below
        stage = "compiling (warm-up fit)"
        warmup_seconds = _fit_timed(
            lookup("StructBoostClassifier")(
                max_iter=min(5, args.max_iter),
                weak_learner="stump",
                formulation=args.formulation,
                master=args.master,
                random_state=args.seed,
            ),
            X_train[:300],
            y_train[:300],
        )

        stage = "fitting StructBoostClassifier"
        with FitProgress(args.max_iter, "StructBoost", enabled=show) as progress:
            sb = lookup("StructBoostClassifier")(
                max_iter=args.max_iter,
                weak_learner="stump",
                formulation=args.formulation,
                master=args.master,
                max_time=args.max_time,
                random_state=args.seed,
                callback=progress,
            )
            sb_seconds = _fit_timed(sb, X_train, y_train)
        n_stumps = max(_n_weak(sb, args.max_iter), 1)
        stage = "computing StructBoost's per-iteration test error"
        sb_errors = staged_errors(sb, X_test, y_test)

        stage = "fitting AdaBoostClassifier"
        ada = AdaBoostClassifier(
            estimator=DecisionTreeClassifier(max_depth=1),
            n_estimators=n_stumps,
            random_state=args.seed,
        )
        ada_seconds = _fit_timed(ada, X_train, y_train)
        ada_errors = [float(np.mean(p != y_test)) for p in ada.staged_predict(X_test)]

        stage = "fitting LinearSVC"
        svc = make_pipeline(
            StandardScaler(),
            LinearSVC(multi_class="crammer_singer", random_state=args.seed, max_iter=5000),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc_seconds = _fit_timed(svc, X_train, y_train)

        rows = []
        for name, model, seconds, size in (
            ("StructBoost", sb, sb_seconds, f"{n_stumps} stumps"),
            ("AdaBoost.SAMME", ada, ada_seconds, f"{len(ada.estimators_)} stumps"),
            ("LinearSVC (C&S)", svc, svc_seconds, "linear"),
        ):
            rows.append(
                {
                    "method": name,
                    "test_error": float(np.mean(model.predict(X_test) != y_test)),
                    "train_error": float(np.mean(model.predict(X_train) != y_train)),
                    "fit_seconds": round(seconds, 4),
                    "model": size,
                }
            )

        stage = "writing the convergence plot"
        plot = Path(args.out) / "structboost_convergence.png"
        history = _history(sb)
        plot_convergence(plot, history, sb_errors, ada_errors, rows[2]["test_error"])
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        if args.debug:
            raise
        error(f"demo failed while {stage}: {type(exc).__name__}: {exc}")
        return EXIT_FAILURE

    result = {
        "dataset": "digits",
        "n_train": len(y_train),
        "n_test": len(y_test),
        "results": rows,
        "structboost": {
            "iterations": len(history),
            "n_weak": n_stumps,
            "objective": float(getattr(sb, "objective_", float("nan"))),
            "formulation": args.formulation,
            "warmup_seconds": round(warmup_seconds, 4),
        },
        "plot": str(plot),
    }
    if args.json:
        print_json(result)
        return EXIT_OK
    from rich.table import Table

    table = Table(title=f"digits: {len(y_train)} train / {len(y_test)} test (stratified)")
    for name in ("method", "test error", "train error", "fit time (s)", "model"):
        table.add_column(name, justify="left" if name in {"method", "model"} else "right")
    for row in rows:
        table.add_row(
            row["method"],
            f"{row['test_error']:.4f}",
            f"{row['train_error']:.4f}",
            f"{row['fit_seconds']:.2f}",
            row["model"],
        )
    console = stdout_console()
    console.print(table)
    console.print(
        cell(
            f"fit times exclude numba's compilation: the first call compiles, done in a "
            f"{warmup_seconds:.2f} s warm-up fit (later runs load the compiled code from disk)"
        )
    )
    console.print(cell(f"convergence plot: {plot}"))
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    """Describe MODEL: estimator, parameters, classes, features, fit summary, file."""
    from maxmargin.io import file_info

    model = _load_model(args.model)
    envelope = file_info(args.model)  # verified by the load above: not read again
    history = list(getattr(model, "history_", None) or [])
    classes = getattr(model, "classes_", None)
    names = getattr(model, "feature_names_in_", None)
    report = {
        "model": str(args.model),
        "estimator": type(model).__name__,
        "parameters": {
            k: v
            for k, v in model.get_params(deep=False).items()
            if k != "callback" and (v is None or isinstance(v, str | int | float | bool))
        },
        "classes": plain(np.asarray(classes)) if classes is not None else None,
        "n_features": int(getattr(model, "n_features_in_", -1)),
        "feature_names": [str(v) for v in names] if names is not None else None,
        "iterations": len(history),
        "objective": finite_or_none(getattr(model, "objective_", float("nan"))),
        "converged": bool(getattr(model, "converged_", False)),
        "format": envelope.get("format"),
        "format_version": envelope.get("format_version"),
        "maxmargin_version": envelope.get("maxmargin_version"),
        "sha256": envelope.get("sha256"),
    }
    if args.json:
        print_json(report)
        return EXIT_OK
    shown = {k: v for k, v in report.items() if k not in ("parameters", "feature_names")}
    if shown["classes"] is not None:
        shown["classes"] = ", ".join(label_text(c) for c in shown["classes"])
    print_kv_table("Model", {k: ("-" if v is None else v) for k, v in shown.items()})
    print_kv_table("Parameters", {k: str(v) for k, v in report["parameters"].items()})
    return EXIT_OK


# --------------------------------------------------------------------------- parser
def _C_list(text: str) -> list[float]:
    """``--C 100`` or ``--C 1,10,100``."""
    try:
        return positive_list(text, "C")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _label_column(text: str) -> int | str:
    """``--label-column`` accepts an index (``-1``, ``0``) or a header name."""
    try:
        return int(text)
    except ValueError:
        return text


def add_parser(sub, parents=()) -> None:
    """Add fit, predict, evaluate, info and demo to the ``maxmargin`` subparsers."""
    data_opts = argparse.ArgumentParser(add_help=False)
    data_opts.add_argument(
        "--format",
        choices=["auto", "svmlight", "csv"],
        default="auto",
        help="data file format (default: by extension, then by content)",
    )
    data_opts.add_argument(
        "--zero-based",
        choices=["auto", "yes", "no"],
        default=None,
        help="svmlight feature indices start at 0 (yes) or 1 (no); default: as the model's "
        "training file (recorded at fit), else detected",
    )
    json_opt = argparse.ArgumentParser(add_help=False)
    json_opt.add_argument("--json", action="store_true", help="print one JSON object on stdout")

    fit = sub.add_parser(
        "fit",
        parents=[*parents, data_opts, json_opt],
        help="train a StructBoostClassifier (or a StructBoostRanker with --rank)",
        description="Train a StructBoostClassifier on DATA and save it to MODEL.  With "
        "--rank, train a StructBoostRanker (AUC / ordinal regression / learning to rank) "
        "on relevance grades instead; queries come from the qid: tokens of an svmlight "
        "(SVM-light / svm_rank) file such as '2 qid:1 1:0.5 3:0.1', and pairs are only "
        "formed inside a query.  A file without qid, or a CSV file, is one query.",
    )
    fit.add_argument("data", metavar="DATA", help="training data (svmlight/LIBSVM or CSV)")
    fit.add_argument("-o", "--output", metavar="MODEL", required=True, help="model file to write")
    fit.add_argument(
        "--label-column",
        type=_label_column,
        default=-1,
        help="CSV label column: index or header name (default: -1, the last)",
    )
    fit.add_argument(
        "--model",
        choices=[*_CLASSIFIERS, *(k for k in _RANKERS if k not in _CLASSIFIERS)],
        default="structboost",
        help="model family (structboost); with --rank: structboost (StructBoostRanker) or "
        "ranksvm (RankSVM, linear)",
    )
    fit.add_argument(
        "--C",
        type=_C_list,
        default=[100.0],
        metavar="C[,C...]",
        help="regularisation trade-off (100); a comma-separated list is chosen by "
        "--cv-fold cross-validation",
    )
    fit.add_argument("--cv", type=int, default=3, help="folds for choosing C (3)")
    fit.add_argument("--max-iter", type=int, default=200, help="column-generation iterations")
    fit.add_argument(
        "--rank",
        action="store_true",
        help="train a StructBoostRanker: labels are relevance grades (higher = better, "
        "0/1 for AUC), queries from svmlight qid:",
    )
    fit.add_argument(
        "--sharing",
        choices=["shared", "per_class"],
        default=None,
        help="weak learners shared by all classes or per class (shared; not with --rank)",
    )
    fit.add_argument(
        "--taxonomy",
        metavar="FILE",
        default=None,
        help="class tree (JSON, or 'parent child' lines): hierarchical "
        "classification with the tree loss (not with --rank)",
    )
    fit.add_argument(
        "--tree-loss",
        choices=["height", "half_path", "zero_one"],
        default=None,
        help="tree loss with --taxonomy (height)",
    )
    fit.add_argument(
        "--formulation",
        choices=["auto", "1-slack", "n-slack", "m-slack"],
        default="auto",
        help="auto: chosen by problem size for a classifier, 1-slack with --rank "
        "(m-slack = one slack per preference pair, memory O(pairs))",
    )
    fit.add_argument(
        "--master",
        choices=["auto", "fast", "exact"],
        default="auto",
        help="restricted master: fast = smoothed L-BFGS with an exact LP polish, exact = "
        "the LP every iteration (auto: fast where the task supports it)",
    )
    fit.add_argument(
        "--tol", type=float, default=1e-4, help="fast master's relative tolerance (1e-4)"
    )
    fit.add_argument(
        "--graph",
        choices=["complete", "bipartite", "star"],
        default=None,
        help="--rank: which pairs are compared inside a query; complete = every pair "
        "with different relevance (default, as svm_rank), bipartite = the --top-k best "
        "(default: every sample above the lowest grade) above the rest, star = the "
        "best-graded samples above the rest",
    )
    fit.add_argument(
        "--rescaling",
        choices=["unit", "margin", "slack"],
        default=None,
        help="--rank: unit = margin 1 and weight 1 per pair (default); margin / slack = "
        "the pair's relevance gap as its margin / as its weight",
    )
    fit.add_argument(
        "--top-k",
        type=int,
        default=None,
        metavar="K",
        help="--rank --graph bipartite: size of the upper side in each query",
    )
    fit.add_argument(
        "--normalize",
        choices=["pairs", "query"],
        default=None,
        help="--rank: average the pairwise hinge over all pairs (default) or inside each "
        "query and then over queries",
    )
    fit.add_argument(
        "--weak-learner",
        default=None,
        help="weak learner: auto, stump, hist_stump, tree, hist_tree:D (depth 1-6), ... "
        "(default: the model's own; structboost: auto = exact stumps up to 5000 rows, "
        "histogram stumps above)",
    )
    fit.add_argument("--eps-cp", type=float, default=0.01, help="cutting-plane tolerance")
    fit.add_argument("--eps-cg", type=float, default=1e-6, help="column-generation tolerance")
    fit.add_argument("--max-time", type=float, default=None, help="time budget in seconds")
    fit.add_argument("--seed", type=int, default=0, help="random_state (0: reproducible runs)")
    fit.add_argument(
        "--allow-empty",
        action="store_true",
        help="save a model with no weak learner (it predicts a constant) instead of failing",
    )
    fit.add_argument("--quiet", action="store_true", help="no progress display and no summary")
    fit.set_defaults(handler=cmd_fit)

    label_for_model = (
        "CSV label column: index or header name (default: the last column; for predict "
        "a CSV with exactly the model's number of features is read as unlabelled)"
    )
    predict = sub.add_parser(
        "predict",
        parents=[*parents, data_opts, json_opt],
        help="predict labels (classifier) or scores (ranker) for DATA",
        description="Write one predicted label per line for each sample in DATA; for a "
        "ranking model, one score per line (higher ranks higher).",
    )
    predict.add_argument("model", metavar="MODEL")
    predict.add_argument("data", metavar="DATA")
    predict.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    predict.add_argument("--label-column", type=_label_column, default=None, help=label_for_model)
    predict.add_argument(
        "--scores",
        action="store_true",
        help="write decision values instead of labels (one row per sample, one column per "
        "class; a single column for binary models and rankers)",
    )
    predict.set_defaults(handler=cmd_predict)

    evaluate = sub.add_parser(
        "evaluate",
        parents=[*parents, data_opts, json_opt],
        help="score MODEL on labelled DATA",
        description="Error rate, accuracy, confusion matrix and per-class counts.  For a "
        "ranking model: pairwise accuracy, AUC (binary labels), NDCG@10 and MAP, averaged "
        "over the queries of DATA's qid: (the whole file is one query without qid).",
    )
    evaluate.add_argument("model", metavar="MODEL")
    evaluate.add_argument("data", metavar="DATA")
    evaluate.add_argument("--label-column", type=_label_column, default=None, help=label_for_model)
    evaluate.add_argument(
        "--taxonomy",
        metavar="FILE",
        default=None,
        help="also report the tree loss under this class tree (default: "
        "the model's own taxonomy, if it has one)",
    )
    evaluate.set_defaults(handler=cmd_evaluate)

    info = sub.add_parser(
        "info",
        parents=[*parents, json_opt],
        help="describe a model file",
        description="Estimator, parameters, classes, features, iterations, objective and the "
        "file's format version and checksum, read without executing code.",
    )
    info.add_argument("model", metavar="MODEL")
    info.set_defaults(handler=cmd_info)

    demo = sub.add_parser(
        "demo",
        parents=[*parents, json_opt],
        help="StructBoost vs AdaBoost vs LinearSVC on scikit-learn's digits",
        description="Compare StructBoost, AdaBoost (SAMME, stumps) and Crammer-Singer LinearSVC "
        "on the digits data and write structboost_convergence.png.",
    )
    demo.add_argument("--out", default=".", metavar="DIR", help="where to write the plot")
    demo.add_argument("--max-iter", type=int, default=100, help="StructBoost iterations (100)")
    demo.add_argument(
        "--formulation", choices=["auto", "1-slack", "n-slack", "m-slack"], default="auto"
    )
    demo.add_argument("--master", choices=["auto", "fast", "exact"], default="auto")
    demo.add_argument("--max-time", type=float, default=None, help="StructBoost time budget (s)")
    demo.add_argument("--seed", type=int, default=0, help="split and model seed (0)")
    demo.add_argument("--quiet", action="store_true", help="no progress display")
    demo.set_defaults(handler=cmd_demo)
