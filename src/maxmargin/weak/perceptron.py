"""Sigmoid perceptron weak learner ``phi(x) = tanh(v.x + b)`` ([Shen2014 eq. 31], Sec. 4.2).

The paper's perceptron is ``sign(v.x + b)``; to optimise the gain
``g(v, b) = sum_k a_k phi(x_k)`` with L-BFGS the step is replaced by a smooth sigmoid.
Without a bound on ``v`` the supremum is only approached as ``|v| -> inf`` (tanh -> sign),
so ``v`` is confined to a ball of radius ``radius`` in standardised feature coordinates
through the smooth map ``v = radius * u / sqrt(1 + |u|^2)`` and L-BFGS runs on ``(u, b)``.
As the paper suggests, the start is the best decision stump (a steep tanh along its
feature).  The learner returns, per column, the better (by the true gain) of the optimised
perceptron and the starting stump written as ``sign(v.x + b)``, so its gain is never
below the stump's; ``output="sign"`` returns ``sign(v.x + b)`` of the optimised weights
instead of the tanh (the paper's final classifier).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from maxmargin.weak.base import WeakLearner
from maxmargin.weak.linear import (
    ACT_SIGN,
    ACT_TANH,
    LinearClassifiers,
    feature_scaling,
    to_raw,
)
from maxmargin.weak.stump import DecisionStump, check_weights

__all__ = ["SigmoidPerceptron"]

_START_STEEPNESS = 0.9  # start at 90% of the norm bound along the stump's feature
_CONST_BIAS = 3.0  # tanh(3) = 0.995: start for a constant stump


class SigmoidPerceptron(WeakLearner):
    """Perceptron weak learner trained by L-BFGS on the tanh-smoothed gain.

    Parameters
    ----------
    radius : float, default=10.0
        Bound on ``|v|`` in standardised coordinates (the steepness of the sigmoid).
    max_iter : int, default=50
        L-BFGS iterations per weight column.
    output : {"tanh", "sign"}
        Activation of the returned classifier.
    max_bins : int or None
        Binning of the starting-stump search (None: exact).
    """

    hypotheses_class = LinearClassifiers

    def __init__(
        self,
        radius: float = 10.0,
        max_iter: int = 50,
        output: str = "tanh",
        max_bins: int | None = None,
    ) -> None:
        self.radius = radius
        self.max_iter = max_iter
        self.output = output
        self.max_bins = max_bins

    def prepare(self, Z):
        if self.output not in ("tanh", "sign"):
            raise ValueError(f"output must be 'tanh' or 'sign', got {self.output!r}")
        if not self.radius > 0:
            raise ValueError(f"radius must be > 0, got {self.radius!r}")
        Z = sp.csr_matrix(Z, dtype=np.float64) if sp.issparse(Z) else np.asarray(Z, np.float64)
        stump = DecisionStump(self.max_bins)
        mean, sd = feature_scaling(Z)
        return {"stump": stump, "codes": stump.prepare(Z), "Z": Z, "mean": mean, "sd": sd}

    def best(self, prepared, A):
        Z, mean, sd = prepared["Z"], prepared["mean"], prepared["sd"]
        A = check_weights(prepared["codes"], A)
        stumps, stump_gain = prepared["stump"].best(prepared["codes"], A)
        d = Z.shape[1]
        S = A.shape[1]
        W, B, act, gains = np.zeros((S, d)), np.zeros(S), np.full(S, ACT_SIGN), stump_gain.copy()
        for s in range(S):
            f, t, p = int(stumps.feature[s]), stumps.threshold[s], stumps.polarity[s]
            # the starting stump as sign(v.x + b) (exact on training data: no x equals t)
            if np.isfinite(t):
                W[s, f], B[s] = p, -p * t
            else:
                B[s] = p
            if not np.any(A[:, s]):
                continue
            v, b = self._optimise(Z, A[:, s], mean, sd, f, t, p)
            w_raw, b_raw = to_raw(v, b, mean, sd)
            a_code = ACT_TANH if self.output == "tanh" else ACT_SIGN
            cand = LinearClassifiers(w_raw, b_raw, [a_code], d)
            g = float(cand.evaluate(Z)[0] @ A[:, s])
            stump_lin = LinearClassifiers(W[s], B[s], [ACT_SIGN], d)
            g_stump = float(stump_lin.evaluate(Z)[0] @ A[:, s])
            gains[s] = g_stump
            if np.isfinite(g) and g >= g_stump:
                W[s], B[s], act[s], gains[s] = w_raw, b_raw, a_code, g
        return LinearClassifiers(W, B, act, d), gains

    def _optimise(self, Z, a, mean, sd, f, t, p):
        """L-BFGS on -sum_k a_k tanh(v.x~_k + b), v = R u / sqrt(1 + |u|^2)."""
        R = float(self.radius)
        d = Z.shape[1]
        u0 = np.zeros(d)
        if np.isfinite(t):
            rho = _START_STEEPNESS
            u0[f] = p * rho / np.sqrt(1.0 - rho * rho)
            b0 = -p * R * rho * (t - mean[f]) / sd[f]
        else:
            b0 = p * _CONST_BIAS
        scale = max(float(np.abs(a).sum()), 1e-300)
        a = a / scale  # keep the objective O(1) for L-BFGS's tolerances

        def fun(x):
            u, b = x[:d], x[d]
            q = np.sqrt(1.0 + u @ u)
            v = R * u / q
            vs = v / sd
            z = np.asarray(Z @ vs).ravel() + (b - vs @ mean)
            th = np.tanh(z)
            r = a * (1.0 - th * th)
            gx = (np.asarray(Z.T @ r).ravel() - mean * r.sum()) / sd  # d g / d v
            gu = R * (gx / q - u * (u @ gx) / q**3)
            return -float(a @ th), -np.concatenate([gu, [r.sum()]])

        # matrix-vector products only: BLAS threads would just spin against numba's pool
        with threadpool_limits(1, user_api="blas"):
            res = minimize(
                fun,
                np.concatenate([u0, [b0]]),
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": int(self.max_iter)},
            )
        u, b = res.x[:d], res.x[d]
        return R * u / np.sqrt(1.0 + u @ u), b
