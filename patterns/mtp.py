"""Multi-token prediction (DeepSeek-V3): per depth an eh projection, a decoder layer, the head.

The kind of each depth's decoder layer is listed in the model plan's ``mtp`` block; the engine
plans those layers like decoder layers and gives their FLOPs as ``MTP_BLOCK.flops``.
"""

from flopsreg.patterns.logits import VOCAB
from flopsreg.plugin import Block, Constraint, Pattern, h, hookimpl, s

MTP_BLOCK = Block(
    name="mtp",
    latex=r"\mathrm{mtp}",
    meaning="decoder layers inside the multi-token-prediction modules, one per depth (plan.mtp)",
    layer_flags={"mtp_layer"},  # for conventions that count these layers differently (torchtitan: no attention term)
    unasked_flag="mtp_not_asked",  # num_nextn_predict_layers > 0 read without blocks=("mtp",): Megatron-Bridge counts them anyway
)
mtp_block, mtp_layers = MTP_BLOCK.flops, MTP_BLOCK.layers

MTP = Pattern(
    name="mtp",
    slot="mtp",
    flags={"mtp"},
    precedence=10,
    scope="model",
    params=(VOCAB,),
    # Per depth: [norm(h_prev); norm(embedding)] (2h) -> h, a decoder layer, the shared head.
    formula=mtp_block + mtp_layers * (2 * s * 2 * h * h + 2 * s * h * VOCAB.symbol),
    constraints=(
        Constraint(condition=mtp_layers >= 1, message="flag mtp needs the MTP decoder layers listed in plan.mtp"),
    ),
    summary="per MTP depth: eh projection 2h -> h, one decoder layer (plan.mtp) and the shared logits head",
    reference="DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report' (arXiv:2412.19437), section 2.2",
    # Per depth: the eh projection and its three norms (enorm, hnorm, shared_head.norm); the
    # embedding and head are the main model's (shared), the decoder layer is the block's own.
    weights=mtp_layers * (2 * h * h + 3 * h),
)


@hookimpl
def flopsreg_register_blocks():
    return [MTP_BLOCK]


@hookimpl
def flopsreg_register_patterns():
    return [MTP]
