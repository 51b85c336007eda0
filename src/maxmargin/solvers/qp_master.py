"""Reusable 1-slack QP master for L2-regularised cutting-plane training.

The master problem over a working set of planes ``(a_p, b_p)`` is

    min_{w, xi >= 0}  1/2 ||w||^2 + C xi   s.t.  <w, a_p> >= b_p - xi  for all p,

the one-slack formulation of Joachims, Finley & Yu, "Cutting-plane training of
structural SVMs", Machine Learning 77 (2009).  Its Lagrangian dual is a small
dense QP over one multiplier per plane,

    max_{lam >= 0, sum(lam) <= C}  b^T lam - 1/2 lam^T G lam,   G = A A^T,

with the primal solution recovered as ``w = A^T lam`` and
``xi = max(0, max_p b_p - <w, a_p>)``.  Only the Gram matrix ``G`` (grown by
one row per added plane) enters the dual, so the cost per solve does not depend
on the feature dimension D.

The default dual solver is an SMO-type method (sequential minimal optimisation,
pairwise moves on the capped simplex, second-order working-set selection as in
Fan, Chen & Lin, JMLR 2005), compiled with numba and warm-started from the
previous multipliers (zero for new planes).  It stops on the exact duality gap
of the master, so the reported gap is reliable, and it is indifferent to a
singular Gram matrix.  ``solver="highs"`` uses HiGHS's QP solver instead;
HiGHS 1.15 reports "Non-convex" (model status Not Set) as soon as ``G`` is rank
deficient -- which happens whenever there are more planes than features -- even
with a 1e-8 relative ridge, hence it is not the default.  The structured SVM
learners can reuse this class: planes are dense vectors ``a_p in R^D`` with
offsets ``b_p``.

Non-negative coordinates (``nonneg=J``).  A task may declare that some coordinates of
``w`` must be non-negative -- the CRF's pairwise weights, which keep the energy
submodular and the graph-cut oracle exact (Szummer, Kohli & Hoiem, "Learning CRFs using
graph cuts", ECCV 2008, [Szummer2008]).  The master then is

    min_{w, xi >= 0}  1/2 ||w||^2 + C xi   s.t.  <w, a_p> >= b_p - xi,  w_j >= 0 (j in J).

With multipliers ``lam_p >= 0`` of the planes and ``mu_j >= 0`` of the bounds the
Lagrangian is stationary at ``w = A^T lam + E_J mu`` (``E_J`` embeds ``mu`` into the
coordinates J) and ``sum(lam) <= C``, so the dual is

    max_{lam >= 0, sum(lam) <= C, mu >= 0}  b^T lam - 1/2 ||A^T lam + E_J mu||^2.

For fixed ``lam`` the best ``mu`` is ``mu_j = max(0, -(A^T lam)_j)``, i.e. ``w =
Pi(A^T lam)`` with ``Pi`` the projection onto ``{w_J >= 0}`` (clip the coordinates J at
0), and the dual becomes ``D(lam) = b^T lam - 1/2 ||Pi(A^T lam)||^2``: every feasible
``lam`` gives a lower bound on the constrained optimum (weak duality), and ``w =
Pi(A^T lam)`` is a feasible primal point, whatever the accuracy of ``lam``.

The solver is a primal active-set method on the bounds (Nocedal & Wright, "Numerical
Optimization", 2nd ed. 2006, [Nocedal2006 Alg. 16.3]).  On the face ``w_S = 0`` (S a
subset of J) the master is the unconstrained one with the coordinates S deleted from the
planes: the same capped-simplex dual with the Gram matrix ``G_S = G - A_S A_S^T``
(solved as above, warm-started).  A face optimum with ``w_j < 0`` for some ``j`` in J
but not in S is approached from the current (feasible) iterate only up to the first such
coordinate reaching 0, which joins S; at a feasible face optimum, the ``j`` in S with the
most negative multiplier ``mu_j = -(A^T lam)_j`` leaves S; with none negative the KKT
conditions of the constrained master hold.  In exact arithmetic the objective decreases
strictly from one face optimum to the next (``1/2 ||w||^2`` is strongly convex), so no
face is visited twice and the method ends after at most ``2^|J|`` face optima; a face
visited again (rounding) or a cap of ``4 |J| + 10`` face solves stops it anyway, and the
bounds stay valid.  The face found is the start of the next solve (a cutting-plane loop
rarely changes it).
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
from numba import njit

from maxmargin.solvers._highs import new_highs
from maxmargin.solvers.cholesky import chol_append, chol_delete, chol_solve

__all__ = ["MasterSolution", "OneSlackQPMaster", "declared_nonneg", "refuse_nonneg"]


def declared_nonneg(model, dim: int | None = None) -> np.ndarray | None:
    """The coordinates of ``w`` that ``model`` declares non-negative (its
    ``nonneg_coords``: e.g. the CRF's pairwise weights, which keep graph cuts exact), as
    a sorted int array, or None when it declares none; ValueError for indices outside
    ``0..dim-1``."""
    J = getattr(model, "nonneg_coords", None)
    return _nonneg_coords(J, getattr(model, "dim", None) if dim is None else dim)


def _nonneg_coords(J, dim: int | None) -> np.ndarray | None:
    """``J`` as sorted unique int coordinates of a ``dim``-vector (None when empty or
    None); ValueError for indices outside ``0..dim-1``."""
    if J is None:
        return None
    J = np.unique(np.asarray(J, dtype=np.int64).ravel())
    if len(J) and (J[0] < 0 or (dim is not None and J[-1] >= dim)):
        top = "dim - 1" if dim is None else dim - 1
        raise ValueError(f"non-negative coordinates must lie in 0..{top}, got {J.tolist()}")
    return J if len(J) else None


def refuse_nonneg(model, solver: str) -> None:
    """ValueError when ``model`` declares non-negative coordinates that ``solver``
    cannot enforce (never a fit that silently ignores them)."""
    J = declared_nonneg(model)
    if J is not None:
        raise ValueError(
            f"the model declares the weights {J.tolist()} non-negative (e.g. a CRF's "
            f"pairwise weights, for exact graph cuts), which solver={solver!r} does not "
            "enforce; use solver='1-slack'"
        )


@dataclass
class MasterSolution:
    """Solution of the master QP on the current working set."""

    w: np.ndarray
    xi: float
    lam: np.ndarray
    primal: float
    dual: float

    @property
    def gap(self) -> float:
        """Duality gap ``primal - dual`` of the working-set QP (>= 0 up to tolerance)."""
        return self.primal - self.dual


@njit(cache=True)
def capped_simplex_smo_steps(G, g, lam, n, C, tol, max_iter):
    """SMO on the capped-simplex QP ``min 1/2 lam^T G lam - b^T lam, lam >= 0, sum(lam) <=
    C`` over the first ``n`` coordinates, in place; returns ``(gap_at_start, gap, steps)``.
    It is the dual of the 1-slack master ([Joachims2009], one multiplier per plane, the
    cap ``C`` from the one slack), of one example's block of the n-slack dual
    ([Tsochantaridis2005], [Keerthi2008]: cap ``C/n``) and of the LACBoost / FisherBoost
    restricted master (``w >= 0, 1'w <= 1``); for the SVC dual (box and one equality) see
    :func:`maxmargin.solvers.svm._svc_dual_smo_steps`.

    ``g`` holds the gradient ``G lam - b`` on entry and is kept up to date.  A slack
    multiplier ``lam_0 = C - sum(lam)`` (the plane ``xi >= 0``: ``a = 0, b = 0``, gradient
    0) turns the feasible set into the simplex ``sum = C``, whose duality gap is
    ``sum_p lam_p (g_p - min(g, 0))`` (including ``lam_0``).  Each step moves mass from
    the used coordinate with the largest gradient to the one with the largest
    second-order decrease ([Fan2005] WSS2), exactly along the pair.
    """
    gap0 = 0.0
    gap = 0.0
    it = 0
    while True:
        lsum = 0.0
        for p in range(n):
            lsum += lam[p]
        lam0 = C - lsum
        if lam0 < 0.0:
            lam0 = 0.0
        gmin = 0.0
        for p in range(n):
            if g[p] < gmin:
                gmin = g[p]
        gap = -lam0 * gmin
        for p in range(n):
            gap += lam[p] * (g[p] - gmin)
        if it == 0:
            gap0 = gap
        if gap <= tol or it >= max_iter:
            break
        # i: used coordinate (or the slack, index -1) with the largest gradient
        i = -1
        gi = 0.0
        if lam0 <= 0.0:
            gi = -np.inf
        for p in range(n):
            if lam[p] > 0.0 and g[p] > gi:
                gi = g[p]
                i = p
        # j: second-order choice among coordinates with smaller gradient
        j = -2
        best = 0.0
        Gii = G[i, i] if i >= 0 else 0.0
        for q in range(-1, n):
            gq = g[q] if q >= 0 else 0.0
            diff = gi - gq
            if diff <= 0.0:
                continue
            if q >= 0:
                curv = Gii + G[q, q] - 2.0 * (G[i, q] if i >= 0 else 0.0)
            else:
                curv = Gii
            if curv <= 1e-12 * (1.0 + Gii):
                curv = 1e-12 * (1.0 + Gii)
            gain = diff * diff / curv
            if gain > best:
                best = gain
                j = q
        if j == -2:
            break
        gj = g[j] if j >= 0 else 0.0
        Gjj = G[j, j] if j >= 0 else 0.0
        Gij = G[i, j] if (i >= 0 and j >= 0) else 0.0
        curv = Gii + Gjj - 2.0 * Gij
        cap = lam[i] if i >= 0 else lam0
        t = cap if curv <= 0.0 else min(cap, (gi - gj) / curv)
        if t <= 0.0:
            break
        if i >= 0:
            lam[i] -= t
            if lam[i] < 0.0:
                lam[i] = 0.0
            for p in range(n):
                g[p] -= t * G[p, i]
        if j >= 0:
            lam[j] += t
            for p in range(n):
                g[p] += t * G[p, j]
        it += 1
    return gap0, gap, it


def _smo(G, b, C, lam, tol, max_iter):
    """Solve max b^T lam - 1/2 lam^T G lam, lam >= 0, sum(lam) <= C, from ``lam``
    (:func:`capped_simplex_smo_steps` on all coordinates); returns (lam, gap, iters)."""
    g = G @ lam - b
    _, gap, it = capped_simplex_smo_steps(G, g, lam, b.shape[0], C, tol, max_iter)
    return lam, gap, it


def _active_set(G, b, C, lam, max_iter=200):
    """A primal active-set method for ``min 1/2 lam^T G lam - b^T lam, lam >= 0,
    sum(lam) <= C`` from the feasible ``lam`` (a copy is returned, feasible at every
    step); returns ``(lam, ok)``, ``ok`` False when a face system was singular or the
    iteration cap was hit (the caller then finishes with SMO from the point reached).

    The slack ``lam_0 = C - sum(lam)`` makes the set the simplex ``sum = C``.  On the
    face of the free coordinates F the KKT system ``[G_FF -1; 1^T 0] [x; nu] = [b_F; C]``
    gives the face optimum; a step to it is cut at the first coordinate reaching 0
    (which leaves F), and at a face optimum the coordinate with the most negative
    reduced gradient ``g_i - nu`` enters F.  SMO needs up to millions of pair steps
    where the Gram matrix is ill-conditioned (raw pixel features: 650 ms for 243 planes
    on digits); the working set of a cutting-plane loop changes by a plane or two per
    solve, so a warm-started active set takes a handful of small dense solves, done in
    one compiled call (:func:`_active_set_kernel`).
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    P = b.shape[0]
    scale = max(1.0, float(np.max(np.abs(np.diag(G)))) if P else 1.0)
    x, ok = _active_set_kernel(G, b, float(C), lam, int(max_iter), scale)
    return x[1:], bool(ok)


@njit(cache=True)
def _active_set_kernel(G, b, C, lam, max_iter, scale):
    """The loop of :func:`_active_set`; returns ``(x, ok)`` with ``x[0]`` the slack
    ``C - sum(lam)`` and ``x[1:]`` the multipliers.

    The face system is solved through a Cholesky factor of ``G_FF`` over the free
    planes F (the slack's row of the augmented Gram matrix is zero): with the slack
    fixed at 0, ``x_F = G_FF^{-1} (b_F + nu 1)`` and ``1^T x_F = C`` give ``nu``; with
    the slack free, ``nu = 0`` and ``x_F = G_FF^{-1} b_F``.  The factor is updated by one
    row/column as a plane enters or leaves F, so a step costs O(|F|^2) instead of a
    fresh O(|F|^3) solve.  A singular ``G_FF`` (more free planes than the rank of the
    planes) returns ``ok`` False; the caller then finishes with SMO.
    """
    P = b.shape[0]
    x = np.empty(P + 1)
    x[0] = max(0.0, C - lam.sum())
    x[1:] = lam
    slack_free = x[0] > 0.0
    tiny = 1e-12 * scale
    L = np.zeros((P + 1, P + 1))
    F = np.empty(P + 1, dtype=np.int64)  # free planes (0-based plane indices), in L's order
    inF = np.zeros(P, dtype=np.bool_)
    nF = 0
    col = np.empty(P + 1)
    for p in range(P):
        if x[p + 1] > 0.0:
            for i in range(nF):
                col[i] = G[F[i], p]
            if not chol_append(L, nF, col, G[p, p], tiny):
                return x, False
            F[nF] = p
            inF[p] = True
            nF += 1
    if nF == 0 and not slack_free:
        slack_free = True
    rhs = np.empty(P + 1)
    u = np.empty(P + 1)
    v = np.empty(P + 1)
    sol = np.empty(P + 1)
    for _ in range(max_iter):
        for i in range(nF):
            rhs[i] = b[F[i]]
        chol_solve(L, nF, rhs, u)
        if slack_free:
            nu = 0.0
            tot = 0.0
            for i in range(nF):
                sol[i] = u[i]
                tot += u[i]
            sol0 = C - tot
        else:
            for i in range(nF):
                rhs[i] = 1.0
            chol_solve(L, nF, rhs, v)
            s1 = 0.0
            s2 = 0.0
            for i in range(nF):
                s1 += u[i]
                s2 += v[i]
            if not (s2 > 0.0) or not np.isfinite(s2):
                return x, False
            nu = (C - s1) / s2
            for i in range(nF):
                sol[i] = u[i] + nu * v[i]
            sol0 = 0.0
        for i in range(nF):
            if not np.isfinite(sol[i]):
                return x, False
        # the step to the face optimum, cut at the first coordinate reaching 0
        k = -2
        alpha = np.inf
        if slack_free and sol0 < x[0]:
            alpha = -x[0] / (sol0 - x[0])
            k = -1
        for i in range(nF):
            pi = sol[i] - x[F[i] + 1]
            if pi < 0.0:
                ratio = -x[F[i] + 1] / pi
                if ratio < alpha:
                    alpha = ratio
                    k = i
        has_neg = slack_free and sol0 < 0.0
        for i in range(nF):
            if sol[i] < 0.0:
                has_neg = True
                break
        if has_neg:
            alpha = max(0.0, alpha)
            for i in range(nF):
                xi = x[F[i] + 1] + alpha * (sol[i] - x[F[i] + 1])
                x[F[i] + 1] = max(xi, 0.0)
            if slack_free:
                x[0] = max(x[0] + alpha * (sol0 - x[0]), 0.0)
            if k == -1:
                x[0] = 0.0
                slack_free = False
            else:
                x[F[k] + 1] = 0.0
                inF[F[k]] = False
                chol_delete(L, nF, k)
                for i in range(k, nF - 1):
                    F[i] = F[i + 1]
                nF -= 1
            if nF == 0 and not slack_free:
                return x, False
            continue
        for i in range(nF):
            x[F[i] + 1] = sol[i]
        if slack_free:
            x[0] = sol0
        # reduced gradients g_p - nu of the fixed coordinates (the slack's g is 0)
        j = -2
        best = -1e-12 * scale * max(1.0, C)
        if not slack_free and -nu < best:
            best = -nu
            j = -1
        for p in range(P):
            if inF[p]:
                continue
            g = -b[p]
            for i in range(nF):
                g += G[p, F[i]] * x[F[i] + 1]
            red = g - nu
            if red < best:
                best = red
                j = p
        if j == -2:
            return x, True
        if j == -1:
            slack_free = True
            continue
        for i in range(nF):
            col[i] = G[F[i], j]
        if not chol_append(L, nF, col, G[j, j], tiny):
            return x, False
        F[nF] = j
        inF[j] = True
        nF += 1
    return x, False


class OneSlackQPMaster:
    """Working-set master problem of 1-slack cutting-plane training.

    Parameters
    ----------
    C : float
        Weight of the slack variable (> 0).
    dim : int or None
        Dimension D of ``w`` and of every plane vector ``a_p``.  None: Gram-only mode
        (kernel machines), where planes are given by their inner products with the
        stored ones and ``w`` is never formed (``solution.w`` is None; use
        :meth:`combine`).
    tol : float
        Target duality gap of the master QP, relative to ``max(1, |dual|)``
        (SMO), or the HiGHS optimality tolerance.
    solver : {"smo", "highs"}
        Dual solver, see the module docstring.
    max_inner : int
        Iteration cap of the SMO solver.
    prune_after : int or None
        If set, a plane whose multiplier has been zero for this many consecutive
        solves is removed from the working set (it can be re-added by the oracle).
    nonneg : array of int or None
        Coordinates J of ``w`` constrained to ``w_j >= 0`` (explicit mode only; the
        dual and the active-set method on the bounds: module docstring).
    """

    def __init__(
        self,
        C: float,
        dim: int | None,
        tol: float = 1e-10,
        prune_after: int | None = None,
        solver: str = "smo",
        max_inner: int = 1_000_000,
        nonneg=None,
    ):
        if not np.isfinite(C) or C <= 0:
            raise ValueError(f"C must be a positive finite number, got {C!r}")
        if dim is not None and dim < 1:
            raise ValueError(f"dim must be >= 1 or None (Gram-only mode), got {dim!r}")
        self.C = float(C)
        self.dim = None if dim is None else int(dim)
        if solver not in ("active-set", "smo", "highs"):
            raise ValueError(f"solver must be 'active-set', 'smo' or 'highs', got {solver!r}")
        self.tol = float(tol)
        self.solver = solver
        self.max_inner = int(max_inner)
        self.ridge = 0.0
        self.prune_after = prune_after
        self._A = np.empty((0, self.dim)) if self.dim is not None else None
        self._payload: list = []  # per plane, for the caller (Gram-only mode)
        self._b = np.empty(0)
        self._G = np.empty((0, 0))
        self._lam = np.empty(0)
        self._idle = np.empty(0, dtype=np.int64)
        self.nonneg = None
        if nonneg is not None:
            if self.dim is None:
                raise ValueError("non-negative coordinates need explicit planes (dim given)")
            self.nonneg = _nonneg_coords(nonneg, self.dim)
        # the face w_S = 0 (S within nonneg) of the last solve: the next one starts there
        self._face = np.zeros(0 if self.nonneg is None else len(self.nonneg), dtype=bool)
        #: face solves of the last :meth:`solve` (1 per solve without ``nonneg``)
        self.n_faces = 0

    @property
    def n_planes(self) -> int:
        return self._b.shape[0]

    @property
    def planes(self) -> tuple[np.ndarray, np.ndarray]:
        """The working set as ``(A, b)`` with one plane per row of ``A``."""
        if self._A is None:
            raise ValueError("Gram-only mode stores no plane vectors")
        return self._A.copy(), self._b.copy()

    def add_plane(self, a, b: float, *, gram=None, payload=None) -> None:
        """Add the constraint ``<w, a> >= b - xi`` to the working set.

        Gram-only mode (``dim=None``): ``a`` is None and ``gram`` holds the inner
        products ``<a, a_p>`` with the stored planes followed by ``<a, a>``; ``payload``
        is kept with the plane (and pruned with it) for :meth:`combine`.
        """
        if self.dim is None:
            if gram is None:
                raise ValueError("Gram-only mode: give gram = (<a, a_p> for stored p, <a, a>)")
            gram = np.asarray(gram, dtype=np.float64).ravel()
            if gram.shape[0] != self.n_planes + 1:
                raise ValueError(f"gram has length {gram.shape[0]}, expected {self.n_planes + 1}")
            g, aa = gram[:-1], float(gram[-1])
        else:
            a = np.asarray(a, dtype=np.float64).ravel()
            if a.shape[0] != self.dim:
                raise ValueError(f"plane has dimension {a.shape[0]}, expected {self.dim}")
            g, aa = self._A @ a, float(a @ a)
        if not (np.all(np.isfinite(g)) and np.isfinite(aa) and np.isfinite(b)):
            raise ValueError("plane contains NaN or inf")
        P = self.n_planes
        G = np.empty((P + 1, P + 1))
        G[:P, :P] = self._G
        G[P, :P] = g
        G[:P, P] = g
        G[P, P] = aa
        self._G = G
        if self.dim is not None:
            self._A = np.vstack([self._A, a[None, :]])
        self._payload.append(payload)
        self._b = np.append(self._b, float(b))
        self._lam = np.append(self._lam, 0.0)
        self._idle = np.append(self._idle, 0)

    @property
    def payloads(self) -> list:
        """The payloads of the stored planes, in order."""
        return list(self._payload)

    def combine(self, lam=None, key=None):
        """``sum_p lam_p payload_p`` (``payload_p[key]`` if ``key``) over stored planes."""
        lam = self._lam if lam is None else lam
        parts = [p if key is None else p[key] for p in self._payload]
        return sum(lv * part for lv, part in zip(lam, parts))

    # ------------------------------------------------------------------ solve
    def _solve_dual_highs(self, G) -> np.ndarray:
        P = self.n_planes
        h = new_highs()
        h.setOptionValue("primal_feasibility_tolerance", self.tol)
        h.setOptionValue("dual_feasibility_tolerance", self.tol)
        inf = highspy.kHighsInf
        model = highspy.HighsModel()
        lp = model.lp_
        lp.num_col_ = P
        lp.num_row_ = 1
        lp.col_cost_ = -self._b
        lp.col_lower_ = np.zeros(P)
        lp.col_upper_ = np.full(P, inf)
        lp.row_lower_ = np.array([-inf])
        lp.row_upper_ = np.array([self.C])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.arange(P + 1, dtype=np.int32)
        lp.a_matrix_.index_ = np.zeros(P, dtype=np.int32)
        lp.a_matrix_.value_ = np.ones(P)
        # Hessian: lower triangle, column-wise (optional relative ridge).
        Gr = G + self.ridge * max(1e-300, float(np.max(np.diag(G)))) * np.eye(P)
        rows, cols = np.tril_indices(P)
        order = np.lexsort((rows, cols))
        rows, cols = rows[order], cols[order]
        hess = model.hessian_
        hess.dim_ = P
        hess.format_ = highspy.HessianFormat.kTriangular
        hess.start_ = np.concatenate([[0], np.cumsum(np.arange(P, 0, -1))]).astype(np.int32)
        hess.index_ = rows.astype(np.int32)
        hess.value_ = Gr[rows, cols]
        h.passModel(model)
        if np.any(self._lam > 0):
            sol = highspy.HighsSolution()
            sol.col_value = list(self._lam)
            sol.value_valid = True
            h.setSolution(sol)
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"HiGHS QP failed: {h.modelStatusToString(status)}")
        lam = np.asarray(h.getSolution().col_value, dtype=np.float64)
        # clean up tolerance-level infeasibilities
        lam = np.maximum(lam, 0.0)
        s = lam.sum()
        if s > self.C:
            lam *= self.C / s
        return lam

    def _solve_dual(self, G, lam) -> np.ndarray:
        """The capped-simplex dual with Gram matrix ``G``, warm-started from ``lam``."""
        if self.solver == "highs":
            return self._solve_dual_highs(G)
        lam = lam.copy()
        s = lam.sum()
        if s > self.C:
            lam *= self.C / s
        scale = max(1.0, float(np.max(np.abs(self._b))) * self.C)
        if self.solver == "active-set":
            lam, _ = _active_set(G, self._b, self.C, lam)
        # SMO certifies the gap (zero steps if the active set reached it)
        lam, _, _ = _smo(G, self._b, self.C, lam, self.tol * scale, self.max_inner)
        return lam

    def _solve_bounded(self):
        """The master with ``w_J >= 0``: the primal active-set method on the bounds of
        the module docstring; returns ``(lam, w)`` with ``w = Pi(A^T lam)``."""
        J, A = self.nonneg, self._A
        S = self._face.copy()
        lam = self._lam
        x = np.zeros(self.dim)  # the primal iterate (feasible, on every face it visits)
        seen = set()
        self.n_faces = 0
        for _ in range(4 * len(J) + 10):
            AS = A[:, J[S]]
            G = self._G - AS @ AS.T if S.any() else self._G
            lam = self._solve_dual(G, lam)
            self.n_faces += 1
            v = A.T @ lam
            opt = v.copy()  # the face optimum: A^T lam with w_S = 0
            opt[J[S]] = 0.0
            oJ, xJ = opt[J], x[J]
            block = ~S & (oJ < 0.0)
            if block.any():  # step towards it up to the first bound reached
                ratio = np.full(len(J), np.inf)
                ratio[block] = xJ[block] / (xJ[block] - oJ[block])
                t = float(ratio.min())
                x += t * (opt - x)
                x[J] = np.maximum(x[J], 0.0)
                S |= block & (ratio <= t)
                x[J[S]] = 0.0
                continue
            x = opt
            key = S.tobytes()
            mu = np.where(S, -v[J], np.inf)
            eps = 1e-12 * max(1.0, float(np.max(np.abs(v))))
            if key in seen or not mu.min() < -eps:
                break
            seen.add(key)
            S[int(np.argmin(mu))] = False  # release the most negative multiplier
        self._face = S
        w = A.T @ lam
        w[J] = np.maximum(w[J], 0.0)
        return lam, w

    def solve(self) -> MasterSolution:
        """Solve the master QP on the current working set."""
        if self.n_planes == 0:
            w = np.zeros(self.dim) if self.dim is not None else None
            return MasterSolution(w=w, xi=0.0, lam=np.empty(0), primal=0.0, dual=0.0)
        if self.nonneg is not None:
            lam, w = self._solve_bounded()
            self._lam = lam
            # w = Pi(A^T lam) is feasible; D(lam) = b^T lam - 1/2 ||w||^2 a lower bound
            ww = float(w @ w)
            xi = max(0.0, float(np.max(self._b - self._A @ w)))
            primal = 0.5 * ww + self.C * xi
            dual = float(self._b @ lam) - 0.5 * ww
            sol = MasterSolution(w=w, xi=xi, lam=lam.copy(), primal=primal, dual=dual)
            if self.prune_after is not None:
                self._prune()
            return sol
        lam = self._solve_dual(self._G, self._lam)
        self.n_faces = 1
        self._lam = lam
        Glam = self._G @ lam  # <w, a_p> for w = sum_p lam_p a_p
        w = self._A.T @ lam if self.dim is not None else None
        xi = max(0.0, float(np.max(self._b - Glam)))
        primal = 0.5 * float(lam @ Glam) + self.C * xi
        dual = float(self._b @ lam) - 0.5 * float(lam @ Glam)
        sol = MasterSolution(w=w, xi=xi, lam=lam.copy(), primal=primal, dual=dual)
        if self.prune_after is not None:
            self._prune()
        return sol

    def _prune(self) -> None:
        thresh = 1e-10 * max(self.C, 1.0)
        self._idle = np.where(self._lam > thresh, 0, self._idle + 1)
        keep = self._idle < self.prune_after
        if not np.all(keep):
            if self._A is not None:
                self._A = self._A[keep]
            self._payload = [p for p, k in zip(self._payload, keep) if k]
            self._b = self._b[keep]
            self._G = self._G[np.ix_(keep, keep)]
            self._lam = self._lam[keep]
            self._idle = self._idle[keep]
