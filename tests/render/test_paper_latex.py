"""What a paper author gets from the LaTeX output: one meaning per symbol, forward-pass order,
values in the legend, one equation number, no internal identifiers, totals read two ways."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from test_cli import gemma_forward

import flopsreg
from flopsreg.model.examples_index import example_names
from flopsreg.render.tex import ACRONYMS, meaning, scientific

EXAMPLES = ["deepseek-v3", "gemma-3-4b", "gpt-oss-20b", "llama-3-8b", "llama-4-scout", "mixtral-8x7b", "qwen3-30b-a3b"]


@pytest.fixture(scope="module")
def registry():
    return flopsreg.Registry.default()


def _align(text: str) -> str:
    return text.split("\\begin{align}\n")[1].split("\\end{align}")[0]


def _legend(text: str) -> list[str]:
    """The definitions, one per line: ``$h = 4{,}096$: hidden size (model width);``."""
    return [row.removesuffix("\\par}") for row in text.split("\\end{align}")[1].splitlines() if row.startswith("$")]


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (32_999_781_433_344, 4, r"3.300 \times 10^{13}"),
        (12_345, 3, r"1.23 \times 10^{4}"),
        (99_995, 4, r"1.000 \times 10^{5}"),  # rounds up into the next power of ten
        (Fraction(1, 3), 4, r"3.333 \times 10^{-1}"),
        (7, 4, "7.000"),
    ],
)
def test_scientific_notation_is_rounded_half_up_exactly(value, digits, expected):
    assert scientific(value, digits) == expected


def test_meanings_drop_config_keys_and_technical_notes():
    assert meaning("key/value heads (= heads for MHA, 1 for MQA; num_key_value_heads)") == "key/value heads"
    assert meaning("hidden size (model width)") == "hidden size (model width)"
    assert meaning("attended (query, key) pairs of one sequence; from the attention.mask slot") == "attended (query, key) pairs of one sequence"


@pytest.mark.parametrize("name", EXAMPLES)
def test_one_equation_number_and_no_internal_identifiers(registry, name):
    plan = registry.select(flopsreg.Model.example(name))
    text = plan.render.latex(plan)
    rows = _align(text).split(" \\\\\n")
    assert [r"\notag" in row for row in rows] == [True] * (len(rows) - 1) + [False]  # F(s) is (1)
    assert all(r"\notag" in row for row in _align(plan.render.latex(plan, numbered=False)).split(" \\\\\n"))
    internal = {p.name for p in registry.patterns} | set(registry.slots) | {"_"}
    maths = [line for line in text.splitlines() if not line.startswith("%")]
    for line in maths:
        code = re.sub(r"\\[a-zA-Z]+|[a-z]_\{", "", line)  # commands and subscripts are LaTeX, not names
        assert not any(word in code for word in internal if len(word) > 1 and ("_" in word or "." in word)), line


def test_annotations_are_comments_only(registry):
    plan = registry.select(flopsreg.Model.example("gemma-3-4b"))
    text = plan.render.latex(plan, annotate=True)
    assert r"\notag \\ % attention.mask: sliding_window" not in text  # the mask is a definition row
    assert r"\notag \\ % sliding_window" in text and r"\notag \\ % attention.query: query_projection" in text


def test_terms_follow_the_forward_pass(registry):
    plan = registry.select(flopsreg.Model.example("llama-3-8b"))
    text = _align(plan.render.latex(plan))
    query = text.index(r"2 d_{\mathrm{h}} n_{\mathrm{h}} h s")  # q_proj
    keys_values = text.index(r"4 d_{\mathrm{h}} h n_{\mathrm{kv}} s")  # k_proj and v_proj
    core = text.index(r"4 d_{\mathrm{h}} n_{\mathrm{h}} P(s)")  # QK^T and PV
    mlp = text.index(r"2 d_{\mathrm{ff}} f h s")
    logits = text.index(r"2 h s V")
    assert query < keys_values < core < mlp < logits


def test_the_legend_gives_each_symbol_once_with_its_value(registry):
    plan = registry.select(flopsreg.Model.example("llama-3-8b"))
    legend = _legend(plan.render.latex(plan))
    symbols = [row.split("$: ")[0].split(" = ")[0].lstrip("$") for row in legend]
    assert len(symbols) == len(set(symbols)) and "F" not in symbols  # F means FLOPs only
    assert symbols[:3] == ["F(s)", r"F_{\mathrm{dense}}(s)", "s"]  # the functions, then in order of appearance
    assert r"$h = 4{,}096$: hidden size (model width);" in legend
    assert r"$d_{\mathrm{ff}} = 14{,}336$: inner width of a dense multilayer perceptron (MLP);" in legend
    assert r"$f = 3$: hidden-width matmuls per feed-forward network: 2, or 3 when gated (SwiGLU, GeGLU);" in legend


def test_kinds_that_differ_only_in_their_mask_are_written_as_the_difference(registry):
    plan = registry.select(flopsreg.Model.example("gemma-3-4b"))
    text = _align(plan.render.latex(plan))
    assert r"F_{\mathrm{global}}(s) &= F_{\mathrm{local}}(s) \notag \\" in text
    assert text.count(r"d_{\mathrm{ff}} f h s") == 1  # shared terms written once


def test_totals_in_scientific_notation_exact_and_per_token(registry):
    res = registry.evaluate(flopsreg.Model.example("gemma-3-4b"), seq_len=4096, batch=2)
    forward = 2 * gemma_forward(4096)  # derived matmul by matmul in test_cli
    text = _align(res.latex())
    assert rf"2\,F(4096) &\approx {scientific(forward)} \notag \\" in text
    assert "&= " + f"{forward:,}".replace(",", "{,}") in text
    assert rf"2\,F(4096)/8{{,}}192 &\approx {scientific(Fraction(forward, 2 * 4096))}\ \text{{per token}}" in text
    packed = _align(registry.evaluate(flopsreg.Model.example("gemma-3-4b"), seqlens=[100, 2000]).latex())
    assert rf"(F(100) + F(2000))/2{{,}}100 &\approx {scientific(Fraction(gemma_forward(100) + gemma_forward(2000), 2100))}" in packed


def test_the_document_is_complete(registry):
    res = registry.evaluate(flopsreg.Model.example("gemma-3-4b"), seq_len=8)
    text = res.latex(document=True)
    assert text.startswith("\\documentclass{article}\n\\usepackage{amsmath}\n\\allowdisplaybreaks\n\\begin{document}\n")
    assert text.endswith("\\end{document}\n") and "% Needs only \\usepackage{amsmath}." in text


def test_the_jupyter_latex_is_in_mathjax_s_subset(registry):
    res = registry.evaluate(flopsreg.Model.example("llama-4-scout"), seq_len=4096)
    text = res._repr_latex_()
    assert text.startswith("$$\\begin{aligned}\n") and text.endswith("\\end{aligned}$$")
    environments = set(re.findall(r"\\begin\{(\w+)\}", text))
    assert environments <= {"aligned", "cases", "matrix"}  # MathJax 3 renders these; no itemize, tabular
    assert "%" not in text and r"\notag" not in text


def test_a_block_of_extra_layers_is_the_sum_of_its_kinds(registry):
    model = flopsreg.Model.from_hf_config(Path(__file__).parents[1] / "data" / "hf" / "deepseek-v3.json", blocks=["mtp"])
    text = _align(registry.select(model).render.latex(registry.select(model)))
    assert r"F_{\mathrm{mtp}}(s) &= F_{\mathrm{MoE}}(s) \notag \\" in text
    assert r"&\quad + F_{\mathrm{mtp}}(s) \notag \\" + "\n" + r"&\quad + D_{\mathrm{mtp}}" in text  # short rows: room for (1)


def _every_example_and_hard_config() -> list[flopsreg.Model]:
    data = Path(__file__).parents[1] / "data" / "hf"
    return [flopsreg.Model.example(name) for name in example_names()] + [
        flopsreg.Model.from_hf_config(data / "glm-5.3-flash-defaults.json"),
        flopsreg.Model.from_hf_config(data / "deepseek-v3.json", blocks=["mtp"]),
    ]


@pytest.fixture(scope="module")
def fragments(registry):
    return {model.name: registry.evaluate(model, seq_len=4096).latex() for model in _every_example_and_hard_config()}


def test_no_kind_or_slot_identifier_and_no_tabular(registry, fragments):
    for name, text in fragments.items():
        assert "tabular" not in text, name
        maths = _align(text)
        assert r"\_" not in maths, (name, re.findall(r"\\mathrm\{[^}]*\\_[^}]*\}", maths))
        kinds = {unit.name for unit in registry.select(_model(name)).kinds if "_" in unit.name}
        assert not any(f"{{{kind}}}" in maths or rf"\mathrm{{{kind}}}" in maths for kind in kinds), name


def _model(name: str) -> flopsreg.Model:
    return next(model for model in _every_example_and_hard_config() if model.name == name)


def test_every_symbol_in_the_maths_is_defined(fragments):
    """Each function (F_x), quantity written per kind (P_x) and symbol of the equations has a definition."""
    for name, text in fragments.items():
        maths, definitions = _align(text), "\n".join(_legend(text))
        defined = {re.sub(r"\(s\)$", "", row.split("$: ")[0].lstrip("$").split(" = ")[0]) for row in _legend(text)}
        defined = {part.removesuffix("(s)") for entry in defined for part in entry.split(", ")}
        for symbol in set(re.findall(r"[FP]_\{\\mathrm\{[^}]*\}\}", maths)):
            assert symbol in defined, (name, symbol, sorted(defined))
        for symbol in ("h", "s", "V"):
            if re.search(rf"(?<![\\\w{{]){symbol}(?![\w}}])", maths.split("F(4096)")[0]):
                assert f"${symbol}" in definitions, (name, symbol)


def test_every_acronym_is_expanded_once_at_its_first_use(fragments):
    for name, text in fragments.items():
        prose = re.sub(r"\$[^$]*\$", "", " ".join(_legend(text)))  # the words, not the maths
        for acronym, words in ACRONYMS.items():
            uses = [m.start() for m in re.finditer(rf"(?<![\w-]){re.escape(acronym)}(?![\w-])", prose)]
            if uses:
                assert prose.count(f"{words} ({acronym})") == 1, (name, acronym)
                assert prose[: uses[0]].endswith(f"{words} ("), (name, acronym)


def test_one_notation_for_sums_heads_and_kernels(fragments):
    for name, text in fragments.items():
        maths = _align(text)
        assert r"\nolimits" not in maths and r"\sum_{t<s}" not in maths, name
        assert not re.search(r"(?<![\\\w{])[HK](?![\w}])|\bH_\{|d_\{[KV]\}", maths), (name, maths)


def test_examples_are_titled_as_their_files_name_them(registry):
    res = registry.evaluate(flopsreg.Model.example("qwen3.5-9b"), seq_len=8)
    assert "\\section*{Qwen3.5 9B}" in res.latex(document=True)
    assert res.latex().startswith("% Qwen3.5 9B: forward FLOPs")


def test_a_difference_keeps_this_kind_s_quantity_positive(registry):
    """Llama 4 as Gemma: F_{global} = F_{chunked} + c (P_global - P_chunked), never - (P_chunked - P_global)."""
    for name, this, earlier in (("llama-4-scout", "global", "chunked"), ("gemma-3-4b", "global", "local")):
        maths = _align(registry.evaluate(flopsreg.Model.example(name), seq_len=8).latex())
        row = maths.split(rf"F_{{\mathrm{{{this}}}}}(s) &= F_{{\mathrm{{{earlier}}}}}(s)")[1].split(r"F(s)")[0]
        assert row.index(r"+ 4 d_{\mathrm{h}} n_{\mathrm{h}} ") < row.index(rf"P_{{\mathrm{{{this}}}}}(s)") < row.index(rf"P_{{\mathrm{{{earlier}}}}}(s)"), row


def test_a_common_term_is_identical_in_every_kind_it_is_factored_from(registry):
    """Gemma 4 26B's head widths and KV heads differ by kind: no F_common holds them; terms stay in forward order."""
    text = _align(registry.select(flopsreg.Model.example("gemma-4-26b-a4b")).render.latex(registry.select(flopsreg.Model.example("gemma-4-26b-a4b"))))
    common = text.split(r"F_{\mathrm{common}}(s) &=")[1].split("F_{")[0] if r"F_{\mathrm{common}}(s) &=" in text else ""
    assert r"d_{\mathrm{h}}" not in common and r"n_{\mathrm{kv}}" not in common
    qwen = _align(registry.select(flopsreg.Model.example("qwen3.5-35b-a3b")).render.latex(registry.select(flopsreg.Model.example("qwen3.5-35b-a3b"))))
    linear = qwen.split(r"F_{\mathrm{linear}}(s) &=")[1].split(r"F_{\mathrm{full}}(s) &=")[0]
    assert linear.rstrip().endswith(r"+ F_{\mathrm{common}}(s) \notag \\")  # the MLP after the mixer


def _sums(maths: str) -> dict[str, list[str]]:
    """Each function's right side as its summands (LaTeX), rows joined: ``{lhs: [term, ...]}``."""
    sums: dict[str, list[str]] = {}
    lhs = ""
    for row in maths.split(" \\\\\n"):
        code = row.split(" % ")[0].replace(r"\notag", "").strip()
        left, _, right = code.partition("&")
        lhs = left.strip() or lhs
        right = re.sub(r"^(=|\\quad)\s*", "", right.strip())
        sums.setdefault(lhs, []).append(right if right.startswith(("+", "-")) else "+ " + right)
    terms = {}
    for name, parts in sums.items():
        text, depth, found, start = " ".join(parts), 0, [], 0
        for i, char in enumerate(text):
            depth += {"{": 1, "(": 1, "}": -1, ")": -1}.get(char, 0)
            if depth == 0 and text.startswith((" + ", " - "), i):
                found.append(text[start:i].strip())
                start = i + 1
        terms[name] = [term.lstrip("+ ").strip() for term in [*found, text[start:]] if term.lstrip("+ ").strip()]
    return terms


def test_no_identical_term_twice_in_one_sum(fragments):
    for name, text in fragments.items():
        for lhs, terms in _sums(_align(text).split(r"F(4096)")[0]).items():
            assert len(terms) == len(set(terms)), (name, lhs, terms)


def test_slots_counting_the_same_term_are_combined_and_explained(registry):
    """Qwen3.5's full layers: the query, output-gate and output projections are each 2 s h n_h d_h
    (hidden -> 16 heads x 256 and back); its shared-expert gate, hidden -> 1, is 2 h s."""
    plan = registry.select(flopsreg.Model.example("qwen3.5-35b-a3b"))
    text = plan.render.latex(plan)
    full = _sums(_align(text))[r"F_{\mathrm{full}}(s)"]
    assert r"3 \cdot 2 d_{\mathrm{h}} n_{\mathrm{h}} h s" == full[0]  # where the query projection falls
    legend = _legend(text)
    assert any(row.startswith(r"$3 \cdot 2 d_{\mathrm{h}} n_{\mathrm{h}} h s$: the query projection,") and "output projection" in row for row in legend)
    assert any(row.startswith("$2 h s$: a gate on the shared experts") for row in legend), legend


def test_the_k_pool_indexer_takes_two_rows_and_names_the_pool_count_once(registry):
    model = flopsreg.Model.from_hf_config(Path(__file__).parents[1] / "data" / "hf" / "glm-5.3-flash-defaults.json")
    maths = _align(registry.select(model).render.latex(registry.select(model)))
    assert maths.count(r"\lfloor") == 1 and r"p = \left\lfloor s/\ell \right\rfloor" in maths
    assert maths.count(r"P_{\mathrm{pool}}(s) &=") == 1
    kpool = maths.split(r"F_{\mathrm{k\text{-}pool\,MoE}}(s) &=")[1].split(r"F_{\mathrm{KDA\,MoE}}(s) &=")[0]
    assert len([row for row in kpool.split(" \\\\\n") if r"_{\mathrm{idx}}" in row]) <= 2, kpool


def test_documents_of_hf_configs_are_titled_without_underscores(registry):
    configs = sorted((Path(__file__).parents[1] / "data" / "hf").glob("*.json"))
    for path in configs:
        plan = registry.select(flopsreg.Model.from_hf_config(path))
        document = plan.render.latex(plan, document=True)
        heading = document.split("\\section*{")[1].split("}\n")[0]
        assert "_" not in heading and "_" not in document.split("\n% ")[1].split(":")[0], (path.name, heading)
    glm = flopsreg.Model.from_hf_config(configs[0].with_name("glm-5.3-flash-defaults.json"))
    assert "\\section*{GLM-5 Next}" in registry.select(glm).render.latex(registry.select(glm), document=True)
    config = json.loads(configs[0].with_name("glm-5.3-flash-defaults.json").read_text())
    named = flopsreg.Model.from_hf_config({**config, "_name_or_path": "zai-org/GLM-5.3-Flash"})
    assert registry.select(named).render.latex(registry.select(named)).startswith("% GLM-5.3-Flash: forward FLOPs")


def test_cases_beside_a_long_kind_title_are_factored_to_fit_the_column(registry):
    """The align's left column is as wide as its widest title: EXAONE MoE's "sliding dense" kind
    leaves megatron_bridge's sliding pairs too little room unless W (s - W) + W (W + 1) / 2 is
    written W (2s - W + 1) / 2; with EXAONE 4's short "sliding" titles the sum stays as it is."""
    data = Path(__file__).parents[1] / "data" / "hf"

    def pairs_row(name: str) -> str:
        plan = registry.select(flopsreg.Model.from_hf_config(data / f"{name}-defaults.json"), convention="megatron_bridge")
        return next(row for row in _align(plan.render.latex(plan)).splitlines() if row.startswith(r"P_{\mathrm{sliding"))

    assert r"\frac{W \left(2 s - W + 1\right)}{2} & \text{otherwise}" in pairs_row("exaone-moe")
    assert r"W \left(s - W\right) + \frac{W \left(W + 1\right)}{2} & \text{otherwise}" in pairs_row("exaone4")
