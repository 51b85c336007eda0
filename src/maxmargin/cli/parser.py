"""The argparse parser of the ``maxmargin`` command line.

Every command group is assembled the same way: its module (:mod:`.commands` for fit,
predict, evaluate, info and demo; :mod:`.segment`, :mod:`.track`, :mod:`.detect`) defines
``add_parser(subparsers, parents)`` next to its handlers, and :func:`build_parser` calls
each of them in :data:`COMMAND_GROUPS` order.
"""

from __future__ import annotations

import argparse
import importlib
import math

#: the modules adding subcommands, in the order of ``maxmargin --help``
COMMAND_GROUPS = ("commands", "segment", "track", "detect")


def positive_list(text: str, option: str, convert=float) -> list:
    """The value of an ``a,b,...`` option (``convert``: float or int; empty items are
    skipped): at least one finite positive number, else a ValueError naming ``option``."""
    kind = "integers" if convert is int else "numbers"
    try:
        vals = [convert(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{option} must be {kind} separated by commas, got {text!r}") from None
    if not vals or not all(math.isfinite(v) and v > 0 for v in vals):
        raise ValueError(f"{option} must be positive {kind}, got {text!r}")
    return vals


def _version() -> str:
    from maxmargin import __version__

    return str(__version__)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser for all subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show full tracebacks instead of one-line errors",
    )
    parser = argparse.ArgumentParser(
        prog="maxmargin",
        description="Large-margin structured output learning (StructBoost).",
    )
    # before the subcommand: its own dest (a subcommand's defaults would overwrite "debug")
    parser.add_argument(
        "--debug", dest="debug_top", action="store_true", help="show full tracebacks"
    )
    parser.set_defaults(debug=False)
    parser.add_argument("--version", action="version", version=f"maxmargin {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for group in COMMAND_GROUPS:
        importlib.import_module(f"maxmargin.cli.{group}").add_parser(sub, parents=[common])
    return parser
