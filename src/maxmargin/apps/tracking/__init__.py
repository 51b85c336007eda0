"""Visual tracking with StructBoost (Shen et al., TPAMI 2014, Sec. 4.4) and baselines.

See docs/tracking.md.
"""

from maxmargin.apps.tracking.data import Sequence, load_sequence, read_boxes, write_boxes
from maxmargin.apps.tracking.features import FeatureQuantizer, PatchFeatures, to_grey
from maxmargin.apps.tracking.metrics import (
    centre_errors,
    overlaps,
    precision_at,
    success_auc,
    summary,
)
from maxmargin.apps.tracking.run import track_sequence
from maxmargin.apps.tracking.scale import ScaleFilter, ScaleModel
from maxmargin.apps.tracking.tracker import (
    TRACKERS,
    AdaBoostTracker,
    Sampling,
    SSVMTracker,
    StructBoostTracker,
    coarse_to_fine,
    fixed_warp_params,
    make_tracker,
    warp_frame,
)

__all__ = [
    "TRACKERS",
    "AdaBoostTracker",
    "FeatureQuantizer",
    "PatchFeatures",
    "SSVMTracker",
    "Sampling",
    "ScaleFilter",
    "ScaleModel",
    "Sequence",
    "StructBoostTracker",
    "centre_errors",
    "coarse_to_fine",
    "fixed_warp_params",
    "load_sequence",
    "make_tracker",
    "overlaps",
    "precision_at",
    "read_boxes",
    "success_auc",
    "summary",
    "to_grey",
    "track_sequence",
    "warp_frame",
    "write_boxes",
]
