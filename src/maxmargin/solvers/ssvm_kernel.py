"""Kernelized 1-slack cutting-plane training for label-coding tasks.

Seed 004 "kernelized S-SVM"; Joachims, Finley & Yu 2009, Sec. 5.  With a joint kernel
``k((x, y), (x', y')) = k_x(x, x') k_y(y, y')`` and ``k_y(y, y') = Gamma[y].Gamma[y']``
(``[y = y']`` for one-hot multi-class), a 1-slack plane

    a_t = 1/n sum_i c_ti phi(x_i) (x) (Gamma[y_i] - Gamma[yhat_ti])

is represented by its coefficient matrix ``M_t = c_t (Gamma[y] - Gamma[yhat_t]) / n``
(n, S), so ``<a_t, a_s> = sum(M_t * (K M_s))`` with the training kernel matrix K, and
``w = sum_t lam_t a_t`` has slot scores ``F(x) = k_x(x, X) B`` with
``B = sum_t lam_t M_t``.  The master dual over the planes' Gram matrix is the one of
:class:`~maxmargin.solvers.qp_master.OneSlackQPMaster` and is solved by its SMO routine
(warm started, zero-multiplier planes pruned after ``inactive_window`` solves).
"""

from __future__ import annotations

import time

import numpy as np

from maxmargin.solvers.qp_master import _smo
from maxmargin.solvers.ssvm_base import SSVMResult, Tracker
from maxmargin.tasks.linear import rescaled_hinge

__all__ = ["fit_kernel_one_slack"]


def fit_kernel_one_slack(
    Kmat,
    task,
    C: float,
    rescaling: str = "margin",
    tol: float = 1e-3,
    max_iter: int = 1000,
    max_time=None,
    inactive_window: int = 50,
    callback=None,
    verbose: int = 0,
) -> SSVMResult:
    """Train on the (n, n) kernel matrix of a bound LabelCodingTask; ``result.w`` is ``B``."""
    if rescaling not in ("margin", "slack"):
        raise ValueError(f"rescaling must be 'margin' or 'slack', got {rescaling!r}")
    n, S = task.n_samples, task.n_slots
    y = task.y_
    gamma, delta = task.gamma_, task.delta_
    rows = np.arange(n)
    KM: list[np.ndarray] = []
    Ms: list[np.ndarray] = []
    G = np.zeros((0, 0))
    bvec = np.zeros(0)
    lam = np.zeros(0)
    idle = np.zeros(0, dtype=np.int64)
    B = np.zeros((n, S))
    F = np.zeros((n, S))
    tr = Tracker(tol, max_iter, max_time, callback, verbose, name="kernel_one_slack")
    t_master = 0.0
    for it in range(max_iter):
        scores = F @ gamma.T
        own = scores[rows, y]
        if rescaling == "slack":
            aug = delta[y] * (1.0 - own[:, None] + scores)
        else:
            aug = delta[y] + scores - own[:, None]
        lab = np.argmax(aug, axis=1)
        loss = delta[y, lab]
        margin = own - scores[rows, lab]
        hinge = rescaled_hinge(loss, margin, rescaling)
        tr.n_oracle += 1
        wnorm2 = float(lam @ G @ lam) if len(lam) else 0.0
        tr.offer_primal(0.5 * wnorm2 + C * float(hinge.mean()), B)
        if tr.converged():
            tr.record(it, n_planes=len(lam), t_master=t_master)
            break
        t0 = time.perf_counter()
        active = hinge > 0
        coef = np.where(active, loss if rescaling == "slack" else 1.0, 0.0) / n
        M = coef[:, None] * (gamma[y] - gamma[lab])
        KMt = Kmat @ M
        g = np.array([float(np.sum(Mt * KMt)) for Mt in Ms])
        P = len(Ms)
        G2 = np.empty((P + 1, P + 1))
        G2[:P, :P] = G
        G2[P, :P] = g
        G2[:P, P] = g
        G2[P, P] = float(np.sum(M * KMt))
        G = G2
        Ms.append(M)
        KM.append(KMt)
        bvec = np.append(bvec, float(np.sum(np.where(active, loss, 0.0))) / n)
        lam = np.append(lam, 0.0)
        idle = np.append(idle, 0)
        scale = max(1.0, C * float(np.max(np.abs(bvec))))
        mtol = (
            1e-10
            if not np.isfinite(tr.best_primal)
            else min(1e-9, 0.02 * tol * tr.best_primal / scale)
        )
        lam, _, _ = _smo(G, bvec, float(C), lam.copy(), mtol * scale, 1_000_000)
        dual = float(bvec @ lam) - 0.5 * float(lam @ G @ lam)
        tr.offer_dual(dual)
        B = sum(lv * Mt for lv, Mt in zip(lam, Ms))
        F = sum(lv * Kt for lv, Kt in zip(lam, KM))
        # prune planes idle for inactive_window solves
        idle = np.where(lam > 1e-10 * max(C, 1.0), 0, idle + 1)
        keep = idle < inactive_window
        if not np.all(keep):
            Ms = [m for m, k in zip(Ms, keep) if k]
            KM = [m for m, k in zip(KM, keep) if k]
            G, bvec, lam, idle = G[np.ix_(keep, keep)], bvec[keep], lam[keep], idle[keep]
        t_master += time.perf_counter() - t0
        if tr.record(it, n_planes=len(lam), t_master=t_master):
            break
    return tr.result(B)
