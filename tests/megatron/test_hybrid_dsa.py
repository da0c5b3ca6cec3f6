"""'D' (DeepSeek sparse attention) layers of Megatron-LM's hybrid pattern (d98e8a64).

Under ``megatron``: Megatron-LM's function run verbatim, which counts a 'D' layer as nothing
(num_floating_point_operations picks the M, G, *, - and E counts of get_hybrid_layer_counts,
megatron/training/training.py:1340-1344). Under ``exact``: the layer as DSAttention runs it, an
MLA layer whose queries attend to the indexer's top-k keys plus its lightning indexer, against
loops over tokens, heads and pairs.
"""

import copy
from types import SimpleNamespace

import pytest
from megatron_lm_d98e8a64 import megatron_lm

import flopsreg

H, HEADS, KV_RANK, NOPE, ROPE, V = 64, 4, 16, 8, 4, 8
IDX_HEADS, IDX_DIM = 3, 8
PATTERN = "M-MDM-MD"


def _args(pattern=PATTERN, **overrides):
    """A small hybrid stack after validate_args: MLA on ('+' or 'D') layers, the DSA indexer arguments."""
    args = dict(
        hidden_size=H, num_layers=len(pattern), num_attention_heads=HEADS, group_query_attention=False,
        num_query_groups=1, kv_channels=16, ffn_hidden_size=128, swiglu=True, vocab_size=100, padded_vocab_size=128,
        seq_length=32, num_experts=None, moe_router_topk=2, moe_ffn_hidden_size=None, moe_latent_size=None,
        moe_shared_expert_intermediate_size=None, mtp_num_layers=None, multi_latent_attention=True, q_lora_rank=None,
        kv_lora_rank=KV_RANK, qk_head_dim=NOPE, qk_pos_emb_head_dim=ROPE, v_head_dim=V, attention_output_gate=False,
        experimental_attention_variant=None, linear_attention_freq=None, hybrid_layer_pattern=pattern,
        mamba_state_dim=8, mamba_head_dim=16, mamba_num_groups=2, mamba_num_heads=8, gdp_num_householder=2, spec=None,
        moe_layer_freq=1, linear_key_head_dim=None, linear_value_head_dim=None, linear_num_key_heads=None,
        linear_num_value_heads=None, linear_conv_kernel_dim=None, window_size=None, window_attn_skip_freq=None,
        dsa_indexer_n_heads=IDX_HEADS, dsa_indexer_head_dim=IDX_DIM, dsa_indexer_topk=5,
    )
    return SimpleNamespace(**{**args, **overrides})


def _evaluate(args, convention="exact", s=32):
    return flopsreg.Registry.default().evaluate(flopsreg.Model.from_megatron_args(args), seq_len=s, convention=convention)


def _topk_pairs(s: int, topk: int) -> int:
    """(query, key) pairs kept: each query really ranks its causal keys by an arbitrary score and keeps the best topk."""
    kept = 0
    for q in range(s):
        ranked = sorted(range(q + 1), key=lambda k: ((q * 7919 + k * 104729) % 1009, k), reverse=True)
        kept += len(ranked[:topk])
    return kept


def _indexer(s: int, latent: int) -> int:
    """The lightning indexer's multiply-adds, one by one, times 2: wq_b from the query latent, wk,
    weights_proj, and every causal pair scored in every index head (q . k, then its weight)."""
    macs = 0
    for q in range(s):
        macs += latent * IDX_HEADS * IDX_DIM + H * IDX_DIM + H * IDX_HEADS
        for _key in range(q + 1):
            for _head in range(IDX_HEADS):
                macs += IDX_DIM + 1
    return 2 * macs


@pytest.mark.parametrize("s", [1, 4, 32, 97])
@pytest.mark.parametrize(("q_lora_rank", "topk"), [(None, 5), (24, 5), (24, 200)])
def test_dsa_layers_exact(s, q_lora_rank, topk):
    """Each 'D' layer is the '+' (MLA) layer plus its indexer, its core over the top-k pairs only."""
    dsa = _evaluate(_args(q_lora_rank=q_lora_rank, dsa_indexer_topk=topk), s=s).forward
    mla = _evaluate(_args(PATTERN.replace("D", "+"), q_lora_rank=q_lora_rank), s=s).forward
    per_pair = 2 * HEADS * (NOPE + ROPE + V)  # QK^T over nope + rope widths, PV over v, per head
    fewer = s * (s + 1) // 2 - _topk_pairs(s, topk)
    latent = H if q_lora_rank is None else q_lora_rank  # DSAIndexer.__init__: q_lora_rank, else hidden_size
    assert dsa - mla == PATTERN.count("D") * (_indexer(s, latent) - per_pair * fewer)


@pytest.mark.parametrize("pattern", [PATTERN, "MDM-/D-", "MEMD|MEMD", "D-D+"])
@pytest.mark.parametrize("s", [1, 64, 4096])
def test_dsa_layers_megatron(pattern, s):
    """Megatron-LM's number to the digit: its function counts no 'D' layer."""
    extra = dict(num_experts=8, moe_ffn_hidden_size=64) if "E" in pattern else {}
    args = _args(pattern, mtp_num_layers=pattern.count("/") or None, seq_length=s, **extra)
    expected = megatron_lm(copy.deepcopy(args), 1)
    assert expected == int(expected)
    assert _evaluate(args, "megatron", s).training == int(expected)


def test_missing_indexer_arguments_are_named_in_one_line():
    args = _args(dsa_indexer_n_heads=None, dsa_indexer_topk=None)
    with pytest.raises(flopsreg.FlopsregError, match=r"^args\.dsa_indexer_n_heads, args\.dsa_indexer_topk: missing; .*'D'") as error:
        _evaluate(args)
    assert "\n" not in str(error.value)


def test_cross_layer_topk_sharing_is_refused_by_name():
    with pytest.raises(flopsreg.FlopsregError, match=r"^args\.dsa_indexer_topk_freq = 2: cross-layer top-k sharing"):
        _evaluate(_args(dsa_indexer_topk_freq=2))
