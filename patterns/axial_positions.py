"""An axial position embedding (Reformer): one learned table per axis of the position grid, each
of (positions on that axis) x (its share of h), broadcast and concatenated: weights, no FLOPs."""

from flopsreg.plugin import Param, Pattern, hookimpl

AXIAL_POSITION_WEIGHTS = Param(
    name="axial_position_weights",
    latex=r"W_{\mathrm{ax}}",
    meaning="weights of an axial position embedding: the sum over axes of axial_pos_shape x axial_pos_embds_dim",
)

AXIAL_POSITIONS = Pattern(
    name="axial_positions",
    slot="position_embedding",
    flags={"axial_positions"},
    precedence=30,
    scope="model",
    params=(AXIAL_POSITION_WEIGHTS,),
    formula=0,
    weights=AXIAL_POSITION_WEIGHTS.symbol,
    summary="axial position tables, one per axis of the position grid: broadcast and concatenated, no FLOPs",
    reference="Kitaev et al. 2020 (axial positional encodings); Hugging Face AxialPositionEmbeddings (transformers 5.24)",
)


@hookimpl
def flopsreg_register_patterns():
    return [AXIAL_POSITIONS]
