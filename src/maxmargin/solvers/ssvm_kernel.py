"""Kernelized 1-slack cutting-plane training for label-coding tasks.

[Nowozin2011] "kernelized S-SVM"; Joachims, Finley & Yu 2009 [Joachims2009], Sec. 5 (keys
of docs/references.md).  With a joint kernel
``k((x, y), (x', y')) = k_x(x, x') k_y(y, y')`` and ``k_y(y, y') = Gamma[y].Gamma[y']``
(``[y = y']`` for one-hot multi-class), a 1-slack plane

    a_t = 1/n sum_i c_ti phi(x_i) (x) (Gamma[y_i] - Gamma[yhat_ti])

is represented by its coefficient matrix ``M_t = c_t (Gamma[y] - Gamma[yhat_t]) / n``
(n, S), so ``<a_t, a_s> = sum(M_t * (K M_s))`` with the training kernel matrix K, and
``w = sum_t lam_t a_t`` has slot scores ``F(x) = k_x(x, X) B`` with
``B = sum_t lam_t M_t``.  The master is :class:`~maxmargin.solvers.qp_master.
OneSlackQPMaster` in its Gram-only mode (planes given by their inner products, each
carrying ``(M_t, K M_t)`` as payload; zero-multiplier planes pruned after
``inactive_window`` solves), driven by the shared loop of
:mod:`maxmargin.solvers.cutting_plane`.
"""

from __future__ import annotations

import numpy as np

from maxmargin.solvers.cutting_plane import Plane, one_slack_cutting_planes
from maxmargin.solvers.monitor import GapMonitor, SSVMResult
from maxmargin.solvers.qp_master import OneSlackQPMaster
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
    master = OneSlackQPMaster(C=C, dim=None, tol=1e-10, prune_after=inactive_window)
    tr = GapMonitor(tol, max_iter, max_time, callback, verbose, name="kernel 1-slack")

    def find_plane(sol) -> Plane:
        lam = sol.lam
        if len(lam):
            B, F = master.combine(lam, "M"), master.combine(lam, "KM")
        else:
            B, F = np.zeros((n, S)), np.zeros((n, S))
        scores = F @ gamma.T
        own = scores[rows, y]
        if rescaling == "slack":
            aug = delta[y] * (1.0 - own[:, None] + scores)
        else:
            aug = delta[y] + scores - own[:, None]
        lab = np.argmax(aug, axis=1)
        loss = delta[y, lab]
        hinge = rescaled_hinge(loss, own - scores[rows, lab], rescaling)
        wnorm2 = float(np.sum(B * F))  # ||w||^2 = sum(B * K B)
        primal = 0.5 * wnorm2 + C * float(hinge.mean())
        active = hinge > 0
        coef = np.where(active, loss if rescaling == "slack" else 1.0, 0.0) / n
        M = coef[:, None] * (gamma[y] - gamma[lab])
        KM = Kmat @ M
        gram = [float(np.sum(p["M"] * KM)) for p in master.payloads] + [float(np.sum(M * KM))]
        b = float(np.sum(np.where(active, loss, 0.0))) / n
        return Plane(b, gram=np.array(gram), payload={"M": M, "KM": KM}, primal=primal, state=B)

    sol = one_slack_cutting_planes(find_plane, master, tr, tol=tol, max_iter=max_iter)
    B = master.combine(sol.lam, "M") if len(sol.lam) else np.zeros((n, S))
    return tr.result(B)
