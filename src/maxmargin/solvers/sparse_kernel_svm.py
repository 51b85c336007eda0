"""Cutting-plane training of a sparse kernel SVM with basis selection (seed 002,
Sec. 5.2.3c, [Sun2012 Algs. 4-5]; Joachims & Yu, "Sparse kernel SVMs via cutting-plane
training", Machine Learning 76, 2009).

Problem (no intercept; give the kernel a constant to get a regularised one)::

    min_w 1/2 ||w||^2 + C sum_i max(0, 1 - y_i <w, phi(x_i)>),

in the project's 1-slack scaling (``C n`` on ``xi``, planes ``Psi = 1/n sum_i pi_i y_i
phi(x_i)``, ``Delta = 1/n sum_i pi_i``).  Each round: the plane at the current
``w = sum_k alpha*_k phi(b_k)`` ([Sun2012 eqs. 5.60, 5.68]), then a new basis vector -- the
candidate training point maximising ``(<phi(b), Psi - Psi_hat>)^2 / k(b, b)`` ([Sun2012 eq. 5.74],
the residual of the new plane after projection on the current basis) -- then every stored plane
is re-projected on the basis ([Sun2012 eq. 5.69]: ``beta_t = G^{-1} K_BX (pi_t y) / n``) and the
1-slack dual ([Sun2012 eq. 5.61]) is solved by
:class:`~maxmargin.solvers.qp_master.OneSlackQPMaster` over the projected planes written in the
basis's Cholesky coordinates (``<Psi_hat_s, Psi_hat_t> = beta_s^T G beta_t``).  The model is
``f(x) = sum_k alpha*_k k(b_k, x)`` with ``alpha* = sum_t lambda_t beta_t``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_solve, cholesky

from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.solvers.qp_master import OneSlackQPMaster
from maxmargin.solvers.svm import hinge_objective

__all__ = ["SparseKernelSolution", "fit_sparse_kernel_svm"]


@dataclass
class SparseKernelSolution:
    basis: np.ndarray  # indices of the basis vectors among the training points
    coef: np.ndarray  # alpha*
    primal: float
    history: list = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C: the best model scored before the interrupt


def fit_sparse_kernel_svm(
    kernel,
    n,
    y,
    C,
    *,
    n_basis,
    candidates,
    max_iter=1000,
    max_time=None,
    ridge=1e-10,
    callback=None,
    verbose=0,
) -> SparseKernelSolution:
    """``kernel(rows) -> K[rows, :]`` gives kernel rows against all n training points
    (rows: index array); ``candidates``: indices eligible as basis vectors."""
    y = np.asarray(y, dtype=np.float64)
    t0 = time.perf_counter()
    cand = np.asarray(candidates, dtype=np.int64)
    Kcand = kernel(cand)  # (n_cand, n)
    diag_c = Kcand[np.arange(len(cand)), cand]
    basis: list[int] = []
    KBX = np.empty((0, n))
    planes: list[np.ndarray] = []  # pi_t * y / n
    deltas: list[float] = []
    coef = np.empty(0)
    mon = ConvergenceMonitor(
        "sparse-ksvm", verbose=verbose, callback=callback, fields=("iteration", "objective")
    )
    history = mon.history
    best = (np.inf, np.empty(0), [])
    lam_prev = None
    chol = None  # Cholesky factor of the basis Gram matrix
    try:
        for it in range(max_iter):
            scores = coef @ KBX if len(basis) else np.zeros(n)
            m = y * scores
            pi = (m < 1.0).astype(np.float64)
            G = KBX[:, basis] if basis else np.empty((0, 0))
            primal = hinge_objective(m, float(coef @ G @ coef) if basis else 0.0, C)
            if primal < best[0]:
                best = (primal, coef.copy(), list(basis))
            v = pi * y / n
            planes.append(v)
            deltas.append(float(pi.sum()) / n)
            # new basis: the candidate most correlated with the new plane's residual (5.74)
            corr = Kcand @ v  # <phi(b), Psi> for every candidate
            if basis:
                beta_new = cho_solve(chol, KBX @ v)
                corr = corr - Kcand[:, basis] @ beta_new
            gain = corr**2 / np.maximum(diag_c, 1e-300)
            gain[np.isin(cand, basis)] = -np.inf
            rec = {
                "iteration": it,
                "objective": primal,
                "n_basis": len(basis),
                "n_planes": len(planes),
                "t_total": time.perf_counter() - t0,
            }
            stop = len(basis) >= n_basis or not np.isfinite(gain.max())
            if not stop:
                j = int(cand[np.argmax(gain)])
                basis.append(j)
                KBX = np.vstack([KBX, kernel(np.array([j]))])
                G = KBX[:, basis]
                scale = ridge * max(1.0, float(np.max(np.diag(G))))
                G = 0.5 * (G + G.T) + scale * np.eye(len(basis))
                chol = (cholesky(G, lower=True), True)
                L = chol[0]
                # re-project every plane on the basis and write it in Cholesky coordinates
                V = np.vstack(planes)  # (T, n)
                beta = cho_solve(chol, KBX @ V.T).T  # (T, K)
                A = beta @ L  # a_t = L^T beta_t, so <a_s, a_t> = beta_s^T G beta_t
                master = OneSlackQPMaster(C * n, len(basis))
                for a, d in zip(A, deltas):
                    master.add_plane(a, d)
                if lam_prev is not None:
                    master._lam[: len(lam_prev)] = lam_prev
                sol = master.solve()
                lam_prev = sol.lam
                coef = beta.T @ sol.lam
                rec["master_objective"] = sol.primal
                rec["master_gap"] = sol.gap
            # the planes are projections, so the master's dual is no bound for the true
            # problem: no certified gap (nan, as the stage-wise learners)
            rec["dual_bound"] = float("nan")
            rec["gap"] = float("nan")
            mon.record(rec)
            if stop or (max_time is not None and rec["t_total"] >= max_time):
                break
    except KeyboardInterrupt:
        if not np.isfinite(best[0]):
            raise  # nothing scored yet: nothing to keep
        return SparseKernelSolution(
            basis=np.asarray(best[2], dtype=np.int64),
            coef=best[1],
            primal=best[0],
            history=history,
            interrupted=True,
        )
    # final model: the last basis and coefficients, scored once more
    scores = coef @ KBX if len(basis) else np.zeros(n)
    G = KBX[:, basis] if basis else np.empty((0, 0))
    primal = hinge_objective(y * scores, float(coef @ G @ coef) if basis else 0.0, C)
    if primal < best[0]:
        best = (primal, coef.copy(), list(basis))
    return SparseKernelSolution(
        basis=np.asarray(best[2], dtype=np.int64), coef=best[1], primal=best[0], history=history
    )
