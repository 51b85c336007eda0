"""Totally-corrective multi-class boosting: MultiBoost-cw and MultiBoost.

* :class:`MultiBoostCW` -- class-wise weak learners (Lin, Shen, van den Hengel, Suter,
  ACCV 2012): every column-generation iteration adds K weak learners, one per class, from
  the dual (4); the master (2) is solved by fast coordinate descent (FCD, [Lin2012 Alg. 2]).
* :class:`MultiBoost` -- one weak learner shared by all classes (Shen & Hao, CVPR 2011;
  [Lin2012 eq. 6]), master solved by L-BFGS-B or FCD.

Both minimise ``||w||_1 + C/p sum_i sum_{y != y_i} exp(F_y(x_i) - F_{y_i}(x_i))``; the
estimators are thin shells over :func:`maxmargin.solvers.multiboost.fit_multiboost`.
"""

from __future__ import annotations

from maxmargin._registry import register
from maxmargin._validation import NON_NEGATIVE, POSITIVE, POSITIVE_INT, Options, store_params
from maxmargin.learners._boosting import MultiClassBoosting
from maxmargin.solvers.multiboost import fit_multiboost

__all__ = ["MultiBoost", "MultiBoostCW"]


def _init(solver):
    """The estimators' ``__init__``: the same parameters, ``solver``'s default their own."""

    def __init__(
        self,
        *,
        C: float = 1e4,
        max_iter: int = 100,
        weak_learner="stump",
        solver: str = solver,
        tau_max: int = 2,
        eps: float = 0.1,
        large_C: bool = False,
        tol: float = 1e-6,
        eps_cg: float = 1e-6,
        max_time: float | None = None,
        random_state=None,
        verbose: int = 0,
        callback=None,
    ):
        store_params(self, locals())

    return __init__


class _ColumnGenerationBoost(MultiClassBoosting):
    """Column generation ([Lin2012 Alg. 1]) over problem (2); ``_shared`` picks [Lin2012 eq. 6]
    over [Lin2012 eq. 4]."""

    _shared = False

    _parameter_constraints = {
        **MultiClassBoosting._parameter_constraints,
        "C": [POSITIVE],
        "solver": [Options("fcd", "lbfgs")],
        "tau_max": [POSITIVE_INT],
        "eps": [NON_NEGATIVE],
        "large_C": [bool],
        "tol": [NON_NEGATIVE],
        "eps_cg": [NON_NEGATIVE],
    }

    def _solver_options(self, rng) -> dict:
        if self.solver == "fcd":
            return {
                "eps": float(self.eps),
                "tau_max": int(self.tau_max),
                "rng": rng,
                "large_C": bool(self.large_C),
            }
        return {}

    def _boost(self, X, y, K, weak, builder, record):
        return fit_multiboost(
            X,
            y,
            K,
            weak,
            builder,
            record,
            C=float(self.C),
            solver=self.solver,
            shared=self._shared,
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            eps_cg=float(self.eps_cg),
            **self._solver_options(self._rng()),
        )


_PARAMS_DOC = """
    Parameters
    ----------
    C : float, default=1e4
        Weight of the exponential loss (2); the papers pick it in [1e2, 1e5].
    max_iter : int, default=100
        Column-generation iterations.
    weak_learner : str or WeakLearner, default="stump"
        Name in :data:`maxmargin.weak.WEAK_LEARNERS` or an instance.
    solver : {"fcd", "lbfgs"}, default=SOLVER
        Master solver: FCD (needs weak-learner outputs in {-1, 0, +1}) or L-BFGS-B.
    tau_max : int, default=2
        FCD working-set iterations per master solve (1: stage-wise).
    eps : float, default=0.1
        FCD tolerance on the KKT violation, [Lin2012 eqs. 17-18] (0.1 in the paper).
    large_C : bool, default=False
        Use the large-C update (13) instead of (12) (when V- > 0).
    tol : float, default=1e-6
        Stop when the relative change of the objective is below ``tol`` ([Lin2012 Alg. 1 l. 7]).
    eps_cg : float, default=1e-6
        Stop when no weak learner has dual gain above ``1 + eps_cg`` (optimality).
    max_time : float or None, default=None
        Wall-clock limit in seconds.
    random_state : int, RandomState, Generator or None, default=None
        Random picks of FCD ([Lin2012 Alg. 2 line 6]).
    verbose : int, default=0
        Print one line per iteration when > 0.
    callback : callable or None, default=None
        Called with each iteration's record (the dict appended to ``history_``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    hypotheses_ : Hypotheses
        The weak learners of the model.
    coef_, var_hyp_, var_out_ : ndarray of shape (n_vars,)
        Weight of every variable, its weak learner (-1: the constant 1) and class.
    path_iter_, path_var_, path_value_ : ndarray
        Weight changes per iteration (for :meth:`staged_predict`).
    history_ : list of dict
        Per iteration: objective, train_error, val_error (with ``eval_set``), n_weak,
        gain, t_weak, t_master, solver statistics, t_total (seconds since fit started);
        ``dual_bound``/``gap`` are nan (no certificate for the exponential loss yet).
    n_iter_ : int
        Number of iterations run.
    objective_ : float
        Final objective of problem (2).
    converged_ : bool
        True when the column-generation test (no gain above ``1 + eps_cg``) was met.
    n_features_in_ : int
        Number of features seen in ``fit``.
"""

_REFERENCES = """
    References
    ----------
    Lin, Shen, van den Hengel & Suter, ACCV 2012 [Lin2012] (equation numbers above are
    theirs); Shen & Hao, CVPR 2011 [Shen2011] (full citations: docs/references.md).
    """


@register
class MultiBoostCW(_ColumnGenerationBoost):
    __doc__ = (
        """MultiBoost-cw: class-wise weak learners, master (2) by FCD (Lin et al., ACCV 2012).

    ``MultiBoostCW(C=1e8, tau_max=1)`` is the stage-wise variant CW-1 of the paper.
    """
        + _PARAMS_DOC.replace("SOLVER", '"fcd"')
        + """
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin.learners.multiboost import MultiBoostCW
    >>> X, y = load_iris(return_X_y=True)
    >>> MultiBoostCW(max_iter=20, random_state=0).fit(X, y).score(X, y) > 0.9
    True
    """
        + _REFERENCES
    )

    __init__ = _init(solver="fcd")


@register
class MultiBoost(_ColumnGenerationBoost):
    __doc__ = (
        """MultiBoost: one weak learner shared by all classes (Shen & Hao, CVPR 2011).

    Each iteration adds the weak learner of [Lin2012 eq. 6] with K new weights; the master is
    solved by L-BFGS-B (as in the papers) or by FCD (``solver="fcd"``).
    """
        + _PARAMS_DOC.replace("SOLVER", '"lbfgs"')
        + """
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from maxmargin import MultiBoost
    >>> X, y = load_iris(return_X_y=True)
    >>> MultiBoost(max_iter=20, random_state=0).fit(X, y).score(X, y) > 0.9
    True
    """
        + _REFERENCES
    )

    _shared = True

    __init__ = _init(solver="lbfgs")
