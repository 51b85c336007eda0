"""Hyper-parameter checks shared by the estimators: clear ValueErrors naming the parameter."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_number", "json_params"]


def check_number(name, value, *, low=None, low_open=True, integer=False, allow_none=False):
    """Raise ValueError unless ``value`` is a finite (integer) number above ``low``."""
    if value is None and allow_none:
        return
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not np.isfinite(value):
        what = "an integer" if integer else "a finite number"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")


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
