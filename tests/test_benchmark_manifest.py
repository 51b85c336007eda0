"""benchmarks/manifest.toml: every entry names an existing script and result file, every
result file is an entry, results carry provenance (or are marked), docs/benchmarks.md and
the generated tables of the docs pages are exactly what the result files render to (no
hand-copied numbers), and no test imports a benchmark script.

The manifest's logic is the library module ``benchmarks/benchlib/manifest.py`` (pytest's
``pythonpath`` has ``benchmarks/`` for the ``benchlib`` package); the command line
``benchmarks/manifest.py`` is run as a subprocess, never imported."""

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib import manifest, tables

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def entries():
    return manifest.load_manifest()


def test_manifest_is_consistent(entries):
    assert entries
    problems = manifest.check(entries)
    assert problems == [], "\n".join(problems)


def test_benchmarks_page_is_generated(entries):
    assert (ROOT / "docs" / "benchmarks.md").read_text() == manifest.render(entries), (
        "docs/benchmarks.md is out of date: python benchmarks/manifest.py render"
    )


def test_docs_tables_are_generated(entries):
    stale = manifest.stale_pages(entries)
    assert stale == [], f"stale generated tables in {stale}: python benchmarks/manifest.py render"
    used = {k for p in manifest.pages() for k in manifest.blocks(p.read_text())}
    # the main tables of the guides and README's headline figures are generated blocks
    assert {
        "fit_vs_lightgbm",
        "fit_vs_lightgbm:headline",
        "frontier",
        "frontier:headline",
        "tree_search",
        "ssvm_one_slack",
        "manifest:machines",
    } <= used


@pytest.mark.parametrize("key", sorted(tables.TABLES))
def test_every_table_renders_from_its_result(entries, key):
    lines = manifest.render_table(entries, key)
    # a table, a list, or (``:headline`` / ``:summary``) one sentence of a paragraph
    assert lines[0].startswith(("| ", "- ")) or (
        key.endswith((":headline", ":summary")) and lines[0][:1].isupper()
    )
    name = tables.entry_of(key)
    assert (entries[name]["result"] if name != tables.WHOLE else "manifest.toml") in lines[-1]


def _entries_with(tmp_path, payload):
    res = tmp_path / "r.json"
    res.write_text(json.dumps(payload))
    return {"fit_vs_lightgbm": {"script": "x.py", "args": [], "result": str(res)}}


def test_a_block_is_rewritten_from_the_result_and_stale_text_is_replaced(tmp_path):
    row = {
        "data": "digits",
        "weak_learner": "stump",
        "master": "fast",
        "certify": "gap",
        "max_iter": 100,
        "time_ratio": 20.0,
        "doubling": None,
        "structboost": {
            "fit_s": 0.5,
            "t_weak": 0.1,
            "t_master": 0.3,
            "t_polish": 0.1,
            "n_stumps": 100,
            "objective": 33.5,
            "gap": 0.01,
            "test_error": 0.0625,
        },
        "lightgbm": {"fit_s": 0.025, "rounds": 10, "test_error": 0.125},
    }
    entries = _entries_with(tmp_path, {"rows": [row]})
    text = "intro\n<!-- table: fit_vs_lightgbm -->\n| hand | copied |\n<!-- /table -->\nafter\n"
    new = manifest.render_blocks(text, entries)
    assert new.startswith("intro\n<!-- table: fit_vs_lightgbm -->\n| data |")
    assert new.endswith("<!-- /table -->\nafter\n")
    assert "| hand | copied |" not in new
    assert "| digits | stump:fast:gap | 100 | 0.50 (0.10 / 0.30 / 0.10) |" in new
    assert "0.0625 / 0.1250" in new
    assert manifest.render_blocks(new, entries) == new  # idempotent
    # a changed result makes the block stale
    row["structboost"]["test_error"] = 0.5
    entries = _entries_with(tmp_path, {"rows": [row]})
    assert manifest.render_blocks(new, entries) != new


def test_a_renderer_that_fails_on_its_result_leaves_the_block_and_is_reported(tmp_path):
    entries = _entries_with(tmp_path, {"rows": [{"data": "digits"}]})  # fields missing
    text = "<!-- table: fit_vs_lightgbm -->\n| old |\n<!-- /table -->\n"
    with pytest.raises(KeyError):
        manifest.render_blocks(text, entries)
    errors = []
    assert manifest.render_blocks(text, entries, errors) == text
    assert len(errors) == 1 and "fit_vs_lightgbm" in errors[0]


def _truncate_gap(it, tm):
    """A truncate_gap.json payload: per gap (wall s, objective) at equal iterations / time."""
    rows = lambda d: [  # noqa: E731
        {"gap": g, "wall_s": w, "iterations": 60, "objective": o, "test_error": 0.1}
        for g, (w, o) in d.items()
    ]
    return {
        "protocol": {"gaps": [0.05, 0.1], "iters": 60},
        "default_gap": 0.1,
        "datasets": {"a": {"equal_iterations": rows(it), "equal_time": rows(tm)}},
    }


def test_the_truncate_gap_tables_read_their_file():
    data = _truncate_gap({0.05: (10.0, 40.0), 0.1: (6.0, 40.4)}, {0.05: (9, 39.0), 0.1: (9, 38.61)})
    it = tables.TABLES["truncate_gap:iterations"](data, None)
    head = "| data: wall s / objective / test error after 60 iterations | gap 0.05 |"
    assert it[0] == head + " gap 0.1 (default) |"
    assert it[2] == "| a | 10.0 / 40.000 / 0.100 | 6.0 / 40.400 / 0.100 |"
    (line,) = tables.TABLES["truncate_gap:summary"](data, None)
    assert "gap 0.1 takes 40-40 % less time" in line
    assert "+1.0 % to +1.0 %" in line
    assert "lower on 1 of 1 sets (-1.0 % to -1.0 %)" in line


def test_a_block_of_an_unknown_table_is_an_error(entries):
    with pytest.raises(KeyError, match="no table"):
        manifest.render_blocks("<!-- table: no_such_entry -->\n<!-- /table -->\n", entries)


def test_run_substitutes_the_data_folder(tmp_path):
    e = {"script": "bench_x.py", "args": ["--data", "{data}/multiclass", "--out", "r.json"]}
    cmd = manifest.command(e, tmp_path)
    assert cmd[1].endswith("benchmarks/bench_x.py")
    assert cmd[2:] == ["--data", f"{tmp_path}/multiclass", "--out", "r.json"]


def test_the_command_line_checks_and_lists():
    run = [sys.executable, str(ROOT / "benchmarks" / "manifest.py")]
    out = subprocess.run([*run, "check"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 problems" in out.stdout
    out = subprocess.run([*run, "list"], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "fit_vs_lightgbm" in out.stdout


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip":
            if node.args and isinstance(node.args[0], ast.Constant):
                names.add(str(node.args[0].value).split(".")[0])
    return names


def test_no_test_imports_a_benchmark_script():
    """Issue 29 (must-have 7): tests import the package or the ``benchlib`` library, never a
    script of benchmarks/ (which pytest's pythonpath would let them)."""
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    assert {"manifest", "_common", "bench_tracking"} <= scripts
    offenders = {
        p.relative_to(ROOT).as_posix(): sorted(_imported_modules(p) & scripts)
        for p in (ROOT / "tests").rglob("*.py")
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert offenders == {}


def test_no_test_imports_another_test_module():
    """Shared test helpers live in ``tests/data_makers.py`` (or a conftest), never in a
    ``test_*.py`` module: importing one works in the tree (pytest puts each test's folder
    on sys.path) but not against the installed wheel (``--import-mode=importlib``), where
    ``tests/solvers/test_newton_line_search.py`` importing ``test_smoothed_kernels`` failed."""
    tests = {p.stem for p in (ROOT / "tests").rglob("test_*.py")}
    offenders = {
        p.relative_to(ROOT).as_posix(): sorted(_imported_modules(p) & tests)
        for p in (ROOT / "tests").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_import_guard_sees_a_script_import(tmp_path):
    f = tmp_path / "t.py"
    f.write_text("import numpy\nfrom manifest import render\nx = pytest.importorskip('_common')\n")
    assert {"manifest", "_common"} <= _imported_modules(f)


def test_the_machines_table_names_every_entry_once(entries):
    text = "\n".join(manifest.render_table(entries, "manifest:machines"))
    counted = 0
    for line in text.splitlines()[2:]:
        if not line.startswith("| "):
            break
        cell = line.split(" | ")[1]
        n, _, names = cell.partition(": ")
        counted += int(n.split()[0])
        if names:
            assert len(names.removesuffix(" |").split(", ")) == int(n)
    assert counted == len(entries)


def test_check_rejects_an_option_the_script_does_not_declare(entries):
    e = dict(entries["ssvm_one_slack"])
    bad = {**entries, "bad": {**e, "args": ["--no-such-option", "1", *e["args"]]}}
    problems = manifest.check(bad)
    assert any(p.startswith("bad:") and "--no-such-option" in p for p in problems)
    assert "--out" in manifest.script_options(ROOT / "benchmarks" / e["script"])


#: the modules of pyproject's ``bench`` extra (lightgbm, opencv, dlib): the installed-wheel
#: run of the suite (.ci/test_wheel.sh) installs ``[dev]`` only, without them
BENCH_EXTRA_MODULES = ("lightgbm", "cv2", "dlib")


def test_every_entrys_arguments_parse(entries):
    """``make bench NAME=<entry>`` starts: each entry's script, with its arguments and
    ``--help`` appended, gets through argparse (values converted and checked) and stops at
    ``--help`` -- one subprocess for all entries, nothing run or written.  A script that
    imports a module of the ``bench`` extra is excused only where that module is absent."""
    absent = [m for m in BENCH_EXTRA_MODULES if importlib.util.find_spec(m) is None]
    problems = [
        p
        for p in manifest.argument_problems(entries)
        if not any(f"No module named '{m}'" in p for m in absent)
    ]
    assert problems == []


def test_the_argument_check_sees_a_bad_value_and_a_script_without_a_parser(entries):
    e = entries["graphcut_backends"]
    bad = {
        "bad_value": {**e, "args": ["--repeat", "many", *e["args"]]},
        "no_parser": {**e, "script": "benchlib/__init__.py"},
        "good": e,
    }
    problems = manifest.argument_problems(bad)
    assert len(problems) == 2
    assert problems[0].startswith("bad_value:") and "invalid int value: 'many'" in problems[0]
    assert problems[1].startswith("no_parser:") and "no argparse parser" in problems[1]


# ----------------------------------------------------------------------------- regenerable

#: the CPU lock of a shared machine (timed scripts that take it themselves name it): the one
#: /tmp path a command may hold, since it is the machine's convention, not a file of the run
CPU_LOCK = "/tmp/maxmargin-cpu.lock"
#: entries of other owners whose stored command (or arguments) still name a /tmp folder, the
#: reason, and what clears it; each must leave this list when its file is regenerated
TMP_PENDING: dict[str, str] = {}
#: repeats still one file each, until the one command that writes them all is run
SERIES_PENDING: set[str] = set()


def _tmp_paths(entries) -> dict[str, list[str]]:
    """Per entry: the arguments, and the stored command, that name a /tmp path."""
    out = {}
    for name, e in entries.items():
        bad = [a for a in e["args"] if "/tmp" in a.replace(CPU_LOCK, "")]
        path = ROOT / e["result"]
        if path.is_file():
            data = json.loads(path.read_text())
            cmd = (
                (data.get("provenance") or {}).get("command", "") if isinstance(data, dict) else ""
            )
            if "/tmp" in cmd.replace(CPU_LOCK, ""):
                bad.append(f"stored command: {cmd[:120]}")
        if bad:
            out[name] = bad
    return out


def test_no_entry_or_stored_command_names_a_tmp_folder(entries):
    """A maintainer reruns an entry from any checkout: its arguments name ``{data}`` and
    ``{cache}``, never a /tmp folder of one session, and the stored command is the one the
    manifest ran (``benchmarks/bench_x.py``, not a /tmp clone's path)."""
    found = _tmp_paths(entries)
    pending = set(TMP_PENDING)
    assert {k: v for k, v in found.items() if k not in pending} == {}
    assert sorted(pending - set(found)) == [], "regenerated: drop it from the pending lists"
    # the arguments themselves are clean for every entry, pending ones included, but for
    # detection_dlib's saved models (its second invocation reads them) and face_cascade's
    args = {k for k, v in found.items() if any(not a.startswith("stored") for a in v)}
    assert args <= {"detection_dlib", "face_cascade"}


AD_HOC = re.compile(r"_(\d+|idle|quiet|final|seed\d+|rep\d+|run\d+)$")


def test_no_entry_or_result_name_carries_an_ad_hoc_suffix(entries):
    """Repeats of one claim are one entry whose script writes them into one file
    (``--runs``, ``--alternations``, ``--seeds``), not files numbered ``_2``, ``_rep3``,
    ``_seed1`` or marked ``_idle`` / ``_quiet`` / ``_final``."""
    names = set(entries) | {p.stem for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    allowed = SERIES_PENDING
    assert sorted(n for n in names if AD_HOC.search(n) and n not in allowed) == []
    assert allowed <= set(entries), "a listed file went: drop it from the list"
    assert AD_HOC.search("scaleout_crf_threads_idle_3") and AD_HOC.search("x_seed2")
    assert not AD_HOC.search("tracking_baseline_adaboost500_Coke")


def test_the_cache_placeholder_is_relative_inside_the_checkout(tmp_path):
    e = {"script": "bench_x.py", "args": ["--cache", "{cache}/g.npz", "--data", "{data}/d"]}
    inside = manifest.command(e, tmp_path, ROOT / "benchmarks" / ".cache")
    assert inside[2:] == ["--cache", "benchmarks/.cache/g.npz", "--data", f"{tmp_path}/d"]
    outside = manifest.command(e, tmp_path, tmp_path / "c")
    assert outside[3] == f"{tmp_path}/c/g.npz"


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(manifest.CACHE_ENV, str(tmp_path))
    assert manifest.default_cache() == tmp_path
    monkeypatch.delenv(manifest.CACHE_ENV)
    assert manifest.default_cache() == ROOT / "benchmarks" / ".cache"


def test_an_entry_with_ref_imports_that_commits_src(monkeypatch, tmp_path):
    seen = []

    def checkout(ref, cache):
        seen.append((ref, cache))
        return tmp_path / f"ref-{ref}"

    monkeypatch.setattr(manifest, "ref_checkout", checkout)
    env = manifest.run_env({"script": "x.py", "args": [], "ref": "abc1234"}, tmp_path)
    assert env["PYTHONPATH"] == str(tmp_path / "ref-abc1234" / "src")
    assert env[manifest.REF_ENV] == "abc1234" and seen == [("abc1234", tmp_path)]
    monkeypatch.setenv(manifest.REF_ENV, "stale")
    assert manifest.REF_ENV not in manifest.run_env({"script": "x.py", "args": []}, tmp_path)


def test_every_result_file_a_page_names_exists():
    """README.md and the guides cite result files by name; a superseded file is deleted
    only with its citations (docs/benchmarks.md is generated from the files themselves)."""
    here = {p.name for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    here |= {p.name for p in (ROOT / "benchmarks" / "taxonomies").glob("*.json")}
    missing = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if page.name == "benchmarks.md":
            continue
        names = set(re.findall(r"[A-Za-z0-9_.-]+\.json", page.read_text())) - here
        if names:
            missing[page.name] = sorted(names)
    assert missing == {}


#: a measured figure in prose: seconds, milliseconds, percent, a speed-up factor, frames per
#: second, an AP, or a decimal of two or more places (an error, an AUC, an overlap)
FIGURE = re.compile(
    r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?(?:-\d+(?:\.\d+)?)?\s?(?:s|ms|%|x|fps)\b"
    r"|\d\.\d{2,}|\bAP \d|frames per second)"
)
#: version numbers (CPython 3.11.7, glibc 2.36, Python >= 3.11) are not figures
VERSION = re.compile(r"\d+\.\d+\.\d+|>= ?\d+\.\d+|(?:Linux|glibc) \d+\.\d+")
#: README sentences whose figures are the papers' own, not measurements of this project
PAPER_FIGURES = ("the paper reports",)


def uncited_figures(text: str) -> list[str]:
    """The sentences of ``text`` (outside code blocks and generated tables) that state a
    measured figure without naming a result file (``*.json``) in the same sentence."""
    text = re.sub(r"<!-- table: .*?<!-- /table -->", "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out = []
    for para in re.split(r"\n\s*\n", text):
        for sentence in re.split(r"(?<=[a-z0-9)`])\.\s+(?=[A-Z(`])", para):
            s = " ".join(sentence.split()).rstrip(".")
            if any(p in s.lower() for p in PAPER_FIGURES) or re.search(r"[\w-]+\.json", s):
                continue
            if FIGURE.search(VERSION.sub("", s)):
                out.append(s)
    return out


def test_every_readme_figure_names_its_result_file():
    """Issue 33 (must-have 5): every measured figure of README.md's prose (the generated
    tables cite their files themselves) is in a sentence that names its result file."""
    assert uncited_figures((ROOT / "README.md").read_text()) == []


def test_the_figure_check_sees_an_uncited_figure():
    text = (
        "Fits take 3.5 s (`benchmarks/results/a.json`). It reaches AP 0.455 on raccoons.\n\n"
        "Tested on CPython 3.11.7 (glibc 2.36). The paper reports 0.79.\n\n"
        "```\nmake bench  # 12 s\n```\n"
        "<!-- table: x -->\n0.52x\n<!-- /table -->\n"
        "A 2-thread fit is 1.85-1.92x faster. It tracks at 26.4 frames per second.\n"
    )
    assert uncited_figures(text) == [
        "It reaches AP 0.455 on raccoons",
        "A 2-thread fit is 1.85-1.92x faster",
        "It tracks at 26.4 frames per second",
    ]
