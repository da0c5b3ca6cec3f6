"""Multi-token prediction whose depths run several layers each (Megatron-LM hybrid patterns).

A hybrid pattern ``"M*M*/*E/*E"`` gives each of its two MTP depths an attention and a MoE layer;
the plan's ``mtp`` block lists all of them, so the per-depth terms count ``mtp_depth`` times,
not once per listed layer as :mod:`flopsreg.patterns.mtp` does.
"""

from flopsreg.patterns.logits import VOCAB
from flopsreg.patterns.mtp import mtp_block
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

LAYERED_MTP = "layered_mtp"  # model flag: each MTP depth runs the layers the plan lists for it
MTP_DEPTH = Param(name="mtp_depth", latex="D", meaning="multi-token-prediction depths, each running several layers")

LAYERED_MTP_PATTERN = Pattern(
    name="layered_mtp",
    slot="mtp",
    flags={"mtp", LAYERED_MTP},
    precedence=20,
    scope="model",
    params=(MTP_DEPTH, VOCAB),
    formula=mtp_block + MTP_DEPTH.symbol * (2 * s * 2 * h * h + 2 * s * h * VOCAB.symbol),
    weights=MTP_DEPTH.symbol * 2 * h * h,  # one eh projection per depth; the head is the model's
    summary="per MTP depth: eh projection 2h -> h, that depth's layers (plan.mtp) and the shared logits head",
    reference="Megatron-LM megatron/core/models/hybrid/hybrid_layer_specs.py _hybrid_mtp_block_spec and "
    "megatron/core/transformer/multi_token_prediction.py MultiTokenPredictionLayer (eh_proj 2h -> h, then the "
    "pattern's MTP part as a nested hybrid stack)",
)


@hookimpl
def flopsreg_register_patterns():
    return [LAYERED_MTP_PATTERN]
