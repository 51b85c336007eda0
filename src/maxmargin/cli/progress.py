"""The live fit progress display (rich, on stderr), fed by an estimator's ``callback``."""

from __future__ import annotations

from typing import Any

from maxmargin.cli.output import fmt, stderr_console


class FitProgress:
    """Live rich progress display on stderr, fed by the estimator's ``callback``."""

    def __init__(self, total: int, description: str, enabled: bool = True) -> None:
        self.total = max(int(total), 1)
        self.description = description
        self.enabled = enabled
        self.n_records = 0
        self._last: Any = None
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
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=24),
                MofNCompleteColumn(),
                TextColumn("obj {task.fields[objective]}"),
                TextColumn("xi {task.fields[xi]}"),
                TextColumn("weak {task.fields[n_weak]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=stderr_console(),
                refresh_per_second=8,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                self.description, total=self.total, objective="-", xi="-", n_weak="-"
            )
        return self

    def __call__(self, record: dict[str, Any]) -> None:
        # StructBoost re-sends its last iteration's record after the final exact polish
        repeat = record.get("iteration") is not None and record.get("iteration") == self._last
        self._last = record.get("iteration")
        if not repeat:
            self.n_records += 1
        if self._progress is None:
            return
        if repeat:
            gap = record.get("gap")
            self._progress.update(
                self._task,
                description=f"{self.description} (exact polish: gap {fmt(gap, '.1e')})",
            )
        self._progress.update(
            self._task,
            completed=min(self.n_records, self.total),
            objective=fmt(record.get("objective")),
            xi=fmt(record.get("xi"), ".4g"),
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
