"""Data set loaders for the command line and examples (svmlight/LIBSVM and CSV)."""

from maxmargin.datasets.loaders import (
    describe_data_file,
    detect_format,
    load_csv,
    load_dataset,
    load_svmlight,
    peek_n_columns,
)
from maxmargin.datasets.ocr import load_ocr
from maxmargin.datasets.synthetic import make_detection_scenes, make_gaussian_mixture_toy

__all__ = [
    "describe_data_file",
    "detect_format",
    "load_csv",
    "load_dataset",
    "load_ocr",
    "load_svmlight",
    "make_detection_scenes",
    "make_gaussian_mixture_toy",
    "peek_n_columns",
]
