"""Sphinx configuration of the documentation site: the Markdown pages (MyST), an API reference
from the docstrings, and one generated page per bundled example. Build it with
``sphinx-build -W -b html docs docs/_build`` after ``pip install ".[docs]"``. The site needs no
network: MathJax is served from its own ``_static/`` (docs/architecture.md, "Building the docs")."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "flopsreg"
author = "the flopsreg authors"
copyright = "the flopsreg authors"  # the footer; without it, a bare "©."
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax", "sphinx-mathjax-offline", "example_pages"]
# MathJax 3 from the site's own _static/ (sphinx-mathjax-offline copies it there), never from a CDN:
# readers on air-gapped clusters see typeset formulas. docs/check_site.py checks every page for it.
mathjax_path = "mathjax/tex-chtml.js"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links, as GitHub renders them
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
source_suffix = {".md": "markdown"}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
html_title = "flopsreg"
html_static_path = ["_static"]
html_css_files = ["site.css"]  # wide tables and formulas scroll inside the column
# Links from a page to the repository's files outside docs/ (tests, examples) point at GitHub.
repository = "https://github.com/flopsreg/flopsreg/tree/main/"
