"""Hard-negative mining: the n-slack cutting-plane loop of a linear SVM over a negative
set too large to hold (thesis seed 002, Sec. 2.3.4, Table 2.1; Felzenszwalb et al.,
"Object detection with discriminatively trained part based models", TPAMI 32, 2010).

The problem is the full linear SVM (liblinear's form, intercept as a constant column)::

    min_w  1/2 ||w||^2 + C sum_{i in P} max(0, 1 - w.x_i) + C sum_{j in N} max(0, 1 + w.x_j)

over all positives ``P`` and *all* negative windows ``N``.  Each of its n slack
constraints ``xi_j >= 1 + w.x_j`` is a cutting plane; a working set ``W`` of negatives
holds the planes kept in the restricted problem, solved by dual coordinate descent
(:func:`maxmargin.solvers.svm.fit_dual_cd`) warm-started from the last multipliers.  A
round scans every negative with the current ``w``:

* the *hard* negatives are those with score ``w.x_j >= -1`` (inside the margin or
  misclassified) -- the counts of Table 2.1;
* the negatives outside ``W`` with score ``> -1 + eps`` violate a constraint of the
  full problem at the restricted optimum; if there are none, the restricted optimum is
  the full optimum (its multipliers extended by zeros satisfy every KKT condition) and
  the loop stops;
* otherwise easy members of ``W`` (zero multiplier and score ``< -1``) are dropped when
  ``W`` would exceed ``max_working_set``, and the highest-scoring new hard negatives
  are added (ties broken at random, so round 0 with ``w = 0`` draws a random start).

Every round also yields an exact certificate for the *full* problem: the scan gives its
primal objective at ``w``, and the restricted dual at the working-set multipliers is a
feasible dual point of the full problem (the other multipliers zero), so
``gap = (primal - dual) / primal`` bounds the distance to the full optimum.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from maxmargin._validation import add_intercept
from maxmargin.exceptions import warn_interrupted
from maxmargin.solvers.cutting_plane import Plane, UnstabilisedPlanes, kelley_loop
from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.solvers.svm import fit_dual_cd

__all__ = ["MiningResult", "mine_hard_negatives"]


@dataclass
class MiningResult:
    """``w`` (features) and ``b`` (intercept) of the SVM, the working set's negative ids,
    the per-round table and whether the full problem's optimality test was met."""

    w: np.ndarray
    b: float
    working_set: np.ndarray
    history: list = field(default_factory=list)
    converged: bool = False
    primal: float = float("nan")
    dual: float = float("nan")


def _augment(X, scale):
    X = np.asarray(X, dtype=np.float64)
    if scale is None:
        return X
    return add_intercept(X, scale)


def mine_hard_negatives(
    X_pos,
    scan: Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]],
    C: float = 1.0,
    *,
    max_working_set: int = 10000,
    max_rounds: int = 20,
    eps: float = 1e-6,
    tol: float = 1e-8,
    max_iter: int = 100000,
    fit_intercept: bool = True,
    intercept_scaling: float = 1.0,
    rng=None,
    verbose: int = 0,
    callback=None,
    weight=None,
) -> MiningResult:
    """Train a linear SVM on positives ``X_pos`` and all negatives produced by ``scan``.

    ``scan()`` returns a fresh iterable of ``(ids, X)`` chunks covering every negative
    once (e.g. one chunk per image, features computed on the fly); ``ids`` are unique
    integer ids.  ``tol`` is the relative duality gap of each restricted solve, ``eps``
    the margin slack of the stopping test.  ``weight``: None, or a function of a chunk's
    ``ids`` giving their positive weights ``c_i`` in the hinge sum (``C c_i``; the
    positives weigh 1; :func:`~maxmargin.solvers.svm.fit_dual_cd`'s ``sample_weight``).
    The history has one row per round:
    ``iteration``, ``n_hard`` (negatives with score >= -1), ``n_violating`` (those outside
    the working set with score > -1 + eps; 0 at convergence), ``n_new`` (hard ones added;
    0 in the last row, where the loop stopped),
    ``working_set``, ``objective`` (full primal at the scanned ``w``), ``dual_bound``,
    ``gap``, ``t_scan``, ``t_solve``, ``t_total``.

    Ctrl-C (KeyboardInterrupt, also from ``scan`` or ``callback``) after the first
    restricted solve returns the SVM of the last completed solve, ``converged=False``,
    NaN objectives, and a :class:`~maxmargin.exceptions.FitInterruptedWarning`; before
    it, the interrupt propagates.
    """
    rng = np.random.default_rng(rng)
    scale = float(intercept_scaling) if fit_intercept else None
    Xp = _augment(X_pos, scale)
    if Xp.shape[0] == 0:
        raise ValueError("need at least one positive example")
    if max_working_set < 1:
        raise ValueError(f"max_working_set must be >= 1, got {max_working_set}")
    mon = ConvergenceMonitor(
        "mining",
        verbose=verbose,
        callback=callback,
        fields=("iteration", "objective", "n_new", "working_set"),
    )
    limits = (int(max_working_set), int(max_rounds), eps, tol, max_iter)
    pr = _MiningPlanes(Xp, scan, float(C), scale, limits, rng, mon, weight)
    try:
        kelley_loop(pr, None)
        w, primal, dual = pr.w, pr.primal, pr.dual
    except KeyboardInterrupt:
        # Ctrl-C: keep the SVM of the last completed restricted solve (w is replaced only
        # after a solve returns); before the first solve there is nothing to keep
        if not pr.solved:
            raise
        pr.converged = False
        w, primal, dual = pr.w, float("nan"), float("nan")  # the last scan: an older w
        warn_interrupted(len(mon.history))
    out = (pr.ws_ids, mon.history, pr.converged, primal, dual)
    if scale is None:
        return MiningResult(w, 0.0, *out)
    return MiningResult(w[:-1], float(w[-1] * scale), *out)


class _MiningPlanes(UnstabilisedPlanes):
    """:class:`~maxmargin.solvers.cutting_plane.PlaneProblem` of hard-negative mining: a
    round's "plane" is the batch of violating negatives found by one scan; adding it
    updates the working set, solving is a warm-started dual coordinate descent."""

    def __init__(self, Xp, scan, C, scale, limits, rng, mon, weight=None):
        # limits = (max_ws, max_rounds, eps, tol, max_iter): the loop's budgets and tolerances
        max_ws, max_rounds, eps, tol, max_iter = limits
        self.Xp, self.scan, self.C, self.scale = Xp, scan, C, scale
        self.weight = weight
        self.ws_w = np.zeros(0)
        self.max_ws, self.max_rounds, self.eps = max_ws, max_rounds, eps
        self.tol, self.max_iter, self.rng, self.mon = tol, max_iter, rng, mon
        n_pos, d = Xp.shape
        self.w = np.zeros(d)
        self.ws_ids = np.zeros(0, dtype=np.int64)
        self.ws_X = np.zeros((0, d))
        self.ws_alpha = np.zeros(0)
        self.alpha_pos = np.zeros(n_pos)
        self.t0 = time.perf_counter()
        self.dual = -np.inf
        self.primal = np.inf
        self.converged = False
        self.solved = False  # a restricted solve has completed: there is a model to keep
        self.rec = {}

    def point(self, sol):
        return self.w

    def query(self, w) -> Plane:
        """Scan every negative with ``w``: the full primal, the certificate and the
        violating negatives outside the working set (the best ``max_working_set``)."""
        ts = time.perf_counter()
        d, scale, eps, max_ws = w.shape[0], self.scale, self.eps, self.max_ws
        n_hard = n_violating = seen = 0
        hinge_neg = 0.0
        cand_ids = np.zeros(0, dtype=np.int64)
        cand_X = np.zeros((0, d))
        cand_key = np.zeros(0)
        cand_w = np.zeros(0)
        for ids, X in self.scan():
            ids = np.asarray(ids, dtype=np.int64).ravel()
            Xa = _augment(X, scale)
            if Xa.shape != (len(ids), d):
                raise ValueError(
                    f"scan() gave {Xa.shape[0]} x {Xa.shape[1] - (scale is not None)} "
                    f"features for {len(ids)} ids; expected {d - (scale is not None)} features"
                )
            seen += len(ids)
            s = Xa @ w
            cw = None
            if self.weight is not None:
                cw = np.asarray(self.weight(ids), dtype=np.float64).ravel()
                if cw.shape != ids.shape or not np.all(np.isfinite(cw) & (cw > 0)):
                    raise ValueError("weight(ids) must give one positive finite weight per id")
                hinge_neg += float((cw * np.maximum(0.0, 1.0 + s)).sum())
            else:
                hinge_neg += float(np.maximum(0.0, 1.0 + s).sum())
            n_hard += int((s >= -1.0).sum())
            new = (s > -1.0 + eps) & ~np.isin(ids, self.ws_ids)
            n_violating += int(new.sum())
            if not new.any():
                continue
            # streaming top-k by (score, random tie-break): keep at most max_working_set
            key = s[new] + 1e-9 * self.rng.random(int(new.sum()))
            cand_ids = np.concatenate([cand_ids, ids[new]])
            cand_X = np.vstack([cand_X, Xa[new]])
            cand_key = np.concatenate([cand_key, key])
            cand_w = np.concatenate([cand_w, np.ones(int(new.sum())) if cw is None else cw[new]])
            if len(cand_key) > 2 * max_ws:
                top = np.argsort(-cand_key, kind="stable")[:max_ws]
                cand_ids, cand_X, cand_key = cand_ids[top], cand_X[top], cand_key[top]
                cand_w = cand_w[top]
        if seen == 0:
            raise ValueError("scan() produced no negatives")
        hinge_pos = float(np.maximum(0.0, 1.0 - self.Xp @ w).sum())
        self.primal = 0.5 * float(w @ w) + self.C * (hinge_pos + hinge_neg)
        gap = (self.primal - self.dual) / max(abs(self.primal), 1e-12)
        self.rec = {
            "n_hard": n_hard,
            "n_new": int(min(len(cand_ids), max_ws)),
            "n_violating": n_violating,
            "working_set": len(self.ws_ids),
            "n_negatives": seen,
            "objective": self.primal,
            "dual_bound": float(self.dual),
            "gap": float(gap),
            "t_scan": time.perf_counter() - ts,
            "t_solve": 0.0,
        }
        self.n_cand = len(cand_ids)
        return Plane(b=0.0, payload=(cand_ids, cand_X, cand_key, cand_w))

    def stop(self, rnd, best, sol):
        if self.n_cand == 0 or rnd == self.max_rounds:
            self.converged = self.n_cand == 0
            self.rec["n_new"] = 0
            return "converged" if self.converged else "max_rounds"
        return None

    def add(self, plane, sol) -> bool:
        """The highest-scoring new negatives join the working set; easy members (zero
        multiplier, score < -1) leave it only as far as room is needed."""
        cand_ids, cand_X, cand_key, cand_w = plane.payload
        order = np.argsort(-cand_key, kind="stable")
        cand_ids, cand_X, cand_w = cand_ids[order], cand_X[order], cand_w[order]
        room = self.max_ws - len(self.ws_ids)
        if room < len(cand_ids) and len(self.ws_ids):
            s_ws = self.ws_X @ self.w
            easy = (self.ws_alpha <= 0.0) & (s_ws < -1.0)
            need = min(len(cand_ids) - room, int(easy.sum()))
            drop = np.flatnonzero(easy)[np.argsort(s_ws[easy])[:need]]
            keep = np.ones(len(self.ws_ids), dtype=bool)
            keep[drop] = False
            self.ws_ids, self.ws_X = self.ws_ids[keep], self.ws_X[keep]
            self.ws_alpha, self.ws_w = self.ws_alpha[keep], self.ws_w[keep]
            room = self.max_ws - len(self.ws_ids)
        if room <= 0:
            warnings.warn(
                f"the working set is full of support vectors ({len(self.ws_ids)}); "
                "raise max_working_set to reach the full problem's optimum",
                RuntimeWarning,
                stacklevel=4,
            )
            self.rec["n_new"] = 0
            return False
        add = slice(0, room)
        self.ws_ids = np.concatenate([self.ws_ids, cand_ids[add]])
        self.ws_X = np.vstack([self.ws_X, cand_X[add]])
        self.ws_alpha = np.concatenate([self.ws_alpha, np.zeros(len(cand_ids[add]))])
        self.ws_w = np.concatenate([self.ws_w, cand_w[add]])
        self.rec["n_new"] = len(cand_ids[add])
        return True

    def solve(self):
        """The restricted SVM by dual coordinate descent, warm-started."""
        tv = time.perf_counter()
        n_pos = self.Xp.shape[0]
        X = np.vstack([self.Xp, self.ws_X])
        y = np.concatenate([np.ones(n_pos), -np.ones(len(self.ws_ids))])
        sol = fit_dual_cd(
            X,
            y,
            self.C,
            tol=self.tol,
            max_iter=self.max_iter,
            rng=self.rng,
            alpha0=np.concatenate([self.alpha_pos, self.ws_alpha]),
            sample_weight=None
            if self.weight is None
            else np.concatenate([np.ones(n_pos), self.ws_w]),
        )
        self.w = sol.w
        self.dual = float(sol.dual)
        self.alpha_pos, self.ws_alpha = sol.alpha[:n_pos], sol.alpha[n_pos:]
        self.solved = True
        self.rec.update(t_solve=time.perf_counter() - tv, solve_converged=bool(sol.converged))
        return None

    def record(self, rnd, plane, t_oracle, t_master, sol) -> bool:
        self.mon.record({"iteration": rnd, **self.rec, "t_total": time.perf_counter() - self.t0})
        return False
