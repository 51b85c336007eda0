"""What the binary classifiers share: ``y`` coded as +-1, the sign decision, the tags
(:class:`SparseInput`: the CSR-input tag every estimator that takes sparse ``X`` shares),
the class labels of every classifier (:func:`fit_classes`)."""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data


def fit_classes(est, y) -> np.ndarray:
    """Set ``est.classes_`` from the classification targets ``y`` (at least two
    classes) and return ``y`` as indices into it."""
    check_classification_targets(y)
    est.classes_, yi = np.unique(y, return_inverse=True)
    if len(est.classes_) < 2:
        k, name = len(est.classes_), type(est).__name__
        raise ValueError(f"y has {k} class; {name} needs at least 2 classes")
    return yi


class SparseInput:
    """Mixin of the estimators that take CSR input (scikit-learn's ``input_tags.sparse``)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class BinaryClassifier(SparseInput, ClassifierMixin):
    """Two classes: ``classes_[1]`` is +1, ``classes_[0]`` is -1, and :meth:`predict` is
    the sign of ``decision_function`` (ties go to ``classes_[0]``)."""

    _fitted_attr = "coef_"

    def _binary_data(self, X, y):
        """Validated ``X`` (dense or CSR) and ``y`` coded as +-1; sets ``classes_``."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y")
        if y_type != "binary":
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {y_type}."
            )
        self.classes_, yi = np.unique(y, return_inverse=True)
        return X, np.where(yi == 1, 1.0, -1.0)

    def _inputs(self, X):
        """``X`` checked against the fitted model (dense or CSR, float64)."""
        check_is_fitted(self, self._fitted_attr)
        return validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)

    def predict(self, X):
        s = self.decision_function(X)
        return self.classes_[(s > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
