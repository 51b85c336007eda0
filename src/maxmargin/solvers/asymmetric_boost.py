"""Boosting with asymmetric goals for cascade stages (thesis seed 002, Sec. 4.2.3, 4.2.5
and 4.4).

Every stage classifier here is a sum of *split stumps* ``F(x) = sum_t s_t(x)``, ``s_t(x)
= v_hi[t] if x[f_t] > theta_t else v_lo[t]`` (a :class:`~maxmargin.weak.RealStumps`
with the weights folded into the outputs), so that Discrete, Real and Gentle stages,
LACBoost / FisherBoost stages and recycled weak classifiers share one representation
and the cascade counts weak classifiers by their split ``(f, theta)``.

**Cost-sensitive AdaBoost** (Sec. 4.2.3, after Masnadi-Shirazi & Vasconcelos, "Cost-
sensitive boosting", TPAMI 33, 2011): stage-wise minimisation of
``L(F) = sum_i exp(-C_{y_i} y_i F(x_i))`` with sample weights
``omega_i = C_{y_i} exp(-C_{y_i} y_i F(x_i))`` (normalised to sum 1):

* discrete: the {-1, +1} stump of largest edge ``sum_i omega_i y_i h(x_i)``, its weight by
  an exact line search of ``L`` (four exponentials; closed form at equal costs);
* real: the split of Real AdaBoost on the weights ``omega`` and on each side the
  minimiser of ``L``, ``1/(C_1 + C_-1) log((P + eps) / (N + eps))`` ([Sun2012 eq. 4.16]; ``P``,
  ``N`` the positive / negative ``omega`` on that side, ``eps = 1/(2n)`` as in the
  symmetric learner);
* gentle: the split of Gentle AdaBoost on ``omega`` and the Newton step
  ``(P - N) / (C_1 P + C_-1 N)`` on each side ([Sun2012 eq. 4.17]).

With ``C_1 = C_-1 = 1`` all three are exactly :class:`~maxmargin.BinaryAdaBoost`.  The
split of Real / Gentle stages is chosen by the symmetric criterion on ``omega``
(scikit-image-free numba search of :class:`~maxmargin.weak.RealStump`); only the leaf
values carry the costs -- exact at equal costs, an approximation otherwise (documented in
docs/detection.md).

**Information recycling** (Sec. 4.4, [Sun2012 Alg. 3]): every round also considers the best
*recycled* weak classifier -- a split already used by an earlier stage or round, with
its outputs re-fitted to the current weights -- and takes the new one only if its loss
reduction beats the recycled one's by more than ``lambda = lambda* max(d_new, d_rec)``
(the thesis's adaptive threshold).  A recycled split costs nothing extra to evaluate in
a window that has reached this stage.

**LACBoost / FisherBoost** (Sec. 4.2.5; Shen, Wang, Li, "Training effective node
classifiers for cascade classification", IJCV 103, 2013, and Wu, Rehg & Mullin's LAC):
totally-corrective column generation on::

    min_{w >= 0, 1'w <= 1}  1/2 w'A'(Q + sigma I)Aw - theta e'Aw

with ``A[i, t] = h_t(x_i)`` the {-1, +1} stump outputs, ``e_i = 1/M_1`` on positives and
``-1/M_-1`` on negatives (so ``e'Aw = w'(mu_1 - mu_-1)``), and ``Q`` such that
``rho'Q rho`` is the unbiased variance of the positive scores ``rho = Aw`` (LAC,
[Sun2012 eq. 4.37]) or the sum of the positive and negative score variances (Fisher's LDA,
[Sun2012 eq. 4.48] with the within-class scatter); ``sigma I`` is the thesis's ridge on the scores
(``Q + sigma I``, "penalising the sum of squares of the strong classifier scores").  The ridge is
put on the scores, not on ``w``: a ridge on ``w`` would reward splitting a weight over
copies of one column, and column generation would keep adding the same stump.  The
restricted master over the chosen columns is solved by the project's capped-simplex SMO
(:func:`maxmargin.solvers.qp_master.capped_simplex_smo_steps`, stopping on the exact duality gap);
pricing is [Sun2012 eq. 4.44]: with ``alpha = theta e - (Q + sigma I) rho`` the stump maximising
``sum_i alpha_i h(x_i)`` enters if that exceeds the multiplier
``lambda`` of ``1'w <= 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit
from scipy.optimize import brentq

from maxmargin.solvers.cutting_plane import Plane, UnstabilisedPlanes, kelley_loop
from maxmargin.solvers.monitor import ConvergenceMonitor, StopFit, time_limit
from maxmargin.solvers.qp_master import capped_simplex_smo_steps
from maxmargin.weak import DecisionStump, RealStump
from maxmargin.weak.base import EDGE_CAP, edge_weight
from maxmargin.weak.real_stump import RealStumps
from maxmargin.weak.stump import evaluate_thresholds

__all__ = [
    "StageResult",
    "asymmetric_objective",
    "fit_asymmetric_stage",
    "fit_cost_sensitive_stage",
    "scatter_matrix",
]

CS_VARIANTS = ("discrete", "real", "gentle")
ASYM_VARIANTS = ("lacboost", "fisherboost")


# ------------------------------------------------------------ CPU-independent arithmetic
# A stage must come out the same on every CPU (issue 31): BLAS dot products (OpenBLAS picks
# its kernels -- and so its summation order -- by CPU) and NumPy's float64 exp / log (own
# AVX-512 versions, libm elsewhere) round differently from machine to machine, and a
# last-bit difference in the weights can flip the choice between two near-equal stumps
# several rounds later.  So the boosting's sums are element-wise products reduced by
# NumPy's pairwise sum (a fixed order), and exp / log are the functions below: only
# IEEE-754 +, -, *, / (numba never fuses them without fastmath) and ldexp, hence the same
# bits on every target.
_LN2_HI = 6.93147180369123816490e-01  # ln 2 with its low bits cleared: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00


@njit(cache=True)
def _exp1(x):  # pragma: no cover - compiled
    """exp(x) to a few ulps: ``2^k exp(r)``, ``|r| <= ln2 / 2``, exp(r) by its Taylor
    series to degree 13 (truncation below 1e-17 relative) in Horner form."""
    if x != x:
        return x
    if x > 709.78:
        return np.inf
    if x < -745.2:
        return 0.0
    k = np.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = 1.0
    for j in range(13, 0, -1):
        p = 1.0 + p * r / j
    return math.ldexp(p, int(k))


@njit(cache=True)
def _log1(x):  # pragma: no cover - compiled
    """log(x) to a few ulps (x > 0 normal): ``x = 2^k m``, ``m`` in [sqrt(1/2), sqrt(2)),
    ``log m = 2 atanh(s)``, ``s = (m - 1) / (m + 1)``, ``|s| <= 0.172``, its series to
    ``s^25`` (truncation below 1e-20)."""
    if x != x or x < 0.0:
        return np.nan
    if x == 0.0:
        return -np.inf
    if x == np.inf:
        return x
    m, k = math.frexp(x)  # x = m 2^k, m in [0.5, 1)
    if m < 0.7071067811865476:
        m *= 2.0
        k -= 1
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    p = 0.0
    for j in range(25, 0, -2):
        p = 1.0 / j + s2 * p
    return k * _LN2_HI + (2.0 * s * p + k * _LN2_LO)


@njit(cache=True)
def _elementwise(x, log):  # pragma: no cover - compiled
    """``_log1`` (``log``) or ``_exp1`` of every entry of the 1-D array ``x``."""
    out = np.empty(x.size)
    if log:  # the test outside the loops: each loop is the one-function kernel it was
        for i in range(x.size):
            out[i] = _log1(x[i])
    else:
        for i in range(x.size):
            out[i] = _exp1(x[i])
    return out


def _exp(x, log=False):
    """Element-wise exp -- or log, :func:`_log` -- the same bits on every CPU (see above)."""
    a = np.asarray(x, dtype=np.float64)
    out = _elementwise(np.ascontiguousarray(a).reshape(-1), log).reshape(a.shape)
    return out if a.ndim else float(out)


def _log(x):
    return _exp(x, log=True)


def _mv(M, v):
    """``M @ v`` for ``M`` (k, n): products reduced in a fixed order (no BLAS)."""
    return (np.asarray(M, dtype=np.float64) * v).sum(axis=-1)


def _tmv(M, v):
    """``M.T @ v`` for ``M`` (n, k): rows added in order (no BLAS)."""
    return (np.asarray(M, dtype=np.float64) * np.asarray(v)[:, None]).sum(axis=0)


def _dot(a, b):
    """``a @ b`` of two vectors in a fixed order (no BLAS)."""
    return float((np.asarray(a, dtype=np.float64) * b).sum())


@dataclass
class StageResult:
    """The stage's split stumps (outputs include the weights), per-round history and
    the number of rounds that recycled a split."""

    stumps: RealStumps
    history: list = field(default_factory=list)
    n_recycled: int = 0
    stopped: bool = False  # the stop callback ended training
    columns: dict | None = None  # LAC / Fisher: the master's columns and weights


def _stage_monitor(stumps, stop, on_round, max_time) -> ConvergenceMonitor:
    """The stage's :class:`~maxmargin.solvers.monitor.ConvergenceMonitor` (its history is
    the stage's): ``on_round(record)`` sees every round's record, then ``stop(stumps())``
    -- the stage so far -- ends training when it returns True (``stop_reason`` "stop",
    :attr:`StageResult.stopped`), then the ``max_time`` budget."""

    def observe(mon, rec):
        on_round(rec)  # an observer: its return value does not stop the stage

    def stop_rule(mon, rec):
        if stop(stumps()):
            raise StopFit("stop")

    callbacks = [observe] if on_round is not None else []
    callbacks += [stop_rule] if stop is not None else []
    callbacks += [time_limit(max_time)] if max_time is not None else []
    return ConvergenceMonitor("stage", callbacks=callbacks)


def _sides(X, feature, thr):
    """(k, n) indicator of ``x[f] > theta`` for k splits."""
    k = len(feature)
    return evaluate_thresholds(X, np.asarray(feature), np.asarray(thr), np.zeros(k), np.ones(k))


class _Stage:
    """Split stumps of one stage, merged by split."""

    def __init__(self, d):
        self.d = d
        self.f, self.t, self.lo, self.hi = [], [], [], []

    def add(self, f, t, lo, hi):
        for k in range(len(self.f)):
            if self.f[k] == f and self.t[k] == t:
                self.lo[k] += lo
                self.hi[k] += hi
                return
        self.f.append(int(f))
        self.t.append(float(t))
        self.lo.append(float(lo))
        self.hi.append(float(hi))

    def stumps(self) -> RealStumps:
        return RealStumps(
            np.array(self.f, np.int64),
            np.array(self.t),
            np.array(self.lo),
            np.array(self.hi),
            self.d,
        )


def _discrete_step(u, ys, h, c1, c0):
    """Weight of {-1, +1} outputs ``h`` minimising sum_i u_i exp(-C_y y (F + a h))."""
    pos = ys > 0
    right = ys * h > 0
    Upc, Upw = u[pos & right].sum(), u[pos & ~right].sum()
    Unc, Unw = u[~pos & right].sum(), u[~pos & ~right].sum()
    if c1 == c0:  # closed form; the clipping of BinaryAdaBoost
        tot = Upc + Upw + Unc + Unw
        return edge_weight((Upc + Unc - Upw - Unw) / tot) / c1

    def g(a):  # derivative of the loss along a, increasing in a
        return (
            -c1 * Upc * _exp(-c1 * a)
            + c1 * Upw * _exp(c1 * a)
            - c0 * Unc * _exp(-c0 * a)
            + c0 * Unw * _exp(c0 * a)
        )

    cap = edge_weight(EDGE_CAP) / min(c1, c0)
    if g(cap) <= 0:
        return cap
    if g(-cap) >= 0:
        return -cap
    return brentq(g, -cap, cap, xtol=1e-14, rtol=1e-14)


def _leaf_values(u, ys, side, c1, c0, variant, n):
    """Cost-sensitive leaf values (lo, hi) of splits ``side`` (k, n) and the loss after."""
    om = u * np.where(ys > 0, c1, c0)
    Z = om.sum()
    om = om / Z
    pos = ys > 0
    P_hi = _mv(side, om * pos)
    N_hi = _mv(side, om * ~pos)
    P_lo = (om * pos).sum() - P_hi
    N_lo = (om * ~pos).sum() - N_hi
    if variant == "real":
        eps = 1.0 / (2.0 * n)
        lo = _log((P_lo + eps) / (N_lo + eps)) / (c1 + c0)
        hi = _log((P_hi + eps) / (N_hi + eps)) / (c1 + c0)
    else:  # gentle, [Sun2012 eq. 4.17]
        T_lo, T_hi = c1 * P_lo + c0 * N_lo, c1 * P_hi + c0 * N_hi
        lo = np.divide(P_lo - N_lo, T_lo, out=np.zeros_like(T_lo), where=T_lo > 0)
        hi = np.divide(P_hi - N_hi, T_hi, out=np.zeros_like(T_hi), where=T_hi > 0)
        # the symmetric learner's outputs lie in [-1, 1]; at equal costs this is its clip
        lim = 1.0 / min(c1, c0)
        lo, hi = np.clip(lo, -lim, lim), np.clip(hi, -lim, lim)
    return lo, hi


def _loss_after(u, ys, side, lo, hi, c1, c0):
    """sum_i u_i exp(-C_y y delta_i) for increments lo/hi on the sides, per split: the
    increment takes two values, so the loss needs only the ``u``-sums of each class on
    each side (four exponentials per split, not one per sample -- a recycling round
    prices the whole pool of earlier splits)."""
    pos = ys > 0
    up, un = u * pos, u * ~pos
    Up_hi, Un_hi = _mv(side, up), _mv(side, un)
    Up_lo, Un_lo = _mv(1.0 - side, up), _mv(1.0 - side, un)
    return (
        Up_lo * _exp(-c1 * lo)
        + Un_lo * _exp(c0 * lo)
        + Up_hi * _exp(-c1 * hi)
        + Un_hi * _exp(c0 * hi)
    )


def fit_cost_sensitive_stage(
    X,
    ys,
    *,
    variant="discrete",
    c_pos=1.0,
    c_neg=1.0,
    max_weak=100,
    F0=None,
    recycle=None,
    recycle_lambda=0.0,
    prepared=None,
    stop=None,
    on_round=None,
    max_time=None,
    max_bins=None,
) -> StageResult:
    """Cost-sensitive Discrete / Real / Gentle AdaBoost for one stage.

    ``ys`` in {-1, +1}; ``F0``: starting scores (default 0); ``recycle``: split stumps
    (any :class:`RealStumps` / feature-threshold pairs) that may be reused ([Sun2012 Alg. 3]);
    ``stop(stumps)`` is called after every round with the stage so far and ends training
    when it returns True; ``on_round(record)`` is called with every round's record
    before that.  History rows: ``iteration``, ``objective`` (the cost-sensitive
    exponential loss, mean), ``recycled``, ``d_new``, ``d_recycled``, ``t_total``.
    ``max_bins``: the weak learner's thresholds -- None: every distinct value (exact);
    an int: at most that many equal-frequency bins per feature of the stage's samples
    (:func:`maxmargin.weak.binning.code_features`, as LightGBM), so that a round's search
    is one histogram of small codes per feature: the fast setting for many samples.
    """
    if variant not in CS_VARIANTS:
        raise ValueError(f"variant must be one of {CS_VARIANTS}, got {variant!r}")
    ys = np.asarray(ys, dtype=np.float64)
    n, d = X.shape
    c1, c0 = float(c_pos), float(c_neg)
    if c1 <= 0 or c0 <= 0:
        raise ValueError("costs must be positive")
    cy = np.where(ys > 0, c1, c0)
    F = np.zeros(n) if F0 is None else np.asarray(F0, dtype=np.float64).ravel().copy()
    if F.shape != (n,) or not np.isfinite(F).all():
        raise ValueError(f"F0 must hold {n} finite starting scores")
    weak = DecisionStump(max_bins) if variant == "discrete" else RealStump(variant, max_bins)
    prep = weak.prepare(X) if prepared is None else prepared
    stage = _Stage(d)
    pool_f = [] if recycle is None else [int(v) for v in recycle.feature]
    pool_t = [] if recycle is None else [float(v) for v in recycle.threshold]
    pool_side = _sides(X, pool_f, pool_t) if pool_f else np.zeros((0, n))
    n_rec = 0
    mon = _stage_monitor(stage.stumps, stop, on_round, max_time)
    for it in range(int(max_weak)):
        z = -cy * ys * F
        zmax = z.max()
        u = _exp(z - zmax)  # loss terms, scaled by exp(-zmax)
        om = cy * u
        om /= om.sum()
        h, _ = weak.best(prep, (om * ys)[:, None])
        f_new, t_new = int(h.feature[0]), float(h.threshold[0])
        L0 = u.sum()
        side_new = _sides(X, [f_new], [t_new])
        # -- candidate new weak classifier
        if variant == "discrete":
            out = np.where(side_new[0] > 0, h.polarity[0], -h.polarity[0])
            a = _discrete_step(u, ys, out, c1, c0)
            lo_new, hi_new = np.array([-h.polarity[0] * a]), np.array([h.polarity[0] * a])
        else:
            lo_new, hi_new = _leaf_values(u, ys, side_new, c1, c0, variant, n)
        d_new = L0 - _loss_after(u, ys, side_new, lo_new, hi_new, c1, c0)[0]
        # -- candidate recycled weak classifier
        d_rec, k_rec = -np.inf, -1
        if len(pool_f):
            if variant == "discrete":
                outs = 2.0 * pool_side - 1.0
                edges = _mv(outs, om * ys)
                sgn = np.where(edges >= 0, 1.0, -1.0)
                a_rec = np.array([_discrete_step(u, ys, s * o, c1, c0) for s, o in zip(sgn, outs)])
                lo_r, hi_r = -sgn * a_rec, sgn * a_rec
            else:
                lo_r, hi_r = _leaf_values(u, ys, pool_side, c1, c0, variant, n)
            dr = L0 - _loss_after(u, ys, pool_side, lo_r, hi_r, c1, c0)
            k_rec = int(np.argmax(dr))
            d_rec = float(dr[k_rec])
        lam = recycle_lambda * max(d_new, d_rec, 0.0)
        use_rec = k_rec >= 0 and not (d_new - d_rec > lam)
        if use_rec:
            f, t, lo, hi = pool_f[k_rec], pool_t[k_rec], lo_r[k_rec], hi_r[k_rec]
            side = pool_side[k_rec]
            n_rec += 1
        else:
            f, t, lo, hi = f_new, t_new, float(lo_new[0]), float(hi_new[0])
            side = side_new[0]
            if recycle is not None:  # new splits join the recycling pool ([Sun2012 Alg. 3])
                pool_f.append(f)
                pool_t.append(t)
                pool_side = np.vstack([pool_side, side[None]])
        stage.add(f, t, lo, hi)
        F += lo + side * (hi - lo)
        zz = -cy * ys * F
        objective = float(_exp(zz - zz.max()).mean() * _exp(zz.max()))
        rec = {
            "iteration": it,
            "objective": objective,
            "dual_bound": float("nan"),
            "gap": float("nan"),
            "recycled": bool(use_rec),
            "d_new": float(d_new * _exp(zmax) / n),
            "d_recycled": float(d_rec * _exp(zmax) / n) if k_rec >= 0 else float("nan"),
            "n_weak": len(stage.f),
            "t_total": mon.elapsed(),
        }
        if mon.record(rec):
            break
    return StageResult(stage.stumps(), mon.history, n_rec, mon.stop_reason == "stop")


# ------------------------------------------------------------------- LACBoost / FisherBoost
def scatter_matrix(ys, kind="lacboost") -> np.ndarray:
    """The matrix ``Q`` written out (n x n): ``rho'Q rho`` is the unbiased variance of the
    positive scores (LAC) or the sum of both classes' (Fisher).  For tests and tiny data;
    the solver applies ``Q`` without forming it."""
    ys = np.asarray(ys)
    n = len(ys)
    Q = np.zeros((n, n))
    groups = [ys > 0] + ([ys < 0] if kind == "fisherboost" else [])
    for g in groups:
        idx = np.flatnonzero(g)
        m = len(idx)
        if m < 2:
            raise ValueError("need at least two examples of each class in the scatter")
        Q[np.ix_(idx, idx)] = (np.eye(m) - 1.0 / m) / (m - 1)
    return Q


def _apply_Q(R, ys, kind):
    """Q @ R for R (n,) or (n, k) without forming Q."""
    out = np.zeros_like(R, dtype=np.float64)
    groups = [ys > 0] + ([ys < 0] if kind == "fisherboost" else [])
    for g in groups:
        m = int(g.sum())
        Rg = R[g]
        out[g] = (Rg - Rg.mean(axis=0)) / (m - 1)
    return out


def asymmetric_objective(w, A, ys, *, kind="lacboost", theta=1.0, sigma=1e-4) -> float:
    """``1/2 w'A'(Q + sigma I)Aw - theta e'Aw`` (the master's objective)."""
    ys = np.asarray(ys)
    e = np.where(ys > 0, 1.0 / (ys > 0).sum(), -1.0 / (ys < 0).sum())
    rho = A @ w
    return float(0.5 * rho @ _apply_Q(rho, ys, kind) + 0.5 * sigma * rho @ rho - theta * e @ rho)


class _AsymmetricColumns(UnstabilisedPlanes):
    """:class:`~maxmargin.solvers.cutting_plane.PlaneProblem` of a LACBoost / FisherBoost
    stage: a round's "plane" is the priced column (the weak learner's best new stump, or
    a recycled one), adding it grows the restricted master, solving it is SMO on the
    capped simplex ``w >= 0, sum w <= 1``.

    The options come in groups: ``master`` ``(kind, theta, sigma, e, q_rho0)`` (the
    objective), ``pricing`` ``(weak, prepared data, recycle, recycle_lambda)``, ``limits``
    ``(cap on the columns, eps, tol)`` and ``hooks`` ``(stop, on_round, max_time)``."""

    def __init__(self, X, ys, master, pricing, limits, hooks):
        self.X, self.ys = X, ys
        self.kind, self.theta, self.sigma, self.e, self.q_rho0 = master
        self.weak, self.prep, self.recycle, self.recycle_lambda = pricing
        self.cap, self.eps, self.tol = limits
        recycle = self.recycle
        n, self.d = X.shape
        self.pool_f = [] if recycle is None else [int(v) for v in recycle.feature]
        self.pool_t = [] if recycle is None else [float(v) for v in recycle.threshold]
        self.pool_out = (
            2.0 * _sides(X, self.pool_f, self.pool_t) - 1.0 if self.pool_f else np.zeros((0, n))
        )
        self.cols_f, self.cols_t, self.cols_p = [], [], []
        self.Acols = np.zeros((n, 0))
        self.G = np.zeros((0, 0))
        self.b = np.zeros(0)
        self.w = np.zeros(0)
        self.n_rec = 0
        self.monitor = _stage_monitor(self.stumps, *hooks)
        self.lam = 0.0
        self.rec = None

    def stumps(self) -> RealStumps:
        """The stage so far: every column with its current weight."""
        st = _Stage(self.d)
        for ff, tt, pp, ww in zip(self.cols_f, self.cols_t, self.cols_p, self.w):
            st.add(ff, tt, -pp * ww, pp * ww)
        return st.stumps()

    def point(self, sol):
        """The pricing weights ``alpha = theta e - (Q + sigma I)(rho0 + A w)``."""
        rho = _mv(self.Acols, self.w)
        return (
            self.theta * self.e - _apply_Q(rho, self.ys, self.kind) - self.sigma * rho - self.q_rho0
        )

    def query(self, alpha) -> Plane:
        """Pricing: the best new stump, and the best recycled split ([Sun2012 Alg. 3])."""
        h, gain = self.weak.best(self.prep, alpha[:, None])
        f_new, t_new, p_new = int(h.feature[0]), float(h.threshold[0]), float(h.polarity[0])
        price_new = float(gain[0])
        price_rec, k_rec = -np.inf, -1
        if len(self.pool_f):
            pr = _mv(self.pool_out, alpha)
            k_rec = int(np.argmax(np.abs(pr)))
            price_rec = float(abs(pr[k_rec]))
        price = max(price_new, price_rec)
        use_rec = k_rec >= 0 and not (price_new - price_rec > self.recycle_lambda * price)
        if use_rec and price_rec <= self.lam + self.eps:
            use_rec = False
        return Plane(b=price, payload=(use_rec, k_rec, f_new, t_new, p_new, alpha))

    def stop(self, rnd, best, sol):
        return None  # the round's price is tested in add(), which sees the plane

    def add(self, plane, sol) -> bool:
        price = plane.b
        if price <= self.lam + self.eps or len(self.cols_f) >= self.cap:
            return False  # no column prices out: the stage is optimal (or full)
        use_rec, k_rec, f, t, p, alpha = plane.payload
        if use_rec:
            f, t = self.pool_f[k_rec], self.pool_t[k_rec]
            p = 1.0 if _dot(self.pool_out[k_rec], alpha) >= 0 else -1.0
            col = p * self.pool_out[k_rec]
            self.n_rec += 1
        else:
            col = np.where(_sides(self.X, [f], [t])[0] > 0, p, -p)
            if self.recycle is not None:
                self.pool_f.append(f)
                self.pool_t.append(t)
                self.pool_out = np.vstack([self.pool_out, (col * p)[None]])
        self.cols_f.append(f)
        self.cols_t.append(t)
        self.cols_p.append(p)
        qa = _apply_Q(col, self.ys, self.kind) + self.sigma * col
        g_new = _tmv(self.Acols, qa)
        G = self.G
        self.G = np.block([[G, g_new[:, None]], [g_new[None], np.array([[_dot(col, qa)]])]])
        self.Acols = np.hstack([self.Acols, col[:, None]])
        self.b = np.append(self.b, self.theta * _dot(self.e, col) - _dot(col, self.q_rho0))
        self.w = np.append(self.w, 0.0)
        self.rec = {"price": price, "recycled": bool(use_rec)}
        return True

    def solve(self):
        """The restricted master: min 1/2 w'Gw - b'w, w >= 0, sum w <= 1 (capped simplex)."""
        G, b, w = self.G, self.b, self.w
        grad = _mv(G, w) - b
        _, qp_gap, _ = capped_simplex_smo_steps(G, grad, w, len(w), 1.0, self.tol, 1_000_000)
        grad = _mv(G, w) - b
        self.lam = max(0.0, -float(grad.min())) if w.sum() >= 1.0 - 1e-9 else 0.0
        obj = 0.5 * _dot(w, _mv(G, w)) - _dot(b, w)
        self.rec.update(objective=obj, dual_bound=obj - float(qp_gap))  # exact SMO gap
        self.rec["gap"] = float(qp_gap) / max(abs(obj), 1e-12)
        return None

    def record(self, rnd, plane, t_oracle, t_master, sol) -> bool:
        if self.rec is None:  # nothing was added this round
            return False
        rec, self.rec = self.rec, None
        rec = {
            "iteration": rnd,
            "objective": rec["objective"],
            "dual_bound": rec["dual_bound"],
            "price": rec["price"],
            "lambda": self.lam,
            "recycled": rec["recycled"],
            "n_weak": len(set(zip(self.cols_f, self.cols_t))),
            "t_total": self.monitor.elapsed(),
            "gap": rec["gap"],
        }
        return self.monitor.record(rec)


def fit_asymmetric_stage(
    X,
    ys,
    *,
    kind="lacboost",
    theta=1.0,
    sigma=1e-4,
    max_weak=100,
    eps=1e-8,
    F0=None,
    recycle=None,
    recycle_lambda=0.0,
    prepared=None,
    stop=None,
    on_round=None,
    max_time=None,
    tol=1e-12,
    max_bins=None,
) -> StageResult:
    """LACBoost / FisherBoost by column generation (see the module docstring).

    ``F0``: starting scores ``rho0`` (default 0; strong classifier chaining,
    [Sun2012 eq. 4.59]): the master is the objective of the scores ``rho0 + Aw``, i.e. the linear
    term becomes ``b_t = theta e'a_t - a_t'(Q + sigma I) rho0`` and pricing uses ``alpha =
    theta e - (Q + sigma I)(rho0 + Aw)``; ``objective`` then omits the constant
    ``1/2 rho0'(Q + sigma I) rho0 - theta e'rho0``.

    ``recycle``: splits (with either polarity) that are priced beside the weak learner's
    best new stump; the new one enters only if its price beats the recycled one's by
    more than ``recycle_lambda * max(prices)`` ([Sun2012 Alg. 3] with the pricing gain in the
    place of the loss reduction).  History rows: ``iteration``, ``objective``,
    ``dual_bound`` (restricted master), ``gap``, ``price``, ``lambda``, ``n_weak``.
    ``max_bins``: the pricing stump's thresholds, as in :func:`fit_cost_sensitive_stage`.
    """
    if kind not in ASYM_VARIANTS:
        raise ValueError(f"kind must be one of {ASYM_VARIANTS}, got {kind!r}")
    ys = np.asarray(ys, dtype=np.float64)
    n, d = X.shape
    if (ys > 0).sum() < 2 or (ys < 0).sum() < 2:
        raise ValueError("LACBoost / FisherBoost need at least two examples of each class")
    e = np.where(ys > 0, 1.0 / (ys > 0).sum(), -1.0 / (ys < 0).sum())
    rho0 = np.zeros(n) if F0 is None else np.asarray(F0, dtype=np.float64).ravel()
    if rho0.shape != (n,) or not np.isfinite(rho0).all():
        raise ValueError(f"F0 must hold {n} finite starting scores")
    q_rho0 = _apply_Q(rho0, ys, kind) + sigma * rho0
    weak = DecisionStump(max_bins)
    prep = weak.prepare(X) if prepared is None else prepared
    cg = _AsymmetricColumns(
        X,
        ys,
        master=(kind, theta, sigma, e, q_rho0),
        pricing=(weak, prep, recycle, recycle_lambda),
        limits=(max(int(max_weak), 1), eps, tol),
        hooks=(stop, on_round, max_time),
    )
    # column generation is Kelley's method on the dual: the shared loop, unstabilised
    kelley_loop(cg, None)
    cols_f, cols_t, cols_p, w = cg.cols_f, cg.cols_t, cg.cols_p, cg.w
    history, n_rec, stopped = cg.monitor.history, cg.n_rec, cg.monitor.stop_reason == "stop"
    st = _Stage(d)
    for ff, tt, pp, ww in zip(cols_f, cols_t, cols_p, w):
        if ww > 0:
            st.add(ff, tt, -pp * ww, pp * ww)
    if not st.f and cols_f:  # keep one weak classifier so the stage has a score
        st.add(cols_f[0], cols_t[0], -cols_p[0] * 1e-12, cols_p[0] * 1e-12)
    columns = {
        "feature": np.array(cols_f, np.int64),
        "threshold": np.array(cols_t),
        "polarity": np.array(cols_p),
        "w": w.copy(),
    }
    return StageResult(st.stumps(), history, n_rec, stopped, columns)
