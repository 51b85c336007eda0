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

__all__ = ["fit_subgradient"]


@njit(cache=True)
def _sgd_epoch(order, t, w, wavg, lam, L, slack, averaging):
    """One epoch of Pegasos steps over layout ``L``; returns (t, sum of Delta of the
    chosen labellings)."""
    Tmax = np.max(L.offsets[1:] - L.offsets[:-1])
    U = np.empty((Tmax, L.K))
    lab = np.empty(Tmax, dtype=np.int64)
    W = w[: L.n_unary].reshape((L.n_unary // L.S, L.S))
    P = w[L.n_unary :].reshape((L.K, L.K)) if L.pairwise else np.zeros((L.K, L.K))
    dsum = 0.0
    for i in order:
        loss, _ = example_loss_augmented(L, i, W, P, slack, U, lab)
        t += 1
        w *= 1.0 - 1.0 / t
        s = loss if slack else 1.0
        add_dpsi(w, L, i, lab, s / (lam * t))
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
    refuse_nonneg(model, "subgradient")  # a declared w_j >= 0 is not enforced here
    rng = as_generator(random_state)
    lam = 1.0 / C
    n = model.n_samples
    w = np.zeros(model.dim)
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
                t, dsum = _sgd_epoch(rng.permutation(n), t, w, wavg, lam, layout, slack, averaging)
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
                w = (1.0 - 1.0 / t) * w + model.plane(labels, coef) / (lam * t)
                delta_sum += float(loss.mean())
                if averaging:
                    wavg += 2.0 / (t + 1.0) * (w - wavg)
                tr.offer_dual(C * delta_sum / t - 0.5 * float(w @ w))
            if tr.record(it, step=t):
                break
    return tr.result(w)
