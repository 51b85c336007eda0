"""benchmarks/manifest.toml: every entry names an existing script and result file, results
carry provenance (or are marked), and docs/benchmarks.md is exactly what the manifest and
the result files render to (no hand-edited numbers)."""

from pathlib import Path

import pytest

manifest = pytest.importorskip("manifest")  # benchmarks/ is on pytest's pythonpath

ROOT = Path(__file__).resolve().parents[1]


def test_manifest_is_consistent(capsys):
    entries = manifest.load_manifest()
    assert entries
    assert manifest.cmd_check(entries, type("A", (), {"verbose": False})()) == 0, (
        capsys.readouterr().out
    )


def test_benchmarks_page_is_generated():
    entries = manifest.load_manifest()
    assert (ROOT / "docs" / "benchmarks.md").read_text() == manifest.render(entries), (
        "docs/benchmarks.md is out of date: python benchmarks/manifest.py render"
    )


def test_run_substitutes_the_data_folder(tmp_path):
    e = {"script": "bench_x.py", "args": ["--data", "{data}/multiclass", "--out", "r.json"]}
    cmd = manifest.command(e, tmp_path)
    assert cmd[1].endswith("benchmarks/bench_x.py")
    assert cmd[2:] == ["--data", f"{tmp_path}/multiclass", "--out", "r.json"]
