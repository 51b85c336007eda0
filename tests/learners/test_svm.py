"""SVMClassifier and the binary SVM solvers (issue 14): each solver against the QP written
out and solved independently with scipy, and against scikit-learn's SVC / LinearSVC."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.svm import SVC, LinearSVC

from maxmargin import SVMClassifier, load, save
from maxmargin.solvers.svm import (
    fit_dual_cd,
    fit_one_slack_svm,
    fit_pegasos,
    fit_smo,
    hinge_objective,
)


def _small(n=40, d=5, seed=0):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=3, n_redundant=0, flip_y=0.1, random_state=seed
    )
    return X, np.where(y == 1, 1.0, -1.0)


def _dual_qp_with_bias(K, y, C):
    """min 1/2 a^T Q a - e^T a, 0 <= a <= C, y^T a = 0 (SLSQP)."""
    Q = (y[:, None] * y[None, :]) * K
    n = len(y)
    res = minimize(
        lambda a: 0.5 * a @ Q @ a - a.sum(),
        np.zeros(n),
        jac=lambda a: Q @ a - 1.0,
        bounds=[(0.0, C)] * n,
        constraints=[{"type": "eq", "fun": lambda a: y @ a, "jac": lambda a: y}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    return -res.fun


def _dual_qp_box(X, y, C):
    """min 1/2 a^T Q a - e^T a, 0 <= a <= C (no bias: L-BFGS-B)."""
    Q = (y[:, None] * y[None, :]) * (X @ X.T)
    res = minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1.0),
        np.zeros(len(y)),
        jac=True,
        bounds=[(0.0, C)] * len(y),
        method="L-BFGS-B",
        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000},
    )
    return -res.fun


@pytest.mark.parametrize("wss", ["wss1", "wss2"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_smo_reaches_the_qp_optimum(wss, kernel):
    X, y = _small()
    K = X @ X.T if kernel == "linear" else np.exp(-0.2 * ((X[:, None] - X[None]) ** 2).sum(-1))
    ref = _dual_qp_with_bias(K, y, 1.0)
    sol = fit_smo(K, y, 1.0, wss=wss, tol=1e-9)
    assert sol.converged
    assert sol.primal == pytest.approx(ref, rel=1e-6)
    assert sol.dual == pytest.approx(ref, rel=1e-6)
    assert abs(y @ sol.alpha) < 1e-9 and sol.alpha.min() >= 0 and sol.alpha.max() <= 1.0
    assert sol.history[-1]["gap"] < 1e-6


def test_linear_solvers_reach_the_qp_optimum():
    X, y = _small()
    Xa = np.hstack([X, np.ones((len(X), 1))])
    C = 0.5
    ref = _dual_qp_box(Xa, y, C)
    for sol, rel in [
        (fit_dual_cd(Xa, y, C, tol=1e-9, max_iter=20000, rng=0), 1e-7),
        (fit_one_slack_svm(Xa, y, C, tol=1e-8, max_iter=2000), 1e-7),
        (fit_pegasos(Xa, y, C, tol=1e-3, max_iter=3000, rng=0), 2e-2),
    ]:
        assert sol.primal == pytest.approx(ref, rel=rel)
        assert sol.dual <= ref * (1 + 1e-9)  # a valid lower bound
        assert sol.primal >= ref * (1 - 1e-9)
        w = sol.w
        assert hinge_objective(y * (Xa @ w), w @ w, C) == pytest.approx(sol.primal, rel=1e-12)


def test_squared_hinge_dual_cd_reaches_the_primal_optimum():
    X, y = _small()
    C = 0.5

    def f(w):
        h = np.maximum(0.0, 1.0 - y * (X @ w))
        return 0.5 * w @ w + C * h @ h, w - 2 * C * X.T @ (h * y)

    ref = minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", options={"gtol": 1e-12})
    sol = fit_dual_cd(X, y, C, loss="squared_hinge", tol=1e-10, max_iter=20000, rng=0)
    assert sol.primal == pytest.approx(ref.fun, rel=1e-8)
    np.testing.assert_allclose(sol.w, ref.x, atol=1e-4)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


def _objective(est, X, y, loss="hinge", regularised_bias=True):
    s = np.where(y == 1, 1.0, -1.0)
    w = est.coef_.ravel()
    b = float(est.intercept_[0])
    sq = w @ w + (b * b if regularised_bias else 0.0)
    return hinge_objective(s * (X @ w + b), sq, est.C, loss)


@pytest.mark.parametrize("wss", ["wss1", "wss2"])
def test_smo_matches_svc_objective(cancer, wss):
    X, y = cancer
    ref = SVC(kernel="linear", C=1.0, tol=1e-6).fit(X, y)
    ours = SVMClassifier(solver="smo", C=1.0, wss=wss, tol=1e-6).fit(X, y)
    a = _objective(ours, X, y, regularised_bias=False)
    b = _objective(ref, X, y, regularised_bias=False)
    assert a == pytest.approx(b, rel=1e-4)
    assert ours.objective_ == pytest.approx(a, rel=1e-6)
    rbf = SVC(C=1.0, tol=1e-6).fit(X, y)
    ours = SVMClassifier(solver="smo", kernel="rbf", C=1.0, wss=wss, tol=1e-6).fit(X, y)
    assert np.mean(ours.predict(X) == rbf.predict(X)) > 0.99
    np.testing.assert_allclose(ours.decision_function(X), rbf.decision_function(X), atol=1e-2)


@pytest.mark.parametrize(
    "solver,loss,tol",
    [
        ("dual_cd", "hinge", 1e-6),
        ("dual_cd", "squared_hinge", 1e-6),
        ("1-slack", "hinge", 1e-6),
    ],
)
def test_linear_solvers_match_linearsvc_objective(cancer, solver, loss, tol):
    X, y = cancer
    ref = LinearSVC(C=1.0, loss=loss, tol=1e-10, max_iter=200_000).fit(X, y)
    ours = SVMClassifier(solver=solver, loss=loss, C=1.0, tol=tol, max_iter=5000, random_state=0)
    ours.fit(X, y)
    a, b = _objective(ours, X, y, loss), _objective(ref, X, y, loss)
    assert a == pytest.approx(b, rel=1e-4)
    assert ours.converged_ and ours.history_[-1]["gap"] <= tol


def test_pegasos_gets_close_and_reports_a_valid_gap(cancer):
    X, y = cancer
    ref = LinearSVC(C=1.0, loss="hinge", tol=1e-10, max_iter=200_000).fit(X, y)
    opt = _objective(ref, X, y)
    est = SVMClassifier(solver="pegasos", C=1.0, max_iter=300, tol=1e-9, random_state=0)
    with pytest.warns(UserWarning):
        est.fit(X, y)
    assert opt <= est.objective_ <= opt * 1.05
    assert est.dual_objective_ <= opt * (1 + 1e-9)
    for rec in est.history_:
        assert rec["dual_bound"] <= opt * (1 + 1e-9) and rec["objective"] >= opt * (1 - 1e-9)


def test_multiclass_one_vs_rest_and_sparse_round_trip(tmp_path):
    X, y = make_classification(
        n_samples=120, n_features=6, n_informative=4, n_classes=3, random_state=1
    )
    est = SVMClassifier(solver="dual_cd", tol=1e-4, random_state=0).fit(X, y)
    assert est.coef_.shape == (3, 6) and est.intercept_.shape == (3,)
    assert {r["problem"] for r in est.history_} == {0, 1, 2}
    sparse = SVMClassifier(solver="dual_cd", tol=1e-4, random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, est.coef_, atol=1e-10)
    smo = SVMClassifier(solver="smo", kernel="poly", degree=2, tol=1e-6).fit(X, y)
    back = load(save(smo, tmp_path / "m.npz"))
    np.testing.assert_array_equal(back.decision_function(X), smo.decision_function(X))
    assert not hasattr(smo, "coef_")


def test_invalid_combinations():
    X, y = _small()
    with pytest.raises(ValueError, match="squared_hinge"):
        SVMClassifier(solver="pegasos", loss="squared_hinge").fit(X, y)
    with pytest.raises(ValueError, match="kernel"):
        SVMClassifier(solver="dual_cd", kernel="rbf").fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        SVMClassifier(solver="liblinear").fit(X, y)


def test_dual_cd_with_and_without_shrinking_reach_the_same_optimum():
    from sklearn.datasets import load_breast_cancer

    from maxmargin.solvers.svm import fit_dual_cd

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(y == 1, 1.0, -1.0)
    for loss in ("hinge", "squared_hinge"):
        a = fit_dual_cd(X, y, 1.0, loss=loss, tol=1e-6, max_iter=5000, rng=0, shrinking=True)
        b = fit_dual_cd(X, y, 1.0, loss=loss, tol=1e-6, max_iter=5000, rng=0, shrinking=False)
        assert a.converged and b.converged
        np.testing.assert_allclose(a.primal, b.primal, rtol=1e-5)
        assert min(h["active"] for h in a.history) < len(y)  # shrinking did shrink
        assert all(h["active"] == len(y) for h in b.history)


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("shrinking", [True, False])
def test_dual_cd_reaches_the_qp_optimum_on_both_layouts(monkeypatch, layout, shrinking):
    """Dense rows and CSR, shrinking on and off: the optimum of the box QP (scipy), for
    the hinge; the squared hinge against the same QP with ``Q + I/(2C)`` and no upper
    bound."""
    import maxmargin.solvers.svm as S

    monkeypatch.setattr(S, "DENSE_FILL", 0.0 if layout == "dense" else 2.0)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 8)) * (rng.random((60, 8)) < 0.4)  # sparse-ish, 40 % full
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=60) > 0, 1.0, -1.0)
    Xa = np.hstack([X, np.ones((60, 1))])
    C = 0.7
    ref = _dual_qp_box(Xa, y, C)
    Xin = sp.csr_matrix(Xa) if layout == "csr" else Xa
    sol = S.fit_dual_cd(Xin, y, C, tol=1e-10, max_iter=50000, rng=1, shrinking=shrinking)
    assert sol.converged
    assert sol.primal == pytest.approx(ref, rel=1e-8)
    assert sol.dual <= ref * (1 + 1e-9)

    def f(w):
        h = np.maximum(0.0, 1.0 - y * (Xa @ w))
        return 0.5 * w @ w + C * h @ h, w - 2 * C * Xa.T @ (h * y)

    sq = minimize(f, np.zeros(9), jac=True, method="L-BFGS-B", options={"gtol": 1e-12})
    sol = S.fit_dual_cd(
        Xin, y, C, loss="squared_hinge", tol=1e-10, max_iter=50000, rng=1, shrinking=shrinking
    )
    assert sol.converged
    assert sol.primal == pytest.approx(sq.fun, rel=1e-8)


def test_dual_cd_from_a_poor_warm_start_with_rare_checks():
    """Started from every multiplier at C (most of them wrong) with gap checks 50x rarer
    than the default, dual CD still reaches the QP optimum.  (Re-entry of wrongly shrunk
    samples at the checks is what the tests above need: with it disabled, the shrinking
    cases of the two tests above and the squared-hinge LinearSVC match fail.)"""
    X, y = _small(n=80, d=4, seed=2)
    Xa = np.hstack([X, np.ones((80, 1))])
    C = 1.0
    ref = _dual_qp_box(Xa, y, C)
    sol = fit_dual_cd(
        Xa, y, C, tol=1e-9, max_iter=100000, rng=0, alpha0=np.full(80, C), check_every=50.0
    )
    assert sol.converged
    assert sol.primal == pytest.approx(ref, rel=1e-7)


def test_dual_cd_shuffle_is_a_uniform_permutation():
    from maxmargin.solvers.svm import _rand_below

    state = np.array([12345], dtype=np.uint64)
    draws = np.array([_rand_below(state, 7) for _ in range(7000)])
    counts = np.bincount(draws, minlength=7)
    assert draws.min() == 0 and draws.max() == 6
    assert np.all(np.abs(counts - 1000) < 150)  # ~5 standard deviations


def test_dual_cd_rejects_bad_input():
    X, y = _small()
    with pytest.raises(ValueError, match="rows"):
        fit_dual_cd(X[:-1], y, 1.0)
    with pytest.raises(ValueError, match="alpha0"):
        fit_dual_cd(X, y, 1.0, alpha0=np.zeros(3))
    with pytest.raises(ValueError, match="loss"):
        fit_dual_cd(X, y, 1.0, loss="log")
    with pytest.raises(ValueError, match="check_every"):
        fit_dual_cd(X, y, 1.0, check_every=0)


class _CtrlCAt:
    """A callback that raises KeyboardInterrupt (as Ctrl-C would) at its n-th call."""

    def __init__(self, at):
        self.at, self.calls = at, 0

    def __call__(self, record):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt


@pytest.mark.parametrize("solver", ["smo", "dual_cd", "pegasos", "1-slack"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_ctrl_c_keeps_the_solved_part_of_every_solver(solver, n_classes, tmp_path):
    import maxmargin
    from maxmargin.exceptions import FitInterruptedWarning

    X, y = make_classification(
        n_samples=150, n_features=6, n_informative=4, n_classes=n_classes,
        n_clusters_per_class=1, random_state=0,
    )  # fmt: skip
    params = dict(solver=solver, C=1.0, tol=1e-12, max_iter=50, random_state=0)
    if solver == "smo":
        params["max_iter"] = 20  # pair updates per sample: several history records
    clf = SVMClassifier(**params, callback=_CtrlCAt(2))
    with pytest.warns(FitInterruptedWarning, match="interrupted"):
        clf.fit(X, y)
    assert not clf.converged_
    scores = clf.decision_function(X)
    assert np.all(np.isfinite(scores))
    # the kept model is a real iterate: better than the all-zero start on the training set
    assert np.mean(clf.predict(X) == y) > 1.0 / n_classes + 0.1
    path = tmp_path / "m.npz"
    maxmargin.save(clf.set_params(callback=None), path)
    np.testing.assert_array_equal(maxmargin.load(path).decision_function(X), scores)


@pytest.mark.parametrize("solver", ["smo", "dual_cd", "pegasos", "1-slack"])
def test_callback_returning_true_stops_every_solver(solver):
    """The monitor's contract: a callback returning True ends the fit after that record."""
    X, y = make_classification(n_samples=400, n_features=6, flip_y=0.2, random_state=0)
    calls = []

    def stop_at_first(record):
        calls.append(record)
        return True

    params = dict(solver=solver, C=10.0, tol=1e-12, max_iter=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = SVMClassifier(**params).fit(X, y)
    assert len(full.history_) > 1  # without the callback the fit records more
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = SVMClassifier(**params, callback=stop_at_first).fit(X, y)
    assert len(calls) == 1 and len(clf.history_) == 1
    assert not clf.converged_


def test_ctrl_c_in_the_first_one_vs_rest_problem_names_the_untrained_classes():
    from maxmargin.exceptions import FitInterruptedWarning

    X, y = make_classification(
        n_samples=120, n_features=6, n_informative=4, n_classes=3,
        n_clusters_per_class=1, random_state=1,
    )  # fmt: skip
    clf = SVMClassifier(solver="dual_cd", tol=1e-12, callback=_CtrlCAt(1))
    with pytest.warns(FitInterruptedWarning, match="classes 1, 2 were not started"):
        clf.fit(X, y)
    assert np.any(clf.coef_[0] != 0)
    np.testing.assert_array_equal(clf.coef_[1:], 0.0)
    np.testing.assert_array_equal(clf.intercept_[1:], 0.0)


def test_ctrl_c_before_any_solver_step_propagates(monkeypatch):
    import maxmargin.learners.svm as mod

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "fit_dual_cd", interrupted)
    with pytest.raises(KeyboardInterrupt):
        SVMClassifier(solver="dual_cd").fit(X, y)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly", "sigmoid"])
def test_kernel_rows_equal_scikit_learn_and_a_tiny_cache_changes_nothing(kernel):
    from sklearn.metrics.pairwise import pairwise_kernels

    from maxmargin.solvers.svm import _kernel_row, kernel_rows

    rng = np.random.default_rng(0)
    X = rng.normal(size=(70, 5))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=70) > 0, 1.0, -1.0)
    params = {"gamma": 0.3, "coef0": 0.5, "degree": 3}
    kw = {k: v for k, v in params.items() if kernel != "linear"}
    kw = {k: v for k, v in kw.items() if not (kernel == "rbf" and k != "gamma")}
    kw = {k: v for k, v in kw.items() if not (kernel == "sigmoid" and k == "degree")}
    K = pairwise_kernels(X, metric=kernel, **kw)
    kr = kernel_rows(X, kernel, cache_size=1e-9, **params)  # two rows cached at most
    assert kr.cache.shape[0] == 2
    for i in (3, 40, 3, 7):
        np.testing.assert_allclose(_kernel_row(kr, i), K[i], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kr.diag, np.diag(K), rtol=1e-12)
    C = 10.0 if kernel == "sigmoid" else 1.0
    ref = fit_smo(K, y, C, tol=1e-8)
    tiny = kernel_rows(X, kernel, cache_size=1e-9, **params)
    ours = fit_smo(tiny, y, C, tol=1e-8)
    np.testing.assert_allclose(ours.alpha, ref.alpha, atol=1e-6)
    assert ours.dual == pytest.approx(ref.dual, rel=1e-9)
    # rows are recomputed after eviction: more computed rows than distinct rows needed
    full = kernel_rows(X, kernel, **params)
    fit_smo(full, y, C, tol=1e-8)
    assert full.clock[1] <= 70 and tiny.clock[1] > full.clock[1]


def test_dual_cd_from_a_small_initial_active_set_reaches_the_qp_optimum():
    """active0 starts all but five samples shrunk: the gap passes must bring the
    violating ones back for the optimum of the box QP (scipy) to be reached."""
    X, y = _small(n=70, d=4, seed=4)
    Xa = np.hstack([X, np.ones((70, 1))])
    ref = _dual_qp_box(Xa, y, 1.0)
    sol = fit_dual_cd(Xa, y, 1.0, tol=1e-9, max_iter=100000, rng=0, active0=np.arange(5))
    assert sol.converged
    assert sol.primal == pytest.approx(ref, rel=1e-7)
    assert sol.active is not None and len(sol.active) <= 70
    assert sol.history[0]["active"] > 5  # the first gap pass re-activated violators


def test_dual_cd_uncertified_end_keeps_a_valid_bound():
    """certify=False skips the gap pass after the last epoch (if an earlier one was made):
    the reported primal is that of the returned w (so an upper bound on the optimum, scipy
    QP), the multipliers are the last iterate, feasible, and the dual bound holds."""
    X, y = _small(n=70, d=4, seed=4)
    Xa = np.hstack([X, np.ones((70, 1))])
    ref = _dual_qp_box(Xa, y, 1.0)
    for cap in (1, 3, 8):
        sol = fit_dual_cd(Xa, y, 1.0, tol=1e-12, max_iter=cap, rng=0, certify=False)
        full = fit_dual_cd(Xa, y, 1.0, tol=1e-12, max_iter=cap, rng=0)
        assert sol.n_iter == cap and full.history[-1]["iteration"] == cap
        np.testing.assert_array_equal(sol.alpha, full.alpha)  # the same epochs either way
        # a gap pass was made before the last epoch (or, if none was, after it)
        assert sol.history[-1]["iteration"] == (
            cap if cap == 1 else [h["iteration"] for h in full.history][-2]
        )
        assert sol.primal == pytest.approx(hinge_objective(y * (Xa @ sol.w), sol.w @ sol.w, 1.0))
        assert sol.primal >= ref * (1 - 1e-9) and sol.dual <= ref * (1 + 1e-9)
        assert np.all((sol.alpha >= 0) & (sol.alpha <= 1.0))


def test_dual_cd_layout_follows_fill_and_memory(monkeypatch):
    import maxmargin.solvers.svm as S

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 20)) * (rng.random((50, 20)) < 0.3)  # 30 % full
    assert S.dual_cd_data(X).dense and S.dual_cd_data(sp.csr_matrix(X)).dense
    thin = X * (rng.random((50, 20)) < 0.1)  # about 3 % full
    assert not S.dual_cd_data(thin).dense
    monkeypatch.setattr(S, "DENSE_MAX_BYTES", 100)  # a sparse X too big to densify
    assert not S.dual_cd_data(sp.csr_matrix(X)).dense
    assert S.dual_cd_data(X).dense  # dense input is already dense


def test_kernel_data_are_one_array_type():
    """A read-only (memory-mapped) or F-ordered X is copied once to a C-ordered writeable
    array before the compiled SMO / dual CD loops see it (numba compiles one specialisation
    per array type; a read-only array is another type); the fit is the writeable input's."""
    from maxmargin.solvers.svm import dual_cd_data, kernel_rows

    X, y = make_classification(n_samples=60, n_features=5, random_state=0)
    ro = X.copy()
    ro.flags.writeable = False
    for Xin in (ro, np.asfortranarray(X)):
        kr = kernel_rows(Xin, "rbf")
        assert kr.X.flags.c_contiguous and kr.X.flags.writeable
        d = dual_cd_data(Xin)
        assert d.dense and d.Xd.flags.c_contiguous and d.Xd.flags.writeable
    K = ro @ ro.T
    K.flags.writeable = False
    assert kernel_rows(K=K).cache.flags.writeable
    ref = SVMClassifier(solver="smo", kernel="rbf").fit(X, y).decision_function(X)
    got = SVMClassifier(solver="smo", kernel="rbf").fit(ro, y).decision_function(X)
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("solver", ["smo", "dual_cd", "pegasos"])
def test_verbose_and_max_time_are_callbacks_of_the_solvers_monitor(solver, capsys):
    """``verbose`` prints every record and ``max_time`` ends the fit after its first
    record, through the one monitor, with or without a user ``callback`` (dual CD printed
    nothing without one before issue 29's thirteenth session)."""
    X, y = _small(200, 8, seed=3)
    fit = {
        "smo": lambda **kw: fit_smo(X @ X.T, y, 1.0, tol=1e-12, max_iter=10**7, **kw),
        "dual_cd": lambda **kw: fit_dual_cd(X, y, 1.0, tol=1e-12, max_iter=10**5, **kw),
        "pegasos": lambda **kw: fit_pegasos(X, y, 1.0, tol=1e-12, max_iter=10**5, rng=0, **kw),
    }[solver]
    sol = fit(verbose=1)
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert len(printed) == len(sol.history) > 0
    for callback in (None, lambda rec: None):
        sol = fit(max_time=0.0, callback=callback)
        assert len(sol.history) == 1 and not sol.converged
