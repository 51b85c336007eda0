"""Box task (issue 11): overlap, candidate sampling, oracles, StructBoost / SSVM training."""

import numpy as np
import pytest

from maxmargin.learners.structboost import StructBoost
from maxmargin.solvers.ssvm import solve_ssvm
from maxmargin.tasks.base import DualPairs
from maxmargin.tasks.boxes import (
    BoxCandidates,
    BoxTask,
    box_overlap,
    pairwise_overlap,
    sample_boxes,
)


def _pixel_iou(a, b, size=40):
    def mask(box):
        m = np.zeros((size, size), bool)
        x, y, w, h = (int(v) for v in box)
        m[max(y, 0) : max(y + h, 0), max(x, 0) : max(x + w, 0)] = True
        return m

    ma, mb = mask(a), mask(b)
    u = (ma | mb).sum()
    return (ma & mb).sum() / u if u else 0.0


def test_overlap_equals_pixel_count():
    rng = np.random.default_rng(0)
    a = np.column_stack([rng.integers(0, 20, (300, 2)), rng.integers(1, 15, (300, 2))])
    b = np.column_stack([rng.integers(0, 20, (300, 2)), rng.integers(1, 15, (300, 2))])
    got = box_overlap(a, b)
    want = np.array([_pixel_iou(p, q) for p, q in zip(a, b)])
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(
        pairwise_overlap(a[:7], b[:5]), [[_pixel_iou(p, q) for q in b[:5]] for p in a[:7]]
    )
    assert box_overlap([0, 0, 3, 3], [0, 0, 3, 3])[0] == 1.0
    assert box_overlap([0, 0, 0, 3], [0, 0, 0, 3])[0] == 0.0


@pytest.mark.parametrize("method", ["grid", "random", "polar"])
def test_sampling_within_radius_and_image(method):
    box = np.array([50.0, 30.0, 20.0, 30.0])
    for shape, radius in [((100, 120), 15.0), ((70, 80), 40.0), ((31, 21), 5.0)]:
        b = box if shape[0] > 70 else np.array([0.0, 0.0, 20.0, 30.0])
        c = sample_boxes(b, 500, radius, shape, method=method, rng=0, scales=(0.9, 1.0, 1.1))
        assert len(c) >= 1 and len(np.unique(c, axis=0)) == len(c)
        assert np.all(c[:, 0] >= 0) and np.all(c[:, 1] >= 0)
        assert np.all(c[:, 0] + c[:, 2] <= shape[1]) and np.all(c[:, 1] + c[:, 3] <= shape[0])
        d = np.hypot(
            c[1:, 0] + c[1:, 2] / 2 - b[0] - b[2] / 2, c[1:, 1] + c[1:, 3] / 2 - b[1] - b[3] / 2
        )
        assert np.all(d <= radius + 1e-9)
    box = np.array([300.0, 200.0, 40.0, 60.0])
    c = sample_boxes(box, 2000, 30.0, (480, 640))
    assert 1500 <= len(c) <= 2600
    np.testing.assert_array_equal(c[0], box)


def _random_task(m=6, K=9, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for i in range(m):
        k = K - (i % 3)  # unequal sizes exercise the padding
        boxes = np.column_stack([rng.integers(0, 10, (k, 2)), rng.integers(2, 8, (k, 2))])
        X.append(BoxCandidates(boxes, rng.normal(size=(k, d))))
        y.append(int(rng.integers(k)))
    return X, np.array(y), BoxTask().bind(X, np.array(y))


def test_oracles_equal_brute_force():
    X, y, t = _random_task()
    rng = np.random.default_rng(1)
    F = rng.normal(size=(t.weak_inputs().shape[0], 1))
    S = F[:, 0].reshape(t.n_samples, -1)
    orc = t.loss_augmented(F)
    for i, c in enumerate(X):
        k = len(c.boxes)
        vals = [
            1 - box_overlap(c.boxes[j], c.boxes[y[i]])[0] + S[i, j] - S[i, y[i]] for j in range(k)
        ]
        assert orc.loss[i] - orc.margin[i] == pytest.approx(max(vals))
        assert t.predict_codes(F)[i] == np.argmax(S[i])  # padded copies never win a tie first
    # dense hooks agree with the generic per-output definitions
    A = t.dense_margins(F)
    np.testing.assert_allclose(A.max(axis=1), orc.loss - orc.margin)
    Mu = rng.random(A.shape)
    i, k = np.nonzero(Mu)
    np.testing.assert_allclose(t.dense_weak_weights(Mu), t.weak_weights(DualPairs(i, k, Mu[i, k])))
    # gain of a weak classifier = sum mu dpsi
    h = rng.normal(size=(1, F.shape[0]))
    d = t.joint_difference(h, np.array([0]), DualPairs(i, k, Mu[i, k]))
    assert (d @ Mu[i, k]).sum() == pytest.approx(
        (h @ t.weak_weights(DualPairs(i, k, Mu[i, k]))).sum()
    )


def test_bind_errors():
    X, y, _ = _random_task()
    with pytest.raises(ValueError, match="out of range"):
        BoxTask().bind(X, y + 20)
    with pytest.raises(ValueError, match="integer"):
        BoxTask().bind(X, y.astype(float))
    with pytest.raises(ValueError, match="list"):
        BoxTask().bind(X[0], y[:1])


def _separable(m=8, K=30, seed=0):
    """Features that reveal the overlap with the truth: a box task StructBoost can fit."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(m):
        truth = np.array([20.0, 20.0, 10.0, 10.0])
        boxes = sample_boxes(truth, K, 8.0, (50, 50), method="random", rng=rng)
        ov = box_overlap(boxes, truth)
        feats = np.column_stack(
            [ov + 0.05 * rng.normal(size=len(ov)), rng.normal(size=(len(ov), 3))]
        )
        X.append(BoxCandidates(boxes, feats))
        y.append(0)
    return X, np.array(y)


@pytest.mark.parametrize("master", ["fast", "exact"])
def test_structboost_trains_on_boxes(master):
    X, y = _separable()
    est = StructBoost(task=BoxTask(), C=30.0, max_iter=20, master=master, random_state=0)
    est.fit(X, y)
    assert len(est.hypotheses_) >= 1
    Xt, _ = _separable(seed=5)
    pred = est.predict(Xt)
    ov = [box_overlap(p, [20, 20, 10, 10])[0] for p in pred]
    assert np.mean(ov) > 0.8


def test_structboost_on_boxes_saves_and_loads(tmp_path):
    import maxmargin

    X, y = _separable()
    est = StructBoost(task=BoxTask(), C=30.0, max_iter=10, random_state=0).fit(X, y)
    back = maxmargin.load(maxmargin.save(est, tmp_path / "boxes.npz"))
    assert isinstance(back.task_, BoxTask)
    Xt, _ = _separable(seed=5)
    np.testing.assert_array_equal(np.asarray(back.predict(Xt)), np.asarray(est.predict(Xt)))


def test_linear_ssvm_on_boxes():
    X, y = _separable()
    model = BoxTask().bind(X, y).linear_model()
    res = solve_ssvm(model, 10.0, "1-slack", tol=1e-3, max_iter=200)
    Xt, _ = _separable(seed=5)
    ov = [box_overlap(p, [20, 20, 10, 10])[0] for p in model.predict(res.w, Xt)]
    assert np.mean(ov) > 0.8


def test_struct_svm_estimator_on_boxes_is_the_solver_on_the_box_model():
    """StructSVM(task=BoxTask()) is a shell over the same 1-slack solve (the tracker's
    SSVM goes through it): same weights; predict gives each image's best-scoring box."""
    from maxmargin.learners.ssvm import StructSVM

    X, y = _separable()
    est = StructSVM(task=BoxTask(), C=10.0, tol=1e-3, max_iter=200).fit(X, y)
    res = solve_ssvm(BoxTask().bind(X, y).linear_model(), 10.0, "1-slack", tol=1e-3, max_iter=200)
    np.testing.assert_array_equal(est.coef_, res.w)
    Xt, _ = _separable(seed=5)
    pred = est.predict(Xt)
    for c, p in zip(Xt, pred):  # brute force: the argmax of the linear score
        np.testing.assert_array_equal(p, c.boxes[np.argmax(c.features @ est.coef_)])
    with pytest.raises(ValueError, match="label-coding"):
        est.decision_function(Xt)


def test_warm_start_keeps_columns_and_adds_few():
    X, y = _separable(m=8)
    est = StructBoost(task=BoxTask(), C=30.0, max_iter=30, random_state=0, warm_start=True)
    est.fit(X, y)
    n0, obj0 = len(est.hypotheses_), est.objective_
    X2, y2 = _separable(m=8, seed=3)
    est.fit(X[4:] + X2[:4], np.concatenate([y[4:], y2[:4]]))
    assert est.n_iter_ <= 30 and len(est.hypotheses_) >= 1
    cold = StructBoost(task=BoxTask(), C=30.0, max_iter=30, random_state=0)
    cold.fit(X[4:] + X2[:4], np.concatenate([y[4:], y2[:4]]))
    # the warm fit starts from the earlier weak learners: few new iterations are needed
    assert est.objective_ <= cold.objective_ * (1 + 1e-6) or est.n_iter_ < cold.n_iter_
    assert n0 >= 1 and np.isfinite(obj0)


@pytest.mark.parametrize("order", ["C", "F"])
def test_coded_weak_inputs_are_feature_major_and_padded_by_the_true_box(order):
    """uint8 bin codes bind feature-major (Fortran order: the coded stump's search layout,
    no transposed copy) with the same values as the float layout: image i's candidates in
    rows ``i K`` to ``i K + k_i``, the rest of its block copies of its true box's row --
    checked row by row against the features, for images stored in either order."""
    from maxmargin.weak import CodedStump

    rng = np.random.default_rng(3)
    sizes, d = [5, 8, 3], 6
    X = []
    for k in sizes:
        boxes = np.column_stack([rng.integers(0, 20, (k, 2)), np.full((k, 2), 6)]).astype(float)
        codes = rng.integers(0, 256, (k, d)).astype(np.uint8)
        X.append(BoxCandidates(boxes, np.asarray(codes, order=order)))
    y = np.array([2, 0, 1])
    t = BoxTask().bind(X, y)
    Z = t.weak_inputs()
    K = max(sizes)
    assert Z.dtype == np.uint8 and Z.shape == (len(sizes) * K, d)
    assert Z.T.flags.c_contiguous  # feature-major
    for i, c in enumerate(X):  # the reference layout, one row at a time
        for r in range(K):
            want = c.features[r] if r < len(c.boxes) else c.features[y[i]]
            np.testing.assert_array_equal(Z[i * K + r], want)
    # the float layout of the same codes holds the same values
    Xf = [BoxCandidates(c.boxes, c.features.astype(np.float64)) for c in X]
    np.testing.assert_array_equal(BoxTask().bind(Xf, y).weak_inputs(), Z)
    prepared = CodedStump(256).prepare(Z)
    assert np.shares_memory(prepared.codes, Z)  # the search reads them in place


def test_unique_boxes_is_the_row_wise_unique_in_first_occurrence_order():
    """``unique_boxes`` = ``cand[sort(unique(cand, axis=0, return_index=True)[1])]``: on
    whole-pixel boxes with many duplicates (the integer-key path, -0.0 included), on
    boxes with a fractional or negative coordinate and on boxes beyond 2^16 px (the
    row-wise path), and on one or no box."""
    from maxmargin.tasks.boxes import unique_boxes

    def reference(c):
        _, first = np.unique(c, axis=0, return_index=True)
        return c[np.sort(first)]

    rng = np.random.default_rng(7)
    whole = rng.integers(0, 6, (500, 4)).astype(np.float64)  # about 1 in 2.6 repeated
    whole[rng.random(500) < 0.05, 0] = -0.0
    whole[:3] = [[65535, 0, 1, 2], [0, 65535, 2, 1], [1, 2, 65535, 0]]
    frac = whole.copy()
    frac[10, 1] = 2.5
    neg = whole.copy()
    neg[20, 0] = -1.0
    big = whole.copy()
    big[30, 3] = 65536.0
    for c in (whole, frac, neg, big, whole[:1], whole[:0]):
        got = unique_boxes(c)
        np.testing.assert_array_equal(got, reference(c) if len(c) > 1 else c)
    assert len(unique_boxes(whole)) < len(whole)
