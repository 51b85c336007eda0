"""
Multi-class and hierarchical StructBoost
========================================

:class:`~maxmargin.StructBoostClassifier` learns a multi-class boosted model by column
generation: each iteration adds the decision stump that most violates the dual
constraints, then re-solves the master problem.  Given a class tree
(:class:`~maxmargin.Taxonomy`), the same estimator minimises a *tree loss*: confusing two
sibling classes costs less than confusing classes far apart in the tree.

Data: scikit-learn's bundled digits (8 x 8 images, 10 classes).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from maxmargin import StructBoostClassifier, Taxonomy

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)

# %%
# Flat multi-class StructBoost
# ----------------------------
# ``history_`` records the objective (primal) and the duality gap per iteration.
flat = StructBoostClassifier(C=100, max_iter=40, weak_learner="stump", random_state=0)
flat.fit(X_train, y_train)
print(f"flat: test error {np.mean(flat.predict(X_test) != y_test):.3f}")

# %%
# A class tree and the tree loss
# ------------------------------
# Digits grouped by shape: a confusion inside a group costs 1, across groups 2
# (``tree_loss="height"``: the height of the lowest common ancestor).
tax = Taxonomy.from_dict(
    {"digits": {"loops": [0, 6, 8, 9], "strokes": [1, 4, 7], "curves": [2, 3, 5]}}
)
tree = StructBoostClassifier(
    taxonomy=tax, tree_loss="height", C=100, max_iter=40, weak_learner="stump", random_state=0
)
tree.fit(X_train, y_train)

for name, model in (("flat", flat), ("tree", tree)):
    pred = model.predict(X_test)
    loss = tax.loss(tax.index(y_test), tax.index(pred), "height").mean()
    print(f"{name}: test error {np.mean(pred != y_test):.3f}, mean tree loss {loss:.3f}")

# %%
# Convergence
# -----------
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, model in (("flat", flat), ("tree loss", tree)):
    obj = [h["objective"] for h in model.history_]
    ax.plot(np.arange(1, len(obj) + 1), obj, label=name)
ax.set_xlabel("iteration (weak learners added)")
ax.set_ylabel("primal objective")
ax.set_yscale("log")
ax.legend()
fig.tight_layout()
