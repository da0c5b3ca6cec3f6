"""The LaTeX of every bundled example and every test Hugging Face config compiles with pdflatex.

In a plain ``article`` and a two-column ``article`` with the preamble of the document flopsreg
writes (amsmath and its ``\\allowdisplaybreaks``): no error, no overfull box wider than 1pt (the
output must fit one column), nothing running off a page's foot, and each fragment on the pages
listed here. CI installs pdflatex and sets
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
from flopsreg.render.tex import PREAMBLE, escape

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


# The pages each fragment longer than one takes, each fragment starting a page, in the document
# flopsreg writes (amsmath and \allowdisplaybreaks: a long align breaks between rows). A
# one-column article: Kimi Linear's three layer kinds (KDA + dense, KDA + MoE, MLA + MoE) and 18
# symbols, with its numbers and under chunked_scan.
_KIMI = {f"{prefix}kimi-linear-48b-a3b{suffix}" for prefix in ("", "hf/") for suffix in ("", " (chunked_scan)")}
# DeepSeek-V4: two layer kinds of 12 slots (compressors, the CSA indexer's scores, mHC) and 20 symbols.
_DEEPSEEK_V4 = {f"{name}{suffix}" for name in ("deepseek-v4-flash", "hf/deepseek-v4-defaults") for suffix in ("", " (exact)", " (chunked_scan)")}
# Gemma 3n: four layer kinds (sliding, full, each with and without shared K/V), every 35-layer count and 19 symbols.
_GEMMA3N = {f"{name}{suffix}" for name in ("gemma-3n-e4b", "hf/gemma-3n-e4b-defaults") for suffix in ("", " (chunked_scan)")} | {"gemma-3n-e4b (exact)"}
# GLM-5.3-Flash: three layer kinds (KDA + dense, KDA + MoE, MLA + k-pool DSA + MoE), mHC, the pool
# indexer's scores over floor(s/L) pools (a row per summand) and 25 symbols.
_GLM = {f"hf/glm-5.3-flash-defaults{suffix}" for suffix in ("", " (exact)", " (chunked_scan)", " (hf_trainer)")}
# Lara Mini and Ling 3.0 under chunked_scan: three layer kinds (a linear mixer with its padded conv and
# chunked scan, sliding or MLA attention, MoE with shared experts) and their symbols; Zamba2's
# Mamba-2 scan beside its shared attention blocks.
_HYBRID = {"hf/lara-mini-defaults (chunked_scan)", "hf/bailing-hybrid-defaults (chunked_scan)", "hf/zamba2-defaults (chunked_scan)"}
# Dory with its totals: four layer kinds (sliding and full, each once and looped); Hy4: three (an
# indexer or a shared top-k, dense or MoE) with iHC, sinks and the gate; A.X K2: two with its split
# query/gate and norm gates.
_DORY_HY_AXK2 = {"hf/dory-defaults"} | {f"hf/hy-v4-defaults{suffix}" for suffix in ("", " (exact)", " (chunked_scan)", " (hf_trainer)", " (nanogpt)")}
_DORY_HY_AXK2 |= {f"hf/axk2-defaults{suffix}" for suffix in ("", " (exact)", " (chunked_scan)", " (nanogpt)")}
# dots.3 note: three layer kinds (indexed dense, indexed MoE, sliding MoE) whose MLA widths differ, each symbol written per kind.
# The wrapper dots3_note holds the same decoder (its MoE ViT's and audio encoder's forms follow under exact).
_DOTS3 = {f"{name}{suffix}" for name in ("hf/dots3-note-text-defaults", "hf/dots3-note-defaults")
          for suffix in ("", " (exact)", " (chunked_scan)", " (hf_trainer)", " (nanogpt)")}
# Towers after the language model under the exact convention: Llama 4 Scout's vision align (six
# pieces over three named parts), Mistral Large 4's Pixtral closed forms after its MLA + DSA kinds,
# Phi-4-multimodal's vision and audio aligns, Qwen2.5-Omni's ViT align (its windows' named parts) and
# audio encoder's (its windows' m, u and pairs named, six pieces and their sum).
_TOWERS = {"hf/llama-4-scout (exact)", "hf/mistral-large-4 (exact)", "hf/phi4-multimodal-defaults (exact)"}
_TOWERS |= {"hf/qwen2-5-omni-defaults (exact)", "hf/qwen2-5-omni-thinker-defaults (exact)"}
# Qwen3-Omni: its ViT's closed forms and its audio encoder's align (eight pieces over seven named
# parts of a clip's chunks and windows) after the MoE decoder's.
_TOWERS |= {f"hf/{name}-defaults (exact)" for name in ("qwen3-omni-moe", "qwen3-omni-moe-thinker")}
# Qwen4-Exp: two layer kinds (Gated DeltaNet; gated attention with the QSA indexer's scores over
# floor(s/P) blocks and its k-pool mask), the low-rank gated residuals and their symbols.
_QWEN4_EXP = {f"hf/qwen4-exp-defaults{suffix}" for suffix in ("", " (exact)", " (chunked_scan)")}
ONE_COLUMN = dict.fromkeys(_KIMI | _DEEPSEEK_V4 | _GEMMA3N | _GLM | _HYBRID | _DORY_HY_AXK2 | _DOTS3 | _TOWERS | _QWEN4_EXP, 2)
# Gemma 3n's defaults under the exact convention: the four layer kinds, then MobileNetV5's closed
# forms and the audio encoder's (its useful frames named, nine pieces over a clip's spectrogram).
ONE_COLUMN["hf/gemma-3n-e4b-defaults (exact)"] = 4
# dots.3 note's wrapper under the exact convention: its decoder's kinds, then the MoE ViT's align
# (seven pieces over the patches P) and the audio encoder's (six over n and the taps T_1..T_3).
ONE_COLUMN["hf/dots3-note-defaults (exact)"] = 3
# A two-column article: those two alone run on to a second page.
TWO_COLUMN = {"hf/gemma-3n-e4b-defaults (exact)": 2, "hf/dots3-note-defaults (exact)": 2}


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


_START = "fragment starts on page"


def _pages(log: str) -> list[int]:
    """The pages each fragment takes, from the page each one (and the end) starts on."""
    starts = [int(page) for page in re.findall(rf"^{_START} (\d+)$", log, re.MULTILINE)]
    return [after - before for before, after in zip(starts, starts[1:])]


@pytest.mark.parametrize(("options", "long"), [("", ONE_COLUMN), ("[twocolumn]", TWO_COLUMN)], ids=["article", "twocolumn-article"])
def test_every_model_compiles_fits_the_column_and_its_pages(tmp_path, options, long):
    fragments = _fragments(flopsreg.Registry.default())
    mark = f"\\clearpage\n\\typeout{{{_START} \\thepage}}\n"
    body = "".join(f"{mark}\\subsubsection*{{{escape(title)}}}\n{latex}" for title, latex in fragments)
    source = f"\\documentclass{options}{{article}}\n{PREAMBLE}\\begin{{document}}\n{body}{mark}\\end{{document}}\n"
    log = _compile(tmp_path, source)
    assert _overfull(log, source) == []
    assert "Overfull \\vbox" not in log  # an align that cannot break runs off the page's foot
    pages = _pages(log)
    assert len(pages) == len(fragments) and min(pages) == 1
    assert {title: n for (title, _), n in zip(fragments, pages, strict=True) if n > 1} == long


def test_the_document_form_compiles_on_its_own(tmp_path):
    res = flopsreg.Registry.default().evaluate(flopsreg.Model.example("llama-4-scout"), seqlens=[812, 4096, 77], batch=8)
    source = res.latex(document=True)
    assert source.startswith(r"\documentclass{article}")
    assert _overfull(_compile(tmp_path, source), source) == []
