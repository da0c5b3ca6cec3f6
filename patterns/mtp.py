"""Multi-token prediction (DeepSeek-V3): per depth an eh projection and the shared head again.

The decoder layer of each depth is listed in the model plan's ``mtp`` entry and counted like
any other layer; this pattern adds what an MTP module has besides that layer.
"""

from flopsreg import Constraint, Pattern, hookimpl
from flopsreg.patterns.logits import VOCAB
from flopsreg.symbols import h, mtp_layers, s

MTP = Pattern(
    name="mtp",
    slot="mtp",
    flags={"mtp"},
    precedence=10,
    scope="model",
    params=(VOCAB,),
    # Per depth: [norm(h_prev); norm(embedding)] (2h) -> h, then the shared output head.
    formula=mtp_layers * (2 * s * 2 * h * h + 2 * s * h * VOCAB.symbol),
    constraints=(
        Constraint(condition=mtp_layers >= 1, message="flag mtp needs the MTP decoder layers listed in plan.mtp"),
    ),
    summary="per MTP depth: eh projection 2h -> h and the shared logits head (its layer is in plan.mtp)",
    reference="DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report' (arXiv:2412.19437), section 2.2",
)


@hookimpl
def flopsreg_register_patterns():
    return [MTP]
