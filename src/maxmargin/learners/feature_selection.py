"""Embedded forward feature selection by column generation (seed 002, Sec. 2.4)."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import (
    CALLBACK,
    MAX_TIME,
    POSITIVE,
    VERBOSE,
    Interval,
    Options,
    validate_params,
)
from maxmargin.exceptions import warn_interrupted
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.solvers.feature_selection import (
    NEWTON_MAX_COLUMNS,
    SquaredHingeNewton,
    SquaredHingeRounds,
    column_scores,
    dual_value,
    restricted_data,
    restricted_data_drop,
    solve_restricted,
)
from maxmargin.solvers.svm import DENSE_FILL

__all__ = ["ForwardFeatureSelector"]

#: relative duality gap of the backward pass's restricted problems (its weight ranking),
#: the last one solved to ``inner_tol``
_BACKWARD_TOL = 1e-2
#: squared hinge: Newton steps per restricted solve in the pricing rounds not solved to
#: ``inner_tol`` (their multipliers only rank the candidate columns); the backward
#: rounds and the set the backward pass starts from are solved to their tolerance
_NEWTON_ROUND_STEPS = 1
#: squared hinge on dense data: the restricted problems by the compiled rounds
#: (:class:`SquaredHingeRounds`, a column buffer grown in place, one compiled call per
#: solve with the pricing product); False: the NumPy :class:`SquaredHingeNewton` on data
#: formed per round (the reference the tests compare with)
_COMPILED_ROUNDS = True


def _drop_columns(warm, keep):
    """Remove the selected columns not in the mask ``keep`` from a restricted problem's
    warm start (the multipliers stay valid; the weights lose those entries)."""
    nt = warm.get("newton")
    if nt is not None:  # squared hinge: the Newton solver's weights and Gram matrix
        nt.drop(keep)
    w = warm.get("w_full")
    if w is not None:
        warm["w_full"] = np.append(w[:-1][keep], w[-1])
    z = warm.get("z")
    if z is not None:  # L1 logistic: (u, v, b)
        k = (z.shape[0] - 1) // 2
        warm["z"] = np.concatenate([z[:k][keep], z[k : 2 * k][keep], z[-1:]])


@register
class ForwardFeatureSelector(Persistent, SelectorMixin, BaseEstimator):
    """Forward feature selection by column generation for linear classifiers.

    Starting from no feature, solve the classifier on the selected columns, then add the
    column(s) whose dual constraint is most violated, i.e. with the largest score
    ``|s_j| = |sum_i a_i y_i x_ij|`` where ``a_i = -C l'(m_i)`` are the restricted
    problem's dual variables (thesis eq. 2.85; for the hinge, the SVM multipliers).
    Equivalently the coordinate of largest (sub-)gradient of the full problem
    (eq. 2.80-2.81).  Problems (scikit-learn's ``C``, ``m_i = y_i f(x_i)``):

    * ``penalty="l2"``: ``1/2||w||^2 + C sum_i loss(m_i)``, intercept as a constant
      column (regularised, as liblinear);
    * ``penalty="l1"``: ``||w||_1 + C sum_i loss(m_i)``, unpenalised intercept
      (Sec. 2.4.2: a column j enters only if ``|s_j| > 1``, eq. 2.90).

    Stopping rule (when ``n_features_to_select`` is None): L1 -- no violated dual
    constraint, ``max_j |s_j| <= 1 + tol``, at which point the selected problem's optimum
    *is* the optimum over all features; L2 -- the restricted dual variables are feasible
    for the full dual, whose value is the restricted one minus ``1/2 sum_{j unselected}
    s_j^2``, so ``(objective - dual) / objective <= tol`` bounds the suboptimality of the
    selected model for the full problem.  Every step records that gap in ``history_``.

    With more than two classes, one-vs-rest problems share the selected columns: a
    column's score is ``sqrt(sum_k s_kj^2)`` (L2, the sum of the per-class gap terms) or
    ``max_k |s_kj|`` (L1).

    Parameters
    ----------
    n_features_to_select : int, float in (0, 1] or None, default=None
        Stop after this many features (a float: that fraction of the features); None:
        the stopping rule above.
    loss : {"hinge", "squared_hinge", "logistic"}, default="hinge"
        ``"squared_hinge"`` (L2 only): ``max(0, 1 - m)^2``, LinearSVC's loss; its
        restricted problems (all classes together) by a finite Newton method on dense data
        of at most ``NEWTON_MAX_COLUMNS`` (400) columns (compiled rounds on a column
        buffer grown in place, ``SquaredHingeRounds``), one Newton step in the pricing
        rounds short of ``inner_tol``, to tolerance in the others (backward rounds
        included); else dual CD.  ``k_path=(5, 10, 20, 40, 80), overselect=3, loss="squared_hinge",
        backward_step=0.2`` meets RFE's accuracy at every k in under a tenth of its time
        on dna and mnist1000 (benchmarks/NOTEBOOK.md).
    penalty : {"l2", "l1"}, default="l2"
    C : float, default=1.0
    features_per_step : "auto", int or float in (0, 1), default="auto"
        Columns added per round (the highest scores): an int, that many; a float ``f``,
        ``ceil(f * n_selected)`` (at least one: one per round while fewer than ``1/f``
        are selected, then a geometric growth like RFE's ``step``, which keeps the
        number of rounds logarithmic in the budget); ``"auto"`` is ``0.1``.
    tol : float, default=1e-3
        See the stopping rule.
    inner_tol : float, default=1e-7
        Accuracy of the restricted problem of the last round (dual CD: relative duality
        gap; L-BFGS: projected-gradient tolerance; the LP is solved exactly).
    pricing_tol : float, default=0.1
        Accuracy of the restricted problems of the other rounds, whose dual variables
        only rank the columns: ``min(pricing_tol, max(inner_tol, gap / 10))`` with
        ``gap`` the last round's relative full-problem gap (any dual point gives a valid
        bound, so the recorded gaps stay valid).
    pricing_epochs : int or None, default=5
        L2 hinge: rounds solved at ``pricing_tol`` stop after at most this many dual CD
        epochs (warm started from the last round's multipliers; None: no cap).  The
        last round and rounds nearer the stopping rule are solved fully.
    overselect : float >= 1, default=1.0
        With a budget ``k = n_features_to_select``: forward selection runs to
        ``ceil(overselect * k)`` features (at most all), then a backward pass removes,
        per round, the ``ceil(0.1 * n_selected)`` selected columns (at least one, at
        most down to k) of smallest weight norm ``sqrt(sum_c w_cj^2)`` (over the
        one-vs-rest problems) of the restricted problem, re-solved (warm started, to a
        relative gap of ``min(pricing_tol, 1e-2)``, not priced) after each removal,
        until ``k`` remain -- RFE's elimination (Guyon et al. 2002) on the
        over-selected columns.  Of the forward set of k columns (met on the way and
        solved to ``inner_tol``) and the backward pass's (solved to ``inner_tol``), the
        one with the smaller restricted objective is kept (``selected_by_``).  The
        sets for different k are then not nested.  1.0: no backward pass.  Ignored
        without a budget.
    k_path : sequence of int or None, default=None
        Feature counts whose sets one fit records (``path_``, :meth:`get_support_at`):
        forward selection runs to ``ceil(overselect * max(k_path))`` columns, its rounds
        landing on every k (solved to ``inner_tol`` there; when that is all the columns,
        the rounds after ``max(k_path)`` add every remaining column at once), then one
        backward pass runs down to ``min(k_path)``, also landing on every k; per k the
        forward or the backward set of smaller restricted objective is recorded (the
        forward prefixes without ``overselect``).  ``n_features_to_select`` must be one
        of them (None: the largest); the selector's support is its set.
    backward_step : float in (0, 1), default=0.1
        Fraction of the selected columns removed per backward round (at least one).
    max_time : float or None
    verbose : int, default=0
    callback : callable or None

    Attributes
    ----------
    support_ : ndarray of bool
    order_ : ndarray of int
        Selected column indices in the order added.
    coef_ : ndarray (1 or n_classes, n_features)
        Zero outside the support.
    intercept_ : ndarray
    classes_, objective_, dual_objective_ : ndarray, float, float
    history_ : list of dict
        Per round: ``iteration``, ``n_selected``, ``objective``, ``dual_bound``,
        ``gap``, ``max_violation``, ``t_total``, ``phase`` -- ``"forward"`` or
        ``"backward"``.
    removed_ : ndarray of int
        The columns the backward pass removed, in the order removed (empty without one).
    selected_by_ : str
        ``"backward"`` if the backward pass's set was kept, else ``"forward"``.
    path_ : list of dict
        With ``k_path``, per k (ascending) a dict with ``k``, ``columns``, ``objective``
        (the restricted objective) and ``selected_by`` (empty without ``k_path``).
    n_iter_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.svm import LinearSVC
    >>> from maxmargin import ForwardFeatureSelector
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> pipe = make_pipeline(StandardScaler(), ForwardFeatureSelector(n_features_to_select=5),
    ...                      LinearSVC()).fit(X, y)
    >>> int(pipe[1].get_support().sum()), bool(pipe.score(X, y) > 0.95)
    (5, True)

    References
    ----------
    Thesis seed 002, Sec. 2.4.  I. Guyon, A. Elisseeff, "An introduction to variable and
    feature selection", JMLR 3 (2003) (the filter / wrapper / embedded taxonomy, RFE).
    A. Demiriz, K. P. Bennett, J. Shawe-Taylor, "Linear programming boosting via column
    generation", Machine Learning 46 (2002) (column generation for the L1 hinge LP).
    I. Guyon, J. Weston, S. Barnhill, V. Vapnik, "Gene selection for cancer classification
    using support vector machines", Machine Learning 46 (2002) (RFE: the backward pass's
    smallest-weight elimination).  S. S. Keerthi, D. DeCoste, "A modified finite Newton
    method for fast solution of large scale linear SVMs", JMLR 6 (2005) (the squared-hinge
    restricted problems).
    """

    _parameter_constraints = {
        "n_features_to_select": [
            None,
            Interval(int, 1, None, closed="left"),
            Interval(float, 0, 1, closed="right"),
        ],
        "loss": [Options("hinge", "squared_hinge", "logistic")],
        "penalty": [Options("l2", "l1")],
        "C": [POSITIVE],
        "features_per_step": [
            Options("auto"),
            Interval(int, 1, None, closed="left"),
            Interval(float, 0, 1, closed="neither"),
        ],
        "tol": [POSITIVE],
        "inner_tol": [POSITIVE],
        "pricing_tol": [POSITIVE],
        "pricing_epochs": [None, Interval(int, 1, None, closed="left")],
        "overselect": [Interval(float, 1, None, closed="left")],
        "k_path": [None, list, tuple, np.ndarray],
        "backward_step": [Interval(float, 0, 1, closed="neither")],
        "max_time": MAX_TIME,
        "verbose": VERBOSE,
        "callback": CALLBACK,
    }

    def __init__(
        self,
        *,
        n_features_to_select=None,
        loss="hinge",
        penalty="l2",
        C=1.0,
        features_per_step="auto",
        tol=1e-3,
        inner_tol=1e-7,
        pricing_tol=0.1,
        pricing_epochs=5,
        overselect=1.0,
        k_path=None,
        backward_step=0.1,
        max_time=None,
        verbose=0,
        callback=None,
    ):
        self.n_features_to_select = n_features_to_select
        self.loss = loss
        self.penalty = penalty
        self.C = C
        self.features_per_step = features_per_step
        self.tol = tol
        self.inner_tol = inner_tol
        self.pricing_tol = pricing_tol
        self.pricing_epochs = pricing_epochs
        self.overselect = overselect
        self.k_path = k_path
        self.backward_step = backward_step
        self.max_time = max_time
        self.verbose = verbose
        self.callback = callback

    def _targets(self, d):
        """(the budget ``limit``, the sorted feature counts to record) for d features."""
        limit = self.n_features_to_select
        if isinstance(limit, float):
            limit = max(1, round(limit * d))
        if self.k_path is None:
            limit = d if limit is None else min(int(limit), d)
            return limit, [limit]
        ks = list(self.k_path)
        if not ks or any(
            isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks
        ):
            raise ValueError(f"k_path must be a non-empty sequence of integers >= 1, got {ks!r}")
        targets = sorted({min(int(k), d) for k in ks})
        if limit is None:
            limit = targets[-1]
        limit = min(int(limit), d)
        if limit not in targets:
            raise ValueError(
                f"n_features_to_select ({limit}) must be one of k_path {targets} (or None: "
                "the largest)"
            )
        return limit, targets

    def fit(self, X, y):
        """Select features of X (dense or CSR) for the class labels y."""
        validate_params(self)
        X, y = validate_data(self, X, y, accept_sparse="csc", dtype=np.float64)
        check_classification_targets(y)
        if self.loss == "squared_hinge" and self.penalty != "l2":
            raise ValueError("loss='squared_hinge' is available with penalty='l2' only")
        self.classes_, yi = np.unique(y, return_inverse=True)
        k = len(self.classes_)
        if k < 2:
            raise ValueError(f"y has {k} class; ForwardFeatureSelector needs at least 2 classes")
        d = X.shape[1]
        limit, targets = self._targets(d)
        budget = self.n_features_to_select is not None or self.k_path is not None
        ys = [np.where(yi == c, 1.0, -1.0) for c in ([1] if k == 2 else range(k))]
        C, loss, penalty = float(self.C), self.loss, self.penalty
        warms = [{} for _ in ys]
        order: list[int] = []
        history: list[dict] = []
        t0 = time.perf_counter()
        it = 0
        inner = float(self.inner_tol)

        Y = np.column_stack(ys)
        step = 0.1 if self.features_per_step == "auto" else self.features_per_step

        data = None  # the last round's L2 data (restricted_data)

        # squared hinge on dense data of few columns: the one-vs-rest problems solved
        # together by the Newton method, its state (Gram matrices) kept across rounds
        newton = [None]
        # ... or by the compiled rounds on a column buffer grown in place (dense X)
        rounds = [None]
        colnnz = None
        if loss == "squared_hinge" and not sp.issparse(X) and _COMPILED_ROUNDS:
            colnnz = np.count_nonzero(X, axis=0)

        def compiled_rounds_apply():
            # as restricted_data decides dense data (the constant column included) and the
            # Newton solver's column limit
            if colnnz is None or len(order) + 1 > NEWTON_MAX_COLUMNS:
                return False
            n = X.shape[0]
            return int(colnnz[order].sum()) + n >= DENSE_FILL * n * (len(order) + 1)

        def compiled_round(tol_k, price, rank_only):
            st = rounds[0]
            if st is None:
                w0 = [wm.get("w_full") for wm in warms]
                W0 = None
                if all(w is not None and w.shape[0] == len(order) + 1 for w in w0):
                    W0 = np.column_stack(w0)
                cap = min(d, reach, NEWTON_MAX_COLUMNS - 1)
                st = rounds[0] = SquaredHingeRounds(X, Y, C, cap, cols=order, W0=W0)
            elif st.k < len(order):
                st.add(order[st.k :])
            cap = _NEWTON_ROUND_STEPS if rank_only and tol_k > inner else 100
            W, A, P, _, S = st.solve(tol=tol_k, max_iter=cap, price=price, certify=price)
            sols = []
            for j, wm in enumerate(warms):  # the per-class warm starts, for dual CD
                wm["a"], wm["w_full"] = A[:, j], W[:, j]
                sols.append((W[:-1, j], float(W[-1, j]), A[:, j], float(P[j])))
            return sols, S

        def newton_round(Xa, tol_k, cap):
            if newton[0] is None:
                w0 = [wm.get("w_full") for wm in warms]
                W0 = None if any(w is None for w in w0) else np.column_stack(w0)
                newton[0] = SquaredHingeNewton(Y, C, W0=W0)
            W, A, P, _ = newton[0].solve(Xa.M, tol=tol_k, max_iter=100 if cap is None else cap)
            sols = []
            for j, wm in enumerate(warms):  # the per-class warm starts, for dual CD
                wm["a"], wm["w_full"] = A[:, j], W[:, j]
                sols.append((W[:-1, j], float(W[-1, j]), A[:, j], float(P[j])))
            return sols

        def evaluate(tol_k, price=True, rank_only=False):
            # rank_only: a pricing round whose multipliers only rank the candidates (the
            # squared hinge's Newton solves take one step there)
            nonlocal data
            S = None
            if compiled_rounds_apply():
                sols, S = compiled_round(tol_k, price, rank_only)
                data = None  # formed afresh if another solver takes over
                newton[0] = None
            else:
                rounds[0] = None
                sols = solve_round(tol_k, rank_only)
            objective = sum(s[3] for s in sols)
            if not price:  # a backward round: only the weights are needed
                return sols, objective, -np.inf, None, None, np.nan, np.inf
            # pricing: the scores of every column for every class in one matrix product
            if S is None:
                S = column_scores(X, Y, np.column_stack([s[2] for s in sols])).T
            dual = 0.0
            for yb, (_, _, a, _), s in zip(ys, sols, S):
                s_all = np.append(s, a @ yb) if penalty == "l2" else s
                dual += dual_value(a, yb, s_all, C, loss, penalty)
            free = np.ones(d, dtype=bool)
            free[order] = False
            score = np.sqrt((S * S).sum(0)) if penalty == "l2" else np.abs(S).max(0)
            score = np.where(free, score, -np.inf)
            viol = float(score.max()) if free.any() else 0.0
            rel = (objective - dual) / max(abs(objective), 1e-12)
            return sols, objective, dual, free, score, viol, rel

        def solve_round(tol_k, rank_only):
            nonlocal data
            # the L2 problems' data (constant column, dual CD layout) formed once per
            # round for every class, grown from the last round's
            Xa = None
            if penalty == "l2":
                if data is None or data[0].M.shape[1] != len(order) + 1:
                    data = restricted_data(X, order, data)  # else formed for these columns
                Xa = data[0]
                Xs = Xa.M[:, :-1]  # the solvers read Xa; Xs gives the shape
            else:
                Xs = X[:, order]
            cap = self.pricing_epochs if self.pricing_tol <= tol_k and inner < tol_k else None
            if loss == "squared_hinge" and Xa.dense and Xa.M.shape[1] <= NEWTON_MAX_COLUMNS:
                # pricing rounds short of inner_tol: one Newton step (their multipliers
                # only rank the candidates); backward rounds to their tolerance
                steps = _NEWTON_ROUND_STEPS if rank_only and tol_k > inner else None
                sols = newton_round(Xa, tol_k, steps)
            else:
                newton[0] = None  # dual CD (sparse or many columns), warm started per class
                sols = [
                    solve_restricted(
                        Xs, yb, C, loss, penalty, tol=tol_k, warm=wm, Xa=Xa, max_iter=cap
                    )
                    for yb, wm in zip(ys, warms)
                ]
            return sols

        def should_stop(free, viol, rel, reach):
            if len(order) >= reach or not free.any():
                return True
            if not budget:
                if penalty == "l1" and viol <= 1.0 + self.tol:
                    return True
                if penalty == "l2" and rel <= self.tol:
                    return True
            return False

        # with a budget and overselect > 1: forward to ``reach`` columns (the rounds land
        # on every target on the way, where the forward set is kept as a candidate), then
        # backward to the smallest target, landing on every target below ``reach``
        backward = budget and self.overselect > 1.0
        reach = targets[-1]
        if backward:
            reach = min(d, int(np.ceil(float(self.overselect) * targets[-1])))
        tset = set(targets)
        # the backward rounds' tolerance (their weights rank the columns)
        bw_tol = max(inner, min(float(self.pricing_tol), _BACKWARD_TOL))
        rel_prev = np.inf
        kept = None  # (order, sols, objective, dual, it) of the last recorded round
        # candidates per target: {k: (order, sols or None, objective, dual)} -- sols kept
        # for the budget only
        fwd_cand: dict = {}
        bwd_cand: dict = {}
        removed: list[int] = []
        timed_out = False

        def record(sols, objective, dual, viol, rel, phase):
            nonlocal kept
            rec = {
                "iteration": it,
                "n_selected": len(order),
                "objective": float(objective),
                "dual_bound": float(dual),
                "gap": float(rel),
                "max_violation": viol,
                "t_total": time.perf_counter() - t0,
                "phase": phase,
            }
            history.append(rec)
            kept = (list(order), sols, objective, dual, it)
            n_sel = len(order)
            if budget and n_sel in tset:
                cand = fwd_cand if phase == "forward" else bwd_cand
                cand[n_sel] = (list(order), sols if n_sel == limit else None, objective, dual)
            if self.verbose:
                print(
                    f"[ffs] {phase:8s} {len(order):5d} features objective {objective:.6g} "
                    f"gap {rel:.3g}",
                    flush=True,
                )
            if self.callback is not None:
                self.callback(rec)
            return rec

        try:
            while True:
                # restricted problems are solved as accurately as the selection needs: a tenth
                # of the last full-problem gap (any dual point gives a valid bound), at most
                # pricing_tol, and to inner_tol before stopping
                tol_k = float(min(self.pricing_tol, max(inner, 0.1 * rel_prev)))
                # the forward candidates (compared with the backward pass's sets by their
                # objective) are solved to inner_tol, the set the backward pass starts
                # from to its tolerance, the last set to inner_tol: where the budget makes
                # that known in advance, directly (no pricing solve first)
                rank_only = True
                if budget and len(order) >= min(reach, d):
                    tol_k = bw_tol if backward and len(order) > targets[-1] else inner
                    rank_only = False
                elif budget and len(order) in tset:
                    tol_k = inner
                    rank_only = False
                sols, objective, dual, free, score, viol, rel = evaluate(tol_k, rank_only=rank_only)
                stop = should_stop(free, viol, rel, reach)
                need = inner if stop else tol_k
                if stop and backward and len(order) > targets[-1]:
                    need = bw_tol
                if need < tol_k:
                    sols, objective, dual, free, score, viol, rel = evaluate(need)
                    stop = should_stop(free, viol, rel, reach)
                rel_prev = rel
                rec = record(sols, objective, dual, viol, rel, "forward")
                if stop:
                    break
                if self.max_time is not None and rec["t_total"] >= self.max_time:
                    timed_out = True
                    break
                if penalty == "l1":  # only violated constraints may enter (eq. 2.90)
                    score = np.where(score > 1.0, score, -np.inf)
                    if not np.isfinite(score.max()):
                        break
                n_left = int(np.isfinite(score).sum())
                if isinstance(step, int):
                    m = step
                else:
                    m = max(1, int(np.ceil(step * len(order))))
                goal = min([t for t in targets if t > len(order)] + [reach])
                if goal == reach == d and len(order) >= targets[-1]:
                    m = d  # the backward pass starts from every column: no order to find
                m = min(m, goal - len(order), n_left)
                new = np.argsort(-score, kind="stable")[:m]
                order.extend(int(j) for j in new)
                it += 1
            # backward pass (from ``reach``; not after an early end, e.g. L1 with no
            # violated column left): remove the columns of smallest weight norm,
            # re-solving after each removal, down to the smallest target
            backward = backward and len(order) >= reach
            while backward and len(order) > targets[0] and not timed_out:
                Wc = np.array([s[0] for s in sols])
                norm2 = (Wc * Wc).sum(0)
                # a tenth of the selected columns per round (at least one), as RFE's step,
                # landing on every target
                below = max(t for t in targets if t < len(order))
                frac = float(self.backward_step)
                m = min(len(order) - below, max(1, int(np.ceil(frac * len(order)))))
                drop = np.argsort(norm2, kind="stable")[:m]
                keep = np.ones(len(order), dtype=bool)
                keep[drop] = False
                removed.extend(order[j] for j in drop)
                order = [c for c, k_ in zip(order, keep) if k_]
                for wm in warms:
                    _drop_columns(wm, keep)
                if newton[0] is not None:
                    newton[0].drop(keep)
                if rounds[0] is not None:
                    rounds[0].drop(keep)
                data = None if data is None else restricted_data_drop(data, keep)
                it += 1
                at = len(order) in tset
                sols, objective, dual, _, _, viol, rel = evaluate(inner if at else bw_tol, price=at)
                rec = record(sols, objective, dual, viol, rel, "backward")
                if self.max_time is not None and rec["t_total"] >= self.max_time:
                    timed_out = True
        except KeyboardInterrupt:
            if kept is None:
                raise  # nothing recorded: nothing to keep
            warn_interrupted(len(history))
        # per target, the better (smaller restricted objective) of the forward and the
        # backward set; without a candidate of the budget's size (stopped early), the
        # last recorded round
        path = []
        final = None
        for t in targets:
            f, b = fwd_cand.get(t), bwd_cand.get(t)
            if f is None and b is None:
                continue
            # the same set reached both ways counts as the forward one
            use_b = b is not None and (f is None or (b[2] < f[2] and sorted(b[0]) != sorted(f[0])))
            c = b if use_b else f
            by = "backward" if use_b else "forward"
            path.append(
                {"k": t, "columns": np.asarray(c[0], dtype=np.int64),
                 "objective": float(c[2]), "selected_by": by}
            )  # fmt: skip
            if t == limit:
                final = (c, by)
        if final is not None:
            (order, sols, objective, dual), self.selected_by_ = final
        else:
            order, sols, objective, dual, it_kept = kept
            if not history or history[-1]["phase"] == "forward":
                it = it_kept
            self.selected_by_ = "forward"
        self.path_ = path if self.k_path is not None else []
        self.removed_ = np.asarray(removed, dtype=np.int64)
        coef = np.zeros((len(ys), d))
        for r, (w, _, _, _) in enumerate(sols):
            coef[r, order] = w
        self.order_ = np.asarray(order, dtype=np.int64)
        self.support_ = np.zeros(d, dtype=bool)
        self.support_[self.order_] = True
        self.coef_ = coef
        self.intercept_ = np.array([s[1] for s in sols])
        self.objective_ = float(objective)
        self.dual_objective_ = float(dual)
        self.history_ = history
        self.n_iter_ = it
        return self

    def get_support_at(self, k, indices=False):
        """The selected set of ``k`` features recorded by a fit with ``k_path`` (``k`` one
        of its entries): a boolean mask over the features, or (``indices=True``) the
        column indices in the order the fit holds them."""
        check_is_fitted(self, "support_")
        for entry in self.path_:
            if entry["k"] == k:
                cols = entry["columns"]
                if indices:
                    return cols.copy()
                mask = np.zeros(self.n_features_in_, dtype=bool)
                mask[cols] = True
                return mask
        have = [e["k"] for e in self.path_]
        raise ValueError(f"no set of {k} features was recorded (k_path gave {have})")

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_

    def decision_function(self, X):
        """Scores of the selected linear model (as a classifier)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        s = np.asarray(X @ self.coef_.T) + self.intercept_
        return s[:, 0] if s.shape[1] == 1 else s

    # -------------------------------------------------------------- persistence
    _saved_meta = (
        *fitted("n_features_in_", "history_", "objective_", "dual_objective_", "n_iter_"),
        ("selected_by_", str, "forward"),
    )
    _saved_arrays = (
        ("classes_", None),
        ("order_", np.int64),
        ("coef_", np.float64),
        ("intercept_", np.float64),
    )

    def _save_extra(self, meta, arrays):
        meta["removed"] = [int(j) for j in self.removed_]
        meta["path"] = [
            {"k": int(e["k"]), "columns": [int(j) for j in e["columns"]],
             "objective": float(e["objective"]), "selected_by": str(e["selected_by"])}
            for e in self.path_
        ]  # fmt: skip

    def _load_extra(self, meta, arrays):
        if self.coef_.shape[1] != self.n_features_in_ or np.any(self.order_ >= self.n_features_in_):
            raise ValueError("model file is inconsistent: weights do not match the features")
        self.removed_ = np.asarray(meta.get("removed", []), dtype=np.int64).reshape(-1)
        if np.any(self.removed_ >= self.n_features_in_) or np.any(self.removed_ < 0):
            raise ValueError("model file is inconsistent: removed columns out of range")
        self.support_ = np.zeros(self.n_features_in_, dtype=bool)
        self.support_[self.order_] = True
        path = []
        for e in meta.get("path", []):
            cols = np.asarray(e["columns"], dtype=np.int64).reshape(-1)
            if cols.size != int(e["k"]) or np.any(cols < 0) or np.any(cols >= self.n_features_in_):
                raise ValueError("model file is inconsistent: a recorded path set is invalid")
            path.append(
                {"k": int(e["k"]), "columns": cols, "objective": float(e["objective"]),
                 "selected_by": str(e["selected_by"])}
            )  # fmt: skip
        self.path_ = path

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags
