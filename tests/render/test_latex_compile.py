"""The LaTeX of every bundled example and every test Hugging Face config compiles with pdflatex.

In a plain ``article`` and a two-column ``article`` that load only amsmath: no error, and no
overfull box wider than 1pt (the output must fit one column). CI installs pdflatex and sets
``FLOPSREG_REQUIRE_PDFLATEX=1``, so there a missing pdflatex fails instead of skipping.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import flopsreg
from flopsreg.render.tex import escape

pytestmark = pytest.mark.slow  # every test here runs pdflatex or pip

ROOT = Path(__file__).resolve().parents[2]
PDFLATEX = shutil.which("pdflatex")
REQUIRED = os.environ.get("FLOPSREG_REQUIRE_PDFLATEX") == "1"

if PDFLATEX is None and not REQUIRED:
    pytest.skip("pdflatex is not installed (apt-get install texlive-latex-base): the LaTeX compile tests did not run", allow_module_level=True)


def _models() -> list[tuple[str, flopsreg.Model]]:
    examples = [(path.stem, flopsreg.Model.example(path.stem)) for path in sorted((ROOT / "examples").glob("*.toml"))]
    configs = [(f"hf/{path.stem}", flopsreg.Model.from_hf_config(path)) for path in sorted((ROOT / "tests" / "data" / "hf").glob("*.json"))]
    with_blocks = [("hf/deepseek-v3 + MTP", flopsreg.Model.from_hf_config(ROOT / "tests" / "data" / "hf" / "deepseek-v3.json", blocks=["mtp"]))]
    return examples + configs + with_blocks


TWO_PAGES = {f"{prefix}kimi-linear-48b-a3b{suffix}" for prefix in ("", "hf/") for suffix in ("", " (chunked_scan)")}
# DeepSeek-V4: two layer kinds of 12 slots (compressors, the CSA indexer's scores, mHC) and 20 symbols.
TWO_PAGES |= {f"{name}{suffix}" for name in ("deepseek-v4-flash", "hf/deepseek-v4-defaults") for suffix in ("", " (exact)", " (chunked_scan)", " (nanogpt)")}
# Gemma 3n: four layer kinds (sliding, full, each with and without shared K/V), every 35-layer count and 19 symbols.
TWO_PAGES |= {f"{name}{suffix}" for name in ("gemma-3n-e4b", "hf/gemma-3n-e4b-defaults") for suffix in ("", " (exact)", " (chunked_scan)")}
# GLM-5.3-Flash: three layer kinds (KDA + dense, KDA + MoE, MLA + k-pool DSA + MoE), mHC, the pool
# indexer's scores over floor(s/L) pools (a row per summand) and 25 symbols; under chunked_scan a
# one-column article takes a third page (the bound below is over the whole document).
TWO_PAGES |= {f"hf/glm-5.3-flash-defaults{suffix}" for suffix in ("", " (exact)", " (chunked_scan)")}
# Lara Mini and Ling 3.0 under chunked_scan: three layer kinds (a linear mixer with its padded conv and
# chunked scan, sliding or MLA attention, MoE with shared experts) and their symbols.
TWO_PAGES |= {"hf/lara-mini-defaults (chunked_scan)", "hf/bailing-hybrid-defaults (chunked_scan)"}
# Dory with its totals: four layer kinds (sliding and full, each once and looped); Hy4: three (an
# indexer or a shared top-k, dense or MoE) with iHC, sinks and the gate; A.X K2: two with its split
# query/gate and norm gates.
TWO_PAGES |= {"hf/dory-defaults"}
TWO_PAGES |= {f"hf/hy-v4-defaults{suffix}" for suffix in ("", " (exact)", " (chunked_scan)", " (hf_trainer)", " (nanogpt)")}
TWO_PAGES |= {f"hf/axk2-defaults{suffix}" for suffix in ("", " (exact)", " (chunked_scan)", " (nanogpt)")}
# dots.3 note: three layer kinds (indexed dense, indexed MoE, sliding MoE) whose MLA widths differ,
# each symbol written per kind; all but hf_trainer's take a third page in a one-column article.
_DOTS3 = {f"hf/dots3-note-text-defaults{suffix}" for suffix in ("", " (exact)", " (chunked_scan)", " (nanogpt)")}
TWO_PAGES |= _DOTS3 | {"hf/dots3-note-text-defaults (hf_trainer)"}
# Llama 4 Scout with its vision tower's align (six pieces over three named parts) beside 36 chunked
# and 12 full MoE layers, in a one-column article.
TWO_PAGES |= {"hf/llama-4-scout (exact)"}
# Mistral Large 4's formula: its MLA + DSA layer kinds, then its
# Pixtral tower's closed forms (six pieces and the merged tokens M) run on to a second page.
TWO_PAGES |= {"hf/mistral-large-4 (exact)"}
# Phi-4-multimodal under the exact convention: its vision tower's align (the crops' real patches,
# their squared lengths and the image's tokens named, five pieces and their sum) and its audio
# encoder's (nine pieces over a clip's spectrogram) cannot break: a page each after the language
# model's in a one-column article.
TWO_PAGES |= {"hf/phi4-multimodal-defaults (exact)"}
# Qwen3-Omni under the exact convention: its ViT's closed forms and its audio encoder's align (eight
# pieces over seven named parts of a clip's chunks and windows) after the MoE decoder's.
TWO_PAGES |= {f"hf/{name}-defaults (exact)" for name in ("qwen3-omni-moe", "qwen3-omni-moe-thinker")}
# A third page in a one-column article, the definitions running on: Gemma 3n with its totals (four
# kinds, two written as differences, one term of the difference per row) and GLM-5.3-Flash.
THREE_PAGES = {"gemma-3n-e4b", "hf/gemma-3n-e4b-defaults", "hf/glm-5.3-flash-defaults", "hf/glm-5.3-flash-defaults (chunked_scan)"}
THREE_PAGES |= _DOTS3 | {"hf/phi4-multimodal-defaults (exact)"}
# Gemma 3n's defaults under the exact convention: the vision tower's closed forms and the audio
# encoder's (nine pieces over a clip's spectrogram and the mask's pairs) after the four layer kinds.
THREE_PAGES |= {"hf/gemma-3n-e4b-defaults (exact)"}


def _compile(tmp_path: Path, source: str) -> str:
    """pdflatex's log of *source*; the test fails with the log's error lines if it does not compile."""
    assert PDFLATEX is not None, "FLOPSREG_REQUIRE_PDFLATEX=1 but pdflatex is not installed"
    (tmp_path / "doc.tex").write_text(source, encoding="utf-8")
    run = subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    log = (tmp_path / "doc.log").read_text(encoding="utf-8", errors="replace")
    errors = [line for line in log.splitlines() if line.startswith("!")]
    assert run.returncode == 0 and not errors, f"pdflatex failed: {errors or run.stdout[-2000:]}"
    return log


def _overfull(log: str, source: str) -> list[str]:
    """Each overfull box wider than 1pt, with the model whose section holds its source line."""
    lines = source.splitlines()
    found = []
    for width, line in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\).*?lines? (\d+)", log):
        if float(width) > 1:
            model = next((text for text in reversed(lines[: int(line)]) if text.startswith(r"\subsubsection*")), "?")
            found.append(f"{model}: {width}pt at line {line}: {lines[int(line) - 1][:120]}")
    return found


def _fragments(registry: flopsreg.Registry) -> list[tuple[str, str]]:
    """``(title, LaTeX)``: each model's result at 4096 tokens and its formula under every
    convention that can count it."""
    fragments = []
    for name, model in _models():
        fragments.append((name, registry.evaluate(model, seq_len=4096).latex()))
        for convention in ["exact", *registry.conventions]:
            try:
                plan = registry.select(model, convention=convention)
            except flopsreg.FlopsregError:
                continue
            fragments.append((f"{name} ({convention})", plan.render.latex(plan)))
    return fragments


@pytest.mark.parametrize("options", ["", "[twocolumn]"], ids=["article", "twocolumn-article"])
def test_every_model_compiles_fits_the_column_and_one_page(tmp_path, options):
    fragments = _fragments(flopsreg.Registry.default())
    body = "".join(f"\\clearpage\n\\subsubsection*{{{escape(title)}}}\n{latex}" for title, latex in fragments)
    source = f"\\documentclass{options}{{article}}\n\\usepackage{{amsmath}}\n\\begin{{document}}\n{body}\\end{{document}}\n"
    log = _compile(tmp_path, source)
    assert _overfull(log, source) == []
    pages = int(re.search(r"Output written on doc\.pdf \((\d+) pages?", log).group(1))
    # each fragment starts a page and none spills onto another, but the longest: Kimi Linear's
    # three layer kinds (KDA + dense, KDA + MoE, MLA + MoE) and 18 symbols take a second page
    # with its numbers and under the chunked_scan convention (the definitions, a paragraph, may
    # run on to the next page or column: no tabular)
    long = [title for title, _ in fragments if title in TWO_PAGES]
    assert len(long) == len(TWO_PAGES)
    assert len(fragments) <= pages <= len(fragments) + len(long) + len(THREE_PAGES)


def test_the_document_form_compiles_on_its_own(tmp_path):
    res = flopsreg.Registry.default().evaluate(flopsreg.Model.example("llama-4-scout"), seqlens=[812, 4096, 77], batch=8)
    source = res.latex(document=True)
    assert source.startswith(r"\documentclass{article}")
    assert _overfull(_compile(tmp_path, source), source) == []
