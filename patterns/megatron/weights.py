"""Megatron-LM's arguments for the weights that do no matmul: norms, biases, a tied embedding,
learned positions. They change parameter counts only, never FLOPs.

A run's namespace holds every one of these arguments (argparse fills the defaults:
``normalization="LayerNorm"``, ``add_bias_linear=True``, ``untie_embeddings_and_output_weights=False``,
``position_embedding_type="learned_absolute"``); an argument a hand-made namespace leaves out is
read as adding nothing. Biases Megatron-LM adds where flopsreg has no rule for them (MLA's
projections, shared experts) are refused, naming the argument.
"""

import attrs

from flopsreg.patterns.biases import ATTENTION_BIAS, EXPERT_BIAS, MLP_BIAS, QKV_BIAS
from flopsreg.patterns.dense_mlp import DENSE_MLP
from flopsreg.patterns.embedding import TIED_LOGITS
from flopsreg.patterns.mla_projection import MLA_PROJECTION
from flopsreg.patterns.moe import MOE
from flopsreg.patterns.norms import DECODER_LAYERNORMS, DECODER_NORMS, QK_NORM
from flopsreg.patterns.position_embedding import LEARNED_POSITIONS, MAX_POSITIONS
from flopsreg.patterns.shared_experts import SHARED_EXPERTS
from flopsreg.plugin import MegatronReader, ModelError, hookimpl

NORMS = {"RMSNorm": DECODER_NORMS.flags, "LayerNorm": DECODER_LAYERNORMS.flags}
NO_POSITIONS = ("rope", "yarn", "mrope", "none")  # rotary or no position embedding: no weights


def _biases(args, decoder) -> set[str]:
    flags = QKV_BIAS.flags if args.flag("add_qkv_bias") else set()
    if not args.flag("add_bias_linear"):
        return set(flags)
    if MLA_PROJECTION.flags <= decoder.flags:
        raise ModelError("args.add_bias_linear = True: the biases of MLA's projections are not counted by flopsreg; expected False")
    moe = [kind for kind, (kind_flags, _) in decoder.mlp_kinds.items() if kind in decoder.mlps and MOE.flags <= kind_flags]
    if any(SHARED_EXPERTS.flags <= decoder.mlp_kinds[kind][0] for kind in moe):
        raise ModelError("args.add_bias_linear = True: the biases of shared experts are not counted by flopsreg; expected False")
    return set(flags) | ATTENTION_BIAS.flags | (MLP_BIAS.flags - DENSE_MLP.flags) | ((EXPERT_BIAS.flags - MOE.flags) if moe else set())


def read(args, decoder):
    """The weight flags (and ``max_positions`` for learned positions) the arguments set."""
    flags, params = set(decoder.flags), dict(decoder.params)
    normalization = args.get("normalization")
    if normalization is not None:
        if normalization not in NORMS:
            raise ModelError(f"args.normalization = {normalization!r}: expected one of {', '.join(map(repr, NORMS))}")
        flags |= NORMS[normalization]
        if args.flag("qk_layernorm"):
            flags |= QK_NORM.flags
    flags |= _biases(args, decoder)
    if args.flag("untie_embeddings_and_output_weights") is False:
        flags |= TIED_LOGITS.flags
    positions = args.get("position_embedding_type")
    if positions == "learned_absolute":
        flags |= LEARNED_POSITIONS.flags
        params[MAX_POSITIONS.name] = args.int("max_position_embeddings", " (needed with position_embedding_type learned_absolute)")
    elif positions is not None and positions not in NO_POSITIONS:
        raise ModelError(f"args.position_embedding_type = {positions!r}: expected 'learned_absolute' or one of {', '.join(NO_POSITIONS)}")
    return attrs.evolve(decoder, flags=flags, params=params)


WEIGHTS = MegatronReader(
    name="weights",
    arguments=(
        "normalization", "qk_layernorm", "add_bias_linear", "add_qkv_bias",
        "untie_embeddings_and_output_weights", "position_embedding_type", "max_position_embeddings",
    ),
    read=read,
    precedence=20,  # after the attention and MLP readers: MLA and MoE are known
    summary="normalization, qk_layernorm, add_bias_linear, add_qkv_bias, untie_embeddings_and_output_weights, "
    "position_embedding_type: flags of weights without matmuls (parameter counts only)",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [WEIGHTS]
