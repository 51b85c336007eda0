"""RankSVM: L2-regularised structured output ranking by 1-slack cutting planes.

Blaschko, Mittal & Rahtu, "An O(n log n) cutting plane algorithm for structured output
ranking", GCPR 2014: minimise

    1/2 ||w||^2 + C * xi   s.t.  xi >= sum_{(i,j) in E} omega_ij * hinge_ij(w)  for all nu,

the 1-slack form of [Blaschko2014 eqs. 2-5] (hinge with margin, slack or unit rescaling, ``omega``
the pair weights).  Every round asks the O(n log n) oracle
(:meth:`maxmargin.inference.ranking.PreferenceGraph.most_violated`) for the most violated
constraint; the loop is the shared one of :mod:`maxmargin.solvers.cutting_plane`.
"""

from __future__ import annotations

from maxmargin.inference._threads import RowPieces, resolve_threads
from maxmargin.inference.ranking import PreferenceGraph
from maxmargin.solvers.cutting_plane import Plane, one_slack_cutting_planes
from maxmargin.solvers.monitor import GapMonitor, SSVMResult
from maxmargin.solvers.qp_master import OneSlackQPMaster

__all__ = ["fit_ranksvm"]


def fit_ranksvm(
    X,
    graph: PreferenceGraph,
    C: float,
    *,
    rescaling: str = "margin",
    normalize: str = "pairs",
    tol: float = 1e-3,
    max_iter: int = 1000,
    max_time: float | None = None,
    n_jobs: int = 1,
    callback=None,
    verbose: int = 0,
) -> SSVMResult:
    """Train ``w`` on features X (dense or sparse) and a prepared preference graph.

    ``n_jobs``: threads for the oracle's tree levels and sort and for the products
    ``X w`` / ``X' alpha`` (fixed row pieces: the same model for any ``n_jobs``)."""
    w_group, w_sample = graph.hinge_weights(normalize)
    Xp = RowPieces(X, resolve_threads(n_jobs))
    d = X.shape[1]
    master = OneSlackQPMaster(C=float(C), dim=d, tol=1e-10)
    tr = GapMonitor(tol, max_iter, max_time, callback, verbose, name="RankSVM")

    def find_plane(sol) -> Plane:
        w = sol.w
        alpha, delta_g = graph.most_violated(Xp.matvec(w), rescaling=rescaling, n_jobs=n_jobs)
        a = Xp.rmatvec(alpha * w_sample)
        b = float(delta_g @ w_group)
        violation = max(0.0, b - float(a @ w))  # the hinge bound at w
        primal = 0.5 * float(w @ w) + C * violation
        return Plane(b, a, primal=primal, state=w, extra={"violation": violation, "xi": sol.xi})

    sol = one_slack_cutting_planes(find_plane, master, tr, tol=tol, max_iter=max_iter)
    return tr.result(sol.w, n_planes=master.n_planes)
