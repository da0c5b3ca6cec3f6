"""The grouped low-rank output projection (DeepSeek-V4): the heads split into g groups, each
group projected to a rank r_o on its own, then the g r_o outputs mixed to hidden."""

from flopsreg.patterns.quantities import d_v
from flopsreg.plugin import Param, Pattern, h, hookimpl, n_h, s

O_GROUPS = Param(name="o_groups", latex="g", meaning="head groups of the grouped output projection (o_groups)")
O_LORA_RANK = Param(name="o_lora_rank", latex=r"r_{\mathrm{o}}", meaning="output width of each group (o_lora_rank)")
g, r_o = O_GROUPS.symbol, O_LORA_RANK.symbol

GROUPED_OUTPUT = Pattern(
    name="grouped_output",
    slot="attention.output",
    flags={"grouped_output"},
    precedence=30,
    params=(O_GROUPS, O_LORA_RANK),
    # o_a_proj: g block-diagonal (n_h d_v / g) -> r_o matmuls; o_b_proj: g r_o -> hidden.
    formula=2 * s * n_h * d_v * r_o + 2 * s * g * r_o * h,
    weights=n_h * d_v * r_o + g * r_o * h,
    summary="o_a_proj: each of g head groups (n_h d_v / g) -> r_o; o_b_proj: g r_o -> hidden",
    reference=(
        "DeepSeek-AI 2026, DeepSeek-V4 (grouped output projection); transformers "
        "models/deepseek_v4/modeling_deepseek_v4.py DeepseekV4GroupedLinear, o_b_proj"
    ),
)


@hookimpl
def flopsreg_register_patterns():
    return [GROUPED_OUTPUT]
