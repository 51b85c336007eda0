"""Run benchmark scripts only as far as their argument parsing (``manifest.py check --args``).

``python -m benchlib.argcheck`` reads ``[[name, script, [args...]], ...]`` as JSON on stdin
and, for each, runs the script as ``__main__`` in this one process (so the package and its
dependencies are imported once, not once per entry) with ``sys.argv = [script, *args,
"--help"]``: argparse converts and checks every value before the final ``--help`` (a wrong
type or choice exits with status 2 there), and ``--help`` then exits 0 before anything is
run or written.  Prints ``{name: problem}`` (JSON) for the entries that did not stop with
status 0 at ``--help``: an argparse error (its message), an exception, or a script that
returned without reaching ``--help`` -- which a script without an argparse parser would do
after running its work, so such scripts are reported without being run.
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys
from pathlib import Path


def parse_only(script: Path, args: list[str]) -> str | None:
    """None if ``script`` with ``args`` stops at ``--help`` with status 0, else a problem."""
    if "argparse" not in script.read_text():
        return "has no argparse parser: not run"
    err = io.StringIO()
    argv, path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args, "--help"]
    sys.path.insert(0, str(script.parent))
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        if e.code in (0, None):
            return None
        lines = [x for x in err.getvalue().splitlines() if x.strip()]
        return f"exit status {e.code}: {lines[-1] if lines else ''}"
    except Exception as e:  # reported; the other entries are still checked
        return f"{type(e).__name__}: {e}"
    finally:
        sys.argv, sys.path[:] = argv, path
    return "returned without reaching --help"


def main() -> int:
    problems = {}
    for name, script, args in json.load(sys.stdin):
        problem = parse_only(Path(script), args)
        if problem is not None:
            problems[name] = problem
    print(json.dumps(problems))
    return 0


if __name__ == "__main__":
    sys.exit(main())
