"""Scale-out: the loss-augmented oracle over sharded examples, on joblib / Dask / Ray.

Structured learning spends its time in two embarrassingly parallel places: the
loss-augmented oracle over examples and the weak-learner search over features.  This
module runs the first on any joblib backend (loky processes, threads, a
``dask.distributed`` cluster via ``joblib.parallel_config(backend="dask")``, Ray's
joblib backend); :mod:`maxmargin.solvers.parallel_weak` runs the second.

Exactness.  The examples are split once per fit into *fixed* contiguous shards whose
number depends on the number of examples only (:func:`shard_bounds`), never on
``n_jobs`` or on the backend.  Each shard returns its own partial results -- the
labellings, per-example losses and margins and, for 1-slack planes, the shard's sum of
joint-feature differences and losses -- computed by one numba kernel in a fixed order
(no BLAS, whose summation order may depend on threads), and the shards' partial sums are
added along a fixed binary tree over the shards (:func:`tree_sum`).  ``n_jobs=1`` runs
the very same kernels on the very same shards in-process, so any ``n_jobs`` and any
backend give a bit-for-bit identical fit.
(``n_jobs=None``, the default, keeps the single-process BLAS path of earlier versions;
its oracle answers equal the sharded ones to rounding, but cutting-plane iterates amplify
last-bit differences, so the two paths reach the same optimum within ``tol`` along
different iterates, not bit for bit.)

Data movement.  Shards are placed on the workers once per fit and stay there:

* loky / multiprocessing: every shard is written once to a temporary folder; a worker
  memory-maps the shards it is asked for on first use and keeps them (per fit) in a
  module-level cache, so an iteration sends only ``w`` and the shard file names;
* dask.distributed: the shards are scattered once (``Client.scatter``) and tasks name
  their futures, so an iteration sends only ``w``;
* Ray (``ray.util.joblib.register_ray()``, backend ``"ray"``): the shards are put once
  into Ray's object store (``ray.put``) and tasks carry their object references; a
  worker fetches a shard on first use and keeps it for the fit, so an iteration sends
  only ``w``;
* threads: the shards are shared in memory.  This is the default for the linear kernel
  and the CRF when the caller has not chosen a backend with ``joblib.parallel_config``
  (joblib's ``prefer="threads"``), and there, as for ``n_jobs=1``, no joblib task is
  made at all: every shard runs in one numba parallel loop over the fixed shards
  (``n_jobs`` numba threads, no Python step per shard; the linear model's
  :func:`_shards_on_threads`, the CRF's ``CRFShardedCuts`` -- its graph cut is our
  numba Boykov-Kolmogorov max-flow, which releases the GIL, like ``ChainTask``'s
  oracle), each shard writing its own plane, and the planes are added along the same
  tree -- the numbers of the per-shard tasks, bit for bit (docs/benchmarks.md: on OCR
  the linear oracle ran 1.9x faster on 2 threads, where loky processes gained
  1.0-1.2x);
* any other backend: the shards are pickled with every call -- correct, but it moves
  the data every iteration (docs/scaling.md).

For 1-slack without an output cache each task returns one ``dim + 2`` vector (its plane,
offset and hinge sum) and nothing per example; the other solvers also get the labels
(``int16`` / ``int32``) and two floats per example.  The shards' planes are added along a fixed
binary tree over the shards, each task being one node of that tree (its depth chosen so
that every worker gets a node), so a worker adds its node's shards and the master adds
the node sums, the same additions in the same order for every ``n_jobs``.
docs/scaling.md models these bytes.

Failure.  A worker that dies (killed process, lost Dask worker) raises
:class:`~maxmargin.exceptions.ParallelFitError`: the fit is aborted and no partial model
is returned.  Ordinary exceptions inside a worker propagate unchanged.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from maxmargin.exceptions import ParallelFitError
from maxmargin.inference._threads import resolve_threads, shard_threads
from maxmargin.tasks.crf import (
    CRFLinearModel,
    CRFShard,
    CRFShardedCuts,
    crf_shard_from_energies,
    crf_shard_oracle,
)
from maxmargin.tasks.linear import (
    JointLayout,
    LinearJointModel,
    add_dpsi,
    example_loss_augmented,
)

__all__ = [
    "DEFAULT_N_SHARDS",
    "ShardedModel",
    "ShardedOracle",
    "is_worker_loss",
    "parallel_session",
    "shard_bounds",
]

#: shards per fit (fewer when there are fewer examples); independent of n_jobs
DEFAULT_N_SHARDS = 64

#: exception class names that mean "a worker was lost" on joblib / Dask / Ray
_WORKER_LOSS = {
    "TerminatedWorkerError",
    "BrokenProcessPool",
    "KilledWorker",
    "CommClosedError",
    "WorkerCrashedError",
    "RayActorError",
    "ActorDiedError",
    "NodeDiedError",
}


def shard_bounds(n_samples: int, n_shards: int | None = None) -> np.ndarray:
    """Boundaries of ``min(n_samples, n_shards)`` contiguous shards of nearly equal size
    (``bounds[s]:bounds[s+1]``); depends on the number of examples only."""
    k = DEFAULT_N_SHARDS if n_shards is None else int(n_shards)
    if k < 1:
        raise ValueError(f"n_shards must be >= 1, got {n_shards!r}")
    k = max(1, min(int(n_samples), k))
    return (np.arange(k + 1, dtype=np.int64) * int(n_samples)) // k


def is_worker_loss(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause chain) says a worker process / node was lost."""
    seen = 0
    while exc is not None and seen < 10:
        if any(c.__name__ in _WORKER_LOSS for c in type(exc).__mro__):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _abort(exc: BaseException, what: str) -> ParallelFitError:
    return ParallelFitError(
        f"a parallel worker was lost during {what} ({type(exc).__name__}: {exc}); the fit "
        "was aborted and no partial model was returned -- fit again (with fewer workers, "
        "more memory per worker, or n_jobs=None)"
    )


def release_placement(owner, exc) -> None:
    """Undo what a placement (:class:`ShardedOracle`, and the feature blocks of
    :class:`~maxmargin.solvers.parallel_weak.BlockedStumpSearch`) set up on ``owner``:
    cancel scattered Dask futures, close the worker session, delete the shard folder.
    Safe to call twice."""
    if owner._futures is not None:
        try:
            owner._session.backend.client.cancel(owner._futures)
        except Exception:  # the cluster may be gone already
            pass
        owner._futures = None
    if owner._session is not None:
        owner._session.__exit__(*exc)
        owner._session = None
    if owner._folder is not None:
        shutil.rmtree(owner._folder, ignore_errors=True)
        owner._folder = None


# ---------------------------------------------------------------------------
# the per-shard kernel
# ---------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _shard_kernel(L, W, P, slack, want_plane, labels, loss, margin, a):
    """Loss-augmented labelling of every sequence of shard ``L`` (labels, loss, margin)
    and, if ``want_plane``, the shard's 1-slack sums ``a += sum_i c_i dPsi_i`` over the
    violators (``c_i = 1``, or ``Delta_i`` for slack rescaling); returns ``sum Delta_i``
    over the violators."""
    return _examples_oracle(L, 0, len(L.offsets) - 1, W, P, slack, want_plane, labels, loss,
                            margin, a)  # fmt: skip


@njit(cache=True, nogil=True)
def _examples_oracle(L, i0, i1, W, P, slack, want_plane, labels, loss, margin, a):
    """The loop of :func:`_shard_kernel` over examples ``i0 .. i1 - 1`` of layout ``L``
    (answers written at their places in ``L``; plane sums added to ``a`` in example
    order); returns ``sum Delta_i`` over the violators."""
    max_t = 1
    for i in range(i0, i1):
        max_t = max(max_t, L.offsets[i + 1] - L.offsets[i])
    U = np.empty((max_t, L.K))
    lab = np.empty(max_t, dtype=np.int64)
    b = 0.0
    for i in range(i0, i1):
        lo = L.offsets[i]
        T = L.offsets[i + 1] - lo
        li, mi = example_loss_augmented(L, i, W, P, slack, U, lab)
        for t in range(T):
            labels[lo + t] = lab[t]
        loss[i] = li
        margin[i] = mi
        if want_plane:
            h = li * max(0.0, 1.0 - mi) if slack else max(0.0, li - mi)
            if h > 0.0:
                add_dpsi(a, L, i, lab[:T], li if slack else 1.0)
                b += li
    return b


@njit(cache=True, parallel=True)
def _shards_on_threads(L, bounds, W, P, slack, want_plane, labels, loss, margin, planes, bsum):
    """:func:`_shard_kernel` for every shard ``bounds[c]:bounds[c+1]`` of the whole
    model's layout ``L`` in one parallel loop (numba threads, no Python per shard): shard
    c writes its examples' answers and its own plane ``planes[c]`` and ``bsum[c]``, the
    same numbers, added in the same order, as :func:`_shard_kernel` on that shard."""
    for c in prange(bounds.shape[0] - 1):
        bsum[c] = _examples_oracle(
            L, bounds[c], bounds[c + 1], W, P, slack, want_plane, labels, loss, margin, planes[c]
        )


def _split_w(w, n_unary, S, K, pairwise):
    w = np.ascontiguousarray(w, dtype=np.float64)
    W = w[:n_unary].reshape(n_unary // S, S)
    if pairwise:
        P = np.ascontiguousarray(w[n_unary:].reshape(K, K))
    else:
        P = np.zeros((K, K))
    return W, P


# ---------------------------------------------------------------------------
# worker side
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _ShardFile:
    """A shard placed once per fit: written to disk (``path``; workers memory-map it on
    first use) or, on Ray, put into Ray's object store (``obj``, its ``ObjectRef``;
    ``path`` is then only the cache key)."""

    folder: str
    path: str
    kind: str = "linear"  # "linear" (JointLayout) or "crf" (CRFShard)
    obj: object = None


_WORKER_CACHE: dict = {}  # shard file -> JointLayout, for the current fit's folder only


def ray_put(value):
    """``ray.put(value)``: one copy in Ray's object store, shared by the node's workers."""
    import ray

    return ray.put(value)


def ray_get(ref):
    """``ray.get(ref)`` (numpy arrays come back as read-only views of the object store)."""
    import ray

    return ray.get(ref)


def _resolve(ref) -> JointLayout:
    if not isinstance(ref, _ShardFile):
        return ref
    hit = _WORKER_CACHE.get(ref.path)
    if hit is None:
        import joblib

        for key in [k for k in _WORKER_CACHE if not k.startswith(ref.folder)]:
            del _WORKER_CACHE[key]  # another (finished) fit's shards
        if ref.obj is not None:
            raw = ray_get(ref.obj)
        else:
            raw = joblib.load(ref.path, mmap_mode="r")
        cls = CRFShard if ref.kind == "crf" else JointLayout
        hit = cls(*(np.asarray(v) if isinstance(v, np.ndarray) else v for v in raw))
        if ref.kind == "crf":  # the shard's arc lists and work arrays, once per worker
            hit = CRFShardedCuts.from_shard(hit)
        _WORKER_CACHE[ref.path] = hit
    return hit


def _label_dtype(K: int):
    return np.int16 if K <= np.iinfo(np.int16).max else np.int32


def tree_nodes(lo: int, hi: int, depth: int) -> list[tuple[int, int]]:
    """The nodes at ``depth`` of the fixed binary reduction tree over shards ``lo:hi``
    (a node splits at ``(lo + hi) // 2``; leaves stay leaves)."""
    if depth <= 0 or hi - lo <= 1:
        return [(lo, hi)]
    mid = (lo + hi) // 2
    return tree_nodes(lo, mid, depth - 1) + tree_nodes(mid, hi, depth - 1)


def tree_sum(get, lo: int, hi: int):
    """``get(lo) + ... + get(hi - 1)`` added along the fixed reduction tree, so that
    the sum of a node is the same numbers whether a worker or the master adds it."""
    if hi - lo == 1:
        return get(lo)
    mid = (lo + hi) // 2
    return tree_sum(get, lo, mid) + tree_sum(get, mid, hi)


def _run_node(refs, lo, w, slack, want_plane, die_pid=None, examples=True):
    """Worker task: the oracle on the shards ``lo .. lo + len(refs) - 1`` (one node of
    the reduction tree): their labels, losses and margins concatenated (unless
    ``examples`` is False), and the node's plane sums ``(a, b, sum of hinges)`` added
    along the tree."""
    if die_pid is not None and os.getpid() != die_pid:  # test hook: a worker dies
        os._exit(3)
    parts = []
    W = P = None
    for ref in refs:
        L = _resolve(ref)
        if isinstance(L, (CRFShard, CRFShardedCuts)):  # graph cuts (margin rescaling only)
            labels, loss, margin, ab = crf_shard_oracle(L, w, want_plane)
            # the plane and its two sums (violators' losses, hinges) come as one vector
            parts.append((labels.astype(np.int8), loss, margin, ab, np.zeros(0)))
            continue
        if W is None:
            W, P = _split_w(w, L.n_unary, L.S, L.K, L.pairwise)
        n = len(L.offsets) - 1
        labels = np.empty(int(L.offsets[-1]), dtype=np.int64)
        loss = np.empty(n)
        margin = np.empty(n)
        a = np.zeros(len(w) if want_plane else 0)
        b = _shard_kernel(L, W, P, slack, want_plane, labels, loss, margin, a)
        hinge = loss * np.maximum(0.0, 1.0 - margin) if slack else np.maximum(0.0, loss - margin)
        sums = np.array([b, float(np.sum(hinge))])
        parts.append((labels.astype(_label_dtype(L.K)), loss, margin, a, sums))
    hi = lo + len(parts)
    ab = None
    if want_plane:
        ab = tree_sum(lambda k: np.concatenate([parts[k - lo][3], parts[k - lo][4]]), lo, hi)
    if not examples:  # 1-slack without an output cache: the plane is all the master needs
        return None, None, None, ab
    return (*_joined(parts), ab)


def _joined(parts, label_dtype=None) -> tuple:
    """Labels, losses and margins (the first three fields of per-shard answers), each
    concatenated over the shards; the labels cast to ``label_dtype`` if given."""
    labels, loss, margin = (np.concatenate([p[j] for p in parts]) for j in range(3))
    return (labels if label_dtype is None else labels.astype(label_dtype)), loss, margin


def _run_energy_node(refs, energies, die_pid=None):
    """Worker task (CRF, StructBoost's oracle): each shard's loss-augmented graph cut
    under the energies the master sent for it; labels, losses and margins concatenated."""
    if die_pid is not None and os.getpid() != die_pid:  # test hook: a worker dies
        os._exit(3)
    out = [crf_shard_from_energies(_resolve(ref), Eu, Ep) for ref, (Eu, Ep) in zip(refs, energies)]
    return _joined(out, np.int8)


# ---------------------------------------------------------------------------
# master side
# ---------------------------------------------------------------------------
@dataclass
class OracleResult:
    """The reduced oracle answer: per-example labellings / losses / margins (None when
    not asked for) and, for a 1-slack plane, ``a = sum_i c_i dPsi_i`` and
    ``b = sum_i Delta_i`` over violators and the sum of the hinges (not divided by n).

    ``hinge_slack`` (with a plane): what the oracle's hinges may fall short of the true
    ones -- 0 for an exact oracle; for the CRF's graph cuts, exact only for non-negative
    cut weights, the magnitudes of the negative cut weights each labelling leaves uncut
    (:meth:`~maxmargin.tasks.crf.CRFLinearModel.hinge_upper_bound`, summed over the
    images), so ``hinge_sum + hinge_slack`` bounds the true sum of hinges from above."""

    labels: np.ndarray | None
    loss: np.ndarray | None
    margin: np.ndarray | None
    a: np.ndarray | None
    b: float
    hinge_sum: float | None = None
    hinge_slack: float = 0.0


class parallel_session:
    """A joblib ``Parallel`` kept open for a whole fit (workers reused between calls),
    plus the active backend's kind: ``"inline"`` (n_jobs None / 1: no joblib at all),
    ``"threads"``, ``"dask"``, ``"ray"``, ``"files"`` (loky / multiprocessing) or
    ``"pickle"`` (any other backend: the data go with every task)."""

    def __init__(self, n_jobs, prefer=None):
        self.n_jobs = n_jobs
        self.prefer = prefer
        self.parallel = None
        self.kind = "inline"
        self.backend = None
        self.n_workers = 1

    def __enter__(self):
        if self.n_jobs in (None, 1):
            return self
        from joblib import Parallel
        from joblib.parallel import get_active_backend

        # batch_size=1: joblib's automatic batching would pack quick tasks (a node
        # takes tens of ms) into one batch, i.e. onto one worker, one after the other
        # prefer: joblib's soft hint, used only when no backend was chosen with
        # joblib.parallel_config (a Dask or Ray backend always wins)
        self.parallel = Parallel(
            n_jobs=self.n_jobs, batch_size=1, pre_dispatch="all", prefer=self.prefer
        )
        self.parallel.__enter__()
        backend, _ = get_active_backend(prefer=self.prefer)
        self.backend = backend
        name = type(backend).__name__
        self.n_workers = max(1, int(backend.effective_n_jobs(self.n_jobs)))
        if name == "ThreadingBackend":
            self.kind = "threads"
        elif name == "DaskDistributedBackend":
            self.kind = "dask"
        elif name == "RayBackend":
            self.kind = "ray"
        elif name in ("LokyBackend", "MultiprocessingBackend"):
            self.kind = "files"
        elif name == "SequentialBackend":
            self.kind = "inline"
        else:
            self.kind = "pickle"
        return self

    def __exit__(self, *exc):
        if self.parallel is not None:
            self.parallel.__exit__(*exc)
            self.parallel = None
        return False

    def map(self, fn, arg_lists, what="the fit"):
        """``[fn(*args) for args in arg_lists]``, in parallel unless inline; worker loss
        becomes :class:`ParallelFitError`."""
        if self.parallel is None:
            return [fn(*args) for args in arg_lists]
        from joblib import delayed

        try:
            return self.parallel(delayed(fn)(*args) for args in arg_lists)
        except ParallelFitError:
            raise
        except Exception as exc:
            if is_worker_loss(exc):
                raise _abort(exc, what) from exc
            raise


class ShardedOracle:
    """The loss-augmented oracle of a :class:`~maxmargin.tasks.linear.LinearJointModel`
    over fixed shards of its examples, run on the active joblib backend.

    Use as a context manager for one fit: entering places the shards on the workers,
    :meth:`run` sends ``w`` and reduces the per-shard answers in shard order, leaving
    removes the shard files / releases the scattered data.

    Parameters
    ----------
    model : LinearJointModel
    n_jobs : int or None
        joblib ``n_jobs`` (None or 1: in-process, no joblib).
    n_shards : int or None
        Number of shards (default :data:`DEFAULT_N_SHARDS`, at most one per example).
    """

    #: test hook: at this call (0-based) the task makes its worker process exit
    _die_at_call: int | None = None

    def __init__(self, model: LinearJointModel, n_jobs=None, n_shards=None):
        if isinstance(model, CRFLinearModel):
            self.kind = "crf"
            make = model.shard
        elif isinstance(model, LinearJointModel):
            self.kind = "linear"
            threads = resolve_threads(n_jobs)

            def make(a, b):
                return model.shard_layout(a, b, threads)
        else:
            raise ValueError(
                "n_jobs (a sharded oracle) needs a task with linear joint features and a "
                "per-example oracle (label-coding tasks, ChainTask, CRFTask); "
                f"{type(model).__name__} has none yet: use n_jobs=None"
            )
        self.model = model
        self.n_jobs = n_jobs
        self.bounds = shard_bounds(model.n_samples, n_shards)
        self._make = make
        self._shards = None
        self._cuts = None  # CRF on numba threads: CRFShardedCuts of all images
        self.threads = 1
        self.n_calls = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        self._session = None
        self._refs = None
        self._folder = None
        self._futures = None
        self._layout = None

    @property
    def shards(self) -> list:
        """The shards as placed on workers (made on first use: the CRF on numba threads
        never needs them)."""
        if self._shards is None:
            b = self.bounds.tolist()
            self._shards = [self._make(lo, hi) for lo, hi in itertools.pairwise(b)]
        return self._shards

    @property
    def n_shards(self) -> int:
        return len(self.bounds) - 1

    @property
    def backend_kind(self) -> str:
        """Where the shards run: ``"numba"`` (in process, ``n_jobs=1`` or threads: every
        shard in one numba kernel on ``threads`` threads), ``"files"`` (loky /
        multiprocessing), ``"dask"``, ``"ray"`` or ``"pickle"``."""
        in_process = self._cuts is not None or self._layout is not None
        return "numba" if in_process else self._session.kind

    def __enter__(self):
        # the kernels are numba code that releases the GIL (the CRF's graph cut too, since
        # it is our numba Boykov-Kolmogorov): without a backend chosen by the caller they
        # run on threads (shards shared in memory, no per-call process round trip)
        self._session = parallel_session(self.n_jobs, prefer="threads").__enter__()
        try:
            self._place()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _place(self):
        s = self._session
        if s.kind in ("inline", "threads"):
            # every shard in one numba kernel (prange over the fixed shards) on n_jobs
            # numba threads, like ChainTask's oracle: no joblib pool at all
            if s.parallel is not None:
                s.parallel.__exit__(None, None, None)
                s.parallel = None
            self.threads = resolve_threads(self.n_jobs)
            if self.kind == "crf":
                self._cuts = self.model.sharded_cuts(self.bounds, self.threads)
            else:  # the shards are ranges of the whole model's arrays
                self._layout = self.model.layout()
            self._refs = None
            self.bytes_placed = 0
            return
        if s.kind == "files":
            import joblib

            self._folder = tempfile.mkdtemp(prefix=f"maxmargin-shards-{uuid.uuid4().hex[:8]}-")
            refs = []
            for k, shard in enumerate(self.shards):
                path = os.path.join(self._folder, f"shard{k:05d}.joblib")
                joblib.dump(tuple(shard), path)
                refs.append(_ShardFile(self._folder, path, self.kind))
            self._refs = refs
        elif s.kind == "dask":
            self._futures = s.backend.client.scatter(self._worker_shards(), broadcast=False,
                                                     hash=False)  # fmt: skip
            self._refs = list(self._futures)
        elif s.kind == "ray":  # once into the object store; tasks carry the references
            fit = f"ray-{uuid.uuid4().hex}"
            self._refs = [
                _ShardFile(fit, f"{fit}/{k}", self.kind, ray_put(tuple(shard)))
                for k, shard in enumerate(self.shards)
            ]
        else:
            self._refs = self._worker_shards()
        self.bytes_placed = int(sum(_nbytes(sh) for sh in self.shards))

    def _worker_shards(self) -> list:
        """Shards as sent to workers in memory (CRF: with their arc lists and work arrays)."""
        if self.kind == "crf":
            return [CRFShardedCuts.from_shard(sh) for sh in self.shards]
        return list(self.shards)

    def __exit__(self, *exc):
        self._cuts = None
        self._layout = None
        self._refs = None  # on Ray: the last references, so the object store frees the shards
        release_placement(self, exc)
        return False

    def _unpack(self, ab):
        """``(a, b, hinge_sum, hinge_slack)`` from a reduced plane vector: the linear
        kernels' ``[a, b, hinge_sum]``, the CRF's ``[a, b, hinge_sum, hinge_slack]``."""
        if self.kind == "crf":
            return ab[:-3], float(ab[-3]), float(ab[-2]), float(ab[-1])
        return ab[:-2], float(ab[-2]), float(ab[-1]), 0.0

    def _run_numba(self, w, plane: bool, examples: bool) -> OracleResult:
        """The CRF oracle on numba threads: every shard's cut and plane in one kernel,
        the shards' planes added along the same fixed tree as the workers' results."""
        lab, loss, margin, planes = self._cuts.run(w, plane, self.threads, keep_labels=examples)
        a = hinge_sum = None
        b = slack = 0.0
        if plane:
            ab = tree_sum(lambda k: planes[k], 0, self.n_shards).copy()
            a, b, hinge_sum, slack = self._unpack(ab)
        if not examples:
            lab = loss = margin = None
        return OracleResult(lab, loss, margin, a, float(b), hinge_sum, slack)

    def _nodes(self):
        """One task per node of the reduction tree at the depth that gives at least one
        task per worker (the tree itself depends on the number of shards only)."""
        depth = int(np.ceil(np.log2(max(1, self._session.n_workers))))
        return tree_nodes(0, self.n_shards, depth)

    def run(
        self, w, rescaling: str = "margin", plane: bool = False, examples: bool = True
    ) -> OracleResult:
        """The oracle at ``w`` on every shard, reduced along the tree.  ``examples=False``
        (with ``plane``): only the plane and the hinge sum come back, not the per-example
        labellings, losses and margins."""
        if self._session is None:
            raise RuntimeError("ShardedOracle.run outside its 'with' block")
        slack = rescaling == "slack"
        w = np.ascontiguousarray(w, dtype=np.float64)
        die = os.getpid() if self._die_at_call == self.n_calls else None
        self.n_calls += 1
        examples = bool(examples) or not plane
        if self._cuts is not None:
            return self._run_numba(w, bool(plane), examples)
        if self._layout is not None:
            return self._run_on_threads(w, slack, bool(plane), examples)
        nodes = self._nodes()
        args = [(self._refs[lo:hi], lo, w, slack, bool(plane), die, examples) for lo, hi in nodes]
        results = self._session.map(_run_node, args, what="the loss-augmented oracle")
        n_pos = sum(len(r[0]) for r in results) if examples else self.model.n_positions
        if len(results) != len(nodes) or n_pos != self.model.n_positions:
            raise ParallelFitError(  # never reduce an incomplete answer
                f"the oracle returned {len(results)} of {len(nodes)} shard groups; the fit "
                "was aborted and no partial model was returned"
            )
        labels = loss = margin = hinge_sum = None
        if examples:
            labels, loss, margin = _joined(results, np.int64)
        a = None
        b = slack = 0.0
        if plane:  # the master adds the node sums along the same fixed tree
            node_sum = {node: r[3] for node, r in zip(nodes, results)}

            def combine(lo, hi):
                if (lo, hi) in node_sum:
                    return node_sum[(lo, hi)]
                mid = (lo + hi) // 2
                return combine(lo, mid) + combine(mid, hi)

            ab = combine(0, self.n_shards)
            a, b, hinge_sum, slack = self._unpack(ab)
        if self._session.kind != "inline":
            self.bytes_sent += len(nodes) * w.nbytes
            self.bytes_received += sum(sum(x.nbytes for x in r if x is not None) for r in results)
        return OracleResult(labels, loss, margin, a, float(b), hinge_sum, slack)

    def _run_on_threads(self, w, slack, plane, examples) -> OracleResult:
        """In-process backends (``n_jobs=1``, threads): every shard in one numba parallel
        loop over the whole model (:func:`_shards_on_threads`), then the shards' sums
        along the fixed tree -- the numbers of :func:`_run_node` on the same shards."""
        m = self.model
        L = self._layout
        W, P = _split_w(w, L.n_unary, L.S, L.K, L.pairwise)
        S = self.n_shards
        labels = np.empty(m.n_positions, dtype=np.int64)
        loss = np.empty(m.n_samples)
        margin = np.empty(m.n_samples)
        planes = np.zeros((S, len(w) if plane else 0))
        bsum = np.zeros(S)
        with shard_threads(self.threads):
            _shards_on_threads(
                L, self.bounds, W, P, slack, plane, labels, loss, margin, planes, bsum
            )
        a = None
        b = 0.0
        hinge_sum = None
        if plane:
            bounds = self.bounds

            def shard_vector(k):  # as _run_node: the plane, then [b, sum of hinges]
                lk, mk = loss[bounds[k] : bounds[k + 1]], margin[bounds[k] : bounds[k + 1]]
                hinge = lk * np.maximum(0.0, 1.0 - mk) if slack else np.maximum(0.0, lk - mk)
                return np.concatenate([planes[k], np.array([bsum[k], float(np.sum(hinge))])])

            ab = tree_sum(shard_vector, 0, S)
            a, b, hinge_sum, _ = self._unpack(ab)
        if not examples:
            labels = loss = margin = None
        return OracleResult(labels, loss, margin, a, float(b), hinge_sum)

    def run_energies(self, Eu, Ep):
        """CRF only (StructBoost's oracle): the loss-augmented graph cuts of every shard
        under unary energies ``Eu`` (N, 2) and cut energies ``Ep`` (E,) of all images --
        each task gets its shards' rows -- returning ``(labels, loss, margin)`` in image
        order.  The labels depend on the fixed shards only, never on ``n_jobs``."""
        if self._session is None:
            raise RuntimeError("ShardedOracle.run_energies outside its 'with' block")
        if self.kind != "crf":
            raise ValueError("run_energies needs a CRF model")
        st = self.model.st
        Eu = np.ascontiguousarray(Eu, dtype=np.float64)
        Ep = np.ascontiguousarray(Ep, dtype=np.float64)
        if Eu.shape != (st.N, 2) or Ep.shape != (st.n_edges,):
            raise ValueError(f"energies of shapes {Eu.shape}, {Ep.shape} do not match the CRF")
        die = os.getpid() if self._die_at_call == self.n_calls else None
        self.n_calls += 1
        if self._cuts is not None:
            return self._cuts.run_energies(Eu, Ep, self.threads)
        nb, eb = st.node_off[self.bounds], st.edge_off[self.bounds]
        parts = [(Eu[nb[k] : nb[k + 1]], Ep[eb[k] : eb[k + 1]]) for k in range(self.n_shards)]
        nodes = self._nodes()
        args = [(self._refs[lo:hi], parts[lo:hi], die) for lo, hi in nodes]
        results = self._session.map(_run_energy_node, args, what="the loss-augmented oracle")
        if len(results) != len(nodes) or sum(len(r[0]) for r in results) != st.N:
            raise ParallelFitError(  # never reduce an incomplete answer
                f"the oracle returned {len(results)} of {len(nodes)} shard groups; the fit "
                "was aborted and no partial model was returned"
            )
        if self._session.kind != "inline":
            self.bytes_sent += sum(sum(e.nbytes + p.nbytes for e, p in a[1]) for a in args)
            self.bytes_received += sum(sum(x.nbytes for x in r) for r in results)
        return _joined(results, np.int64)


def _nbytes(layout) -> int:
    return sum(v.nbytes for v in layout if isinstance(v, np.ndarray))


class ShardedModel:
    """A :class:`~maxmargin.tasks.linear.LinearJointModel` whose loss-augmented oracle
    runs on a :class:`ShardedOracle`; everything else is the wrapped model's.

    The SSVM solvers take it in place of the model: ``loss_augmented`` (n-slack,
    subgradient, Frank-Wolfe evaluations) and ``one_slack_plane`` (1-slack) go to the
    shards."""

    def __init__(self, model: LinearJointModel, oracle: ShardedOracle):
        self._model = model
        self.oracle = oracle

    def __getattr__(self, name):
        return getattr(self._model, name)

    def loss_augmented(self, w, rescaling="margin", U=None):
        r = self.oracle.run(w, rescaling, plane=False)
        return r.labels, r.loss, r.margin

    def one_slack_plane(self, w, rescaling="margin"):
        """``(labels, loss, margin, a, b)`` with the 1-slack plane ``(a, b)`` already
        divided by n."""
        r = self.oracle.run(w, rescaling, plane=True)
        n = self._model.n_samples
        return r.labels, r.loss, r.margin, r.a / n, r.b / n

    def one_slack_plane_only(self, w, rescaling="margin"):
        """``(a, b, risk)``: the 1-slack plane and an upper bound of the risk (mean
        hinge) at ``w``, without the per-example answers (the workers send back one plane
        per task, nothing per example).  The bound is the oracle's mean hinge plus its
        slack (:attr:`OracleResult.hinge_slack`): the risk itself for an exact oracle,
        for the CRF the mean of :meth:`~maxmargin.tasks.crf.CRFLinearModel.hinge_upper_bound`
        -- the value the single-process path offers, to rounding."""
        r = self.oracle.run(w, rescaling, plane=True, examples=False)
        n = self._model.n_samples
        return r.a / n, r.b / n, (r.hinge_sum + r.hinge_slack) / n
