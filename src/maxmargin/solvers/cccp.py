"""CCCP for the latent structured SVM (Yu & Joachims, "Learning structural SVMs with
latent variables", ICML 2009 [Yu2009]; [Nowozin2011], "Extra I").

The multi-class latent SSVM gives class y ``n_latent`` sub-classes z with their own
weights, ``Psi(x, y, z) = x (x) e_(y, z)`` and ``f(x) = argmax_y max_z w.Psi(x, y, z)``.
Its objective

    J(w) = 1/2 ||w||^2 + C/n sum_i [max_(y, z) Delta(y_i, y) + w.Psi(x_i, y, z)
                                    - max_z w.Psi(x_i, y_i, z)]

is a difference of convex functions.  The concave-convex procedure alternates

1. imputation: ``h_i = argmax_z w.Psi(x_i, y_i, z)`` (linearises the concave part), and
2. the convex structured SVM with outputs ``(y_i, h_i)`` and the loss
   ``Delta((y, z), (y', z')) = [y != y']`` (zero between sub-classes of one class),

until the imputation stops changing or ``J`` decreases by less than ``outer_tol``
(relative).  Every round solves step 2 with :func:`maxmargin.solvers.ssvm.solve_ssvm`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from maxmargin.solvers.monitor import ConvergenceMonitor
from maxmargin.solvers.ssvm import solve_ssvm
from maxmargin.tasks.linear import LinearJointModel, rescaled_hinge

__all__ = ["CCCPResult", "fit_latent_cccp"]


@dataclass
class CCCPResult:
    W: np.ndarray  # (d, K * n_latent) weights, column k * n_latent + z
    latent: np.ndarray  # imputed sub-class of every training example
    history: list = field(default_factory=list)  # one record per CCCP round
    converged: bool = False
    interrupted: bool = False  # Ctrl-C: the weights of the last completed round


def fit_latent_cccp(
    X,
    y_codes: np.ndarray,
    n_classes: int,
    init_latent: np.ndarray,
    *,
    n_latent: int,
    C: float,
    max_outer: int = 20,
    outer_tol: float = 1e-3,
    inner: dict | None = None,
    callback=None,
    verbose: int = 0,
) -> CCCPResult:
    """CCCP from the imputation ``init_latent`` (values in ``0 .. n_latent - 1``).

    ``inner``: the keyword arguments of every round's convex problem,
    :func:`~maxmargin.solvers.ssvm.solve_ssvm` (``solver`` -- default ``"n-slack"`` --,
    ``tol``, ``max_iter``, ``random_state``, ``n_jobs``, ...); ``verbose`` goes to it too.
    """
    inner = {"solver": "n-slack", **(inner or {})}
    t0 = time.perf_counter()
    K, M = int(n_classes), int(n_latent)
    n = len(y_codes)
    coarse = np.repeat(np.arange(K), M)  # fine state -> class
    loss = (coarse[:, None] != coarse[None, :]).astype(np.float64)
    gamma = np.eye(K * M)
    offsets = np.arange(n + 1)
    z = np.asarray(init_latent, dtype=np.int64)
    mon = ConvergenceMonitor(
        "latent", verbose=verbose, callback=callback, fields=("iteration", "objective", "n_changed")
    )
    history = mon.history
    w = None
    converged = interrupted = False
    try:
        for outer in range(int(max_outer)):
            model = LinearJointModel(X, offsets, y_codes * M + z, gamma, loss, pairwise=False)
            res = solve_ssvm(model, float(C), **inner, verbose=verbose)
            w = res.w
            S = np.asarray(X @ w.reshape(X.shape[1], K * M)).reshape(n, K, M)
            z_new = np.argmax(S[np.arange(n), y_codes], axis=1)
            # the latent objective at w, with the best imputation
            model_new = LinearJointModel(
                X, offsets, y_codes * M + z_new, gamma, loss, pairwise=False
            )
            _, lo, ma = model_new.loss_augmented(w)
            obj = model_new.objective(w, float(C), rescaled_hinge(lo, ma, "margin"))
            rec = {
                "iteration": outer + 1,
                "objective": float(obj),
                "dual_bound": float("nan"),  # non-convex: no certificate
                "gap": float("nan"),
                "inner_gap": float(res.primal - res.dual) / max(abs(res.primal), 1e-12),
                "n_changed": int(np.count_nonzero(z_new != z)),
                "t_total": time.perf_counter() - t0,
            }
            mon.record(rec)
            converged = np.array_equal(z_new, z) or (
                len(history) > 1 and history[-2]["objective"] - obj <= outer_tol * abs(obj)
            )
            z = z_new
            if res.interrupted:  # Ctrl-C inside this round: keep its best iterate, stop
                interrupted = True
                break
            if converged:
                break
    except KeyboardInterrupt:  # outside the inner solver (e.g. in a callback)
        if w is None:
            raise  # nothing completed: nothing to keep
        interrupted = True

    return CCCPResult(
        W=w.reshape(X.shape[1], K * M),
        latent=z,
        history=history,
        converged=converged and not interrupted,
        interrupted=interrupted,
    )
