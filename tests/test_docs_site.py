"""The documentation site's sources: every page is in the table of contents, and the generated
page of an example holds its closed form, its figure and its conventions. CI builds the site
itself with Sphinx, warnings as errors (.ci/run)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_page_is_in_the_table_of_contents():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = {line.strip() for block in re.findall(r"```\{toctree\}(.*?)```", index, flags=re.S) for line in block.splitlines()}
    pages = {path.stem for path in DOCS.glob("*.md")} - {"index"}
    assert pages <= listed, pages - listed


def test_an_example_page_has_its_formula_figure_and_conventions(tmp_path):
    pytest.importorskip("matplotlib", reason='matplotlib is not installed (pip install "flopsreg[plot]")')
    spec = importlib.util.spec_from_file_location("example_pages", DOCS / "_ext" / "example_pages.py")
    pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pages)
    text = pages._page("gemma-3-4b", tmp_path)
    assert text.startswith("# gemma-3-4b\n") and "$$\\begin{aligned}" in text
    assert "![gemma-3-4b: forward FLOPs per token by slot" in text and (tmp_path / "gemma-3-4b.svg").is_file()
    assert "## Conventions at 4,096 tokens" in text and "| slime |" in text
