"""Key and value projections of multi-head latent attention (DeepSeek-V2/V3), not absorbed, and
the RMSNorm some families put on its shared rope key (weights only)."""

from flopsreg.patterns.quantities import kv_tokens
from flopsreg.plugin import Param, Pattern, h, hookimpl, n_h, s

KV_LORA_RANK = Param(name="kv_lora_rank", latex=r"r_{\mathrm{kv}}", meaning="rank of the compressed key/value latent")
QK_NOPE_HEAD_DIM = Param(
    name="qk_nope_head_dim", latex=r"d_{\mathrm{nope}}", meaning="per-head query/key width without rotary position embedding (RoPE)"
)
QK_ROPE_HEAD_DIM = Param(
    name="qk_rope_head_dim",
    latex=r"d_{\mathrm{rope}}",
    meaning="per-head query/key RoPE width; the rope key is shared by all heads",
    minimum=0,  # 0: a NoPE MLA layer (Mistral Large 4's no_rope_layers), no shared rope key
)
V_HEAD_DIM = Param(name="v_head_dim", latex=r"d_{\mathrm{vh}}", meaning="per-head value width of multi-head latent attention (MLA)")
r_kv, d_nope, d_rope, d_vh = (p.symbol for p in (KV_LORA_RANK, QK_NOPE_HEAD_DIM, QK_ROPE_HEAD_DIM, V_HEAD_DIM))

MLA_PROJECTION = Pattern(
    name="mla_projection",
    slot="attention.projection",
    flags={"mla"},
    precedence=20,
    params=(KV_LORA_RANK, QK_NOPE_HEAD_DIM, QK_ROPE_HEAD_DIM, V_HEAD_DIM),
    # hidden -> (latent + shared rope key), then latent -> heads x (nope key + value).
    formula=2 * s * (h * (r_kv + d_rope) + r_kv * n_h * (d_nope + d_vh)),
    provides={"qk_dim": d_nope + d_rope, "v_dim": d_vh},
    summary="K and V through a low-rank latent: hidden -> r_kv + d_rope, r_kv -> heads x (d_nope + d_v)",
    reference="DeepSeek-AI 2024, 'DeepSeek-V2' (arXiv:2405.04434), section 2.1 (as run, not absorbed)",
    # kv_a_proj_with_mqa, the kv_a_layernorm of the latent (r_kv scales), kv_b_proj.
    weights=h * (r_kv + d_rope) + r_kv + r_kv * n_h * (d_nope + d_vh),
    cache=(r_kv + d_rope) * kv_tokens,  # the compressed latent and the shared rope key of every kept token
)

K_ROPE_NORM = Pattern(
    name="k_rope_norm",
    slot="attention.qk_norm",
    flags={"k_rope_norm"},
    precedence=40,
    params=(QK_ROPE_HEAD_DIM,),
    formula=0,
    weights=d_rope,
    summary="an RMSNorm of the rope width on MLA's shared rope key, before RoPE (no FLOPs counted)",
    reference="Hugging Face Dots3NoteTextAttention.k_rope_only_layernorm (transformers 5.24)",
)


@hookimpl
def flopsreg_register_patterns():
    return [MLA_PROJECTION, K_ROPE_NORM]
