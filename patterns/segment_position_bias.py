"""CPM-Ant's segment embedding and its table of relative position biases: weights, no FLOPs.

The segment embedding is a gather added to the token embedding; the bias table is read per
(query, key) pair by bucket (a gather) and added to the scores (elementwise): no matmul.
"""

from flopsreg.plugin import Param, Pattern, h, hookimpl, n_h

SEGMENT_TYPES = Param(name="segment_types", latex=r"n_{\mathrm{seg}}", meaning="segment types of a segment embedding and bias table (segment_types)")
POSITION_BUCKETS = Param(
    name="position_buckets", latex=r"n_{\mathrm{b}}", meaning="relative-position buckets of a learned position bias (position_bias_num_buckets)"
)

SEGMENT_POSITION_BIAS = Pattern(
    name="segment_position_bias",
    slot="position_embedding",
    flags={"segment_position_bias"},
    precedence=20,
    scope="model",
    params=(SEGMENT_TYPES, POSITION_BUCKETS),
    formula=0,
    weights=SEGMENT_TYPES.symbol * h + (SEGMENT_TYPES.symbol**2 + POSITION_BUCKETS.symbol) * n_h,
    summary="a segment embedding of n_seg x h and a bias per head for each segment pair and position bucket: gathers, no FLOPs",
    reference="Hugging Face CpmAntModel.segment_embedding and CpmAntSegmentPositionEmbedding.relative_attention_bias (transformers 5.24)",
)


@hookimpl
def flopsreg_register_patterns():
    return [SEGMENT_POSITION_BIAS]
