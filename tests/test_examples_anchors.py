"""Research cross-checks: the examples reproduce the exact totals of anchors.md section 10.

Those numbers were computed independently (research notes, exact integer arithmetic) for
training FLOPs of one 4096-token sequence: 3 x forward, exact causal and windowed pair
counts, the logits head counted once, the input embedding a gather (0 FLOPs).
"""

from __future__ import annotations

from pathlib import Path

import flopsreg

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _example(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_toml(EXAMPLES / f"{name}.toml")


def test_llama_3_8b_training_flops_match_anchor_10_1(registry):
    """Anchor 10.1: 197,631,846,383,616 with V = 128256 untied and no embedding FLOPs."""
    model = _example("llama-3-8b")
    assert model.params["vocab"] == 128256  # the anchor's assumption: the published vocab
    result = registry.evaluate(model, seq_len=4096)
    assert result.training == 197_631_846_383_616


def test_gemma_3_4b_training_flops_match_anchor_10_3(registry):
    """Anchor 10.3: 98,999,344,300,032 with tied embeddings, lm_head counted once, W = 1024."""
    model = _example("gemma-3-4b")
    result = registry.evaluate(model, seq_len=4096)
    # The anchor's assumptions: one logits matmul of 2 s h V over V = 262208, nothing for the
    # (tied) input embedding, 5 global layers at 5, 11, 17, 23, 29 and 29 with a 1024-key window.
    assert result.slot_flops["head"] == 2 * 4096 * 2560 * 262208
    assert [layer.index for layer in result.layers if layer.patterns["attention.mask"] == "full_causal"] == [
        5, 11, 17, 23, 29,
    ]
    assert {model.kinds["local"].params["window"]} == {1024}
    assert result.training == 98_999_344_300_032
