"""CodedStump (features kept as integer bin codes) and StructBoost(polish=False)."""

import warnings

import numpy as np
import pytest

from maxmargin import MultiClassTask, StructBoost
from maxmargin.solvers.columns import ColumnStore
from maxmargin.weak import CodedStump, DecisionStump, Stumps


def test_coded_stump_equals_exact_stump_on_integer_features():
    rng = np.random.default_rng(0)
    Z = rng.integers(0, 256, size=(400, 6)).astype(float)
    Z[:, 2] = rng.integers(3, 7, size=400)  # few distinct codes, empty bins around them
    A = rng.normal(size=(400, 3))
    h_c, g_c = CodedStump().best(CodedStump().prepare(Z), A)
    h_e, g_e = DecisionStump().best(DecisionStump().prepare(Z), A)
    np.testing.assert_allclose(g_c, g_e)  # same best gain (brute force over all stumps)
    np.testing.assert_allclose((h_c.evaluate(Z) * A.T).sum(1), (h_e.evaluate(Z) * A.T).sum(1))
    finite = np.isfinite(h_c.threshold)
    np.testing.assert_array_equal(h_c.threshold[finite] % 1, 0.5)  # between codes
    # uint8 input is taken as is
    g_u = CodedStump().best(CodedStump().prepare(Z.astype(np.uint8)), A)[1]
    np.testing.assert_allclose(g_u, g_c)


@pytest.mark.parametrize(
    "bad", [np.array([[0.5, 1.0]]), np.array([[256.0, 1.0]]), np.array([[-1.0, 0.0]])]
)
def test_coded_stump_rejects_non_codes(bad):
    with pytest.raises(ValueError, match="integer codes"):
        CodedStump().prepare(bad)
    with pytest.raises(ValueError, match="integer codes"):
        CodedStump(16).prepare(np.array([[16.0]]))


def test_structboost_without_polish():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 2] > 0.8).astype(int)
    kw = dict(task=MultiClassTask(), weak_learner="stump", C=20.0, max_iter=15, random_state=0)
    exact = StructBoost(certify="exact", **kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no gap warning: the smoothed solution was asked for
        fast = StructBoost(polish=False, **kw).fit(X, y)
        none = StructBoost(certify="none", **kw).fit(X, y)
    assert exact.history_[-1]["certified"] and not fast.history_[-1]["certified"]
    assert none.objective_ == fast.objective_  # polish=False is certify="none"
    # the smoothed solution comes with a valid certified bound: at most the exact
    # optimum over the same 15 iterations' columns (both runs price the same sequence
    # until the first certificate, which only the exact run makes before max_iter)
    if fast.n_iter_ == exact.n_iter_ == 15:
        assert fast.history_[-1]["dual_bound"] <= exact.objective_ * (1 + 1e-9)
        assert fast.objective_ >= exact.objective_ * (1 - 1e-9)
    # and its reported gap is exactly (P - D) / P of those two numbers (no tolerance
    # tuned to a machine: how small the smoothed point's gap is depends on the steps)
    rec = fast.history_[-1]
    assert fast.gap_ == pytest.approx((rec["objective"] - rec["dual_bound"]) / rec["objective"])
    assert np.mean(fast.predict(X) == y) > 0.8


def test_column_store_finds_duplicates_by_full_comparison():
    n = 1000
    st = ColumnStore(Stumps, 3, n, 1)
    H = np.ones((3, n))
    H[1, 1] = -1.0  # differs from row 0 only between the hashed sample points
    H[2] = H[0]  # exact duplicate inside one batch
    hyps = Stumps([0, 1, 2], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], 3)
    cols = st.add(hyps, H, [[0], [0], [0]])
    assert st.n_hyp == 2 and len(cols) == 2
    assert st.find(H[0]) == 0 and st.find(H[1]) == 1 and st.find(-H[0]) == -1
    assert len(st.add(hyps.take([0]), H[:1], [[0]])) == 0  # already present
    np.testing.assert_array_equal(st.hyps.feature, [0, 1])


def test_box_task_keeps_uint8_codes():
    from maxmargin.tasks.boxes import BoxCandidates, BoxTask, sample_boxes

    rng = np.random.default_rng(2)
    data = []
    for _ in range(4):
        b = sample_boxes([20, 20, 10, 10], 30, 8.0, (60, 60), method="random", rng=rng)
        data.append(BoxCandidates(b, rng.integers(0, 256, size=(len(b), 5)).astype(np.uint8)))
    as_float = [BoxCandidates(c.boxes, c.features.astype(float)) for c in data]
    y = np.zeros(4, dtype=np.int64)
    t8, tf = BoxTask().bind(data, y), BoxTask().bind(as_float, y)
    assert t8.weak_inputs().dtype == np.uint8
    np.testing.assert_array_equal(t8.weak_inputs(), tf.weak_inputs())
    kw = dict(C=10.0, weak_learner=CodedStump(), max_iter=10, random_state=0)
    m8 = StructBoost(task=BoxTask(), **kw).fit(data, y)
    mf = StructBoost(task=BoxTask(), **kw).fit(as_float, y)
    np.testing.assert_allclose(m8.slot_weights_, mf.slot_weights_)
    # the linear model's joint differences must not wrap around in uint8
    lm8, lmf = t8.linear_model(), tf.linear_model()
    lab = np.array([1, 2, 3, 4])
    np.testing.assert_allclose(lm8.plane(lab, np.ones(4)), lmf.plane(lab, np.ones(4)))
