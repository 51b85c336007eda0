"""Non-negative coordinates declared by a linear model (``nonneg_coords``) in the SSVM
solvers other than the QP master's own tests (tests/solvers/test_qp_master_nonneg.py):
the subgradient solvers' lazy projection (regularised dual averaging) against the
1-slack solver's constrained answer, on a multi-class model whose unconstrained optimum
has negative weights on the declared coordinates.

Bounds: each fit certifies its point, ``opt in [dual, primal]``, so the two brackets
intersect; by the 1-strong convexity of the objective in w, ``1/2 ||w - w*||^2 <= P(w) -
opt <= P(w) - D`` for the best dual bound D of either fit, which bounds ``||w_a - w_b||``.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris

from maxmargin.solvers.ssvm import solve_ssvm
from maxmargin.tasks.classification import MultiClassTask
from maxmargin.tasks.linear import from_label_coding


def model(nonneg=True):
    X, y = load_iris(return_X_y=True)
    X = np.hstack([X / X.max(axis=0), np.ones((len(X), 1))])
    m = from_label_coding(MultiClassTask().bind(X, y), X)
    if nonneg:
        m.nonneg_coords = np.arange(0, m.dim, 2)  # every other weight
    return m


def test_the_declared_bounds_are_active():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        free = solve_ssvm(model(False), 10.0, "1-slack", tol=1e-8)
    J = model().nonneg_coords
    assert free.w[J].min() < -0.1


@pytest.mark.parametrize("solver", ["subgradient", "batch-subgradient"])
def test_subgradient_honours_nonneg_like_the_qp_master(solver):
    m = model()
    J = m.nonneg_coords
    ref = solve_ssvm(m, 10.0, "1-slack", tol=1e-8)
    assert ref.converged and ref.w[J].min() >= 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = solve_ssvm(m, 10.0, solver, tol=1e-2, max_iter=3000, random_state=0)
    assert r.w[J].min() >= 0.0  # every iterate and the average are feasible
    assert r.dual <= r.primal and r.primal - r.dual <= 1e-2 * r.primal  # certified
    D = max(r.dual, ref.dual)
    assert D <= min(r.primal, ref.primal) * (1 + 1e-12)  # the brackets intersect
    dist = np.linalg.norm(r.w - ref.w)
    assert dist <= np.sqrt(2 * (r.primal - D)) + np.sqrt(2 * max(ref.primal - D, 0.0)) + 1e-9
