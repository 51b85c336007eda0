"""StructBoost training: column generation ([Shen2014 Alg. 1]) around a restricted master.

Shen, Lin, van den Hengel, "StructBoost: Boosting Methods for Predicting Structured
Output Variables", IEEE TPAMI 36(10), 2014.

Outer loop (column generation, [Shen2014 Alg. 1], :func:`fit_structboost`).  The master's duals give
mu_(i, y); the task turns mu into signed sample weights and the weak learner returns the
classifier of largest gain ``g(psi) = sum_(i, y) mu_(i, y) dpsi_i(y)``.  In the restricted
dual ([Shen2014 eq. 10b]) every column must satisfy ``g(psi) <= 1`` (its cost in the primal
objective ``1'w``); a column with ``g > 1`` has negative reduced cost ``1 - g`` and
improves the master.  Hence the stopping test is

    max_psi g(psi) <= 1 + eps_cg,

i.e. no weak learner violates the dual constraint by more than eps_cg.  (The printed
[Shen2014 eq. 8], ``<= 1 - eps_cg``, cannot be met once the best weak learner is already in the
master, where its gain is exactly 1 at optimality; see docs/structboost.md.)  The test is
only applied to *exact* duals: a master whose duals are approximate (smoothed, or from a
truncated cutting-plane loop) is first solved exactly ("certified") and the weak learners
re-priced before convergence is declared.

Masters (the restricted problem over the current columns):

* ``"fast"`` -- :class:`~maxmargin.solvers.smoothed_master.SmoothedMaster`: the
  log-sum-exp smoothed hinge solved by projected L-BFGS
  (:mod:`maxmargin.solvers.smoothed_problem`) every iteration, certified by a gap or the
  exact n-slack LP.  Tasks whose outputs can be listed or that have a smoothed risk.
* ``"exact"``, n-slack -- :class:`~maxmargin.solvers.n_slack_master.NSlackMaster`: the
  n-slack ("m-slack") LP [Shen2014 eq. 3] with row generation every iteration; the
  paper's column sequence.
* ``"exact"``, 1-slack -- :class:`~maxmargin.solvers.one_slack_master.OneSlackMaster`:
  [Shen2014 Alg. 2], Kelley's cutting planes on the 1-slack LP [Shen2014 eq. 9]; the only
  master for tasks with a joint 1-slack oracle only
  (:class:`~maxmargin.tasks.ranking.RankingTask`).

All three follow :class:`~maxmargin.solvers.restricted_master.RestrictedMaster`.

Every master ends with the exact LP optimum over its final columns when the task's outputs
can be listed (the m-slack polish, rows and reduced costs to 1e-9), and every record in
the history carries an independently computed duality gap (primal at w from the oracle,
dual from box-feasible multipliers scaled by the largest column gain).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from maxmargin.inference._threads import blas_one_thread, resolve_threads
from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.solvers.n_slack_master import NSlackMaster
from maxmargin.solvers.one_slack_master import TRUNCATE_GAP, OneSlackMaster
from maxmargin.solvers.parallel import ShardedOracle
from maxmargin.solvers.parallel_weak import BlockedStumpSearch, supports_blocks
from maxmargin.solvers.restricted_master import RestrictedMaster
from maxmargin.solvers.smoothed_master import CERTIFY, GAP_TOL, INNER_TOL, SmoothedMaster
from maxmargin.tasks.base import StructuredTask
from maxmargin.weak.base import Hypotheses, WeakLearner
from maxmargin.weak.hist_stump import CodedStump

__all__ = [
    "FORMULATIONS",
    "FORMULATION_ALIASES",
    "MASTERS",
    "ColumnGenerationResult",
    "fit_structboost",
]

FORMULATIONS = ("1-slack", "n-slack")
#: the StructBoost paper calls the per-example form "m-slack"
FORMULATION_ALIASES = {"m-slack": "n-slack"}
MASTERS = ("fast", "exact")
#: share of max_time kept for the final polish of the fast master
POLISH_RESERVE = 0.1


@dataclass
class ColumnGenerationResult:
    hypotheses: Hypotheses  # every weak classifier that entered the master
    column_hyp: np.ndarray  # column -> index into hypotheses
    column_slot: np.ndarray  # column -> slot
    w: np.ndarray  # column weights
    objective: float  # primal objective ||w||_1 + C * mean hinge at the final w
    dual_bound: float = -np.inf  # certified lower bound on the restricted master
    history: list[dict] = field(default_factory=list)
    w_path: list[np.ndarray] = field(default_factory=list)  # w after each iteration
    converged: bool = False
    certified: bool = False  # the final w is the exact optimum over its columns
    stop_reason: str = ""
    #: outputs of ``hypotheses`` on the task's weak inputs, shape (n_hypotheses, n_z) (a
    #: view of the column store; lets a caller warm-start a later fit on overlapping data
    #: without re-evaluating the classifiers, see ``fit_structboost(init_outputs=)``)
    outputs: np.ndarray | None = None

    @property
    def gap(self) -> float:
        return _relative_gap(self.objective, self.dual_bound)

    def slot_weights(self, n_slots: int | None = None) -> np.ndarray:
        """Weights as a (n_hypotheses, n_slots) matrix: F(z) = phi(z) @ W.  ``n_slots``:
        the task's slot count (default: the largest slot any column uses, plus one)."""
        if n_slots is None:
            n_slots = int(self.column_slot.max()) + 1 if len(self.column_slot) else 1
        W = np.zeros((len(self.hypotheses), n_slots))
        np.add.at(W, (self.column_hyp, self.column_slot), self.w)
        return W


def _relative_gap(primal: float, dual: float) -> float:
    return float(max(primal - dual, 0.0) / max(abs(primal), 1e-300))


# ---------------------------------------------------------------------------------------
# [Shen2014 Alg. 1]
# ---------------------------------------------------------------------------------------
def _interrupted(store, history, w_path) -> ColumnGenerationResult:
    """Ctrl-C during a fit: the model of the last completed iteration (columns added
    since keep weight 0; no final polish, so not certified)."""
    if not history:
        raise KeyboardInterrupt  # interrupted before the first iteration: nothing to keep
    w = np.zeros(store.n_columns)
    if w_path:
        w[: len(w_path[-1])] = w_path[-1]
    last = history[-1]
    return ColumnGenerationResult(
        hypotheses=store.hyps,
        column_hyp=store.col_hyp,
        column_slot=store.col_slot,
        w=w,
        objective=float(last["objective"]),
        dual_bound=float(last["dual_bound"]),
        history=history,
        w_path=w_path,
        converged=False,
        certified=False,
        stop_reason="interrupted",
    )


def _picked_columns(store: ColumnStore, picks, new_cols) -> np.ndarray:
    """Column numbers of the priced (classifier, slot) pairs that were already stored."""
    rows = store.last_rows
    cols = np.array(
        [store.index[rows[k], s] for k, (_, slots) in enumerate(picks) for s in slots],
        dtype=np.int64,
    )
    return np.setdiff1d(cols[cols >= 0], new_cols)


#: at most this many further candidates are priced when the best one is already moving
#: in the master (see :func:`_enter`)
MAX_ALTERNATIVES = 64


def _enter(task, mst, store, Z, cand, gains, picks, threshold):
    """Store the picked columns; returns ``(new_cols, old_cols)``: the columns created and
    the stored columns that price again but sit outside the master's working set (their
    weights were held: they re-enter it).

    When the picked classifier is already a column the master moves (its gain exceeds 1
    only because the master is solved to ``tol``, not exactly), the candidates of the
    other slots are tried in decreasing order of gain, as long as theirs exceeds
    ``threshold``: any column of reduced cost ``1 - gain < -eps_cg`` is a valid entering
    column of [Shen2014 Alg. 1], and entering one saves the master's extra steps (the
    ``tighten`` below) that the best candidate would otherwise need before re-pricing."""
    empty = np.zeros(0, dtype=np.int64)
    gains = np.array(gains, dtype=np.float64, copy=True)
    for k in range(MAX_ALTERNATIVES + 1):
        if not picks:
            return empty, empty
        new_hyps = cand.take(np.array([p[0] for p in picks]))
        new_cols = store.add(new_hyps, new_hyps.evaluate(Z), [p[1] for p in picks])
        if len(new_cols):
            return new_cols, mst.priced_again(_picked_columns(store, picks, new_cols))
        if k == 0:
            # the best candidate is stored: re-open it if its weights were held (an
            # alternative is taken only if it is a new classifier: re-opening held
            # columns in its place would cycle through a small working set)
            old_cols = mst.priced_again(_picked_columns(store, picks, new_cols))
            if len(old_cols):
                return new_cols, old_cols
        gains[[p[0] for p in picks]] = -np.inf  # every pick is already stored
        picks = task.select_columns(gains, threshold)
    return empty, empty


def _more_picks(task, gains, threshold, picks, q):
    """``picks`` followed by up to ``q - 1`` further groups of picks: each is
    ``task.select_columns`` on the gains with every candidate picked so far removed, so
    each group's classifier has a slot of gain above ``threshold`` under the same duals
    (reduced cost ``1 - gain < -eps_cg``: a valid entering column of [Shen2014 Alg. 1]).
    Returns ``(picks, n_groups)``."""
    gains = np.array(gains, dtype=np.float64, copy=True)
    out, group, n_groups = list(picks), picks, 1
    while n_groups < q:
        gains[[p[0] for p in group]] = -np.inf
        group = task.select_columns(gains, threshold)
        if not group:
            break
        out.extend(group)
        n_groups += 1
    return out, n_groups


def _seed_columns(
    mst: RestrictedMaster, store: ColumnStore, Z, hyps: Hypotheses, W0, deadline, outputs=None
) -> None:
    """Warm start: earlier weak classifiers enter as columns, the master is solved.
    ``outputs``: their outputs on ``Z`` when the caller has them (else evaluated)."""
    W0 = np.asarray(W0, dtype=np.float64).reshape(len(hyps), store.n_slots)
    keep = np.flatnonzero(np.any(W0 > 0, axis=1))
    if len(keep) == 0:
        return
    hyps, W0 = hyps.take(keep), W0[keep]
    out = hyps.evaluate(Z) if outputs is None else outputs[keep]
    slots = [np.flatnonzero(row > 0) for row in W0]
    cols = store.add(hyps, out, slots)
    if len(cols) == 0:
        return
    rows = store.last_rows  # the stored classifier of each earlier one
    w = np.zeros(store.n_columns)
    for k in range(len(hyps)):  # one step per earlier weak classifier (not per sample)
        h = rows[k]
        for s in slots[k]:
            w[store.index[h, s]] += W0[k, s]
    mst.add_columns(cols)
    mst.set_start(w)
    mst.solve(deadline)


def fit_structboost(
    task: StructuredTask,
    weak_learner: WeakLearner,
    *,
    C: float,
    master: str = "fast",
    formulation: str = "n-slack",
    eps_cp: float = 0.01,
    eps_cg: float = 1e-6,
    tol: float = 1e-4,
    max_iter: int = 200,
    max_time: float | None = None,
    rng: np.random.Generator | None = None,
    callback=None,
    stabilize: bool = True,
    prune_after: int = 50,
    max_cp_rounds: int | None = None,
    max_inner: int = 100,
    truncate_gap: float = TRUNCATE_GAP,
    init_hypotheses: Hypotheses | None = None,
    init_slot_weights: np.ndarray | None = None,
    init_outputs: np.ndarray | None = None,
    polish: bool = True,
    certify: str = "exact",
    gap_tol: float = GAP_TOL,
    inner_tol: str = "fixed",
    columns_per_iter: int = 1,
    n_jobs: int | None = None,
    monitor: ConvergenceMonitor | None = None,
) -> ColumnGenerationResult:
    """[Shen2014 Alg. 1]: column generation over weak structured learners around a
    restricted master, on a bound ``task``.

    ``master="fast"`` (tasks with ``dense_outputs``): smoothed master with inner tolerance
    ``tol`` (relative decrease per L-BFGS step) and at most ``max_inner`` steps per
    iteration.  ``master="exact"``: the ``formulation`` LP ("n-slack": row generation to
    ``eps_cp``; "1-slack": [Shen2014 Alg. 2] with ``eps_cp``, ``max_cp_rounds``, ``stabilize``,
    ``prune_after``, ``truncate_gap``).  Every run ends with the exact optimum over its
    final columns (``certified``) unless ``max_time`` ran out first; ``max_time`` covers
    that final solve too.

    Warm start: ``init_hypotheses`` (weak classifiers of an earlier model) with
    ``init_slot_weights`` (their (n, n_slots) weights) enter the master as columns before
    the first pricing step -- re-evaluated on this task's weak inputs, one column per
    slot of positive weight -- and the master is solved over them first (the fast master
    starting from the given weights), so column generation only adds what the new data
    needs (e.g. an online tracker re-trained on a sliding window of frames).
    ``init_outputs`` (optional, shape (n, n_z)): the earlier classifiers' outputs on this
    task's weak inputs, used instead of evaluating them -- the same fit, bit for bit, when
    they are equal to ``init_hypotheses.evaluate(task.weak_inputs())`` (which the caller
    vouches for; e.g. the tracker keeps the outputs on the frames still in its window,
    ``ColumnGenerationResult.outputs``, and evaluates only the new frames').

    ``certify`` (fast master only): how the fit ends once the smoothed duals price no new
    column (or at ``max_iter``).  ``"exact"``: the exact LP optimum over the final columns
    (the m-slack polish; tasks without one use the continuation to ``CONTINUATION_GAP``).
    ``"gap"``: smoothing continuation on a screened working set until the certified
    relative gap ``(P(w) - D) / P(w)`` is at most ``gap_tol`` -- no LP, so its cost grows
    with the model like one iteration's, not like the LP's rows.  ``"none"`` (or the
    legacy ``polish=False``): no certificate work at all -- the smoothed solution is
    returned with its certified gap (``certified`` False); for frequent warm
    re-trainings.

    Every iteration's ``dual_bound`` is a certified lower bound on the restricted master:
    with an exact weak-learner search (stumps) the best of ``C sum mu Delta / max(1,
    g*)`` over the iterations so far, ``g*`` the search's largest gain (a bound on the
    full problem, so on every restricted one), otherwise -- or while the model has at
    most ``WORKING_SET`` classifiers -- also the restricted master's own bound from every
    column's gain.

    ``n_jobs``: None runs everything on this thread; otherwise the weak-learner search
    on feature blocks (stumps), the oracle on that many threads (CRF graph cuts on fixed
    shards, chains' own kernels) and the fixed pieces of the master's column products
    (:class:`~maxmargin.solvers.columns.ColumnStore`; bit-identical for any count).
    BLAS is limited to one thread: the products here are small and many, and a
    multi-threaded BLAS spinning next to numba's thread pool made them tens of times
    slower on two cores.

    ``inner_tol`` (fast master only): ``"fixed"`` solves every iteration's master to
    ``tol``; ``"adaptive"`` is an inexact master -- a solve after new columns stops at a
    relative decrease of ``INEXACT_FACTOR`` times the outer gap at the last pricing,
    ``(P(w) - C sum mu Delta / max(1, g*)) / P(w)`` with the search's largest gain ``g*``
    (between ``tol`` and ``INEXACT_MAX_TOL``), and when such loose duals price nothing
    new, or at the end, the master is first solved to ``tol`` over the same columns
    (``RestrictedMaster.finish``), so convergence, the certificate and every reported
    bound are those of the fixed master's rules.

    ``columns_per_iter`` (q): how many weak classifiers may enter per iteration.  After
    the task's pick from the search's candidates (one per slot), up to ``q - 1`` further
    picks are made from the remaining candidates under the same duals, each with a slot
    of gain above ``1 + eps_cg`` (a valid entering column of [Shen2014 Alg. 1]; the
    stopping test, the bounds and the certificate are unchanged), and one master solve
    serves them all.  ``max_iter`` keeps counting weak-learner steps, not iterations: an
    iteration that enters ``j`` new classifiers from ``j`` picks counts ``j`` (at least
    1), and the last iteration takes no more picks than ``max_iter`` leaves, so with shared
    stumps (or one slot) a fit of ``max_iter`` steps holds at most ``max_iter`` weak
    classifiers whatever ``q`` (with ``sharing="per_class"`` one step may enter up to K,
    as it always did); the history has one record per iteration.  q = 1 is the classic
    loop, bit for bit.  Only tasks whose search returns several candidates (one per
    slot: multi-class, label coding) have further picks; a task that already enters
    every slot's candidate (``sharing="per_class"``) or has one slot is unchanged.

    ``monitor``: receives every iteration's record (history, progress, user callback);
    ``callback`` is the shortcut for a monitor with that callback only.
    """
    if monitor is None:
        monitor = ConvergenceMonitor("structboost", callback=callback)
    with blas_one_thread():
        if n_jobs is None:
            return _run(task, weak_learner, monitor=monitor, **_options(locals()))
        if "sharded_oracle" in task.capabilities:  # e.g. CRF graph cuts on fixed shards
            with ShardedOracle(task.linear_model(), n_jobs=n_jobs) as oracle:
                task.attach_sharded_oracle(oracle)
                try:
                    return _run_with_search(n_jobs, task, weak_learner, monitor, locals())
                finally:
                    task.attach_sharded_oracle(None)
        # tasks with their own sharded kernels (chains): the oracle on n_jobs threads
        with task.oracle_threads(n_jobs):
            return _run_with_search(n_jobs, task, weak_learner, monitor, locals())


_LOOP_OPTIONS = (
    "C", "master", "formulation", "eps_cp", "eps_cg", "tol", "max_iter", "max_time", "rng",
    "stabilize", "prune_after", "max_cp_rounds", "max_inner", "truncate_gap",
    "init_hypotheses", "init_slot_weights", "init_outputs", "polish", "certify", "gap_tol",
    "inner_tol", "columns_per_iter",
)  # fmt: skip


def _options(args: dict) -> dict:
    return {k: args[k] for k in _LOOP_OPTIONS}


def _run_with_search(n_jobs, task, weak, monitor, args) -> ColumnGenerationResult:
    threads = resolve_threads(n_jobs)  # the master's column products
    if not supports_blocks(weak):  # trees, perceptrons, ...: a serial search
        return _run(task, weak, monitor=monitor, product_threads=threads, **_options(args))
    with BlockedStumpSearch(weak, n_jobs=n_jobs) as blocked:  # feature blocks on workers
        return _run(task, blocked, monitor=monitor, product_threads=threads, **_options(args))


def _run(
    task: StructuredTask,
    weak_learner: WeakLearner,
    *,
    C,
    master,
    formulation,
    eps_cp,
    eps_cg,
    tol,
    max_iter,
    max_time,
    rng,
    stabilize,
    prune_after,
    max_cp_rounds,
    max_inner,
    truncate_gap,
    init_hypotheses,
    init_slot_weights,
    init_outputs,
    polish,
    certify,
    gap_tol,
    inner_tol,
    columns_per_iter,
    monitor: ConvergenceMonitor,
    product_threads: int = 1,
) -> ColumnGenerationResult:
    """The loop of :func:`fit_structboost` (its parameters)."""
    if master not in MASTERS:
        raise ValueError(f"master must be one of {MASTERS}, got {master!r}")
    if certify not in CERTIFY:
        raise ValueError(f"certify must be one of {CERTIFY}, got {certify!r}")
    if not (np.isfinite(gap_tol) and gap_tol > 0):
        raise ValueError(f"gap_tol must be a positive number, got {gap_tol!r}")
    if inner_tol not in INNER_TOL:
        raise ValueError(f"inner_tol must be one of {INNER_TOL}, got {inner_tol!r}")
    if int(columns_per_iter) != columns_per_iter or columns_per_iter < 1:
        raise ValueError(f"columns_per_iter must be a positive integer, got {columns_per_iter!r}")
    columns_per_iter = int(columns_per_iter)
    if not polish:
        certify = "none"
    formulation = FORMULATION_ALIASES.get(formulation, formulation)
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    caps = task.capabilities
    if master == "fast" and "smoothed_risk" not in caps:
        raise ValueError(
            f"{type(task).__name__} has no listable outputs and no smoothed risk; the fast "
            "master needs one of them (use master='exact')"
        )
    if master == "exact" and formulation not in task.formulations:
        raise ValueError(
            f"{type(task).__name__} supports formulation {task.formulations}, not {formulation!r}"
        )
    if master == "exact" and formulation == "n-slack" and "listed_outputs" not in caps:
        raise ValueError(f"{type(task).__name__} supports only formulation='1-slack'")
    rng = np.random.default_rng() if rng is None else rng
    t_start = time.perf_counter()
    final_deadline = None if max_time is None else t_start + max_time
    t_polish = 0.0  # longest certify so far: the iterations leave room for one more

    def loop_deadline():
        if final_deadline is None:
            return None
        return final_deadline - max(POLISH_RESERVE * max_time, 1.5 * t_polish)

    Z = task.weak_inputs()
    n_init = 0 if init_hypotheses is None else len(init_hypotheses)
    if init_outputs is not None:
        init_outputs = np.asarray(init_outputs, dtype=np.float64)
        if n_init == 0 or init_outputs.shape != (n_init, Z.shape[0]):
            raise ValueError(
                f"init_outputs must have shape ({n_init}, {Z.shape[0]}) (the init_hypotheses' "
                f"outputs on the weak inputs), got {init_outputs.shape}"
            )
    prepared = weak_learner.prepare(Z)
    store = ColumnStore(
        weak_learner.hypotheses_class,
        Z.shape[1],
        Z.shape[0],
        task.n_slots,
        product_threads,
        capacity=n_init + min(int(max_iter), 64),
    )
    mst: RestrictedMaster
    if master == "fast":
        mst = SmoothedMaster(
            task,
            store,
            C,
            tol=tol,
            max_steps=max_inner,
            eps_cp=eps_cp,
            rng=rng,
            certify=certify,
            gap_tol=gap_tol,
            inner_tol=inner_tol,
        )
    elif formulation == "n-slack":
        mst = NSlackMaster(task, store, C, eps_cp=eps_cp, eps_cg=eps_cg, rng=rng)
    else:
        mst = OneSlackMaster(
            task,
            store,
            C,
            eps_cp=eps_cp,
            rng=rng,
            stabilize=stabilize,
            prune_after=prune_after,
            max_cp_rounds=max_cp_rounds,
            truncate_gap=truncate_gap,
        )

    history = monitor.history
    w_path: list[np.ndarray] = []
    if init_hypotheses is not None and len(init_hypotheses):
        _seed_columns(
            mst, store, Z, init_hypotheses, init_slot_weights, loop_deadline(), init_outputs
        )

    t_oracle_seen = 0.0

    def record(it, gain, t_weak, t_master, n_cp, converged=False, t_polish=0.0):
        nonlocal t_oracle_seen
        rec = {"iteration": it, **mst.record()}
        t_oracle, t_oracle_seen = mst.t_oracle - t_oracle_seen, mst.t_oracle
        rec["gap"] = _relative_gap(rec["objective"], rec["dual_bound"])
        rec.update(
            n_weak=int(
                np.count_nonzero(np.bincount(store.col_hyp[mst.w > 0], minlength=store.n_hyp))
            ),
            n_columns=store.n_columns,
            n_cp=n_cp,
            gain=gain,
            t_weak=t_weak,
            t_master=t_master,
            t_polish=t_polish,
            t_oracle=t_oracle,
            t_total=time.perf_counter() - t_start,
            certified=bool(mst.certified),
            converged=converged,
        )
        return rec

    skip_polish = not mst.wants_certificate
    exact_search = bool(getattr(weak_learner, "exact_search", False))
    base = getattr(weak_learner, "base", weak_learner)
    if (
        init_hypotheses is not None
        and len(init_hypotheses)
        and not (getattr(base, "max_bins", None) is None or isinstance(base, CodedStump))
    ):
        # earlier classifiers' thresholds need not be bin boundaries of this data: the
        # binned search no longer covers every column
        exact_search = False
    converged, reason = False, "max_iter"
    it = 0  # iterations (master solves after new columns)
    steps = 0  # weak-learner steps: what max_iter counts
    t_weak = t_cert = t_finish = 0.0
    n_finish = 0  # steps of finish() solves since the last record
    try:
        while steps < max_iter:
            t0 = time.perf_counter()
            cand, gains = weak_learner.best(prepared, mst.weak_weights())
            threshold = mst.pricing_threshold or 1.0 + eps_cg
            picks = task.select_columns(gains, threshold)
            if picks and mst.full_gap_met():
                picks = []  # the certified point is within gap_tol of the full problem
            best_gain = float(np.max(gains)) if len(gains) else 0.0
            if exact_search:
                mst.note_pricing(best_gain)
            mst.note_best_gain(best_gain)
            n_groups = 1
            if picks and columns_per_iter > 1 and max_iter - steps > 1:
                room = min(columns_per_iter, max_iter - steps)
                picks, n_groups = _more_picks(task, gains, threshold, picks, room)
            n_hyp = store.n_hyp
            new_cols, old_cols = _enter(task, mst, store, Z, cand, gains, picks, threshold)
            t_weak += time.perf_counter() - t0
            if len(new_cols) == 0 and len(old_cols) == 0:
                if mst.stalled:
                    # the continuation stalled and its duals price nothing new either
                    reason = "stalled"
                    break
                if mst.loose:
                    # an inexact master's loose duals priced nothing new: solve to tol
                    # over the same columns first, then re-price
                    t1 = time.perf_counter()
                    n_finish += mst.finish(final_deadline)
                    t_finish += time.perf_counter() - t1
                    continue
                if not skip_polish and mst.can_tighten():
                    # the smoothed duals priced nothing new: first a few more steps on the
                    # working set (cheap), then re-price; the certificate only if that
                    # prices nothing either
                    t1 = time.perf_counter()
                    mst.tighten(final_deadline)
                    t_cert += time.perf_counter() - t1
                    continue
                if not mst.certified and not skip_polish:
                    # approximate duals priced nothing new: solve exactly, then re-price
                    t1 = time.perf_counter()
                    ok = mst.certify(final_deadline)
                    t_cert += time.perf_counter() - t1
                    t_polish = max(t_polish, time.perf_counter() - t1)
                    if ok or mst.stalled:
                        continue  # re-price at the certified (or best reached) point
                    reason = "numerical" if mst.failed else "max_time"
                    break
                converged, reason = True, "converged"
                w_path.append(mst.w.copy())
                monitor.record(
                    record(it + 1, best_gain, t_weak, t_cert, 0, converged=True, t_polish=t_cert)
                )
                break
            it += 1
            # one step per group that brought a new classifier (one at least: re-opened
            # held columns count as a step, as they always did)
            steps += max(1, min(n_groups, store.n_hyp - n_hyp))
            t1 = time.perf_counter()
            mst.add_columns(new_cols)
            if len(old_cols):
                mst.reopen(old_cols)
            info = mst.solve(loop_deadline())
            t_master = time.perf_counter() - t1 + t_cert + t_finish
            w_path.append(mst.w.copy())
            stop = monitor.record(
                record(it, best_gain, t_weak, t_master, info["n_cp"] + n_finish, t_polish=t_cert)
            )
            t_weak = t_cert = t_finish = 0.0
            n_finish = 0
            if final_deadline is not None and time.perf_counter() > loop_deadline():
                reason = "max_time"
                break
            if stop:
                reason = monitor.stop_reason or "callback"
                break
    except KeyboardInterrupt:
        return _interrupted(store, history, w_path)

    finished = False  # the final record changed without being reported yet
    if mst.loose and history:
        # the inexact master's last solve stopped early: the solve to tol over the final
        # columns (master time of the last iteration), before any certificate
        t1 = time.perf_counter()
        try:
            n_finish = mst.finish(final_deadline)
        except KeyboardInterrupt:
            return _interrupted(store, history, w_path)
        last = history[-1]
        rec = record(
            last["iteration"], last["gain"], last["t_weak"], 0.0, last["n_cp"] + n_finish,
            converged=last["converged"], t_polish=last["t_polish"],
        )  # fmt: skip
        rec["t_master"] = last["t_master"] + time.perf_counter() - t1
        rec["t_oracle"] += last["t_oracle"]
        # the last iteration's bound holds for the same columns
        rec["dual_bound"] = max(float(rec["dual_bound"]), float(last["dual_bound"]))
        rec["gap"] = _relative_gap(rec["objective"], rec["dual_bound"])
        w_path[-1] = mst.w.copy()
        history[-1] = rec  # reported once below, with the certificate's final record
        finished = True

    if not mst.certified and history and not skip_polish:
        # the final polish: the exact optimum over the final columns, inside max_time
        t1 = time.perf_counter()
        try:
            mst.certify(final_deadline)
        except KeyboardInterrupt:
            return _interrupted(store, history, w_path)
        mst.exact_scores()  # the final record from float64 scores (see below)
        last = history[-1]
        rec = record(last["iteration"], last["gain"], last["t_weak"], 0.0, last["n_cp"])
        dt = time.perf_counter() - t1
        rec["t_polish"] = last["t_polish"] + dt
        rec["t_master"] = last["t_master"] + dt
        rec["t_oracle"] += last["t_oracle"]
        rec["converged"] = converged
        w_path[-1] = mst.w.copy()
        monitor.replace_last(rec)  # the final record replaces the last iteration's
    elif history and (mst.exact_scores() or finished):
        # the returned objective is the primal at the returned w from float64 scores,
        # not from the inner steps' float32 updates; the bound kept is the best valid one
        # (one replaced final record, as after a certificate)
        fresh, rec = mst.record(), dict(history[-1])
        rec.update(objective=fresh["objective"], xi=fresh["xi"])
        rec["master_objective"] = fresh["master_objective"]
        rec["dual_bound"] = max(float(rec["dual_bound"]), float(fresh["dual_bound"]))
        rec["gap"] = _relative_gap(rec["objective"], rec["dual_bound"])
        monitor.replace_last(rec)
    if not history:  # no iteration at all (max_time already spent)
        history.append(record(0, 0.0, 0.0, 0.0, 0))
        w_path.append(mst.w.copy())
    final = history[-1]
    return ColumnGenerationResult(
        hypotheses=store.hyps,
        column_hyp=store.col_hyp,
        column_slot=store.col_slot,
        w=np.array(mst.w, dtype=np.float64),
        objective=float(final["objective"]),
        dual_bound=float(final["dual_bound"]),
        history=history,
        w_path=w_path,
        converged=converged,
        certified=bool(mst.certified),
        stop_reason=reason,
        outputs=store.H,
    )
