"""Scale-out (issue 17) on a CRF: the sharded graph-cut oracle of StructSVM at 1, 2, 4
workers on the Weizmann horses segmentation CRF.

Data: the Weizmann horses (Borenstein & Ullman, ECCV 2002), the graphs of
``benchmarks/bench_segmentation.py`` (odd-numbered images, 150 superpixels, cross-fitted
AdaBoost unaries; :class:`maxmargin.apps.segmentation.Segmenter`).  Building them costs
about a minute; ``--cache`` keeps them in an ``.npz`` (arrays only) for later runs.
``--replicate R`` stacks R copies of the training graphs so that one oracle call is long
enough to split.

* ``cores``: how many cores were really free (bench_scaleout.py's test);
* ``oracle``: seconds per loss-augmented oracle call with its 1-slack plane (median of
  ``--repeat``), single-process path (``n_jobs=None``) and sharded at each ``--workers``;
* ``ssvm``: 1-slack StructSVM fits with ``tol = 0`` and a fixed number of iterations (the
  same work for every n_jobs); integer n_jobs must give the bit-identical model.
  (``oracle`` and ``ssvm`` use the default backend: numba threads since the CRF's graph
  cut is our numba max-flow; ``--backend loky`` forces worker processes.)
* ``threads``: the oracle on numba threads (per call, median of ``--repeat``) and the
  complete 1-slack fit at each ``--threads`` count, alternated ``--alternations`` times
  (1, 2, 1, 2, ...) so that a change of load hits both; the fit's time split into the
  oracle and the rest (the QP master).  Needs ``NUMBA_NUM_THREADS`` >= the largest count.
* ``graphcut``: the max-flow backends (our numba Boykov-Kolmogorov vs PyMaxflow), graph
  building included (``inference.graphcut._binary_cut``), on the horses graphs (all
  training images as one stacked graph, and image by image) under the SSVM's energies, and
  on 200 x 200 pixel grids (image-like unaries, two smoothness weights).

Usage (from the repository root; timing runs under the shared lock):
    flock /tmp/maxmargin-bench.lock env OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/bench_scaleout_crf.py --cache /tmp/horses_graphs.npz \\
        --replicate 4 --out benchmarks/results/scaleout_crf.json
    flock /tmp/maxmargin-bench.lock env OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=2 \\
        OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_scaleout_crf.py \\
        --cache /tmp/horses_graphs.npz --replicate 32 --sections cores threads \\
        --out benchmarks/results/scaleout_crf_threads.json
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, run_sections, write_result
from bench_scaleout import _median_time, cores_section
from maxmargin.solvers.parallel import ShardedOracle
from maxmargin.solvers.ssvm import solve_ssvm
from maxmargin.tasks.crf import CRFGraph, CRFTask


def build_graphs(data: Path, n_train: int, n_segments: int, unary_iter: int):
    from maxmargin.apps.segmentation import Segmenter, load_image_folder

    odd = [f"horse{k:03d}" for k in range(1, 301, 2)][:n_train]
    X, M, _ = load_image_folder(
        data / "rgb", data / "figure_ground", names=odd, resize_to_mask=True
    )
    seg = Segmenter(learner="unary", n_segments=n_segments, unary_iter=unary_iter, random_state=0)
    seg.fit(X, M)
    return list(seg.train_graphs_), [np.asarray(v) for v in seg.train_labels_], seg.loss


def save_graphs(path, graphs, labels, loss):
    arrays = {"loss": np.array(loss)}
    for k, (g, y) in enumerate(zip(graphs, labels)):
        arrays.update(
            {
                f"u{k}": g.unary,
                f"e{k}": g.edges,
                f"p{k}": g.pairwise,
                f"a{k}": g.area,
                f"y{k}": y,
            }
        )
    np.savez(path, **arrays)


def load_graphs(path):
    with np.load(path, allow_pickle=False) as z:
        n = sum(1 for k in z.files if k.startswith("u"))
        graphs = [CRFGraph(z[f"u{k}"], z[f"e{k}"], z[f"p{k}"], z[f"a{k}"]) for k in range(n)]
        labels = [z[f"y{k}"] for k in range(n)]
        loss = str(z["loss"])
    return graphs, labels, loss


def oracle_section(model, w, workers, repeat):
    rows = []

    def batch():
        model.loss_augmented(w)

    t, ts = _median_time(batch, repeat)
    rows.append({"path": "batch (n_jobs=None)", "seconds": t, "all": ts})
    for n in workers:
        with ShardedOracle(model, n_jobs=n) as orc:
            orc.run(w, plane=True, examples=False)  # first call: workers load the shards
            b0, r0 = orc.bytes_sent, orc.bytes_received
            t, ts = _median_time(lambda: orc.run(w, plane=True, examples=False), repeat)
            calls = repeat
            rows.append(
                {
                    "path": f"sharded n_jobs={n}",
                    "n_jobs": n,
                    "seconds": t,
                    "all": ts,
                    "n_shards": orc.n_shards,
                    "bytes_placed": orc.bytes_placed,
                    "bytes_sent_per_call": (orc.bytes_sent - b0) / calls,
                    "bytes_received_per_call": (orc.bytes_received - r0) / calls,
                }
            )
        print(rows[-1], flush=True)
    return {"rows": rows}


def ssvm_section(model, C, workers, iters):
    rows = []
    ref = None
    for n in [None, *workers]:
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve_ssvm(model, C, "1-slack", tol=0.0, max_iter=iters, n_jobs=n)
        t = time.perf_counter() - t
        t_or = float(sum(h.get("t_oracle", 0.0) for h in res.history))
        same = None
        if n is not None:
            if ref is None:
                ref = res.w
            same = bool(np.array_equal(ref, res.w))
        rows.append(
            {
                "n_jobs": n,
                "fit_seconds": t,
                "iterations": len(res.history),
                "t_oracle": t_or,
                "primal": float(res.primal),
                "bit_identical_to_n_jobs_1": same,
            }
        )
        print(rows[-1], flush=True)
    return {"C": C, "max_iter": iters, "rows": rows}


def _with_backend(backend, fn, *args):
    if backend is None:
        return fn(*args)
    import joblib

    with joblib.parallel_config(backend=backend):
        return {**fn(*args), "backend": backend}


def threads_section(model, w, C, threads, repeat, iters, alternations, tol):
    """Oracle per call and complete 1-slack fits on numba threads, alternated."""
    import numba

    cap = numba.config.NUMBA_NUM_THREADS
    if max(threads) > cap:
        raise SystemExit(f"NUMBA_NUM_THREADS={cap} < {max(threads)}: set it before Python starts")
    oracle, fits = [], []
    ref = None
    for alt in range(alternations):
        for n in threads:
            with ShardedOracle(model, n_jobs=n) as orc:
                assert orc.backend_kind == "numba"
                orc.run(w, plane=True, examples=False)  # warm-up
                t, ts = _median_time(lambda: orc.run(w, plane=True, examples=False), repeat)
            oracle.append({"alternation": alt, "threads": n, "seconds": t, "all": ts,
                           "loadavg": os.getloadavg()})  # fmt: skip
            print(oracle[-1], flush=True)
        for n in threads:
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = solve_ssvm(model, C, "1-slack", tol=tol, max_iter=iters, n_jobs=n)
            t = time.perf_counter() - t
            t_or = float(sum(h.get("t_oracle", 0.0) for h in res.history))
            ref = res.w if ref is None else ref
            fits.append(
                {
                    "alternation": alt,
                    "threads": n,
                    "fit_seconds": t,
                    "t_oracle": t_or,
                    "t_rest": t - t_or,
                    "iterations": len(res.history),
                    "primal": float(res.primal),
                    "bit_identical_to_first": bool(np.array_equal(ref, res.w)),
                    "loadavg": os.getloadavg(),
                }
            )
            print(fits[-1], flush=True)

    def speedups(rows, key):
        out = {}
        for alt in range(alternations):
            base = [r[key] for r in rows if r["alternation"] == alt and r["threads"] == threads[0]]
            for n in threads[1:]:
                t = [r[key] for r in rows if r["alternation"] == alt and r["threads"] == n]
                out.setdefault(str(n), []).append(base[0] / t[0])
        return out

    return {
        "threads": threads,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "oracle": oracle,
        "fits": fits,
        "oracle_speedup": speedups(oracle, "seconds"),
        "fit_speedup": speedups(fits, "fit_seconds"),
        "C": C,
        "max_iter": iters,
        "tol": tol,
    }


def _grid(H, W, rng, smooth):
    n = H * W
    idx = np.arange(n).reshape(H, W)
    edges = np.concatenate(
        [
            np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1),
            np.stack([idx[:-1].ravel(), idx[1:].ravel()], axis=1),
        ]
    )
    yy, xx = np.mgrid[:H, :W]
    u = 0.5 * (np.sin(xx / 17.0) + np.cos(yy / 23.0)).ravel() + rng.normal(size=n)
    unary = np.stack([np.zeros(n), u], axis=1)
    return unary, edges, smooth * rng.random(len(edges))


def graphcut_section(model, w, repeat):
    """numba vs PyMaxflow max-flow, graph building included (``_binary_cut``)."""
    from maxmargin.inference.graphcut import _binary_cut

    def cut(unary, edges, lam, backend):
        z = np.zeros(len(edges))
        return _binary_cut(unary, edges, z, lam, lam, z, backend)

    st = model.st
    Eu, Ep = model.energies(w)
    t_ = model.task
    aug = Eu.copy()
    aug[np.arange(st.N), 1 - t_.y_] -= t_.lw_
    lam = np.maximum(Ep, 0.0)
    per_image = [
        (
            aug[st.node_off[i] : st.node_off[i + 1]],
            st.edges[st.edge_off[i] : st.edge_off[i + 1]] - st.node_off[i],
            lam[st.edge_off[i] : st.edge_off[i + 1]],
        )
        for i in range(min(st.m, 150))
    ]
    rng = np.random.default_rng(0)
    cases = {
        f"horses stacked ({st.m} images, {st.N} nodes, one call)": [(aug, st.edges, lam)],
        f"horses image by image ({len(per_image)} calls)": per_image,
        "grid 200 x 200, smoothness 1.0": [_grid(200, 200, rng, 1.0)],
        "grid 200 x 200, smoothness 0.3": [_grid(200, 200, rng, 0.3)],
    }
    rows = []
    for name, graphs in cases.items():
        row = {"case": name}
        labs = {}
        for backend in ("pymaxflow", "numba", "pymaxflow", "numba"):  # alternated
            for g in graphs:
                cut(*g, backend)  # warm-up / compile
            t, _ = _median_time(lambda b=backend, gs=graphs: [cut(*g, b) for g in gs], repeat)
            row.setdefault(f"{backend}_seconds", []).append(t)
            labs[backend] = np.concatenate([cut(*g, backend) for g in graphs])
        row["labels_equal"] = bool(np.array_equal(labs["numba"], labs["pymaxflow"]))
        row["numba_over_pymaxflow"] = min(row["numba_seconds"]) / min(row["pymaxflow_seconds"])
        rows.append(row)
        print(row, flush=True)
    return {"rows": rows, "repeat": repeat}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA / "segmentation/weizmann_horses")
    ap.add_argument("--n-train", type=int, default=150)
    ap.add_argument("--n-segments", type=int, default=150)
    ap.add_argument("--unary-iter", type=int, default=100)
    ap.add_argument("--cache", type=Path, default=None, help=".npz of the built graphs")
    ap.add_argument("--replicate", type=int, default=1)
    ap.add_argument("--sections", nargs="+", default=["cores", "oracle", "ssvm"])
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--C", type=float, default=0.1, help="bench_segmentation's chosen C")
    ap.add_argument("--ssvm-iter", type=int, default=30)
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--alternations", type=int, default=3)
    ap.add_argument(
        "--fit-tol",
        type=float,
        default=0.0,
        help="tol of the threads section's fits (0: a fixed number of iterations, but the "
        "QP master then runs to its step limit, see benchmarks/NOTEBOOK.md)",
    )
    ap.add_argument("--backend", default=None, help="joblib backend for oracle/ssvm (e.g. loky)")
    ap.add_argument("--out", default="benchmarks/results/scaleout_crf.json")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    if args.cache is not None and args.cache.exists():
        graphs, labels, loss = load_graphs(args.cache)
    else:
        graphs, labels, loss = build_graphs(
            args.data, args.n_train, args.n_segments, args.unary_iter
        )
        if args.cache is not None:
            save_graphs(args.cache, graphs, labels, loss)
    t_build = time.perf_counter() - t0
    G, L = graphs * args.replicate, labels * args.replicate
    model = CRFTask(loss=loss).bind(G, L).linear_model()
    print(f"{len(G)} graphs, {model.n_positions} nodes, dim {model.dim}", flush=True)
    # a realistic w: the SSVM solution on the graphs (single-process path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = solve_ssvm(model, args.C, "1-slack", max_iter=50).w
    res = {
        "cpus": os.cpu_count(),
        "n_graphs": len(G),
        "n_nodes": int(model.n_positions),
        "dim": int(model.dim),
        "replicate": args.replicate,
        "graphs_seconds": t_build,
        "workers": args.workers,
        "machine_note": "2 cores shared with other engineers' jobs; see loadavg and cores",
    }
    runners = {
        "cores": lambda: cores_section(args.workers),
        "oracle": lambda: _with_backend(
            args.backend, oracle_section, model, w, args.workers, args.repeat
        ),
        "ssvm": lambda: _with_backend(
            args.backend, ssvm_section, model, args.C, args.workers, args.ssvm_iter
        ),
        "threads": lambda: threads_section(
            model,
            w,
            args.C,
            args.threads,
            args.repeat,
            args.ssvm_iter,
            args.alternations,
            args.fit_tol,
        ),
        "graphcut": lambda: graphcut_section(model, w, args.repeat),
    }
    run_sections(args.sections, runners, res)
    print("wrote", write_result(args.out, res))


if __name__ == "__main__":
    main()
