"""Master problem of MultiBoost-cw / MultiBoost solved by FCD or L-BFGS-B.

Problem (2) of Lin, Shen, van den Hengel, Suter, "Fast training of effective multi-class
boosting using coordinate descent optimization", ACCV 2012 (MultiBoost-cw), and the
shared-weak-learner problem of Shen & Hao, "A direct formulation for totally-corrective
multi-class boosting", CVPR 2011 (MultiBoost), are the same optimisation:

    min_{w >= 0}  sum_j w_j + (C/p) sum_i sum_{y != y_i} exp(F[i, y] - F[i, y_i]),

with ``F[i, c] = sum_{j: class(j) = c} w_j h_j(x_i)`` and ``p = m (K - 1)``.  A variable
``j`` is a pair (weak learner ``hyp(j)``, class ``class(j)``): class-wise learners give one
variable per weak learner, shared learners give K.  For weak learners with outputs in
{-1, 0, +1} each coordinate has a closed-form minimiser ([Lin2012 eq. 12]), which FCD
([Lin2012 Alg. 2]) uses.

Numerical safety: the scores F are kept exactly (additive updates, the log domain of
mu); ``mu(i, y) = exp(F[i, y] - F[i, y_i])`` is updated multiplicatively inside one sweep
([Lin2012 eq. 20]) and recomputed from F before each KKT check, so entries that underflowed recover.
FCD decreases the objective monotonically from its value C at w = 0, so ``mu <= p``
can never overflow, and [Lin2012 eq. 12] is evaluated in the cancellation-free log form
``w = log V+ - log(sqrt(V+ V- + a^2) + a)``, ``a = p / 2C``, which is finite for
V- = 0 and tends to [Lin2012 eq. 13] as C grows.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np
from numba import njit
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

__all__ = ["ExpLossMaster", "closed_form_update"]

_EXP_CAP = 700.0  # exp(700) ~ 1e304: caps exponents so L-BFGS-B line searches stay finite
_REFRESH_EVERY = 8  # stage-wise sweeps between exact recomputations of mu


# --------------------------------------------------------------------------- kernels
# Samples are sorted by class, so class c owns the contiguous block [lo[c], hi[c]);
# scores F, mu and the signed weights At are stored (K, m) so that every loop over
# samples is contiguous and SIMD-friendly.


@njit(cache=True)
def _mu_from_scores(F, y, mu, S):  # pragma: no cover - compiled
    """mu[c, i] = exp(F[c, i] - F[y_i, i]) ([Lin2012 eq. 15]), mu[y_i, i] = 0,
    S_i = sum_c mu[c, i]."""
    K, m = F.shape
    for i in range(m):
        S[i] = 0.0
    for c in range(K):
        for i in range(m):
            if c == y[i]:
                mu[c, i] = 0.0
            else:
                z = F[c, i] - F[y[i], i]
                if z > _EXP_CAP:
                    z = _EXP_CAP
                v = math.exp(z)
                mu[c, i] = v
                S[i] += v


@njit(cache=True)
def _signed_weights(lo, hi, mu, S, At):  # pragma: no cover - compiled
    """At[c, i] = S_i if y_i == c else -mu[c, i]: the dual weights of pricing problem (4)."""
    K, m = At.shape
    for c in range(K):
        for i in range(m):
            At[c, i] = -mu[c, i]
        for i in range(lo[c], hi[c]):
            At[c, i] = S[i]


@njit(cache=True, fastmath=True)
def _gradient(H, var_hyp, var_cls, At, scale, out):  # pragma: no cover - compiled
    """d g / d w_j = 1 - (C/p) sum_i h_j(x_i) At[class(j), i] (the bracket of [Lin2012 eq. 14]).

    Serial on purpose: a SIMD dot per variable; threads lose on shared, busy machines.
    """
    n = var_hyp.shape[0]
    m = At.shape[1]
    for j in range(n):
        h = H[var_hyp[j]]
        a = At[var_cls[j]]
        s = 0.0
        for i in range(m):
            s += h[i] * a[i]
        out[j] = 1.0 - scale * s


@njit(cache=True, fastmath=True)
def _scores(H, var_hyp, var_cls, w, F):  # pragma: no cover - compiled
    """F[c, i] = sum_{j: class(j) = c} w_j h_j(x_i)."""
    F[:] = 0.0
    m = F.shape[1]
    for j in range(var_hyp.shape[0]):
        wj = w[j]
        if wj == 0.0:
            continue
        h = H[var_hyp[j]]
        f = F[var_cls[j]]
        for i in range(m):
            f[i] += wj * h[i]


@njit(cache=True)
def _log_root_plus(lb, la):  # pragma: no cover - compiled
    """log(sqrt(e^lb + e^(2 la)) + e^la) without overflow or cancellation."""
    if lb == -np.inf:
        return la + math.log(2.0)
    half = 0.5 * lb
    if la >= half:
        return la + math.log1p(math.sqrt(1.0 + math.exp(lb - 2.0 * la)))
    r = math.exp(la - half)
    return half + math.log(math.sqrt(1.0 + r * r) + r)


@njit(cache=True)
def _coordinate_minimiser(lvp, lvm, la, large_c):  # pragma: no cover - compiled
    """argmin_{w >= 0} w + (C/p)(V- e^w + V+ e^-w) from log V+, log V-, la = log(p / 2C).

    [Lin2012 eq. 12] rewritten as ``e^w = V+ / (sqrt(V+ V- + a^2) + a)``; ``large_c`` uses
    [Lin2012 eq. 13] ``w = log(V+ / V-) / 2`` (only when V- > 0; otherwise [Lin2012 eq. 12], which
    stays finite).
    """
    if lvp == -np.inf:
        return 0.0
    if large_c and lvm > -np.inf:
        w = 0.5 * (lvp - lvm)
    else:
        w = lvp - _log_root_plus(lvp + lvm, la)
    return w if w > 0.0 else 0.0


@njit(cache=True, fastmath=True)
def _v_sums(h, a, b, S, muc):  # pragma: no cover - compiled
    """Sums of mu over D_{+1} and D_{-1} of a variable of class c ([Lin2012 eq. 21] before
    rescaling).

    Own-class samples [a, b) have dh = h on all K - 1 constraints (total S_i); the others
    have dh = -h on the single constraint (i, c).
    """
    vp = 0.0
    vm = 0.0
    for i in range(a, b):
        s = h[i] * S[i]
        vp += max(s, 0.0)
        vm += max(-s, 0.0)
    for lo, hi in ((0, a), (b, h.shape[0])):  # the other classes' samples
        for i in range(lo, hi):
            s = h[i] * muc[i]
            vm += max(s, 0.0)
            vp += max(-s, 0.0)
    return vp, vm


@njit(cache=True, fastmath=True)
def _apply(h, c, a, b, d, F, mu, S, fac):  # pragma: no cover - compiled
    """[Lin2012 eq. 20] after w_j += d: mu *= exp(-dh d); the scores of class c move by d h."""
    K, m = F.shape
    ep = math.exp(d)
    em = math.exp(-d)
    fc = F[c]
    muc = mu[c]
    for i in range(a, b):  # own class: every constraint of sample i scales by exp(-h d)
        hv = h[i]
        fc[i] += d * hv
        fac[i] = 1.0 + (hv > 0) * (em - 1.0) + (hv < 0) * (ep - 1.0)
        S[i] *= fac[i]
    for k in range(K):
        if k != c:
            mk = mu[k]
            for i in range(a, b):
                mk[i] *= fac[i]
    for lo, hi in ((0, a), (b, m)):  # other classes: constraint (i, c) scales by exp(h d)
        for i in range(lo, hi):
            hv = h[i]
            fc[i] += d * hv
            old = muc[i]
            new = old * (1.0 + (hv > 0) * (ep - 1.0) + (hv < 0) * (em - 1.0))
            muc[i] = new
            S[i] += new - old


class FCDVariables(NamedTuple):
    """The restricted problem's variables as numba sees them: variable ``j`` is weak
    learner ``H[hyp[j]]`` for class ``cls[j]``; class ``c``'s samples are ``lo[c]:hi[c]``
    (samples sorted by class)."""

    H: np.ndarray
    hyp: np.ndarray
    cls: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


class ExpLossState(NamedTuple):
    """What a coordinate step updates in place: weights ``w``, scores ``F`` (K x m),
    constraint weights ``mu`` (K x m), their per-sample sums ``S`` and a scratch ``fac``."""

    w: np.ndarray
    F: np.ndarray
    mu: np.ndarray
    S: np.ndarray
    fac: np.ndarray


@njit(cache=True)
def _sweep(order, var, st, la, large_c):  # pragma: no cover
    """Closed-form coordinate updates ([Lin2012 Alg. 2 lines 5-10]) for the variables in ``order``
    (``var``: :class:`FCDVariables`, ``st``: :class:`ExpLossState`, updated in place)."""
    H, var_hyp, var_cls, lo, hi = var.H, var.hyp, var.cls, var.lo, var.hi
    w, F, mu, S, fac = st.w, st.F, st.mu, st.S, st.fac
    n_changed = 0
    for q in range(order.shape[0]):
        j = order[q]
        c = var_cls[j]
        h = H[var_hyp[j]]
        a, b = lo[c], hi[c]
        wo = w[j]
        vp, vm = _v_sums(h, a, b, S, mu[c])
        lvp = math.log(vp) + wo if vp > 0.0 else -np.inf
        lvm = math.log(vm) - wo if vm > 0.0 else -np.inf
        wn = _coordinate_minimiser(lvp, lvm, la, large_c)
        d = wn - wo
        if d == 0.0:
            continue
        n_changed += 1
        w[j] = wn
        _apply(h, c, a, b, d, F, mu, S, fac)
    return n_changed


def closed_form_update(
    v_plus: float, v_minus: float, C: float, p: float, large_C: bool = False
) -> float:
    """[Lin2012 eq. 12] (or [Lin2012 eq. 13]): the minimiser over w >= 0 of
    ``w + (C/p)(V- e^w + V+ e^-w)``."""
    lvp = math.log(v_plus) if v_plus > 0 else -np.inf
    lvm = math.log(v_minus) if v_minus > 0 else -np.inf
    return float(_coordinate_minimiser(lvp, lvm, math.log(p / (2.0 * C)), bool(large_C)))


# --------------------------------------------------------------------------- master
class ExpLossMaster:
    """Restricted problem (2)/(7) over the weak learners generated so far.

    Holds the weak-learner outputs ``H`` (int8 rows in {-1, 0, +1}, or float rows for
    L-BFGS-B with real-valued learners), the variables (hypothesis, class), the weights
    ``w``, the scores ``F`` and ``mu``/``S``.  :meth:`solve_fcd` is [Lin2012 Alg. 2],
    :meth:`solve_lbfgs` the L-BFGS-B baseline on the same problem.
    """

    def __init__(
        self, y, n_classes: int, C: float, *, require_discrete: bool = True, capacity: int = 64
    ) -> None:
        y = np.asarray(y, dtype=np.int64)
        self.m = len(y)
        self.K = int(n_classes)
        self.perm = np.argsort(y, kind="stable")  # internal order: sorted by class
        self.y = np.ascontiguousarray(y[self.perm])
        counts = np.bincount(self.y, minlength=self.K)
        self.hi = np.cumsum(counts).astype(np.int64)
        self.lo = (self.hi - counts).astype(np.int64)
        self.C = float(C)
        self.p = float(self.m * (self.K - 1))
        self.scale = self.C / self.p
        self.la = math.log(self.p / (2.0 * self.C))
        self.require_discrete = bool(require_discrete)
        self.discrete = True  # outputs stored as int8 until a real-valued learner appears
        self.H = np.empty((max(capacity, 1), self.m), dtype=np.int8)
        self.n_hyp = 0
        self.var_hyp = np.empty(capacity, dtype=np.int64)
        self.var_cls = np.empty(capacity, dtype=np.int64)
        self.w_buf = np.zeros(capacity)
        self.n_vars = 0
        self.F = np.zeros((self.K, self.m))
        self.mu = np.empty((self.K, self.m))
        self.S = np.empty(self.m)
        self.At = np.empty((self.K, self.m))
        self._fac = np.empty(self.m)
        self.refresh()

    # -- bookkeeping ----------------------------------------------------------------------
    @property
    def w(self) -> np.ndarray:
        return self.w_buf[: self.n_vars]

    def add_hypotheses(self, outputs) -> np.ndarray:
        """Append weak-learner outputs (rows, shape (k, m)); returns their indices."""
        outputs = np.atleast_2d(np.asarray(outputs, dtype=np.float64))
        if self.discrete and not np.all(np.isin(outputs, (-1.0, 0.0, 1.0))):
            if self.require_discrete:
                raise ValueError(
                    "FCD needs weak learners with outputs in {-1, 0, +1}; "
                    "use solver='lbfgs' for real-valued weak learners"
                )
            self.H = self.H.astype(np.float64)
            self.discrete = False
        k = len(outputs)
        if self.n_hyp + k > len(self.H):
            grown = np.empty((max(2 * len(self.H), self.n_hyp + k), self.m), self.H.dtype)
            grown[: self.n_hyp] = self.H[: self.n_hyp]
            self.H = grown
        self.H[self.n_hyp : self.n_hyp + k] = outputs[:, self.perm]
        self.n_hyp += k
        return np.arange(self.n_hyp - k, self.n_hyp)

    def add_variables(self, hyp, cls) -> np.ndarray:
        """Append variables (weak learner, class) at weight 0; returns their indices."""
        hyp = np.atleast_1d(np.asarray(hyp, dtype=np.int64))
        cls = np.broadcast_to(np.asarray(cls, dtype=np.int64), hyp.shape)
        k = len(hyp)
        if self.n_vars + k > len(self.var_hyp):
            size = max(2 * len(self.var_hyp), self.n_vars + k)
            for name in ("var_hyp", "var_cls", "w_buf"):
                old = getattr(self, name)
                new = np.zeros(size, old.dtype)
                new[: self.n_vars] = old[: self.n_vars]
                setattr(self, name, new)
        sl = slice(self.n_vars, self.n_vars + k)
        self.var_hyp[sl], self.var_cls[sl], self.w_buf[sl] = hyp, cls, 0.0
        self.n_vars += k
        return np.arange(sl.start, sl.stop)

    def _views(self):
        n = self.n_vars
        return self.H[: self.n_hyp], self.var_hyp[:n], self.var_cls[:n]

    def refresh(self) -> None:
        """Recompute mu and S exactly from the scores (log domain)."""
        _mu_from_scores(self.F, self.y, self.mu, self.S)
        self._stale = 0

    def set_weights(self, w) -> None:
        """Set all weights and recompute the scores and mu."""
        self.w[:] = w
        H, vh, vc = self._views()
        _scores(H, vh, vc, self.w, self.F)
        self.refresh()

    # -- quantities of the problem ------------------------------------------------------------
    def objective(self) -> float:
        """Primal objective (2) at the current weights."""
        return float(self.w.sum() + self.scale * self.S.sum())

    def scores(self) -> np.ndarray:
        """Class scores F (m, K) of the training samples in their original order."""
        out = np.empty((self.m, self.K))
        out[self.perm] = self.F.T
        return out

    def dual_weights(self) -> np.ndarray:
        """lambda-weighted signed sample weights (m, K): column c is the objective of (4)."""
        _signed_weights(self.lo, self.hi, self.mu, self.S, self.At)
        out = np.empty((self.m, self.K))
        out[self.perm] = self.scale * self.At.T
        return out

    def gradient(self) -> np.ndarray:
        H, vh, vc = self._views()
        _signed_weights(self.lo, self.hi, self.mu, self.S, self.At)
        g = np.empty(self.n_vars)
        if self.n_vars:
            _gradient(H, vh, vc, self.At, self.scale, g)
        return g

    def kkt_violation(self, g=None) -> np.ndarray:
        """theta_j of [Lin2012 eq. 16]: |g_j| if w_j > 0 else max(0, -g_j)."""
        g = self.gradient() if g is None else g
        return np.where(self.w > 0, np.abs(g), np.maximum(0.0, -g))

    # -- solvers ------------------------------------------------------------------------------
    def solve_fcd(
        self,
        new_vars=None,
        *,
        eps: float = 0.1,
        tau_max: int = 2,
        rng=None,
        large_C: bool = False,
        check_kkt: bool = False,
    ) -> dict:
        """[Lin2012 Alg. 2]: sequential sweep over ``new_vars``, then random picks from the working
        set of KKT violators ([Lin2012 eq. 17]) until max theta <= eps ([Lin2012 eq. 18]) or
        tau_max sweeps."""
        if not self.discrete:
            raise ValueError("FCD needs discrete weak learners (outputs in {-1, 0, +1})")
        rng = np.random.default_rng(rng)
        H, vh, vc = self._views()
        order = np.arange(self.n_vars) if new_vars is None else np.asarray(new_vars, dtype=np.int64)
        n_updates = n_changed = 0
        max_theta = None  # only known after a KKT check
        converged = False
        tau = 0
        while True:
            tau += 1
            n_changed += _sweep(
                order,
                FCDVariables(H, vh, vc, self.lo, self.hi),
                ExpLossState(self.w, self.F, self.mu, self.S, self._fac),
                self.la,
                bool(large_C),
            )
            n_updates += len(order)
            self._stale += 1
            if tau >= tau_max and not check_kkt:
                if tau_max > 1 or self._stale >= _REFRESH_EVERY:  # stage-wise: now and then
                    self.refresh()
                break
            self.refresh()
            theta = self.kkt_violation()
            max_theta = float(theta.max()) if len(theta) else 0.0
            if max_theta <= eps:
                converged = True
                break
            if tau >= tau_max:
                break
            work = np.flatnonzero(theta > eps)
            order = rng.choice(work, size=len(work))
        return {
            "tau": tau,
            "n_updates": n_updates,
            "n_changed": n_changed,
            "max_theta": max_theta,
            "converged": converged,
        }

    def solve_lbfgs(
        self, *, maxiter: int = 15000, ftol: float = 2.220446049250313e-09, gtol: float = 1e-5
    ) -> dict:
        """The same problem by scipy's L-BFGS-B (warm-started at the current weights)."""
        H, vh, vc = self._views()
        F = np.empty_like(self.F)
        mu, S, At = np.empty_like(self.mu), np.empty_like(self.S), np.empty_like(self.At)
        g = np.empty(self.n_vars)
        scale = self.scale

        def fun(w):
            _scores(H, vh, vc, w, F)
            _mu_from_scores(F, self.y, mu, S)
            _signed_weights(self.lo, self.hi, mu, S, At)
            _gradient(H, vh, vc, At, scale, g)
            return float(w.sum() + scale * S.sum()), g.copy()

        with threadpool_limits(1, user_api="blas"):  # BLAS-1 sized work: threads only spin
            res = minimize(
                fun,
                self.w.copy(),
                jac=True,
                method="L-BFGS-B",
                bounds=[(0.0, None)] * self.n_vars,
                options={"maxiter": maxiter, "ftol": ftol, "gtol": gtol},
            )
        self.set_weights(np.maximum(res.x, 0.0))
        return {"nit": int(res.nit), "nfev": int(res.nfev), "success": bool(res.success)}

    def solve(self, solver: str, new_vars=None, **options) -> dict:
        """Dispatch to :meth:`solve_fcd` or :meth:`solve_lbfgs`; adds the seconds spent."""
        t0 = time.perf_counter()
        if solver == "fcd":
            info = self.solve_fcd(new_vars, **options)
        elif solver == "lbfgs":
            info = self.solve_lbfgs(**options)
        else:
            raise ValueError(f"solver must be 'fcd' or 'lbfgs', got {solver!r}")
        info["seconds"] = time.perf_counter() - t0
        return info
