"""The benchmark manifest: every benchmark claim of README.md and docs/ as one entry --
one script, its arguments, one result file (``benchmarks/manifest.toml``).

    python benchmarks/manifest.py list                 # the entries
    python benchmarks/manifest.py run NAME [NAME ...]  # rerun entries (rewrites their results)
    python benchmarks/manifest.py render               # regenerate docs/benchmarks.md
    python benchmarks/manifest.py check [-v]           # manifest vs result files vs docs
    python benchmarks/manifest.py unreferenced         # result files nothing names

``make bench NAME=<entry>`` is ``run NAME`` then ``render``.  Run timed entries under the
CPU lock on a shared machine (``flock /tmp/maxmargin-cpu.lock make bench NAME=...``).

The tables of docs/benchmarks.md are generated from the result JSON: a list of records
becomes a table, a mapping of records a table keyed by the mapping, scalars a
key / value list; the method is the script's docstring and the provenance block (command,
commit, package versions, machine) is the one ``_common.write_result`` stored in the file.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "benchmarks" / "manifest.toml"
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
DEFAULT_DATA = ROOT.parent / "shared" / "data"
FIELDS = {"title", "script", "args", "result", "cited_in", "provenance", "note", "env"}
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


def command(entry: dict, data: Path) -> list[str]:
    args = [a.replace("{data}", str(data)) for a in entry["args"]]
    return [sys.executable, str(ROOT / "benchmarks" / entry["script"]), *args]


def cmd_list(entries, _args) -> int:
    width = max(map(len, entries), default=0)
    for name, e in entries.items():
        flag = "  (no provenance)" if e.get("provenance") == "missing" else ""
        print(f"{name:<{width}}  {e['script']} -> {e['result']}{flag}")
    return 0


def cmd_run(entries, args) -> int:
    for name in args.names:
        if name not in entries:
            raise SystemExit(f"no entry {name!r} in {MANIFEST.name}; `make bench-list` lists them")
        e = entries[name]
        env = {**os.environ, **{k: str(v) for k, v in e.get("env", {}).items()}}
        cmd = command(e, Path(args.data_dir))
        print("+", shlex.join(cmd), flush=True)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True)
        out = json.loads((ROOT / e["result"]).read_text())
        if not isinstance(out, dict) or "provenance" not in out:
            raise SystemExit(f"{e['result']}: the script wrote no provenance block")
    return 0


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
        "Every benchmark figure quoted in the README and the guides comes from one entry below:",
        "one script, its arguments, one result file in `benchmarks/results/`.  Each section",
        "shows what the script measures (its docstring), the command that regenerates it",
        "(`make bench NAME=<entry>`), the provenance stored in the result file (command,",
        "commit, package versions, machine) and the results as tables generated from the JSON.",
        "Benchmarks read real data from `../shared/data` (`--data` / `--data-dir` to change);",
        "timed entries should run under the CPU lock on a shared machine.  Results marked",
        "*no provenance* predate provenance recording and have not been regenerated yet.",
        "",
        "| entry | script | cited in |",
        "|---|---|---|",
    ]
    for name, e in entries.items():
        cited = ", ".join(e.get("cited_in", [])) or "-"
        out.append(f"| [{name}](#{name.replace('_', '-').lower()}) | `{e['script']}` | {cited} |")
    out.append("")
    for name, e in entries.items():
        script = ROOT / "benchmarks" / e["script"]
        out += [f"## {name}", ""]
        if e.get("title"):
            out += [f"**{e['title']}**", ""]
        doc = _docstring(script)
        if doc:
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
        body: list[str] = []
        _render_payload(data, "", 0, body)
        out += body or ["(no tabular results)", ""]
    return "\n".join(out).rstrip() + "\n"


def cmd_render(entries, args) -> int:
    Path(args.out).write_text(render(entries))
    print(f"wrote {args.out}")
    return 0


# ----------------------------------------------------------------------------- checking


def cmd_check(entries, _args) -> int:
    problems = []
    listed = set()
    for name, e in entries.items():
        if not (ROOT / "benchmarks" / e["script"]).is_file():
            problems.append(f"{name}: no script benchmarks/{e['script']}")
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
    unlisted = sorted(
        p.relative_to(ROOT).as_posix() for p in RESULTS.rglob("*.json") if p.resolve() not in listed
    )
    for p in problems:
        print("problem:", p)
    print(
        f"{len(entries)} entries, {len(problems)} problems; "
        f"{len(unlisted)} result files not in the manifest"
    )
    if _args.verbose:
        for p in unlisted:
            print("  not in the manifest:", p)
    return 1 if problems else 0


SEARCHED = (
    "README.md",
    "CHANGELOG.md",
    "docs/*.md",
    "benchmarks/*.md",
    "benchmarks/*.py",
    "benchmarks/*.toml",
    "src/**/*.py",
    "tests/*.py",
    "Makefile",
)


def _mentions(text: str) -> set[str]:
    """File-name tokens in ``text`` (``a_{0,1}.json``, ``a_*.json``, ``dir/``, ``_suffix``
    abbreviations), brace alternatives expanded."""
    import re

    out: set[str] = set()
    for tok in re.findall(r"[\w/{},*.\-]+", text):
        tok = tok.split("results/", 1)[-1].strip(".,")
        stack = [tok]
        while stack:
            t = stack.pop()
            m = re.search(r"\{([^{}]*)\}", t)
            if m:
                stack += [t[: m.start()] + a + t[m.end() :] for a in m.group(1).split(",")]
            else:
                t = t.replace("SEQ", "*").replace("NAME", "*")
                if "*" not in t or len(re.sub(r"[^A-Za-z0-9]", "", t.replace("json", ""))) >= 4:
                    out.add(t)
    return out


def cmd_unreferenced(_entries, _args) -> int:
    """Result files that no searched file names -- exactly, by a glob / brace pattern, a
    folder, or the abbreviated ``_suffix`` form the notebook uses: safe to delete."""
    import fnmatch

    mentions: set[str] = set()
    for pat in SEARCHED:
        for p in ROOT.glob(pat):
            mentions |= _mentions(p.read_text(errors="ignore"))
    plain = {m.removesuffix(".json") for m in mentions if "*" not in m}
    globs = [m for m in mentions if "*" in m]
    orphans = []
    for f in sorted(RESULTS.rglob("*.json")):
        rel = f.relative_to(RESULTS).as_posix()
        stem = rel.removesuffix(".json")
        parts = stem.split("/")[-1].split("_")
        # the name, or an abbreviation of at least two of its last parts ("chainboot_4stages")
        tails = {stem.split("/")[-1], stem} | {"_".join(parts[i:]) for i in range(len(parts) - 1)}
        tails |= {"_" + t for t in tails}
        folder = any(rel.startswith(m.rstrip("/") + "/") for m in plain if "/" in rel)
        if tails & plain or folder or any(fnmatch.fnmatch(rel, g) for g in globs):
            continue
        orphans.append(rel)
    for o in orphans:
        print(o)
    print(f"{len(orphans)} result files named nowhere")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    r = sub.add_parser("run")
    r.add_argument("names", nargs="+")
    r.add_argument("--data-dir", default=str(DEFAULT_DATA), help="substituted for {data}")
    g = sub.add_parser("render")
    g.add_argument("--out", default=str(DOC))
    c = sub.add_parser("check")
    c.add_argument("-v", "--verbose", action="store_true", help="list unlisted result files")
    sub.add_parser("unreferenced")
    args = ap.parse_args(argv)
    entries = load_manifest()
    commands = {
        "list": cmd_list,
        "run": cmd_run,
        "render": cmd_render,
        "check": cmd_check,
        "unreferenced": cmd_unreferenced,
    }
    return commands[args.cmd](entries, args)


if __name__ == "__main__":
    sys.exit(main())
