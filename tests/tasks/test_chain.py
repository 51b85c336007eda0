"""ChainTask, the linear joint-feature model and the OCR loader."""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from data_makers import make_chain_data
from maxmargin.learners.ssvm import StructSVM
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.classification import MultiClassTask
from maxmargin.tasks.linear import LinearJointModel, from_label_coding

OCR = (
    Path(__file__).resolve().parents[3] / "shared/data/sequence_labeling/ocr_taskar/ocr_taskar.mat"
)


def test_plane_matches_margins():
    X, y = make_chain_data(n=6)
    m = ChainTask().bind(X, y).linear_model()
    rng = np.random.default_rng(1)
    w = rng.normal(size=m.dim)
    labels = rng.integers(0, m.n_states, m.n_positions)
    coef = rng.random(m.n_samples)
    _, margin = m.evaluate(w, labels)
    assert np.isclose(w @ m.plane(labels, coef), coef @ margin)
    # loss-augmented outputs are at least as violated as random ones
    _, loss, marg = m.loss_augmented(w)
    l2, m2 = m.evaluate(w, labels)
    assert np.all(loss - marg >= l2 - m2 - 1e-9)


def test_label_coding_model_matches_task_oracle():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.integers(0, 4, 30)
    task = MultiClassTask().bind(X, y)
    m = from_label_coding(task, X)
    w = rng.normal(size=m.dim)
    lab, _loss, margin = m.loss_augmented(w)
    ref = task.loss_augmented(X @ w.reshape(3, 4))
    np.testing.assert_array_equal(lab, ref.label)
    np.testing.assert_allclose(margin, ref.margin)
    ms = from_label_coding(task, sp.csr_matrix(X))
    np.testing.assert_allclose(ms.plane(lab, np.ones(30)), m.plane(lab, np.ones(30)))


def test_chain_validation():
    X, y = make_chain_data(n=3)
    with pytest.raises(ValueError, match="length"):
        ChainTask().bind(X, [s[:-1] for s in y])
    with pytest.raises(ValueError, match="list"):
        ChainTask().bind(np.zeros((3, 4)), y)
    with pytest.raises(ValueError, match="sequences"):
        ChainTask().bind(X, y[:2])
    with pytest.raises(ValueError, match=r"0\.\.1"):
        ChainTask(n_states=2).bind(X, [s + 5 for s in y])
    bad = LinearJointModel(np.ones((2, 1)), [0, 2], [0, 1], np.eye(2), [[0, 2], [1, 0]], True)
    with pytest.raises(ValueError, match="Hamming"):
        bad.check_rescaling("slack")


@pytest.mark.parametrize("solver", ["1-slack", "n-slack", "frank-wolfe", "subgradient"])
def test_chain_learns_transitions(solver):
    X, y = make_chain_data(n=60, noise=1.6, seed=2)
    Xt, yt = make_chain_data(n=100, noise=1.6, seed=3)
    m = StructSVM(
        task=ChainTask(), C=10.0, solver=solver, tol=1e-2, max_iter=300, random_state=0
    ).fit(X, y)
    m0 = StructSVM(
        task=ChainTask(transitions=False),
        C=10.0,
        solver=solver,
        tol=1e-2,
        max_iter=300,
        random_state=0,
    ).fit(X, y)
    pred = m.predict(Xt)
    assert [len(p) for p in pred] == [len(s) for s in yt]
    assert m.score(Xt, yt) > m0.score(Xt, yt)
    assert m.history_[-1]["gap"] <= 1e-2 or m.n_iter_ == 300


@pytest.mark.skipif(not OCR.is_file(), reason="shared OCR data not available")
def test_ocr_loader():
    from maxmargin.datasets.ocr import load_ocr

    X, y = load_ocr(OCR)
    assert len(X) == 626 and sum(len(s) for s in y) == 4617
    assert X[0].shape[1] == 129 and np.all(X[0][:, -1] == 1)
    X2, _ = load_ocr(OCR, "test", bias=False)
    assert len(X2) == 6251 and X2[0].shape[1] == 128


@pytest.mark.parametrize("sparse", [False, True])
def test_stack_sequences_checks_its_input(sparse):
    from maxmargin.tasks.chain import stack_sequences

    def conv(a):
        return sp.csr_matrix(a) if sparse else a

    good = [conv(np.ones((2, 3))), conv(np.arange(3.0)[None, :])]
    Xf, offsets = stack_sequences(good)
    assert offsets.tolist() == [0, 2, 3] and Xf.shape == (3, 3)
    bad = np.ones((2, 3))
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        stack_sequences([conv(np.ones((2, 3))), conv(bad)])
    with pytest.raises(ValueError, match="same number of features"):
        stack_sequences([conv(np.ones((2, 3))), conv(np.ones((2, 4)))])
    with pytest.raises(ValueError, match="at least one position"):
        stack_sequences([conv(np.ones((2, 3))), conv(np.ones((0, 3)))])
    with pytest.raises(ValueError, match="at least one sequence"):
        stack_sequences([])
