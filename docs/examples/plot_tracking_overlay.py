"""
Visual tracking with StructBoost, and an overlay GIF
====================================================

:class:`~maxmargin.apps.tracking.StructBoostTracker` treats tracking as structured
prediction: the output is a box, the loss is one minus the Pascal overlap with the true
box, and the model is updated online as frames arrive (Shen et al., StructBoost, Sec. 5).
Given the object's box in the first three frames, it follows the object through the rest.

Data: a synthetic video made here -- a textured patch moving along a curve over a
cluttered, noisy background that drifts slowly.
"""

import tempfile
from pathlib import Path

import imageio.v3 as iio
import matplotlib.pyplot as plt
import numpy as np

from maxmargin.apps.tracking import StructBoostTracker, overlaps, track_sequence
from maxmargin.cli.track import draw_box

rng = np.random.default_rng(0)
H, W, n_frames, side = 120, 160, 50, 26
background = np.kron(rng.random((H // 6 + 4, W // 6 + 4)), np.ones((6, 6)))
patch = np.kron(rng.random((side // 2, side // 2)), np.ones((2, 2)))[:side, :side]
patch = 0.15 + 0.7 * (patch > 0.5)  # a high-contrast checker texture

t = np.linspace(0, 2 * np.pi, n_frames)
xs = (W - side) / 2 + 50 * np.sin(t)
ys = (H - side) / 2 + 30 * np.sin(2 * t)
frames, truth = [], []
for k in range(n_frames):
    shift = k // 5  # the background drifts one pixel every five frames
    img = background[shift : shift + H, shift : shift + W].copy() * 0.8
    x, y = round(xs[k]), round(ys[k])
    img[y : y + side, x : x + side] = patch
    img += 0.08 * rng.normal(size=img.shape)
    frames.append((np.clip(img, 0, 1) * 255).astype(np.uint8))
    truth.append((x, y, side, side))
truth = np.array(truth, dtype=float)

# %%
# Track
# -----
# Three labelled frames start the tracker (the paper's protocol); the rest is tracked.
# (the sampling protocol is one ``Sampling`` object: change its fields with set_params)
tracker = StructBoostTracker(max_iter=60, random_state=0).set_params(
    sampling__n_predict=600, sampling__n_train=100, sampling__search_radius=20
)
pred, info = track_sequence(tracker, frames, truth, n_init=3)
ov = overlaps(pred, truth)
print(
    f"mean overlap over the tracked frames {ov[3:].mean():.3f}, "
    f"frames with overlap > 0.5: {np.mean(ov[3:] > 0.5):.0%}"
)

# %%
# The overlay as a GIF (green: ground truth, red: the track), as ``maxmargin track --gif``
# writes it
gallery_images = Path("../auto_examples/images")
out = gallery_images if gallery_images.is_dir() else Path(tempfile.mkdtemp())
overlay = []
for k, f in enumerate(frames):
    rgb = np.repeat(f[:, :, None], 3, axis=2)
    draw_box(rgb, truth[k], (0, 200, 0))
    draw_box(rgb, pred[k], (230, 0, 0))
    overlay.append(rgb)
iio.imwrite(out / "tracking_overlay.gif", np.stack(overlay), duration=80, loop=0)

# %%
# .. image:: /auto_examples/images/tracking_overlay.gif
#    :alt: the track (red) and the ground truth (green) on the synthetic video
#
# Overlap per frame
# -----------------
fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3), gridspec_kw={"width_ratios": [1, 1.6]})
a.imshow(overlay[n_frames // 2])
a.set_title(f"frame {n_frames // 2}")
a.axis("off")
b.plot(ov)
b.axvspan(0, 2, color="grey", alpha=0.2, label="labelled frames")
b.set_ylim(0, 1.05)
b.set_xlabel("frame")
b.set_ylabel("overlap with the true box")
b.legend(loc="lower right")
fig.tight_layout()
