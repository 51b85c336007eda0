"""The ``maxmargin`` command line: fit, predict, evaluate and a self-contained demo.

``fit`` trains a :class:`~maxmargin.StructBoostClassifier`; ``fit --rank`` trains a
:class:`~maxmargin.StructBoostRanker` instead (AUC maximisation, ordinal regression,
learning to rank) on relevance grades, with the queries taken from the ``qid:``
tokens of an svmlight / SVM-light / svm_rank file (``2 qid:1 1:0.5 3:0.1``); a file
without qid (or a CSV file) is one query.  ``predict`` writes labels for a
classifier and scores for a ranker; ``evaluate`` reports accuracy and the
confusion matrix for a classifier, and pairwise accuracy, AUC (binary labels),
NDCG@10 and MAP, averaged over the queries, for a ranker::

    maxmargin fit --rank train.txt -o ranker.mm --max-iter 50
    maxmargin predict ranker.mm test.txt > scores.txt
    maxmargin evaluate ranker.mm test.txt

Human-readable output goes through rich (tables on stdout, a live progress
display on stderr); ``--json`` switches every command to one machine-readable
JSON document on stdout.  Bad input (missing files, unparsable data, corrupt
models, invalid parameters) is reported as ``error: <message>`` with exit
status 2 and no traceback; ``--debug`` re-raises instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


# --------------------------------------------------------------------------- helpers
def _version() -> str:
    try:
        import maxmargin

        version = getattr(maxmargin, "__version__", None)
        if version:
            return str(version)
        from importlib.metadata import version as dist_version

        return dist_version("maxmargin")
    except Exception:
        return "unknown"


def _stdout_console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def _describe(exc: BaseException) -> str:
    """One-line message for an expected failure (no errno noise for OS errors)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def _plain(value: Any) -> Any:
    """Convert numpy scalars/arrays to JSON-friendly Python values."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(_plain(obj), indent=None) + "\n")
    sys.stdout.flush()


def _label_text(value: Any) -> str:
    """How a class label is written: ``3`` not ``3.0`` / ``np.int64(3)``."""
    value = _plain(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _label_column(text: str) -> int | str:
    """``--label-column`` accepts an index (``-1``, ``0``) or a header name."""
    try:
        return int(text)
    except ValueError:
        return text


def _structboost_class() -> type:
    from maxmargin.learners.structboost import StructBoostClassifier

    return StructBoostClassifier


def _ranker_class() -> type:
    from maxmargin.learners.structboost_ranker import StructBoostRanker

    return StructBoostRanker


def _is_ranker(model: Any) -> bool:
    return isinstance(model, _ranker_class())


def _finite_or_none(value: Any) -> float | None:
    """A metric for the JSON output: NaN (undefined, e.g. no pairs) becomes null."""
    value = float(value)
    return value if np.isfinite(value) else None


def _fmt(value: Any, spec: str = ".6g") -> str:
    try:
        return format(float(value), spec)
    except (TypeError, ValueError):
        return "-"


class FitProgress:
    """Live rich progress display on stderr, fed by the estimator's ``callback``."""

    def __init__(self, total: int, description: str, enabled: bool = True) -> None:
        self.total = max(int(total), 1)
        self.description = description
        self.enabled = enabled
        self.n_records = 0
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> FitProgress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=24),
                MofNCompleteColumn(),
                TextColumn("obj {task.fields[objective]}"),
                TextColumn("xi {task.fields[xi]}"),
                TextColumn("weak {task.fields[n_weak]}"),
                TimeElapsedColumn(),
                console=_stderr_console(),
                refresh_per_second=8,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                self.description, total=self.total, objective="-", xi="-", n_weak="-"
            )
        return self

    def __call__(self, record: dict[str, Any]) -> None:
        self.n_records += 1
        if self._progress is None:
            return
        self._progress.update(
            self._task,
            completed=min(self.n_records, self.total),
            objective=_fmt(record.get("objective")),
            xi=_fmt(record.get("xi"), ".4g"),
            n_weak=str(record.get("n_weak", "-")),
        )

    def __exit__(self, *exc_info: object) -> None:
        if self._progress is None:
            return
        if exc_info[0] is None and self.n_records < self.total:
            self._progress.update(
                self._task,
                total=self.n_records,
                completed=self.n_records,
                description=f"{self.description} (done after {self.n_records})",
            )
        elif exc_info[0] is not None and self.n_records == 0:
            # rejected before the first iteration (bad data or parameters): erase the
            # empty bar (and skip Progress.stop's blank line) so the error stands alone
            self._progress.live.transient = True
            self._progress.live.stop()
            return
        self._progress.stop()


def _fit_timed(est: Any, X: Any, y: Any, **fit_params: Any) -> float:
    start = time.perf_counter()
    est.fit(X, y, **fit_params)
    return time.perf_counter() - start


def _history(est: Any) -> list[dict[str, Any]]:
    return list(getattr(est, "history_", None) or [])


def _n_weak(est: Any, default: int) -> int:
    history = _history(est)
    if history and "n_weak" in history[-1]:
        return int(history[-1]["n_weak"])
    return default


# --------------------------------------------------------------------------- data
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


def _load_data_for_model(
    args: argparse.Namespace, model: Any, need_labels: bool, query_id: bool = False
) -> tuple[Any, ...]:
    """Load DATA at the model's width; CSV files without a label column are accepted.

    Returns ``(X, y)``, or ``(X, y, qid)`` with ``query_id=True``."""
    from maxmargin.datasets import detect_format, load_dataset, peek_n_columns

    n_features = getattr(model, "n_features_in_", None)
    label_column = args.label_column
    fmt = args.format
    if label_column is None:
        label_column = -1
        path = Path(args.data)
        if not need_labels and path.is_file() and fmt in {"auto", "csv"}:
            if fmt == "csv" or detect_format(path) == "csv":
                if n_features is not None and peek_n_columns(path) == n_features:
                    label_column = None  # unlabelled: every column is a feature
    return load_dataset(
        args.data,
        format=fmt,
        n_features=n_features,
        label_column=label_column,
        query_id=query_id,
    )


def _load_model(path: str) -> Any:
    from maxmargin.io import load

    return load(path)


# --------------------------------------------------------------------------- commands
def _taxonomy_params(args: argparse.Namespace) -> dict[str, Any]:
    """``taxonomy=`` / ``tree_loss=`` for StructBoostClassifier when --taxonomy is given."""
    if args.taxonomy is None:
        return {}
    from maxmargin.tasks.hierarchy import as_taxonomy

    return {"taxonomy": as_taxonomy(args.taxonomy), "tree_loss": args.tree_loss or "height"}


def _model_taxonomy(model: Any, path: str | None) -> tuple[Any, str] | None:
    """The taxonomy to score tree loss with: --taxonomy, else the model's own, else None."""
    from maxmargin.tasks.hierarchy import as_taxonomy

    kind = getattr(model, "tree_loss", "height")
    if path is not None:
        return as_taxonomy(path), kind
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
        "pairwise_accuracy": _finite_or_none(pairwise_accuracy(relevance, scores, qid)),
        # the higher of the two labels is the positive class (0/1, -1/+1, 1/2 ...)
        "auc": _finite_or_none(auc((relevance == levels[-1]).astype(np.float64), scores, qid))
        if binary
        else None,
        "ndcg@10": _finite_or_none(ndcg_at_k(relevance, scores, k=10, group=qid)),
        "map": _finite_or_none(mean_average_precision(relevance, scores, qid)),
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


def cmd_fit(args: argparse.Namespace) -> int:
    """Train a StructBoostClassifier (or with --rank a StructBoostRanker) on DATA and
    save it to MODEL."""
    _check_fit_options(args)
    if args.rank:
        return _fit_ranker(args)
    from maxmargin.io import save

    X, y = _load_training_data(args)
    show = not (args.json or args.quiet)
    with FitProgress(args.max_iter, "StructBoost", enabled=show) as progress:
        est = _structboost_class()(
            C=args.C,
            max_iter=args.max_iter,
            weak_learner=args.weak_learner,
            sharing=args.sharing or "shared",
            formulation=args.formulation,
            eps_cp=args.eps_cp,
            eps_cg=args.eps_cg,
            max_time=args.max_time,
            random_state=args.seed,
            callback=progress,
            **_taxonomy_params(args),
        )
        seconds = _fit_timed(est, X, y)
    train_error = float(np.mean(est.predict(X) != y))
    out = save(est, args.output)
    history = _history(est)
    summary = {
        "model": str(out),
        "data": str(args.data),
        "n_samples": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "n_classes": len(est.classes_),
        "iterations": len(history),
        "n_weak": _n_weak(est, len(history)),
        "objective": float(getattr(est, "objective_", float("nan"))),
        "train_error": train_error,
        "fit_seconds": round(seconds, 4),
    }
    if args.json:
        _print_json(summary)
    elif not args.quiet:
        _print_kv_table("StructBoost fit", summary)
    return EXIT_OK


def _fit_ranker(args: argparse.Namespace) -> int:
    """``fit --rank``: a StructBoostRanker on relevance grades, queries from svmlight qid."""
    from maxmargin.io import save

    formulation = "1-slack" if args.formulation == "auto" else args.formulation
    X, y, qid = _load_ranking_data(args)
    show = not (args.json or args.quiet)
    with FitProgress(args.max_iter, "StructBoostRanker", enabled=show) as progress:
        est = _ranker_class()(
            C=args.C,
            max_iter=args.max_iter,
            weak_learner=args.weak_learner,
            formulation=formulation,
            graph=args.graph or "complete",
            rescaling=args.rescaling or "unit",
            top_k=args.top_k,
            normalize=args.normalize or "pairs",
            eps_cp=args.eps_cp,
            eps_cg=args.eps_cg,
            max_time=args.max_time,
            random_state=args.seed,
            callback=progress,
        )
        seconds = _fit_timed(est, X, y, group=qid)
    train = _ranking_metrics(y, est.decision_function(X), qid)
    out = save(est, args.output)
    history = _history(est)
    summary = {
        "model": str(out),
        "data": str(args.data),
        "n_samples": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "n_groups": _n_groups(qid),
        "n_pairs": int(est.n_pairs_),
        "formulation": formulation,
        "graph": est.graph,
        "rescaling": est.rescaling,
        "normalize": est.normalize,
        "iterations": len(history),
        "n_weak": _n_weak(est, len(history)),
        "objective": float(getattr(est, "objective_", float("nan"))),
        "train_pairwise_accuracy": train["pairwise_accuracy"],
        "train_auc": train["auc"],
        "fit_seconds": round(seconds, 4),
    }
    if args.json:
        _print_json(summary)
    elif not args.quiet:
        shown = {k: v for k, v in summary.items() if v is not None}
        if qid is None:
            shown["n_groups"] = "1 (no qid: one query)"
        _print_kv_table("StructBoostRanker fit", shown)
    return EXIT_OK


def cmd_predict(args: argparse.Namespace) -> int:
    """Write one predicted label (classifier) or score (ranker) per line, or a JSON
    document with --json."""
    model = _load_model(args.model)
    X, _ = _load_data_for_model(args, model, need_labels=False)
    if _is_ranker(model):
        scores = np.asarray(model.decision_function(X), dtype=np.float64)
        if args.json:
            text = json.dumps({"scores": scores.tolist()}) + "\n"
        else:
            text = "".join(repr(float(s)) + "\n" for s in scores)
    elif args.json:
        predictions = model.predict(X)
        text = json.dumps({"predictions": _plain(np.asarray(predictions))}) + "\n"
    else:
        predictions = model.predict(X)
        text = "".join(_label_text(p) + "\n" for p in predictions)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_OK


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Error rate, accuracy, confusion matrix and per-class counts of MODEL on DATA
    (ranking metrics for a ranker)."""
    from sklearn.metrics import confusion_matrix

    model = _load_model(args.model)
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
            "label": _plain(label),
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
        "labels": _plain(labels),
        "confusion_matrix": cm.tolist(),
        "per_class": per_class,
    }
    if args.json:
        _print_json(report)
        return EXIT_OK
    from rich.table import Table

    console = _stdout_console()
    _print_kv_table(
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
        matrix.add_column(_label_text(label), justify="right")
    for i, label in enumerate(labels):
        matrix.add_row(_label_text(label), *(str(v) for v in cm[i]))
    console.print(matrix)
    counts = Table(title="Per class")
    for name in ("label", "support", "predicted", "correct", "error rate"):
        counts.add_column(name, justify="left" if name == "label" else "right")
    for row in per_class:
        counts.add_row(
            _label_text(row["label"]),
            str(row["support"]),
            str(row["predicted"]),
            str(row["correct"]),
            _fmt(row["error_rate"], ".4f"),
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
            "label": _plain(level),
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
        _print_json(report)
        return EXIT_OK
    from rich.table import Table

    console = _stdout_console()
    names = {"pairwise_accuracy": "pairwise accuracy", "auc": "AUC", "ndcg@10": "NDCG@10"}
    _print_kv_table(
        "Ranking evaluation",
        {
            "model": args.model,
            "data": args.data,
            "n": len(y),
            "queries": f"{report['n_groups']} (metrics: mean over queries)"
            if qid is not None
            else "1 (no qid: the whole file)",
            **{
                names.get(key, key.upper()): _fmt(value, ".4f")
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
        table.add_row(_label_text(row["label"]), str(row["count"]), _fmt(row["mean_score"]))
    console.print(table)
    return EXIT_OK


def _print_kv_table(title: str, values: dict[str, Any], console: Any = None) -> None:
    from rich.table import Table

    table = Table(title=title, show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value", justify="right")
    for key, value in values.items():
        text = _fmt(value) if isinstance(value, float) else str(value)
        table.add_row(key.replace("_", " "), text)
    (console or _stdout_console()).print(table)


# --------------------------------------------------------------------------- demo
def _staged_errors(est: Any, X: Any, y: np.ndarray) -> list[float] | None:
    """Test error after each boosting stage, from the fitted model (no refitting)."""
    if hasattr(est, "staged_predict"):
        return [float(np.mean(np.asarray(p) != y)) for p in est.staged_predict(X)]
    if hasattr(est, "staged_decision_function"):
        classes = np.asarray(est.classes_)
        return [
            float(np.mean(classes[np.argmax(np.asarray(s), axis=1)] != y))
            for s in est.staged_decision_function(X)
        ]
    return None


def _plot_convergence(
    path: Path,
    history: list[dict[str, Any]],
    sb_errors: list[float] | None,
    ada_errors: list[float],
    svc_error: float,
) -> None:
    """Two panels: StructBoost primal objective, and test error per boosting stage."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax_obj, ax_err = fig.subplots(1, 2)
    its = [r.get("iteration", i + 1) for i, r in enumerate(history)]
    objective = [r.get("objective", np.nan) for r in history]
    ax_obj.plot(its, objective, color="tab:blue", marker="." if len(its) < 40 else None)
    if objective and all(np.isfinite(v) and v > 0 for v in objective):
        ax_obj.set_yscale("log")
    ax_obj.set_xlabel("column-generation iteration")
    ax_obj.set_ylabel("primal objective")
    ax_obj.set_title("StructBoost: primal objective")
    ax_obj.grid(alpha=0.3)
    ax_obj.xaxis.set_major_locator(MaxNLocator(integer=True))

    if sb_errors:
        ax_err.plot(range(1, len(sb_errors) + 1), sb_errors, label="StructBoost", color="tab:blue")
    else:
        ax_err.text(
            0.5,
            0.3,
            "StructBoost staged predictions unavailable",
            transform=ax_err.transAxes,
            ha="center",
            va="top",
            fontsize=8,
        )
    ax_err.plot(
        range(1, len(ada_errors) + 1),
        ada_errors,
        label="AdaBoost (SAMME, stumps)",
        color="tab:orange",
    )
    ax_err.axhline(svc_error, ls="--", color="tab:green", label="LinearSVC (Crammer-Singer)")
    ax_err.set_xlabel("boosting iteration (weak learners)")
    ax_err.set_ylabel("test error")
    ax_err.set_title("digits: test error")
    ax_err.set_ylim(bottom=0)
    ax_err.grid(alpha=0.3)
    ax_err.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_err.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


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

        stage = "fitting StructBoostClassifier"
        with FitProgress(args.max_iter, "StructBoost", enabled=show) as progress:
            sb = _structboost_class()(
                max_iter=args.max_iter,
                weak_learner="stump",
                formulation=args.formulation,
                max_time=args.max_time,
                random_state=args.seed,
                callback=progress,
            )
            sb_seconds = _fit_timed(sb, X_train, y_train)
        n_stumps = max(_n_weak(sb, args.max_iter), 1)
        stage = "computing StructBoost's per-iteration test error"
        sb_errors = _staged_errors(sb, X_test, y_test)

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
        _plot_convergence(plot, history, sb_errors, ada_errors, rows[2]["test_error"])
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        if args.debug:
            raise
        _error(f"demo failed while {stage}: {type(exc).__name__}: {exc}")
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
            "staged_test_error_available": sb_errors is not None,
        },
        "plot": str(plot),
    }
    if args.json:
        _print_json(result)
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
    console = _stdout_console()
    console.print(table)
    console.print(f"convergence plot: {plot}")
    if sb_errors is None:
        console.print("(StructBoost per-iteration test error unavailable: no staged_predict)")
    return EXIT_OK


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The argparse parser for all subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show full tracebacks instead of one-line errors",
    )
    data_opts = argparse.ArgumentParser(add_help=False)
    data_opts.add_argument(
        "--format",
        choices=["auto", "svmlight", "csv"],
        default="auto",
        help="data file format (default: by extension, then by content)",
    )
    json_opt = argparse.ArgumentParser(add_help=False)
    json_opt.add_argument("--json", action="store_true", help="print one JSON object on stdout")

    parser = argparse.ArgumentParser(
        prog="maxmargin",
        description="Large-margin structured output learning (StructBoost).",
        parents=[common],
    )
    parser.set_defaults(debug=False)
    parser.add_argument("--version", action="version", version=f"maxmargin {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    fit = sub.add_parser(
        "fit",
        parents=[common, data_opts, json_opt],
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
    fit.add_argument("--C", type=float, default=100.0, help="regularisation trade-off (100)")
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
    fit.add_argument("--weak-learner", default="stump", help="weak learner family (stump)")
    fit.add_argument("--eps-cp", type=float, default=0.01, help="cutting-plane tolerance")
    fit.add_argument("--eps-cg", type=float, default=1e-6, help="column-generation tolerance")
    fit.add_argument("--max-time", type=float, default=None, help="time budget in seconds")
    fit.add_argument("--seed", type=int, default=None, help="random_state")
    fit.add_argument("--quiet", action="store_true", help="no progress display and no summary")
    fit.set_defaults(handler=cmd_fit)

    label_for_model = (
        "CSV label column: index or header name (default: the last column; for predict "
        "a CSV with exactly the model's number of features is read as unlabelled)"
    )
    predict = sub.add_parser(
        "predict",
        parents=[common, data_opts, json_opt],
        help="predict labels (classifier) or scores (ranker) for DATA",
        description="Write one predicted label per line for each sample in DATA; for a "
        "ranking model, one score per line (higher ranks higher).",
    )
    predict.add_argument("model", metavar="MODEL")
    predict.add_argument("data", metavar="DATA")
    predict.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    predict.add_argument("--label-column", type=_label_column, default=None, help=label_for_model)
    predict.set_defaults(handler=cmd_predict)

    evaluate = sub.add_parser(
        "evaluate",
        parents=[common, data_opts, json_opt],
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

    demo = sub.add_parser(
        "demo",
        parents=[common, json_opt],
        help="StructBoost vs AdaBoost vs LinearSVC on scikit-learn's digits",
        description="Compare StructBoost, AdaBoost (SAMME, stumps) and Crammer-Singer LinearSVC "
        "on the digits data and write structboost_convergence.png.",
    )
    demo.add_argument("--out", default=".", metavar="DIR", help="where to write the plot")
    demo.add_argument("--max-iter", type=int, default=100, help="StructBoost iterations (100)")
    demo.add_argument(
        "--formulation", choices=["auto", "1-slack", "n-slack", "m-slack"], default="auto"
    )
    demo.add_argument("--max-time", type=float, default=None, help="StructBoost time budget (s)")
    demo.add_argument("--seed", type=int, default=0, help="split and model seed (0)")
    demo.add_argument("--quiet", action="store_true", help="no progress display")
    demo.set_defaults(handler=cmd_demo)

    from maxmargin.apps.tracking.command import add_track_parser

    add_track_parser(sub, parents=[common])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``maxmargin`` script; returns the process exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return handler(args)
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except (ValueError, OSError) as exc:
        if args.debug:
            raise
        _error(_describe(exc))
        return EXIT_USAGE
    except Exception as exc:
        if args.debug:
            raise
        _error(f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for a traceback)")
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
