"""Binary SVM solvers (thesis seed 002, Sec. 2.3): SMO, dual coordinate descent, Pegasos
and the 1-slack cutting plane.

Labels are ``y in {-1, +1}``.  Two problems are solved, both with scikit-learn's ``C``:

* kernel SVM with an unregularised intercept (``sklearn.svm.SVC``, libsvm)::

      min_{w, b} 1/2 ||w||^2 + C sum_i max(0, 1 - y_i (<w, phi(x_i)> + b))

  dual: ``min_a 1/2 a^T Q a - e^T a``, ``0 <= a <= C``, ``y^T a = 0``,
  ``Q_ij = y_i y_j K(x_i, x_j)`` -- :func:`fit_smo`;

* linear SVM without a separate intercept (``sklearn.svm.LinearSVC``, liblinear; an
  intercept is a constant column appended by the caller, so it is regularised as in
  liblinear)::

      min_w 1/2 ||w||^2 + C sum_i loss(y_i <w, x_i>),   loss = hinge or squared hinge

  -- :func:`fit_dual_cd`, :func:`fit_pegasos` (hinge) and :func:`fit_one_slack_svm`
  (hinge).

Every solver returns an :class:`SVMSolution` with the primal objective of its iterate, a
valid lower bound (a dual objective at a feasible dual point) and a history whose rows
carry ``iteration``, ``objective``, ``dual_bound``, ``gap`` (relative: ``(objective -
dual_bound) / objective``) and ``t_total``.

References
----------
J. Platt, "Fast training of support vector machines using sequential minimal
optimization", Advances in Kernel Methods, MIT Press 1999.
S. S. Keerthi, S. K. Shevade, C. Bhattacharyya, K. R. K. Murthy, "Improvements to Platt's
SMO algorithm for SVM classifier design", Neural Computation 13 (2001) -- WSS1, the
maximal violating pair.
R.-E. Fan, P.-H. Chen, C.-J. Lin, "Working set selection using second order information
for training support vector machines", JMLR 6 (2005) -- WSS2.
C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi, S. Sundararajan, "A dual coordinate
descent method for large-scale linear SVM", ICML 2008.
S. Shalev-Shwartz, Y. Singer, N. Srebro, "Pegasos: primal estimated sub-gradient solver
for SVM", ICML 2007.
T. Joachims, "Training linear SVMs in linear time", KDD 2006; T. Joachims, T. Finley,
C.-N. J. Yu, "Cutting-plane training of structural SVMs", Machine Learning 77 (2009).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit

from maxmargin.solvers.cutting_plane import Plane, one_slack_cutting_planes
from maxmargin.solvers.monitor import ConvergenceMonitor, GapMonitor
from maxmargin.solvers.qp_master import OneSlackQPMaster

__all__ = [
    "DualCDData",
    "KernelRows",
    "SVMSolution",
    "dual_cd_data",
    "fit_dual_cd",
    "fit_one_slack_svm",
    "fit_pegasos",
    "fit_smo",
    "hinge_objective",
    "kernel_rows",
]


@dataclass(kw_only=True)
class SVMSolution:
    """A solver's result: ``w`` (linear solvers) or ``alpha``/``b`` (SMO), the primal
    objective, a dual lower bound and the history."""

    w: np.ndarray | None = None
    b: float = 0.0
    alpha: np.ndarray | None = None
    primal: float
    dual: float
    converged: bool
    n_iter: int
    history: list = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C stopped the solver: the last consistent iterate
    active: np.ndarray | None = None  # dual CD: the samples active at the end

    @property
    def gap(self) -> float:
        return self.primal - self.dual


def _record(mon: ConvergenceMonitor, iteration, primal, dual, notify=True, **extra) -> float:
    """One history record (the shared schema) on ``mon``; returns the relative gap.
    When a callback asks to stop (``mon.stop_reason`` set) the loops end after it."""
    rel = (primal - dual) / max(abs(primal), 1e-12)
    rec = {
        "iteration": int(iteration),
        "objective": float(primal),
        "dual_bound": float(dual),
        "gap": float(rel),
    }
    rec.update(extra)
    mon.record(rec, notify=notify)
    return rel


def _monitor(name, callback, verbose, max_time) -> ConvergenceMonitor:
    """The solvers' monitor: ``verbose`` progress, the user's ``callback`` and the
    ``max_time`` budget (``stop_reason`` "max_time") are its callbacks."""
    return ConvergenceMonitor(
        name,
        verbose=verbose,
        max_time=max_time,
        callback=callback,
        fields=("iteration", "objective", "dual_bound", "gap"),
    )


def hinge_objective(margins, sq_norm, C, loss="hinge") -> float:
    """``1/2 ||w||^2 + C sum loss(margin_i)`` from the margins ``y_i f(x_i)``."""
    h = np.maximum(0.0, 1.0 - margins)
    if loss == "squared_hinge":
        h = h * h
    return 0.5 * float(sq_norm) + C * float(h.sum())


# ===================================================================================== SMO
#: kernels SMO computes row by row (others: a precomputed matrix)
ROW_KERNELS = {"linear": 1, "rbf": 2, "poly": 3, "sigmoid": 4}


class KernelRows(NamedTuple):
    """Kernel rows for SMO, computed on demand and kept in a least-recently-used cache (as
    libsvm's kernel cache): row ``i`` lives in slot ``slot_of[i]`` of ``cache`` (-1: not
    cached).  ``kind`` 0 is a precomputed matrix held whole in ``cache`` (every row cached);
    1-4 compute ``k(x_i, x_t)`` from ``X`` as scikit-learn's linear / rbf / poly / sigmoid
    kernels.  Built by :func:`kernel_rows`; shared by the one-vs-rest problems of a fit.
    """

    X: np.ndarray
    sqn: np.ndarray  # squared row norms of X
    diag: np.ndarray  # k(x_i, x_i)
    kind: int
    gamma: float
    coef0: float
    degree: float
    cache: np.ndarray  # (slots, n)
    slot_of: np.ndarray  # (n,) int64
    row_in: np.ndarray  # (slots,) int64
    last_used: np.ndarray  # (slots,) int64
    clock: np.ndarray  # (1,) int64 access counter; clock[1]: rows computed


def kernel_rows(X=None, kernel="rbf", gamma=1.0, coef0=0.0, degree=3, cache_size=200.0, K=None):
    """:class:`KernelRows` for dense ``X`` and a scikit-learn kernel name (``ROW_KERNELS``)
    with a cache of ``cache_size`` MB (at least 2 rows), or for a precomputed matrix
    ``K``."""
    # C-ordered writeable float64 only (a read-only input is copied once): numba compiles
    # the SMO steps once per array type, and a read-only array is another type
    if K is not None:
        K = np.require(K, dtype=np.float64, requirements=["C_CONTIGUOUS", "WRITEABLE"])
        n = K.shape[0]
        if K.shape != (n, n):
            raise ValueError(f"K must be square, got shape {K.shape}")
        idx = np.arange(n, dtype=np.int64)
        return KernelRows(
            np.zeros((n, 0)), np.zeros(n), np.ascontiguousarray(np.diag(K)), 0, 0.0, 0.0, 0.0,
            K, idx, idx.copy(), np.zeros(n, np.int64), np.zeros(2, np.int64),
        )  # fmt: skip
    if kernel not in ROW_KERNELS:
        raise ValueError(f"kernel must be one of {sorted(ROW_KERNELS)}, got {kernel!r}")
    X = np.require(X, dtype=np.float64, requirements=["C_CONTIGUOUS", "WRITEABLE"])
    n = X.shape[0]
    sqn = np.einsum("ij,ij->i", X, X)
    g, c0, deg = float(gamma), float(coef0), float(degree)
    diag = {
        "linear": sqn,
        "rbf": np.ones(n),
        "poly": (g * sqn + c0) ** deg,
        "sigmoid": np.tanh(g * sqn + c0),
    }[kernel]
    slots = int(max(2, min(n, cache_size * 2**20 // max(8 * n, 1))))
    return KernelRows(
        X, sqn, np.ascontiguousarray(diag), ROW_KERNELS[kernel], g, c0, deg,
        np.empty((slots, n)), np.full(n, -1, np.int64), np.full(slots, -1, np.int64),
        np.zeros(slots, np.int64), np.zeros(2, np.int64),
    )  # fmt: skip


@njit(cache=True)
def _kernel_row(kr, i):  # pragma: no cover - compiled
    """Row ``i`` of the kernel matrix, from the cache or computed into the least recently
    used slot."""
    kr.clock[0] += 1
    s = kr.slot_of[i]
    if s >= 0:
        kr.last_used[s] = kr.clock[0]
        return kr.cache[s]
    s = np.argmin(kr.last_used)
    old = kr.row_in[s]
    if old >= 0:
        kr.slot_of[old] = -1
    kr.row_in[s] = i
    kr.slot_of[i] = s
    kr.last_used[s] = kr.clock[0]
    kr.clock[1] += 1
    row = kr.cache[s]
    dots = kr.X @ kr.X[i]
    if kr.kind == 1:
        row[:] = dots
    elif kr.kind == 2:
        for t in range(row.shape[0]):
            d2 = kr.sqn[i] + kr.sqn[t] - 2.0 * dots[t]
            row[t] = np.exp(-kr.gamma * (d2 if d2 > 0.0 else 0.0))
    elif kr.kind == 3:
        for t in range(row.shape[0]):
            row[t] = (kr.gamma * dots[t] + kr.coef0) ** kr.degree
    else:
        for t in range(row.shape[0]):
            row[t] = np.tanh(kr.gamma * dots[t] + kr.coef0)
    return row


@njit(cache=True)
def _svc_dual_smo_steps(kr, y, C, alpha, G, tol, max_steps, wss2, tau):
    """At most ``max_steps`` SMO steps on the SVC dual ``min 1/2 a^T Q a - e^T a, 0 <= a
    <= C, y^T a = 0`` (a box and one equality: the intercept's; [Platt1999]) in place;
    returns (steps, violation, converged).  For the capped simplex of the structured
    masters see :func:`maxmargin.solvers.qp_master.capped_simplex_smo_steps`.

    ``G = Q alpha - e`` is the dual gradient.  I_up / I_low are the index sets where
    ``alpha_t`` may move up / down along ``y_t``; the maximal violation is
    ``m - M = max_{I_up} -y G - min_{I_low} -y G`` ([Keerthi2001]), the stopping
    rule is ``m - M <= tol`` (libsvm's).  WSS1 takes the maximal violating pair, WSS2
    keeps ``i`` and picks ``j`` with the largest second-order decrease
    ``b_ij^2 / a_ij`` ([Fan2005]).  Each step reads kernel rows i and j only
    (``kr``: :class:`KernelRows`).
    """
    n = y.shape[0]
    Kd = kr.diag
    steps = 0
    viol = np.inf
    while steps < max_steps:
        gmax = -np.inf
        i = -1
        for t in range(n):
            if (y[t] > 0 and alpha[t] < C) or (y[t] < 0 and alpha[t] > 0):
                v = -y[t] * G[t]
                if v >= gmax:
                    gmax = v
                    i = t
        gmin = np.inf
        jmin = -1
        j2 = -1
        best = np.inf
        if i >= 0:
            Ki = _kernel_row(kr, i)
            Kii = Kd[i]
        else:
            Ki = Kd
            Kii = 0.0
        for t in range(n):
            if (y[t] > 0 and alpha[t] > 0) or (y[t] < 0 and alpha[t] < C):
                v = -y[t] * G[t]
                if v <= gmin:
                    gmin = v
                    jmin = t
                if wss2:
                    bb = gmax - v
                    if bb > 0.0:
                        a = Kii + Kd[t] - 2.0 * Ki[t]
                        if a <= 0.0:
                            a = tau
                        o = -bb * bb / a
                        if o <= best:
                            best = o
                            j2 = t
        viol = gmax - gmin
        if i < 0 or jmin < 0 or viol <= tol:
            return steps, viol, True
        j = j2 if (wss2 and j2 >= 0) else jmin
        a = Kii + Kd[j] - 2.0 * Ki[j]
        if a <= 0.0:
            a = tau
        t_step = (gmax + y[j] * G[j]) / a
        # alpha_i += y_i t, alpha_j -= y_j t, both kept in [0, C]
        cap_i = C - alpha[i] if y[i] > 0 else alpha[i]
        cap_j = alpha[j] if y[j] > 0 else C - alpha[j]
        if t_step >= cap_i:
            t_step = cap_i
        if t_step >= cap_j:
            t_step = cap_j
        alpha[i] += y[i] * t_step
        alpha[j] -= y[j] * t_step
        if t_step == cap_i:
            alpha[i] = C if y[i] > 0 else 0.0
        if t_step == cap_j:
            alpha[j] = 0.0 if y[j] > 0 else C
        Kj = _kernel_row(kr, j)  # at least two slots: row i stays cached (just used)
        for k in range(n):
            G[k] += t_step * y[k] * (Ki[k] - Kj[k])
        steps += 1
    return steps, viol, False


def _smo_bias(alpha, G, y, C):
    """Intercept: mean of ``-y_t G_t`` over free multipliers (exact by KKT), else the
    midpoint of the feasible interval (as libsvm)."""
    free = (alpha > 0) & (alpha < C)
    v = -y * G
    if np.any(free):
        return float(v[free].mean())
    up = ((y > 0) & (alpha < C)) | ((y < 0) & (alpha > 0))
    low = ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < C))
    hi = v[up].max() if np.any(up) else 0.0
    lo = v[low].min() if np.any(low) else 0.0
    return 0.5 * float(hi + lo)


def _smo_objectives(alpha, G, y, b, C):
    """Primal at ``(w(alpha), b)`` and the dual value, from the gradient only.

    ``Q alpha = G + e``, so ``||w||^2 = alpha^T (G + e)``, the margin of sample ``t`` is
    ``G_t + 1 + y_t b`` and the dual is ``e^T alpha - 1/2 ||w||^2``.
    """
    sq = float(alpha @ (G + 1.0))
    hinge = np.maximum(0.0, -G - y * b).sum()
    return 0.5 * sq + C * float(hinge), float(alpha.sum()) - 0.5 * sq


def fit_smo(
    K,
    y,
    C,
    *,
    wss="wss2",
    tol=1e-3,
    max_iter=1_000_000,
    max_time=None,
    callback=None,
    verbose=0,
) -> SVMSolution:
    """Decomposition (SMO) on the kernel matrix: ``K`` is an (n x n) array or a
    :class:`KernelRows` (rows computed on demand into an LRU cache, as libsvm; see
    :func:`kernel_rows`).

    ``tol``: the maximal KKT violation ``m - M`` at which to stop (libsvm's ``eps``);
    ``max_iter``: total pair updates.  No shrinking (libsvm shrinks).
    """
    kr = K if isinstance(K, KernelRows) else kernel_rows(K=K)
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    alpha = np.zeros(n)
    G = -np.ones(n)
    mon = _monitor("smo", callback, verbose, max_time)
    history = mon.history
    chunk = max(1000, n)
    steps = 0
    converged = interrupted = False
    try:
        while True:
            budget = min(chunk, max_iter - steps)
            done, viol, converged = _svc_dual_smo_steps(
                kr, y, float(C), alpha, G, float(tol), budget, wss == "wss2", 1e-12
            )
            steps += done
            b = _smo_bias(alpha, G, y, C)
            primal, dual = _smo_objectives(alpha, G, y, b, C)
            _record(mon, steps, primal, dual, kkt_violation=float(viol))
            if converged or steps >= max_iter or mon.stop_reason:
                break
    except KeyboardInterrupt:
        # the numba kernel updates alpha and G together and cannot be interrupted
        # midway, so (alpha, G) is a consistent dual point whenever Python sees Ctrl-C
        if not np.any(alpha):
            raise  # no step taken: nothing to keep
        interrupted, converged = True, False
        b = _smo_bias(alpha, G, y, C)
        primal, dual = _smo_objectives(alpha, G, y, b, C)
    return SVMSolution(
        b=b,
        alpha=alpha,
        primal=primal,
        dual=dual,
        converged=bool(converged),
        n_iter=steps,
        history=history,
        interrupted=interrupted,
    )


# ============================================================ dual coordinate descent
@njit(cache=True)
def _rand_below(rstate, m):  # pragma: no cover - compiled
    """A uniform integer in ``[0, m)`` from a xorshift64* generator whose state is
    ``rstate[0]`` (Marsaglia 2003; Vigna 2016): deterministic for a given seed and
    independent of numba's global random state."""
    x = rstate[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rstate[0] = x
    r = (x * np.uint64(2685821657736338717)) >> np.uint64(11)  # 53 random bits
    return np.int64(r % np.uint64(m))


@njit(cache=True, fastmath=True)
def _dense_dot(Xd, i, w):  # pragma: no cover - compiled
    """``<x_i, w>`` for a dense row (fastmath: a vectorised sum)."""
    g = 0.0
    for k in range(Xd.shape[1]):
        g += Xd[i, k] * w[k]
    return g


@njit(cache=True)
def _row_dot(rows, i, w):  # pragma: no cover - compiled
    """``<x_i, w>`` from the dense rows ``Xd`` or the CSR arrays of ``rows = (indptr,
    indices, data, Xd, dense)`` (the sparse sum without fastmath, whose gathers were twice
    as slow here)."""
    indptr, indices, data, Xd, dense = rows
    if dense:
        return _dense_dot(Xd, i, w)
    g = 0.0
    for k in range(indptr[i], indptr[i + 1]):
        g += w[indices[k]] * data[k]
    return g


@njit(cache=True)
def _row_axpy(rows, i, d, w):  # pragma: no cover - compiled
    """``w += d x_i``."""
    indptr, indices, data, Xd, dense = rows
    if dense:
        for k in range(Xd.shape[1]):
            w[k] += d * Xd[i, k]
    else:
        for k in range(indptr[i], indptr[i + 1]):
            w[indices[k]] += d * data[k]


@njit(cache=True)
def _dcd_check(rows, y, alpha, w, box, index, active, react):  # pragma: no cover - compiled
    """One pass over every sample: the primal ``1/2||w||^2 + C sum cw_i loss(y_i <w,
    x_i>)``, the dual ``e^T alpha - 1/2 ||w||^2 - diag/2 sum alpha_i^2 / cw_i`` (sample
    ``i``'s bound ``U cw_i``; ``cw``: the sample weights, ones for none), the projected-gradient
    spread over all samples (liblinear's stopping quantity) and, if ``react``, the shrunk
    samples whose projected gradient is non-zero moved back into the active set (the
    margins are at hand).  Returns (primal, dual, spread, active).  ``rows``:
    :func:`_row_dot`'s tuple; ``box = (C, diag, U, squared, cw)``: the loss constants,
    the dual's upper bound and the sample weights, as in :func:`fit_dual_cd`."""
    C, diag, U, squared, cw = box
    n = y.shape[0]
    loss = 0.0
    asum = 0.0
    asq = 0.0
    pgmax = -np.inf
    pgmin = np.inf
    for s in range(n):
        i = index[s]
        m = y[i] * _row_dot(rows, i, w)
        h = 1.0 - m
        if h > 0.0:
            loss += cw[i] * (h * h if squared else h)
        a = alpha[i]
        asum += a
        asq += a * a / cw[i]
        g = m - 1.0 + diag * a / cw[i]
        pg = g
        if a <= 0.0:
            pg = g if g < 0.0 else 0.0
        elif a >= U * cw[i]:
            pg = g if g > 0.0 else 0.0
        if pg > pgmax:
            pgmax = pg
        if pg < pgmin:
            pgmin = pg
        if react and s >= active and pg != 0.0:
            index[s], index[active] = index[active], index[s]
            active += 1
    sq = 0.0
    for k in range(w.shape[0]):
        sq += w[k] * w[k]
    spread = pgmax - pgmin if n > 0 else 0.0
    return 0.5 * sq + C * loss, asum - 0.5 * sq - 0.5 * diag * asq, spread, active


@njit(cache=True)
def _dcd_run(
    rows, y, Qd, box, arrays, max_epochs, work, shrinking, check
):  # pragma: no cover - compiled  # fmt: skip
    """Epochs of dual coordinate descent ([Hsieh2008 Alg. 1]) up to the next
    duality-gap check, then the check (:func:`_dcd_check`); returns (epochs, sample
    visits, primal, dual).

    Each epoch visits the ``active`` first entries of ``index`` in a fresh random order
    (Fisher-Yates with :func:`_rand_below`) and takes the exact coordinate step
    ``alpha_i <- clip(alpha_i - G_i / Q_ii, 0, U cw_i)`` with ``G_i = y_i <w, x_i> - 1 +
    diag alpha_i / cw_i`` (``cw``: the sample weights), keeping ``w = sum_i alpha_i y_i
    x_i``.  Shrinking (Sec. 3.2, as liblinear): a variable at a bound whose gradient lies
    beyond the previous epoch's projected-gradient extremes ``pmax`` / ``pmin`` leaves the
    active set (swapped behind it).  The check comes after ``work`` sample visits (it
    costs ``n``), after ``max_epochs``, or when the active set's projected-gradient spread
    falls to ``eps_pg`` (a tenth of the first epoch's spread, halved at each such check); the check
    returns every shrunk variable with a non-zero projected gradient to the active set
    (liblinear instead restores all of them once its spread reaches its tolerance).
    ``check=False``: no check when the epochs ran out (primal and dual returned as NaN).

    ``state`` (float64) carries ``[active, pmax, pmin, eps_pg, spread on the active set,
    spread on all samples]`` between calls (``eps_pg < 0``: not yet set).  ``rows``,
    ``box``: as in :func:`_dcd_check`; ``arrays = (alpha, w, index, state, rstate)``, the
    working arrays, updated in place (``rstate``: :func:`_rand_below`'s state).
    """
    _, diag, U, _, cw = box
    alpha, w, index, state, rstate = arrays
    active = np.int64(state[0])
    pmax = state[1]
    pmin = state[2]
    eps_pg = state[3]
    spread = state[4]
    ep = 0
    done = 0
    while ep < max_epochs:
        for s in range(active - 1, 0, -1):
            r = _rand_below(rstate, s + 1)
            index[s], index[r] = index[r], index[s]
        done += active
        pgmax = -np.inf
        pgmin = np.inf
        s = 0
        while s < active:
            i = index[s]
            if Qd[i] <= 0.0:
                s += 1
                continue
            g = y[i] * _row_dot(rows, i, w) - 1.0
            g += diag * alpha[i] / cw[i]
            ub = U * cw[i]
            pg = 0.0
            if alpha[i] <= 0.0:
                if g > pmax:
                    active -= 1
                    index[s], index[active] = index[active], index[s]
                    continue
                if g < 0.0:
                    pg = g
            elif alpha[i] >= ub:
                if g < pmin:
                    active -= 1
                    index[s], index[active] = index[active], index[s]
                    continue
                if g > 0.0:
                    pg = g
            else:
                pg = g
            if pg > pgmax:
                pgmax = pg
            if pg < pgmin:
                pgmin = pg
            if pg != 0.0:
                old = alpha[i]
                new = old - g / Qd[i]
                if new < 0.0:
                    new = 0.0
                elif new > ub:
                    new = ub
                alpha[i] = new
                d = (new - old) * y[i]
                if d != 0.0:
                    _row_axpy(rows, i, d, w)
            s += 1
        ep += 1
        spread = pgmax - pgmin if active > 0 else 0.0
        if shrinking:
            if eps_pg < 0.0:
                eps_pg = 0.1 * spread
            pmax = pgmax if pgmax > 0.0 else np.inf
            pmin = pgmin if pgmin < 0.0 else -np.inf
            if spread <= eps_pg:
                eps_pg *= 0.5
                break
        if done >= work:
            break
    primal = dual = full_spread = np.nan
    if check or ep < max_epochs:
        primal, dual, full_spread, active = _dcd_check(
            rows, y, alpha, w, box, index, active, shrinking
        )
    state[0] = active
    state[1] = pmax
    state[2] = pmin
    state[3] = eps_pg
    state[4] = spread
    state[5] = full_spread
    return ep, done, primal, dual


def _csr(X):
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    return X


#: dual CD keeps X as dense rows when at least this fraction of its entries is non-zero
#: (vectorised dense dot products beat CSR gathers above it: benchmarks/
#: profile_dual_cd_layout.py, docs/benchmarks.md, issue 14) ...
DENSE_FILL = 0.1
#: ... and, for sparse input, the dense copy would take at most this many bytes
DENSE_MAX_BYTES = 2**28


class DualCDData(NamedTuple):
    """X prepared for :func:`fit_dual_cd` by :func:`dual_cd_data` (reusable by several
    problems on the same X): the matrix ``M`` (CSR, or a dense C-ordered array when at
    least ``DENSE_FILL`` of X is non-zero), the kernels' arrays and the squared row
    norms."""

    M: object
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    Xd: np.ndarray
    dense: bool
    sqn: np.ndarray


def dual_cd_data(X) -> DualCDData:
    """:class:`DualCDData` for a dense or sparse X: dense rows when at least
    ``DENSE_FILL`` of X is non-zero (for sparse X, only if the dense copy fits in
    ``DENSE_MAX_BYTES``), else CSR."""
    if not sp.issparse(X):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
    nnz = X.nnz if sp.issparse(X) else np.count_nonzero(X)
    size = X.shape[0] * X.shape[1]
    if nnz < DENSE_FILL * size or (sp.issparse(X) and 8 * size > DENSE_MAX_BYTES):
        Xc = _csr(X)
        sqn = np.asarray(Xc.multiply(Xc).sum(axis=1)).ravel()
        return DualCDData(Xc, Xc.indptr, Xc.indices, Xc.data, np.zeros((0, 0)), False, sqn)
    Xd = X.toarray() if sp.issparse(X) else X  # C-ordered writeable: one compiled type
    Xd = np.require(Xd, dtype=np.float64, requirements=["C_CONTIGUOUS", "WRITEABLE"])
    e = np.zeros(1, dtype=np.int32)
    return DualCDData(Xd, e, e, np.zeros(0), Xd, True, np.einsum("ij,ij->i", Xd, Xd))


def fit_dual_cd(
    X,
    y,
    C,
    *,
    loss="hinge",
    tol=1e-4,
    max_iter=1000,
    max_time=None,
    rng=None,
    alpha0=None,
    active0=None,
    shrinking=True,
    check_every=1.0,
    certify=True,
    callback=None,
    verbose=0,
    sample_weight=None,
) -> SVMSolution:
    """Dual coordinate descent for the L1- (``"hinge"``) or L2-loss (``"squared_hinge"``)
    linear SVM (Hsieh et al. 2008) on X (dense, sparse or :class:`DualCDData`), one
    random permutation of the active samples per epoch, with liblinear's shrinking
    (``shrinking=False``: every sample every epoch).

    Stops when the relative duality gap ``(P(w) - D(alpha)) / P(w) <= tol`` or after
    ``max_iter`` epochs.  The dual is ``D(alpha) = e^T alpha - 1/2 ||w(alpha)||^2 -
    diag/2 ||alpha||^2`` with ``diag = 0``, ``U = C`` (hinge) or ``diag = 1/(2C)``,
    ``U = inf`` (squared hinge).  The gap takes a pass over all ``n`` samples, so it is
    evaluated after ``check_every * max(n, sqrt(2 n W))`` sample visits of the epochs
    (``W``: visits so far; with shrinking an epoch visits only the active samples; the
    square root balances the checks' cost against the delay in seeing the gap close),
    or sooner where the last two checks' linear rate of the log gap puts it at ``tol``
    (but not before ``n/2`` visits), after ``max_iter`` epochs and when the active set's
    projected-gradient spread has halved; that pass also returns wrongly shrunk samples
    to the active set.  The epochs
    between two checks and the check run in one compiled call (:func:`_dcd_run`); X is
    kept as dense rows when at least ``DENSE_FILL`` (10 %) of it is non-zero, else as CSR.
    History rows carry ``pg_spread`` (projected-gradient spread over all samples,
    liblinear's stopping quantity) and ``active`` (the active-set size).  ``active0``:
    sample indices to start the active set from (the others start shrunk until a gap
    pass finds them violating; with ``alpha0`` of a related problem, e.g. the last round of
    feature selection); the solution's ``active`` is the final active set.
    ``certify=False``: no check after the last epoch if an earlier one was made (a
    capped solve that needs only approximate multipliers, e.g. feature selection's pricing
    rounds: ``alpha`` is the last iterate, ``w``, ``primal`` and ``dual`` those of the
    best checked one, still a valid bound).
    ``sample_weight``: positive per-sample weights ``c_i`` (None: ones) -- the primal
    ``1/2 ||w||^2 + C sum_i c_i loss_i``, so sample ``i``'s dual bound is ``C c_i``
    (hinge) or its diagonal term ``1 / (2 C c_i)`` (squared hinge); unit weights give
    the unweighted solve bit for bit.
    """
    if loss not in ("hinge", "squared_hinge"):
        raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {loss!r}")
    if not check_every > 0:
        raise ValueError(f"check_every must be positive, got {check_every!r}")
    prep = X if isinstance(X, DualCDData) else dual_cd_data(X)
    M, indptr, indices, data, Xd, dense, sqn = prep
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    if M.shape[0] != n:
        raise ValueError(f"X has {M.shape[0]} rows but y has {n} entries")
    if sample_weight is None:
        cw = np.ones(n)
    else:
        cw = np.array(sample_weight, dtype=np.float64).ravel()
        if cw.shape != (n,) or not np.all(np.isfinite(cw)) or not np.all(cw > 0):
            raise ValueError(f"sample_weight must be {n} positive finite weights")
    rng = np.random.default_rng(rng)
    rstate = np.array([rng.integers(1, 2**63 - 1)], dtype=np.uint64)
    squared = loss == "squared_hinge"
    C = float(C)
    if squared:
        diag, U = 0.5 / C, np.inf
    else:
        diag, U = 0.0, C
    alpha = np.zeros(n) if alpha0 is None else np.array(alpha0, dtype=np.float64)
    if alpha.shape != (n,):
        raise ValueError(f"alpha0 must have shape ({n},), got {alpha.shape}")
    w = np.asarray(M.T @ (alpha * y), dtype=np.float64).ravel()
    Qd = sqn + diag / cw
    mon = _monitor("dual_cd", callback, verbose, max_time)
    history = mon.history
    converged = False
    best = (np.inf, None)
    dual = -np.inf
    ep = 0
    index = np.arange(n, dtype=np.int64)
    n_active = n
    if active0 is not None and shrinking:  # start from these samples; the rest shrunk
        first = np.zeros(n, dtype=bool)
        first[np.asarray(active0, dtype=np.int64)] = True
        index = np.concatenate([np.flatnonzero(first), np.flatnonzero(~first)])
        n_active = int(first.sum())
    state = np.array([n_active, np.inf, -np.inf, -1.0, np.nan, np.nan])
    visits = 0  # coordinate steps tried so far
    interrupted = False
    rows = (indptr, indices, data, Xd, dense)
    box = (C, diag, U, squared, cw)

    def record(primal, d_val, notify=True):
        nonlocal dual, best
        dual = max(dual, d_val)
        if primal < best[0]:
            best = (primal, w.copy())
        return _record(  # (after Ctrl-C, notify=False: record, but call nobody back)
            mon, ep, best[0], dual, notify=notify,
            pg_spread=float(state[5]), active=int(state[0]),
        )  # fmt: skip

    last = None  # (visits, log gap) at the previous check
    rate = log_gap = 0.0  # decrease of the log gap per visit between the last two checks
    try:
        while ep < max_iter:
            # a check costs n visits: after W visits, checking every sqrt(2 n W) visits
            # balances the checks' cost against the delay in seeing the gap close; when
            # the last two checks give a linear rate, check no later than where it puts
            # the gap at tol (but not sooner than n/2 visits)
            work = check_every * max(n, np.sqrt(2.0 * n * visits))
            if rate > 0.0:
                work = min(work, max(0.5 * n, 1.1 * (log_gap - np.log(tol)) / rate))
            done, seen, primal, d_val = _dcd_run(
                rows, y, Qd, box, (alpha, w, index, state, rstate), max_iter - ep,
                max(1, int(work)), bool(shrinking), bool(certify),
            )  # fmt: skip
            ep += done
            visits += seen
            if np.isnan(primal):  # certify=False and the epochs ran out: no last check
                break
            rel = record(primal, d_val)
            if rel <= tol:
                converged = True
                break
            if mon.stop_reason:
                break
            log_gap = np.log(max(rel, 1e-300))
            if last is not None and visits > last[0]:
                rate = (last[1] - log_gap) / (visits - last[0])
            last = (visits, log_gap)
    except KeyboardInterrupt:
        # (alpha, w) are updated together inside the numba kernel, which Ctrl-C cannot
        # split, so the current w is consistent: score it below and keep the better one
        if not np.any(alpha):
            raise  # no update yet: nothing to keep
        interrupted, converged = True, False
    if interrupted or not history:
        primal, d_val, state[5], _ = _dcd_check(rows, y, alpha, w, box, index, int(state[0]), False)
        record(primal, d_val, notify=not interrupted)
    return SVMSolution(
        w=best[1],
        alpha=alpha,
        primal=best[0],
        dual=dual,
        converged=converged,
        n_iter=ep,
        history=history,
        interrupted=interrupted,
        active=np.sort(index[: int(state[0])]),
    )


# ================================================================================ Pegasos
@njit(cache=True)
def _pegasos_epoch(indptr, indices, data, y, v, scale, t, lam, idx, counts):
    """``len(idx)`` Pegasos steps (batch size 1, no projection) on ``w = scale * v``.

    Step ``t`` (1-based): ``w <- (1 - 1/t) w + 1/(lam t) [y_i <w, x_i> < 1] y_i x_i``.
    Returns the new (scale, t).
    """
    for s in range(idx.shape[0]):
        i = idx[s]
        m = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            m += v[indices[k]] * data[k]
        m *= scale * y[i]
        if t == 1:
            v[:] = 0.0
            scale = 1.0
        else:
            scale *= 1.0 - 1.0 / t
        if m < 1.0:
            c = y[i] / (lam * t * scale)
            for k in range(indptr[i], indptr[i + 1]):
                v[indices[k]] += c * data[k]
            counts[i] += 1.0
        if scale < 1e-9:
            for k in range(v.shape[0]):
                v[k] *= scale
            scale = 1.0
        t += 1
    return scale, t


def _box_dual(X, y, alpha, C):
    """Best dual value along the ray ``s alpha`` inside ``0 <= s alpha <= C``:
    ``D(s alpha) = s e^T alpha - s^2/2 ||X^T (alpha y)||^2`` -- a valid lower bound."""
    alpha = np.clip(alpha, 0.0, C)
    if alpha.max() <= 0:
        return 0.0
    u = np.asarray(X.T @ (alpha * y)).ravel()
    q = float(u @ u)
    s_max = C / alpha.max()
    s = s_max if q <= 0 else min(s_max, float(alpha.sum()) / q)
    return s * float(alpha.sum()) - 0.5 * s * s * q


def fit_pegasos(
    X,
    y,
    C,
    *,
    tol=1e-3,
    max_iter=1000,
    max_time=None,
    rng=None,
    callback=None,
    verbose=0,
) -> SVMSolution:
    """Pegasos (stochastic sub-gradient, batch 1) on ``lam/2 ||w||^2 + 1/n sum hinge``
    with ``lam = 1 / (C n)``, i.e. the ``C`` problem divided by ``C n``.

    Without the optional projection step the iterate after T steps is exactly
    ``w = sum_i (count_i / (lam T)) y_i x_i`` (``count_i``: sub-gradient steps on sample
    i), so ``alpha_i = C n count_i / T`` is a dual point; clipped to the box and scaled
    optimally (:func:`_box_dual`) it gives a valid lower bound.  The bound is also formed
    from the last epoch's counts alone (closer to the current sub-gradient) and the
    better one is kept.  Objectives are reported in the ``C`` scaling.  One epoch is n
    steps with samples drawn uniformly with replacement; ``max_iter`` counts epochs.
    """
    X = _csr(X)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    rng = np.random.default_rng(rng)
    lam = 1.0 / (C * n)
    v = np.zeros(d)
    scale, t = 1.0, 1
    counts = np.zeros(n)
    mon = _monitor("pegasos", callback, verbose, max_time)
    history = mon.history
    best = (np.inf, np.zeros(d))
    dual = -np.inf
    converged = False
    ep = 0
    interrupted = False
    try:
        for ep in range(1, max_iter + 1):
            idx = rng.integers(0, n, size=n).astype(np.int64)
            before = counts.copy()
            scale, t = _pegasos_epoch(X.indptr, X.indices, X.data, y, v, scale, t, lam, idx, counts)
            w = scale * v
            primal = hinge_objective(y * (X @ w), float(w @ w), C)
            if primal < best[0]:
                best = (primal, w.copy())
            steps = t - 1
            dual = max(
                dual,
                _box_dual(X, y, C * n * counts / steps, C),
                _box_dual(X, y, C * (counts - before), C),
            )
            rel = _record(mon, ep, best[0], dual)
            if rel <= tol:
                converged = True
                break
            if mon.stop_reason:
                break
    except KeyboardInterrupt:
        # v and its scale may be out of step if Ctrl-C fell between the kernel and the
        # assignment, so only the best scored iterate (a copy) is kept
        if not np.isfinite(best[0]):
            raise  # no epoch scored: nothing to keep
        interrupted, converged = True, False
    return SVMSolution(
        w=best[1],
        primal=best[0],
        dual=dual,
        converged=converged,
        n_iter=ep,
        history=history,
        interrupted=interrupted,
    )


# ========================================================================== 1-slack
def fit_one_slack_svm(
    X,
    y,
    C,
    *,
    tol=1e-4,
    max_iter=1000,
    max_time=None,
    callback=None,
    verbose=0,
) -> SVMSolution:
    """1-slack cutting planes (Joachims 2006) with the project's QP master.

    ``1/2||w||^2 + C sum_i hinge_i = 1/2||w||^2 + (C n) xi`` with
    ``xi = max_{c in {0,1}^n} 1/n sum_i c_i (1 - y_i <w, x_i>)``; the most violated plane
    at ``w`` has ``c_i = [y_i <w, x_i> < 1]``, ``a = 1/n sum_i c_i y_i x_i``,
    ``b = 1/n sum_i c_i``.  Stops at relative duality gap ``tol`` (master dual as bound).
    """
    X = _csr(X)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    XT = X.T.tocsr()
    master = OneSlackQPMaster(C * n, d)
    tracker = GapMonitor(
        tol, max_iter, max_time, callback=callback, verbose=verbose, name="1-slack"
    )

    def find_plane(sol):
        w = sol.w
        m = y * (X @ w)
        c = (m < 1.0).astype(np.float64)
        a = np.asarray(XT @ (c * y)).ravel() / n
        primal = hinge_objective(m, float(w @ w), C)
        return Plane(b=float(c.sum()) / n, a=a, primal=primal, state=w)

    sol = one_slack_cutting_planes(find_plane, master, tracker, tol=tol, max_iter=max_iter)
    res = tracker.result(sol.w)
    return SVMSolution(
        w=res.w,
        primal=res.primal,
        dual=res.dual,
        converged=res.converged,
        n_iter=len(res.history),
        history=res.history,
        interrupted=res.interrupted,
    )
