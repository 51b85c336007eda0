"""The tables of the docs pages, generated from the benchmark result files.

A docs page (README.md, docs/*.md) marks a generated table with

    <!-- table: ENTRY[:ID] -->
    ... (generated: do not edit) ...
    <!-- /table -->

where ENTRY is an entry of ``benchmarks/manifest.toml`` and ``ENTRY:ID`` a key of
:data:`TABLES`.  ``python benchmarks/manifest.py render`` rewrites every block from the
entry's result file; ``tests/test_benchmark_manifest.py`` fails when a block is stale.
docs/benchmarks.md shows the same tables in the entry's section.

A renderer is ``fn(data, load) -> list[str]``: ``data`` is the entry's result JSON (with its
``provenance``), ``load(name)`` the result JSON of another entry (for tables that join two
runs); it returns the markdown lines of the table (and of any line under it).  Renderers
read only what the result file holds -- no hand-typed measurement.  Constants from the
papers (the published figures a table compares against) are the one exception; they are
stated here with their source.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Renderer = Callable[[dict, Callable[[str], dict]], list[str]]
TABLES: dict[str, Renderer] = {}


def table(key: str):
    """Register a renderer under ``ENTRY`` or ``ENTRY:ID``."""

    def deco(fn: Renderer) -> Renderer:
        if key in TABLES:
            raise ValueError(f"table {key!r} registered twice")
        TABLES[key] = fn
        return fn

    return deco


# ``manifest:ID`` tables are about every entry at once: their renderer gets
# ``{entry: result JSON or None}`` for the whole manifest instead of one result.
WHOLE = "manifest"


def entry_of(key: str) -> str:
    return key.split(":", 1)[0]


def for_entry(name: str) -> list[str]:
    """The table keys of manifest entry ``name``."""
    return [k for k in TABLES if entry_of(k) == name]


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _head(cols) -> list[str]:
    return [_row(cols), "|" + "---|" * len(cols)]


def _pct(x: float, digits: int = 2) -> str:
    return f"{100 * x:.{digits}f} %"


# ----------------------------------------------------------------------------- StructBoost


@table("fit_vs_lightgbm")
def fit_vs_lightgbm(data, _load):
    """One row per data set and iteration count (bench_fit_vs_lightgbm.py's own table)."""
    out = _head(
        [
            "data",
            "weak:master:certify",
            "iters",
            "SB fit s (weak / master / certificate)",
            "SB stumps",
            "objective (gap)",
            "LightGBM fit s (rounds)",
            "ratio",
            "time vs previous iters",
            "test error SB / LightGBM",
        ]
    )
    for r in data["rows"]:
        sb, lg = r["structboost"], r["lightgbm"]
        dbl = "" if r.get("doubling") is None else f"{r['doubling']:.2f}x"
        out.append(
            _row(
                [
                    r["data"],
                    f"{r['weak_learner']}:{r['master']}:{r['certify']}",
                    r["max_iter"],
                    f"{sb['fit_s']:.2f} ({sb['t_weak']:.2f} / {sb['t_master']:.2f} / "
                    f"{sb['t_polish']:.2f})",
                    sb["n_stumps"],
                    f"{sb['objective']:.3f} ({sb['gap']:.0e})",
                    f"{lg['fit_s']:.3f} ({lg['rounds']})",
                    f"{r['time_ratio']:.0f}x",
                    dbl,
                    f"{sb['test_error']:.4f} / {lg['test_error']:.4f}",
                ]
            )
        )
    return out


def _frontier_point(rows, label):
    return next((r for r in rows if r.get("label") == label and "depth" in r), None)


@table("frontier")
def frontier(data, _load):
    """Per set: LightGBM's default, the best StructBoost trees within 10x its fit time (and
    at any time, when better), StructBoost stumps at the smallest iteration count, and
    whether issue 28's goal (within 1 pp of LightGBM-default error at <= 10x its time) is
    met."""
    out = _head(
        [
            "set (train rows x classes)",
            "LightGBM default: error, fit",
            "best StructBoost trees within 10x that time",
            "StructBoost stumps",
            "goal",
        ]
    )
    for name, s in data["sets"].items():
        g, rows = s["goal"], s["rows"]
        lg_s = g["lightgbm_default_s"]

        def point(best, rows=rows, lg_s=lg_s):
            if not best:
                return "-"
            text = f"{_pct(best['test_error'])} in {best['fit_s']:.1f} s ({best['label']}"
            r = _frontier_point(rows, best["label"])
            if r is not None and r.get("n_iter", r["iters"]) < r["iters"]:
                text += f"; stopped at {r['n_iter']} of {r['iters']} it, gap {r['gap']:.2f}"
            return text + f"; {best['fit_s'] / lg_s:.1f}x)"

        best = point(g.get("best_trees_within_10x"))
        anytime = g.get("best_trees_any_time")
        if anytime and anytime != g.get("best_trees_within_10x"):
            best += "; any time: " + point(anytime)
        stumps = [r for r in rows if r.get("method") == "StructBoost stumps"]
        st = min(stumps, key=lambda r: r["iters"]) if stumps else None
        st_text = (
            f"{_pct(st['test_error'])} in {st['fit_s']:.1f} s ({st['iters']} it)" if st else "-"
        )
        out.append(
            _row(
                [
                    f"{name} ({s['n_train']} x {s['classes']})",
                    f"{_pct(g['lightgbm_default_error'])}, {lg_s:.1f} s",
                    best,
                    st_text,
                    "met" if g["met"] else "not met",
                ]
            )
        )
    return out


@table("frontier:headline")
def frontier_headline(data, _load):
    """README's figures of the frontier: stumps' error over LightGBM-default's, and the sets
    where depth-3 trees meet issue 28's goal, with their time over LightGBM-default's."""
    ratios, met, unmet = [], [], []
    for name, s in data["sets"].items():
        g = s["goal"]
        lg = g["lightgbm_default_error"]
        ratios += [
            r["test_error"] / lg for r in s["rows"] if r.get("method") == "StructBoost stumps"
        ]
        best = g.get("best_trees_within_10x")
        if g["met"]:
            met.append(f"{name} {best['fit_s'] / g['lightgbm_default_s']:.1f}x")
        else:
            err = f"{_pct(best['test_error'], 1)}" if best else "no fit within 10x"
            unmet.append(f"{name} ({err} against {_pct(lg, 1)})")
    iters = sorted({r["iters"] for s in data["sets"].values() for r in s["rows"] if "depth" in r})
    used = sorted(  # the depths of the trees that meet the goal (the grid may be merged)
        {
            int(g["best_trees_within_10x"]["label"].split(",")[0].split()[-1])
            for g in (s["goal"] for s in data["sets"].values())
            if g["met"] and g["best_trees_within_10x"]["label"].startswith("depth")
        }
    )
    depths = " or ".join(str(d) for d in used or [d for d in data["grid"]["depths"] if d])
    out = [
        f"- With stumps ({iters[0]}-{iters[-1]} iterations) StructBoost's test error is "
        f"{min(ratios):.2f}-{max(ratios):.1f}x LightGBM-default's.",
        f"- With histogram trees per class (depth {depths}) it is within 1 percentage point "
        f"of LightGBM-default "
        f"test error at no more than 10x its fit time on {len(met)} of {len(data['sets'])} "
        f"sets (fit time over LightGBM-default's: {', '.join(met)})"
        + (f"; not on {', '.join(unmet)}." if unmet else "."),
    ]
    return out


@table("fit_vs_lightgbm:headline")
def fit_vs_lightgbm_headline(data, _load):
    """README's figures of the equal-stump comparison: the time ratio range and where
    StructBoost's test error is not lower than LightGBM's."""
    rows = data["rows"]
    ratio = [r["time_ratio"] for r in rows]
    iters = sorted({r["max_iter"] for r in rows})
    worse = [
        f"{r['data']} at {r['max_iter']}"
        for r in rows
        if r["structboost"]["test_error"] >= r["lightgbm"]["test_error"]
    ]
    big = max(rows, key=lambda r: r["structboost"]["fit_s"])
    sets = list(dict.fromkeys(r["data"] for r in rows))
    threads = data.get("threads", 1)
    return [
        f"- At equal stumps (C = {data['C']:g}, {threads} thread{'s' * (threads != 1)} each, "
        f"{iters[0]}-{iters[-1]} iterations, {len(sets)} sets) a StructBoost fit costs "
        f"{min(ratio):.0f}-{max(ratio):.0f}x LightGBM's time (the largest: {big['data']}, "
        f"{big['max_iter']} iterations, {big['structboost']['fit_s']:.1f} s against "
        f"{big['lightgbm']['fit_s']:.2f} s); its test error is lower than LightGBM's in "
        f"{len(rows) - len(worse)} of {len(rows)} fits"
        + (f" (not: {', '.join(worse)})." if worse else "."),
    ]


@table("tree_search")
def tree_search(data, _load):
    """Seconds of one tree search at each depth: ours per class, ours joint, LightGBM's
    round of K trees, and the ratio of ours per class to LightGBM's round."""
    out = _head(
        [
            "data (n x d, K)",
            "depth",
            "ours, one tree per class",
            "ours, joint",
            "LightGBM round (K trees)",
            "ratio per class / LightGBM",
        ]
    )
    last = None
    for r in data["rows"]:
        label = f"{r['data']} ({r['n']} x {r['d']}, K = {r['classes']})"
        out.append(
            _row(
                [
                    label if label != last else "",
                    r["depth"],
                    f"{1e3 * r['ours_per_slot_s']:.1f} ms",
                    f"{1e3 * r['ours_joint_s']:.1f} ms",
                    f"{1e3 * r['lightgbm_round_s']:.1f} ms",
                    f"{r['ratio_vs_round']:.2f}",
                ]
            )
        )
        last = label
    return out


# StructBoost-stump test error (%, mean and std) of [Shen2014] Table 2 (C. Shen, G. Lin,
# A. van den Hengel, "StructBoost: Boosting methods for predicting structured output
# variables", IEEE TPAMI 2014): the published column the benchmark compares against.
PAPER_TABLE2 = {
    "glass": (35.8, 6.2),
    "svmguide2": (21.0, 3.9),
    "svmguide4": (20.1, 2.9),
    "vowel": (17.5, 2.2),
    "dna": (6.2, 0.7),
    "segment": (2.9, 0.7),
    "satimage": (12.1, 0.7),
    "usps": (6.9, 0.6),
    "pendigits": (3.9, 0.4),
    "mnist1000": (12.5, 0.4),
}


@table("multiclass_table2")
def multiclass_table2(data, _load):
    """Test error (%, mean +- std over the splits) per method, beside the paper's."""
    methods = [
        "structboost",
        "lightgbm_same_stumps",
        "histgb_same_stumps",
        "lightgbm_T_rounds",
        "histgb_T_rounds",
    ]
    out = _head(
        [
            "data",
            "n",
            "K",
            "splits",
            "paper StructBoost-stump",
            *methods,
            "fit s (StructBoost / LightGBM same stumps)",
        ]
    )
    for name, d in data["datasets"].items():
        cells = []
        for m in methods:
            e = 100 * np.array([r[m]["test_error"] for r in d["runs"]])
            cells.append(f"{e.mean():.1f} ± {e.std():.1f}")
        tsb = np.mean([r["structboost"]["fit_s"] for r in d["runs"]])
        tlg = np.mean([r["lightgbm_same_stumps"]["fit_s"] for r in d["runs"]])
        p = PAPER_TABLE2.get(name)
        out.append(
            _row(
                [
                    name,
                    d["n"],
                    d["K"],
                    len(d["runs"]),
                    f"{p[0]} ± {p[1]}" if p else "-",
                    *cells,
                    f"{tsb:.1f} / {tlg:.2f}",
                ]
            )
        )
    return out


# ----------------------------------------------------------------------------- SSVM


@table("ssvm_one_slack")
def ssvm_one_slack(data, _load):
    """Per pixel scale and C: both solvers' time, iterations, objective and gap."""
    out = _head(
        [
            "pixels",
            "C",
            "n-slack: s (iterations)",
            "1-slack: s (iterations)",
            "1-slack / n-slack time",
            "objective n-slack / 1-slack",
            "relative gap n-slack / 1-slack",
            "test accuracy n-slack / 1-slack",
        ]
    )
    groups: dict[tuple, dict] = {}
    for r in data["rows"]:
        groups.setdefault((r["scale"], r["C"]), {})[r["solver"]] = r
    for (scale, C), g in groups.items():
        n, o = g["n-slack"], g["1-slack"]
        pixels = "raw (0-16)" if scale == 1 else f"divided by {scale:g}"
        out.append(
            _row(
                [
                    pixels,
                    f"{C:g}",
                    f"{n['fit_s']:.2f} ({n['n_iter']})",
                    f"{o['fit_s']:.2f} ({o['n_iter']})",
                    f"{o['fit_s'] / n['fit_s']:.2f}x",
                    f"{n['objective']:.4f} / {o['objective']:.4f}",
                    f"{n['gap']:.1e} / {o['gap']:.1e}",
                    f"{n['test_accuracy']:.4f} / {o['test_accuracy']:.4f}",
                ]
            )
        )
    return out


# ----------------------------------------------------------------------------- tracking


def _tracking_cell(s: dict) -> str:
    if len(s.get("seeds", [0])) > 1:
        return (
            f"{s['success_auc_mean']:.3f} ± {s['success_auc_std']:.3f} / "
            f"{s['overlap_mean']:.3f} [{s['overlap_min']:.2f}-{s['overlap_max']:.2f}] / "
            f"{s['precision_20_mean']:.2f} / {s['centre_error_mean']:.1f}"
        )
    return (
        f"{s['success_auc_mean']:.3f} / {s['overlap_mean']:.3f} / "
        f"{s['precision_20_mean']:.2f} / {s['centre_error_mean']:.1f}"
    )


@table("tracking:one_frame")
def tracking_one_frame(data, load):
    """tracking.json joined with tracking_ssvm.json: per tracker and sequence, success AUC
    (+- std over seeds) / mean overlap [min-max over seeds] / precision@20 / centre error."""
    summary = list(data["summary"])
    try:
        summary += load("tracking_ssvm")["summary"]
    except KeyError:
        pass
    summary = [s for s in summary if s["sequence"] != "mean"]  # the script's own mean rows
    seqs = list(dict.fromkeys(s["sequence"] for s in summary))
    trackers = list(dict.fromkeys(s["tracker"] for s in summary))
    out = _head(
        [
            "tracker (1 labelled frame)",
            *seqs,
            "mean AUC",
            "mean overlap",
            "largest seed std (AUC)",
            f"fps / CPU fps ({seqs[0]})",
        ]
    )
    for t in trackers:
        by = {s["sequence"]: s for s in summary if s["tracker"] == t}
        cells = [_tracking_cell(by[q]) if q in by else "-" for q in seqs]
        rows = [by[q] for q in seqs if q in by]
        first = by.get(seqs[0])
        out.append(
            _row(
                [
                    t,
                    *cells,
                    f"{np.mean([s['success_auc_mean'] for s in rows]):.3f}",
                    f"{np.mean([s['overlap_mean'] for s in rows]):.3f}",
                    f"{max(s.get('success_auc_std', 0.0) for s in rows):.3f}",
                    f"{first['fps_mean']:.1f} / {first['fps_cpu_mean']:.1f}" if first else "-",
                ]
            )
        )
    return out


# ----------------------------------------------------------------------------- detection


@table("detection_dlib:ap")
def detection_dlib_ap(data, _load):
    """Test AP@0.5 of each detector, with its seconds per image and ratio to dlib's."""
    n = data.get("n_test", "?")
    sec, ratio = data.get("seconds_per_image", {}), data.get("time_ratio_to_dlib", {})
    rows = [("constant box (median training box, no learning)", data["constant_box"], None)]
    if "dlib" in data:
        rows.append((f"dlib (C = {data['dlib']['C']:g})", data["dlib"], "dlib"))
    for name, r in data.get("svm", {}).items():
        rows.append((f"HOG + SVM, {name} (C = {r['params']['C']:g})", r, f"svm {name}"))
    if "cascade" in data:
        rows.append(("boosted cascade", data["cascade"], "cascade"))
    out = _head([f"detector (test AP@0.5, {n} images)", "AP", "s / image", "time / dlib's"])
    for label, r, key in rows:
        s = sec.get(key) if key else None
        q = ratio.get(key) if key else None
        out.append(
            _row(
                [
                    label,
                    f"{r['ap50']:.3f}",
                    "-" if s is None else f"{s:.3f}",
                    "-" if q is None else f"{q:.2f}",
                ]
            )
        )
    return out


@table("face_cascade:runs")
def face_cascade_runs(data, _load):
    """One row per cascade run: stages, weak classifiers, test recall and FAR, weak
    classifiers evaluated per window."""
    out = _head(
        [
            "run",
            "seed",
            "stages",
            "weak (total)",
            "test recall",
            "test FAR (false / windows)",
            "weak per window",
        ]
    )
    for name, seeds in data["runs"].items():
        for seed, r in seeds.items():
            weak = sum(st.get("n_weak", 0) for st in r["stages"]) if r.get("stages") else "-"
            out.append(
                _row(
                    [
                        name,
                        seed,
                        len(r.get("stages", [])),
                        weak,
                        f"{r['test_recall']:.3f}",
                        f"{r['test_far']:.2e} ({r['test_false_accepts']} / {r['test_windows']:,})",
                        f"{r['weak_per_window']:.2f}",
                    ]
                )
            )
    return out


# ----------------------------------------------------------------------------- the manifest


def _machine(p: dict) -> str:
    m = p.get("machine") or {}
    parts = [
        str(m.get("cpu") or "?"),
        f"{m['cores']} cores" if m.get("cores") else None,
        f"{m['memory_gib']:g} GiB" if m.get("memory_gib") else None,
    ]
    plat = str(m.get("platform") or "")
    arch = next((a for a in ("x86_64", "aarch64", "arm64") if a in plat), None)
    return ", ".join(x for x in [*parts, arch] if x)


@table(f"{WHOLE}:machines")
def machines(results, _load):
    """Which machine and package versions the result files were measured with (from their
    provenance blocks): one row per machine, the entries measured there."""
    by: dict[str, list[str]] = {}
    versions: dict[str, set] = {}
    for name, data in results.items():
        prov = data.get("provenance") if isinstance(data, dict) else None
        key = _machine(prov) if prov else "not recorded (no provenance block)"
        by.setdefault(key, []).append(name)
        for k, v in ((prov or {}).get("packages") or {}).items():
            if v and k != "maxmargin":
                versions.setdefault(k, set()).add(str(v))
    out = _head(["machine (result files' provenance)", "entries"])
    for key, names in sorted(by.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(names) if len(names) <= 16 else f"{len(names)} entries"
        out.append(_row([key, shown if len(names) > 16 else f"{len(names)}: {shown}"]))
    out += [
        "",
        "Package versions recorded: "
        + ", ".join(f"{k} {' / '.join(sorted(v))}" for k, v in sorted(versions.items()))
        + ".",
    ]
    return out
