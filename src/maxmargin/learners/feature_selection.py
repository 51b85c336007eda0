"""Embedded forward feature selection by column generation (seed 002, Sec. 2.4)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from maxmargin._registry import register
from maxmargin._validation import (
    MONITOR_PARAMS,
    POSITIVE,
    Interval,
    Options,
    store_params,
    validate_params,
)
from maxmargin.learners._binary import SparseInput, fit_classes
from maxmargin.learners._persist import Persistent, fitted
from maxmargin.solvers.feature_selection import SelectionOptions, select_features

__all__ = ["ForwardFeatureSelector"]


@register
class ForwardFeatureSelector(SparseInput, Persistent, SelectorMixin, BaseEstimator):
    """Forward feature selection by column generation for linear classifiers.

    Starting from no feature, solve the classifier on the selected columns, then add the
    column(s) whose dual constraint is most violated, i.e. with the largest score
    ``|s_j| = |sum_i a_i y_i x_ij|`` where ``a_i = -C l'(m_i)`` are the restricted
    problem's dual variables ([Sun2012 eq. 2.85]; for the hinge, the SVM multipliers).
    Equivalently the coordinate of largest (sub-)gradient of the full problem
    ([Sun2012 eqs. 2.80-2.81]).  Problems (scikit-learn's ``C``, ``m_i = y_i f(x_i)``):

    * ``penalty="l2"``: ``1/2||w||^2 + C sum_i loss(m_i)``, intercept as a constant
      column (regularised, as liblinear);
    * ``penalty="l1"``: ``||w||_1 + C sum_i loss(m_i)``, unpenalised intercept
      (Sec. 2.4.2: a column j enters only if ``|s_j| > 1``, [Sun2012 eq. 2.90]).

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
        on dna and mnist1000 (benchmarks/results/feature_selection_splits_path.json).
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
        **MONITOR_PARAMS,
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
        store_params(self, locals())

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
        if self.loss == "squared_hinge" and self.penalty != "l2":
            raise ValueError("loss='squared_hinge' is available with penalty='l2' only")
        X, y = validate_data(self, X, y, accept_sparse="csc", dtype=np.float64)
        yi = fit_classes(self, y)
        k = len(self.classes_)
        d = X.shape[1]
        limit, targets = self._targets(d)
        budget = self.n_features_to_select is not None or self.k_path is not None
        ys = [np.where(yi == c, 1.0, -1.0) for c in ([1] if k == 2 else range(k))]
        res = select_features(
            X,
            ys,
            float(self.C),
            self.loss,
            self.penalty,
            targets=targets,
            limit=limit,
            budget=budget,
            options=SelectionOptions(
                features_per_step=(
                    0.1 if self.features_per_step == "auto" else self.features_per_step
                ),
                tol=self.tol,
                inner_tol=self.inner_tol,
                pricing_tol=self.pricing_tol,
                pricing_epochs=self.pricing_epochs,
                overselect=self.overselect,
                backward_step=self.backward_step,
                max_time=self.max_time,
            ),
            verbose=self.verbose,
            callback=self.callback,
        )
        order, sols, objective, dual = res.order, res.sols, res.objective, res.dual
        path, removed, history, it = res.path, res.removed, res.history, res.n_iter
        self.selected_by_ = res.selected_by
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
        tags.target_tags.required = True
        return tags
