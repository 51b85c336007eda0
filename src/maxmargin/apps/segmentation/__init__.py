"""Figure/ground image segmentation with learned superpixel CRFs (StructBoost Sec. 4.5).

See docs/segmentation.md.
"""

from maxmargin.apps.segmentation.data import load_image, load_image_folder
from maxmargin.apps.segmentation.features import image_features
from maxmargin.apps.segmentation.segmenter import Segmenter, check_image_mask

__all__ = [
    "Segmenter",
    "check_image_mask",
    "image_features",
    "load_image",
    "load_image_folder",
]
