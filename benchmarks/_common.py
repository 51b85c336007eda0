"""Shared helpers of the benchmark scripts: data loading and results with provenance.

Every result file written through :func:`write_result` records the command line, the git
commit (and whether the tree had uncommitted changes), the versions of the packages that
matter, and the machine (CPU model, cores, memory), next to the numbers.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

ROOT = Path(__file__).resolve().parents[1]
#: the real data sets: ``$MAXMARGIN_DATA`` (``manifest.py run --data-dir`` sets it, so a
#: script's own data defaults follow it too), else ``../shared/data`` beside the checkout
DEFAULT_DATA = Path(os.environ.get("MAXMARGIN_DATA") or ROOT.parent / "shared" / "data")
PACKAGES = (
    "maxmargin",
    "numpy",
    "scipy",
    "scikit-learn",
    "numba",
    "highspy",
    "lightgbm",
    "threadpoolctl",
    # what decodes images and compiles kernels (fifteenth session: results of chaotic
    # loops did not reproduce across hosts with the packages above equal)
    "llvmlite",
    "pillow",
    "imageio",
    "scikit-image",
    "PyMaxflow",
    "joblib",
)

#: multi-class LIBSVM sets: (train files..., ), n_features; "pooled" joins all files
MULTICLASS = {
    "glass": (["glass/glass.scale"], None),
    "svmguide2": (["svmguide2/svmguide2"], None),
    "svmguide4": (["svmguide4/svmguide4", "svmguide4/svmguide4.t"], 10),
    "dna": (["dna/dna.scale", "dna/dna.scale.t"], 180),
    "segment": (["segment/segment.scale"], None),
    "satimage": (["satimage/satimage.scale", "satimage/satimage.scale.t"], 36),
    "usps": (["usps/usps.t.bz2"], 256),
    "pendigits": (["pendigits/pendigits.scale", "pendigits/pendigits.scale.t"], 16),
    "mnist1000": (["mnist_subset/mnist1000.scale"], 784),
    "wine": (["wine/wine.scale"], None),
    # LIBSVM's vowel.scale: the Deterding training file (528 rows) scaled to [-1, 1];
    # "vowel" below is the CSV train + test split with raw features
    "vowel_scale": (["vowel/vowel.scale"], 10),
}


def load_multiclass(data_dir: Path, name: str, split: str = "pooled"):
    """``split="pooled"``: all rows (X, y).  ``split="official"``: (Xtr, ytr, Xte, yte)
    from the set's own train / test files (only where it has two files)."""
    mc = Path(data_dir) / "multiclass"
    if name == "vowel":  # the Deterding split as CSV (raw features)
        parts = []
        for f in ("vowel/vowel.train", "vowel/vowel.test"):
            raw = np.genfromtxt(mc / f, delimiter=",", skip_header=1)
            parts.append((raw[:, 2:], raw[:, 1]))
    else:
        files, d = MULTICLASS[name]
        parts = []
        for f in files:
            X, y = load_svmlight_file(str(mc / f), n_features=d)
            parts.append((X.toarray(), y))
        if d is None and len(parts) > 1:
            raise ValueError(f"{name}: give n_features to join several files")
    if split == "official":
        if len(parts) != 2:
            raise ValueError(f"{name} has no official train/test split here")
        (Xtr, ytr), (Xte, yte) = parts
        return Xtr, ytr, Xte, yte
    return np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def synthetic26():
    """The issue-28 stand-in for a 26-class problem: (X, y), 20,000 rows, 16 features."""
    from sklearn.datasets import make_classification

    return make_classification(
        n_samples=20000,
        n_features=16,
        n_informative=12,
        n_redundant=0,
        n_classes=26,
        n_clusters_per_class=1,
        random_state=0,
    )


def load_digits_split(seed: int = 0):
    """scikit-learn's digits, the 70/30 stratified split of ``make demo``:
    (Xtr, ytr, Xte, yte)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    return Xtr, ytr, Xte, yte


def warm_up(model, X, y, n: int = 600):
    """Fit ``model`` -- a fresh estimator of the configuration about to be timed -- for at
    most 2 iterations on at most ``n`` rows (the first rows of every class), so numba's
    kernels are compiled, or loaded from the on-disk cache, before anything is timed (the
    first call of a kernel compiles it; that is not the fit's cost).  600 rows: enough
    distinct values per feature (> 256) for the exact stump's sorted-walk kernel to run
    too.  Returns the model."""
    y = np.asarray(y)
    classes = np.unique(y)
    per = max(1, n // len(classes))
    idx = np.sort(np.concatenate([np.flatnonzero(y == c)[:per] for c in classes]))
    if "max_iter" in model.get_params():
        model.set_params(max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X[idx], y[idx])
    return model


def _script_path() -> str:
    """The running script as a path relative to the checkout when it lies inside it (so a
    command recorded from any clone reads ``benchmarks/bench_x.py``, not that clone's path)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("?")
    try:
        return str(script.resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return str(script)


def provenance() -> dict:
    """Command, commit, package versions and machine of this run."""

    def git(*args):
        try:
            return subprocess.run(
                ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
            ).stdout.strip()
        except OSError:
            return ""

    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = None
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    # the target numba compiles for: a fastmath reduction's last bits (and so a chaotic
    # loop's path: the self-labelled tracker, hard-negative mining) depend on it, so two
    # machines reporting the same "AMD EPYC" can give different results
    try:
        import llvmlite.binding as llvm
        from numba.core import config as numba_config

        features = llvm.get_host_cpu_features()
        numba_target = {
            "cpu_name": numba_config.CPU_NAME or llvm.get_host_cpu_name(),
            "cpu_features": (
                numba_config.CPU_FEATURES
                if numba_config.CPU_FEATURES is not None
                else ",".join(sorted(k for k, v in features.items() if v))
            ),
            "num_threads": numba_config.NUMBA_NUM_THREADS,
        }
    except Exception as exc:
        numba_target = {"error": f"{type(exc).__name__}: {exc}"}
    # the BLAS kernels numpy / scipy dispatched to (OpenBLAS picks them per CPU type: a
    # matrix product's summation order, so its last bits, follow the "architecture")
    try:
        import numpy  # noqa: F401 - loads numpy's BLAS so threadpoolctl sees it
        import scipy.linalg  # noqa: F401 - and scipy's
        from threadpoolctl import threadpool_info

        blas = [
            {k: i.get(k) for k in ("internal_api", "version", "architecture", "prefix")}
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
    except Exception as exc:
        blas = [{"error": f"{type(exc).__name__}: {exc}"}]
    # numpy's own SIMD dispatch (its exp / log / sums pick AVX-512 kernels where the CPU
    # has them: a host with X86_V4 and one without round differently in the last bits)
    try:
        from numpy._core import _multiarray_umath as umath

        feats = umath.__cpu_features__
        numpy_simd = {
            "baseline": list(umath.__cpu_baseline__),
            "dispatched": [t for t in umath.__cpu_dispatch__ if feats.get(t)],
        }
    except Exception as exc:
        numpy_simd = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        mem = None
    out = {
        "command": " ".join([Path(sys.executable).name, _script_path(), *sys.argv[1:]]),
        "commit": git("rev-parse", "--short", "HEAD"),
        # uncommitted changes to what a run executes (the package, the benchmark scripts and
        # their library, the build configuration); the outputs runs write (result files,
        # plots) and the prose (docs, tests) do not count, so a checkout that has already
        # run an entry, or whose docs are being edited, stays clean
        "dirty": bool(
            git(
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "src",
                "benchmarks",
                "pyproject.toml",
                ":!benchmarks/results",
            )
        ),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "python": platform.python_version(),
        "packages": versions,
        "machine": {
            "cpu": cpu,
            "cores": os.cpu_count(),
            "memory_gib": None if mem is None else round(mem, 1),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "platform": platform.platform(),
            "numba_target": numba_target,
            "blas": blas,
            "numpy_simd": numpy_simd,
        },
    }
    ref = os.environ.get("MAXMARGIN_BENCH_REF")
    if ref:
        # the manifest ran this checkout's script against the library of commit ``ref``
        import maxmargin

        out["library_ref"] = ref
        out["library_path"] = _relative(Path(maxmargin.__file__).parents[2])
    return out


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return str(path)


def run_sections(sections, runners: dict, res: dict) -> dict:
    """Run ``runners[name]()`` for each name in ``sections`` into ``res[name]``, each
    result with the load average before / after and its seconds (the machine is shared);
    an unknown name exits with an error."""
    for sec in sections:
        if sec not in runners:
            raise SystemExit(f"unknown section {sec} (known: {', '.join(runners)})")
        before = os.getloadavg()
        t = time.perf_counter()
        out = runners[sec]()
        res[sec] = {
            **out,
            "loadavg_before": before,
            "loadavg_after": os.getloadavg(),
            "section_seconds": time.perf_counter() - t,
        }
        print(sec, res[sec], flush=True)
    return res


def write_result(path, payload: dict) -> Path:
    """Write ``payload`` with a ``provenance`` block as indented JSON; returns the path."""
    path = Path(path)
    if not path.is_absolute():
        path = ROOT / path
    path.parent.mkdir(parents=True, exist_ok=True)
    out = {"provenance": provenance(), **payload}
    path.write_text(json.dumps(out, indent=1, default=_jsonable) + "\n")
    return path


def read_result(path) -> dict:
    """A result file's payload without its ``provenance`` block ({} if there is no file),
    for scripts that merge the results of several invocations into one file."""
    path = Path(path)
    if not path.is_absolute():
        path = ROOT / path
    if not path.exists():
        return {}
    out = json.loads(path.read_text())
    out.pop("provenance", None)
    return out


def _jsonable(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")
