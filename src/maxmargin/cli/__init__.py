"""The ``maxmargin`` command line: fit, predict, evaluate and a self-contained demo.

``fit`` trains a :class:`~maxmargin.StructBoostClassifier`; ``fit --rank`` trains a
:class:`~maxmargin.StructBoostRanker` instead (AUC maximisation, ordinal regression,
learning to rank) on relevance grades, with the queries taken from the ``qid:``
tokens of an svmlight / SVM-light / svm_rank file (``2 qid:1 1:0.5 3:0.1``); a file
without qid (or a CSV file) is one query.  ``predict`` writes labels for a
classifier and scores for a ranker; ``evaluate`` reports accuracy and the
confusion matrix for a classifier, and pairwise accuracy, AUC (binary labels),
NDCG@10 and MAP, averaged over the queries, for a ranker::

    maxmargin fit --rank train.txt -o ranker.mm --max-iter 50
    maxmargin predict ranker.mm test.txt > scores.txt
    maxmargin evaluate ranker.mm test.txt

Human-readable output goes through rich (tables on stdout, a live progress
display on stderr); ``--json`` switches every command to one machine-readable
JSON document on stdout.  Bad input (missing files, unparsable data, corrupt
models, invalid parameters) is reported as ``error: <message>`` with exit
status 2 and no traceback; ``--debug`` re-raises instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from maxmargin.cli.output import EXIT_FAILURE, EXIT_USAGE, describe, error
from maxmargin.cli.parser import build_parser

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``maxmargin`` script; returns the process exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    # --debug before the subcommand (debug_top) or after it (debug)
    args.debug = bool(getattr(args, "debug", False) or getattr(args, "debug_top", False))
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        from maxmargin.cli.output import model_key

        model_key()  # an empty $MAXMARGIN_MODEL_KEY is an error, as key="" is in the API
        return handler(args)
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except (ValueError, OSError) as exc:
        if args.debug:
            raise
        error(describe(exc))
        return EXIT_USAGE
    except Exception as exc:
        if args.debug:
            raise
        error(f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for a traceback)")
        return EXIT_FAILURE
