"""Sphinx configuration of the documentation site: the Markdown pages (MyST), an API reference
from the docstrings, and one generated page per bundled example. Build it with
``sphinx-build -W -b html docs docs/_build`` after ``pip install ".[docs]"``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "flopsreg"
author = "the flopsreg authors"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax", "example_pages"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links, as GitHub renders them
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
source_suffix = {".md": "markdown"}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
html_title = "flopsreg"
# Links from a page to the repository's files outside docs/ (tests, examples) point at GitHub.
repository = "https://github.com/flopsreg/flopsreg/tree/main/"
