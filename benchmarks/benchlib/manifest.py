"""The benchmark manifest as a library: load ``benchmarks/manifest.toml`` (one entry per
benchmark claim: one script, its arguments, one result file), the command of an entry, the
generated page ``docs/benchmarks.md``, the generated tables in the docs pages
(``<!-- table: ENTRY[:ID] -->`` ... ``<!-- /table -->`` blocks, rendered by
:mod:`benchlib.tables`) and the checks.  ``benchmarks/manifest.py`` is its command line;
tests import this module (``benchlib`` is a library package, never a benchmark script).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

from benchlib import tables

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "benchmarks" / "manifest.toml"
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
DEFAULT_DATA = Path(os.environ.get("MAXMARGIN_DATA") or ROOT.parent / "shared" / "data")
#: where entries keep what they build and may rebuild (graphs, flat boosters, old
#: checkouts): ``{cache}`` in an entry's arguments; ``--cache-dir`` or this variable moves it
CACHE_ENV = "MAXMARGIN_BENCH_CACHE"
DEFAULT_CACHE = ROOT / "benchmarks" / ".cache"
#: set for a run of an entry with ``ref``: the commit whose ``src/`` the run imports
REF_ENV = "MAXMARGIN_BENCH_REF"
#: the data folder of a run (``_common.DEFAULT_DATA`` reads it)
DATA_ENV = "MAXMARGIN_DATA"
FIELDS = {"title", "script", "args", "result", "cited_in", "provenance", "note", "env", "ref"}
MAX_ROWS, MAX_COLS = 40, 12


def load_manifest(path: Path = MANIFEST) -> dict[str, dict]:
    entries = tomllib.loads(path.read_text()).get("entries", {})
    for name, e in entries.items():
        unknown = set(e) - FIELDS
        missing = {"script", "args", "result"} - set(e)
        if unknown or missing:
            raise SystemExit(
                f"manifest entry {name!r}: unknown {unknown or ''} missing {missing or ''}"
            )
    return entries


def default_cache() -> Path:
    """The cache folder: ``$MAXMARGIN_BENCH_CACHE`` if set, else ``benchmarks/.cache``."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def _in_checkout(path: Path) -> str:
    """``path`` relative to the checkout when it lies inside it (runs start in the
    checkout, so the recorded command names no machine's folders), else absolute."""
    path = Path(path).absolute()
    try:
        return path.relative_to(ROOT.absolute()).as_posix()
    except ValueError:
        return str(path)


def command(entry: dict, data: Path, cache: Path | None = None) -> list[str]:
    """The command of ``entry``: ``{data}`` -> the data folder, ``{cache}`` -> the cache
    folder (relative to the checkout when inside it)."""
    cache = default_cache() if cache is None else cache
    args = [
        a.replace("{data}", str(data)).replace("{cache}", _in_checkout(cache))
        for a in entry["args"]
    ]
    return [sys.executable, str(ROOT / "benchmarks" / entry["script"]), *args]


def ref_checkout(ref: str, cache: Path) -> Path:
    """A checkout of commit ``ref`` in ``cache/ref-<ref>`` (``git worktree add --detach``,
    made once and reused); its ``src/`` is what an entry with ``ref`` imports."""
    path = Path(cache).absolute() / f"ref-{ref}"
    if not (path / "src" / "maxmargin").is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), ref], check=True
        )
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    want = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if head != want:
        raise SystemExit(f"{path} is at {head[:10]}, not {ref}: remove it (git worktree remove)")
    return path


def run_env(entry: dict, cache: Path, data: Path | None = None) -> dict[str, str]:
    """The environment of a run: the entry's ``env``; ``MAXMARGIN_DATA`` = ``data`` (the
    default data folder of ``_common``, so options the entry does not pass follow
    ``--data-dir`` too); with ``ref``, ``PYTHONPATH`` is the
    ``src/`` of that commit's checkout (the current benchmark script, the old library) and
    ``MAXMARGIN_BENCH_REF`` names the commit (the provenance records it)."""
    env = {**os.environ, **{k: str(v) for k, v in entry.get("env", {}).items()}}
    if data is not None:
        env[DATA_ENV] = str(Path(data).absolute())
    if entry.get("ref"):
        env["PYTHONPATH"] = str(ref_checkout(entry["ref"], cache) / "src")
        env[REF_ENV] = entry["ref"]
    else:
        env.pop(REF_ENV, None)
    return env


def listing(entries) -> list[str]:
    width = max(map(len, entries), default=0)
    out = []
    for name, e in entries.items():
        flag = "  (no provenance)" if e.get("provenance") == "missing" else ""
        out.append(f"{name:<{width}}  {e['script']} -> {e['result']}{flag}")
    return out


def run(entries, names, data_dir, cache_dir=None) -> None:
    """Rerun entries ``names`` (their scripts rewrite their result files), from the
    checkout, with ``{cache}`` -> ``cache_dir`` (default :func:`default_cache`)."""
    cache = default_cache() if cache_dir is None else Path(cache_dir)
    for name in names:
        if name not in entries:
            raise SystemExit(f"no entry {name!r} in {MANIFEST.name}; `make bench-list` lists them")
    for name in names:
        e = entries[name]
        cache.mkdir(parents=True, exist_ok=True)
        env = run_env(e, cache, Path(data_dir))
        cmd = command(e, Path(data_dir), cache)
        print("+", shlex.join(cmd), flush=True)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True)
        out = json.loads((ROOT / e["result"]).read_text())
        if not isinstance(out, dict) or "provenance" not in out:
            raise SystemExit(f"{e['result']}: the script wrote no provenance block")
        if e.get("ref") and out["provenance"].get("library_ref") != e["ref"]:
            raise SystemExit(f"{e['result']}: the provenance does not record ref {e['ref']}")


def load_result(entries, name: str) -> dict:
    """The result JSON of entry ``name`` (KeyError if there is no such entry)."""
    return json.loads((ROOT / entries[name]["result"]).read_text())


# ----------------------------------------------------------------------------- rendering


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:.4g}"
    if isinstance(v, int):
        return str(v)
    s = str(v).replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= 60 else s[:57] + "..."


def _scalar(v) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _is_scalar_list(v) -> bool:
    return isinstance(v, list) and len(v) <= 8 and all(isinstance(x, int | float) for x in v)


def _cell(v) -> str:
    if _is_scalar_list(v):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return _fmt(v)


def _table(rows: list[dict], key: str | None = None) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k, v in r.items():
            if k not in cols and k != key and (_scalar(v) or _is_scalar_list(v)):
                cols.append(k)
    cols = ([key] if key else []) + cols[: MAX_COLS - bool(key)]
    if len(cols) <= bool(key):
        return []
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:MAX_ROWS]:
        out.append("| " + " | ".join(_cell(r.get(c, "")) for c in cols) + " |")
    if len(rows) > MAX_ROWS:
        out.append(f"\n({len(rows) - MAX_ROWS} more rows in the result file)")
    return out


def _render_payload(obj, path: str, depth: int, out: list[str]) -> None:
    """Tables for the records found in ``obj`` (depth-first, at most 3 levels)."""
    if depth > 3:
        return
    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
        t = _table(obj)
        if t:
            out += [f"`{path}`" if path else "", "", *t, ""]
        return
    if not isinstance(obj, dict):
        return
    scalars = {k: v for k, v in obj.items() if _scalar(v) or _is_scalar_list(v)}
    records = {k: v for k, v in obj.items() if isinstance(v, dict)}
    flat = {
        k: v
        for k, v in records.items()
        if all(_scalar(x) or _is_scalar_list(x) for x in v.values())
    }
    if scalars and depth > 0:
        out += [f"`{path}`: " + ", ".join(f"{k} = {_cell(v)}" for k, v in scalars.items()), ""]
    elif scalars:
        out += ["| key | value |", "|---|---|"]
        out += [f"| {k} | {_cell(v)} |" for k, v in scalars.items()]
        out.append("")
    if len(flat) >= 2:
        t = _table([{"key": k, **v} for k, v in flat.items()], key="key")
        if t:
            out += [f"`{path}`" if path else "", "", *t, ""]
    for k, v in obj.items():
        if k in flat and len(flat) >= 2:
            continue
        if isinstance(v, dict | list) and not _is_scalar_list(v):
            _render_payload(v, f"{path}.{k}" if path else k, depth + 1, out)


def _docstring(script: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse(script.read_text())) or ""
    except (OSError, SyntaxError):
        return ""
    return doc.strip()


def _provenance(p: dict) -> list[str]:
    versions = p.get("packages") or p.get("versions") or {}
    machine = p.get("machine") or {}
    mach = ", ".join(f"{k} {v}" for k, v in machine.items() if v not in (None, ""))
    return [
        f"- command: `{p.get('command', '?')}`",
        f"- commit: `{p.get('commit', '?')}`"
        + (" (uncommitted changes)" if p.get("dirty") or p.get("src_dirty") else "")
        + f", date: {p.get('date', '?')}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v),
        f"- machine: {mach or '?'}",
    ]


def render(entries) -> str:
    out = [
        "# Benchmark results",
        "",
        "<!-- generated by `python benchmarks/manifest.py render` from benchmarks/manifest.toml",
        "     and the result files; do not edit by hand -->",
        "",
        "Each entry below is one script, its arguments and one result file in",
        "`benchmarks/results/` (every file there is one entry's).  Each section shows what the",
        "script measures (its docstring), the command that regenerates it",
        "(`make bench NAME=<entry>`), the provenance stored in the result file (command,",
        "commit, package versions, machine) and the results as tables generated from the JSON.",
        "The tables in README.md and the guides marked `<!-- table: ENTRY -->` are generated",
        "from the same files by the renderers of `benchmarks/benchlib/tables.py`, and",
        "`make bench` rewrites them.  Figures the guides attribute to `benchmarks/NOTEBOOK.md`",
        "come from the lab notebook of the earlier rounds, not from an entry.",
        "Results marked *no provenance* predate provenance recording and have not been",
        "regenerated yet.",
        "",
        "## How to regenerate",
        "",
        "From the checkout, with the package installed (`make bench-list` creates `.venv` with",
        "it, or `pip install -e .[bench]`):",
        "",
        "```console",
        "python benchmarks/manifest.py list                    # the entries",
        "python benchmarks/manifest.py run NAME --data-dir DIR [--cache-dir DIR]",
        "python benchmarks/manifest.py render                  # this page and the docs' tables",
        "python benchmarks/manifest.py check                   # 0 problems, or what is wrong",
        "python benchmarks/manifest.py check --args            # and every entry's arguments parse",
        "```",
        "",
        "`make bench NAME=<entry>` is `run` then `render` (`make bench-list` lists the",
        "entries).  `check --args` runs each entry's script with its arguments and `--help`",
        "appended, so argparse checks every value and stops before anything runs (the test suite",
        "does this for every entry).  In an entry's arguments `{data}` is",
        "`--data-dir` (default `../shared/data` beside the checkout; `run` also exports it as",
        "`MAXMARGIN_DATA`, which the scripts' own data defaults follow) and `{cache}` is",
        "`--cache-dir` (default `$MAXMARGIN_BENCH_CACHE`, else `benchmarks/.cache`, which git",
        "ignores): what an entry builds and rebuilds when it is missing -- the horses CRF",
        "graphs, the detection benchmarks' flat boosters -- lives there, so no argument names a",
        'folder of one machine.  An entry with `ref = "<commit>"` runs this checkout\'s script',
        "against the library of that commit: `run` checks the commit out into",
        "`{cache}/ref-<commit>` (`git worktree add`, once), puts its `src/` first on",
        "`PYTHONPATH`, and the result's provenance records `library_ref`.  Run from a clean",
        "committed tree (the provenance records the commit and whether `src/`, `benchmarks/` or",
        "`pyproject.toml` had uncommitted changes); the stored command is the script path",
        "relative to the checkout and the arguments as run.  The commit and that check are read",
        "when the result is written, so a long run whose tree changes meanwhile is best started",
        "from its own checkout of the commit (`git worktree add --detach DIR COMMIT`, then",
        "`manifest.py run` there and copy the result file back).  Timed entries (their notes say",
        "so) run under the CPU lock on a shared machine, one at a time, at most 10 minutes each",
        "(`flock /tmp/maxmargin-cpu.lock python benchmarks/manifest.py run NAME ...`);",
        "accuracy-only entries may run unlocked (`nice -n 10`).  Thread and process scaling",
        "entries need both cores free: their files record the load average and a `cores`",
        "check, which bound what a 2-worker figure can show.",
        "",
        "## Entries",
        "",
        "| entry | script | cited in |",
        "|---|---|---|",
    ]
    for name, e in entries.items():
        cited = ", ".join(e.get("cited_in", [])) or "-"
        out.append(f"| [{name}](#{name.replace('_', '-').lower()}) | `{e['script']}` | {cited} |")
    out += ["", "The machines and package versions behind the results:", ""]
    out += [*render_table(entries, f"{tables.WHOLE}:machines"), ""]
    described: dict[str, str] = {}  # script -> the first entry that shows its docstring
    for name, e in entries.items():
        script = ROOT / "benchmarks" / e["script"]
        out += [f"## {name}", ""]
        if e.get("title"):
            out += [f"**{e['title']}**", ""]
        doc = _docstring(script)
        if doc and e["script"] in described:
            first = described[e["script"]]
            anchor = first.replace("_", "-").lower()
            out += [f"Method: `{e['script']}`, described under [{first}](#{anchor}).", ""]
        elif doc:
            described[e["script"]] = name
            out += ["Method (the script's docstring):", "", "```text", doc, "```", ""]
        out += [
            f"Regenerate: `make bench NAME={name}`, i.e. "
            f"`{shlex.join(['python', 'benchmarks/' + e['script'], *e['args']])}`",
            "",
        ]
        if e.get("note"):
            out += [e["note"], ""]
        path = ROOT / e["result"]
        if not path.exists():
            out += [f"*{e['result']} is missing: run the entry.*", ""]
            continue
        data = json.loads(path.read_text())
        prov = data.pop("provenance", None) if isinstance(data, dict) else None
        if prov:
            out += ["Provenance:", "", *_provenance(prov), ""]
        else:
            out += ["*No provenance recorded in this result file: regenerate it.*", ""]
        out += [f"Results (`{e['result']}`):", ""]
        keys = tables.for_entry(name)
        try:
            generated = [
                [
                    f"`{key}` (also in the docs pages as a generated table):",
                    "",
                    *render_table(entries, key),
                    "",
                ]
                for key in keys
            ]
        except RENDER_ERRORS as exc:
            # the result file no longer has the schema its renderer reads: show it raw
            out += [f"*The renderer of `{name}` failed on this file ({exc!r}).*", ""]
            generated = []
        if generated:
            out += [line for block in generated for line in block]
            continue
        body: list[str] = []
        _render_payload(data, "", 0, body)
        out += body or ["(no tabular results)", ""]
    return "\n".join(out).rstrip() + "\n"


# ----------------------------------------------------------------------------- doc tables

PAGES = ("README.md", "docs/*.md")
BLOCK = re.compile(
    r"(?P<open><!-- table: (?P<key>[\w.-]+(?::[\w.-]+)?) -->\n)"
    r"(?P<body>.*?)(?P<close><!-- /table -->)",
    re.S,
)


def pages() -> list[Path]:
    """The docs pages that may hold generated tables (docs/benchmarks.md is generated whole)."""
    out = [p for pat in PAGES for p in sorted(ROOT.glob(pat))]
    return [p for p in out if p.resolve() != DOC.resolve()]


def render_table(entries, key: str) -> list[str]:
    """The lines of table ``key`` (``ENTRY`` or ``ENTRY:ID`` of :data:`tables.TABLES`) from
    the entry's result file, with a line naming the file it was generated from."""
    if key not in tables.TABLES:
        raise KeyError(f"no table {key!r} in benchlib/tables.py")
    name = tables.entry_of(key)
    if name == tables.WHOLE:
        results = {
            n: load_result(entries, n) if (ROOT / e["result"]).is_file() else None
            for n, e in entries.items()
        }
        lines = tables.TABLES[key](results, lambda n: load_result(entries, n))
        return [*lines, "", "*Generated from the result files of benchmarks/manifest.toml.*"]
    if name not in entries:
        raise KeyError(f"table {key!r}: no entry {name!r} in {MANIFEST.name}")
    lines = tables.TABLES[key](load_result(entries, name), lambda n: load_result(entries, n))
    return [
        *lines,
        "",
        f"*Generated from `{entries[name]['result']}` (`make bench NAME={name}`).*",
    ]


RENDER_ERRORS = (KeyError, TypeError, ValueError, IndexError)


def render_blocks(text: str, entries, errors: list[str] | None = None) -> str:
    """``text`` with every ``<!-- table: KEY -->`` ... ``<!-- /table -->`` block rewritten.
    With ``errors`` given, a block whose renderer fails on its result file (a changed
    schema) is left as it was and the failure appended to ``errors``; without, it raises."""

    def sub(m: re.Match) -> str:
        try:
            body = "\n".join(render_table(entries, m["key"]))
        except RENDER_ERRORS as exc:
            if errors is None:
                raise
            errors.append(f"table {m['key']!r} failed to render: {exc!r}")
            return m[0]
        return f"{m['open']}{body}\n{m['close']}"

    return BLOCK.sub(sub, text)


def blocks(text: str) -> list[str]:
    """The table keys of the generated blocks in ``text``."""
    return [m["key"] for m in BLOCK.finditer(text)]


def stale_pages(entries) -> list[str]:
    """The docs pages whose generated tables differ from their result files."""
    return [
        p.relative_to(ROOT).as_posix()
        for p in pages()
        if render_blocks(p.read_text(), entries) != p.read_text()
    ]


def write_pages(entries, errors: list[str] | None = None) -> list[Path]:
    """Rewrite the generated tables of every docs page; the pages changed.  Blocks whose
    renderer fails are left as they were and reported in ``errors`` (see render_blocks)."""
    changed = []
    for p in pages():
        text = p.read_text()
        new = render_blocks(text, entries, errors)
        if new != text:
            p.write_text(new)
            changed.append(p)
    return changed


# ----------------------------------------------------------------------------- checking


def script_options(script: Path) -> set[str]:
    """The ``--options`` a benchmark script declares: its string literals that start with
    ``--`` (``add_argument("--out", ...)``), with those of ``_common.py``, which declares
    options some scripts share.  Read statically, so checking does not import the script."""
    out: set[str] = set()
    for path in (script, ROOT / "benchmarks" / "_common.py"):
        try:
            tree = ast.parse(path.read_text())
        except (OSError, SyntaxError):
            continue
        out |= {
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value[:2] == "--"
        }
    return out


def argument_problems(entries, names=None, data: Path = DEFAULT_DATA) -> list[str]:
    """Each entry's command (``{data}``, ``{cache}`` substituted) run only as far as its
    argument parsing, by :mod:`benchlib.argcheck` in one subprocess: the script with the
    entry's arguments and ``--help`` appended must exit 0 at ``--help`` (a value argparse
    rejects, an import error or a script without an argparse parser is a problem).  Nothing
    is run or written; ``manifest.py check --args``."""
    todo = []
    for name in entries if names is None else names:
        _python, script, *args = command(entries[name], Path(data))
        todo.append([name, script, args])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), *_src()])}
    out = subprocess.run(
        [sys.executable, "-m", "benchlib.argcheck"],
        input=json.dumps(todo),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        return [f"argument check failed: {out.stderr.strip()[-500:]}"]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return [f"{name}: its arguments do not parse ({p})" for name, p in found.items()]


def _src() -> list[str]:
    """PYTHONPATH for a subprocess: the caller's (this checkout's ``src/`` when set)."""
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _known(key: str, entries) -> bool:
    return key in tables.TABLES and tables.entry_of(key) in (*entries, tables.WHOLE)


def check(entries) -> list[str]:
    """Every problem of the manifest, the result files and the docs pages: a missing script
    or result file, an argument option the script does not declare, a result without
    provenance that is not marked ``provenance = "missing"``, a ``cited_in`` page that does
    not name the result, a result file that is no entry's, a generated table of an unknown
    entry / table, or a stale one, and a stale docs/benchmarks.md."""
    problems = []
    listed = set()
    for name, e in entries.items():
        script = ROOT / "benchmarks" / e["script"]
        if not script.is_file():
            problems.append(f"{name}: no script benchmarks/{e['script']}")
        else:
            options = script_options(script)
            unknown = [
                a.split("=")[0]
                for a in e["args"]
                if a.startswith("--") and a.split("=")[0] not in options
            ]
            if unknown:
                problems.append(f"{name}: {e['script']} declares no option {unknown}")
        result = ROOT / e["result"]
        listed.add(result.resolve())
        if not result.is_file():
            problems.append(f"{name}: no result file {e['result']}")
            continue
        data = json.loads(result.read_text())
        has_prov = isinstance(data, dict) and "provenance" in data
        if not has_prov and e.get("provenance") != "missing":
            problems.append(f"{name}: {e['result']} has no provenance (mark it or regenerate)")
        if has_prov and e.get("provenance") == "missing":
            problems.append(f"{name}: marked provenance = 'missing' but the file has one")
        for doc in e.get("cited_in", []):
            text = (ROOT / doc).read_text() if (ROOT / doc).is_file() else ""
            if Path(e["result"]).name not in text:
                problems.append(f"{name}: cited_in {doc}, which does not name it")
    for p in sorted(RESULTS.rglob("*.json")):
        if p.resolve() not in listed:
            problems.append(f"{p.relative_to(ROOT).as_posix()}: no manifest entry has it")
    for page in pages():
        text = page.read_text()
        rel = page.relative_to(ROOT).as_posix()
        known = [_known(k, entries) for k in blocks(text)]
        for key, ok in zip(blocks(text), known, strict=True):
            if not ok:
                problems.append(f"{rel}: generated table {key!r} has no renderer or no entry")
        if not all(known):
            continue
        errors: list[str] = []
        stale = render_blocks(text, entries, errors) != text
        problems += [f"{rel}: {e}" for e in errors]
        if stale:
            problems.append(f"{rel}: generated tables are stale (manifest.py render)")
    if not DOC.is_file() or DOC.read_text() != render(entries):
        problems.append(f"{DOC.relative_to(ROOT).as_posix()} is stale (manifest.py render)")
    for key in tables.TABLES:
        if tables.entry_of(key) not in (*entries, tables.WHOLE):
            problems.append(f"benchlib/tables.py: table {key!r} names no manifest entry")
    return problems
