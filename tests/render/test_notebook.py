"""Jupyter displays: short plain reprs, Markdown with tables, and maths only in MathJax 3's subset."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from test_cli import gemma_forward

import flopsreg
from flopsreg.model.examples_index import example_names
from flopsreg.render.ascii_maths import maths_text

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
        "generation": registry.generate(model, prompt=1000, new_tokens=100),
        "parameters": registry.parameters(model),
        "step_utilisation": registry.evaluate(model, seq_len=4096).utilisation(peak="h100-sxm-bf16", step_time=0.5, devices=8),
        "utilisation": registry.evaluate(model, seq_len=4096).mfu(peak="h100-sxm-bf16", step_time=0.5, devices=8),
        "serving_utilisation": registry.evaluate(LLAMA, requests=[(1, 4095)]).utilisation(peak="h100-sxm-bf16", step_time=0.01),
        "generation_bounds": registry.generate(model, prompt=1000, new_tokens=100).bounds(peak="h100-sxm-bf16"),
        "serving_comparison": registry.compare(LLAMA, requests=[(1, 4095)], conventions=["vllm"]),
    }


LLAMA = flopsreg.Model.example("llama-3-8b")
DISPLAYED = [
    "result", "model", "selection", "registry", "pattern", "comparison", "generation", "parameters", "step_utilisation", "utilisation",
    "serving_utilisation", "generation_bounds", "serving_comparison",
]


def _maths(text: str) -> list[str]:
    """Every $$...$$ and $...$ span of a Markdown text, in order."""
    return re.findall(r"\$\$(.+?)\$\$|\$([^$]+?)\$", text, flags=re.S)


def _check_mathjax(math: str) -> None:
    environments = set(re.findall(r"\\begin\{(\w+)\}", math))
    assert environments <= MATHJAX_ENVIRONMENTS, environments
    assert math.count(r"\begin") == math.count(r"\end")
    assert "%" not in math.replace(r"\%", "") and r"\item" not in math and r"\notag" not in math
    assert math.count("{") == math.count("}")


@pytest.mark.parametrize("name", [name for name in DISPLAYED if name != "utilisation"])  # Utilisation's repr is its fields
def test_plain_repr_is_short(shown, name):
    text = repr(shown[name])
    assert len(text) < 200 and "\n" not in text, text


@pytest.mark.parametrize("name", DISPLAYED)
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


# -- maths as MathJax typesets it, for every bundled example ------------------------------------

ASCII_IN_MATHS = re.compile(r"//|\*|\^T\b|(?<=[\w})]) x (?=[\w\\({])|(?<![\\\w])(?:min|max|floor|sum)\b")  # maths written as code
ASCII_IN_TEXT = re.compile(r"\^|//|\s[x*]\s|\w\*\w|\bn/a\b")  # maths left outside $...$


def _braces_balance(math: str) -> bool:
    depth = 0
    for char in re.sub(r"\\[{}]", "", math):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _check_typesets(text: str, where: str) -> None:
    """Every maths span of *text* parses as MathJax reads it, and no ASCII maths is left in or out of it."""
    assert text.count("$") % 2 == 0, where
    for display, inline in _maths(text):
        math = display or inline
        _check_mathjax(math)
        assert _braces_balance(math), (where, math)
        assert math.count(r"\left") == math.count(r"\right"), (where, math)
        assert not ASCII_IN_MATHS.search(math.replace(r"\times", "")), (where, math)
        for row in math.split(r"\\"):
            if row.strip().startswith(r"&\quad"):  # a continuation row: the plus is binary, spaced
                assert re.match(r"\s*&\\quad \{\}[+-]\{\} ", row), (where, row)
    prose = re.sub(r"`[^`]*`", "", text)  # code spans hold names and exact integers
    prose = re.sub(r"\$\$(.+?)\$\$|\$([^$]+?)\$", "", prose, flags=re.S)
    assert not ASCII_IN_TEXT.search(prose), (where, ASCII_IN_TEXT.search(prose).group(), prose[max(0, ASCII_IN_TEXT.search(prose).start() - 80) :][:160])


@pytest.mark.parametrize("example", example_names())
def test_every_display_of_every_example_typesets(registry, example):
    model = flopsreg.Model.example(example)
    result = registry.evaluate(model, seq_len=4096)
    shown = {
        "model": model,
        "selection": registry.select(model),
        "result": result,
        "comparison": registry.compare(model, seq_len=4096),
        "parameters": registry.parameters(model),
        "generation": registry.generate(model, prompt=100, new_tokens=10),
        "utilisation": result.utilisation(peak="h100-sxm-bf16", step_time=60),
    }
    for name, obj in shown.items():
        _check_typesets(obj._repr_markdown_(), f"{example} {name}")
    for name in ("selection", "result"):
        latex = shown[name]._repr_latex_()
        _check_typesets(latex, f"{example} {name} latex")


def test_the_registry_and_its_pattern_list_typeset(registry):
    _check_typesets(registry._repr_markdown_(), "registry")
    _check_typesets(registry.patterns_markdown(), "patterns")


def test_the_registry_shows_counts_by_slot_and_says_how_to_list_all(registry):
    text = registry._repr_markdown_()
    rows = [row for row in text.splitlines() if row.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == list(registry.slots)  # one row per slot, in forward order
    assert sum(int(row.split("|")[3]) for row in rows) == len(registry.patterns)
    assert "reg.patterns_markdown()" in text and "flopsreg patterns" in text
    listed = registry.patterns_markdown()
    assert len([row for row in listed.splitlines() if row.startswith("| `")]) == len(registry.patterns)
    assert "| `attention.mask` | `chunked` |" in listed


def test_kind_tables_show_the_model_level_slots_as_such_not_as_a_kind(shown):
    for name in ("result", "selection", "parameters"):
        text = shown[name]._repr_markdown_()
        assert "| model |" not in text and "| model-level slots |" in text, name


def test_comparisons_are_written_in_maths_and_words(shown):
    text = shown["comparison"]._repr_markdown_()
    assert r"($QK^{\top}$ and PV at width $H Q = n_{\mathrm{head}} \times \left\lfloor n_{\mathrm{embd}}/n_{\mathrm{head}} \right\rfloor$," in text
    assert "($s^{2} / 2$ pairs on every layer" in text and r"attention.core: $5.7135\times$ exact" in text
    assert "norms: exact counts none" in text and "n/a" not in text


@pytest.mark.parametrize(
    ("ascii", "markdown"),
    [
        ("s^2/2 pairs", "$s^{2} / 2$ pairs"),
        ("QK^T and PV", r"$QK^{\top}$ and PV"),
        ("2 s h^2, as if heads x v width", r"$2 s h^{2}$, as if heads × v width"),
        ("head_dims = 2 (dim // n_heads), whatever", r"$\mathrm{head\_dims} = 2 \left\lfloor \mathrm{dim}/n_{\mathrm{heads}} \right\rfloor$, whatever"),
        ("sum_i min(i + 1, K) pairs", r"$\sum_{i} \min\left(i + 1, K\right)$ pairs"),
        ("W(W+1)/2 + (s-W)W once W < s", r"$W \left(W + 1\right) / 2 + \left(s - W\right) W$ once $W < s$"),
        ("layers 0-28 of GLM-5, Gemma 3n, DeepSeek-V4 CSA", "layers 0-28 of GLM-5, Gemma 3n, DeepSeek-V4 CSA"),  # words stay words
        ("counted as a +1 column: r_q (h + 1)", r"counted as a +1 column: $r_{q} \left(h + 1\right)$"),
        ("hidden -> V", "hidden → V"),
        ("the update (b k)^T S", r"the update $\left(b k\right)^{\top} S$"),
        ("its product with x per chunk", "its product with $x$ per chunk"),
        ("visible iff 0 <= q - k < W, r = s mod C", r"visible iff $0 \le q - k < W$, $r = s \bmod C$"),
        ("torchtitan (gpt_oss): no v_proj, the lm_head's V x h", r"torchtitan (gpt_oss): no v_proj, the lm_head's $V \times h$"),
    ],
)
def test_ascii_maths_in_summaries_becomes_latex(ascii, markdown):
    assert maths_text(ascii) == markdown


def test_generation_and_utilisation_show_their_exact_numbers(shown, registry):
    generation = shown["generation"]
    text = generation._repr_markdown_()
    assert f"`{generation.prefill_flops:,}`" in text and f"`{generation.total:,}`" in text and "99 steps" in text
    step = shown["step_utilisation"]
    text = step._repr_markdown_()
    flops = 3 * gemma_forward(4096)  # training FLOPs of the step, without recomputation
    assert f"| MFU | ${step.mfu.decimal(6)}$ | $" in text and f"`{flops:,}`" in text and "$n = 8$" in text and "$t = 0.5$" in text
    assert step.mfu.fraction == flops / (Fraction(1, 2) * 8 * 989_500_000_000_000)


# Llama-3-8B decoding after 4095 tokens in bf16: every weight but the embedding table, one embedding
# row, the cached KV read and the new token's written (8 KV heads of 128, 32 layers, 2 bytes)
LLAMA_DECODE_BYTES = (8_030_261_248 - 128_256 * 4096) * 2 + 4096 * 2 + 4096 * 2 * 8 * 128 * 32 * 2


def test_a_serving_step_shows_mbu_and_the_roofline_beside_mfu(shown, registry):
    step = shown["serving_utilisation"]
    text = step._repr_markdown_()
    assert step.traffic.total == LLAMA_DECODE_BYTES
    mbu = Fraction(LLAMA_DECODE_BYTES) / (Fraction(1, 100) * 3_350_000_000_000)  # H100 SXM: 3.35 TB/s
    assert step.mbu.fraction == mbu and f"| MBU | ${float(mbu):.6g}$ |" in text and "| MFU |" in text
    assert f"`{LLAMA_DECODE_BYTES:,}`" in text and "**memory-bound**" in text
    assert f"at least ${float(Fraction(LLAMA_DECODE_BYTES, 3_350_000_000_000)):.6g}$ s" in text
    no_bandwidth = registry.evaluate(LLAMA, requests=[(1, 4095)]).utilisation(peak=10**15, step_time=0.01)._repr_markdown_()
    assert "MBU and the roofline bound need the devices' memory bandwidth" in no_bandwidth and "| MBU |" not in no_bandwidth


def test_generation_bounds_show_each_phase(shown):
    bounds = shown["generation_bounds"]
    text = bounds._repr_markdown_()
    assert f"`{bounds.prefill.total:,}`" in text and f"`{bounds.decode.total:,}`" in text
    assert "| prefill |" in text and "| decode (all steps) |" in text and text.count("memory-bound") + text.count("compute-bound") == 2


def test_a_serving_comparison_shows_vllms_bytes_beside_exacts(shown):
    text = shown["serving_comparison"]._repr_markdown_()
    assert "| exact |" in text and "`15,546,597,376`" in text and "`131,072`" in text  # exact's least read and written bytes
    assert "bytes of the step" in text and "- vllm: vLLM: every matmul's input activations" in text
