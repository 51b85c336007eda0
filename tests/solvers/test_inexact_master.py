"""The inexact restricted master (``inner_tol="adaptive"``, issue 28) against independent LPs.

With ``inner_tol="adaptive"`` each iteration's smoothed solve stops at a relative decrease
that follows the outer column-generation gap (``INEXACT_FACTOR`` times it, between
``tol`` and ``INEXACT_MAX_TOL``); a solve to ``tol`` (``SmoothedMaster.finish``) comes
before convergence is declared and before the final certificate.  The independent
answers are LPs written out from the definitions and solved by scipy's HiGHS: the full
m-slack LP over every stump (``full_lp_optimum``), which converged column generation
with an exact search must reach, and the restricted LP over the columns each iteration
held (``check_every_record``).  scipy's HiGHS solves to 1e-7 relative to unit costs, so
an optimum is compared to ``LP_TOL`` = 1e-6 (as in test_structboost_certificate.py).
"""

import numpy as np
import pytest

from data_makers import (
    LP_TOL,
    check_every_record,
    fit_multiclass_cg,
    full_lp_optimum,
    tiny_problem,
)
from maxmargin import StructBoostClassifier
from maxmargin.solvers import smoothed_master
from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.smoothed_master import INEXACT_MAX_TOL, SmoothedMaster
from maxmargin.tasks import MultiClassTask
from maxmargin.weak import DecisionStump

fit = fit_multiclass_cg


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("C", [3.0, 30.0])
def test_adaptive_master_reaches_the_full_lp_optimum(seed, C):
    """Converged column generation with the inexact master and the exact polish ends at
    the full LP's optimum over every stump, and every record is bracketed by its
    restricted LP."""
    X, y = tiny_problem(seed, 3)
    task, res = fit(X, y, C, certify="exact", inner_tol="adaptive")
    opt = full_lp_optimum(X, y, C, np.eye(3), 1.0 - np.eye(3))
    assert res.converged and res.certified
    np.testing.assert_allclose(res.objective, opt, rtol=LP_TOL)
    check_every_record(task, res, X, C)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("C", [3.0, 30.0])
def test_adaptive_master_gap_is_checked_against_a_fresh_full_lp(seed, C):
    """``certify="gap"``: the reported gap bounds the true relative error to the full
    LP's optimum (solved afresh by scipy), and every record's bound and objective
    bracket the restricted LP of its columns."""
    X, y = tiny_problem(seed, 3)
    gap_tol = 1e-3
    task, res = fit(X, y, C, certify="gap", gap_tol=gap_tol, inner_tol="adaptive")
    opt = full_lp_optimum(X, y, C, np.eye(3), 1.0 - np.eye(3))
    assert res.converged and res.certified
    assert res.gap <= gap_tol * (1 + 1e-9)
    assert res.objective >= opt - LP_TOL * max(1.0, opt)
    # converged: the final columns' restricted optimum is the full optimum, so the
    # certified gap bounds the true relative error to it
    assert (res.objective - opt) / res.objective <= res.gap + LP_TOL
    check_every_record(task, res, X, C)


@pytest.mark.parametrize("C", [1e-3, 1e4])
def test_adaptive_master_degenerate_C(C):
    X, y = tiny_problem(2, 3)
    opt = full_lp_optimum(X, y, C, np.eye(3), 1.0 - np.eye(3))
    task, res = fit(X, y, C, certify="exact", inner_tol="adaptive")
    np.testing.assert_allclose(res.objective, opt, rtol=LP_TOL, atol=1e-12)
    check_every_record(task, res, X, C)


def _master(inner_tol):
    """A SmoothedMaster over 12 stumps of 120 digits (4 classes), at w = 0."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = y < 4
    X, y = X[keep][:120, ::2], y[keep][:120]
    task = MultiClassTask().bind(X, y)
    weak = DecisionStump()
    prep = weak.prepare(X)
    store = ColumnStore(weak.hypotheses_class, X.shape[1], X.shape[0], task.n_slots)
    mst = SmoothedMaster(
        task,
        store,
        40.0,
        tol=1e-6,
        max_steps=200,
        eps_cp=0.01,
        rng=np.random.default_rng(0),
        inner_tol=inner_tol,
    )
    rng = np.random.default_rng(0)
    cols = []
    for _ in range(12):
        cand, _ = weak.best(prep, rng.normal(size=(len(y), task.n_slots)))
        h = cand.take([0])
        cols.append(store.add(h, h.evaluate(X), [np.arange(task.n_slots)]))
    mst.add_columns(np.concatenate(cols))
    return mst


def test_adaptive_tolerance_follows_the_outer_gap_and_finish_solves_to_tol():
    """The iteration's tolerance is ``INEXACT_FACTOR`` times the outer gap, clipped to
    [tol, INEXACT_MAX_TOL]; a loose solve stops early and ``finish`` then solves to
    ``tol``: a further solve at ``tol`` has (almost) nothing left to do, while after the
    loose solve alone it still takes many steps."""
    fixed, loose = _master("fixed"), _master("adaptive")
    loose._new_columns = True  # as after new columns (the helper added them)
    loose.note_best_gain(50.0)  # w = 0: a large outer gap
    assert loose._iteration_tol() == INEXACT_MAX_TOL
    loose._outer_gap = 1e-3 / smoothed_master.INEXACT_FACTOR / 2
    assert loose._iteration_tol() == pytest.approx(5e-4)
    loose._outer_gap = 0.0
    assert loose._iteration_tol() == loose.smooth.tol
    loose._outer_gap = 1.0
    fixed._outer_gap = 1.0
    assert fixed._iteration_tol() == fixed.smooth.tol  # "fixed" ignores the gap

    n_fixed = fixed.solve(None)["n_cp"]
    n_loose = loose.solve(None)["n_cp"]
    assert loose.loose and not fixed.loose
    assert n_loose < n_fixed
    # without finish, a solve to tol still has work left
    f_loose = loose.smooth.smooth_objective
    rest = loose.smooth.solve(None)
    left_loose = f_loose - loose.smooth.smooth_objective
    assert rest > 3
    loose2 = _master("adaptive")
    loose2._outer_gap = 1.0
    loose2.solve(None)
    assert loose2.finish(None) > 3 and not loose2.loose
    # finish stopped on a step that gained at most tol * |f|; L-BFGS does not promise
    # that the next step gains less (the count of further steps is not a bound), so
    # compare the work and the gain left with what the loose solve alone left
    f_done = loose2.smooth.smooth_objective
    further = loose2.smooth.solve(None)
    left_done = f_done - loose2.smooth.smooth_objective
    assert further < rest
    assert 0.0 <= left_done < left_loose / 10
    assert loose2.finish(None) == 0  # nothing loose left
    # the finished point is the fixed master's optimum to the tolerance's precision
    np.testing.assert_allclose(
        loose2.smooth.smooth_objective, fixed.smooth.smooth_objective, rtol=1e-4
    )


def test_estimator_inner_tol_defaults():
    """Every solve goes to ``tol`` unless ``inner_tol="adaptive"`` is asked for (the
    tracker's StructBoost and the classifier alike); the option reaches the master, and
    bad values raise."""
    from maxmargin import StructBoost

    assert StructBoostClassifier().inner_tol == "fixed"
    assert StructBoost().inner_tol == "fixed"
    X, y = tiny_problem(0, 3)
    C = 30.0
    clf = StructBoostClassifier(C=C, max_iter=1000, eps_cg=1e-9, inner_tol="adaptive")
    clf.fit(X, y)
    opt = full_lp_optimum(X, y, C, np.eye(3), 1.0 - np.eye(3))
    assert clf.converged_ and clf.objective_ >= opt - LP_TOL * max(1.0, opt)
    assert (clf.objective_ - opt) / clf.objective_ <= clf.gap_ + LP_TOL
    with pytest.raises(ValueError):
        StructBoostClassifier(inner_tol="loose", max_iter=3).fit(X, y)
