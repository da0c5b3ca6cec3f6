"""A learned absolute position embedding (GPT-2; Megatron-LM's default): T_max x h weights.

The lookup is a gather, added to the token embedding (elementwise): weights, no FLOPs.
"""

from flopsreg.plugin import Param, Pattern, h, hookimpl

MAX_POSITIONS = Param(
    name="max_positions",
    latex=r"T_{\max}",
    meaning="positions a learned absolute position embedding holds (max_position_embeddings)",
)

LEARNED_POSITIONS = Pattern(
    name="learned_positions",
    slot="position_embedding",
    flags={"learned_positions"},
    precedence=10,
    scope="model",
    params=(MAX_POSITIONS,),
    formula=0,
    weights=MAX_POSITIONS.symbol * h,
    summary="a learned position embedding of T_max x h, added to the token embedding: weights, no FLOPs",
    reference="Radford et al. 2019 (GPT-2 wpe); Megatron-LM --position-embedding-type learned_absolute",
)


@hookimpl
def flopsreg_register_patterns():
    return [LEARNED_POSITIONS]
