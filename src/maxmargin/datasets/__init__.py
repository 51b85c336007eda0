"""Data set loaders for the command line and examples (svmlight/LIBSVM and CSV)."""

from maxmargin.datasets.loaders import (
    detect_format,
    load_csv,
    load_dataset,
    load_svmlight,
    peek_n_columns,
)

__all__ = ["detect_format", "load_csv", "load_dataset", "load_svmlight", "peek_n_columns"]
