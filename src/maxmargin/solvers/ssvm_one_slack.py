"""1-slack cutting-plane training of linear structured SVMs.

Joachims, Finley & Yu, "Cutting-plane training of structural SVMs", Machine Learning 77
(2009) [Joachims2009 Alg. 4] (margin rescaling) / [Joachims2009 Alg. 5] (slack rescaling);
[Nowozin2011] "working set one-slack".  With ``J(w) = 1/2||w||^2 + C/n sum_i H_i(w)`` the
1-slack problem is

    min 1/2 ||w||^2 + C xi   s.t.  <w, a> >= b - xi  for every joint labelling,
    a = 1/n sum_i c_i dPsi_i(yhat_i),   b = 1/n sum_i c_i' ...

with ``c_i = 1, b = mean Delta_i`` (margin rescaling) or ``a = 1/n sum_i Delta_i dPsi_i``,
``b = mean Delta_i`` (slack rescaling).  The working-set dual is re-solved from the
previous multipliers by :class:`~maxmargin.solvers.qp_master.OneSlackQPMaster`, planes
whose multiplier stayed zero for ``inactive_window`` solves are pruned, and a cache of
the last ``cache_size`` loss-augmented outputs per example is tried before the oracle
(Joachims et al. 2009, Sec. 4.2): if the plane built from the best cached outputs is
violated by more than the current gap allows, it is added without an oracle call.

Every oracle call gives the exact primal ``J(w)``; the master dual is a lower bound on
``min J`` (its multipliers are feasible for the full 1-slack dual), so
``best primal - master dual`` is a valid duality gap.

A model that declares non-negative coordinates (``model.nonneg_coords``, e.g. the CRF's
pairwise weights: Szummer, Kohli & Hoiem, "Learning CRFs using graph cuts", ECCV 2008)
is trained on ``{w : w_J >= 0}``: the master enforces the bounds (its dual with their
multipliers: :mod:`maxmargin.solvers.qp_master`), every master point and in-out query
point (a convex combination of two) is feasible, and the gap certifies the constrained
problem ``min_{w_J >= 0} J(w)``.
"""

from __future__ import annotations

import numpy as np

from maxmargin.solvers.cutting_plane import Plane, one_slack_cutting_planes
from maxmargin.solvers.monitor import GapMonitor, SSVMResult
from maxmargin.solvers.qp_master import OneSlackQPMaster, declared_nonneg
from maxmargin.tasks.linear import LinearJointModel, rescaled_hinge

__all__ = ["fit_one_slack"]


class _OutputCache:
    """Last ``size`` distinct loss-augmented labellings of every example (ring buffer)."""

    def __init__(self, model: LinearJointModel, size: int):
        self.model = model
        self.size = size
        self.labels = np.empty((size, model.n_positions), dtype=np.int64)
        self.count = 0
        self.head = 0

    def add(self, labels) -> None:
        self.labels[self.head] = labels
        self.head = (self.head + 1) % self.size
        self.count = min(self.count + 1, self.size)

    def best(self, w, rescaling, U):
        """Per example the cached labelling with the largest rescaled hinge (or the truth)."""
        m = self.model
        best_h = np.zeros(m.n_samples)
        best_loss = np.zeros(m.n_samples)
        best_margin = np.zeros(m.n_samples)
        choice = np.full(m.n_samples, -1)
        for c in range(self.count):
            loss, margin = m.evaluate(w, self.labels[c], U=U)
            h = rescaled_hinge(loss, margin, rescaling)
            better = h > best_h
            best_h[better] = h[better]
            best_loss[better] = loss[better]
            best_margin[better] = margin[better]
            choice[better] = c
        labels = m.y.copy()
        pos_choice = choice if m.max_length == 1 else np.repeat(choice, m.lengths)
        for c in range(self.count):
            sel = pos_choice == c
            labels[sel] = self.labels[c][sel]
        return labels, best_loss, best_margin, best_h


def _plane(model, labels, loss, margin, rescaling):
    n = model.n_samples
    coef = (loss if rescaling == "slack" else np.ones(n)) / n
    active = rescaled_hinge(loss, margin, rescaling) > 0
    coef = np.where(active, coef, 0.0)
    a = model.plane(labels, coef)
    b = float(np.sum(np.where(active, loss, 0.0))) / n
    return a, b


def fit_one_slack(
    model: LinearJointModel,
    C: float,
    rescaling: str = "margin",
    tol: float = 1e-3,
    max_iter: int = 1000,
    max_time=None,
    inactive_window: int | None = 50,
    cache_size: int = 0,
    stabilize: bool = True,
    callback=None,
    verbose: int = 0,
) -> SSVMResult:
    """Train ``w`` by 1-slack cutting planes (the shared loop of
    :mod:`maxmargin.solvers.cutting_plane`); see the module docstring."""
    model.check_rescaling(rescaling)
    master = OneSlackQPMaster(
        C=C,
        dim=model.dim,
        tol=1e-10,
        prune_after=inactive_window,
        solver="active-set",
        nonneg=declared_nonneg(model),
    )
    tr = GapMonitor(tol, max_iter, max_time, callback, verbose, name="1-slack")
    cache = _OutputCache(model, cache_size) if cache_size > 0 else None
    n_cached = 0
    hinge_bound = getattr(model, "hinge_upper_bound", None)

    def find_plane(sol) -> Plane:
        nonlocal n_cached
        w, xi = sol.w, sol.xi
        sharded = hasattr(model, "one_slack_plane")  # a ShardedModel (n_jobs)
        U = None if sharded and cache is None else model.unary(w)
        if cache is not None and cache.count and np.isfinite(tr.gap):
            labels, loss, margin, _ = cache.best(w, rescaling, U)
            a, b = _plane(model, labels, loss, margin, rescaling)
            violation = b - float(a @ w) - xi
            # accept when the cached plane could close a good part of the current gap
            if C * violation > 0.5 * max(tr.gap, tol * tr.best_primal):
                n_cached += 1
                return Plane(b, a, source="cache")
        # an oracle that is exact only where the energies are submodular (CRF graph cuts)
        # gives valid planes everywhere but a hinge that is only a lower bound elsewhere:
        # the primal value offered to the certificate is then the task's upper bound
        if sharded and cache is None:  # only the plane and the risk leave the workers
            # (the risk's upper bound: the shards add hinge_upper_bound's slack, per image)
            a, b, risk = model.one_slack_plane_only(w, rescaling)
            return Plane(b, a, primal=0.5 * float(w @ w) + C * risk, state=w)
        if sharded:  # per-shard planes, added along a fixed tree (solvers/parallel.py)
            labels, loss, margin, a, b = model.one_slack_plane(w, rescaling)
        else:
            labels, loss, margin = model.loss_augmented(w, rescaling, U=U)
        hinge = rescaled_hinge(loss, margin, rescaling)
        if cache is not None:
            cache.add(labels)
        if not sharded:
            a, b = _plane(model, labels, loss, margin, rescaling)
        upper = hinge if hinge_bound is None else hinge_bound(w, labels, hinge)
        return Plane(b, a, primal=model.objective(w, C, upper), state=w)

    sol = one_slack_cutting_planes(
        find_plane, master, tr, tol=tol, max_iter=max_iter, stabilize=stabilize
    )
    return tr.result(sol.w, n_cached=n_cached, n_planes=master.n_planes)
