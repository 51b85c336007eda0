"""A quiet HiGHS instance.

highspy 1.16 prints a copyright banner on stdout when the first ``Highs`` object of a
process is constructed, before any option can switch output off; on the command line
that would corrupt ``--json`` output and piped predictions.  :func:`new_highs` builds
the first instance with file descriptor 1 pointed at ``/dev/null`` (the banner is
written by C++ code, so redirecting ``sys.stdout`` is not enough) and returns every
instance with ``output_flag`` off and one thread.

``threads`` is a per-process setting in HiGHS: its task scheduler is created by the first
run with that run's thread count, and a later instance asking for another count fails
(its run returns an error status).  A QP solved with the default count before an LP
that asks for one thread made the LP fail as "numerical" (an order-dependent test
failure), so every instance here asks for the same one thread.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

import highspy

_lock = threading.Lock()
_banner_swallowed = False


def _flush_c_stdio() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no libc symbol table (unusual platforms)
        pass


def new_highs() -> highspy.Highs:
    """A ``highspy.Highs`` with logging off, the banner of the first one swallowed."""
    global _banner_swallowed
    with _lock:
        if _banner_swallowed:
            h = highspy.Highs()
        else:
            sys.stdout.flush()
            saved = os.dup(1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, 1)
                h = highspy.Highs()
                _flush_c_stdio()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
                os.close(devnull)
            _banner_swallowed = True
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    return h
