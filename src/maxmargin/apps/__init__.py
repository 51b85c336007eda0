"""Applications built on maxmargin (image segmentation)."""
