"""Hugging Face reader of ``laguna`` (Laguna): GQA attention with QK-norm and a softplus output
gate (one scalar per head, or one per channel), full or sliding per ``layer_types``, a head count
per layer, and dense or MoE MLPs per ``mlp_layer_types`` (sigmoid router with a score-correction
bias, an ungated shared expert).

Read from transformers 5.24 ``models/laguna/{configuration,modeling}_laguna.py``."""

from flopsreg.patterns.attention_head_gate import ATTENTION_HEAD_GATE
from flopsreg.patterns.attention_output_gate import ATTENTION_OUTPUT_GATE
from flopsreg.patterns.biases import ATTENTION_BIAS, ROUTER_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless, type_list
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.moe import MOE, moe_mlp
from flopsreg.patterns.norms import QK_NORM
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, head_dim_of, hookimpl

MLP_TYPES = {"dense": "dense", "sparse": "moe"}


def _gate(c: Fields) -> frozenset[str]:
    """LagunaAttention: ``gating`` true or "per-head" gives g_proj hidden -> heads; any other value
    (false, "per-element") hidden -> heads x head_dim. The gate always runs."""
    gating = c.data.get("gating", True)
    if gating is True or gating == "per-head":
        return ATTENTION_HEAD_GATE.flags
    if gating is False or gating == "per-element":
        return ATTENTION_OUTPUT_GATE.flags
    raise c.error("gating", f" = {gating!r}: expected true, false, 'per-head' or 'per-element'")


def _heads(c: Fields, layers: int) -> Layers[int]:
    """num_attention_heads_per_layer, else num_attention_heads on every layer (LagunaConfig.__post_init__)."""
    listed = c.int_list("num_attention_heads_per_layer", minimum=1)
    if listed is None:
        return Layers.uniform(c.int("num_attention_heads"), layers)
    if len(listed) != layers:
        raise c.error("num_attention_heads_per_layer", f": {len(listed)} entries but num_hidden_layers = {layers}; expected one per layer")
    return Layers.of(listed)


def _attention(c: Fields, layers: int, params: dict[str, int]) -> tuple[Layers[str], dict]:
    """Each layer's attention: its layer_types entry (default full everywhere) and, when the head
    counts differ between layers, its head count in a kind of its own."""
    types = Layers.of(type_list(c, "layer_types", (FULL, SLIDING), layers) or Layers.uniform(FULL, layers))
    heads = _heads(c, layers)
    if len(heads.distinct()) == 1:
        params["heads"] = heads[0]
        return types, {}
    del params["heads"]  # set on every kind: no model-wide value beside the per-kind ones
    window = {WINDOW.name: c.int("sliding_window", why="some layers slide")} if SLIDING in types else {}
    kinds = {}

    def kind_of(entry: tuple[str, int]) -> str:
        kind, count = entry
        name = f"{'sliding' if kind == SLIDING else 'full'}_{count}_heads"
        sliding = kind == SLIDING
        kinds[name] = (SLIDING_WINDOW.flags if sliding else frozenset(), {"heads": count, **(window if sliding else {})})
        return name

    return Layers.zip(types, heads).map(kind_of), kinds


def laguna(c: Fields) -> Decoder:
    """LagunaConfig: head_dim 128 (a field, so always set), attention_bias on q/k/v/o_proj, no tied head."""
    refuse_unless(c, "moe_apply_router_weight_on_input", False, False, "transformers raises NotImplementedError for it")
    layers = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    params = {**gqa_params(c, head_dim=head_dim_of(c, c.int("hidden_size"), heads, class_default=128)), "vocab": c.int("vocab_size")}
    attention, attention_kinds = _attention(c, layers, params)
    given = type_list(c, "mlp_layer_types", MLP_TYPES, layers)
    mlps = Layers.of(given).map(MLP_TYPES.__getitem__) if given is not None else Layers.split(layers, "dense", "moe", 1)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        # LagunaSparseMoeBlock: LagunaMLP shared_experts of shared_expert_intermediate_size, no gate.
        kinds["moe"] = moe_mlp(
            c.int("num_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"),
            c.int("shared_expert_intermediate_size", minimum=0),
        )
    # Two RMSNorms per layer, q_norm/k_norm of head_dim; the router's e_score_correction_bias is an
    # nn.Parameter of num_experts (counted by transformers, as router_bias).
    flags = silu_gated(c) | _gate(c) | weight_flags(c, tied=False, extra=QK_NORM.flags | (ROUTER_BIAS.flags - MOE.flags))
    if c.bool("attention_bias", default=False):
        flags |= ATTENTION_BIAS.flags
    return Decoder(params=params, flags=flags, attention=attention, attention_kinds=attention_kinds, mlps=mlps, mlp_kinds=kinds)


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="laguna", title="Laguna", read=laguna,
                 summary="LagunaConfig: gated GQA (per-head or per-channel softplus gate), heads per layer, dense then MoE layers with a shared expert"),
    ]
