"""The megatron_bridge convention and drop-in against Megatron-Bridge's published formula
(src/megatron/bridge/training/utils/flop_utils.py, transformer_flops(), at NVIDIA-NeMo/
Megatron-Bridge 067f987d), transcribed below term by term in exact fractions, on the model
providers Bridge's own Hugging Face bridges build for real configs.
"""

import json
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import attrs
import pytest

import flopsreg
from flopsreg.integrations.megatron_bridge import num_floating_point_operations

HF = Path(__file__).parents[1] / "data" / "hf"


def bridge_training(m, s, batch=1):
    """transformer_flops() for one global batch of sequences of s tokens (its non-DSA, non-GDN path)."""
    T, factor = batch * s, Fraction(s)  # seqlen_sum and core_attn_seq_factor without packed statistics
    L = m.num_layers
    if m.num_moe_experts is None:
        dense, moe, k, last_moe = L, 0, 0, 0
    else:
        freq = m.moe_layer_freq
        pattern = [int(i % freq == 0) for i in range(L)] if isinstance(freq, int) else freq
        moe, k, last_moe = sum(pattern), m.moe_router_topk, pattern[-1]
        dense = L - moe
    mtp = m.mtp_num_layers or 0
    moe, dense, layers = moe + last_moe * mtp, dense + (1 - last_moe) * mtp, L + mtp
    F_e = m.ffn_hidden_size if m.moe_ffn_hidden_size is None else m.moe_ffn_hidden_size
    F_sh = m.moe_shared_expert_intermediate_size or 0
    f = 3 if m.gated_linear_unit is True else 2
    h, n_h = m.hidden_size, m.num_attention_heads
    if m.multi_latent_attention:
        d_n, d_r, d_v = m.qk_head_dim, m.qk_pos_emb_head_dim, m.v_head_dim
        q = m.q_lora_rank * (h + n_h * (d_n + d_r) + 1) if m.q_lora_rank else h * n_h * (d_n + d_r)
        attention = 6 * layers * (
            q + m.kv_lora_rank * (h + n_h * (d_n + d_v) + 1) + h * d_r + n_h * d_v * h
            + factor * n_h * (d_n + d_r) / 2 + factor * n_h * d_v / 2
        )
    else:
        q_size = m.kv_channels * n_h
        g = n_h if m.num_query_groups is None else m.num_query_groups
        projections = h * (q_size + 2 * m.kv_channels * g) + q_size * h
        full_core = q_size * factor / 2 * 2
        if m.window_size is None:
            attention = 6 * layers * (projections + full_core)
        else:
            W = sum(m.window_size) + 1 if isinstance(m.window_size, (tuple, list)) else m.window_size
            context = W - Fraction(W * (W - 1), 2 * s) if W < s else factor / 2
            skip = m.window_attn_skip_freq
            sliding = layers if skip is None else sum((i + 1) % skip != 0 for i in range(layers))
            attention = 6 * ((layers - sliding) * (projections + full_core) + sliding * (projections + q_size * context * 2))
    V = -(-m.vocab_size // (m.make_vocab_size_divisible_by * m.tensor_model_parallel_size)) * (
        m.make_vocab_size_divisible_by * m.tensor_model_parallel_size
    )
    total = T * (
        6 * h * (m.ffn_hidden_size * f * dense + F_e * k * f * moe + F_sh * f * moe)
        + attention
        + 6 * mtp * (3 * h + 2 * h * h)
        + 6 * h * V * (mtp + 1)
    )
    assert total.denominator == 1
    return int(total)


def divisor(vocab):
    """Bridge's make_vocab_size_divisible_by for a Hugging Face import: the largest power of 2 <= 128 dividing V."""
    base = 128
    while vocab % base:
        base //= 2
    return base


def provider(**fields):
    """A GPTModelProvider's fields as Bridge's Hugging Face bridges set them (TransformerConfig defaults elsewhere)."""
    defaults = dict(
        num_query_groups=None, kv_channels=None, gated_linear_unit=True, num_moe_experts=None, moe_layer_freq=1,
        moe_router_topk=2, moe_ffn_hidden_size=None, moe_shared_expert_intermediate_size=None, moe_shared_expert_gate=False,
        mtp_num_layers=None, multi_latent_attention=False, q_lora_rank=None, kv_lora_rank=None, qk_head_dim=None,
        qk_pos_emb_head_dim=None, v_head_dim=None, attention_output_gate=False, window_size=None,
        window_attn_skip_freq=None, tensor_model_parallel_size=1, should_pad_vocab=False, seq_length=4096,
    )
    model = SimpleNamespace(**{**defaults, **fields})
    if not hasattr(model, "make_vocab_size_divisible_by"):  # the base bridge's divisor, where a bridge sets none
        model.make_vocab_size_divisible_by = divisor(model.vocab_size)
    if model.kv_channels is None:
        model.kv_channels = model.hidden_size // model.num_attention_heads
    return model


LLAMA_3_8B = provider(hidden_size=4096, num_layers=32, num_attention_heads=32, num_query_groups=8, ffn_hidden_size=14336, vocab_size=128256)
QWEN3_30B_A3B = provider(
    hidden_size=2048, num_layers=48, num_attention_heads=32, num_query_groups=4, kv_channels=128, ffn_hidden_size=6144,
    num_moe_experts=128, moe_router_topk=8, moe_ffn_hidden_size=768, vocab_size=151936,
)
GPT_OSS_20B = provider(  # gpt_oss_bridge: window (sliding_window - 1, 0), window_attn_skip_freq 2 hard-coded
    hidden_size=2880, num_layers=24, num_attention_heads=64, num_query_groups=8, kv_channels=64, ffn_hidden_size=2880,
    num_moe_experts=32, moe_router_topk=4, moe_ffn_hidden_size=2880, vocab_size=201088, window_size=(127, 0),
    window_attn_skip_freq=2,
)
GEMMA_3_4B = provider(  # gemma3_vl_bridge: window_size = sliding_window (an int), skip freq unset, divisor 128 (line 81)
    hidden_size=2560, num_layers=34, num_attention_heads=8, num_query_groups=4, kv_channels=256, ffn_hidden_size=10240,
    vocab_size=262208, window_size=1024, interleaved_attn_pattern=(5, 1), make_vocab_size_divisible_by=128,
)
MISTRAL_7B = provider(  # mistral_bridge: window [sliding_window - 1, 0] on every layer
    hidden_size=4096, num_layers=32, num_attention_heads=32, num_query_groups=8, ffn_hidden_size=14336, vocab_size=32000,
    window_size=[4095, 0],
)
DEEPSEEK_V3 = provider(
    hidden_size=7168, num_layers=61, num_attention_heads=128, ffn_hidden_size=18432, num_moe_experts=256,
    moe_layer_freq=[0] * 3 + [1] * 58, moe_router_topk=8, moe_ffn_hidden_size=2048, moe_shared_expert_intermediate_size=2048,
    mtp_num_layers=1, multi_latent_attention=True, q_lora_rank=1536, kv_lora_rank=512, qk_head_dim=128,
    qk_pos_emb_head_dim=64, v_head_dim=128, vocab_size=129280,
)
CASES = {  # the provider, the same model as flopsreg reads it, and the lengths checked
    "llama-3-8b": (LLAMA_3_8B, lambda: flopsreg.Model.example("llama-3-8b"), (4096, 32768)),
    "qwen3-30b-a3b": (QWEN3_30B_A3B, lambda: flopsreg.Model.example("qwen3-30b-a3b"), (4096,)),
    "gpt-oss-20b": (GPT_OSS_20B, lambda: flopsreg.Model.example("gpt-oss-20b"), (100, 128, 129, 4096, 131072)),
    "gemma-3-4b": (GEMMA_3_4B, lambda: flopsreg.Model.example("gemma-3-4b"), (512, 1024, 1025, 4096, 32768)),
    "mistral-7b-v0.1": (MISTRAL_7B, lambda: flopsreg.Model.example("mistral-7b-v0.1"), (4096, 4097, 32768)),
    "deepseek-v3+mtp": (DEEPSEEK_V3, lambda: flopsreg.Model.from_hf_config(HF / "deepseek-v3.json", blocks=("mtp",)), (4096,)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_convention_is_bridges_formula_to_the_digit(registry, name):
    cfg, model, lengths = CASES[name]
    for s in lengths:
        assert registry.evaluate(model(), seq_len=s, convention="megatron_bridge").training == bridge_training(cfg, s), s


@pytest.mark.parametrize("name", sorted(CASES))
def test_drop_in_is_bridges_formula_to_the_digit(name):
    cfg, _, lengths = CASES[name]
    for s in lengths:
        container = SimpleNamespace(model=SimpleNamespace(**{**vars(cfg), "seq_length": s}))
        assert num_floating_point_operations(container, 8, convention="megatron_bridge") == bridge_training(cfg, s, batch=8), s


def test_every_gemma_layer_slides_in_bridges_count(registry):
    """Gemma 3's 5 global layers are counted with the 1024-key window, as the 29 local ones."""
    s, W, n_h, d = 32768, 1024, 8, 256
    gemma = flopsreg.Model.example("gemma-3-4b")
    bridge = registry.evaluate(gemma, seq_len=s, convention="megatron_bridge")
    exact = registry.evaluate(gemma, seq_len=s)
    window_pairs = W * (W + 1) // 2 + (s - W) * W
    full_pairs = s * (s + 1) // 2
    padding = 3 * 2 * s * 2560 * (262272 - 262208)  # the Gemma3-VL bridge pads the vocabulary to a multiple of 128
    assert exact.training - bridge.training == 3 * 5 * 2 * n_h * (d + d) * (full_pairs - window_pairs) - padding
    (mask,) = [d for d in registry.compare(gemma, seq_len=s, conventions=["megatron_bridge"]).differences if d.slot == "attention.mask"]
    assert "'global'" in mask.where and mask.pattern == "megatron_bridge_gemma3_every_layer_slides"
    assert "window_attn_skip_freq unset" in mask.reason


def test_gemma3_drop_in_counts_the_real_layers_exactly():
    """The provider's interleaved_attn_pattern is the model: exact counts 5 local : 1 global."""
    container = SimpleNamespace(model=GEMMA_3_4B)
    assert num_floating_point_operations(container, 1) == flopsreg.Registry.default().evaluate(flopsreg.Model.example("gemma-3-4b"), seq_len=4096).training


def test_logits_over_bridges_padded_vocabulary_depend_on_tp():
    tp8 = SimpleNamespace(model=SimpleNamespace(**{**vars(LLAMA_3_8B), "tensor_model_parallel_size": 8}))
    padded = 129024  # 128256 rounded up to a multiple of 128 x 8
    added = 3 * 2 * 4096 * 4096 * (padded - 128256)
    assert num_floating_point_operations(tp8, 1, convention="megatron_bridge") == bridge_training(LLAMA_3_8B, 4096) + added
    assert num_floating_point_operations(tp8, 1) == num_floating_point_operations(SimpleNamespace(model=LLAMA_3_8B), 1)


def test_packed_statistics(registry):
    cfg = SimpleNamespace(model=LLAMA_3_8B)
    model = flopsreg.Model.example("llama-3-8b")
    per_sequence = registry.evaluate(model, seqlens=[1000, 3096], convention="megatron_bridge").training
    assert num_floating_point_operations(cfg, 2, 4096, 1000**2 + 3096**2, convention="megatron_bridge") == per_sequence
    mistral = SimpleNamespace(model=MISTRAL_7B)
    # Bridge's dense path passes the statistics of equal sequences: counted at that length, windows and all
    s = 32768
    equal = num_floating_point_operations(mistral, 2, 2 * s, 2 * s**2, convention="megatron_bridge")
    assert equal == 2 * bridge_training(MISTRAL_7B, s)
    with pytest.raises(flopsreg.ModelError, match=r"sliding-window or chunked layers"):
        num_floating_point_operations(mistral, 2, 8192, 4096**2 + 2 * 2048**2, convention="megatron_bridge")


@pytest.mark.parametrize(
    ("field", "value"),
    [("hybrid_layer_pattern", "M*M*"), ("experimental_attention_variant", "gdn"), ("moe_latent_size", 512), ("kimi_kda_layers", [1])],
)
def test_branches_flopsreg_does_not_count_are_refused(field, value):
    cfg = SimpleNamespace(model=SimpleNamespace(**{**vars(LLAMA_3_8B), field: value}))
    with pytest.raises(flopsreg.ModelError, match=rf"^cfg.model.{field} = .*: not counted by flopsreg yet$"):
        num_floating_point_operations(cfg, 1)


def _training_or_refusal(registry, model):
    try:
        return registry.evaluate(model, seq_len=4096, convention="megatron_bridge").training
    except flopsreg.ModelError as error:  # the rule that refused, and why (a file names its layer kinds its own way)
        return str(error).split(": ", 1)[1] if str(error).startswith("layers ") else str(error)


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v2-lite"])
def test_mtp_depths_a_bridge_always_counts_are_refused_unless_asked_for(registry, name):
    """The DeepSeek bridges set mtp_num_layers from num_nextn_predict_layers whether or not the
    user asks: a config that declares depths is refused without blocks=("mtp",), never undercounted."""
    config = json.loads((HF / f"{name}.json").read_text())
    config["num_nextn_predict_layers"] = config.get("num_nextn_predict_layers") or 1
    unasked = flopsreg.Model.from_hf_config(config)
    assert "mtp_not_asked" in unasked.flags
    assert registry.evaluate(unasked, seq_len=64).forward > 0  # exact counts the model as transformers runs it
    with pytest.raises(flopsreg.ModelError, match=r"slot mtp: Megatron-Bridge's deepseek_v(2|3) bridge sets mtp_num_layers .* blocks=\('mtp',\)"):
        registry.evaluate(unasked, seq_len=64, convention="megatron_bridge")
    asked = flopsreg.Model.from_hf_config(config, blocks=("mtp",))
    assert "mtp_not_asked" not in asked.flags and registry.evaluate(asked, seq_len=64, convention="megatron_bridge").forward > 0
    config["num_nextn_predict_layers"] = 0
    assert "mtp_not_asked" not in flopsreg.Model.from_hf_config(config).flags


def test_examples_and_their_configs_agree_under_megatron_bridge(registry):
    for path in sorted((Path(__file__).parents[2] / "examples").glob("*.toml")):
        config = HF / f"{path.stem}.json"
        if config.exists():
            ours = _training_or_refusal(registry, flopsreg.Model.from_toml(path))
            read = flopsreg.Model.from_hf_config(config)
            read = attrs.evolve(read, flags=read.flags - {"mtp_not_asked"})  # MTP depths the example file does not list
            assert ours == _training_or_refusal(registry, read), path.stem


@pytest.mark.parametrize(("name", "model_type"), [("mixtral-8x7b", "mixtral"), ("llama-4-scout", "llama4"), ("qwen2-moe", "qwen2_moe")])
def test_model_types_no_bridge_imports_are_refused(registry, name, model_type):
    with pytest.raises(flopsreg.ModelError, match=rf"Megatron-Bridge has no bridge for model_type '{model_type}' .*never counts it"):
        registry.evaluate(flopsreg.Model.from_hf_config(HF / f"{name}.json"), seq_len=4096, convention="megatron_bridge")


def test_gemma_hf_configs_slide_every_layer_too(registry):
    for config in (json.loads((HF / "gemma-2-9b.json").read_text()), {**json.loads((HF / "gemma-3-4b.json").read_text())["text_config"], "model_type": "gemma3_text"}):
        model = flopsreg.Model.from_hf_config(config)
        exact, bridge = registry.evaluate(model, seq_len=8192), registry.evaluate(model, seq_len=8192, convention="megatron_bridge")
        full = [i for i, layer in enumerate(exact.layers) if layer.patterns["attention.mask"] == "full_causal"]
        assert full and {bridge.layers[i].patterns["attention.mask"] for i in full} == {
            f"megatron_bridge_{config['model_type']}_every_layer_slides"
        }


# -- each bridge's own settings, on Hugging Face configs of its class ------------------------------

def _sliding(config, full, sliding, window):
    """A config whose last *sliding* layers slide over *window* keys (layer_types, as transformers 5 saves it)."""
    return {**config, "use_sliding_window": True, "sliding_window": window, "max_window_layers": full,
            "layer_types": ["full_attention"] * full + ["sliding_attention"] * sliding}


QWEN2_SLIDING = _sliding(json.loads((HF / "qwen2.5-7b.json").read_text()), 20, 8, 4096)
QWEN3_SLIDING = _sliding(json.loads((HF / "qwen3-8b.json").read_text()), 30, 6, 1024)
QWEN3_MOE_DENSE = {
    **_sliding(json.loads((HF / "qwen3-30b-a3b.json").read_text()), 40, 8, 2048),
    "mlp_only_layers": [0, 1, 47], "intermediate_size": 6144,
}
DEEPSEEK_V3_ODD_VOCAB = {**json.loads((HF / "deepseek-v3.json").read_text()), "vocab_size": 129281}
DEEPSEEK_V2_ODD_VOCAB = {**json.loads((HF / "deepseek-v2-lite.json").read_text()), "vocab_size": 102401}
GEMMA_3_TEXT = {**json.loads((HF / "gemma-3-4b.json").read_text())["text_config"], "model_type": "gemma3_text"}
BY_BRIDGE = {  # the config, and the provider its bridge builds (the fields flop_utils reads)
    # qwen2_bridge.py / qwen3_bridge.py set no window_size, and CONFIG_MAPPING has no sliding_window
    "qwen2 sliding layers": (QWEN2_SLIDING, provider(
        hidden_size=3584, num_layers=28, num_attention_heads=28, num_query_groups=4, ffn_hidden_size=18944, vocab_size=152064,
    )),
    "qwen3 sliding layers": (QWEN3_SLIDING, provider(
        hidden_size=4096, num_layers=36, num_attention_heads=32, num_query_groups=8, kv_channels=128, ffn_hidden_size=12288,
        vocab_size=151936,
    )),
    # qwen3_moe_bridge.py sets no moe_layer_freq: every layer MoE (flop_utils reads 1), no window either
    "qwen3_moe mlp_only_layers": (QWEN3_MOE_DENSE, QWEN3_30B_A3B),
    # deepseek_v3_bridge.py: divisor 1280 (129281 -> 130560), mtp_num_layers from num_nextn_predict_layers
    "deepseek_v3 vocab 129281": (DEEPSEEK_V3_ODD_VOCAB, provider(
        **{**vars(DEEPSEEK_V3), "vocab_size": 129281, "make_vocab_size_divisible_by": 1280},
    )),
    # deepseek_v2_bridge.py: divisor 3200 (102401 -> 105600), first_k_dense_replace dense layers
    "deepseek_v2 vocab 102401": (DEEPSEEK_V2_ODD_VOCAB, provider(
        hidden_size=2048, num_layers=27, num_attention_heads=16, ffn_hidden_size=10944, num_moe_experts=64,
        moe_layer_freq=[0] + [1] * 26, moe_router_topk=6, moe_ffn_hidden_size=1408, moe_shared_expert_intermediate_size=2 * 1408,
        multi_latent_attention=True, kv_lora_rank=512, qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128,
        vocab_size=102401, make_vocab_size_divisible_by=3200,
    )),
    # gemma3_bridge.py (Gemma3ForCausalLM): window on every layer, the base divisor (64 for 262208: no padding)
    "gemma3_text vocab 262208": (GEMMA_3_TEXT, provider(**{
        **vars(GEMMA_3_4B), "make_vocab_size_divisible_by": divisor(262208),
    })),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BY_BRIDGE))
def test_each_bridge_counts_as_it_configures_the_model(registry, name):
    config, cfg = BY_BRIDGE[name]
    blocks = ("mtp",) if config.get("num_nextn_predict_layers") else ()  # Bridge counts MTP depths: read them
    model = flopsreg.Model.from_hf_config(config, blocks=blocks)
    for s in (1000, 4096, 8192):
        assert registry.evaluate(model, seq_len=s, convention="megatron_bridge").training == bridge_training(cfg, s), s


def test_padded_vocabularies_by_bridge():
    """Hand arithmetic: the divisor each bridge sets, at TP 1."""
    for config, padded in ((DEEPSEEK_V3_ODD_VOCAB, 130560), (DEEPSEEK_V2_ODD_VOCAB, 105600)):
        cfg = BY_BRIDGE[f"{config['model_type']} vocab {config['vocab_size']}"][1]
        assert -(-cfg.vocab_size // cfg.make_vocab_size_divisible_by) * cfg.make_vocab_size_divisible_by == padded


def test_bridges_without_a_window_count_sliding_layers_as_full(registry):
    model = flopsreg.Model.from_hf_config(QWEN3_SLIDING)
    bridge = registry.evaluate(model, seq_len=8192, convention="megatron_bridge")
    assert {bridge.layers[i].patterns["attention.mask"] for i in range(30, 36)} == {"megatron_bridge_qwen3_no_window"}
    (mask,) = [d for d in registry.compare(model, seq_len=8192, conventions=["megatron_bridge"]).differences
               if d.slot == "attention.mask" and "sliding" in d.where]
    assert "sets no window_size" in mask.reason
