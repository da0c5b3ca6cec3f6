"""Jupyter displays: short plain reprs, Markdown with tables, and maths only in MathJax 3's subset."""

from __future__ import annotations

import re

import pytest
from test_cli import gemma_forward

import flopsreg

# What MathJax 3 renders inside $...$ / $$...$$ (its AMS environments); a LaTeX document's
# itemize, tabular, align (numbered rows) or % comments would show as raw TeX.
MATHJAX_ENVIRONMENTS = {"aligned", "cases", "matrix", "pmatrix", "bmatrix", "array", "split", "gathered"}


@pytest.fixture(scope="module")
def registry():
    return flopsreg.Registry.default()


@pytest.fixture(scope="module")
def shown(registry):
    """One object of each displayed type, by name."""
    model = flopsreg.Model.example("gemma-3-4b")
    return {
        "result": registry.evaluate(model, seq_len=4096),
        "model": model,
        "selection": registry.select(flopsreg.Model.example("llama-4-scout")),
        "registry": registry,
        "pattern": next(p for p in registry.patterns if p.name == "chunked"),
        "comparison": registry.compare(model, seq_len=4096),
    }


def _maths(text: str) -> list[str]:
    """Every $$...$$ and $...$ span of a Markdown text, in order."""
    return re.findall(r"\$\$(.+?)\$\$|\$([^$]+?)\$", text, flags=re.S)


def _check_mathjax(math: str) -> None:
    environments = set(re.findall(r"\\begin\{(\w+)\}", math))
    assert environments <= MATHJAX_ENVIRONMENTS, environments
    assert math.count(r"\begin") == math.count(r"\end")
    assert "%" not in math.replace(r"\%", "") and r"\item" not in math and r"\notag" not in math
    assert math.count("{") == math.count("}")


@pytest.mark.parametrize("name", ["result", "model", "selection", "registry", "pattern", "comparison"])
def test_plain_repr_is_short(shown, name):
    text = repr(shown[name])
    assert len(text) < 200 and "\n" not in text, text


@pytest.mark.parametrize("name", ["result", "model", "selection", "registry", "pattern", "comparison"])
def test_markdown_maths_is_in_mathjax_s_subset_and_tables_are_rectangular(shown, name):
    text = shown[name]._repr_markdown_()
    assert text.count("$") % 2 == 0
    for display, inline in _maths(text):
        _check_mathjax(display or inline)
    for table in re.findall(r"(?:^\|.*\|$\n?)+", text, flags=re.M):
        widths = {len(re.split(r"(?<!\\)\|", row.strip())) for row in table.strip().splitlines()}
        assert len(widths) == 1, table


@pytest.mark.parametrize("name", ["result", "selection", "pattern"])
def test_latex_repr_is_display_maths_in_mathjax_s_subset(shown, name):
    text = shown[name]._repr_latex_()
    assert text.startswith("$$") and text.endswith("$$")
    _check_mathjax(text[2:-2])


def test_the_result_shows_its_exact_totals(shown):
    text = shown["result"]._repr_markdown_()
    forward = gemma_forward(4096)  # derived matmul by matmul in test_cli
    assert f"`{forward:,}`" in text and f"`{3 * forward:,}`" in text
    assert "| $W$ | keys a query sees in a sliding window, itself included | 1,024 |" in text


def test_the_model_shows_its_kinds_and_layers(shown):
    text = shown["model"]._repr_markdown_()
    assert "| global | 5, 11, 17, 23, 29 | - |" in text and "window = 1,024" in text
    assert repr(shown["model"]) == "Model(name='gemma-3-4b', layers=34, kinds={'local': 29, 'global': 5})"


def test_the_comparison_gives_ratios_and_reasons(shown):
    text = shown["comparison"]._repr_markdown_()
    assert "| exact |" in text and "| slime |" in text and "- slime: " in text
