"""Which maxmargin the suite tests: with ``MAXMARGIN_EXPECT_INSTALLED=<site-packages>``
(set by ``.ci/test_wheel.sh``) the package must come from there, i.e. from the installed
wheel, not from a source tree on ``sys.path``."""

import os
import sys
from pathlib import Path

import pytest

import maxmargin

EXPECTED = os.environ.get("MAXMARGIN_EXPECT_INSTALLED")


@pytest.mark.skipif(not EXPECTED, reason="only when testing an installed wheel")
def test_package_comes_from_the_installed_wheel():
    where = Path(maxmargin.__file__).resolve()
    assert where.is_relative_to(Path(EXPECTED).resolve()), where
    assert (where.parent / "py.typed").is_file()
    src = Path(__file__).resolve().parents[1] / "src"
    assert not any(Path(p).resolve() == src for p in sys.path if p)


def test_version_is_the_distributions():
    from importlib.metadata import version

    assert maxmargin.__version__ == version("maxmargin")
