"""Batch and stochastic subgradient training (Pegasos steps, averaging).

[Nowozin2011] "Subgradient Descent S-SVM Training" / "Stochastic Subgradient Descent";
[Sun2012] Sec. 2.3.3; Shalev-Shwartz et al., "Pegasos", Math. Prog. 2011
[ShalevShwartz2011]; Ratliff, Bagnell & Zinkevich, AISTATS 2007 [Ratliff2007] (keys of
docs/references.md).  Dividing ``J(w)`` by C gives ``lam/2 ||w||^2 + 1/n sum_i H_i``
with ``lam = 1/C``; a subgradient at w is ``lam w - 1/n sum_i s_i dPsi_i(yhat_i)``
(``s_i = 1``, or ``Delta_i`` for slack rescaling).  With the Pegasos step
``eta_t = 1/(lam t)`` the update

    w_{t+1} = (1 - 1/t) w_t + 1/(lam t) v_t,    v_t = s dPsi(yhat) of the step's example(s)

makes ``w_{T+1} = 1/(lam T) sum_t v_t`` -- the primal image of the dual point that puts
weight ``1/(nT)`` (batch) or ``1/T`` (one example per step, every example once per
epoch) on each labelling found so far.  That point is dual feasible
(``sum_y alpha_iy = 1/n``), so

    D = C * mean_t Delta_t - 1/2 ||w_{T+1}||^2

is a lower bound on ``min J`` at every iteration (batch) or epoch end (stochastic) and
``best primal - D`` a valid duality gap.  This is why the stochastic variant samples a
fresh permutation per epoch and does not project onto the ball
``||w|| <= sqrt(C max Delta)`` ([Sun2012 eq. 2.57]; derived for the structured loss in
docs/ssvm.md).  The averaged iterate (polynomial-decay averaging with weight
``2/(t+1)``, Lacoste-Julien, Schmidt & Bach 2012 [LacosteJulien2012]) is evaluated at the
same times; the better of the two primal points is returned.

Non-negative coordinates (``model.nonneg_coords = J``, e.g. a CRF's pairwise weights) are
enforced by lazy projection: the recursion above runs on the unprojected iterate ``u``
and the oracle is asked at ``w = Pi(u)``, ``u`` with the coordinates J clipped at 0.
That is regularised dual averaging (Xiao, "Dual averaging methods for regularized
stochastic learning and online optimization", JMLR 11, 2010 [Xiao2010]) with the
regulariser ``lam/2 ||w||^2 + [w_J >= 0]``, whose step ``argmin_w <g_bar, w> + lam/2
||w||^2 + [w_J >= 0]`` is ``Pi(-g_bar / lam) = Pi(u)``, and it keeps the certificate: ``u``
is the image ``A^T alpha`` of the same dual point, and the dual of the constrained problem
at it (the bounds' multipliers chosen best, ``mu = max(0, -u_J)``: the derivation of
:mod:`maxmargin.solvers.qp_master`) is ``C mean Delta - 1/2 ||Pi(u)||^2`` -- the bound
above with ``w = Pi(u)``.  Without J, ``u`` is ``w`` and every step is as before.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from maxmargin._validation import as_generator
from maxmargin.solvers.monitor import GapMonitor, SSVMResult
from maxmargin.solvers.qp_master import declared_nonneg
from maxmargin.tasks.linear import (
    LinearJointModel,
    add_dpsi,
    example_loss_augmented,
    rescaled_hinge,
)

__all__ = ["fit_subgradient"]


@njit(cache=True)
def _sgd_epoch(order, t, w, wavg, lam, L, slack, averaging, u, J):
    """One epoch of Pegasos steps over layout ``L``; returns (t, sum of Delta of the
    chosen labellings).  ``u``: the unprojected iterate (``w`` itself when ``J`` is
    empty), ``w = Pi(u)`` with the coordinates ``J`` clipped at 0 after every step."""
    Tmax = np.max(L.offsets[1:] - L.offsets[:-1])
    U = np.empty((Tmax, L.K))
    lab = np.empty(Tmax, dtype=np.int64)
    W = w[: L.n_unary].reshape((L.n_unary // L.S, L.S))
    P = w[L.n_unary :].reshape((L.K, L.K)) if L.pairwise else np.zeros((L.K, L.K))
    dsum = 0.0
    for i in order:
        loss, _ = example_loss_augmented(L, i, W, P, slack, U, lab)
        t += 1
        u *= 1.0 - 1.0 / t
        s = loss if slack else 1.0
        add_dpsi(u, L, i, lab, s / (lam * t))
        if J.shape[0]:
            w[:] = u
            for j in J:
                if w[j] < 0.0:
                    w[j] = 0.0
        dsum += loss
        if averaging:
            rho = 2.0 / (t + 1.0)
            for j in range(w.shape[0]):
                wavg[j] += rho * (w[j] - wavg[j])
    return t, dsum


def fit_subgradient(
    model: LinearJointModel,
    C: float,
    rescaling: str = "margin",
    tol: float = 1e-3,
    max_iter: int = 1000,
    max_time=None,
    stochastic: bool = True,
    averaging: bool = True,
    random_state=None,
    callback=None,
    verbose: int = 0,
) -> SSVMResult:
    """Pegasos-type subgradient training; one iteration = one epoch (stochastic) or one
    full subgradient step (batch)."""
    model.check_rescaling(rescaling)
    J = declared_nonneg(model)
    J = np.zeros(0, dtype=np.int64) if J is None else J
    rng = as_generator(random_state)
    lam = 1.0 / C
    n = model.n_samples
    w = np.zeros(model.dim)
    u = w.copy() if len(J) else w  # the unprojected iterate; w = Pi(u)
    wavg = np.zeros(model.dim)
    tr = GapMonitor(
        tol, max_iter, max_time, callback, verbose, name="sgd" if stochastic else "subgradient"
    )
    t = 0
    delta_sum = 0.0
    slack = rescaling == "slack"
    layout = model.layout()

    def evaluate(v):
        _, loss, margin = model.loss_augmented(v, rescaling)
        tr.n_oracle += 1
        tr.offer_primal(model.objective(v, C, rescaled_hinge(loss, margin, rescaling)), v)

    with tr.interruptible():
        for it in range(max_iter):
            if stochastic:
                t, dsum = _sgd_epoch(
                    rng.permutation(n), t, w, wavg, lam, layout, slack, averaging, u, J
                )
                delta_sum += dsum
                evaluate(w)
                if averaging:
                    evaluate(wavg)
                tr.offer_dual(C * delta_sum / t - 0.5 * float(w @ w))
            else:
                labels, loss, margin = model.loss_augmented(w, rescaling)
                tr.n_oracle += 1
                tr.offer_primal(model.objective(w, C, rescaled_hinge(loss, margin, rescaling)), w)
                if averaging and it > 0:
                    evaluate(wavg)
                t += 1
                coef = (loss if slack else np.ones(n)) / n
                u = (1.0 - 1.0 / t) * u + model.plane(labels, coef) / (lam * t)
                w = u
                if len(J):
                    w = u.copy()
                    w[J] = np.maximum(w[J], 0.0)
                delta_sum += float(loss.mean())
                if averaging:
                    wavg += 2.0 / (t + 1.0) * (w - wavg)
                tr.offer_dual(C * delta_sum / t - 0.5 * float(w @ w))
            if tr.record(it, step=t):
                break
    return tr.result(w)
