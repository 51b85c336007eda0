"""The structured SVM solvers by name: one table, one dispatch.

Every solver minimises ``1/2 ||w||^2 + C/n sum_i H_i(w)`` on a
:class:`~maxmargin.tasks.linear.LinearJointModel` (see :mod:`maxmargin.solvers.monitor`)
and returns an :class:`~maxmargin.solvers.monitor.SSVMResult`.

==================== =====================================================================
name                 algorithm
==================== =====================================================================
``"1-slack"``        cutting planes on the 1-slack QP (Joachims, Finley & Yu 2009)
``"n-slack"``        working sets per example (Tsochantaridis et al., JMLR 2005)
``"subgradient"``    stochastic subgradient / Pegasos (Ratliff et al. 2007)
``"batch-subgradient"`` full subgradient steps
``"frank-wolfe"``    block-coordinate Frank-Wolfe (Lacoste-Julien et al., ICML 2013)
==================== =====================================================================

The spellings ``"one_slack"``, ``"n_slack"``, ``"m-slack"``, ``"batch_subgradient"`` and
``"frank_wolfe"`` of earlier versions are accepted as aliases.
"""

from __future__ import annotations

from maxmargin.inference._threads import blas_one_thread
from maxmargin.solvers.monitor import SSVMResult
from maxmargin.solvers.parallel import ShardedModel, ShardedOracle
from maxmargin.solvers.ssvm_frank_wolfe import fit_frank_wolfe
from maxmargin.solvers.ssvm_n_slack import fit_n_slack
from maxmargin.solvers.ssvm_one_slack import fit_one_slack
from maxmargin.solvers.ssvm_subgradient import fit_subgradient

__all__ = ["SOLVERS", "SOLVER_ALIASES", "canonical_solver", "solve_ssvm"]

#: solver name -> (function, takes random_state, fixed keyword arguments)
_TABLE = {
    "1-slack": (fit_one_slack, False, {}),
    "n-slack": (fit_n_slack, True, {}),
    "subgradient": (fit_subgradient, True, {"stochastic": True}),
    "batch-subgradient": (fit_subgradient, True, {"stochastic": False}),
    "frank-wolfe": (fit_frank_wolfe, True, {}),
}
SOLVERS = tuple(_TABLE)
SOLVER_ALIASES = {
    "one_slack": "1-slack",
    "n_slack": "n-slack",
    "m-slack": "n-slack",
    "batch_subgradient": "batch-subgradient",
    "frank_wolfe": "frank-wolfe",
}


def canonical_solver(name: str) -> str:
    """The canonical spelling of a solver name; ValueError if unknown."""
    name = SOLVER_ALIASES.get(name, name)
    if name not in _TABLE:
        raise ValueError(f"solver must be one of {SOLVERS}, got {name!r}")
    return name


def solve_ssvm(
    model,
    C: float,
    solver: str = "1-slack",
    *,
    rescaling: str = "margin",
    tol: float = 1e-3,
    max_iter: int = 1000,
    max_time: float | None = None,
    random_state=None,
    callback=None,
    verbose: int = 0,
    n_jobs=None,
    n_shards: int | None = None,
    **options,
) -> SSVMResult:
    """Run solver ``solver`` (any name of :data:`SOLVERS` or an alias) on ``model``.

    ``n_jobs`` (not None) runs the loss-augmented oracle on fixed shards of the examples
    on the active joblib backend (:class:`~maxmargin.solvers.parallel.ShardedOracle`);
    every ``n_jobs`` and backend then gives the same fit, bit for bit.  The stochastic
    solvers ("subgradient", "frank-wolfe") update ``w`` example by example; only their
    full-data evaluations use the shards.
    """
    fn, seeded, fixed = _TABLE[canonical_solver(solver)]
    kw = dict(
        rescaling=rescaling,
        tol=tol,
        max_iter=max_iter,
        max_time=max_time,
        callback=callback,
        verbose=verbose,
    )
    if seeded:
        kw["random_state"] = random_state
    with blas_one_thread():  # the products are small: one BLAS thread (see there)
        if n_jobs is None:
            return fn(model, C, **kw, **fixed, **options)
        with ShardedOracle(model, n_jobs=n_jobs, n_shards=n_shards) as oracle:
            return fn(ShardedModel(model, oracle), C, **kw, **fixed, **options)
