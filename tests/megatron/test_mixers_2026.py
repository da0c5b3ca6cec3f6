"""Megatron-LM's Gated DeltaNet, hybrid (Mamba2) and latent-MoE arguments, exact and ``megatron``.

Every expected number is hand arithmetic written out below:

* ``megatron``: from Megatron-LM ``megatron/training/training.py::num_floating_point_operations``
  at d98e8a64ddf3 (2026-08-22), term by term as it defines them: ``transformer_flops`` returns
  tokens x 6 x [per-token terms] + sum s^2 x core, its GDN term per token 6 [h P_in +
  K (2 q_dim + v_dim) + 4 H_v d_v^2 + h v_dim] on the layers ``linear_attention_freq`` leaves
  linear among num_layers + mtp_num_layers; ``hybrid_flops`` returns 3 x [attention, MLP,
  Mamba (d_in = 2h, no conv, scan 7 d_in N), MoE, GDN layers counted from the pattern, MTP part
  once per depth, logits (1 + m) times].
* exact: every matmul the model runs, the recurrent minimum of GDN (6 s H_v d_k d_v) and of
  Mamba2 (4 s H_m P N), the convolutions over s outputs, s(s+1)/2 causal pairs, routers counted.
"""

from types import SimpleNamespace

import pytest

import flopsreg
from flopsreg.integrations.megatron import num_floating_point_operations
from flopsreg.readers.decoder import Decoder, build_model

S = 4096


# -- Megatron-LM argument namespaces ----------------------------------------------------------


def qwen3_next_args(**overrides):
    """Qwen3-Next-80B-A3B as Megatron-LM arguments: 48 layers, 3 of 4 Gated DeltaNet, one MTP depth."""
    args = dict(
        hidden_size=2048, num_layers=48, num_attention_heads=16, group_query_attention=True, num_query_groups=2,
        kv_channels=256, attention_output_gate=True, ffn_hidden_size=5120, swiglu=True,
        num_experts=512, moe_router_topk=10, moe_ffn_hidden_size=512, moe_shared_expert_intermediate_size=512,
        moe_shared_expert_gate=True, moe_layer_freq=1, vocab_size=151936, padded_vocab_size=151936,
        mtp_num_layers=1, seq_length=S, experimental_attention_variant="gated_delta_net", linear_attention_freq=4,
        linear_conv_kernel_dim=4, linear_key_head_dim=128, linear_value_head_dim=128,
        linear_num_key_heads=16, linear_num_value_heads=32, multi_latent_attention=False,
    )
    return SimpleNamespace(**{**args, **overrides})


NEMOTRON_PATTERN = "MEM*EMEM-M*E|MEMEM*EME/*E/*E"  # 21 layers, two MTP depths of attention + MoE


def nemotron_h_args(**overrides):
    """A Nemotron-H-like hybrid (Nemotron 3 Nano widths, a shorter pattern): Mamba2, MoE, GQA, MTP."""
    args = dict(
        hidden_size=2688, num_layers=1, num_attention_heads=32, group_query_attention=True, num_query_groups=2,
        kv_channels=128, ffn_hidden_size=1856, swiglu=False, num_experts=128, moe_router_topk=6,
        moe_ffn_hidden_size=1856, moe_shared_expert_intermediate_size=3712, vocab_size=131072,
        padded_vocab_size=131072, seq_length=S, hybrid_layer_pattern=NEMOTRON_PATTERN, mtp_num_layers=2,
        mamba_state_dim=128, mamba_head_dim=64, mamba_num_groups=8, mamba_num_heads=64,
        experimental_attention_variant=None,
    )
    return SimpleNamespace(**{**args, **overrides})


def latent_args(**overrides):
    """A GPT stack with latent MoE on every other layer (moe_layer_freq 2: layers 0, 2, 4, 6)."""
    args = dict(
        hidden_size=4096, num_layers=8, num_attention_heads=32, group_query_attention=True, num_query_groups=8,
        kv_channels=128, ffn_hidden_size=12288, swiglu=True, num_experts=64, moe_router_topk=6,
        moe_ffn_hidden_size=2048, moe_shared_expert_intermediate_size=4096, moe_layer_freq=2, moe_latent_size=1024,
        vocab_size=128000, padded_vocab_size=128256, seq_length=S,
    )
    return SimpleNamespace(**{**args, **overrides})


def evaluate(args, convention="exact", seq_len=S):
    return flopsreg.Registry.default().evaluate(flopsreg.Model.from_megatron_args(args), seq_len=seq_len, convention=convention)


# -- Qwen3-Next: Megatron-LM's transformer_flops with its GDN branch -------------------------

# num_layers + mtp = 49 layers in Megatron's pattern: (i + 1) % 4 == 0 is softmax, 12 of them; 37 GDN.
# Every layer and the MTP layer are MoE (moe_layer_freq 1; the last layer is MoE): 49.
QWEN_MLP = 6 * 2048 * (512 * 10 * 3 * 49 + 512 * 3 * 49)  # routed k F_e f + shared F_sh f, no router, no gate
QWEN_ATTENTION = 6 * (2048 * (16 * 256 + 2 * 2 * 256 + 16 * 256) + 16 * 256 * 2048) * 12  # q, k, v, gate; o
QWEN_GDN = 6 * (
    2048 * (2 * 2048 + 2 * 4096 + 2 * 32)  # in_proj: P_in = 2 q_dim + 2 v_dim + 2 H_v, q_dim 16 x 128, v_dim 32 x 128
    + 4 * (2 * 2048 + 4096)  # conv1d: K (2 q_dim + v_dim)
    + 4 * 32 * 128**2  # "KK^T, VK^T, S(a(I-bKK^T)), and SQ": 4 H_v d_v^2
    + 2048 * 4096  # out_proj
) * 37
QWEN_MTP = 6 * 1 * (3 * 2048 + 2 * 2048 * 2048)  # eh norms + final norm, eh projection
QWEN_LOGITS = 6 * 2048 * 151936 * (1 + 1)
QWEN_PER_TOKEN = QWEN_MLP + QWEN_ATTENTION + QWEN_GDN + QWEN_MTP + QWEN_LOGITS
QWEN_CORE = 6 * 16 * 256 // 2 * 2 * 12  # per s^2: causal /2, QK^T and PV, on the 12 softmax layers


def test_qwen3_next_megatron_is_megatron_lms_number():
    training = S * QWEN_PER_TOKEN + S**2 * QWEN_CORE
    res = evaluate(qwen3_next_args(), "megatron")
    assert res.training == training and res.forward * 3 == training


def test_qwen3_next_drop_in_reads_a_changed_gdn_argument_afresh():
    args = qwen3_next_args()
    assert num_floating_point_operations(args, 2, convention="megatron") == 2 * (S * QWEN_PER_TOKEN + S**2 * QWEN_CORE)
    args.linear_num_value_heads = 16  # v_dim 2048: in_proj, conv, core and out_proj of the 37 GDN layers
    gdn = 6 * (2048 * (2 * 2048 + 2 * 2048 + 2 * 16) + 4 * (2 * 2048 + 2048) + 4 * 16 * 128**2 + 2048 * 2048) * 37
    per_token = QWEN_PER_TOKEN - QWEN_GDN + gdn
    assert num_floating_point_operations(args, 2, convention="megatron") == 2 * (S * per_token + S**2 * QWEN_CORE)
    args.experimental_attention_variant = "dsa"  # read afresh, and refused
    with pytest.raises(flopsreg.ModelError, match=r"^args\.experimental_attention_variant = 'dsa'"):
        num_floating_point_operations(args, 2, convention="megatron")


def _qwen_exact(s):
    """One sequence of s tokens, as the model runs it."""
    h, pairs = 2048, s * (s + 1) // 2
    moe = 2 * s * h * 512 + 2 * s * 10 * h * 512 * 3 + 2 * s * h * 512 * 3 + 2 * s * h * 1  # router, routed, shared, gate
    gdn = (
        2 * s * h * (2 * 16 * 128 + 2 * 32 * 128 + 2 * 32)  # q, k, v, z, b, a
        + 2 * s * (2 * 16 * 128 + 32 * 128) * 4  # short conv over q, k, v: K taps, s outputs
        + 6 * s * 32 * 128 * 128  # recurrent minimum: S^T k, k (beta delta)^T, S^T q
        + 2 * s * 32 * 128 * h  # out_proj
    )
    full = (
        2 * s * h * 16 * 256 + 2 * s * h * 2 * 2 * 256 + 2 * s * h * 16 * 256  # q, k and v, output gate
        + 2 * 16 * (256 + 256) * pairs  # QK^T and PV over s(s+1)/2 pairs
        + 2 * s * 16 * 256 * h  # o
    )
    logits = 2 * s * h * 151936
    mtp = 2 * s * 2 * h * h + full + moe + logits  # the MTP layer runs the last decoder layer: softmax attention
    return 36 * gdn + 12 * full + 48 * moe + logits + mtp


@pytest.mark.parametrize("s", [1, 37, S])
def test_qwen3_next_exact_is_the_recurrent_minimum_and_every_projection(s):
    assert evaluate(qwen3_next_args(), seq_len=s).forward == _qwen_exact(s)


def test_qwen3_next_layers_and_the_mtp_layer_megatron_counts_as_gdn():
    model = flopsreg.Model.from_megatron_args(qwen3_next_args())
    assert model.plan.cycle == ("gdn", "gdn", "gdn", "full") and model.plan.layers == 48
    assert model.plan.blocks["mtp"] == ("full_as_gdn",)
    assert model.kinds["full"].flags >= {"output_gate", "moe"} and "output_gate" not in model.kinds["gdn"].flags
    assert "output_gate" not in model.flags  # the gate is on the softmax layers only
    assert model.kinds["full_as_gdn"].flags == model.kinds["full"].flags | {"megatron_counts_gdn"}


def test_a_layer_megatron_counts_as_gdn():
    """The MTP kind alone as a decoder layer: exact counts its softmax attention, megatron its GDN term."""
    model = _counted_as_gdn()
    registry = flopsreg.Registry.default()
    slots = registry.select(model, convention="megatron").kind("full_as_gdn").patterns
    assert slots["mixer.core"] == "megatron_counted_gdn_core" and not [slot for slot in slots if slot.startswith("attention")]
    s, h = 64, 2048
    mlp = 2 * s * h * (512 * 10 * 3 + 512 * 3)
    gdn = 2 * s * (h * (2 * 2048 + 2 * 4096 + 2 * 32) + 4 * (2 * 2048 + 4096) + 4 * 32 * 128**2 + h * 4096)
    assert registry.evaluate(model, seq_len=s, convention="megatron").forward == mlp + gdn + 2 * s * h * 151936
    pairs = s * (s + 1) // 2
    full = 2 * s * h * 16 * 256 * 2 + 2 * s * h * 2 * 2 * 256 + 2 * 16 * 512 * pairs + 2 * s * 16 * 256 * h  # q, gate; k, v
    moe = 2 * s * h * 512 + 2 * s * 10 * h * 512 * 3 + 2 * s * h * 512 * 3 + 2 * s * h  # router, routed, shared, gate
    assert registry.evaluate(model, seq_len=s).forward == full + moe + 2 * s * h * 151936


def _counted_as_gdn(variant="gdn"):
    full = flopsreg.Model.from_megatron_args(qwen3_next_args(experimental_attention_variant=variant))
    kind = full.kinds["full_as_gdn"]
    return flopsreg.Model(
        name="counted", source="test", flags=full.flags - {"mtp"}, params=dict(full.params),
        kinds={"full_as_gdn": kind}, plan=flopsreg.Plan(layers=1, cycle=("full_as_gdn",)),
    )


def test_compare_shows_the_gdn_core_and_why():
    comparison = flopsreg.Registry.default().compare(
        flopsreg.Model.from_megatron_args(qwen3_next_args()), seq_len=S, conventions=["megatron"]
    )
    (core,) = [d for d in comparison.differences if d.slot == "mixer.core" and d.block is None]  # the decoder's
    assert (core.exact_pattern, core.pattern) == ("gated_deltanet_core", "megatron_gdn_core")
    assert "4 d_v x d_v products" in core.reason
    # 8 s H_v d_v^2 against 6 s H_v d_k d_v: 4/3 with d_k = d_v
    assert dict(core.effects)["mixer.core"] == pytest.approx(4 / 3) and str(dict(core.effects)["mixer.core"]) == "4/3"


def test_a_linear_attention_freq_list_marks_the_gdn_layers():
    pattern = [1, 1, 0, 1, 0, 0, 1, 1]
    model = flopsreg.Model.from_megatron_args(
        qwen3_next_args(num_layers=8, linear_attention_freq=pattern, mtp_num_layers=None)
    )
    assert [layer.kind for layer in model.layers] == ["gdn" if v else "full" for v in pattern]


def test_without_a_variant_linear_arguments_are_not_read():
    """Megatron-LM ignores linear_attention_freq and the widths without a GDN variant."""
    model = flopsreg.Model.from_megatron_args(qwen3_next_args(experimental_attention_variant=None))
    assert not any("gated_deltanet" in kind.flags for kind in model.kinds.values())


# -- Gated DeltaNet-2 (gdn2): channel-wise decay, erase and write gates ---------------------


def test_gdn2_megatron_is_megatron_lms_number():
    """gdn2's in_proj: P_in = 4 q_dim + 3 v_dim (q, k, v, z, f, b, w); the rest of the GDN term as gdn."""
    gdn2 = 6 * (2048 * (4 * 2048 + 3 * 4096) + 4 * (2 * 2048 + 4096) + 4 * 32 * 128**2 + 2048 * 4096) * 37
    res = evaluate(qwen3_next_args(experimental_attention_variant="gdn2"), "megatron")
    assert res.training == S * (QWEN_PER_TOKEN - QWEN_GDN + gdn2) + S**2 * QWEN_CORE


@pytest.mark.parametrize("s", [1, 37, S])
def test_gdn2_exact(s):
    """GDN's count with GDN-2's wider in_proj on the 36 Gated DeltaNet layers; the recurrent minimum is GDN's."""
    wider = 2 * s * 2048 * ((4 * 16 * 128 + 3 * 32 * 128) - (2 * 16 * 128 + 2 * 32 * 128 + 2 * 32))
    assert evaluate(qwen3_next_args(experimental_attention_variant="gdn2"), seq_len=s).forward == _qwen_exact(s) + 36 * wider


def gdn2_recurrence_multiply_adds(s, heads, d_k, d_v):
    """Literal loop over tokens and state entries: the multiply-adds of S_t = (I - k (b k)^T) D S + k (w v)^T, o = S^T q."""
    count = 0
    for _token in range(s):
        for _head in range(heads):
            for _i in range(d_k):  # D S and the gates b k, w v are elementwise: not counted
                for _j in range(d_v):
                    count += 1  # u_j += (b k)_i S_ij
                    count += 1  # S_ij += k_i (w v - u)_j, the erase and the write in one rank-1 update
                    count += 1  # o_j += S_ij q_i
    return count


def gdn2_chunked_flops(s, chunk, heads, d_k, d_v):
    """torch_chunk_gdn2 step by step: the matmuls of each chunk and its forward substitution."""
    padded = -(-s // chunk) * chunk
    flops = 0
    for _head in range(heads):
        for _chunk in range(padded // chunk):
            flops += 2 * chunk * chunk * d_k  # attn = -(E Khat^T), masked
            for i in range(1, chunk):  # attn[i, :i] = row + (row[:, None] * sub).sum(-2)
                flops += i * i + i * (i - 1) + i  # multiplies, the sum over i rows, the add of row
            flops += 2 * chunk * chunk * d_v + 2 * chunk * chunk * d_k  # T Z and T E
            flops += 2 * chunk * chunk * d_k  # Qtilde_c Khat^T
            flops += 2 * chunk * d_k * d_v * 2  # (T E) S and Qtilde S
            flops += 2 * chunk * chunk * d_v  # attn_i u_i
            flops += 2 * d_k * chunk * d_v  # Kbar^T u_i
    return flops


@pytest.mark.parametrize("s, chunk", [(1, 4), (5, 4), (8, 4), (37, 16), (64, 64), (150, 64)])
def test_gdn2_cores_against_their_oracles(s, chunk):
    model = flopsreg.Model.from_megatron_args(qwen3_next_args(
        experimental_attention_variant="gdn2", num_layers=1, linear_attention_freq=[1], mtp_num_layers=None,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=3, linear_value_head_dim=5,
    ))
    registry = flopsreg.Registry.default()
    core = registry.evaluate(model, seq_len=s).slot_flops["mixer.core"]
    assert core == 2 * gdn2_recurrence_multiply_adds(s, 4, 3, 5)
    chunked = flopsreg.Model.from_toml_string(model.to_toml().replace("[params]", f"[params]\nscan_chunk = {chunk}"))
    assert registry.evaluate(chunked, seq_len=s, convention="chunked_scan").slot_flops["mixer.core"] == gdn2_chunked_flops(s, chunk, 4, 3, 5)


def test_gdn2_layers_and_their_mtp_layer():
    model = flopsreg.Model.from_megatron_args(qwen3_next_args(experimental_attention_variant="gdn2"))
    assert model.kinds["gdn"].flags >= {"gated_deltanet", "gated_deltanet2"}
    assert model.kinds["full_as_gdn"].flags >= {"megatron_counts_gdn", "gated_deltanet2"}
    slots = flopsreg.Registry.default().select(_counted_as_gdn("gdn2"), convention="megatron").kind("full_as_gdn").patterns
    assert slots["mixer.projection"] == "megatron_counted_gdn2_projection"


# -- Nemotron-H-like hybrid: Megatron-LM's hybrid_flops ---------------------------------------

# Main part: M E M * E M E M - M * E | M E M E M * E M E -> M 9, E 8, * 3, - 1 (21 layers and a '|');
# Megatron-LM counts the MTP part "*E" once per depth (2) on top.
H = 2688


def test_the_nemotron_pattern_counts():
    main = NEMOTRON_PATTERN.split("/")[0].replace("|", "")
    assert (main.count("M"), main.count("E"), main.count("*"), main.count("-"), len(main)) == (9, 8, 3, 1, 21)


def _nemotron_megatron(s):
    """hybrid_flops, forward (x 3 for training), for one sequence of s tokens."""
    p = 128 * 32 / H  # kv_channels n_h / h
    attn = 4 * s * H * p * (H + H * 2 / 32) + 2 * s * s * H * p
    mlp = 4 * (1856 / H) * 1 * s * H * H  # expansion ffn/h, no swiglu
    moe = 4 * s * H * 1856 * 6 * 1 + 4 * s * H * 3712 * 1  # routed k, shared
    d_in, heads = 2 * H, 64  # d_in = 2h hard-coded; mamba_num_heads given
    mamba = 2 * s * H * (2 * d_in + 2 * 8 * 128 + heads) + 7 * s * d_in * 128 + 2 * s * d_in * H
    layers = 9 * mamba + (8 + 2) * moe + (3 + 2) * attn + 1 * mlp  # MTP "*E" x 2 depths
    return layers + 2 * s * H * 131072 * (1 + 2)


def _nemotron_exact(s):
    pairs = s * (s + 1) // 2
    inner = 64 * 64  # mamba_num_heads x mamba_head_dim (Megatron's MambaMixer: d_inner = heads x head_dim)
    mamba = (
        2 * s * H * (2 * inner + 2 * 8 * 128 + 64)  # in_proj: z, x, B, C, dt
        + 2 * s * (inner + 2 * 8 * 128) * 4  # conv1d over x, B, C: d_conv = 4 taps, s outputs
        + 4 * s * 64 * 64 * 128  # recurrent minimum: state update and readout, P N each per head
        + 2 * s * inner * H  # out_proj
    )
    attn = 2 * s * H * 32 * 128 + 2 * s * H * 2 * 2 * 128 + 2 * 32 * 256 * pairs + 2 * s * 32 * 128 * H
    mlp = 2 * s * H * 1856 * 2  # relu^2: 2 matmuls
    moe = 2 * s * H * 128 + 2 * s * 6 * H * 1856 * 2 + 2 * s * H * 3712 * 2  # router, routed, shared
    logits = 2 * s * H * 131072
    mtp = 2 * (2 * s * 2 * H * H + attn + moe + logits)  # per depth: eh projection, "*E", the head
    return 9 * mamba + 8 * moe + 3 * attn + 1 * mlp + logits + mtp


@pytest.mark.parametrize("s", [1, 100, S])
def test_nemotron_h_megatron_is_megatron_lms_number(s):
    res = evaluate(nemotron_h_args(), "megatron", seq_len=s)
    assert res.training == 3 * _nemotron_megatron(s)  # the float formula is whole here


@pytest.mark.parametrize("s", [1, 100, S])
def test_nemotron_h_exact(s):
    assert evaluate(nemotron_h_args(), seq_len=s).forward == _nemotron_exact(s)


def test_nemotron_h_plan():
    model = flopsreg.Model.from_megatron_args(nemotron_h_args())
    assert model.plan.layers == 21  # the pattern's, not num_layers
    assert model.plan.blocks["mtp"] == ("attention_only", "ffn_moe") * 2
    assert model.kinds["mamba_only"].flags == {"mamba2"} and model.kinds["ffn_moe"].flags >= {"moe", "no_attention"}
    assert model.params["mtp_depth"] == 2 and model.params["mamba_heads"] == 64


def test_the_pattern_decides_the_mtp_depth_and_the_layer_count():
    """validate_args infers mtp_num_layers from the '/' parts (and warns on a conflict) and num_layers from the pattern."""
    assert evaluate(nemotron_h_args(mtp_num_layers=5, num_layers=52), seq_len=9).forward == _nemotron_exact(9)


def test_the_drop_in_reads_a_changed_pattern_afresh():
    args = nemotron_h_args()
    assert num_floating_point_operations(args, 1, convention="megatron") == 3 * _nemotron_megatron(S)
    args.hybrid_layer_pattern = NEMOTRON_PATTERN.replace("/*E/*E", "/*E")  # one MTP depth
    p = 128 * 32 / H
    attn = 4 * S * H * p * (H + H * 2 / 32) + 2 * S * S * H * p
    moe = 4 * S * H * 1856 * 6 + 4 * S * H * 3712
    one_depth = _nemotron_megatron(S) - attn - moe - 2 * S * H * 131072  # one "*E" depth and one logits pass fewer
    assert num_floating_point_operations(args, 1, convention="megatron") == 3 * one_depth


def test_without_mamba_num_heads_the_inner_width_is_twice_hidden():
    """MambaMixer(expand=2): d_inner = 2h, heads = 2h / mamba_head_dim (84 here)."""
    model = flopsreg.Model.from_megatron_args(nemotron_h_args(mamba_num_heads=None))
    assert model.params["mamba_heads"] == 2 * H // 64
    assert evaluate(nemotron_h_args(mamba_num_heads=None), "megatron", seq_len=7).training == 3 * round(
        _nemotron_megatron(7) - 9 * 2 * 7 * H * (64 - 84)  # Megatron's nheads = d_in // head_dim = 84
    )


def test_a_hybrid_gdn_layer_and_an_output_gate():
    """'G' reads the linear_* widths (linear_attention_freq unused); the hybrid path ignores the output gate."""
    args = nemotron_h_args(
        hybrid_layer_pattern="G*-", mtp_num_layers=None, attention_output_gate=True, linear_attention_freq=None,
        linear_conv_kernel_dim=4, linear_key_head_dim=128, linear_value_head_dim=128,
        linear_num_key_heads=16, linear_num_value_heads=32,
    )
    s, pairs, p = 64, 64 * 65 // 2, 128 * 32 / H
    gdn_megatron = 2 * s * (H * (2 * 2048 + 2 * 4096 + 2 * 32) + 4 * (2 * 2048 + 4096) + 32 * 128**2 * 4 + H * 4096)
    attn_megatron = 4 * s * H * p * (H + H * 2 / 32) + 2 * s * s * H * p
    mlp = 2 * s * H * 1856 * 2
    assert evaluate(args, "megatron", seq_len=s).training == 3 * (gdn_megatron + attn_megatron + mlp + 2 * s * H * 131072)
    gdn = 2 * s * H * (2 * 2048 + 2 * 4096 + 2 * 32) + 2 * s * (2 * 2048 + 4096) * 4 + 6 * s * 32 * 128**2 + 2 * s * 4096 * H
    attn = 2 * s * H * 32 * 128 * 2 + 2 * s * H * 2 * 2 * 128 + 2 * 32 * 256 * pairs + 2 * s * 32 * 128 * H  # q + gate
    assert evaluate(args, seq_len=s).forward == gdn + attn + mlp + 2 * s * H * 131072


# -- latent MoE --------------------------------------------------------------------------------


def test_latent_moe_megatron_is_megatron_lms_number():
    h, s = 4096, S
    # per token: 4 dense + 4 MoE layers; MoE: k F_e f l / h + 2 l (routed on the latent width, down + up)
    mlp = 6 * h * (12288 * 3 * 4 + (2048 * 6 * 3 * 1024 / h + 2 * 1024) * 4 + 4096 * 3 * 4)
    attention = 6 * (h * (32 * 128 + 2 * 8 * 128) + 32 * 128 * h) * 8
    logits = 6 * h * 128256
    core = 6 * 32 * 128 * 8
    assert evaluate(latent_args(), "megatron").training == s * (mlp + attention + logits) + s * s * core


def test_latent_moe_exact():
    h, s = 4096, 512
    pairs = s * (s + 1) // 2
    attention = 2 * s * h * 32 * 128 + 2 * s * h * 2 * 8 * 128 + 2 * 32 * 256 * pairs + 2 * s * 32 * 128 * h
    dense = 2 * s * h * 12288 * 3
    moe = (
        2 * s * h * 64  # router on the hidden width
        + 2 * s * h * 1024 * 2  # hidden -> latent, latent -> hidden
        + 2 * s * 6 * 1024 * 2048 * 3  # k SwiGLU experts on the latent width
        + 2 * s * h * 4096 * 3  # shared experts on the hidden width
    )
    assert evaluate(latent_args(), seq_len=s).forward == 8 * attention + 4 * dense + 4 * moe + 2 * s * h * 128256


def test_compare_shows_the_latent_router():
    comparison = flopsreg.Registry.default().compare(
        flopsreg.Model.from_megatron_args(latent_args()), seq_len=S, conventions=["megatron"]
    )
    (latent,) = [d for d in comparison.differences if d.pattern == "megatron_latent_moe"]
    assert latent.exact_pattern == "latent_experts" and "router is not counted" in latent.reason


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"experimental_attention_variant": "dsa"}, r"args\.experimental_attention_variant = 'dsa': DeepSeek sparse attention"),
        ({"experimental_attention_variant": "mamba"}, r"args\.experimental_attention_variant = 'mamba': expected 'gdn'"),
        ({"linear_attention_freq": None}, r"args\.linear_attention_freq: missing"),
        ({"linear_attention_freq": 0}, r"args\.linear_attention_freq = 0: expected an integer >= 1"),
        ({"linear_attention_freq": [1, 0]}, r"args\.linear_attention_freq = \[1, 0\]: expected an integer or 48 entries"),
        ({"linear_attention_freq": [1, 1, 1, 0] * 12}, r"args\.linear_attention_freq = \[1, 1, 1, 0, .*\]: with args\.mtp_num_layers = 1, Megatron-LM's FLOPs function needs 49 entries"),
        ({"mtp_num_layers": 4, "multi_latent_attention": True, "group_query_attention": False, "kv_lora_rank": 32,
          "qk_head_dim": 128, "qk_pos_emb_head_dim": 64, "v_head_dim": 128},
         r"args\.mtp_num_layers = 4: Megatron-LM counts these MTP depths as layers 48\.\.51 .* where the model runs MLA"),
        ({"linear_num_value_heads": 24}, r"args\.linear_num_value_heads = 24: must be a multiple of args\.linear_num_key_heads = 16"),
        ({"linear_key_head_dim": None}, r"args\.linear_key_head_dim: missing \(Gated DeltaNet layers need it"),
        ({"linear_conv_kernel_dim": 0}, r"args\.linear_conv_kernel_dim = 0: expected an integer >= 1"),
        ({"linear_num_key_heads": 0}, r"args\.linear_num_key_heads = 0: expected an integer >= 1"),
    ],
)
def test_gdn_refusals(overrides, message):
    with pytest.raises(flopsreg.ModelError, match="^" + message):
        flopsreg.Model.from_megatron_args(qwen3_next_args(**overrides))


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"hybrid_layer_pattern": "M+M*", "mtp_num_layers": None}, r"args\.hybrid_layer_pattern = 'M\+M\*': '\*' and '\+' layers in one model"),
        ({"hybrid_layer_pattern": "M+M-", "mtp_num_layers": None}, r"args\.hybrid_layer_pattern = 'M\+M-': its '\+' layers are MLA, which needs args\.multi_latent_attention"),
        ({"hybrid_layer_pattern": "MDM*", "mtp_num_layers": None}, r"args\.hybrid_layer_pattern = 'MDM\*': '\*' and 'D' layers in one model"),
        ({"hybrid_layer_pattern": "MXM*"}, r"args\.hybrid_layer_pattern = 'MXM\*': 'X' is not a layer symbol; expected M, G, \*, \+, D, -, E"),
        ({"hybrid_layer_pattern": "M*/*E/E*"}, r"args\.hybrid_layer_pattern = 'M\*/\*E/E\*': every MTP depth"),
        ({"hybrid_layer_pattern": "M*/", "mtp_num_layers": 1}, r"args\.hybrid_layer_pattern = 'M\*/': the MTP part has no layers"),
        ({"hybrid_layer_pattern": "|"}, r"args\.hybrid_layer_pattern = '\|': the decoder part has no layers"),
        ({"hybrid_layer_pattern": "M*", "mtp_num_layers": 1}, r"args\.mtp_num_layers = 1: a hybrid model's MTP layers"),
        ({"num_experts": None}, r"args\.hybrid_layer_pattern = .*: its 'E' layers need args\.num_experts"),
        ({"hybrid_layer_pattern": 12}, r"args\.hybrid_layer_pattern = 12: expected a string"),
        ({"hybrid_override_pattern": "M*"}, r"args\.hybrid_override_pattern = 'M\*': conflicts with args\.hybrid_layer_pattern"),
        ({"spec": "gdp_stack_spec", "gdp_num_householder": 0}, r"args\.gdp_num_householder = 0: expected an integer >= 1"),
        ({"spec": "gdp_stack_spec"}, r"args\.gdp_num_householder: missing \(the Householder steps"),
        ({"spec": "gdp_stack_spec", "gdp_num_householder": 2, "mamba_num_heads": None}, r"args\.mamba_num_heads: missing; GatedDeltaProductMixer asserts"),
        ({"window_size": (127, 0), "num_layers": 3}, r"args\.num_layers = 3: the pattern .* has 21 layers"),
        ({"mamba_head_dim": None}, r"args\.mamba_head_dim: missing \(needed by the 'M' layers"),
        ({"mamba_state_dim": None}, r"args\.mamba_state_dim: missing"),
        ({"mamba_num_heads": None, "mamba_head_dim": 100}, r"args\.mamba_head_dim = 100: must divide the inner width"),
    ],
)
def test_hybrid_refusals(overrides, message):
    with pytest.raises(flopsreg.ModelError, match="^" + message):
        flopsreg.Model.from_megatron_args(nemotron_h_args(**overrides))


def test_a_hybrid_stack_without_g_layers_ignores_the_variant():
    """The variant shapes the 'G' layers; a stack without them runs no Gated DeltaNet at all."""
    assert evaluate(nemotron_h_args(experimental_attention_variant="dsa"), seq_len=9).forward == _nemotron_exact(9)
    with pytest.raises(flopsreg.ModelError, match=r"^args\.experimental_attention_variant = 'dsa'"):
        flopsreg.Model.from_megatron_args(nemotron_h_args(experimental_attention_variant="dsa", hybrid_layer_pattern="MG*E", mtp_num_layers=None))


def test_the_deprecated_pattern_name_is_read():
    legacy = nemotron_h_args(hybrid_layer_pattern=None, hybrid_override_pattern=NEMOTRON_PATTERN)
    assert evaluate(legacy, seq_len=9).forward == _nemotron_exact(9)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"num_experts": None}, r"args\.moe_latent_size = 1024: latent MoE needs args\.num_experts"),
        ({"moe_latent_size": 0}, r"args\.moe_latent_size = 0: expected an integer >= 1"),
    ],
)
def test_latent_refusals(overrides, message):
    with pytest.raises(flopsreg.ModelError, match="^" + message):
        flopsreg.Model.from_megatron_args(latent_args(**overrides))


# -- the engine: a block whose depth lists its own layers ---------------------------------------


def test_a_block_depth_lists_its_own_layers():
    decoder = Decoder(
        params={"hidden": 8, "heads": 2},
        flags=(),
        attention=("full", "full"),
        mlps=("dense", "moe"),
        attention_kinds={"full": (frozenset(), {}), "none": (frozenset({"no_attention"}), {})},
        mlp_kinds={"dense": (frozenset({"mlp"}), {}), "moe": (frozenset({"moe"}), {}), "only": (frozenset(), {})},
        block_layers={"mtp": (("full", "only"), ("none", "moe"))},
    )
    model = build_model(decoder, name="m", source="test", blocks={"mtp": 2})
    assert model.plan.blocks["mtp"] == ("full_only", "none_moe") * 2
    assert [layer.kind for layer in model.layers] == ["full_dense", "full_moe"]
    # unlisted, a depth is one copy of the last decoder layer
    assert build_model(decoder, name="m", source="test", blocks={"other": 2}).plan.blocks["other"] == ("full_moe",) * 2


# -- models for the cached-prefix identity (tests/engine/test_serving.py) -----------------------------

IDENTITY_MODELS = [
    ("megatron-qwen3-next", flopsreg.Model.from_megatron_args(qwen3_next_args()), ("exact", "megatron")),
    ("megatron-nemotron-h", flopsreg.Model.from_megatron_args(nemotron_h_args(attention_output_gate=True)), ("exact", "megatron")),
    ("megatron-nemotron-h default padding", flopsreg.Model.from_megatron_args(nemotron_h_args(vocab_size=131000, padded_vocab_size=None)), ("exact", "megatron")),
    ("megatron-hybrid-gdn", flopsreg.Model.from_megatron_args(nemotron_h_args(
        hybrid_layer_pattern="MG*E", mtp_num_layers=None, moe_latent_size=512, linear_conv_kernel_dim=4,
        linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=16, linear_num_value_heads=32,
    )), ("exact", "megatron")),
    ("megatron-counted-as-gdn", _counted_as_gdn(), ("exact", "megatron")),
    ("megatron-counted-as-gdn2", _counted_as_gdn("gdn2"), ("exact", "megatron")),
    ("megatron-gdn2", flopsreg.Model.from_megatron_args(qwen3_next_args(experimental_attention_variant="gdn2")), ("exact", "megatron")),
    # issue 22: MTP depths counted as softmax attention and as GDN, windows, MLA and GDP in hybrid stacks
    ("megatron-mtp-counted-as-attention", flopsreg.Model.from_megatron_args(qwen3_next_args(num_layers=47, mtp_num_layers=3)), ("exact", "megatron")),
    ("megatron-hybrid-windows-mla-flag", flopsreg.Model.from_megatron_args(nemotron_h_args(
        window_size=(63, 0), window_attn_skip_freq=3, num_layers=21, multi_latent_attention=True, group_query_attention=False,
        kv_lora_rank=64, qk_head_dim=32, qk_pos_emb_head_dim=16, v_head_dim=32, q_lora_rank=None,
    )), ("exact", "megatron")),
    ("megatron-hybrid-mla-layers", flopsreg.Model.from_megatron_args(nemotron_h_args(
        hybrid_layer_pattern=NEMOTRON_PATTERN.replace("*", "+"), multi_latent_attention=True, group_query_attention=False,
        kv_lora_rank=64, qk_head_dim=32, qk_pos_emb_head_dim=16, v_head_dim=32, q_lora_rank=96,
    )), ("exact", "megatron")),
    ("megatron-hybrid-gdp", flopsreg.Model.from_megatron_args(nemotron_h_args(spec="gdp_stack_spec", gdp_num_householder=2)), ("exact", "megatron")),
]


@pytest.mark.parametrize(("normalization", "per_norm"), [("RMSNorm", 1), ("LayerNorm", 2)])
def test_a_hybrid_stack_holds_one_norm_per_layer(normalization, per_norm):
    """Megatron-LM's hybrid layers (M, *, -, E) each have one norm before their one module, and the
    stack a final norm: h weights each (RMSNorm), 2h with a LayerNorm's bias."""
    h, layers = 2688, 21  # NEMOTRON_PATTERN's decoder layers (the MTP part after "/" is a block)
    model = flopsreg.Model.from_megatron_args(nemotron_h_args(normalization=normalization))
    counts = flopsreg.Registry(load_entry_points=False).parameters(model).by_slot()
    assert counts["norms"] == per_norm * h * layers
    assert counts["final_norm"] == per_norm * h


def test_a_hybrid_stack_without_a_padded_vocabulary_pads_it_by_megatrons_defaults():
    """Each MTP depth repeats the logits over vocab_size rounded up to 128 x TP 1: 131,000 -> 131,072
    (1,024 x 128), the same as when Megatron-LM's padded_vocab_size 131,072 is given."""
    derived = evaluate(nemotron_h_args(vocab_size=131000, padded_vocab_size=None), "megatron")
    given = evaluate(nemotron_h_args(vocab_size=131000, padded_vocab_size=131072), "megatron")
    assert derived.slot_flops["mtp"] == given.slot_flops["mtp"] and derived.slot_flops["head"] == given.slot_flops["head"]
    assert "megatron_hybrid_default_padded_mtp" in derived.explain() and "megatron_hybrid_mtp (" in given.explain()
    unpadded = evaluate(nemotron_h_args(vocab_size=131000, padded_vocab_size=None))  # exact: the rows given
    assert unpadded.slot_flops["head"] == 2 * S * 2688 * 131000
