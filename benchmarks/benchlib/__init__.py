"""Library code of the benchmark scripts that the tests import: pure functions, no data
access.  Scripts import it as ``benchlib`` (their own folder is on ``sys.path``); pytest
puts ``benchmarks/`` on ``sys.path`` through ``pythonpath`` in ``pyproject.toml``."""
