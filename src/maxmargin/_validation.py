"""The estimator contract: declarative hyper-parameter tables, one random-state helper.

Every estimator lists its hyper-parameters in a class attribute ``_parameter_constraints``
(the name scikit-learn uses) mapping a name to a list of accepted kinds -- any one match
is enough::

    _parameter_constraints = {
        "C": [Interval(float, 0, None, closed="neither")],
        "max_time": [None, Interval(float, 0, None, closed="neither")],
        "solver": [Options("1-slack", "n-slack")],
        "callback": [None, callable],
    }

and :func:`validate_params` checks them all at the start of ``fit``, raising a ValueError
that names the parameter and what it accepts.  Our own small implementation rather than
scikit-learn's private ``sklearn.utils._param_validation``: that module is not public API,
and ours keeps the short messages the command line shows.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = [
    "Interval",
    "Options",
    "add_intercept",
    "as_generator",
    "json_params",
    "store_params",
    "validate_params",
]


def store_params(estimator, values: dict) -> None:
    """Set every constructor parameter of ``estimator`` from ``values`` (the caller's
    ``locals()``), unchanged, as the attribute of its name: scikit-learn's rule for
    ``__init__`` (store the arguments, validate nothing) written once, so an estimator's
    ``__init__`` is its signature and ``store_params(self, locals())``."""
    for name in type(estimator)._get_param_names():
        setattr(estimator, name, values[name])


def add_intercept(X, scale=1.0):
    """``X`` with a constant column ``scale`` appended, so a linear model's last weight is
    its intercept (regularised, as in liblinear): CSR for sparse ``X``, else a C-ordered
    float64 array."""
    if sp.issparse(X):
        col = np.full((X.shape[0], 1), float(scale))
        return sp.hstack([X, sp.csr_matrix(col)], format="csr")
    n, k = X.shape
    out = np.empty((n, k + 1))
    out[:, :k] = X
    out[:, k] = scale
    return out


def check_vector(name, v, n=None, *, empty=True):
    """``v`` as a finite float64 vector (of length ``n`` if given; not empty unless
    ``empty``); ValueError naming ``name`` otherwise."""
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {v.shape}")
    if n is not None and v.shape[0] != n:
        raise ValueError(f"{name} has length {v.shape[0]}, expected {n}")
    if not empty and v.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or inf")
    return v


def file_flag(value, name):
    """A true/false setting read from a model file: JSON's ``true`` / ``false`` only
    (``bool("no")`` would be True); ValueError naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be true or false, got {value!r}")


def check_number(name, value, *, low=None, low_open=True, integer=False, allow_none=False):
    """Raise ValueError unless ``value`` is a finite (integer) number above ``low``
    (used where a value is checked outside ``_parameter_constraints``: the trackers'
    :class:`~maxmargin.apps.tracking.tracker.Sampling` object)."""
    if value is None and allow_none:
        return
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not np.isfinite(value):
        what = "an integer" if integer else "a finite number"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")


@dataclass(frozen=True)
class Interval:
    """A finite number (``int``: an integer) in ``[low, high]`` with ``closed`` ends."""

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"  # "both", "left", "right", "neither"

    def accepts(self, value) -> bool:
        base = numbers.Integral if self.kind is int else numbers.Real
        if isinstance(value, bool) or not isinstance(value, base) or not np.isfinite(value):
            return False
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and (value < self.low if left else value <= self.low):
            return False
        return not (self.high is not None and (value > self.high if right else value >= self.high))

    def describe(self) -> str:
        what = "an integer" if self.kind is int else "a finite number"
        parts = []
        if self.low is not None:
            parts.append(f"{'>=' if self.closed in ('both', 'left') else '>'} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<=' if self.closed in ('both', 'right') else '<'} {self.high:g}")
        return what + (" " + " and ".join(parts) if parts else "")


class Options:
    """One of the given strings."""

    def __init__(self, *values: str) -> None:
        self.values = tuple(values)

    def accepts(self, value) -> bool:
        return isinstance(value, str) and value in self.values

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


def _accepts(rule, value) -> bool:
    if rule is None:
        return value is None
    if rule is callable:
        return callable(value)
    if isinstance(rule, type):
        return isinstance(value, rule)
    return rule.accepts(value)


def _describe(rule) -> str:
    if rule is None:
        return "None"
    if rule is callable:
        return "a callable"
    if isinstance(rule, type):
        return f"a {rule.__name__}"
    return rule.describe()


def validate_params(estimator, names=None, prefix: str = "") -> None:
    """Check every entry of ``estimator._parameter_constraints`` (see module doc), or
    only those ``names``; the error message starts with ``prefix`` (model files)."""
    table = getattr(type(estimator), "_parameter_constraints", {})
    for name, rules in table.items():
        if names is not None and name not in names:
            continue
        value = getattr(estimator, name)
        if not any(_accepts(rule, value) for rule in rules):
            what = " or ".join(_describe(r) for r in rules)
            raise ValueError(f"{prefix}{name} must be {what}, got {value!r}")


def as_generator(random_state) -> np.random.Generator:
    """The one random-state helper: None, an int, a ``RandomState`` or a ``Generator``
    to a NumPy ``Generator`` (a ``RandomState`` is advanced, as scikit-learn does)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31))
    if random_state is None or (
        isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)
    ):
        return np.random.default_rng(random_state)
    raise ValueError(
        f"random_state must be None, an int, a RandomState or a Generator, got {random_state!r}"
    )


def json_params(estimator, drop=("callback",)) -> dict:
    """Constructor parameters in a JSON-safe form for model files.

    Callables and generators cannot be stored: ``drop`` names parameters left out, a
    non-integer ``random_state`` becomes None and a weak-learner instance is stored by its
    class name.
    """
    params = estimator.get_params(deep=False)
    for name in drop:
        params.pop(name, None)
    rs = params.get("random_state")
    if not (rs is None or isinstance(rs, numbers.Integral)):
        params["random_state"] = None
    if "weak_learner" in params and not isinstance(params["weak_learner"], str):
        params["weak_learner"] = type(params["weak_learner"]).__name__
    return params


#: rules shared by many estimators
POSITIVE = Interval(float, 0, None, closed="neither")
NON_NEGATIVE = Interval(float, 0, None, closed="left")
POSITIVE_INT = Interval(int, 1, None, closed="left")
MAX_TIME = [None, POSITIVE]
RANDOM_STATE = [None, numbers.Integral, np.random.RandomState, np.random.Generator]
VERBOSE = [Interval(int, 0, None, closed="left"), bool]
CALLBACK = [None, callable]
#: the parameters of every fit that reports to a ConvergenceMonitor
MONITOR_PARAMS = {"max_time": MAX_TIME, "verbose": VERBOSE, "callback": CALLBACK}


class _NonZeroInt:
    """A non-zero integer (joblib's ``n_jobs``: -1 = all workers, -2 = all but one)."""

    def accepts(self, value) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value != 0

    def describe(self) -> str:
        return "a non-zero integer"


#: ``n_jobs`` as in scikit-learn: None (no joblib at all) or a non-zero integer
N_JOBS = [None, _NonZeroInt()]


def check_group(group, n_samples: int):
    """Validated query ids (1-D, one per sample, no NaN) or None."""
    if group is None:
        return None
    group = np.asarray(group)
    if group.shape != (n_samples,):
        raise ValueError(f"group has shape {group.shape}, expected ({n_samples},)")
    if group.dtype.kind == "f" and not np.all(np.isfinite(group)):
        raise ValueError("group contains NaN or inf: every sample needs a query id")
    if group.dtype.kind == "O" and any(g is None for g in group):
        raise ValueError("group contains None: every sample needs a query id")
    return group


def check_score_group(est, group, n_samples: int):
    """``score(X, y, group)`` of a ranker trained with groups needs the groups too (one
    big query would compare samples of different queries)."""
    group = check_group(group, n_samples)
    if group is None and getattr(est, "grouped_", False):
        raise ValueError(
            "this ranker was trained with group (query ids): pass group= to score too, "
            "or pairs across different queries would be compared"
        )
    return group


# --------------------------------------------------------------------------- files
def contained_path(base, name, *, source=None):
    """The one path-containment check for a file named inside another file (a VOC
    ``<filename>``, ...): ``name`` must be a relative path that stays inside the folder
    ``base`` after resolving ``..`` and symbolic links.  Returns the resolved path;
    raises ``ValueError`` naming ``source`` (the file that named it) otherwise, so a
    hostile annotation cannot make us read ``/etc/passwd`` or ``../../secret.jpg``."""
    from pathlib import Path, PurePath

    where = f"{source}: " if source is not None else ""
    text = str(name)
    if not text or "\x00" in text:
        raise ValueError(f"{where}invalid file name {text!r}")
    pure = PurePath(text)
    if pure.is_absolute() or text.startswith(("/", "\\")) or (len(text) > 1 and text[1] == ":"):
        raise ValueError(
            f"{where}file name {text!r} is an absolute path; it must name a file inside {base}"
        )
    root = Path(base).resolve()
    target = (root / pure).resolve()
    if target != root and root not in target.parents:
        raise ValueError(
            f"{where}file name {text!r} points outside {base}; it must name a file inside it"
        )
    return target


def read_image(path, *, what="image"):
    """An image file as a NumPy array; a file that cannot be decoded raises
    ``ValueError`` naming it (never a bare decoder message)."""
    from pathlib import Path

    import imageio.v3 as iio

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no {what} file {path}")
    try:
        img = np.asarray(iio.imread(path))
    except Exception as exc:  # imageio raises many types for undecodable data
        detail = str(exc).splitlines()[0] if str(exc) else ""
        if "pip install" in detail or len(detail) > 200:
            detail = ""  # a plugin hint is misleading for a damaged file
        detail = f": {type(exc).__name__}" + (f" ({detail})" if detail else "")
        raise ValueError(
            f"{path}: cannot decode the {what}{detail}; the file is truncated, damaged or "
            "not an image -- replace or remove it"
        ) from None
    if img.ndim not in (2, 3) or img.size == 0:
        raise ValueError(f"{path}: not a grey or colour {what} (array shape {img.shape})")
    return img


def check_image_size(shape, expected, path, reference, *, what="image"):
    """Raise ``ValueError`` unless an image of ``shape`` has the (height, width)
    ``expected`` of its siblings (``reference`` names where that size comes from)."""
    got = (int(shape[0]), int(shape[1]))
    want = (int(expected[0]), int(expected[1]))
    if got != want:
        raise ValueError(
            f"{path}: the {what} is {got[1]} x {got[0]} pixels but {reference} is "
            f"{want[1]} x {want[0]}; every {what} must have the same size"
        )
