"""Hyper-parameter checks shared by the estimators: clear ValueErrors naming the parameter."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_number"]


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
