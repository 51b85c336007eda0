"""The benchmark manifest: every benchmark claim of README.md and docs/ as one entry --
one script, its arguments, one result file (``benchmarks/manifest.toml``).

    python benchmarks/manifest.py list                 # the entries
    python benchmarks/manifest.py run NAME [NAME ...]  # rerun entries (rewrites their results)
    python benchmarks/manifest.py render               # docs/benchmarks.md and the docs' tables
    python benchmarks/manifest.py check                # manifest vs result files vs docs
    python benchmarks/manifest.py check --args         # ... and every entry's arguments parse

``{data}`` in an entry's arguments is ``--data-dir``; ``{cache}`` is ``--cache-dir`` (default
``$MAXMARGIN_BENCH_CACHE``, else ``benchmarks/.cache``, git-ignored), where entries keep what
they build and rebuild when it is missing (graphs, flat boosters) and where an entry with
``ref = "<commit>"`` gets a checkout of that commit (``git worktree add``) whose ``src/`` the
run imports.  ``make bench NAME=<entry>`` is ``run NAME`` then ``render``.  Run timed
entries under the CPU lock on a shared machine
(``flock /tmp/maxmargin-cpu.lock make bench NAME=...``).

``render`` writes docs/benchmarks.md (per entry: the script's docstring as the method, the
command, the provenance block that ``_common.write_result`` stored in the result file, and
the results as tables) and rewrites the generated tables of README.md and docs/*.md --
the blocks ``<!-- table: ENTRY[:ID] -->`` ... ``<!-- /table -->``, whose renderers are in
``benchlib/tables.py``.  The logic is the library module ``benchlib/manifest.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchlib import manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    r = sub.add_parser("run")
    r.add_argument("names", nargs="+")
    r.add_argument("--data-dir", default=str(manifest.DEFAULT_DATA), help="substituted for {data}")
    r.add_argument(
        "--cache-dir",
        default=None,
        help=f"substituted for {{cache}}; default ${manifest.CACHE_ENV} or benchmarks/.cache",
    )
    g = sub.add_parser("render")
    g.add_argument("--out", default=str(manifest.DOC), help="where docs/benchmarks.md goes")
    c = sub.add_parser("check")
    c.add_argument(
        "--args",
        action="store_true",
        help="also run every entry's script up to its argument parsing (--help appended)",
    )
    args = ap.parse_args(argv)
    entries = manifest.load_manifest()
    if args.cmd == "list":
        print("\n".join(manifest.listing(entries)))
    elif args.cmd == "run":
        manifest.run(entries, args.names, args.data_dir, args.cache_dir)
    elif args.cmd == "render":
        Path(args.out).write_text(manifest.render(entries))
        print(f"wrote {args.out}")
        errors: list[str] = []
        for p in manifest.write_pages(entries, errors):
            print(f"rewrote the generated tables of {p.relative_to(manifest.ROOT)}")
        for e in errors:
            print("error:", e, file=sys.stderr)
        return 1 if errors else 0
    else:
        problems = manifest.check(entries)
        if args.args:
            problems += manifest.argument_problems(entries)
        for p in problems:
            print("problem:", p)
        print(f"{len(entries)} entries, {len(problems)} problems")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
