"""The low-rank query path of MLA: hidden -> q_lora_rank -> heads x qk width."""

from flopsreg.patterns.quantities import d_qk
from flopsreg.plugin import Param, Pattern, h, hookimpl, n_h, s

Q_LORA_RANK = Param(name="q_lora_rank", latex=r"r_{\mathrm{q}}", meaning="rank of the compressed query latent")
r_q = Q_LORA_RANK.symbol

LOW_RANK_QUERY = Pattern(
    name="low_rank_query",
    slot="attention.query",
    flags={"q_lora"},
    precedence=20,
    params=(Q_LORA_RANK,),
    formula=2 * s * (h * r_q + r_q * n_h * d_qk),
    summary="Q through a latent: hidden -> q_lora_rank -> heads x qk width (DeepSeek q_lora_rank)",
    reference="DeepSeek-AI 2024, 'DeepSeek-V2' (arXiv:2405.04434), section 2.1",
    # q_a_proj, the q_a_layernorm of the latent (r_q scales), q_b_proj.
    weights=h * r_q + r_q + r_q * n_h * d_qk,
)


@hookimpl
def flopsreg_register_patterns():
    return [LOW_RANK_QUERY]
