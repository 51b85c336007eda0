"""MultiBoost's column generation ([Lin2012 Alg. 1]) around the exponential-loss
master :class:`~maxmargin.solvers.fcd.ExpLossMaster` (FCD, [Lin2012 Alg. 2], or L-BFGS-B).

Every iteration prices the weak learners with the master's dual weights ([Lin2012 eq. 4]: the best
weak learner per class; ``shared``: the single best (weak learner, class) pair, [Lin2012 eq. 6]),
stops when none has gain above ``1 + eps_cg`` (the dual constraint 3b), adds the new
columns and re-solves the master; it also stops when the objective changes by less than
``tol`` (relative, [Lin2012 Alg. 1 line 7]), or when ``record`` says so (``max_time``).
"""

from __future__ import annotations

import time

import numpy as np

from maxmargin.solvers.fcd import ExpLossMaster

__all__ = ["fit_multiboost"]


def fit_multiboost(
    X,
    y,
    K: int,
    weak,
    builder,
    record,
    *,
    C: float,
    solver: str = "fcd",
    shared: bool = False,
    max_iter: int = 100,
    tol: float = 1e-6,
    eps_cg: float = 1e-6,
    **options,
) -> bool:
    """Run [Lin2012 Alg. 1]; returns True when the dual test (3b) stopped it (converged).

    ``builder`` records weak learners, variables and weights (for the estimator's model
    and staged prediction); ``record(iteration, objective, raw_scores, **stats)`` appends
    the iteration's history record and returns True to stop.  ``options`` go to the FCD
    solver (``eps``, ``tau_max``, ``rng``, ``large_C``).
    """
    mp = ExpLossMaster(
        y, K, C, require_discrete=solver == "fcd", capacity=K * min(int(max_iter), 256)
    )
    prepared = weak.prepare(X)
    prev = mp.objective()
    classes = np.arange(K)
    for it in range(int(max_iter)):
        t0 = time.perf_counter()
        hyps, gains = weak.best(prepared, mp.dual_weights())  # (4): one column per class
        if shared:  # (6): the single best (weak learner, class) pair
            c = int(np.argmax(gains))
            hyps, gains = hyps.take([c]), gains[[c]]
        t_weak = time.perf_counter() - t0
        if gains.max() <= 1.0 + eps_cg:  # no violated dual constraint (3b)
            return True
        hidx = mp.add_hypotheses(hyps.evaluate(X))
        if not np.array_equal(builder.add_hypotheses(hyps), hidx):  # pragma: no cover
            raise RuntimeError("weak-learner bookkeeping out of step")
        if shared:
            new = mp.add_variables(np.repeat(hidx, K), classes)
            builder.add_vars(np.repeat(hidx, K), classes)
        else:
            new = mp.add_variables(hidx, classes)
            builder.add_vars(hidx, classes)
        info = mp.solve(solver, new, **(options if solver == "fcd" else {}))
        builder.set_coef(it, mp.w)
        obj = mp.objective()
        stop = record(
            it,
            obj,
            mp.scores(),
            gain=float(gains.max()),
            t_weak=t_weak,
            t_master=info.pop("seconds"),
            **info,
        )
        if stop or abs(prev - obj) < tol * abs(prev):
            return False
        prev = obj
    return False
