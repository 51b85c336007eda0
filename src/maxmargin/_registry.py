"""The one registry of public estimators: ``@register`` on a class is the only place
where an estimator is announced.  Model files (:mod:`maxmargin.io`), the command line
(:mod:`maxmargin.cli`) and the common contract tests (``tests/test_common.py``) read it.

The registry sits below every other layer and imports nothing of the package at import
time.  A look-up that misses imports the packages that define the built-in estimators
(:data:`PROVIDERS`, in layer order, stopping at the first that registers the name), so a
model file of a learner never imports the applications.
"""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

__all__ = ["PROVIDERS", "estimators", "lookup", "name_of", "register"]

T = TypeVar("T", bound=type)

#: packages whose modules decorate the built-in estimators with :func:`register`
PROVIDERS = (
    "maxmargin.learners",
    "maxmargin.apps.segmentation",
    "maxmargin.apps.detection",
    "maxmargin.apps.tracking",
)

_REGISTRY: dict[str, type] = {}


def register(name: Any = None) -> Any:
    """Class decorator: register an estimator under ``name`` (default: its ``__name__``).

    Usable as ``@register`` or ``@register("Name")``.  Registering another class under a
    taken name is an error; registering the same class again is a no-op.
    """

    def decorate(klass: T) -> T:
        key = label or klass.__name__
        other = _REGISTRY.get(key)
        if other is not None and other is not klass:
            raise ValueError(f"estimator name {key!r} is already registered to {other!r}")
        _REGISTRY[key] = klass
        return klass

    if isinstance(name, type):  # bare @register
        label = None
        return decorate(name)
    label = name
    return decorate


def _import_providers(until: str | None = None) -> None:
    for package in PROVIDERS:
        if until is not None and until in _REGISTRY:
            return
        importlib.import_module(package)


def lookup(name: str) -> type:
    """The class registered as ``name``; ``KeyError`` if no estimator has that name."""
    if name not in _REGISTRY:
        _import_providers(until=name)
    return _REGISTRY[name]


def estimators() -> dict[str, type]:
    """Every registered estimator by name (the built-in ones imported first)."""
    _import_providers()
    return dict(sorted(_REGISTRY.items()))


def name_of(klass: type) -> str | None:
    """The name ``klass`` is registered under, or None."""
    for key, value in _REGISTRY.items():
        if value is klass:
            return key
    return None
