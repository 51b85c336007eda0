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
                    f"{r['weak_learner']}:{r['master']}:{r['certify']}"
                    + (f":{r['inner_tol']}" if r.get("inner_tol", "fixed") != "fixed" else "")
                    + (f":q{r['columns_per_iter']}" if r.get("columns_per_iter", 1) != 1 else ""),
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


@table("fit_inexact_master")
def fit_inexact_master(data, load):
    """The paired comparison of the fixed and the inexact (adaptive) master: the rows of
    fit_vs_lightgbm's table, with the master's L-BFGS steps per iteration."""
    out = fit_vs_lightgbm(data, load)
    out[0] = out[0].rstrip() + " steps / iteration |"
    out[1] = out[1] + "---|"
    for k, r in enumerate(data["rows"]):
        sb = r["structboost"]
        out[k + 2] = out[k + 2].rstrip() + f" {sb['inner_steps'] / max(sb['n_iter'], 1):.2f} |"
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
    """tracking.json (our trackers, the SSVM tracker and the peers in one run): per tracker
    and sequence, success AUC (+- std over seeds) / mean overlap [min-max over seeds] /
    precision@20 / centre error."""
    summary = list(data["summary"])
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


def _svm_label(name, p):
    """``name``: features, prior, aspect ratios, mirror, box regression, C."""
    feats = "FHOG" if p.get("features") == "fhog" else "L2-Hys HOG"
    bits = [
        "prior" if p.get("location_prior", True) else "no prior",
        f"{len(p.get('aspect_ratios', (0.7, 1.0, 1.4)))} aspect ratio(s)",
    ]
    if p.get("mirror"):
        bits.append("mirrored")
    if p.get("box_regression") is not None:
        bits.append(
            f"box regression {p['box_regression']:g} / {p.get('regression_overlap', 0.5):g}"
        )
    bits.append(f"C = {p['C']:g}")
    return f"`{name}`: {feats} + SVM, " + ", ".join(bits)


@table("detection_dlib:ap")
def detection_dlib_ap(data, _load):
    """Test AP@0.5 of each detector, with its seconds per image and ratio to dlib's."""
    n = data.get("n_test", "?")
    sec, ratio = data.get("seconds_per_image", {}), data.get("time_ratio_to_dlib", {})
    rows = [("constant box (median training box, no learning)", data["constant_box"], None)]
    if "dlib" in data:
        rows.append((f"dlib (C = {data['dlib']['C']:g})", data["dlib"], "dlib"))
    for name, r in data.get("svm", {}).items():
        rows.append((_svm_label(name, r["params"]), r, f"svm {name}"))
    if "cascade" in data:
        rows.append(("boosted cascade, HOG, no prior", data["cascade"], "cascade"))
    if "cascade_hogprior" in data:
        rows.append(("boosted cascade, HOG + prior", data["cascade_hogprior"], "cascade_hogprior"))
    out = _head([f"detector (test AP@0.5, {n} images)", "AP", "ms / image", "time / dlib's"])
    for label, r, key in rows:
        s = sec.get(key) if key else None
        q = ratio.get(key) if key else None
        out.append(
            _row(
                [
                    label,
                    f"{r['ap50']:.3f}",
                    "-" if s is None else f"{s * 1e3:.2f}",
                    "-" if q is None else f"{q:.2f}",
                ]
            )
        )
    return out


def _face_rows(data, with_flat: bool) -> list[str]:
    cols = ["run", "seed", "stages", "weak (total)", "test recall",
            "test FAR (false / windows)", "weak per window"]  # fmt: skip
    if with_flat:
        cols += ["flat: weak needed", "ratio", "goal (a)"]
    cols += ["fit s (CPU s)", "CPU lock"]
    out = _head(cols)
    for name, seeds in data["runs"].items():
        for seed, r in seeds.items():
            weak = sum(st.get("n_weak", 0) for st in r["stages"]) if r.get("stages") else "-"
            row = [
                name,
                seed,
                len(r.get("stages", [])),
                weak,
                f"{r['test_recall']:.3f}",
                f"{r['test_far']:.2e} ({r['test_false_accepts']:,} / {r['test_windows']:,})",
                f"{r['weak_per_window']:.2f}",
            ]
            if with_flat:
                need, tot = r.get("flat_weak_needed"), r.get("flat_weak_total")
                if need is not None:
                    flat, ratio = f"{need} (of {tot})", f"{r['ratio']:.3f}"
                elif tot is not None:
                    flat, ratio = f"> {tot}", f"< {r['ratio_bound']:.3f}"
                else:
                    flat, ratio = "-", "-"
                met = r.get("goal_a_met")
                row += [flat, ratio, "-" if met is None else ("met" if met else "not met")]
            fs, cs = r.get("fit_seconds"), r.get("fit_cpu_seconds")
            row += [
                "-" if fs is None else f"{fs:.0f}" + ("" if cs is None else f" ({cs:.0f})"),
                r.get("cpu_lock", "not recorded"),
            ]
            out.append(_row(row))
    return out


@table("face_cascade:runs")
def face_cascade_runs(data, _load):
    """One row per cascade run: stages, weak classifiers, test recall and FAR (every window
    of the test photos), weak classifiers evaluated per window, the flat booster's weak
    classifiers at the cascade's test recall and FAR, the ratio (goal <= 0.1) and the fit
    time with the run's CPU-lock state."""
    return _face_rows(data, with_flat=True)


@table("face_cascade:table41")
def face_cascade_table41(data, _load):
    """Table 4.1 of seed 002 (two-point planning: weak classifiers and window ratio per
    stage, the thesis's constants as the result file records them) beside each seed's
    cascade (its stage sizes and the share of the test windows entering each stage)."""
    thesis_wc, thesis_wr = data["table_4_1"]["two-point"]
    runs = data["runs"].get("gentle/two-point/plain", {})
    seeds = sorted(runs, key=int)
    cols = ["stage", "thesis #WC", "thesis win ratio"]
    for sd in seeds:
        cols += [f"seed {sd} #WC", f"seed {sd} win ratio"]
    out = _head(cols)
    n = max([len(thesis_wc)] + [len(runs[sd]["stages"]) for sd in seeds])
    for k in range(n):
        row = [k + 1]
        row += [thesis_wc[k], f"{thesis_wr[k]:.3g}"] if k < len(thesis_wc) else ["-", "-"]
        for sd in seeds:
            r = runs[sd]
            if k < len(r["stages"]):
                row += [r["stages"][k]["n_weak"], f"{r['window_ratio'][k]:.3g}"]
            else:
                row += ["-", "-"]
        out.append(_row(row))
    return out


@table("face_cascade_variants:runs")
def face_cascade_variants_runs(data, _load):
    """Stage learners, planning rules, recycling and chaining on one seed: stages, weak
    classifiers, test recall / FAR and weak classifiers per window (accuracy only)."""
    out = _face_rows(data, with_flat=False)
    tun = data.get("tuning") or {}
    for learner, by_seed in tun.items():
        for seed, t in by_seed.items():
            out.append("")
            out.append(
                f"{learner} (seed {seed}): theta = {t['theta']:g}, sigma = {t['sigma']:g} "
                f"chosen on a validation split of the training data (held-out FAR at "
                f"recall {t['per_stage_recall']:.4f} over {len(t['grid'])} grid points)."
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
    target = (m.get("numba_target") or {}).get("cpu_name")
    # files from before the fifteenth session did not record numba's target
    target = f"numba target {target}" if target else "numba target not recorded"
    archs = sorted(
        {str(b.get("architecture")) for b in m.get("blas") or [] if b.get("architecture")}
    )
    blas = f"BLAS kernels {'/'.join(archs)}" if archs else None
    return ", ".join(x for x in [*parts, arch, target, blas] if x)


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


# ----------------------------------------------------------------------------- the guides
# (issue 33: tables of docs/structboost.md, docs/thesis_learners.md and docs/ranking.md that
# were copied by hand from these result files)


@table("truncate_gap:iterations")
def truncate_gap_iterations(data, _load):
    """Equal iterations: per data set and truncation gap, wall seconds / objective / test
    error after ``protocol.iters`` iterations (the default gap marked)."""
    gaps = data["protocol"]["gaps"]
    default = data.get("default_gap")
    out = _head(
        [
            f"data: wall s / objective / test error after {data['protocol']['iters']} iterations",
            *(f"gap {g:g}" + (" (default)" if g == default else "") for g in gaps),
        ]
    )
    for name, d in data["datasets"].items():
        by = {r["gap"]: r for r in d["equal_iterations"]}
        out.append(
            _row(
                [
                    name,
                    *(
                        f"{by[g]['wall_s']:.1f} / {by[g]['objective']:.3f} / "
                        f"{by[g]['test_error']:.3f}"
                        if g in by
                        else "-"
                        for g in gaps
                    ),
                ]
            )
        )
    return out


@table("truncate_gap:time")
def truncate_gap_time(data, _load):
    """Equal time: per data set and gap, wall seconds / iterations / objective / test error
    of the runs whose ``max_time`` makes them end together."""
    gaps = data["protocol"]["gaps"]
    out = _head(
        ["data", *(f"gap {g:g}: wall s / iterations / objective / test error" for g in gaps)]
    )
    for name, d in data["datasets"].items():
        by = {r["gap"]: r for r in d["equal_time"]}
        out.append(
            _row(
                [
                    name,
                    *(
                        f"{by[g]['wall_s']:.1f} / {by[g]['iterations']} / "
                        f"{by[g]['objective']:.3f} / {by[g]['test_error']:.3f}"
                        if g in by
                        else "-"
                        for g in gaps
                    ),
                ]
            )
        )
    return out


@table("truncate_gap:summary")
def truncate_gap_summary(data, _load):
    """One sentence: the larger gap's time saving at equal iterations, its objective against
    the smaller gap's at equal iterations and at equal time."""
    lo, hi = min(data["protocol"]["gaps"]), max(data["protocol"]["gaps"])
    saving, rel_it, rel_t = [], [], []
    for d in data["datasets"].values():
        it = {r["gap"]: r for r in d["equal_iterations"]}
        tm = {r["gap"]: r for r in d["equal_time"]}
        saving.append(1 - it[hi]["wall_s"] / it[lo]["wall_s"])
        rel_it.append(it[hi]["objective"] / it[lo]["objective"] - 1)
        rel_t.append(tm[hi]["objective"] / tm[lo]["objective"] - 1)
    n = len(saving)
    return [
        f"At equal iterations gap {hi:g} takes {100 * min(saving):.0f}-{100 * max(saving):.0f} % "
        f"less time than gap {lo:g}, for an objective {100 * min(rel_it):+.1f} % to "
        f"{100 * max(rel_it):+.1f} % away from gap {lo:g}'s; at equal time its objective is "
        f"lower on {sum(r < 0 for r in rel_t)} of {n} sets ({100 * min(rel_t):+.1f} % to "
        f"{100 * max(rel_t):+.1f} %)."
    ]


@table("exemplar_refinement")
def exemplar_refinement(data, _load):
    """Test AUC and training hinge before / after refining the exemplars, per M (mean over
    the seeds)."""
    out = _head(["exemplars M", "test AUC before", "after", "training hinge before", "after"])
    for r in data["rows"]:
        out.append(
            _row(
                [
                    r["n_exemplars"],
                    f"{r['test_auc_before']:.3f}",
                    f"**{r['test_auc_after']:.3f}**",
                    f"{r['train_hinge_before']:.1f}",
                    f"{r['train_hinge_after']:.1f}",
                ]
            )
        )
    return [*out, "", f"(mean of {data['seeds']} seeds)"]


@table("formulations")
def formulations(data, _load):
    """Per case and master: fit seconds, objective (and its distance from the exact m-slack
    run's), certified gap, cutting-plane rounds and test error."""
    ref = "exact:m-slack"
    out = _head(
        [
            "data (train rows)",
            "C",
            "iterations",
            "master",
            "fit s",
            "objective (vs exact m-slack)",
            "gap",
            "cutting-plane rounds",
            "test error",
        ]
    )
    for r in data["cases"]:
        masters = [k for k, v in r.items() if isinstance(v, dict)]
        for i, spec in enumerate(masters):
            v = r[spec]
            rel = (
                f" ({100 * (v['objective'] / r[ref]['objective'] - 1):+.2f} %)"
                if ref in r and spec != ref
                else ""
            )
            out.append(
                _row(
                    [
                        f"{r['data']} ({r['n_train']})" if i == 0 else "",
                        f"{r['C']:g}" if i == 0 else "",
                        r["max_iter"] if i == 0 else "",
                        spec,
                        f"{v['fit_s']:.2f}",
                        f"{v['objective']:.3f}{rel}",
                        f"{v['gap']:.0e}",
                        v["n_cp"],
                        f"{v['test_error']:.4f}",
                    ]
                )
            )
    return out


@table("segmentation_full:headline")
def segmentation_headline(data, _load):
    """README's sentence on the Weizmann horses: mean IoU of the three methods."""
    iou = {r["method"]: 100 * r["mean_iou"] for r in data["rows"]}
    sb, sv = iou["StructBoost-CRF"], iou["SSVM-CRF"]
    side = "above" if sb > sv else "below" if sb < sv else "level with"
    return [
        f"On the Weizmann horses ({data['n_train']} training / {data['n_test']} test images) "
        f"StructBoost-CRF reaches {sb:.1f} % mean IoU, {side} the {sv:.1f} % of the "
        f"structured SVM on the same potentials, and the unary classifier "
        f"{iou['AdaBoost (unary only)']:.1f} %."
    ]


@table("ssvm_multiclass")
def ssvm_multiclass(data, _load):
    """Seconds to a relative duality gap of ``tol`` per solver (a run stopped by the time
    limit shows its gap), liblinear's first run that certifies the gap, and the ratio of
    n-slack's time to liblinear's."""
    argv = data.get("argv") or (data.get("provenance") or {}).get("command", "").split()
    tol = float(argv[argv.index("--tol") + 1]) if "--tol" in argv else 1e-3  # the default
    names = {"n-slack": "n-slack", "1-slack": "1-slack", "frank-wolfe": "Frank-Wolfe"}
    names |= {"n_slack": "n-slack", "one_slack": "1-slack", "frank_wolfe": "Frank-Wolfe"}
    solvers = [s for s in names if any(s in r["solvers"] for r in data["results"])]
    out = _head(
        [
            "data (train rows x features, classes)",
            *(f"{names[s]} s" for s in solvers),
            "liblinear s (its tol)",
            "n-slack / liblinear",
            "test error n-slack / liblinear",
        ]
    )
    for r in data["results"]:
        cells = []
        for s in solvers:
            v = r["solvers"].get(s)
            if v is None:
                cells.append("-")
            elif v["converged"]:
                cells.append(f"{v['time']:.2f}")
            else:
                cells.append(f"{v['time']:.0f} (stopped at gap {v['rel_gap']:.1e})")
        lib = r.get("liblinear") or []
        ok = [x for x in lib if x.get("time") is not None and x["rel_gap"] <= tol]
        first = ok[0] if ok else None
        ns = r["solvers"].get("n-slack", r["solvers"].get("n_slack"))
        out.append(
            _row(
                [
                    f"{r['dataset']} ({r['n_train']} x {r['d']}, {r['classes']})",
                    *cells,
                    f"{first['time']:.2f} ({first['tol']:g})" if first else "not reached",
                    f"{ns['time'] / first['time']:.1f}x" if first and ns else "-",
                    f"{ns['test_error']:.4f} / {first['test_error']:.4f}" if first and ns else "-",
                ]
            )
        )
    return out
