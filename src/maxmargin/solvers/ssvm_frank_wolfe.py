"""Block-coordinate Frank-Wolfe (BCFW) on the structured SVM dual.

Lacoste-Julien, Jaggi, Schmidt & Pletscher, "Block-coordinate Frank-Wolfe optimization
for structural SVMs", ICML 2013, [LacosteJulien2013 Alg. 3] (with line search) and the weighted
average of Sec. 4.  With ``lam = 1/C`` the dual is over one simplex per example; the algorithm
keeps per-example primal images ``w_i`` (dense, n x D) and losses ``l_i`` with
``w = sum_i w_i``.  For example i it calls the oracle, forms the corner
``w_s = s dPsi_i(yhat) / (lam n)``, ``l_s = Delta / n`` and steps with the exact line
search ``gamma = (lam (w_i - w_s).w - l_i + l_s) / (lam ||w_i - w_s||^2)`` clipped to
[0, 1].  The numerator is the block duality gap.  After every pass the batch oracle gives
the exact primal, and ``D = C (l - lam/2 ||w||^2) = C l - 1/2 ||w||^2`` (our scaling) is
the dual value, so the reported gap is exact.  Slack rescaling uses the corners
``s = Delta`` (same dual structure).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from maxmargin._validation import as_generator
from maxmargin.solvers.monitor import GapMonitor, SSVMResult
from maxmargin.solvers.qp_master import refuse_nonneg
from maxmargin.tasks.linear import (
    LinearJointModel,
    add_dpsi,
    example_loss_augmented,
    rescaled_hinge,
)

__all__ = ["fit_frank_wolfe"]


@njit(cache=True)
def _bcfw_pass(order, w, wi, li, lam, L, slack):
    """One pass of BCFW block steps over layout ``L``; returns the change of
    ``l = sum_i l_i``."""
    n = L.offsets.shape[0] - 1
    Tmax = np.max(L.offsets[1:] - L.offsets[:-1])
    U = np.empty((Tmax, L.K))
    lab = np.empty(Tmax, dtype=np.int64)
    ws = np.zeros(w.shape[0])
    W = w[: L.n_unary].reshape((L.n_unary // L.S, L.S))
    P = w[L.n_unary :].reshape((L.K, L.K)) if L.pairwise else np.zeros((L.K, L.K))
    dl = 0.0
    D = w.shape[0]
    for i in order:
        loss, _ = example_loss_augmented(L, i, W, P, slack, U, lab)
        ws[:] = 0.0
        s = loss if slack else 1.0
        add_dpsi(ws, L, i, lab, s / (lam * n))
        ls = loss / n
        wrow = wi[i]
        num = 0.0
        den = 0.0
        for j in range(D):
            d = wrow[j] - ws[j]
            num += d * w[j]
            den += d * d
        num = lam * num - li[i] + ls
        den = lam * den
        if den <= 0.0:
            continue
        g = num / den
        if g <= 0.0:
            continue
        if g > 1.0:
            g = 1.0
        for j in range(D):
            d = g * (wrow[j] - ws[j])
            wrow[j] -= d
            w[j] -= d
        new = (1.0 - g) * li[i] + g * ls
        dl += new - li[i]
        li[i] = new
    return dl


def fit_frank_wolfe(
    model: LinearJointModel,
    C: float,
    rescaling: str = "margin",
    tol: float = 1e-3,
    max_iter: int = 1000,
    max_time=None,
    averaging: bool = True,
    random_state=None,
    callback=None,
    verbose: int = 0,
) -> SSVMResult:
    """BCFW; one iteration = one pass over the examples in random order."""
    model.check_rescaling(rescaling)
    refuse_nonneg(model, "frank-wolfe")  # a declared w_j >= 0 is not enforced here
    rng = as_generator(random_state)
    lam = 1.0 / C
    n = model.n_samples
    w = np.zeros(model.dim)
    wavg = np.zeros(model.dim)
    wi = np.zeros((n, model.dim))
    li = np.zeros(n)
    ell = 0.0
    tr = GapMonitor(tol, max_iter, max_time, callback, verbose, name="frank_wolfe")
    slack = rescaling == "slack"
    layout = model.layout()
    with tr.interruptible():
        for it in range(max_iter):
            ell += _bcfw_pass(rng.permutation(n), w, wi, li, lam, layout, slack)
            if averaging:
                wavg += 2.0 / (it + 2.0) * (w - wavg)
            for v in (w, wavg) if averaging else (w,):
                _, loss, margin = model.loss_augmented(v, rescaling)
                tr.n_oracle += 1
                tr.offer_primal(model.objective(v, C, rescaled_hinge(loss, margin, rescaling)), v)
            tr.offer_dual(C * ell - 0.5 * float(w @ w))
            if tr.record(it):
                break
    return tr.result(w)
