"""The olmo_core convention and its drop-in, against OLMo-core's own methods run verbatim.

The ``num_flops_per_token`` methods below are copied verbatim from allenai/OLMo-core at commit
fa6c5014c9f6e9ee789da2d9c20d5126fee8df0d (2026-06-22): ``Transformer`` (nn/transformer/model.py),
``TransformerBlock`` and ``MoETransformerBlock`` (nn/transformer/block.py), ``Attention``
(nn/attention/__init__.py), ``FeedForward`` (nn/feed_forward.py), ``MoEBase`` (nn/moe/moe.py),
``ParallelMLP`` (nn/moe/parallel_mlp.py) and ``LMHead`` (nn/lm_head.py). The module objects they
read are minimal stand-ins holding parameters of the shapes OLMo-core builds for each config.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import List, cast  # noqa: UP035 (as OLMo-core writes it)

import attrs
import pytest

import flopsreg
from flopsreg.integrations.olmo_core import num_flops_per_token

HF = Path(__file__).parents[1] / "data" / "hf"


class Param:
    def __init__(self, *shape: int):
        self.shape = shape

    def numel(self) -> int:
        return math.prod(self.shape)


class Module:
    """A stand-in for torch.nn.Module: its own parameters, then its children's."""

    def __init__(self, params=(), children=None, **attributes):
        self._params = [p for p in params if p is not None]
        self._children = {k: v for k, v in (children or {}).items() if v is not None}
        for name, value in {**(children or {}), **attributes}.items():
            setattr(self, name, value)

    def parameters(self):
        yield from self._params
        for child in self._children.values():
            yield from child.parameters()


TransformerBlockBase = Module


# ---- verbatim from OLMo-core fa6c5014 ------------------------------------------------------------
class Transformer(Module):
    def num_flops_per_token(self, seq_len: int) -> int:
        """
        Returns the idealized number of flops per token for the given sequence length. Purposefully
        does not account for wasted flops due to padding, recomputation, etc.
        """
        flops_per_token = 0
        blocks = cast(List[TransformerBlockBase], list(self.blocks.values()))  # noqa: UP006
        for block in blocks:
            flops_per_token += block.num_flops_per_token(seq_len)
        if self.lm_head is not None:
            flops_per_token += self.lm_head.num_flops_per_token(seq_len)
        return flops_per_token


class TransformerBlock(Module):
    def num_flops_per_token(self, seq_len: int) -> int:
        attn_flops = self.attention.num_flops_per_token(seq_len)
        ff_flops = self.feed_forward.num_flops_per_token(seq_len)
        return attn_flops + ff_flops


class MoETransformerBlock(Module):
    def num_flops_per_token(self, seq_len: int) -> int:
        attn_flops = self.attention.num_flops_per_token(seq_len)
        moe_flops = self.feed_forward_moe.num_flops_per_token(seq_len)
        return attn_flops + moe_flops


class Attention(Module):
    def num_flops_per_token(self, seq_len: int) -> int:
        """
        This accounts for:
        - Linear projections (Q, K, V, output, and gating if enabled)
        - Attention computation (QK^T and softmax(QK^T) @ V)
        - Sliding window attention (reduced effective sequence length)
        """
        # 6 FLOPs per parameter (2 ops * 3 for forward+backward)
        param_flops = 6 * sum(p.numel() for p in self.parameters())

        # Attention computation (QK^T and Attn*V)
        # 12x multiplier: 2 matmuls * 2 ops each * 3 for forward+backward
        # For sliding window attention, effective sequence length is limited by window size
        # Note that flash attention technically uses more flops (14x multiplier) due to recomputation,
        # however, we just compute the idealized flops for SDPA.
        effective_seq_len = min(self.window_size, seq_len) if self.window_size else seq_len
        attn_flops = 12 * self.n_heads * self.head_dim * effective_seq_len

        return param_flops + attn_flops


class FeedForward(Module):
    def num_flops_per_token(self, seq_len: int) -> int:
        del seq_len
        # 6 FLOPs per parameter (2 ops * 3 for forward+backward)
        return 6 * sum(p.numel() for p in self.parameters())


class MoE(Module):
    def num_flops_per_token(self, seq_len: int) -> int:
        router_flops = 6 * sum(p.numel() for p in self.router.parameters())
        shared_mlp_flops = (
            self.shared_mlp.num_flops_per_token(seq_len) if self.shared_mlp is not None else 0
        )
        expert_flops = self.experts.num_flops_per_token(seq_len)
        return router_flops + shared_mlp_flops + expert_flops


class ParallelMLP(Module):
    def num_flops_per_token(self, seq_len: int) -> int:
        """
        Returns idealized FLOPs per token, not accounting for padding. This is fairly accurate for
        the dropless MoE implementation, but under-estimates the non-idealized FLOPs for the default
        MoE implementation.
        """
        del seq_len
        # Each token activates top_k experts.
        # The expert MLP parameters are typically stored as a single batched tensor with a leading
        # expert dimension (not shared weights). On average, each token "touches" top_k experts,
        # i.e. a fraction (top_k / num_experts) of the total expert parameters.
        expert_params = sum(p.numel() for p in self.mlp.parameters())
        return 6 * int(expert_params * self.top_k / self.num_experts)


class LMHead(Module):
    def num_flops_per_token(self, seq_len: int) -> int:
        del seq_len
        # 6 FLOPs per parameter (2 ops * 3 for forward+backward)
        return 6 * sum(p.numel() for p in self.parameters())
# ---- end of the verbatim copy ---------------------------------------------------------------------


def olmo_core_model(config: dict, *, qk_norm: str | None = None) -> Transformer:
    """The module tree OLMo-core builds for a Llama/Qwen3-style config (shapes only).

    *qk_norm*: ``"head"`` (use_head_qk_norm, Qwen3) or ``"full"`` (OLMo 2's norms over all heads)."""
    h, heads = config["hidden_size"], config["num_attention_heads"]
    kv, hd = config.get("num_key_value_heads", heads), config.get("head_dim") or h // heads
    bias = config.get("attention_bias", False)
    window = config.get("sliding_window") if config.get("model_type") == "mistral" else None
    norms = {"head": (hd, hd), "full": (heads * hd, kv * hd), None: None}[qk_norm]

    def attention():
        params = [Param(heads * hd, h), Param(kv * hd, h), Param(kv * hd, h), Param(h, heads * hd)]
        if bias:
            params += [Param(heads * hd), Param(kv * hd), Param(kv * hd), Param(h)]
        if norms:
            params += [Param(norms[0]), Param(norms[1])]
        return Attention(params, n_heads=heads, head_dim=hd, window_size=window)

    blocks = {}
    for i in range(config["num_hidden_layers"]):
        e = config.get("num_experts") or config.get("n_routed_experts")
        if e and i >= config.get("first_k_dense_replace", 0):
            eh, shared = config["moe_intermediate_size"], config.get("n_shared_experts") or 0
            experts = ParallelMLP(children={"mlp": Module([Param(e, h, eh), Param(e, eh, h), Param(e, h, eh)])},
                                  top_k=config["num_experts_per_tok"], num_experts=e)
            sh = shared * eh  # the shared experts as one FeedForward of their summed width
            shared_mlp = FeedForward([Param(sh, h), Param(h, sh), Param(sh, h)]) if shared else None
            moe = MoE(children={"router": Module([Param(e, h)]), "experts": experts, "shared_mlp": shared_mlp}, shared_mlp=shared_mlp)
            blocks[str(i)] = MoETransformerBlock(children={"attention": attention(), "feed_forward_moe": moe})
        else:
            ffn = config["intermediate_size"]
            ff = FeedForward([Param(ffn, h), Param(h, ffn), Param(ffn, h)])
            blocks[str(i)] = TransformerBlock(children={"attention": attention(), "feed_forward": ff})
    lm_head = LMHead([Param(h), Param(config["vocab_size"], h)])  # its norm and w_out (tied or not)
    return Transformer(blocks=blocks, lm_head=lm_head)


def hf(name: str, **changes) -> dict:
    return {**json.loads((HF / f"{name}.json").read_text()), **changes}


def olmo_core_per_token(model: flopsreg.Model, seq_len: int, registry) -> int:
    training = registry.evaluate(model, seq_len=seq_len, convention="olmo_core").training
    assert training % seq_len == 0
    return training // seq_len


CASES = {
    "llama-3-8b": (hf("llama-3-8b"), None, ()),
    "llama-with-biases-tied": (hf("llama-3-8b", attention_bias=True, tie_word_embeddings=True), None, ()),
    "qwen3-8b": (hf("qwen3-8b"), "head", ()),
    "olmo2-like": (hf("llama-3-8b"), "full", ("qk_norm", "full_width_qk_norm")),
    "qwen3-30b-a3b": (hf("qwen3-30b-a3b"), "head", ()),
    "mistral-7b-window": (hf("mistral-7b-v0.1"), None, ()),
    # GQA, a dense first layer, then MoE with a shared expert (GLM-4.5-Air without q/k/v biases and MTP).
    "moe-shared-experts": (hf("glm-4.5-air", attention_bias=False, num_nextn_predict_layers=0), None, ()),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seq_len", [1, 2048, 4096, 8192])
def test_olmo_core_to_the_digit(registry, case, seq_len):
    config, qk_norm, flags = CASES[case]
    model = flopsreg.Model.from_hf_config(config, registry=registry)
    model = attrs.evolve(model, flags=model.flags | set(flags))
    expected = olmo_core_model(config, qk_norm=qk_norm).num_flops_per_token(seq_len)
    assert olmo_core_per_token(model, seq_len, registry) == expected
    assert num_flops_per_token(model, seq_len, convention="olmo_core", registry=registry) == expected


def test_the_drop_in_reads_a_config_and_is_exact_by_default(registry):
    config = hf("qwen3-8b")
    model = flopsreg.Model.from_hf_config(config, registry=registry)
    assert num_flops_per_token(config, 4096, convention="olmo_core", registry=registry) == olmo_core_model(config, qk_norm="head").num_flops_per_token(4096)
    exact = registry.evaluate(model, seq_len=4096).training
    assert num_flops_per_token(config, 4096, registry=registry) * 4096 == exact
    with pytest.raises(flopsreg.ModelError, match=r"^seq_len = 0: expected an integer >= 1"):
        num_flops_per_token(config, 0)
    with pytest.raises(flopsreg.ModelError, match=r"^model = str 'qwen3-8b'.*: expected a flopsreg.Model or a Hugging Face config.json mapping"):
        num_flops_per_token("qwen3-8b", 4096)


@pytest.mark.parametrize(
    ("name", "changes", "message"),
    [
        ("deepseek-v3", {}, r"cannot build this model; this layer has multi-head latent attention \(mla\)"),
        ("gpt-oss-20b", {}, r"cannot build this model; this layer has attention sinks \(sinks\)"),
        ("qwen2.5-7b", {}, r"this layer has biases on q, k and v only \(qkv_bias"),
        ("qwen2-moe", {}, r"this layer has biases on q, k and v only|a shared-expert gate"),
        ("starcoder2", {}, r"olmo_core has no term for plain_ffn"),
        ("qwen3-next-80b-a3b", {}, r"cannot build this model as flopsreg reads it .*gated_deltanet"),
        ("gemma-3-4b", {}, r"olmo_core has no term for sandwich_norms"),
    ],
)
def test_what_olmo_core_cannot_build_is_refused_by_name(registry, name, changes, message):
    model = flopsreg.Model.from_hf_config(hf(name, **changes), registry=registry)
    assert registry.evaluate(model, seq_len=4096).forward > 0  # exact counts it
    with pytest.raises(flopsreg.ModelError, match=message):
        registry.evaluate(model, seq_len=4096, convention="olmo_core")


def test_mtp_is_refused(registry):
    """GLM-4.5-Air without its q/k/v biases: GQA, MoE with shared experts, and an MTP layer, which OLMo-core has no module for."""
    model = flopsreg.Model.from_hf_config(hf("glm-4.5-air", attention_bias=False), registry=registry, blocks=("mtp",))
    with pytest.raises(flopsreg.ModelError, match=r"^model-level slots, slot mtp: OLMo-core's Transformer \(commit fa6c5014\) cannot build this model: it has no multi-token-prediction module"):
        registry.evaluate(model, seq_len=128, convention="olmo_core")
