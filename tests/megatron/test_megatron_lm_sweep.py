"""The ``megatron`` convention against Megatron-LM's own function, run verbatim (d98e8a64), on a
sweep of argument sets: GPT stacks (GQA, MHA, MLA, MoE, latent MoE, windows, MTP, Gated DeltaNet)
and hybrid stacks (Mamba2, Gated DeltaNet, attention, MLA, DSA, windows, Gated Delta Product, MTP).

Every set flopsreg accepts gives Megatron-LM's number to the digit (the widths keep every float
of Megatron's arithmetic an exact integer); the sets it refuses are listed by name with the
reason, so a new refusal or a new acceptance fails here.
"""

import copy
import itertools
from types import SimpleNamespace

import pytest
from megatron_lm_d98e8a64 import megatron_lm

import flopsreg
from flopsreg.integrations.megatron import num_floating_point_operations

BASE = dict(
    hidden_size=256, num_layers=8, num_attention_heads=8, group_query_attention=True, num_query_groups=2,
    kv_channels=32, ffn_hidden_size=768, swiglu=True, vocab_size=1000, padded_vocab_size=1024, seq_length=128,
    num_experts=None, moe_layer_freq=1, moe_router_topk=2, moe_ffn_hidden_size=None, moe_latent_size=None,
    moe_shared_expert_intermediate_size=None, mtp_num_layers=None, multi_latent_attention=False, q_lora_rank=None,
    kv_lora_rank=32, qk_head_dim=32, qk_pos_emb_head_dim=16, v_head_dim=32, attention_output_gate=False,
    experimental_attention_variant=None, linear_attention_freq=None, linear_conv_kernel_dim=4,
    linear_key_head_dim=32, linear_value_head_dim=32, linear_num_key_heads=4, linear_num_value_heads=8,
    hybrid_layer_pattern=None, mamba_state_dim=16, mamba_head_dim=32, mamba_num_groups=2, mamba_num_heads=16,
    gdp_num_householder=2, spec=None, window_size=None, window_attn_skip_freq=None,
    dsa_indexer_n_heads=4, dsa_indexer_head_dim=32, dsa_indexer_topk=16,
)
MOE = dict(num_experts=8, moe_router_topk=2, moe_ffn_hidden_size=128)
MLA = dict(multi_latent_attention=True, group_query_attention=False, kv_channels=32)
GDN = dict(experimental_attention_variant="gdn", linear_attention_freq=4)


def _sets():
    """(name, overrides) of every argument set of the sweep."""
    gpt = {
        "gqa": {}, "mha": dict(group_query_attention=False), "gelu": dict(swiglu=False),
        "gate": dict(attention_output_gate=True), "moe": MOE, "moe_freq2": {**MOE, "moe_layer_freq": 2},
        "moe_shared": {**MOE, "moe_shared_expert_intermediate_size": 256},
        "latent_moe": {**MOE, "moe_latent_size": 64}, "mla": MLA, "mla_q_lora": {**MLA, "q_lora_rank": 64},
        "window": dict(window_size=(31, 0)), "window_skip": dict(window_size=(31, 0), window_attn_skip_freq=2),
        "gdn": GDN, "gdn2": {**GDN, "experimental_attention_variant": "gdn2"}, "gdn_freq2": {**GDN, "linear_attention_freq": 2},
        "gdn_freq3": {**GDN, "linear_attention_freq": 3}, "gdn_moe": {**GDN, **MOE},
    }
    for (name, overrides), mtp in itertools.product(gpt.items(), (None, 1, 2, 3)):
        yield f"gpt-{name}-mtp{mtp}", {**overrides, "mtp_num_layers": mtp}
    patterns = {
        "mamba": "M-M*M-M*", "mamba_moe": "MEM*MEM*", "gdn": "G-G*G-G*", "mixed": "MG*-ME*G", "pipes": "M-M*|M-M*",
        "mla": "M-M+M-M+", "dsa": "M-MDM-MD", "mamba_mtp": "M-M*M-M*/*-", "mamba_mtp2": "MEM*MEM*/*E/*E",
        "mla_mtp": "M-M+M-M+/+-", "gdn_mtp": "G-G*G-G*/G-/G-",
    }
    hybrid = {
        "plain": {}, "moe": MOE, "gelu": dict(swiglu=False), "gate": dict(attention_output_gate=True),
        "mla_flag": MLA, "window": dict(window_size=(31, 0)), "gdp": dict(spec=["megatron.core.models.hybrid", "gdp_stack_spec"]),
        "gdp3": dict(spec="gated_delta_product_stack_spec", gdp_num_householder=3),
    }
    for (pattern_name, pattern), (name, overrides) in itertools.product(patterns.items(), hybrid.items()):
        mtp = pattern.count("/") or None
        if "E" in pattern and "num_experts" not in overrides:
            overrides = {**overrides, **MOE}
        if "+" in pattern or "D" in pattern:  # validate_args: '+' or 'D' switches multi_latent_attention on
            overrides = {**overrides, **MLA}
        yield f"hybrid-{pattern_name}-{name}", {**overrides, "hybrid_layer_pattern": pattern, "mtp_num_layers": mtp}


SETS = dict(_sets())

# name -> the start of the refusal flopsreg gives (Megatron-LM counts each of these): none left.
REFUSED: dict[str, str] = {}


def _args(overrides):
    return SimpleNamespace(**{**BASE, **overrides})


def test_the_sweep_has_150_argument_sets():
    assert len(SETS) >= 150


@pytest.mark.parametrize("name", sorted(SETS))
def test_megatron_is_megatron_lms_number(name):
    args = _args(SETS[name])
    expected = megatron_lm(copy.deepcopy(args), batch_size=2)
    if name in REFUSED:
        with pytest.raises(flopsreg.FlopsregError, match="^" + REFUSED[name].replace(".", r"\.")):
            num_floating_point_operations(args, 2, convention="megatron")
        return
    assert expected == int(expected) and abs(expected) < 2**53  # Megatron's float is exact here
    assert num_floating_point_operations(args, 2, convention="megatron") == int(expected)
