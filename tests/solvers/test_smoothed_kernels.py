"""The compiled projected L-BFGS steps (``solvers/_smoothed_kernels.py``) take the same
steps as the Python steps of :class:`SmoothedProblem` on label-coding tasks.

Both paths run the same operations in the same precision; they differ only in the order
of floating-point sums.  From one common state (L-BFGS memory, working set, bound
weights), one step of each is compared:

* the direction comes from float64 dot products over the n working-set coordinates (each
  within ``n u64`` relative of the other path's), so the step's weights agree to far
  below ``rtol = 1e-9`` (that is 1e5 times ``n u64`` for n <= 100);
* the new slot scores ``F + H' dW`` are float32 sums of at most ``n_h`` products
  ``phi * dw`` with ``|phi| <= 1`` (stumps), so they agree to
  ``gamma = 2 n_h u32 / (1 - n_h u32) * ||dw||_1`` (``u32 = 2^-24``, two orders of summation);
* the smoothed objective ``1'w + (C/m) sum_i LSE_i`` has LSE 1-Lipschitz in the margins,
  which move by at most ``2 |Delta G|`` with ``|Delta G| <= ||Gamma||_inf |Delta F|``, so
  it agrees to ``2 C ||Gamma||_inf gamma`` plus float64 summation, ``4 n u64 |f|``;
* the gains ``(H A)[h, s]``: the softmax moves by at most ``2 beta |Delta a|`` per
  entry, A by ``(C/m) 2 ||Gamma||_inf`` times that per example, and each gain is a
  float32 sum of m products of size at most ``2 C / m`` (error ``<= 2 m u32 * 2 C``,
  two orders of summation).
"""

from __future__ import annotations

import copy
import math
import time

import numpy as np
import pytest
from sklearn.datasets import load_digits

from data_makers import U32
from data_makers import smoothed_problem as problem
from maxmargin.solvers import _smoothed_kernels as _kernels
from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.smoothed_problem import SmoothedProblem
from maxmargin.tasks import BinaryTask, MultiClassTask
from maxmargin.tasks.hierarchy import HierarchyTask
from maxmargin.weak import DecisionStump

U64 = 2.0**-53
TAXONOMY = {"r": {"a": [0, 1], "b": [2, 3]}}


def _one_slot_per_stump(sm):
    """Pin a working set of one column per stump (slot ``h mod n_slots``): a quarter or
    less of the (classifier, slot) pairs, so the compiled steps take the column route
    (``_smoothed_kernels.SPARSE_FILL``), as for the certificate's screened set."""
    st = sm.store
    cols = np.flatnonzero(st.col_slot == st.col_hyp % st.n_slots)
    sm.pin_working_set(cols)
    n_h = len(np.unique(st.col_hyp[sm.ws]))
    assert sm._column_products(len(sm.ws), n_h)
    assert not sm._column_products(n_h * st.n_slots, n_h)  # all slots: the dense route


@pytest.mark.parametrize(
    "task, working_set",
    [(MultiClassTask(), None), (MultiClassTask(), 5), (HierarchyTask(TAXONOMY), None),
     (BinaryTask(), 4), (MultiClassTask(), "columns"), (HierarchyTask(TAXONOMY), "columns")],
)  # fmt: skip
@pytest.mark.parametrize("line_search", ["newton", "halving"])
def test_compiled_step_equals_python_step(task, working_set, line_search):
    """``working_set="columns"``: a pinned set of one column per stump, on which the
    compiled steps take their products column by column (float32 products summed in
    float32 for ``H'dW``, in float64 for the gains; the Python steps keep the dense
    float32 products) -- within the same bounds, which allow two orders of summation."""
    pinned = working_set == "columns"
    sm = problem(task, working_set=None if pinned else working_set)
    if pinned:
        _one_slot_per_stump(sm)
    sm.line_search = line_search
    assert not sm.compiled
    sm.max_steps = 1
    checked = 0
    for _ in range(8):  # common states along the Python path, with growing memory
        sc = copy.deepcopy(sm)
        sc.compiled = True
        assert sc._coded()
        w0 = sm.w.copy()
        k_py, k_c = sm.solve(), sc.solve()
        assert k_py == k_c
        if k_py == 0:
            break
        checked += 1
        n = len(sm.ws)
        n_h = len(np.unique(sm.store.col_hyp[sm.ws]))
        gamma_inf = np.abs(sm.task.gamma_).sum(axis=1).max()
        gam = 2 * n_h * U32 / (1 - n_h * U32) * np.abs(sm.w - w0).sum()
        np.testing.assert_allclose(sc.w, sm.w, rtol=1e-9, atol=1e-9 * np.abs(sm.w).max())
        np.testing.assert_allclose(sc.F, sm.F, rtol=0, atol=gam + 4 * n * U64 * np.abs(sm.F).max())
        f_tol = 2 * sm.C * gamma_inf * gam + 4 * n * U64 * abs(sm.smooth_objective)
        assert abs(sc.smooth_objective - sm.smooth_objective) <= f_tol
        assert abs(sc.objective - sm.objective) <= f_tol + sm.C * 2 * gamma_inf * gam
        # gains: the duals A = (C/m)(row sums of Mu) Gamma[y_i] - (C/m) Mu Gamma move with
        # the softmax (beta-Lipschitz in the margins), and each gain is a float32 sum of
        # m products |phi A| <= 2 C / m
        m = sm.m
        g_tol = 8 * sm.C * sm.beta * gamma_inf**2 * gam + 4 * m * U32 * 2 * sm.C
        np.testing.assert_allclose(sc.gains, sm.gains, rtol=0, atol=g_tol)
        assert len(sc._pairs) == len(sm._pairs)
    assert checked >= 3


def test_compiled_steps_one_call_or_one_per_step_are_identical():
    """With a deadline the kernel is called once per step; the steps are the same
    operations in the same order, so the results are bit for bit those of one call."""
    base = problem(MultiClassTask(), working_set=5)
    base.max_steps = 6
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    a.compiled = b.compiled = True
    assert a.solve() == b.solve(deadline=time.perf_counter() + 1e6) > 1
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.F, b.F)
    assert a.smooth_objective == b.smooth_objective


def test_python_steps_where_the_kernel_does_not_apply():
    """Classifiers in one slot each (sparse slots: the column kernels) and tasks with
    their own smoothed risk keep the Python steps."""
    X, y = load_digits(return_X_y=True)
    keep = y < 4
    X, y = X[keep][:120, ::2], y[keep][:120]
    task = MultiClassTask(sharing="per_class").bind(X, y)
    weak = DecisionStump()
    prep = weak.prepare(X)
    store = ColumnStore(weak.hypotheses_class, X.shape[1], X.shape[0], task.n_slots)
    sm = SmoothedProblem(task, store, 10.0)
    rng = np.random.default_rng(1)
    for s in range(task.n_slots):
        cand, _ = weak.best(prep, rng.normal(size=(len(y), task.n_slots)))
        h = cand.take([0])
        sm.add_columns(store.add(h, h.evaluate(X), [np.array([s])]))
    assert store._sparse_slots() and not sm._coded()
    sm.solve()  # the Python steps run
    dense = problem(MultiClassTask())
    dense.compiled = True
    assert dense._coded()

    class OwnRisk(MultiClassTask):
        def smoothed_risk(self, F, beta):
            return super().smoothed_risk(F, beta)

    own = problem(OwnRisk())
    own.compiled = True
    assert not own._coded()


def _reference_lse(G, y, delta, beta):
    """Plain-Python row passes of the compiled log-sum-exp (same operations, same order):
    margins, their maximum, the softmax with entries below ``EXP_SKIP`` set to 0 and the
    others ``p 2^n`` of the kernel's exponential, weights below 1e-30 flushed, ``log z``."""
    m, K = G.shape
    P = np.empty((m, K))
    hinge = lse = 0.0
    for i in range(m):
        yi = int(y[i])
        v = [float(delta[yi, k] + G[i, k] - G[i, yi]) for k in range(K)]
        a = max(v)
        z = 0.0
        for k in range(K):
            x = beta * (v[k] - a)
            if x < _kernels.EXP_SKIP:
                e = 0.0
            else:
                p, n = _kernels._exp_parts.py_func(x)
                e = math.ldexp(p, int(n))  # exact: 2^n is a normal float here
            P[i, k] = e
            z += e
        inv = 1.0 / z
        for k in range(K):
            p = P[i, k] * inv
            P[i, k] = p if p > 1e-30 else 0.0
        hinge += a
        lse += a + math.log(z) / beta
    return P, hinge, lse


@pytest.mark.parametrize("beta", [5.0, 50.0, 800.0])
def test_the_two_log_sum_exp_passes_share_their_rows_bit_for_bit(beta):
    """``_lse_value`` (label scores given) and ``_shifted_lse`` (scores shifted by a
    float32 change in the same pass) walk the rows through one helper: both equal the
    plain-Python row passes bit for bit, for any smoothing (wide, the master's, and sharp
    enough that most entries skip their exponential)."""
    rng = np.random.default_rng(int(beta))
    # sizes below, at and across the blocks of BLOCK_ROWS rows (a last, partial block)
    B = _kernels.BLOCK_ROWS
    for m, K in [(1, 2), (37, 4), (200, 10), (B, 3), (2 * B + 1, 26)]:
        F = rng.standard_normal((m, K)) * 2.0
        change = rng.standard_normal((m, K)).astype(np.float32)
        y = rng.integers(0, K, m)
        delta = 1.0 - np.eye(K)
        for t in (1.0, 0.125):
            G = F + change.astype(np.float64) * t
            P_ref, h_ref, l_ref = _reference_lse(G, y, delta, beta)
            Ft, P1 = np.empty_like(F), np.empty_like(F)
            h1, l1 = _kernels._shifted_lse(F, change, t, Ft, y, delta, beta, P1)
            np.testing.assert_array_equal(Ft, G)
            P2 = np.empty_like(F)
            h2, l2 = _kernels._lse_value(G, np.eye(K), True, y, delta, beta, P2)
            for P, h, lse in ((P1, h1, l1), (P2, h2, l2)):
                np.testing.assert_array_equal(P, P_ref)
                assert h == h_ref and lse == l_ref


@pytest.mark.parametrize("beta", [5.0, 50.0, 800.0])
def test_the_row_pass_writes_the_one_hot_duals_of_its_softmax(beta):
    """``_shifted_lse_weights`` (the line search's row pass, which also writes the
    float32 one-hot duals of its softmax) gives the softmax, scores and sums of
    ``_shifted_lse`` and the duals ``_onehot_weights32`` computes from that softmax,
    bit for bit (the same float64 operations per row, then the same cast)."""
    rng = np.random.default_rng(7 + int(beta))
    B = _kernels.BLOCK_ROWS
    for m, K in [(1, 2), (B - 1, 10), (3 * B + 5, 7)]:
        F = rng.standard_normal((m, K)) * 2.0
        change = rng.standard_normal((m, K)).astype(np.float32)
        y = rng.integers(0, K, m)
        delta = 1.0 - np.eye(K)
        C = 37.0
        Ft1, P1 = np.empty_like(F), np.empty_like(F)
        h1, l1 = _kernels._shifted_lse(F, change, 0.25, Ft1, y, delta, beta, P1)
        A_ref = np.empty((m, K), dtype=np.float32)
        _kernels._onehot_weights32(P1, y, 1.0 / m, C, A_ref)
        Ft2, P2 = np.empty_like(F), np.empty_like(F)
        A = np.full((m, K), np.nan, dtype=np.float32)
        h2, l2 = _kernels._shifted_lse_weights(
            F, change, 0.25, Ft2, y, delta, beta, P2, A, 1.0 / m, C
        )
        assert h1 == h2 and l1 == l2
        np.testing.assert_array_equal(Ft2, Ft1)
        np.testing.assert_array_equal(P2, P1)
        np.testing.assert_array_equal(A, A_ref)


def test_branch_free_curvature_sums_equal_the_skipping_loop():
    """``_curvature_rows`` adds every entry, the zero-weight ones too, instead of
    skipping them: for finite margins the sums are the same bit for bit (``0 u`` is
    +-0 and the sums, started at +0, are never -0), on float32 and float64 changes and
    on a sharp softmax where most weights are flushed to 0."""

    def skipping(V, P, y):
        q = 0.0
        for i in range(P.shape[0]):
            own = float(V[i, y[i]])
            s1 = s2 = 0.0
            for k in range(P.shape[1]):
                p = float(P[i, k])
                if p != 0.0:
                    u = float(V[i, k]) - own
                    s1 += p * u
                    s2 += p * u * u
            q += s2 - s1 * s1
        return q

    rng = np.random.default_rng(3)
    for m, K, beta in [(50, 4, 5.0), (300, 10, 50.0), (300, 10, 800.0)]:
        G = rng.standard_normal((m, K)) * 2.0
        y = rng.integers(0, K, m)
        P = _reference_lse(G, y, 1.0 - np.eye(K), beta)[0]
        assert beta < 800 or (P == 0).mean() > 0.5  # the sharp case: mostly flushed
        V32 = rng.standard_normal((m, K)).astype(np.float32)
        for V in (V32, V32.astype(np.float64) * 3.0):
            assert _kernels._curvature_rows(V, P, y) == skipping(V, P, y)


def _longdouble_lse(G, y, delta, beta):
    """The smoothed rows in numpy's longdouble (x87 extended on x86-64): the float64
    margins ``a`` and exponent arguments ``x = beta (a - max a)`` as the kernel forms
    them, then ``exp``, the row sums ``z``, the softmax (unflushed) and ``LSE_i = max a
    + log(z) / beta``; returns ``(P, max a, LSE)``."""
    m = G.shape[0]
    a = delta[y] + G - G[np.arange(m), y][:, None]
    amax = a.max(axis=1)
    x = beta * (a - amax[:, None])
    e = np.exp(x.astype(np.longdouble))
    z = e.sum(axis=1)
    lse = amax.astype(np.longdouble) + np.log(z) / np.longdouble(beta)
    return e / z[:, None], amax, lse


@pytest.mark.parametrize("beta", [0.01, 5.0, 50.0, 800.0])
def test_the_blocked_row_pass_against_an_extended_precision_reference(beta):
    """``_shifted_lse_weights`` (the class-major pass over blocks of ``BLOCK_ROWS`` rows,
    powers of two from the bit pattern of ``n + MAGIC``) against a longdouble softmax
    and log-sum-exp of the same float64 margins: row counts 1, below, at and across
    the blocks, 2 and 26 classes, scores up to 1e300, rows whose maximum several
    classes share (all of them in the last case).

    Bounds (``u = 2^-53``; ``E = 1.5e-15``, the kernel exp's relative error, tested
    above; ``r`` the reference's unit roundoff, ``(K + 4) r`` its own error): each
    ``e = p 2^n`` is within ``E`` (``2^n`` exact), the row sum of K positive terms
    within ``E + (K - 1) u``, and ``p = e (1 / z)`` takes two more roundings, so ``p``
    is within ``dp = 2 E + (K + 2) u`` relative -- checked where ``p > 2e-30``; smaller
    entries are flushed to 0 at 1e-30.  ``LSE_i``: ``log z`` within ``E + (K + 4) u``
    absolute (the rounding of ``log z <= log K``), over ``beta``, then two roundings of
    at most ``|LSE_i| + |max a_i|``; the sums over the rows within ``m u sum |.|``.  The
    float32 duals: ``A_ik = -(C/m) p_ik`` within ``2^-24`` (the cast) ``+ dp + 3 u``
    relative; the true class's ``(C/m)(t - p_y / m)`` (``t`` the row's sum of ``p / m``,
    cancelling when ``p_y ~ 1``) within ``2^-24`` relative plus ``(C/m)(dp + (K + 4) u
    + K 1e-30)`` absolute (the flushed entries' share)."""
    u, E = 2.0**-53, 1.5e-15
    r = float(np.finfo(np.longdouble).eps) / 2
    rng = np.random.default_rng(int(100 * beta))
    B = _kernels.BLOCK_ROWS
    C = 37.0
    cases = []
    for m in (1, B - 1, B, B + 1, 2 * B + 44):
        for K in (2, 26):
            for scale in (1.0, 1e3, 1e300):
                cases.append((rng.standard_normal((m, K)) * scale, 1.0 - np.eye(K)))
            ties = rng.integers(-2, 3, (m, K)).astype(np.float64)  # shared maxima
            cases += [(ties, np.zeros((K, K))), (ties + 1e15, 1.0 - np.eye(K))]
            cases.append((np.zeros((m, K)), np.zeros((K, K))))  # every class the maximum
    for F, delta in cases:
        m, K = F.shape
        y = rng.integers(0, K, m)
        change = rng.standard_normal((m, K)).astype(np.float32)
        if np.abs(F).max() > 1e200:
            change[:] = 0  # the huge scores themselves
        G, P = np.empty_like(F), np.empty_like(F)
        A = np.full((m, K), np.nan, dtype=np.float32)
        h, lse = _kernels._shifted_lse_weights(F, change, 0.5, G, y, delta, beta, P, A, 1.0 / m, C)
        Pr, amax, lr = _longdouble_lse(G, y, delta, beta)
        dp = 2 * E + (K + 2) * u + (K + 4) * r
        big = Pr > 2e-30
        assert np.all(np.abs(P[big] - Pr[big]) <= dp * Pr[big])
        assert np.all((P[~big] >= 0) & (P[~big] <= 2e-30 * (1 + dp)))
        assert abs(h - amax.astype(np.longdouble).sum()) <= m * u * np.abs(amax).sum()
        row_err = (E + (K + 4) * (u + r)) / beta + 2 * u * (np.abs(lr) + np.abs(amax))
        assert abs(lse - lr.sum()) <= row_err.sum() + m * u * np.abs(lr).sum()
        Ar = -(C / m) * Pr
        Ar[np.arange(m), y] = (C / m) * (Pr.sum(axis=1) - Pr[np.arange(m), y])
        a_tol = 2.0**-24 * np.abs(Ar) + (C / m) * (dp + (K + 4) * u + K * 1e-30) * (1 + 2.0**-24)
        assert np.all(np.abs(A.astype(np.longdouble) - Ar) <= a_tol)


def test_the_softmax_exponential_is_within_its_error_bound():
    """The kernel's ``exp`` (Cody-Waite reduction to ``|r| <= ln(2)/2``, Taylor degree
    12) against libm's ``math.exp`` on ``[EXP_SKIP - 1, 0]``: truncation below 1.8e-16
    relative, the reduction's rounding (``n ln 2`` split in two parts) and 13 rounded
    multiply-adds on terms below 1.5 add at most about 13 u64 more, so 1.5e-15 relative;
    exact (1.0) at 0, where the softmax's row maximum sits."""
    lo = _kernels.EXP_SKIP - 1.0
    x = np.concatenate([np.linspace(lo, 0.0, 20001), -np.logspace(-12, 1, 301)])
    got = np.array([_kernels._exp(v) for v in x])
    ref = np.array([math.exp(v) for v in x])
    assert np.max(np.abs(got - ref) / ref) <= 1.5e-15
    assert _kernels._exp(0.0) == 1.0


def test_working_set_outputs_reused_or_extended_equal_fresh_copies():
    """``SmoothedProblem._ws_outputs`` reuses the last call's float32 copies of the
    working set's outputs when the classifiers are the same, copies only the new rows
    when they extend the last set at the end, and starts afresh otherwise: every answer
    equals ``H32[hs]`` and its transpose, C-contiguous (the compiled steps' inputs)."""
    sm = problem(MultiClassTask(), n_stumps=12)
    H32 = sm.store.H32

    def check(hs, transposed):
        Hws, HwsT = sm._ws_outputs(np.asarray(hs, dtype=np.int64), transposed)
        assert Hws.flags.c_contiguous and np.array_equal(Hws, H32[hs])
        if transposed:
            assert HwsT.flags.c_contiguous and np.array_equal(HwsT, H32[hs].T)
        else:
            assert HwsT.size == 0
        return Hws, HwsT

    a = check([0, 2, 5], True)
    b = check([0, 2, 5], True)
    assert b[0] is a[0] and b[1] is a[1]  # the same set: the same copies
    check([0, 2, 5, 7, 9], True)  # extended at the end
    check([0, 2, 5, 7, 9, 11], False)  # extended, no transpose wanted
    check([0, 2, 5, 7, 9, 11], True)  # the transpose made afresh
    check([1, 2, 3], True)  # another set
    check([0, 1, 2, 3], True)  # not an extension at the end


def test_compiled_solves_with_reused_outputs_are_bit_identical():
    """Two compiled solves from one state -- one with the copies of the last call kept,
    one with them dropped -- give the same weights, scores and gains bit for bit."""
    sm = problem(MultiClassTask(), n_stumps=12, working_set=None)
    sm.compiled = True
    sm.max_steps = 3
    sm.solve()
    assert sm._ws_cache is not None
    fresh = copy.deepcopy(sm)
    fresh._ws_cache = None
    sm.solve()
    fresh.solve()
    assert np.array_equal(sm.w, fresh.w)
    assert np.array_equal(sm.F, fresh.F)
    assert np.array_equal(sm.gains, fresh.gains)
