"""Hugging Face reader of ``hrm_text`` (HRM-Text): two stacks of ``num_layers_per_stack`` layers,
L and H, run in a loop the config fixes: H_cycles times, the L stack L_cycles times and then the
H stack once. Each stack's layers are shared blocks: weights held once, FLOPs per run."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.embedding import TIED_LOGITS
from flopsreg.patterns.hf._common import silu_gated
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

LOW, HIGH = "low_stack", "high_stack"
GATED_ATTENTION = frozenset({"output_gate"})  # HrmTextAttention.gate_proj: sigmoid(gate) * attention, hidden -> heads x head_dim


def hrm_text(c: Fields) -> Decoder:
    """HrmTextConfig: num_layers_per_stack null means num_hidden_layers is the layers of one stack
    (__post_init__ then writes the run total, per_stack x H_cycles x (L_cycles + 1), to
    num_hidden_layers, which only sizes the cache); head_dim 128 by default, MHA (no kv heads);
    RMSNorms without weights; tie_word_embeddings false by default."""
    per_stack = c.optional_int("num_layers_per_stack") or c.int("num_hidden_layers")
    high, low = c.int("H_cycles"), c.int("L_cycles")
    refuse_unless(c, "attention_bias", False, False, "the attention bias patterns hold no bias for the output gate's gate_proj")
    heads = c.int("num_attention_heads")
    params = {**gqa_params(c, kv_heads=heads, head_dim=c.int_or_default("head_dim", 128)), "vocab": c.int("vocab_size")}
    flags = silu_gated(c) | {"initial_state"}
    if c.bool("tie_word_embeddings", default=False):
        flags |= TIED_LOGITS.flags
    if c.bool("mlp_bias", default=False):
        flags |= {"mlp_bias"}
    # One H cycle: the L stack L_cycles times, then the H stack (HrmTextModel.forward).
    cycle = [LOW] * (low * per_stack) + [HIGH] * per_stack
    return Decoder(
        params=params,
        flags=flags,
        attention=Layers(first=(), cycle=cycle, length=high * len(cycle)),
        attention_kinds={LOW: (GATED_ATTENTION, {}), HIGH: (GATED_ATTENTION, {})},
        mlps=Layers.uniform("dense", high * len(cycle)),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
        weight_copies={LOW: per_stack, HIGH: per_stack},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="hrm_text", title="HRM-Text", read=hrm_text,
                 summary="HrmTextConfig: an L and an H stack run H_cycles x (L_cycles L runs, one H run); each stack's weights held once, FLOPs per run"),
    ]
