"""
Ranking and AUC with StructBoostRanker
======================================

:class:`~maxmargin.StructBoostRanker` maximises the area under the ROC curve (for 0/1
labels) or pairwise ranking accuracy (for relevance grades) with boosted stumps.  The
most violated ranking constraint is found in O(n log n) (Blaschko et al.), so the cost per
iteration grows with the number of samples, not with the number of pairs.

Data: an imbalanced two-class problem made here (10% positives).
"""

import matplotlib.pyplot as plt
from sklearn.datasets import make_classification
from sklearn.metrics import roc_curve
from sklearn.model_selection import train_test_split

from maxmargin import StructBoostRanker
from maxmargin.metrics import auc

X, y = make_classification(
    n_samples=1200, n_features=20, n_informative=6, weights=[0.9], flip_y=0.02, random_state=0
)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
print(
    f"{len(y_train)} training samples, {int(y_train.sum())} positives, "
    f"{int(y_train.sum()) * int((1 - y_train).sum())} positive/negative pairs"
)

# %%
# Fit and score
# -------------
ranker = StructBoostRanker(C=100, max_iter=60, random_state=0).fit(X_train, y_train)
scores = ranker.decision_function(X_test)
print(f"test AUC {auc(y_test, scores):.4f} with {len(ranker.history_)} iterations")

# %%
# ROC curve and convergence
# -------------------------
fpr, tpr, _ = roc_curve(y_test, scores)
fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3.5))
a.plot(fpr, tpr)
a.plot([0, 1], [0, 1], ":", color="grey")
a.set_xlabel("false positive rate")
a.set_ylabel("true positive rate")
a.set_title(f"test ROC, AUC = {auc(y_test, scores):.3f}")
b.plot([h["objective"] for h in ranker.history_])
b.set_xlabel("iteration")
b.set_ylabel("objective")
b.set_title("training objective")
fig.tight_layout()
