"""
Object detection: boxes and the cascade's stages
================================================

:class:`~maxmargin.apps.detection.CascadeDetector` scans HOG windows with a boosted
cascade: each stage is a boosted classifier (here LACBoost, Shen et al., "Training
effective node classifiers for cascade classification", IJCV 2013) whose threshold keeps
nearly every object window while rejecting a share of the background, so later stages see
fewer and harder windows.

Data: synthetic scenes made here (:func:`~maxmargin.datasets.make_detection_scenes`:
rings on random clutter).
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from maxmargin.apps.detection import CascadeDetector, average_precision
from maxmargin.datasets import make_detection_scenes

train_images, train_boxes = make_detection_scenes(12, random_state=0)
test_images, test_boxes = make_detection_scenes(6, random_state=1)

cascade = CascadeDetector(
    window=(3, 3), stage_learner="lacboost", n_stages=4, max_weak=20, random_state=0
).fit(train_images, train_boxes)
detections = cascade.predict(test_images)  # [(boxes, scores), ...] after NMS
ap = average_precision([b for b, _ in detections], [s for _, s in detections], test_boxes)
print(f"average precision on {len(test_images)} test scenes: {ap:.3f}")

# %%
# Detected boxes (red) and the true ones (green)
# ----------------------------------------------
fig, axes = plt.subplots(2, 3, figsize=(9, 5))
for ax, img, (boxes, _), truth in zip(axes.ravel(), test_images, detections, test_boxes):
    ax.imshow(img, cmap="gray")
    for x, y, w, h in truth:
        ax.add_patch(Rectangle((x, y), w, h, fill=False, color="lime", lw=2))
    for x, y, w, h in boxes[:3]:  # the three best-scoring detections
        ax.add_patch(Rectangle((x, y), w, h, fill=False, color="red", lw=1.5, ls="--"))
    ax.axis("off")
fig.tight_layout()

# %%
# The cascade, stage by stage
# ---------------------------
# Per stage: the number of weak learners, the recall kept on object windows and the
# false-acceptance rate on background windows, measured on the stage's own training set.
stages = cascade.cascade_.stages_
k = np.arange(1, len(stages) + 1)
fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
a.bar(k, [s["n_weak"] for s in stages])
a.set_xlabel("stage")
a.set_ylabel("weak learners")
b.plot(k, [s["recall"] for s in stages], "o-", label="recall (objects kept)")
b.plot(k, [s["far"] for s in stages], "s-", label="false acceptance (background kept)")
b.plot(k, np.cumprod([s["far"] for s in stages]), "^:", label="cumulative false acceptance")
b.set_xlabel("stage")
b.set_yscale("log")
b.legend(fontsize=8)
fig.tight_layout()
for i, s in enumerate(stages, 1):
    print(
        f"stage {i}: {s['n_weak']} weak, recall {s['recall']:.3f}, far {s['far']:.3f}, "
        f"{s['n_pos']} positives, {s['n_neg']} negatives"
    )
