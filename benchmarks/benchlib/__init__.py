"""Library code of the benchmarks that the tests import: pure functions, no data access
(``box_bounds``, ``image_specs``) and the benchmark manifest (``manifest``: entries, checks,
the generated docs page and tables; ``tables``: the table renderers).  Scripts import it as
``benchlib`` (their own folder is on ``sys.path``); pytest puts ``benchmarks/`` on
``sys.path`` through ``pythonpath`` in ``pyproject.toml``.  Tests import only this package,
never a benchmark script (``tests/test_benchmark_manifest.py`` checks it)."""
