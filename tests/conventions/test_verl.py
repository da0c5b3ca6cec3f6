"""The verl convention against verl's published formula (verl/utils/flops_counter.py at
verl-project/verl 1dda039b), written out by hand here, and against the numbers verl's own test
suite expects (tests/utils/test_flops_counter.py at that commit).

verl's estimators: training FLOPs = 6 x (linear parameters N, embedding and lm_head as 2 V h) x
sum s_i + 6 x n_h d x (per layer: sum s_i^2, or sum s_i min(s_i, W) on gemma3_text / gpt_oss
sliding layers).
"""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.integrations.verl import FlopsCounter
from flopsreg.patterns.conventions.verl import ESTIMATORS
from flopsreg.patterns.conventions.verl import UNSUPPORTED as NO_ESTIMATOR

HF = Path(__file__).parents[1] / "data" / "hf"


def hf(name):
    return json.loads((HF / f"{name}.json").read_text())


def verl(registry, model, **lengths):
    return registry.evaluate(model, convention="verl", **lengths).training


# -- verl's own test suite: its configs and the numbers it expects -------------------------------

# Each config as verl's test gives it, plus what the transformers config class would add and
# flopsreg's readers refuse to guess (noted per entry); verl reads none of these.
VERL_SUITE = {
    "llama": ({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
               "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32},
              (149226491215872, 536372695793664)),
    "qwen2": ({"model_type": "qwen2", "vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
               "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4},
              (167073690943488, 591764889010176)),
    "qwen3": ({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 12288,
               "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128},
              (180997438046208, 648394032807936)),
    # + decoder_sparse_step 1 (Qwen3MoeConfig's default)
    "qwen3_moe": ({"model_type": "qwen3_moe", "hidden_size": 2048, "vocab_size": 151936, "num_hidden_layers": 48,
                   "num_key_value_heads": 4, "num_attention_heads": 32, "head_dim": 128, "moe_intermediate_size": 768,
                   "num_experts_per_tok": 8, "num_experts": 128, "decoder_sparse_step": 1},
                  (78593069678592, 306570470621184)),
    "deepseek_v3": ({"model_type": "deepseek_v3", "hidden_size": 7168, "vocab_size": 129280,
                     "moe_intermediate_size": 2048, "num_hidden_layers": 61, "first_k_dense_replace": 3,
                     "num_attention_heads": 128, "n_routed_experts": 256, "num_experts_per_tok": 8,
                     "n_shared_experts": 1, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128,
                     "intermediate_size": 18432, "qk_nope_head_dim": 128, "q_lora_rank": 1536},
                    (848766538088448, 3145850406567936)),
    # + sliding_window null (Mistral-Small-24B-Instruct-2501 has no window; verl ignores it either way)
    "mistral": ({"model_type": "mistral", "vocab_size": 131072, "hidden_size": 5120, "intermediate_size": 32768,
                 "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                 "sliding_window": None},
                (512303699066880, 1787393589903360)),
    "gemma3_text": ({"model_type": "gemma3_text", "vocab_size": 262208, "hidden_size": 3840,
                     "intermediate_size": 15360, "num_hidden_layers": 48, "num_attention_heads": 16,
                     "num_key_value_heads": 8, "head_dim": 256, "sliding_window": 1024, "layer_types": None,
                     "sliding_window_pattern": 6},
                    (279084659638272, 963929979224064)),
    "gpt_oss": ({"model_type": "gpt_oss", "vocab_size": 201088, "hidden_size": 2880, "num_hidden_layers": 24,
                 "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880,
                 "num_local_experts": 32, "num_experts_per_tok": 4, "sliding_window": 128,
                 "layer_types": ["sliding_attention", "full_attention"] * 12},
                (91780464771072, 323953008574464)),
}  # fmt: skip
VERL_BATCHES = ([512, 1024, 2048], [4096, 4096, 4096])


@pytest.mark.parametrize("model_type", sorted(VERL_SUITE))
def test_verl_suite_numbers_to_the_digit(registry, model_type):
    config, expected = VERL_SUITE[model_type]
    model = flopsreg.Model.from_hf_config(config)
    assert [verl(registry, model, seqlens=batch) for batch in VERL_BATCHES] == list(expected)


# -- hand arithmetic from the formula, on real configs --------------------------------------------


def test_llama_3_8b_dense(registry):
    """Dense GQA (the qwen2 estimator): embedding and lm_head both, causal s^2 x 6 n_h d per layer."""
    h, L, n_h, g, d, F, V = 4096, 32, 32, 8, 128, 14336, 128256
    s = 4096
    n = L * (3 * h * F + h * (n_h * d + 2 * g * d + n_h * d)) + 2 * V * h
    expected = 6 * n * s + 6 * s * s * d * n_h * L
    assert expected == 210_539_296_849_920  # anchors 10.1: +6 V h s over Megatron-LM's number
    model = flopsreg.Model.from_hf_config(hf("llama-3-8b"))
    assert verl(registry, model, seq_len=s) == expected
    assert verl(registry, flopsreg.Model.example("llama-3-8b"), seq_len=s) == expected


def test_qwen3_30b_a3b_moe_counts_the_router_and_top_k(registry):
    h, L, n_h, g, d, E, k, F_e, V = 2048, 48, 32, 4, 128, 128, 8, 768, 151936
    s = 32768
    per_layer = h * (n_h * d + 2 * g * d + n_h * d) + 3 * h * F_e * k + h * E
    expected = 6 * (L * per_layer + 2 * V * h) * s + 6 * s * s * d * n_h * L
    assert verl(registry, flopsreg.Model.from_hf_config(hf("qwen3-30b-a3b")), seq_len=s) == expected
    assert verl(registry, flopsreg.Model.example("qwen3-30b-a3b"), seq_len=s) == expected


def test_qwen2_moe_leaves_out_the_shared_expert_and_its_gate(registry):
    config = hf("qwen2-moe")
    h, L, n_h, g = config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"], config["num_key_value_heads"]
    d, E, k, F_e, V = h // n_h, config["num_experts"], config["num_experts_per_tok"], config["moe_intermediate_size"], config["vocab_size"]
    assert config["shared_expert_intermediate_size"] > 0  # present in the model, absent from verl's count
    s = 4096
    per_layer = h * (n_h * d + 2 * g * d + n_h * d) + 3 * h * F_e * k + h * E
    expected = 6 * (L * per_layer + 2 * V * h) * s + 6 * s * s * d * n_h * L
    assert verl(registry, flopsreg.Model.from_hf_config(config), seq_len=s) == expected


def test_gpt_oss_20b_sliding_layers_count_s_times_min_s_w(registry):
    """Brute force: verl's seqlen_square_sum adds s * min(s, W) for each sliding layer."""
    h, L, n_h, g, d, E, k, F_e, V, W = 2880, 24, 64, 8, 64, 32, 4, 2880, 201088, 128
    s = 32768
    square_sum = sum(s * min(s, W) if i % 2 == 0 else s * s for i in range(L))  # even layers slide
    n = L * (h * (n_h * d + 2 * g * d + n_h * d) + h * E + 3 * h * F_e * k) + 2 * V * h
    expected = 6 * n * s + 6 * square_sum * d * n_h
    assert verl(registry, flopsreg.Model.from_hf_config(hf("gpt-oss-20b")), seq_len=s) == expected
    assert verl(registry, flopsreg.Model.example("gpt-oss-20b"), seq_len=s) == expected
    # per sliding layer verl's s*min(s, W)/2 pairs against the pairs the window attends
    exact_pairs = sum(min(q + 1, W) for q in range(s))
    assert exact_pairs == s * W - W * (W - 1) // 2 and s * W // 2 < exact_pairs


def test_gemma3_text_counts_its_tied_embedding_twice_and_windows_as_s_w_over_2(registry):
    config = {**hf("gemma-3-4b")["text_config"], "model_type": "gemma3_text"}
    h, L, n_h, g, d, F, V, W = 2560, 34, 8, 4, 256, 10240, 262208, 1024
    s = 4096
    square_sum = sum(s * min(s, W) if (i + 1) % 6 else s * s for i in range(L))  # sliding_window_pattern 6
    n = L * (3 * h * F + h * (n_h * d + 2 * g * d + n_h * d)) + 2 * V * h  # 2 V h although tied
    expected = 6 * n * s + 6 * square_sum * d * n_h
    assert verl(registry, flopsreg.Model.from_hf_config(config), seq_len=s) == expected


def test_deepseek_v3_mla_moe_without_mtp(registry):
    h, L, k_dense, n_h, E, k, F_e, shared, F, V = 7168, 61, 3, 128, 256, 8, 2048, 1, 18432, 129280
    r_q, r_kv, d_n, d_r, d_v = 1536, 512, 128, 64, 128
    s = 4096
    attention = h * r_q + n_h * (d_n + d_r) * r_q + h * (r_kv + d_r) + n_h * (d_n + d_v) * r_kv + n_h * d_v * h
    n = (L - k_dense) * (attention + h * E + 3 * h * F_e * (k + shared)) + k_dense * (attention + 3 * h * F) + 2 * V * h
    expected = 6 * n * s + 3 * s * s * L * (d_n + d_r + d_v) * n_h
    assert expected == 1_048_616_802_189_312  # anchors 10.2
    assert verl(registry, flopsreg.Model.example("deepseek-v3"), seq_len=s) == expected
    with_mtp = flopsreg.Model.from_hf_config(hf("deepseek-v3"), blocks=("mtp",))
    assert verl(registry, with_mtp, seq_len=s) == expected  # num_nextn_predict_layers: not counted


def test_mistral_sliding_window_is_ignored(registry):
    h, L, n_h, g, d, F, V = 4096, 32, 32, 8, 128, 14336, 32000
    s = 32768  # eight windows of 4096
    expected = 6 * (L * (3 * h * F + h * (2 * n_h * d + 2 * g * d)) + 2 * V * h) * s + 6 * s * s * d * n_h * L
    model = flopsreg.Model.example("mistral-7b-v0.1")
    assert verl(registry, model, seq_len=s) == expected
    assert registry.evaluate(model, seq_len=s, convention="verl").layers[0].patterns["attention.mask"] == "verl_causal"


def test_packed_rows_use_each_sequence(registry):
    model = flopsreg.Model.example("llama-3-8b")
    assert verl(registry, model, seqlens=[100, 4000]) == verl(registry, model, seq_len=100) + verl(registry, model, seq_len=4000)


# -- what verl does not count: refused, naming verl's silent 0 ----------------------------------

UNSUPPORTED = {
    "mixtral-8x7b": "mixtral",
    "gemma-2-9b": "gemma2",
    "gemma-3-4b": "gemma3",
    "llama-4-scout": "llama4",
    "deepseek-v2-lite": "deepseek_v2",
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_model_types_verl_has_no_estimator_for_are_refused(registry, name):
    model = flopsreg.Model.from_hf_config(hf(name))
    with pytest.raises(flopsreg.ModelError) as error:
        registry.evaluate(model, seq_len=4096, convention="verl")
    message = str(error.value)
    assert f"verl has no FLOPs estimator for model_type '{UNSUPPORTED[name]}'" in message
    assert "returns 0" in message and "\n" not in message


def test_llama4_text_config_is_refused_too(registry):
    config = {**hf("llama-4-scout")["text_config"], "model_type": "llama4_text"}
    with pytest.raises(flopsreg.ModelError, match="model_type 'llama4_text': its FlopsCounter returns 0"):
        registry.evaluate(flopsreg.Model.from_hf_config(config), seq_len=16, convention="verl")


def test_a_model_without_a_family_flag_is_refused(registry):
    model = flopsreg.Model.uniform("plain", layers=2, flags={"mlp", "lm_head"}, hidden=64, heads=4, kv_heads=4, head_dim=16, ffn_hidden=128, vocab=100)
    assert registry.evaluate(model, seq_len=8).forward > 0
    with pytest.raises(flopsreg.ModelError, match=r"picks its formula by config.model_type, and none of this model's flags is the family flag of a model_type verl has an estimator for \(hf_llama"):
        registry.evaluate(model, seq_len=8, convention="verl")


# verl/utils/flops_counter.py at verl-project/verl 1dda039b, lines 417-451, verbatim.
def _estimate_qwen2_moe_flops(config, tokens_sum, batch_seqlens, delta_time):
    hidden_size = config.hidden_size
    vocab_size = config.vocab_size
    num_hidden_layers = config.num_hidden_layers
    num_key_value_heads = config.num_key_value_heads
    num_attention_heads = config.num_attention_heads
    moe_intermediate_size = config.moe_intermediate_size
    moe_topk = config.num_experts_per_tok
    num_experts = config.num_experts

    head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
    q_size = num_attention_heads * head_dim
    k_size = num_key_value_heads * head_dim
    v_size = num_key_value_heads * head_dim

    # non-attn per layer parm
    # gate + moe export
    moe_mlp_N = hidden_size * moe_topk * moe_intermediate_size * 3 + hidden_size * num_experts
    attn_linear_N = hidden_size * (q_size + k_size + v_size + num_attention_heads * head_dim)
    emd_and_lm_head_N = vocab_size * hidden_size * 2
    # non-attn all_layer parm
    dense_N = (moe_mlp_N + attn_linear_N) * num_hidden_layers + emd_and_lm_head_N
    # non-attn all_layer & all_token fwd & bwd flops
    dense_N_flops = 6 * dense_N * tokens_sum

    # attn all_layer & all_token fwd & bwd flops
    seqlen_square_sum = 0
    for seqlen in batch_seqlens:
        seqlen_square_sum += seqlen * seqlen
    attn_qkv_flops = 6 * seqlen_square_sum * head_dim * num_attention_heads * num_hidden_layers

    # all_layer & all_token fwd & bwd flops
    flops_all_token = dense_N_flops + attn_qkv_flops
    flops_achieved = flops_all_token * (1.0 / delta_time) / 1e12
    return flops_achieved


class _ExactFlops:
    """A delta_time that hands verl's integer FLOPs back through ``flops * (1.0 / delta_time) / 1e12``."""

    def __rtruediv__(self, one):
        return self

    def __rmul__(self, flops):
        self.flops = flops
        return self

    def __truediv__(self, tera):
        return self.flops


def verl_qwen_moe(config, seqlens):
    return _estimate_qwen2_moe_flops(SimpleNamespace(**config), sum(seqlens), seqlens, _ExactFlops())


QWEN_MOE_WITH_DENSE_LAYERS = {
    "qwen3_moe mlp_only_layers": {**hf("qwen3-30b-a3b"), "mlp_only_layers": [0, 5], "intermediate_size": 6144},
    "qwen3_moe decoder_sparse_step 2": {**hf("qwen3-30b-a3b"), "decoder_sparse_step": 2, "intermediate_size": 6144},
    "qwen2_moe mlp_only_layers": {**hf("qwen2-moe"), "mlp_only_layers": [1, 2, 3], "intermediate_size": 5632},
    "qwen2_moe decoder_sparse_step 3": {**hf("qwen2-moe"), "decoder_sparse_step": 3, "intermediate_size": 5632},
}


@pytest.mark.parametrize("name", sorted(QWEN_MOE_WITH_DENSE_LAYERS))
def test_dense_layers_of_a_qwen_moe_model_count_as_verl_counts_them(registry, name):
    """verl's estimator counts every layer as MoE; the convention gives its number and compare shows the gap."""
    config = QWEN_MOE_WITH_DENSE_LAYERS[name]
    model = flopsreg.Model.from_hf_config(config)
    for batch in VERL_BATCHES:
        assert verl(registry, model, seqlens=batch) == verl_qwen_moe(config, batch), batch
    assert verl(registry, model, seqlens=[4096]) != registry.evaluate(model, seqlens=[4096]).training
    (mlp,) = [d for d in registry.compare(model, seq_len=4096, conventions=["verl"]).differences if d.slot == "mlp"]
    assert "(kind 'dense'" in mlp.where and mlp.pattern.endswith("_dense_layer_as_moe")
    assert "ignores the dense layers" in mlp.reason


def test_the_drop_in_warns_once_that_verl_ignores_the_dense_layers():
    config = QWEN_MOE_WITH_DENSE_LAYERS["qwen3_moe mlp_only_layers"]
    with pytest.warns(UserWarning, match=r"^verl counts layers 0, 5 \(kind 'dense'\) as MoE: its estimator ignores the dense layers") as caught:
        counter = FlopsCounter(config, convention="verl")
    assert len(caught) == 1
    assert counter.training_flops([1000, 3000]) == verl_qwen_moe(config, [1000, 3000])


def test_cli_eval_and_sweep_refuse_in_one_line(capsys):
    assert main(["eval", "mixtral-8x7b", "--seq-len", "4096", "--convention", "verl"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "model_type 'mixtral'" in err and "returns 0" in err
    assert main(["eval", "llama-3-8b", "--seq-len", "4096", "--convention", "verl", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["training_flops"] == "210539296849920"


def test_compare_lists_verl_as_refused_and_traces_its_differences(registry):
    refused = registry.compare(flopsreg.Model.example("mixtral-8x7b"), seq_len=4096)
    (total,) = [t for t in refused.totals if t.convention == "verl"]
    assert total.result is None and "returns 0" in total.error
    comparison = registry.compare(flopsreg.Model.example("gpt-oss-20b"), seq_len=4096, conventions=["verl"])
    reasons = {(d.slot, d.pattern): d.reason for d in comparison.differences}
    assert reasons[("attention.mask", "verl_gpt_oss_sliding")].startswith("verl: sliding layers as s*W/2 pairs")
    assert reasons[("head", "verl_gpt_oss_head")].startswith("verl (_estimate_gpt_oss_flops): the input embedding and the logits")


def test_examples_and_their_configs_agree_under_verl(registry):
    """The family flag written in each example is the one its published config's reader sets."""
    for path in sorted((Path(__file__).parents[2] / "examples").glob("*.toml")):
        config = HF / f"{path.stem}.json"
        if not config.exists():
            continue
        outcomes = []
        for model in (flopsreg.Model.from_toml(path), flopsreg.Model.from_hf_config(config)):
            try:
                outcomes.append(registry.evaluate(model, seq_len=4096, convention="verl").training)
            except flopsreg.ModelError as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1], path.stem


def verl_qwen3_5(text: dict, seqlens: list[int]) -> int:
    """verl's _estimate_qwen3_5_flops (1dda039b), written out from its formula: training FLOPs."""
    h, vocab, layers = text["hidden_size"], text["vocab_size"], text["num_hidden_layers"]
    heads, kv, d = text["num_attention_heads"], text["num_key_value_heads"], text["head_dim"]
    if text.get("layer_types"):
        full = sum(t == "full_attention" for t in text["layer_types"])
    else:
        full = sum(not (i + 1) % text.get("full_attention_interval", 4) for i in range(layers))
    linear = layers - full
    q, k, v = heads * d, kv * d, kv * d
    lk = text["linear_num_key_heads"] * text["linear_key_head_dim"]
    lv = text["linear_num_value_heads"] * text["linear_value_head_dim"]
    attn_n = h * (2 * q + k + v + q) * full  # q_proj with its gate, k, v, o
    attn_n += (h * (2 * lk + 3 * lv + 2 * text["linear_num_value_heads"]) + text["linear_conv_kernel_dim"] * (2 * lk + lv)) * linear
    if "num_experts" in text:
        mlp_n = (h * text["num_experts"] + 3 * h * text["moe_intermediate_size"] * text["num_experts_per_tok"]
                 + 3 * h * text["shared_expert_intermediate_size"] + h) * layers
    else:
        mlp_n = 3 * h * text["intermediate_size"] * layers
    tokens = sum(seqlens)
    dense = 6 * (mlp_n + attn_n + 2 * vocab * h) * tokens
    attention = 6 * sum(n * n for n in seqlens) * d * heads * full
    recurrence = 15 * text["linear_key_head_dim"] * text["linear_value_head_dim"] * text["linear_num_value_heads"] * tokens * linear
    return dense + attention + recurrence


@pytest.mark.parametrize("name", ["qwen3.5-9b", "qwen3.5-35b-a3b"])
@pytest.mark.parametrize("s", [4096, 32768])
def test_qwen3_5_as_verl_counts_it(registry, name, s):
    """Dense and MoE Qwen3.5 (Gated DeltaNet in three layers of four): verl's estimator to the digit,
    from the config.json and from the bundled example."""
    config = json.loads((HF / f"{name}.json").read_text())
    expected = verl_qwen3_5(config["text_config"], [s])
    assert registry.evaluate(flopsreg.Model.from_hf_config(config), seq_len=s, convention="verl").training == expected
    assert registry.evaluate(flopsreg.Model.example(name), seq_len=s, convention="verl").training == expected


def test_text_only_qwen3_5_and_the_other_2026_types_get_verls_zero(registry):
    """verl keys its Qwen3.5 estimator by the multimodal configs' model_type: a qwen3_5_text config, like
    Qwen3-Next's or Kimi Linear's, falls to _estimate_unknown_flops."""
    text = json.loads((HF / "qwen3.5-9b.json").read_text())["text_config"]
    for model in (flopsreg.Model.from_hf_config(text), flopsreg.Model.example("qwen3-next-80b-a3b"), flopsreg.Model.example("kimi-linear-48b-a3b")):
        with pytest.raises(flopsreg.ModelError, match=r"verl has no FLOPs estimator for model_type '\w+': its FlopsCounter returns 0"):
            registry.evaluate(model, seq_len=4096, convention="verl")


# -- images: the vision tower of the Qwen-VL types (images_seqlens) ------------------------------------

# verl/utils/flops_counter.py at verl-project/verl 1dda039b, lines 127-168 and 219-268, verbatim.
def _estimate_qwen3_vl_flops(config, tokens_sum, batch_seqlens, delta_time, **kargs):
    # qwen3_vl uses text_config and vision_config to distinguish configs of different parts.
    hidden_size = config.text_config.hidden_size
    vocab_size = config.text_config.vocab_size
    num_hidden_layers = config.text_config.num_hidden_layers
    num_key_value_heads = config.text_config.num_key_value_heads
    num_attention_heads = config.text_config.num_attention_heads
    intermediate_size = config.text_config.intermediate_size

    head_dim = hidden_size // num_attention_heads
    q_size = num_attention_heads * head_dim
    k_size = num_key_value_heads * head_dim
    v_size = num_key_value_heads * head_dim

    # non-attn per layer parm
    mlp_N = hidden_size * intermediate_size * 3
    attn_linear_N = hidden_size * (q_size + k_size + v_size + num_attention_heads * head_dim)
    emd_and_lm_head_N = vocab_size * hidden_size * 2
    # non-attn all_layer parm
    dense_N = (mlp_N + attn_linear_N) * num_hidden_layers + emd_and_lm_head_N
    # non-attn all_layer & all_token fwd & bwd flops
    dense_N_flops = 6 * dense_N * tokens_sum

    # qwen3_vl uses deepstack to merge visual embeds and text embeds, but it has no tensor operation.

    # attn all_layer & all_token fwd & bwd flops
    seqlen_square_sum = 0
    for seqlen in batch_seqlens:
        seqlen_square_sum += seqlen * seqlen
    attn_qkv_flops = 6 * seqlen_square_sum * head_dim * num_attention_heads * num_hidden_layers

    # vit flops
    images_seqlens = kargs.get("images_seqlens", None)
    if images_seqlens is not None:
        vit_flops = _estimate_qwen3_vit_flop(images_seqlens, config.vision_config)
    else:
        vit_flops = 0

    # all_layer & all_token fwd & bwd flops
    flops_all_token = dense_N_flops + attn_qkv_flops + vit_flops
    flops_achieved = flops_all_token * (1.0 / delta_time) / 1e12
    return flops_achieved


def _estimate_qwen3_vit_flop(images_seqlens, config):
    """
    Estimate the FLOPS of the vision encoder for Qwen3-VL
    """

    if config is None:
        return 0
    tokens_sum = sum(images_seqlens)

    num_heads = config.num_heads
    depth = config.depth

    dim = config.hidden_size
    mlp_hidden_dim = config.intermediate_size
    out_hidden_size = config.out_hidden_size

    spatial_merge_size = config.spatial_merge_size

    head_dim = dim // num_heads

    # every vision token's patch_embed comes from a conv of (C, T, H, W) -> (dim,)
    patch_embed_N = dim * config.in_channels * config.temporal_patch_size * config.patch_size * config.patch_size
    # Qwen3 VL vision mlp does not use GLU, thus 2.
    mlp_N = dim * mlp_hidden_dim * 2
    attn_linear_N = dim * (4 * dim)  # qkv and output proj
    merger_N = (out_hidden_size + (dim * (spatial_merge_size**2))) * (dim * (spatial_merge_size**2))

    # Qwen3 VL uses deep stack, one merger for every deepstack layer
    if getattr(config, "deepstack_visual_indexes", None) is not None:
        deepstack_merger_N = merger_N * len(config.deepstack_visual_indexes)
    else:
        deepstack_merger_N = 0
    # non-attn all_layer parm
    dense_N = patch_embed_N + (mlp_N + attn_linear_N) * depth + deepstack_merger_N + merger_N

    # non-attn all_layer & all_token fwd & bwd flops
    dense_N_flops = 6 * dense_N * tokens_sum

    # In Qwen3 VL, full attention is used in all vision layers.
    full_attn_layer_num = depth

    # full attn layer & all_token fwd & bwd flops
    seqlen_square_sum = 0
    for seqlen in images_seqlens:
        seqlen_square_sum += seqlen * seqlen
    attn_qkv_flops = 12 * seqlen_square_sum * head_dim * num_heads * full_attn_layer_num

    vit_flops = dense_N_flops + attn_qkv_flops

    return vit_flops


TOWERS5 = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_towers5.json").read_text())["models"]


def verl_qwen_vl(config, seqlens, images_seqlens):
    """verl's training FLOPs of a Qwen-VL batch: the language model over *seqlens* (text and image
    tokens), the ViT over *images_seqlens* (patches of each image of the batch). The vision config
    gets the class default verl reads and the tiny config leaves out (in_channels 3)."""
    config = {**config, "vision_config": {"in_channels": 3, **config["vision_config"]}}
    namespace = SimpleNamespace(**{k: SimpleNamespace(**v) if isinstance(v, dict) else v for k, v in config.items()})
    return _estimate_qwen3_vl_flops(namespace, sum(seqlens), seqlens, _ExactFlops(), images_seqlens=images_seqlens)


@pytest.mark.parametrize("name", ["qwen2_5_vl", "qwen3_vl"])
@pytest.mark.parametrize("images", [[(300, 500)], [(64, 100), (450, 260)]])
@pytest.mark.parametrize("seqlens", [[9], [9, 40]])
def test_qwen_vl_with_images_as_verl_counts_it(registry, name, images, seqlens):
    """Language model and ViT to the digit: verl's head_dim = hidden // heads (11 here, the config
    says 12), Qwen2.5-VL counted with Qwen3-VL's ViT (2 MLP matrices, no windows), the merger on
    every patch."""
    config = TOWERS5[name]["config"]
    model = flopsreg.Model.from_hf_config(config)
    result = registry.evaluate(model, seqlens=seqlens, images=images, convention="verl")
    patches = [rows * columns for _, rows, columns in (plan.grid for plan in result.images.plans)]
    assert result.training == verl_qwen_vl(config, list(result.seqlens), patches * len(seqlens))
    assert result.training != registry.evaluate(model, seqlens=seqlens, images=images).training


def test_qwen_vl_without_images_is_verls_language_model_alone(registry):
    config = TOWERS5["qwen3_vl"]["config"]
    assert verl(registry, flopsreg.Model.from_hf_config(config), seqlens=[512, 1024]) == verl_qwen_vl(config, [512, 1024], None)


def test_the_text_configs_of_qwen_vl_get_verls_zero(registry):
    """verl keys _estimate_qwen3_vl_flops by the wrappers' model_type."""
    model = flopsreg.Model.from_hf_config(TOWERS5["qwen3_vl"]["config"]["text_config"])
    with pytest.raises(flopsreg.ModelError, match=r"verl has no FLOPs estimator for model_type 'qwen3_vl_text'"):
        registry.evaluate(model, seq_len=64, convention="verl")


def test_qwen2_vl_images_are_refused_under_verl_and_its_text_is_counted(registry):
    """_estimate_qwen3_vit_flop reads vision_config.intermediate_size: Qwen2VLVisionConfig has none."""
    config = TOWERS5["qwen2_vl"]["config"]
    model = flopsreg.Model.from_hf_config(config)
    assert verl(registry, model, seqlens=[512]) == verl_qwen_vl(config, [512], None)
    with pytest.raises(flopsreg.FlopsregError, match=r"^images: convention 'verl' has no term for the vision tower \(Qwen2-VL ViT\)"):
        registry.evaluate(model, seq_len=9, images=[(300, 500)], convention="verl")


# -- Qwen3-VL-MoE: _estimate_qwen3_vl_moe_flops and the same ViT term --------------------------------

# verl/utils/flops_counter.py at verl-project/verl 1dda039b, lines 171-216, verbatim.
def _estimate_qwen3_vl_moe_flops(config, tokens_sum, batch_seqlens, delta_time, **kargs):
    # qwen3_vl uses text_config and vision_config to distinguish configs of different parts.
    hidden_size = config.text_config.hidden_size
    vocab_size = config.text_config.vocab_size
    num_hidden_layers = config.text_config.num_hidden_layers
    num_key_value_heads = config.text_config.num_key_value_heads
    num_attention_heads = config.text_config.num_attention_heads
    moe_intermediate_size = config.text_config.moe_intermediate_size
    moe_num_expert = config.text_config.num_experts
    moe_topk = config.text_config.num_experts_per_tok

    head_dim = getattr(
        config.text_config, "head_dim", config.text_config.hidden_size // config.text_config.num_attention_heads
    )
    q_size = num_attention_heads * head_dim
    k_size = num_key_value_heads * head_dim
    v_size = num_key_value_heads * head_dim

    # non-attn per layer parm
    moe_gata_N = hidden_size * moe_num_expert
    # moe has gate_proj, up_proj and down_proj using SwiGLU in ExpertMlp layer & shared experts
    moe_expertmlp_N = hidden_size * moe_intermediate_size * (moe_topk) * 3
    attn_linear_N = hidden_size * (q_size + k_size + v_size + num_attention_heads * head_dim)
    emd_and_lm_head_N = vocab_size * hidden_size * 2
    # non-attn all_layer parm
    moe_N = (moe_gata_N + moe_expertmlp_N + attn_linear_N) * (num_hidden_layers) + emd_and_lm_head_N
    # non-attn all_layer & all_token fwd & bwd flops
    dense_N_flops = 6 * moe_N * tokens_sum

    # attn all_layer & all_token fwd & bwd flops
    seqlen_square_sum = 0
    for seqlen in batch_seqlens:
        seqlen_square_sum += seqlen * seqlen
    attn_qkv_flops = 6 * seqlen_square_sum * head_dim * num_attention_heads * num_hidden_layers

    # vit flops
    images_seqlens = kargs.get("images_seqlens", None)
    if images_seqlens is not None:
        vit_flops = _estimate_qwen3_vit_flop(images_seqlens, config.vision_config)
    else:
        vit_flops = 0

    # all_layer & all_token fwd & bwd flops
    flops_all_token = dense_N_flops + attn_qkv_flops + vit_flops
    flops_achieved = flops_all_token * (1.0 / delta_time) / 1e12
    return flops_achieved


QWENVID = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_qwenvid.json").read_text())
# The tiny recorded model (head_dim 12 where hidden // heads is 11, layer 0 dense by mlp_only_layers), the
# class defaults, the published Qwen3-VL-30B-A3B, and the tiny one with every layer MoE.
QWEN3_VL_MOE = {
    "tiny": QWENVID["models"]["qwen3_vl_moe"]["config"],
    "defaults": hf("qwen3-vl-moe-defaults"),
    "30b-a3b": QWENVID["published"]["qwen3-vl-30b-a3b"]["config"],
}
QWEN3_VL_MOE["tiny all MoE"] = {**QWEN3_VL_MOE["tiny"], "text_config": {**QWEN3_VL_MOE["tiny"]["text_config"], "mlp_only_layers": []}}


def verl_qwen3_vl_moe(config, seqlens, images_seqlens):
    """verl's training FLOPs of a Qwen3-VL-MoE batch, as :func:`verl_qwen_vl`. The text config reads
    num_experts through Qwen3VLMoeTextConfig's attribute_map (num_local_experts) and head_dim as its
    __post_init__ sets it (head_dim or hidden // heads); the vision config gets in_channels 3."""
    text = dict(config["text_config"])
    text.setdefault("num_experts", text.get("num_local_experts"))
    text["head_dim"] = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    vision = {"in_channels": 3, **config["vision_config"]}
    namespace = SimpleNamespace(text_config=SimpleNamespace(**text), vision_config=SimpleNamespace(**vision))
    return _estimate_qwen3_vl_moe_flops(namespace, sum(seqlens), seqlens, _ExactFlops(), images_seqlens=images_seqlens)


@pytest.mark.parametrize("name", sorted(QWEN3_VL_MOE))
@pytest.mark.parametrize("images", [None, [(300, 500)], [(64, 100), (450, 260), (1280, 720)]])
@pytest.mark.parametrize("seqlens", [[9], [9, 4000]])
def test_qwen3_vl_moe_as_verl_counts_it(registry, name, images, seqlens):
    """Language model and ViT to the digit: the config's head_dim (unlike qwen3_vl's estimator), every layer
    MoE (router h x E and top-k experts, mlp_only_layers ignored), 2 V h, the deepstack mergers on every patch."""
    config = QWEN3_VL_MOE[name]
    model = flopsreg.Model.from_hf_config(config)
    result = registry.evaluate(model, seqlens=seqlens, images=images, convention="verl")
    patches = [t * rows * columns for t, rows, columns in (plan.grid for plan in result.images.plans)] if images else None
    assert result.training == verl_qwen3_vl_moe(config, list(result.seqlens), patches * len(seqlens) if images else None)
    if name == "tiny":  # head_dim 12 and a dense layer 0: both differ from what verl counts
        assert result.training != registry.evaluate(model, seqlens=seqlens, images=images).training


def test_qwen3_vl_moe_dense_layers_show_in_compare(registry):
    model = flopsreg.Model.from_hf_config(QWEN3_VL_MOE["tiny"])
    (mlp,) = [d for d in registry.compare(model, seq_len=64, conventions=["verl"]).differences if d.slot == "mlp"]
    assert mlp.pattern == "verl_qwen3_vl_moe_dense_layer_as_moe"
    assert mlp.reason.startswith("verl (_estimate_qwen3_vl_moe_flops) ignores the dense layers")


def test_qwen3_vl_moe_text_config_gets_verls_zero(registry):
    model = flopsreg.Model.from_hf_config(QWEN3_VL_MOE["defaults"]["text_config"])
    with pytest.raises(flopsreg.ModelError, match=r"verl has no FLOPs estimator for model_type 'qwen3_vl_moe_text': its FlopsCounter returns 0"):
        registry.evaluate(model, seq_len=64, convention="verl")


# -- what verl does where it has no vision term ------------------------------------------------------


@pytest.mark.parametrize("config", [QWEN3_VL_MOE["tiny"], TOWERS5["qwen3_vl"]["config"], TOWERS5["qwen2_5_vl"]["config"],
                                    TOWERS5["qwen3_5"]["config"], TOWERS5["qwen2_vl"]["config"]],
                         ids=lambda config: config["model_type"])
def test_videos_are_refused_saying_verl_counts_only_their_tokens(registry, config):
    """images_seqlens come from image_grid_thw alone (verl's agent loop and trainer): no video term."""
    model = flopsreg.Model.from_hf_config(config)
    with pytest.raises(flopsreg.FlopsregError) as error:
        registry.evaluate(model, seq_len=9, videos=[(4, 300, 500)], convention="verl")
    assert str(error.value).startswith("videos: convention 'verl' has no term for the vision tower (")
    assert ("verl builds images_seqlens from image_grid_thw alone, so it counts no video through the tower, only the video "
            "tokens through the language model (give them in seq_len for verl's number); count videos with the exact convention") in str(error.value)
    # what verl counts for the request: the language model over text and video tokens
    tokens = registry.evaluate(model, seq_len=9, videos=[(4, 300, 500)]).seqlens
    assert registry.evaluate(model, seqlens=tokens, convention="verl").training > 0


def test_qwen2_vl_images_refusal_says_verl_raises(registry):
    model = flopsreg.Model.from_hf_config(TOWERS5["qwen2_vl"]["config"])
    with pytest.raises(flopsreg.FlopsregError, match=r"reads vision_config.intermediate_size, which Qwen2VLVisionConfig has not: "
                       r"verl's FlopsCounter raises AttributeError when given images_seqlens for qwen2_vl; count images with the exact convention$"):
        registry.evaluate(model, seq_len=9, images=[(300, 500)], convention="verl")


# -- the other types flopsreg reads that verl has an estimator for: seed_oss, apertus, hy_v3 ------------

# verl/utils/flops_counter.py at verl-project/verl 1dda039b, lines 92-124, 522-559, 637-675 and the
# keys of ESTIMATE_FUNC (lines 678-701), verbatim.
def _estimate_qwen2_flops(config, tokens_sum, batch_seqlens, delta_time):
    hidden_size = config.hidden_size
    vocab_size = config.vocab_size
    num_hidden_layers = config.num_hidden_layers
    num_key_value_heads = config.num_key_value_heads
    num_attention_heads = config.num_attention_heads
    intermediate_size = config.intermediate_size

    head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
    q_size = num_attention_heads * head_dim
    k_size = num_key_value_heads * head_dim
    v_size = num_key_value_heads * head_dim

    # non-attn per layer parm
    # Qwen2/LLama use SwiGelu, gate, having up and down linear layer in mlp
    mlp_N = hidden_size * intermediate_size * 3
    attn_linear_N = hidden_size * (q_size + k_size + v_size + num_attention_heads * head_dim)
    emd_and_lm_head_N = vocab_size * hidden_size * 2
    # non-attn all_layer parm
    dense_N = (mlp_N + attn_linear_N) * num_hidden_layers + emd_and_lm_head_N
    # non-attn all_layer & all_token fwd & bwd flops
    dense_N_flops = 6 * dense_N * tokens_sum

    # attn all_layer & all_token fwd & bwd flops
    seqlen_square_sum = 0
    for seqlen in batch_seqlens:
        seqlen_square_sum += seqlen * seqlen
    attn_qkv_flops = 6 * seqlen_square_sum * head_dim * num_attention_heads * num_hidden_layers

    # all_layer & all_token fwd & bwd flops
    flops_all_token = dense_N_flops + attn_qkv_flops
    flops_achieved = flops_all_token * (1.0 / delta_time) / 1e12
    return flops_achieved


def _estimate_apertus_flops(config, tokens_sum, batch_seqlens, delta_time):
    hidden_size = config.hidden_size
    vocab_size = config.vocab_size
    num_hidden_layers = config.num_hidden_layers
    num_key_value_heads = config.num_key_value_heads
    num_attention_heads = config.num_attention_heads
    intermediate_size = config.intermediate_size

    head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
    q_size = num_attention_heads * head_dim
    k_size = num_key_value_heads * head_dim
    v_size = num_key_value_heads * head_dim

    # Apertus MLP with XIELU activation uses only 2 linear layers (up_proj, down_proj)
    # No gate_proj for XIELU, unlike SwiGLU which has 3 layers
    mlp_N = hidden_size * intermediate_size * 2
    attn_linear_N = hidden_size * (q_size + k_size + v_size + num_attention_heads * head_dim)

    # ApertusConfig has qk_norm defaulting to True.
    # This adds params for q_norm (on H) and k_norm (on num_kv_heads * head_dim)
    qk_norm_params_per_layer = hidden_size + num_key_value_heads * head_dim  # q_norm + k_norm

    emd_and_lm_head_N = vocab_size * hidden_size * 2
    # non-attn all_layer params
    dense_N = (mlp_N + attn_linear_N + qk_norm_params_per_layer) * num_hidden_layers + emd_and_lm_head_N
    # non-attn all_layer & all_token fwd & bwd flops
    dense_N_flops = 6 * dense_N * tokens_sum

    # attn all_layer & all_token fwd & bwd flops
    seqlen_square_sum = 0
    for seqlen in batch_seqlens:
        seqlen_square_sum += seqlen * seqlen
    attn_qkv_flops = 6 * seqlen_square_sum * head_dim * num_attention_heads * num_hidden_layers

    # all_layer & all_token fwd & bwd flops
    flops_all_token = dense_N_flops + attn_qkv_flops
    flops_achieved = flops_all_token * (1.0 / delta_time) / 1e12
    return flops_achieved


def _estimate_hy_v3_flops(config, tokens_sum, batch_seqlens, delta_time):
    hidden_size = config.hidden_size
    vocab_size = config.vocab_size
    # Hy V3 uses expert_hidden_dim as the legacy alias for moe_intermediate_size.
    # Prefer the standard name and fall back.
    moe_intermediate_size = getattr(config, "moe_intermediate_size", None)
    if moe_intermediate_size is None:
        moe_intermediate_size = config.expert_hidden_dim
    num_hidden_layers = config.num_hidden_layers
    num_experts = config.num_experts
    moe_topk = config.num_experts_per_tok
    share_expert_num = config.num_shared_experts

    num_attention_heads = config.num_attention_heads
    num_key_value_heads = config.num_key_value_heads
    head_dim = config.head_dim
    q_size = num_attention_heads * head_dim
    k_size = num_key_value_heads * head_dim
    v_size = num_key_value_heads * head_dim

    # non-attn per layer parm: router gate + moe experts (topk routed + shared)
    moe_gata_N = hidden_size * num_experts
    moe_expertmlp_N = hidden_size * moe_intermediate_size * (moe_topk + share_expert_num) * 3
    moe_mlp_N = moe_gata_N + moe_expertmlp_N

    attn_linear_N = hidden_size * (q_size + k_size + v_size + num_attention_heads * head_dim)
    emd_and_lm_head_N = vocab_size * hidden_size * 2

    dense_N = (moe_mlp_N + attn_linear_N) * num_hidden_layers + emd_and_lm_head_N
    dense_N_flops = 6 * dense_N * tokens_sum

    seqlen_square_sum = 0
    for seqlen in batch_seqlens:
        seqlen_square_sum += seqlen * seqlen
    attn_qkv_flops = 6 * seqlen_square_sum * head_dim * num_attention_heads * num_hidden_layers

    flops_all_token = dense_N_flops + attn_qkv_flops
    flops_achieved = flops_all_token * (1.0 / delta_time) / 1e12
    return flops_achieved


ESTIMATE_FUNC = {
    "qwen2": _estimate_qwen2_flops,
    "llama": _estimate_qwen2_flops,
    "qwen2_moe": _estimate_qwen2_moe_flops,
    "qwen2_vl": _estimate_qwen3_vl_flops,
    "qwen2_5_vl": _estimate_qwen3_vl_flops,
    "qwen3": _estimate_qwen2_flops,
    "qwen3_moe": _estimate_qwen2_moe_flops,
    "qwen3_vl": _estimate_qwen3_vl_flops,
    "qwen3_vl_moe": _estimate_qwen3_vl_moe_flops,
    "qwen3_5": "_estimate_qwen3_5_flops",  # names where the function is not copied here
    "qwen3_5_moe": "_estimate_qwen3_5_flops",
    "deepseek_v3": "_estimate_deepseek_v3_flops",
    "minicpmv": _estimate_qwen2_flops,
    "minicpmo": _estimate_qwen2_flops,
    "mistral": _estimate_qwen2_flops,
    "gemma3_text": "_estimate_gemma3_flops",
    "seed_oss": _estimate_qwen2_flops,
    "apertus": _estimate_apertus_flops,
    "glm4v": _estimate_qwen2_flops,
    "gpt_oss": "_estimate_gpt_oss_flops",
    "mimo": _estimate_qwen2_flops,
    "hy_v3": _estimate_hy_v3_flops,
}


def test_every_type_verl_has_an_estimator_for_and_flopsreg_reads_is_reproduced(registry):
    """The convention maps each model_type of verl's table that flopsreg reads to verl's estimator; every
    other type it reads gets a refusal saying verl counts 0 (a type missing here was refused as 0 wrongly)."""
    read = set(registry.hf_readers)
    names = {t: f if isinstance(f, str) else f.__name__ for t, f in ESTIMATE_FUNC.items()}
    assert {t: names[t] for t in names if t in read} == ESTIMATORS
    assert not set(NO_ESTIMATOR) & set(ESTIMATE_FUNC) and set(NO_ESTIMATOR) <= read


def verl_text(estimator, config, seqlens):
    return estimator(SimpleNamespace(**config), sum(seqlens), seqlens, _ExactFlops())


SEED_OSS = hf("seed-oss-defaults")
APERTUS = hf("apertus-defaults")
HY_V3 = {**hf("hy-v3-defaults"), "mlp_layer_types": ["sparse"] * hf("hy-v3-defaults")["num_hidden_layers"]}
OTHER_TYPES = {
    "seed_oss": (_estimate_qwen2_flops, SEED_OSS),
    "seed_oss head_dim 96 no biases": (_estimate_qwen2_flops, {**SEED_OSS, "head_dim": 96, "attention_bias": False}),
    "apertus": (_estimate_apertus_flops, APERTUS),
    "apertus gqa": (_estimate_apertus_flops, {**APERTUS, "num_key_value_heads": 8, "intermediate_size": 8192}),
    "hy_v3 every layer MoE": (_estimate_hy_v3_flops, HY_V3),
    "hy_v3 two shared experts": (_estimate_hy_v3_flops, {**HY_V3, "num_shared_experts": 2, "num_experts_per_tok": 4}),
}


@pytest.mark.parametrize("name", sorted(OTHER_TYPES))
def test_seed_oss_apertus_and_hy_v3_as_verl_counts_them(registry, name):
    estimator, config = OTHER_TYPES[name]
    model = flopsreg.Model.from_hf_config(config)
    for batch in VERL_BATCHES:
        assert verl(registry, model, seqlens=batch) == verl_text(estimator, config, batch), batch


def test_apertus_qk_norms_and_two_matrix_mlp_show_in_compare(registry):
    """verl counts Apertus's q_norm and k_norm as h + n_kv d weights per token and its xIELU MLP as 2 matmuls."""
    differences = registry.compare(flopsreg.Model.from_hf_config(APERTUS), seq_len=4096, conventions=["verl"]).differences
    patterns = {d.pattern for d in differences}
    assert "verl_apertus_qk_norm" in patterns and "verl_apertus_ffn" not in patterns  # 2 matrices: as exact


def test_hy_v3_dense_layer_is_refused_saying_what_verl_counts(registry):
    model = flopsreg.Model.from_hf_config(hf("hy-v3-defaults"))  # layer 0 dense by mlp_layer_types
    with pytest.raises(flopsreg.ModelError, match=r"^layer 0 \(kind 'dense'\).*verl's _estimate_hy_v3_flops reads no mlp_layer_types "
                       r"and counts every layer as MoE \(router h x E, top-k and shared experts\), this dense one too"):
        registry.evaluate(model, seq_len=4096, convention="verl")


@pytest.mark.parametrize("images", [[(300, 500)], [(64, 100), (450, 260)]])
@pytest.mark.parametrize("seqlens", [[9], [9, 40]])
def test_qwen3_5_with_images_as_verl_counts_it(registry, images, seqlens):
    """_estimate_qwen3_5_flops adds the same ViT term (Qwen3.5's ViT has no deepstack mergers)."""
    config = TOWERS5["qwen3_5"]["config"]
    result = registry.evaluate(flopsreg.Model.from_hf_config(config), seqlens=seqlens, images=images, convention="verl")
    patches = [t * rows * columns for t, rows, columns in (plan.grid for plan in result.images.plans)] * len(seqlens)
    vision = SimpleNamespace(**{"in_channels": 3, **config["vision_config"]})
    assert not hasattr(vision, "deepstack_visual_indexes")
    text = {"linear_conv_kernel_dim": 4, **config["text_config"]}  # Qwen3_5TextConfig's default, which the tiny config leaves out
    assert result.training == verl_qwen3_5(text, list(result.seqlens)) + _estimate_qwen3_vit_flop(patches, vision)


# -- the drop-in takes verl's images_seqlens ---------------------------------------------------------


@pytest.mark.parametrize("name", ["qwen3_vl", "qwen3_5"])
def test_the_drop_in_counts_images_seqlens_as_verl_and_exactly(registry, name):
    """verl's trainer passes images_seqlens (h x w of each image_grid_thw) beside batch_seqlens, which hold
    the image tokens already; an empty list (a step without images) adds nothing."""
    config = TOWERS5[name]["config"]
    model = flopsreg.Model.from_hf_config(config)
    images = [(300, 500), (64, 100)]
    as_verl = registry.evaluate(model, seqlens=[9, 40], images=images, convention="verl")
    patches = [t * rows * columns for t, rows, columns in (plan.grid for plan in as_verl.images.plans)] * 2
    counter = FlopsCounter(config, convention="verl")
    batch = list(as_verl.seqlens)
    assert counter.training_flops(batch) + counter.tower_flops(patches) == as_verl.training
    if name == "qwen3_vl":
        assert as_verl.training == verl_qwen_vl(config, batch, patches)
    assert counter.estimate_flops(batch, 1.0, images_seqlens=patches)[0] == as_verl.training / 10**12
    assert counter.estimate_flops(batch, 1.0, images_seqlens=[]) == counter.estimate_flops(batch, 1.0)
    exact = FlopsCounter(config)  # by patch counts: Qwen3-VL's and Qwen3.5's towers depend on them alone
    assert exact.tower_flops(patches) == 3 * 2 * registry.images(model, images=images).forward


def test_the_drop_in_refuses_images_seqlens_it_cannot_count(registry):
    qwen2_vl = FlopsCounter(TOWERS5["qwen2_vl"]["config"], convention="verl")
    with pytest.raises(flopsreg.FlopsregError, match=r"verl's FlopsCounter raises AttributeError when given images_seqlens for qwen2_vl"):
        qwen2_vl.estimate_flops([64], 1.0, images_seqlens=[64])
    qwen3_vl = FlopsCounter(TOWERS5["qwen3_vl"]["config"], convention="verl")
    with pytest.raises(flopsreg.ModelError, match=r"^images_seqlens\[1\] = 6: expected the patches of one image, a multiple of 4 "):
        qwen3_vl.estimate_flops([64], 1.0, images_seqlens=[64, 6])
