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


def _documented_parameters(doc: str) -> set[str]:
    """Names of the numpydoc ``Parameters`` section of a class docstring (``a, b : ...``
    documents both); empty without that section."""
    parts = (doc or "").split("Parameters\n    ----------\n", 1)
    if len(parts) < 2:
        return set()
    section = parts[1].split("\n\n    Attributes\n", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        m = re.match(r"^    (\w[\w, ]*?)(?: :|$)", line)
        if m:
            names |= {name.strip() for name in m.group(1).split(",")}
    return names


#: estimators whose docstrings do not yet document every constructor parameter: expected
#: to fail (strict: a class documented but still listed fails too, so the list is emptied
#: as they are documented); empty since the trackers and detectors were documented
UNDOCUMENTED: set[str] = set()


def _estimator_classes():
    import maxmargin.apps.detection
    import maxmargin.apps.tracking  # noqa: F401 -- registers the trackers and detectors
    from maxmargin import _registry

    prefixes = ("maxmargin.learners", "maxmargin.apps.")
    classes = sorted(
        (cls for cls in _registry.estimators().values() if cls.__module__.startswith(prefixes)),
        key=lambda cls: cls.__name__,
    )
    return [
        pytest.param(
            cls,
            id=cls.__name__,
            marks=[pytest.mark.xfail(strict=True, reason="parameters not documented yet")]
            if cls.__name__ in UNDOCUMENTED
            else [],
        )
        for cls in classes
    ]


@pytest.mark.parametrize("cls", _estimator_classes())
def test_every_parameter_is_documented(cls):
    """``help(Estimator)`` and the API pages (autodoc reads ``__doc__``) describe every
    constructor parameter of the learners and the applications' estimators (Segmenter,
    trackers, detectors), including those an estimator shares with others (issue 29:
    shared text must not drop entries)."""
    missing = set(cls._get_param_names()) - _documented_parameters(cls.__doc__)
    assert not missing, f"{cls.__name__} does not document {sorted(missing)}"
