"""The Megatron-LM branches counted since issue 22: windows, MLA and Gated Delta Product in hybrid
stacks, and MTP depths Megatron-LM counts as other layers of ``linear_attention_freq``.

``megatron``: Megatron-LM's own function, copied verbatim at d98e8a64 (tests/megatron_lm_d98e8a64.py).
exact: the Nemotron-H-like hand oracle of test_mixers_2026.py with the layers each branch
changes written out again: a brute-force mask for windows, MLA's matmuls, the Gated Delta
Product recurrence run token by token (tests/linear_oracles.py).
"""

import copy

import linear_oracles as lo
import pytest
from megatron_lm_d98e8a64 import megatron_lm
from oracles import pairs, sliding_window_mask
from test_mixers_2026 import NEMOTRON_PATTERN, H, _nemotron_exact, evaluate, nemotron_h_args, qwen3_next_args

import flopsreg

MAIN = NEMOTRON_PATTERN.split("/")[0].replace("|", "")  # 21 layers
MTP_DEPTHS = NEMOTRON_PATTERN.count("/")
MLA_ARGS = dict(
    multi_latent_attention=True, group_query_attention=False, kv_lora_rank=64, qk_head_dim=32,
    qk_pos_emb_head_dim=16, v_head_dim=32, q_lora_rank=None,
)


# Arguments Megatron-LM's function reads that the oracle namespaces leave out: their defaults
# (argparse, or TransformerConfig's for the fields arguments.py generates from it, at d98e8a64).
DEFAULTS = dict(
    gdp_num_householder=3, spec=None, moe_latent_size=None, moe_layer_freq=1, multi_latent_attention=False,
    attention_output_gate=False, linear_key_head_dim=None, linear_value_head_dim=None, linear_num_key_heads=None,
    linear_num_value_heads=None, linear_conv_kernel_dim=None, hybrid_layer_pattern=None, q_lora_rank=None,
)


def _megatron(args, s):
    """Megatron-LM's number for one sequence of s tokens (its function may change the namespace: a copy)."""
    args = copy.deepcopy(args)
    for name, value in DEFAULTS.items():
        if not hasattr(args, name):
            setattr(args, name, value)
    args.seq_length = s
    return megatron_lm(args, 1)


def _attention(s, kv_heads=2, attended=None):
    """One '*' layer of the oracle's model (32 heads of 128): q, k, v, QK^T and PV over the pairs, o."""
    attended = s * (s + 1) // 2 if attended is None else attended
    return 2 * s * H * 32 * 128 + 2 * s * H * 2 * kv_heads * 128 + 2 * 32 * 256 * attended + 2 * s * 32 * 128 * H


# -- sliding windows on hybrid attention layers ------------------------------------------------


def _slides(layer: int, skip: int | None) -> bool:
    """is_layer_window_attention (megatron/core/transformer/utils.py:531 at d98e8a64): 1-based layer l."""
    return skip is None or layer % skip != 0


@pytest.mark.parametrize("skip", [None, 2, 3, 4])
@pytest.mark.parametrize(("s", "window"), [(1, 8), (40, 8), (150, 64), (97, 200)])
def test_windows_on_hybrid_attention_layers_exact(s, window, skip):
    """Each '*' of the main part slides by its place among the pattern's layers; the MTP part's
    '*' is layer 1 of its own stack (HybridStack(pp_layer_offset=0) in multi_token_prediction.py)."""
    args = nemotron_h_args(window_size=(window - 1, 0), window_attn_skip_freq=skip, num_layers=len(MAIN))
    windowed = pairs(sliding_window_mask(s, window))
    sliding = [i + 1 for i, symbol in enumerate(MAIN) if symbol == "*" and _slides(i + 1, skip)]
    sliding_mtp = MTP_DEPTHS if _slides(1, skip) else 0
    change = (len(sliding) + sliding_mtp) * (_attention(s, attended=windowed) - _attention(s))
    assert evaluate(args, seq_len=s).forward == _nemotron_exact(s) + change


@pytest.mark.parametrize("skip", [None, 3])
@pytest.mark.parametrize("s", [1, 100, 4096])
def test_windows_on_hybrid_attention_layers_megatron(s, skip):
    """Megatron-LM's hybrid_flops counts every '*' layer's core as s^2/2 pairs, window or not."""
    args = nemotron_h_args(window_size=(127, 0), window_attn_skip_freq=skip, num_layers=len(MAIN))
    assert evaluate(args, "megatron", seq_len=s).training == _megatron(args, s)
    assert evaluate(args, "megatron", seq_len=s).training == evaluate(nemotron_h_args(), "megatron", seq_len=s).training


def test_the_sliding_hybrid_layers_are_the_ones_megatron_lm_slides():
    model = flopsreg.Model.from_megatron_args(nemotron_h_args(window_size=(127, 0), window_attn_skip_freq=4, num_layers=21))
    kinds = [layer.kind for layer in model.layers]
    assert [i + 1 for i, kind in enumerate(kinds) if "sliding_window" in model.kinds[kind].flags] == [11, 18]  # 4 % 4 == 0: not 4
    assert "sliding_window" in model.kinds[model.plan.blocks["mtp"][0]].flags  # layer 1 of the MTP stack


# -- MLA in hybrid stacks: '+' layers, and '*' layers beside the MLA arguments ----------------


def _mla_layer(s):
    """One MLA layer, matmul by matmul: q (no q_lora), kv down with the rope key, kv up, the core, o."""
    n, d_nope, d_rope, d_v, r_kv = 32, 32, 16, 32, 64
    return (
        2 * s * H * n * (d_nope + d_rope)
        + 2 * s * H * (r_kv + d_rope)
        + 2 * s * r_kv * n * (d_nope + d_v)
        + 2 * n * (d_nope + d_rope + d_v) * (s * (s + 1) // 2)
        + 2 * s * n * d_v * H
    )


@pytest.mark.parametrize("s", [1, 77, 4096])
def test_mla_layers_of_a_hybrid_pattern(s):
    """'+' layers run MLA (exact); Megatron-LM's hybrid_flops has no term for them (its number drops the five)."""
    args = nemotron_h_args(hybrid_layer_pattern=NEMOTRON_PATTERN.replace("*", "+"), **MLA_ARGS)
    assert evaluate(args, seq_len=s).forward == _nemotron_exact(s) + 5 * (_mla_layer(s) - _attention(s))
    assert evaluate(args, "megatron", seq_len=s).training == _megatron(args, s)


def test_mla_layers_count_no_mixer_under_megatron():
    model = flopsreg.Model.from_megatron_args(nemotron_h_args(hybrid_layer_pattern="M+M-", mtp_num_layers=None, **MLA_ARGS))
    selection = flopsreg.Registry.default().select(model, convention="megatron")
    assert not [slot for slot in selection.kind("mla_only").patterns if slot.startswith(("attention", "mixer"))]
    exact = flopsreg.Registry.default().select(model).kind("mla_only").patterns
    assert exact["attention.projection"] == "mla_projection"


@pytest.mark.parametrize("s", [1, 77, 4096])
def test_attention_layers_beside_mla_arguments_run_multi_head_attention(s):
    """With multi_latent_attention the '*' layers are still SelfAttention, multi-head (no GQA with MLA)."""
    args = nemotron_h_args(**MLA_ARGS)
    assert evaluate(args, seq_len=s).forward == _nemotron_exact(s) + 5 * (_attention(s, kv_heads=32) - _attention(s))
    assert evaluate(args, "megatron", seq_len=s).training == _megatron(args, s)
    assert "mla" not in flopsreg.Model.from_megatron_args(args).flags


# -- Gated Delta Product stacks ----------------------------------------------------------------


def _gdp_layer(s, n):
    """One Gated Delta Product layer of the oracle's model: 64 heads of 64, 8 groups of 128 key channels."""
    heads, p, groups, state = 64, 64, 8, 128
    inner = heads * p
    return (
        2 * s * H * (inner * (1 + n) + groups * state * (1 + n) + heads * (1 + n))  # z, V x n; K x n, Q; b x n, a
        + 2 * s * (inner * n + groups * state * (1 + n)) * 4  # conv1d over V, K, Q: 4 taps
        + (4 * n + 2) * s * heads * state * p  # the recurrence: (2n + 1) N x P products per head and token
        + 2 * s * inner * H  # out_proj
    )


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("s", [1, 50, 4096])
def test_gated_delta_product_stacks(s, n):
    args = nemotron_h_args(spec=["megatron.core.models.hybrid.hybrid_layer_specs", "gdp_stack_spec"], gdp_num_householder=n)
    mamba = 2 * s * H * (2 * 4096 + 2 * 8 * 128 + 64) + 2 * s * (4096 + 2 * 8 * 128) * 4 + 4 * s * 64 * 64 * 128 + 2 * s * 4096 * H
    assert evaluate(args, seq_len=s).forward == _nemotron_exact(s) + 9 * (_gdp_layer(s, n) - mamba)
    assert evaluate(args, "megatron", seq_len=s).training == _megatron(args, s)


@pytest.mark.parametrize(("s", "heads", "d_k", "d_v", "n"), [(1, 1, 1, 1, 1), (5, 2, 3, 2, 2), (7, 1, 2, 3, 3), (4, 3, 2, 2, 4)])
def test_gated_delta_product_core_is_the_recurrence_token_by_token(s, heads, d_k, d_v, n):
    model = flopsreg.Model.from_megatron_args(nemotron_h_args(
        hybrid_layer_pattern="M", mtp_num_layers=None, num_experts=None, spec="gdp_stack_spec", gdp_num_householder=n,
        mamba_num_heads=heads, mamba_head_dim=d_v, mamba_state_dim=d_k, mamba_num_groups=1,
    ))
    unit = flopsreg.Registry.default().select(model).kind(model.plan.cycle[0])
    assert unit.patterns["mixer.core"] == "gated_delta_product_core"
    assert unit.flops(s)["mixer.core"] == 2 * lo.delta_product_recurrent_macs(s, heads, d_k, d_v, n)


# -- MTP depths of a GDN model counted as further layers of linear_attention_freq ------------------


@pytest.mark.parametrize(("layers", "period", "depth"), [(48, 4, 2), (48, 4, 4), (47, 4, 1), (46, 4, 3), (48, 3, 2), (45, 2, 3)])
@pytest.mark.parametrize("s", [1, 4096])
def test_mtp_depths_counted_as_further_linear_attention_freq_layers(s, layers, period, depth):
    args = qwen3_next_args(num_layers=layers, linear_attention_freq=period, mtp_num_layers=depth, seq_length=s)
    assert evaluate(args, "megatron", seq_len=s).training == _megatron(args, s)


@pytest.mark.parametrize("s", [1, 37, 4096])
def test_mtp_depths_run_the_last_decoder_layer_whatever_megatron_counts(s):
    """47 layers, N = 4: the last (0-based 46) is GDN; depths at 47, 48, 49 are counted as softmax, GDN, GDN,
    and all three run the last layer's Gated DeltaNet, as the exact count says."""
    args = qwen3_next_args(num_layers=47, mtp_num_layers=3)
    model = flopsreg.Model.from_megatron_args(args)
    assert model.plan.blocks["mtp"] == ("gdn_as_attention", "gdn", "gdn")
    assert model.kinds["gdn_as_attention"].flags == model.kinds["gdn"].flags | {"megatron_counts_attention", "output_gate"}
    exact = evaluate(args, seq_len=s).forward
    same = flopsreg.Model(
        name="same", source="test", flags=model.flags, params=dict(model.params),
        kinds={**model.kinds, "gdn_as_attention": model.kinds["gdn"]}, plan=model.plan,
    )
    assert exact == flopsreg.Registry.default().evaluate(same, seq_len=s).forward
