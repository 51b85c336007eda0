"""Object detection (thesis seed 002, Sec. 2.3.4, 2.5.3 and Ch. 4) and proposal ranking
(Blaschko, Mittal & Rahtu, GCPR 2014, Sec. 5).

See docs/detection.md.
"""

from maxmargin.apps.detection.data import (
    Annotation,
    load_image,
    load_voc_folder,
    read_voc,
    rescale_image,
)
from maxmargin.apps.detection.detector import (
    CascadeDetector,
    HOGSVMDetector,
    ProposalRanker,
    check_images_boxes,
)
from maxmargin.apps.detection.features import HOGPyramid, to_grey
from maxmargin.apps.detection.haar import HaarCascadeDetector, HaarFeatures
from maxmargin.apps.detection.metrics import (
    average_precision,
    best_overlaps,
    nms,
    recall_overlap,
    recall_overlap_auc,
)
from maxmargin.apps.detection.windows import BoxDistribution, sliding_windows

__all__ = [
    "Annotation",
    "BoxDistribution",
    "CascadeDetector",
    "HOGPyramid",
    "HOGSVMDetector",
    "HaarCascadeDetector",
    "HaarFeatures",
    "ProposalRanker",
    "average_precision",
    "best_overlaps",
    "check_images_boxes",
    "load_image",
    "load_voc_folder",
    "nms",
    "read_voc",
    "recall_overlap",
    "recall_overlap_auc",
    "rescale_image",
    "sliding_windows",
    "to_grey",
]
