"""StructBoost reaches the optimum of the full LP written out with every stump and label.

The independent answer: the m-slack primal (StructBoost eq. 3) with one column per
(stump, slot) over *all* distinct stumps and one row per (example, wrong label), built
here from the definitions Psi(x, y) = Phi(x) (x) Gamma(y) and solved by
scipy.optimize.linprog.  Column generation + cutting planes must reach it (rel. 1e-6),
with every master: the fast smoothed master with its exact polish, and the exact
m-slack and 1-slack LPs (Theorem 2.1), in both sharing modes.
"""

import itertools

import numpy as np
import pytest

from data_makers import full_lp_optimum, tiny_problem
from maxmargin.solvers.column_generation import fit_structboost
from maxmargin.tasks import BinaryTask, MultiClassTask
from maxmargin.weak import DecisionStump

#: (master, formulation) pairs: every way StructBoost can solve its master
MASTERS = [("fast", "m-slack"), ("exact", "m-slack"), ("exact", "1-slack")]


def run(task, X, y, C, form, max_cp_rounds=None):
    master, formulation = form
    bound = task.bind(X, y)
    res = fit_structboost(
        bound,
        DecisionStump(),
        C=C,
        master=master,
        formulation=formulation,
        eps_cp=1e-10,
        eps_cg=1e-9,
        max_iter=1000,
        rng=np.random.default_rng(0),
        max_cp_rounds=max_cp_rounds,
    )
    assert res.converged
    return res


@pytest.mark.parametrize("formulation", MASTERS)
@pytest.mark.parametrize("sharing", ["shared", "per_class"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("C", [3.0, 30.0])
@pytest.mark.parametrize("max_cp_rounds", [None, 2])
def test_multiclass_matches_full_lp(formulation, sharing, seed, C, max_cp_rounds):
    X, y = tiny_problem(seed, 3)
    opt = full_lp_optimum(X, y, C, np.eye(3), 1.0 - np.eye(3))
    res = run(MultiClassTask(sharing=sharing), X, y, C, formulation, max_cp_rounds)
    assert res.objective == pytest.approx(opt, rel=1e-6)
    assert res.history[-1]["master_objective"] == pytest.approx(opt, rel=1e-6)
    assert res.certified and res.gap <= 1e-9


@pytest.mark.parametrize("formulation", MASTERS)
@pytest.mark.parametrize("seed", [0, 3])
def test_binary_matches_full_lp(formulation, seed):
    X, y = tiny_problem(seed, 2)
    y = np.where(y == 1, 1, -1)
    # LPBoost as StructBoost: Psi(x, y) = y Phi(x) / 2 (Sec. 3.1)
    opt = full_lp_optimum(X, y, 10.0, np.array([[-0.5], [0.5]]), 1.0 - np.eye(2))
    res = run(BinaryTask(), X, y, 10.0, formulation)
    assert res.objective == pytest.approx(opt, rel=1e-6)


def test_cost_sensitive_loss_matrix_matches_full_lp():
    X, y = tiny_problem(5, 3)
    delta = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    opt = full_lp_optimum(X, y, 20.0, np.eye(3), delta)
    for form in MASTERS:
        res = run(MultiClassTask(loss=delta), X, y, 20.0, form)
        assert res.objective == pytest.approx(opt, rel=1e-6)


def test_one_slack_and_m_slack_same_optimum_on_digits_subset():
    """Theorem 2.1 on real data with the paper's loose tolerance replaced by a tight one."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:120, ::4], y[:120]
    objs = []
    for master, formulation in MASTERS:
        res = fit_structboost(
            MultiClassTask().bind(X, y),
            DecisionStump(),
            C=20.0,
            master=master,
            formulation=formulation,
            eps_cp=1e-9,
            eps_cg=1e-9,
            max_iter=2000,
            rng=np.random.default_rng(0),
        )
        assert res.converged
        objs.append(res.objective)
    assert objs[0] == pytest.approx(objs[1], rel=1e-6)
    assert objs[0] == pytest.approx(objs[2], rel=1e-6)


def test_objective_decreases_every_iteration():
    """Proposition 6.1: each column-generation iteration decreases the master objective."""
    X, y = tiny_problem(2, 3)
    res = fit_structboost(
        MultiClassTask().bind(X, y),
        DecisionStump(),
        C=30.0,
        master="exact",
        formulation="m-slack",
        eps_cp=1e-10,
        eps_cg=1e-9,
        max_iter=100,
        rng=np.random.default_rng(0),
    )
    lp = [h["master_objective"] for h in res.history]
    assert all(b <= a + 1e-9 for a, b in itertools.pairwise(lp))
