"""Scale-out of the weak-learner search: feature blocks on joblib / Dask / Ray workers.

StructBoost's pricing step (Shen et al., "StructBoost: Boosting methods for predicting
structured output variables", IEEE TPAMI 36(10), 2014, [Shen2014 eq. 11]) asks the weak learner
for ``argmax_phi sum_k a_k phi(z_k)`` for every slot column of the signed weights A.
For stumps this problem decomposes over features: the best stump of a feature depends on
that feature's values and on A only.  :class:`BlockedStumpSearch` therefore splits the
features into fixed contiguous blocks (their number depends on the number of features
only, never on ``n_jobs``), places every block on the workers once per fit, lets each
worker code (presort / bin) a block the first time it sees it and keep the codes, and per
iteration sends A (only its non-zeros when it is mostly zeros, as the planes of chains
and CRFs are) and receives, per block and column, the block's best stump and gain.
The reduction takes, per column, the first block with the largest gain; inside a block
the search already returns the first feature with the largest gain, so the answer is the
first best feature overall -- the serial search's tie rule -- and the result is the
serial :class:`~maxmargin.weak.stump.DecisionStump` answer bit for bit (every gain is
computed by the same two-pass ``DecisionStump.best`` from the same column sums).

Trees, perceptrons and linear SVM weak learners couple features and are searched
serially (``n_jobs`` then parallelises only the oracle).
"""

from __future__ import annotations

import itertools
import os
import tempfile
import uuid
from dataclasses import dataclass

import numpy as np

from maxmargin.solvers.parallel import parallel_session, ray_get, ray_put, release_placement
from maxmargin.weak.base import WeakLearner
from maxmargin.weak.binning import code_features
from maxmargin.weak.stump import DecisionStump, Stumps

__all__ = ["DEFAULT_N_BLOCKS", "BlockedStumpSearch", "feature_blocks", "supports_blocks"]

#: feature blocks per fit (fewer when there are fewer features); independent of n_jobs
DEFAULT_N_BLOCKS = 16


def feature_blocks(n_features: int, n_blocks: int | None = None) -> np.ndarray:
    """Boundaries of ``min(n_features, n_blocks)`` contiguous feature blocks."""
    k = DEFAULT_N_BLOCKS if n_blocks is None else int(n_blocks)
    if k < 1:
        raise ValueError(f"n_blocks must be >= 1, got {n_blocks!r}")
    k = max(1, min(int(n_features), k))
    return (np.arange(k + 1, dtype=np.int64) * int(n_features)) // k


def supports_blocks(weak: WeakLearner) -> bool:
    """Whether ``weak``'s search decomposes over features (exact / histogram stumps)."""
    return type(weak) is DecisionStump or (
        isinstance(weak, DecisionStump) and weak.hypotheses_class is Stumps
    )


@dataclass(frozen=True)
class _Block:
    """Features ``start:stop`` of the weak inputs; ``Z`` (dense or CSC), a file, or (Ray)
    ``obj``, the ``ObjectRef`` of ``Z`` in Ray's object store."""

    token: str
    start: int
    stop: int
    max_bins: int | None
    Z: object = None
    path: str | None = None
    obj: object = None


_PREPARED: dict = {}  # (token, start) -> FeatureCodes, for the current fit only


def _prepared(block: _Block):
    key = (block.token, block.start)
    hit = _PREPARED.get(key)
    if hit is None:
        for k in [k for k in _PREPARED if k[0] != block.token]:
            del _PREPARED[k]  # another (finished) fit's blocks
        Z = block.Z
        if Z is None and block.obj is not None:
            Z = ray_get(block.obj)
        elif Z is None:
            import joblib

            Z = joblib.load(block.path)
        # once per worker and fit; as DecisionStump.prepare (sorted order for exact mode)
        hit = code_features(Z, block.max_bins, keep_order=block.max_bins is None)
        _PREPARED[key] = hit
    return hit


def _pack(A: np.ndarray):
    """A as sent to the workers: dense, or its non-zeros when it is mostly zeros (the
    signed weights of a chain or CRF plane touch only the violators' rows)."""
    flat = A.ravel()
    nz = np.flatnonzero(flat)
    if 12 * len(nz) < flat.nbytes:
        return (A.shape, nz.astype(np.int64), flat[nz])
    return A


def _unpack(A) -> np.ndarray:
    if isinstance(A, np.ndarray):
        return A
    shape, nz, vals = A
    out = np.zeros(int(np.prod(shape)))
    out[nz] = vals
    return out.reshape(shape)


def _block_best(weak: DecisionStump, fc, A, total):
    """``weak.best(fc, A)`` as (feature, threshold, polarity, gain) arrays; for the
    library's stumps the weights are checked and summed once per group, not per block."""
    if type(weak).best is not DecisionStump.best:  # a subclass with its own search
        cand, gain = weak.best(fc, A)
        return cand.feature, cand.threshold, cand.polarity, gain
    cand, gain = weak.best_given_total(fc, A, total)  # DecisionStump.best, shared checks
    return cand.feature, cand.threshold, cand.polarity, gain


def _search_group(blocks, A, weak: DecisionStump):
    A = np.ascontiguousarray(_unpack(A), dtype=np.float64)
    if not np.all(np.isfinite(A)):
        raise ValueError("weights must be finite")
    total = A.sum(axis=0)  # the same column sums DecisionStump.search computes
    out = []
    for block in blocks:
        fc = _prepared(block)
        if A.shape[0] != fc.n_samples:
            raise ValueError(f"weights must have shape ({fc.n_samples}, S), got {A.shape}")
        f, thr, pol, gain = _block_best(weak, fc, A, total)
        out.append((f + block.start, thr, pol, gain))
    return out


class BlockedStumpSearch(WeakLearner):
    """A :class:`~maxmargin.weak.stump.DecisionStump` (or histogram stump) whose search
    runs over fixed feature blocks on the active joblib backend.

    Use as a context manager around a fit: :meth:`prepare` places the blocks on the
    workers (files for loky, ``Client.scatter`` for Dask, in memory for threads) and
    leaving the context removes them.
    """

    hypotheses_class = Stumps
    exact_search = True  # every block searched exhaustively

    def __init__(self, base: DecisionStump, n_jobs=None, n_blocks: int | None = None):
        if not supports_blocks(base):
            raise ValueError(f"{type(base).__name__} does not search features independently")
        self.base = base
        self.n_jobs = n_jobs
        self.n_blocks = n_blocks
        self._session = None
        self._folder = None
        self._futures = None
        self.bytes_sent = 0
        self.bytes_received = 0

    def __enter__(self):
        self._session = parallel_session(self.n_jobs).__enter__()
        return self

    def __exit__(self, *exc):
        release_placement(self, exc)
        _PREPARED.clear()
        return False

    def prepare(self, Z):
        if self._session is None:
            raise RuntimeError("BlockedStumpSearch.prepare outside its 'with' block")
        import scipy.sparse as sp

        Zc = Z.tocsc() if sp.issparse(Z) else np.asarray(Z, dtype=np.float64)
        n, d = Zc.shape
        bounds = feature_blocks(d, self.n_blocks)
        token = uuid.uuid4().hex
        kind = self._session.kind
        blocks = []
        if kind == "files":
            import joblib

            self._folder = tempfile.mkdtemp(prefix=f"maxmargin-blocks-{token[:8]}-")
        for a, b in itertools.pairwise(bounds):
            part = Zc[:, a:b] if sp.issparse(Zc) else np.ascontiguousarray(Zc[:, a:b])
            if kind == "files":
                path = os.path.join(self._folder, f"block{a:07d}.joblib")
                joblib.dump(part, path)
                blocks.append(_Block(token, int(a), int(b), self.base.max_bins, path=path))
            elif kind == "ray":  # once into the object store; tasks carry the reference
                obj = ray_put(part)
                blocks.append(_Block(token, int(a), int(b), self.base.max_bins, obj=obj))
            else:
                blocks.append(_Block(token, int(a), int(b), self.base.max_bins, Z=part))
        if kind == "dask":
            self._futures = self._session.backend.client.scatter(
                blocks, broadcast=False, hash=False
            )
            blocks = list(self._futures)
        return _Prepared(blocks, n, d)

    def best(self, prepared, A):
        A = np.asarray(A, dtype=np.float64)
        if A.ndim == 1:
            A = A[:, None]
        if A.ndim != 2 or A.shape[0] != prepared.n_samples:
            raise ValueError(f"weights must have shape ({prepared.n_samples}, S), got {A.shape}")
        A = np.ascontiguousarray(A)
        blocks = prepared.blocks
        m = min(len(blocks), self._session.n_workers)
        cuts = (np.arange(m + 1) * len(blocks)) // m
        groups = [blocks[a:b] for a, b in itertools.pairwise(cuts)]
        packed = A if self._session.kind in ("inline", "threads") else _pack(A)
        results = self._session.map(
            _search_group,
            [(g, packed, self.base) for g in groups],
            what="the weak-learner search",
        )
        per_block = [r for group in results for r in group]
        if self._session.kind != "inline":
            size = packed.nbytes if isinstance(packed, np.ndarray) else 12 * len(packed[1])
            self.bytes_sent += len(groups) * size
            self.bytes_received += sum(sum(x.nbytes for x in r) for r in per_block)
        gains = np.stack([r[3] for r in per_block])  # (n_blocks, S)
        pick = np.argmax(gains, axis=0)  # first block with the best gain
        cols = np.arange(A.shape[1])
        feat = np.stack([r[0] for r in per_block])[pick, cols]
        thr = np.stack([r[1] for r in per_block])[pick, cols]
        pol = np.stack([r[2] for r in per_block])[pick, cols]
        return Stumps(feat, thr, pol, prepared.n_features), gains[pick, cols]


@dataclass
class _Prepared:
    blocks: list
    n_samples: int
    n_features: int
