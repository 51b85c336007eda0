"""Figures written by the ``maxmargin`` commands (matplotlib, Agg canvas, no display)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def save_figure(fig: Any, path: str | Path, dpi: int = 100) -> None:
    """Render ``fig`` and write it with the package's one atomic writer (the format
    from the file's extension, PNG without one)."""
    import io

    from maxmargin.io import atomic_write_bytes

    path = Path(path)
    kind = path.suffix.lower().lstrip(".") or "png"
    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format=kind)
    atomic_write_bytes(path, buf.getvalue())


def staged_errors(est: Any, X: Any, y: np.ndarray) -> list[float]:
    """Test error after each boosting stage, from the fitted model (no refitting)."""
    return [float(np.mean(np.asarray(p) != y)) for p in est.staged_predict(X)]


def plot_convergence(
    path: Path,
    history: list[dict[str, Any]],
    sb_errors: list[float],
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

    ax_err.plot(range(1, len(sb_errors) + 1), sb_errors, label="StructBoost", color="tab:blue")
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
    save_figure(fig, path, dpi=110)


def plot_recall_overlap(path: Path, curves: dict[str, tuple[Any, Any]], title: str = "") -> None:
    """Recall-overlap curves (Blaschko et al., GCPR 2014, Fig. 2): one line per label,
    ``curves[label] = (overlap thresholds, recall)``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for label, (t, r) in curves.items():
        ax.plot(t, r, label=label)
    ax.axvline(0.5, color="0.7", lw=0.8, ls=":")
    ax.set_xlabel("overlap threshold")
    ax.set_ylabel("recall")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(title or "recall vs overlap")
    ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=110)


def plot_stage_rejection(path: Path, stages: list[dict[str, Any]], entering, title="") -> None:
    """A cascade's per-stage figures (thesis Table 4.1): share of negative windows
    entering each stage (log scale) and weak classifiers per stage."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    a, b = fig.subplots(1, 2)
    k = np.arange(1, len(stages) + 1)
    a.semilogy(k, np.maximum(np.asarray(entering, dtype=float), 1e-9), marker="o")
    a.set_xlabel("stage")
    a.set_ylabel("windows entering the stage")
    a.grid(alpha=0.3, which="both")
    b.bar(k, [s["n_weak"] for s in stages], color="tab:orange", label="weak classifiers")
    b.bar(k, [s["n_new_weak"] for s in stages], color="tab:blue", label="new (not recycled)")
    b.set_xlabel("stage")
    b.set_ylabel("weak classifiers")
    b.legend(fontsize=8)
    fig.suptitle(title or "cascade: rejection per stage")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=110)
