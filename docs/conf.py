"""Sphinx configuration: API pages from the numpydoc docstrings (autosummary), the guides
of docs/*.md (myst-parser) and a gallery of runnable examples (sphinx-gallery).

Build with ``make docs`` (offline, warnings are errors).  The examples run during the
build; each makes its own data, so the site needs no download and no ../shared.
"""

import os
import warnings

import maxmargin

os.environ.setdefault("MPLBACKEND", "Agg")

project = "maxmargin"
author = "maxmargin developers"
copyright = "maxmargin developers"
release = maxmargin.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "examples/*",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "**/*.zip",
]

# API pages: one per public object, generated from the docstrings
autosummary_generate = True
# scikit-learn's generated metadata-routing methods (set_fit_request, ...) and inherited
# docstrings refer to labels of scikit-learn's own docs: not documented here
autodoc_inherit_docstrings = False
autodoc_default_options = {
    "exclude-members": ",".join(
        [f"set_{m}_request" for m in ("fit", "predict", "score", "transform", "partial_fit")]
        + [
            "set_decision_function_request",
            "set_predict_proba_request",
            "get_metadata_routing",
            "set_output",
        ]
    )
}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

# guides: GitHub-flavoured Markdown with $...$ maths and heading anchors for links
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "abort_on_example_error": True,
    "show_memory": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"maxmargin {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path: list[str] = []

# the examples print progress bars and may warn about convergence on purpose; the build
# treats Sphinx warnings as errors, not the examples' own
warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")
