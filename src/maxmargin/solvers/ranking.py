"""Most violated 1-slack ranking constraints in O(n log n) (Blaschko et al., GCPR 2014).

The implementation lives in :mod:`maxmargin.inference.ranking`, beside the other
loss-augmented oracles, so that tasks (which sit below the solvers) can use it; this
module is its public home among the solvers.
"""

from maxmargin.inference.ranking import (
    GRAPHS,
    NORMALIZATIONS,
    RESCALINGS,
    PreferenceGraph,
    brute_force_constraint,
    check_options,
    most_violated_constraint,
)

__all__ = [
    "GRAPHS",
    "NORMALIZATIONS",
    "RESCALINGS",
    "PreferenceGraph",
    "brute_force_constraint",
    "check_options",
    "most_violated_constraint",
]
