"""Data makers and independent answers shared by several test modules (``tests/`` is on
pytest's pythonpath: ``from data_makers import make_chain_data``)."""

import numpy as np
from scipy.optimize import linprog
from sklearn.datasets import load_digits

from maxmargin.solvers.column_generation import fit_structboost
from maxmargin.solvers.columns import ColumnStore
from maxmargin.solvers.smoothed_problem import SmoothedProblem
from maxmargin.tasks import BinaryTask, MultiClassTask
from maxmargin.tasks.crf import CRFGraph
from maxmargin.weak import DecisionStump
from maxmargin.weak.reference import all_stumps


def make_chain_data(n=40, K=3, d=4, noise=1.0, seed=0):
    """Sequences from a sticky Markov chain with noisy state prototypes."""
    protos = np.random.default_rng(123).normal(size=(K, d)) * 1.5
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(2, 7))
        s = [int(rng.integers(K))]
        for _ in range(T - 1):
            s.append(s[-1] if rng.random() < 0.8 else int(rng.integers(K)))
        s = np.array(s)
        X.append(protos[s] + noise * rng.normal(size=(T, d)))
        y.append(s)
    return X, y


def grid_edges(h, w):
    idx = np.arange(h * w).reshape(h, w)
    return np.vstack(
        [
            np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1),
        ]
    )


def make_graphs(rng, n_img, h=4, w=4, noise=1.0):
    """Blob images on grids: noisy unary evidence, contrast-like pairwise features."""
    X, Y = [], []
    for _ in range(n_img):
        y = np.zeros((h, w), dtype=np.int64)
        r0, c0 = rng.integers(0, h // 2 + 1), rng.integers(0, w // 2 + 1)
        y[r0 : r0 + h // 2 + 1, c0 : c0 + w // 2 + 1] = 1
        y = y.ravel()
        s = (2 * y - 1)[:, None] + noise * rng.normal(size=(len(y), 2))
        unary = np.stack([s, -s], axis=1)  # U(l, x_p) = -(2l - 1) F_p (eq. 32)
        E = grid_edges(h, w)
        same = (y[E[:, 0]] == y[E[:, 1]]).astype(float)
        pw = np.stack([np.ones(len(E)), same + 0.3 * rng.random(len(E))], axis=1)
        X.append(CRFGraph(unary, E, pw, area=rng.integers(1, 5, len(y)).astype(float)))
        Y.append(y)
    return X, Y


def brute_force_crf_hinges(X, Y, w, d_u):
    """Every image's true loss-augmented hinge at ``w`` (Hamming loss over the nodes,
    normalised), every labelling enumerated: the independent answer the CRF oracle's
    bounds are checked against (small grids only: 2^n labellings an image)."""
    import itertools

    out = []
    for g, y in zip(X, Y):
        Eu = g.unary @ w[:d_u]  # (n, 2)
        c = g.pairwise @ w[d_u:]

        def energy(lab, Eu=Eu, c=c, edges=g.edges):
            return (
                Eu[np.arange(len(lab)), lab].sum() + c[lab[edges[:, 0]] != lab[edges[:, 1]]].sum()
            )

        e_true = energy(y)
        best = 0.0
        for lab in itertools.product((0, 1), repeat=len(y)):
            lab = np.array(lab)
            best = max(best, float(np.mean(lab != y)) - (energy(lab) - e_true))
        out.append(best)
    return np.array(out)


def full_lp_optimum(X, y, C, gamma, delta):
    """min 1'w + C/m 1'xi  s.t.  w.dPsi_i(y) + xi_i >= Delta(y_i, y), w, xi >= 0."""
    classes, codes = np.unique(y, return_inverse=True)
    m, K = len(y), len(classes)
    S = gamma.shape[1]
    Phi = all_stumps(X).evaluate(X).T  # (m, n_stumps)
    n_cols = Phi.shape[1] * S
    rows, rhs = [], []
    for i in range(m):
        for k in range(K):
            if k == codes[i]:
                continue
            dpsi = np.kron(Phi[i], gamma[codes[i]] - gamma[k])  # column (stump, slot)
            slack = np.zeros(m)
            slack[i] = 1.0
            rows.append(np.concatenate([dpsi, slack]))
            rhs.append(delta[codes[i], k])
    cost = np.concatenate([np.ones(n_cols), np.full(m, C / m)])
    res = linprog(cost, A_ub=-np.array(rows), b_ub=-np.array(rhs), bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def tiny_problem(seed, n_classes):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(14, 2)).astype(float)
    y = rng.integers(0, n_classes, size=14)
    y[:n_classes] = np.arange(n_classes)
    return X, y


#: float32 unit roundoff (the smoothed master's column products)
U32 = 2.0**-24


def smoothed_problem(task, n_stumps=12, C=40.0, seed=0, working_set=None):
    """A :class:`SmoothedProblem` on 160 digits (4 classes, every other pixel) with
    ``n_stumps`` random stumps and random weights, on the Python steps (``compiled =
    False``): the common state the compiled-vs-Python and line-search tests start from."""
    X, y = load_digits(return_X_y=True)
    keep = y < 4
    X, y = X[keep][:160, ::2], y[keep][:160]
    if isinstance(task, BinaryTask):
        y = np.where(y < 2, -1, 1)
    task = task.bind(X, y)
    weak = DecisionStump()
    prep = weak.prepare(X)
    store = ColumnStore(weak.hypotheses_class, X.shape[1], X.shape[0], task.n_slots)
    rng = np.random.default_rng(seed)
    sm = SmoothedProblem(task, store, C, working_set=working_set, tol=0.0)
    sm.compiled = False
    for _ in range(n_stumps):
        cand, _ = weak.best(prep, rng.normal(size=(len(y), task.n_slots)))
        h = cand.take([0])
        sm.add_columns(store.add(h, h.evaluate(X), [np.arange(task.n_slots)]))
    sm.set_weights(rng.random(store.n_columns) * (rng.random(store.n_columns) < 0.6))
    return sm


# -- the restricted LP of a one-hot task (StructBoost certificate tests) ----------------
#: scipy's HiGHS solves these LPs to its default feasibility / optimality tolerance 1e-7
#: (relative to unit costs); a bound checked against an LP optimum allows that much
LP_TOL = 1e-6


def restricted_lp_optimum(H, col_hyp, col_slot, codes, C, gamma, losses=None):
    """min 1'w + C/m 1'xi over the given (classifier, slot) columns, every (i, y != y_i)
    row written out and solved by scipy's linprog: w.dPsi_i(y) + xi_i >= Delta_i(y) with
    dPsi_i(y)_(h, s) = H[h, i] (gamma[y_i, s] - gamma[y, s]) and Delta = ``losses``
    (m, K); one-hot tasks pass ``gamma = eye(K)`` and the 0/1 loss (``losses=None``)."""
    m, K = len(codes), gamma.shape[0]
    rows, rhs = [], []
    for i in range(m):
        for k in range(K):
            if k == codes[i]:
                continue
            coef = H[col_hyp, i] * (gamma[codes[i], col_slot] - gamma[k, col_slot])
            slack = np.zeros(m)
            slack[i] = 1.0
            rows.append(np.concatenate([coef, slack]))
            rhs.append(1.0 if losses is None else losses[i, k])
    cost = np.concatenate([np.ones(len(col_hyp)), np.full(m, C / m)])
    res = linprog(cost, A_ub=-np.array(rows), b_ub=-np.array(rhs), bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def check_every_record(task, res, X, C):
    """Each record's bound lies below, and its objective above, the restricted LP
    optimum over the columns that iteration held."""
    H = res.hypotheses.evaluate(X)
    one_hot = np.eye(task.n_slots)
    for rec in res.history:
        n = rec["n_columns"]
        opt = restricted_lp_optimum(H, res.column_hyp[:n], res.column_slot[:n], task.y_, C, one_hot)
        assert rec["dual_bound"] <= opt + LP_TOL * max(1.0, opt)
        assert rec["objective"] >= opt - LP_TOL * max(1.0, opt)
        assert rec["gap"] >= (rec["objective"] - opt) / rec["objective"] - LP_TOL


def fit_multiclass_cg(X, y, C, **kw):
    """Column generation to convergence (eps_cg 1e-9) with the fast master and exact
    stumps on a multi-class task: ``(task, result)``."""
    task = MultiClassTask().bind(X, y)
    return task, fit_structboost(
        task,
        DecisionStump(),
        C=C,
        master="fast",
        eps_cg=1e-9,
        max_iter=1000,
        rng=np.random.default_rng(0),
        **kw,
    )


def square_video(xs, ys, size, side, seed=0, block=4, bg_offset=0.0, bg_scale=1.0, noise=0.0):
    """Tracking test videos: a binary-textured square (``side`` px, cells of 2 px, grey
    0.1 / 0.9) at ``(xs[k], ys[k])`` in frame ``k`` over blocky random clutter (cells of
    ``block`` px, grey ``bg_offset + bg_scale * U(0, 1)``), plus Gaussian noise of std ``noise``;
    uint8 frames and the (n, 4) ``(x, y, w, h)`` ground truth."""
    rng = np.random.default_rng(seed)
    H, W = size
    cells = np.kron(rng.random((H // block, W // block)), np.ones((block, block)))
    bg = bg_offset + bg_scale * cells
    tex = np.kron(rng.random((side // 2, side // 2)) > 0.5, np.ones((2, 2))) * 0.8 + 0.1
    frames, boxes = [], []
    for x, y in zip(np.asarray(xs, dtype=int), np.asarray(ys, dtype=int), strict=True):
        f = bg.copy()
        f[y : y + side, x : x + side] = tex
        if noise:
            f = f + noise * rng.normal(size=f.shape)
        frames.append((np.clip(f, 0, 1) * 255).astype(np.uint8))
        boxes.append([x, y, side, side])
    return frames, np.array(boxes, dtype=float)
