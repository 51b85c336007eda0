"""Architecture rules read from the source (issue 29): functions with many parameters.

Issue 29 asks for numba working arrays bundled and option groups as parameter objects: a
function of ``src/`` that takes 12 or more parameters (positional and keyword, ``self`` /
``cls`` and ``*args`` / ``**kwargs`` not counted) is listed here, so that the list can only
shrink: a new such function, or a listed function or kernel taking more parameters, fails.
Constructors are listed by name only: an estimator's signature is its scikit-learn
parameter set (docs/architecture.md), which may grow.
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
LIMIT = 12

# "module:qualified name" -> parameters, as counted by ``_many_parameters``: functions and
# kernels (the count may only fall) ...
MANY_PARAMETERS = {
    "maxmargin/apps/detection/haar.py:_cascade_kernel": 12,
    "maxmargin/apps/detection/haar.py:_resume_kernel": 16,
    "maxmargin/apps/detection/windows.py:_grid_log_kde": 12,
    "maxmargin/inference/ranking.py:_node_step": 18,
    "maxmargin/inference/viterbi.py:_forward_range": 12,
    "maxmargin/inference/viterbi.py:_loss_augmented_range": 12,
    "maxmargin/inference/viterbi.py:_marginals_range": 15,
    "maxmargin/solvers/_smoothed_kernels.py:_newton_length": 15,
    "maxmargin/solvers/_smoothed_kernels.py:coded_smoothed_steps": 27,
    "maxmargin/solvers/asymmetric_boost.py:fit_asymmetric_stage": 16,
    "maxmargin/solvers/asymmetric_boost.py:fit_cost_sensitive_stage": 14,
    "maxmargin/solvers/column_generation.py:_run": 26,
    "maxmargin/solvers/column_generation.py:fit_structboost": 27,
    "maxmargin/solvers/hard_negatives.py:mine_hard_negatives": 14,  # + weight= (issue 31)
    "maxmargin/solvers/multiboost.py:fit_multiboost": 12,
    "maxmargin/solvers/ssvm.py:solve_ssvm": 12,
    "maxmargin/solvers/svm.py:fit_dual_cd": 16,  # + sample_weight= (issue 31)
}
# ... and the constructors of estimators (and of the parameter objects of apps/), whose
# parameters are their public parameter set: listed by name, their count free
CONSTRUCTORS = {
    "maxmargin/apps/detection/detector.py:CascadeDetector.__init__",
    "maxmargin/apps/detection/detector.py:HOGSVMDetector.__init__",
    "maxmargin/apps/detection/detector.py:ProposalRanker.__init__",
    "maxmargin/apps/detection/features.py:HOGPyramid.__init__",
    "maxmargin/apps/detection/haar.py:HaarCascadeDetector.__init__",
    "maxmargin/apps/segmentation/segmenter.py:Segmenter.__init__",
    "maxmargin/apps/tracking/tracker.py:StructBoostTracker.__init__",
    "maxmargin/learners/cascade.py:BoostedCascade.__init__",
    "maxmargin/learners/feature_selection.py:ForwardFeatureSelector.__init__",
    "maxmargin/learners/latent_ssvm.py:LatentSSVM.__init__",
    "maxmargin/learners/multiboost.py:_init.__init__",
    "maxmargin/learners/ranksvm.py:RankSVM.__init__",
    "maxmargin/learners/sparse_kernel_svm.py:SparseKernelSVM.__init__",
    "maxmargin/learners/ssvm.py:SSVMClassifier.__init__",
    "maxmargin/learners/ssvm.py:StructSVM.__init__",
    "maxmargin/learners/structboost.py:StructBoost.__init__",
    "maxmargin/learners/structboost.py:StructBoostClassifier.__init__",
    "maxmargin/learners/structboost_ranker.py:StructBoostRanker.__init__",
    "maxmargin/learners/svm.py:SVMClassifier.__init__",
}


def _many_parameters(root: Path = SRC, limit: int = LIMIT) -> dict[str, int]:
    """``{"module:qualified name": parameters}`` of every function under ``root`` with at
    least ``limit`` parameters."""
    found = {}

    def visit(node, prefix, path):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".", path)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = child.args
                names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                if names and names[0] in ("self", "cls"):
                    names = names[1:]
                if len(names) >= limit:
                    found[f"{path}:{prefix}{child.name}"] = len(names)
                visit(child, prefix + child.name + ".", path)
            else:
                visit(child, prefix, path)

    for p in sorted(root.rglob("*.py")):
        visit(ast.parse(p.read_text()), "", p.relative_to(root).as_posix())
    return found


def test_no_new_function_with_many_parameters():
    found = _many_parameters()
    listed = MANY_PARAMETERS.keys() | CONSTRUCTORS
    new = {k: v for k, v in found.items() if k not in listed}
    grown = {k: (MANY_PARAMETERS[k], v) for k, v in found.items() if v > MANY_PARAMETERS.get(k, v)}
    assert not new, f"functions with >= {LIMIT} parameters (bundle them, see the module doc): {new}"
    assert not grown, f"functions that take more parameters than listed (listed, now): {grown}"


def test_counter_sees_every_kind_of_function(tmp_path):
    """The counter finds module functions, methods and nested functions, skips ``self``
    and counts keyword-only parameters (so the test above can fail)."""
    (tmp_path / "m.py").write_text(
        "def f(a, b, *, c):\n    def g(x, y, z): pass\n"
        "class K:\n    def h(self, p, q, *r, s, **t): pass\n"
    )
    assert _many_parameters(tmp_path, limit=3) == {"m.py:f": 3, "m.py:f.g": 3, "m.py:K.h": 3}
    assert _many_parameters(tmp_path, limit=4) == {}
