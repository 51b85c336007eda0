"""The README's Python example and the docstring examples run as written."""

import doctest
import importlib
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
    assert (tmp_path / "digits.mm.npz").exists()
    err = float(capsys.readouterr().out.split()[0])
    assert err < 0.2


SRC = Path(__file__).resolve().parents[1] / "src"
DOCTEST_MODULES = sorted(
    ".".join(p.relative_to(SRC).with_suffix("").parts)
    for p in (SRC / "maxmargin").rglob("*.py")
    if ">>>" in p.read_text()
)


@pytest.mark.parametrize("module", DOCTEST_MODULES)
def test_docstring_examples_run(module):
    """Every ``>>>`` example in the package's docstrings runs and prints what it says."""
    mod = importlib.import_module(module)
    failures, attempted = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, verbose=False)
    assert attempted > 0 and failures == 0
