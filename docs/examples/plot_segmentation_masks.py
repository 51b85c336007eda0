"""
Figure-ground segmentation masks
================================

:class:`~maxmargin.apps.segmentation.Segmenter` labels every superpixel of an image as
object or background with a binary CRF: unary terms from boosted patch features and
pairwise terms that favour equal labels across weak edges, learned jointly by StructBoost
and decoded exactly by graph cuts (Shen et al., StructBoost, Sec. 5).

Data: scikit-image's bundled ``coins`` image.  Its reference mask comes from the
watershed recipe of scikit-image's own coins tutorial; the image is cut into four tiles,
two for training and two for testing.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy import ndimage as ndi
from skimage import data, filters, segmentation

from maxmargin.apps.segmentation import Segmenter
from maxmargin.metrics import segmentation_scores

image = data.coins()
markers = np.zeros_like(image)
markers[image < 30] = 1
markers[image > 150] = 2
mask = ndi.binary_fill_holes(segmentation.watershed(filters.sobel(image), markers) == 2)

h, w = image.shape[0] // 2, image.shape[1] // 2
tiles = [(image[i : i + h, j : j + w], mask[i : i + h, j : j + w]) for i in (0, h) for j in (0, w)]
train, test = tiles[0::3], tiles[1:3]  # diagonal tiles train, the other two test

# %%
# Fit and predict
# ---------------
seg = Segmenter(learner="structboost", n_segments=150, C=10.0, max_iter=20, random_state=0)
seg.fit([x for x, _ in train], [m for _, m in train])
pred = [seg.predict(x) for x, _ in test]
scores = segmentation_scores([m for _, m in test], pred)
print({k: round(float(v), 3) for k, v in scores.items() if np.isscalar(v)})

# %%
# Test tiles: image, reference mask, predicted mask
# -------------------------------------------------
fig, axes = plt.subplots(len(test), 3, figsize=(8, 2.8 * len(test)))
for row, ((x, m), p) in zip(axes, zip(test, pred)):
    for ax, img, title in zip(row, (x, m, p), ("image", "reference", "predicted")):
        ax.imshow(img, cmap="gray")
        ax.set_title(title)
        ax.axis("off")
fig.tight_layout()
