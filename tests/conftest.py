"""Small shared problems for the test suite.

Data sets come from scikit-learn (shipped with it, no download) and are loaded once per
session; tests get copies, so in-place edits cannot leak between tests.  Tests taking
more than a few seconds whose behaviour a faster test also covers, and end-to-end runs, are
marked ``slow``: ``make test`` runs ``-m "not slow"``, ``make test-slow`` (which CI runs
too) the rest.
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris


@pytest.fixture(scope="session")
def _iris_data():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="session")
def _digits_data():
    return load_digits(return_X_y=True)


@pytest.fixture
def iris(_iris_data):
    """Iris (150 x 4, 3 classes) as ``(X, y)``."""
    X, y = _iris_data
    return X.copy(), y.copy()


@pytest.fixture
def digits(_digits_data):
    """Digits (1797 x 64, 10 classes) as ``(X, y)``."""
    X, y = _digits_data
    return X.copy(), y.copy()


@pytest.fixture
def digits_split(_digits_data):
    """A fixed stratified-enough split of digits: (X_train, y_train, X_test, y_test), 1200 / 597."""
    X, y = _digits_data
    idx = np.random.default_rng(0).permutation(len(y))
    tr, te = idx[:1200], idx[1200:]
    return X[tr], y[tr], X[te], y[te]


# tests measured at several seconds each on 2 cores (pytest --durations); marked here so
# the list stays in one place
_SLOW = (
    "test_common.py::test_sklearn_compatible[LatentSSVM",
    "test_structboost_lp.py::test_one_slack_and_m_slack_same_optimum_on_digits_subset",
    "test_weak_learners.py::test_tree_sparse_matches_dense",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(key in item.nodeid for key in _SLOW):
            item.add_marker(pytest.mark.slow)
