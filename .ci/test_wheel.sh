#!/usr/bin/env bash
# Install the built wheel into a clean venv OUTSIDE the source tree and run, from there:
# the package-data check, `maxmargin --version`, the CLI (fit / predict / evaluate / info),
# `maxmargin demo`, and the test suite against the installed package
# (--import-mode=importlib, no src/ on sys.path; tests/test_install.py asserts that the
# package imported is the venv's).
#
# usage: .ci/test_wheel.sh DIST_DIR [PYTEST_ARGS...]
# env:   PYTHON (python3), WHEEL_WORK (default: a fresh mktemp -d under /tmp),
#        WHEEL_TESTS (default: the whole tests/ folder; e.g. "$ROOT/tests/test_cli.py"),
#        NUMBA_* as the caller sets them (CI runs this with the generic target, 1 thread).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIST="$(cd "${1:?usage: $0 DIST_DIR [PYTEST_ARGS...]}" && pwd)"
shift
PYTHON="${PYTHON:-python3}"
WORK="${WHEEL_WORK:-$(mktemp -d /tmp/maxmargin-wheel.XXXXXX)}"
case "$WORK/" in "$ROOT"/*) echo "WHEEL_WORK must be outside $ROOT" >&2; exit 2 ;; esac

shopt -s nullglob
wheels=("$DIST"/maxmargin-*.whl)
sdists=("$DIST"/maxmargin-*.tar.gz)
[ ${#wheels[@]} -eq 1 ] || { echo "expected one wheel in $DIST, found ${#wheels[@]}" >&2; exit 1; }
[ ${#sdists[@]} -eq 1 ] || { echo "expected one sdist in $DIST, found ${#sdists[@]}" >&2; exit 1; }
WHEEL="${wheels[0]}"
echo "== wheel: $WHEEL; work dir: $WORK"

# package data: py.typed and the CLI entry point must be in the wheel
"$PYTHON" - "$WHEEL" <<'EOF'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = ["maxmargin/py.typed", "maxmargin/__init__.py", "maxmargin/cli/__main__.py"]
missing = [n for n in need if n not in names]
ep = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
if missing or not ep:
    sys.exit(f"wheel lacks {missing or 'entry_points.txt'}")
print(f"wheel holds {len(names)} files, py.typed and entry points included")
EOF

rm -rf "$WORK/venv"
"$PYTHON" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
"$VPY" -m pip install --quiet --upgrade pip
"$VPY" -m pip install --quiet "${WHEEL}[dev]"

# a numba cache of its own (numba keys entries on CPU name and features, but a separate
# directory makes "compiled from nothing" true for this run too)
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$WORK/numba-cache}"
cd "$WORK"   # nothing of the source tree is importable from here
unset PYTHONPATH
SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$VPY" - "$SITE" <<'EOF'
import sys
import maxmargin
where = maxmargin.__file__
if not where.startswith(sys.argv[1]):
    sys.exit(f"maxmargin imported from {where}, not from the venv's {sys.argv[1]}")
print(f"maxmargin {maxmargin.__version__} imported from {where}")
EOF

MM="$WORK/venv/bin/maxmargin"
"$MM" --version

# the CLI on a small file it did not make itself: digits as svmlight (train / test)
"$VPY" - <<'EOF'
from sklearn.datasets import dump_svmlight_file, load_digits
X, y = load_digits(return_X_y=True)
dump_svmlight_file(X[:600], y[:600], "train.svm")
dump_svmlight_file(X[600:900], y[600:900], "test.svm")
EOF
"$MM" fit train.svm -o model.npz --max-iter 20 --quiet
"$MM" predict model.npz test.svm -o predictions.txt
[ "$(wc -l < predictions.txt)" -eq 300 ] || { echo "predict wrote the wrong number of lines" >&2; exit 1; }
"$MM" evaluate model.npz test.svm --json > evaluate.json
"$MM" info model.npz > /dev/null
echo "CLI fit / predict / evaluate / info: ok ($(head -c 200 evaluate.json | tr -d '\n'))"

"$MM" demo --out "$WORK/demo" --quiet
[ -s "$WORK/demo/structboost_convergence.png" ] || { echo "demo wrote no plot" >&2; exit 1; }

# the suite against the installed package
MAXMARGIN_EXPECT_INSTALLED="$SITE" "$VPY" -m pytest -p no:cacheprovider \
    --import-mode=importlib --rootdir "$ROOT" -c "$ROOT/pyproject.toml" "$@" ${WHEEL_TESTS:-"$ROOT/tests"}
