# Every target does its own set-up on a fresh machine: create .venv, install the package, then run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
DOCS_STAMP := $(VENV)/.docs-stamp
JOBS ?= 2
# the portability run: numba's generic x86-64 target (no host-specific instructions; numba
# then defaults NUMBA_CPU_FEATURES to empty) with one numba thread, and its own numba cache
GENERIC_ENV := NUMBA_CPU_NAME=generic NUMBA_CPU_FEATURES= NUMBA_NUM_THREADS=1

.PHONY: test test-slow test-generic wheel test-wheel docs demo lint bench bench-list clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,bench]"
	touch $(STAMP)

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[dev,bench,docs]"
	touch $(DOCS_STAMP)

# host CPU target, numba's default thread count (the machine's cores); the tests marked
# slow (end-to-end runs of several minutes) are `make test-slow`, which CI runs too; the 25
# slowest tests are listed at the end, so a test that outgrows the 10-minute budget is seen
test: $(STAMP)
	$(PY) -m pytest -q -n $(JOBS) -m "not slow" --durations=25

test-slow: $(STAMP)
	$(PY) -m pytest -q -n $(JOBS) -m slow

# generic target, 1 numba thread, in the source tree (CI runs this combination on the wheel)
test-generic: $(STAMP)
	$(GENERIC_ENV) NUMBA_CACHE_DIR=$(CURDIR)/build/numba-cache-generic \
		$(PY) -m pytest -q -n $(JOBS) -m "not slow"

wheel: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist

# the wheel in a clean venv outside the tree: CLI, demo and the suite against it, run with
# the generic target and 1 numba thread (see .ci/run for why this combination)
test-wheel: wheel
	$(GENERIC_ENV) PYTHON=$(PYTHON) bash .ci/test_wheel.sh dist -q -n $(JOBS) -m "not slow"

# the documentation site, offline, warnings are errors; gallery examples run during the build
docs: $(DOCS_STAMP)
	rm -rf build/docs docs/auto_examples docs/api/generated docs/sg_execution_times.rst
	$(VENV)/bin/sphinx-build -W --keep-going -b html -j 1 docs build/docs/html
	@echo "site: build/docs/html/index.html"

demo: $(STAMP)
	$(VENV)/bin/maxmargin demo --out build/demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks docs/conf.py docs/examples
	$(VENV)/bin/ruff format --check src tests benchmarks docs/conf.py docs/examples

# make bench NAME=<entry> reruns one entry of benchmarks/manifest.toml (its script, its
# arguments, its result file) and regenerates docs/benchmarks.md and the generated tables of
# README.md and docs/*.md (<!-- table: ... --> blocks); make bench-list lists them
bench: $(STAMP)
	@test -n "$(NAME)" || { echo "usage: make bench NAME=<entry>  (make bench-list)"; exit 2; }
	$(PY) benchmarks/manifest.py run $(NAME)
	$(PY) benchmarks/manifest.py render

bench-list: $(STAMP)
	$(PY) benchmarks/manifest.py list

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache docs/auto_examples docs/api/generated
