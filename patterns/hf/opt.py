"""Hugging Face reader of ``opt`` (OPT): GPT-2 era blocks as a :class:`FamilyTraits` record, with
the configurations no pattern holds refused by name (a narrower embedding projected in and out, no
final LayerNorm)."""

import attrs

from flopsreg.patterns.biases import ATTENTION_BIAS, MLP_BIAS
from flopsreg.patterns.hf._traits import FamilyTraits, Positions, Switch, Width
from flopsreg.patterns.norms import DECODER_LAYERNORMS
from flopsreg.plugin import Decoder, Fields, HFReader, hookimpl

# modeling_opt.py: OPTLearnedPositionalEmbedding holds max_position_embeddings + 2 rows (offset 2);
# q/k/v/out_proj and fc1/fc2 (ffn_dim, activation_function relu: plain) biased iff enable_bias
# (default true); self_attn_layer_norm, final_layer_norm per layer and the decoder's
# final_layer_norm are nn.LayerNorm, weightless when layer_norm_elementwise_affine is false;
# lm_head tied by default.
OPT = FamilyTraits(
    name="opt", title="OPT", summary="OPTConfig: learned positions (+2 rows), LayerNorms, biases, plain ReLU MLP of ffn_dim",
    tied=True, gated=False, activation=("activation_function", "relu"), norms=DECODER_LAYERNORMS.flags,
    switches=(Switch("enable_bias", True, ATTENTION_BIAS.flags | MLP_BIAS.flags),), width=Width("ffn_dim"), positions=Positions(offset=2),
    heads_only=True,
)
WEIGHTLESS_NORMS = attrs.evolve(OPT, norms=())


def opt(c: Fields) -> Decoder:
    """OPTConfig read by the OPT record; refused: ``word_embed_proj_dim`` other than hidden_size
    (project_in and project_out, OPT-350m) and a decoder without its final LayerNorm
    (``do_layer_norm_before`` false or ``_remove_final_layer_norm`` true)."""
    hidden = c.int("hidden_size")
    projected = c.optional_int("word_embed_proj_dim") or hidden  # OPTConfig.__post_init__: null is hidden_size
    if projected != hidden:
        raise c.error(
            "word_embed_proj_dim", f" = {projected}: the embedding and head of that width with project_in/project_out "
            f"(hidden_size {hidden}) are in no pattern; expected word_embed_proj_dim = hidden_size",
        )
    if not c.bool("do_layer_norm_before", default=True) or c.bool("_remove_final_layer_norm", default=False):
        field = "do_layer_norm_before" if not c.bool("do_layer_norm_before", default=True) else "_remove_final_layer_norm"
        raise c.error(field, f" = {str(c.bool(field)).lower()}: OPTDecoder then has no final LayerNorm, which no pattern leaves out; "
                      "expected do_layer_norm_before true and _remove_final_layer_norm false")
    traits = OPT if c.bool("layer_norm_elementwise_affine", default=True) else WEIGHTLESS_NORMS
    return traits(c)


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="opt", title=OPT.title, summary=OPT.summary, read=opt)]
