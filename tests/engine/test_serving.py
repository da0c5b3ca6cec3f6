"""Serving (issue 11): a cached prefix, last-position logits, generation, MFU and HFU.

Expected numbers come from brute-force masks with a prefix (tests/oracles.py), from literal
loops over decode steps, or from hand arithmetic written here; the identity
forward(N, cached=P) == forward(P + N) - forward(P) is checked on every bundled model.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import attrs
import oracles
import pytest
import sympy
from test_linear_mixers import IDENTITY_MODELS, REFERENCE_FLAGS
from test_megatron_and_slime import deepseek_v3_args, gemma3_4b_args, llama3_8b_args
from test_minimax import IDENTITY_MODELS as MINIMAX_MODELS
from test_mixers_2026 import IDENTITY_MODELS as MEGATRON_2026_MODELS

import flopsreg
from flopsreg.cli import main
from flopsreg.declarations.symbols import s
from flopsreg.engine.peaks import PEAKS
from flopsreg.formula.cached_prefix import _is_proportional, difference
from flopsreg.formula.exact import compile_exact
from flopsreg.model.examples_index import example_names
from flopsreg.patterns.chunked import CHUNKED
from flopsreg.patterns.conventions._rules import MIXER_FLAGS
from flopsreg.patterns.conventions.hf_trainer import COMPOSITE as HF_TRAINER_COMPOSITE
from flopsreg.patterns.conventions.megatron_bridge import NO_BRIDGE
from flopsreg.patterns.conventions.mixer_refusals import FLAGS as REFUSED_2026
from flopsreg.patterns.conventions.torchtitan import MODELS as TORCHTITAN_MODELS
from flopsreg.patterns.conventions.verl import ESTIMATORS
from flopsreg.patterns.full_causal import FULL_CAUSAL
from flopsreg.patterns.sliding_window import SLIDING_WINDOW
from flopsreg.plugins.testing import check_prefix_form, count_prefix_pairs

MAX_NEW = MAX_CACHED = 64
SIZE = MAX_NEW + MAX_CACHED
HF = Path(__file__).parents[1] / "data" / "hf"


# -- every built-in mask's prefix form against a brute-force mask with a prefix ---------------


def _assert_prefix_form(pattern, table, params):
    formula = compile_exact(difference(pattern.formula))
    for cached in range(MAX_CACHED + 1):
        for new in range(1, MAX_NEW + 1):
            got = formula({**params, "seq_len": new, "cached": cached})
            assert got == table[cached][cached + new], (pattern.name, params, cached, new)


def test_full_causal_prefix_form_is_the_mask_with_a_prefix():
    _assert_prefix_form(FULL_CAUSAL, oracles.prefix_pair_table(oracles.causal_mask(SIZE)), {})


@pytest.mark.parametrize("window", range(1, 68))
def test_sliding_window_prefix_form_is_the_mask_with_a_prefix(window):
    table = oracles.prefix_pair_table(oracles.sliding_window_mask(SIZE, window))
    _assert_prefix_form(SLIDING_WINDOW, table, {"window": window})


@pytest.mark.parametrize("chunk", range(1, 68))
def test_chunked_prefix_form_is_the_mask_with_a_prefix(chunk):
    table = oracles.prefix_pair_table(oracles.chunked_mask(SIZE, chunk))
    _assert_prefix_form(CHUNKED, table, {"chunk": chunk})


def test_the_prefix_table_is_a_plain_count_of_the_mask():
    mask = oracles.sliding_window_mask(12, 3)
    table = oracles.prefix_pair_table(mask)
    for cached in range(6):
        for new in range(1, 7):
            expected = sum(mask[q][k] for q in range(cached, cached + new) for k in range(cached + new))
            assert table[cached][cached + new] == expected


# -- flopsreg.plugins.testing: the plugin author's check ----------------------------------------------


def test_check_prefix_form_accepts_the_built_in_masks():
    check_prefix_form(CHUNKED, lambda q, k, p: k <= q and k // p["chunk"] == q // p["chunk"],
                      params=[{"chunk": c} for c in range(1, 9)], max_len=12, max_cached=12)


def test_check_prefix_form_names_the_first_difference():
    with pytest.raises(AssertionError, match=r"sliding_window: 5 pairs for seq_len=3 new tokens after cached=0, \{.window.: 2\}; the mask has 6"):
        check_prefix_form(SLIDING_WINDOW, lambda q, k, p: k <= q, params=[{"window": 2}], max_len=4, max_cached=4)


def test_count_prefix_pairs_counts_the_new_queries_against_every_key():
    # 3 new queries at positions 2, 3, 4 of a causal mask see 3 + 4 + 5 keys
    assert count_prefix_pairs(lambda q, k, p: k <= q, 3, 2, {}) == 12


# -- the identity, on every bundled model and every pattern -----------------------------------


def _verl(model):
    """("verl",) where verl has an estimator for the model's family, else nothing (it refuses)."""
    return ("verl",) if any(f"hf_{t}" in model.flags for t in ESTIMATORS) else ()


def _bridge(model):
    """("megatron_bridge",) unless no Megatron-Bridge bridge imports the model's family (it refuses)."""
    return () if any(f"hf_{t}" in model.flags for t in NO_BRIDGE) else ("megatron_bridge",)


def _attention_only(model):
    """The conventions that count every layer as softmax attention, where no layer has a mixer (they refuse those)."""
    flags = set().union(*(model.merged(kind)[0] for kind in model.plan.kinds()))
    if flags & set(MIXER_FLAGS):
        return ()
    # slime and Megatron-Bridge refuse DeepSeek-V4's and Gemma 3n's layers; nanogpt counts them
    return ("nanogpt",) if flags & set(REFUSED_2026) else ("slime", "nanogpt", *_bridge(model))


def _torchtitan(model):
    """("torchtitan",) where torchtitan has a model for the model's family, else nothing (it refuses)."""
    return ("torchtitan",) if any(f"hf_{t}" in model.flags for t in TORCHTITAN_MODELS) else ()


_REGISTRY = flopsreg.Registry(load_entry_points=False)


def _frameworks(model):
    """olmo_core and hf_trainer where they count the model (they refuse what the framework cannot build)."""
    counted = []
    for convention in ("olmo_core", "hf_trainer"):
        try:
            _REGISTRY.select(model, convention=convention)
        except flopsreg.ModelError:
            continue
        counted.append(convention)
    return tuple(counted)


def _vision(models):
    """hf_trainer on each multimodal family's model, with its vision tower's parameters given."""
    return [(f"{name} + vision tower", model.with_param("vision_parameters", 400_000_000), ("hf_trainer",))
            for name, model, _ in models if any(f"hf_{t}" in model.flags for t in HF_TRAINER_COMPOSITE)]


def _models():
    models = [(name, model, ("exact", *_attention_only(model), *_verl(model), *_torchtitan(model), *_frameworks(model)))
              for name, model in ((n, flopsreg.Model.example(n)) for n in example_names())]
    composite = [(path.stem, flopsreg.Model.from_hf_config(path), ()) for path in (HF / "kimi-k2.6.json", HF / "mistral-large-4.json")]
    models += _vision(models + composite)
    models.append(("deepseek-v3+mtp", flopsreg.Model.from_hf_config(HF / "deepseek-v3.json", blocks=("mtp",)), ("exact", "slime", "nanogpt", "megatron_bridge", "verl", "torchtitan", "hf_trainer")))
    gemma3_text = {**json.loads((HF / "gemma-3-4b.json").read_text())["text_config"], "model_type": "gemma3_text"}
    for name, config in (("gemma-2-9b", HF / "gemma-2-9b.json"), ("gemma3-text", gemma3_text),
                         ("qwen2-moe", HF / "qwen2-moe.json"), ("qwen2.5-7b", HF / "qwen2.5-7b.json"),  # qwen2.5: qkv biases
                         ("deepseek-v2-lite", HF / "deepseek-v2-lite.json")):
        model = flopsreg.Model.from_hf_config(config)
        models.append((name, model, ("exact", "nanogpt", *_bridge(model), *_verl(model), *_torchtitan(model), *_frameworks(model))))
    # each bridge's own settings (Megatron-Bridge) and verl's Qwen-MoE estimator: sliding Qwen layers, dense Qwen-MoE layers
    def sliding(config, full, window):
        layers = config["num_hidden_layers"]
        return {**config, "use_sliding_window": True, "sliding_window": window,
                "layer_types": ["full_attention"] * full + ["sliding_attention"] * (layers - full)}

    hf = {name: json.loads((HF / f"{name}.json").read_text()) for name in ("qwen3-8b", "qwen2.5-7b", "qwen3-30b-a3b", "qwen2-moe", "deepseek-v2-lite")}
    for name, config, blocks in (
        ("qwen3 sliding", sliding(hf["qwen3-8b"], 30, 1024), ()),
        ("qwen2.5 sliding", sliding(hf["qwen2.5-7b"], 20, 512), ()),
        ("qwen3-moe sliding, dense layers", {**sliding(hf["qwen3-30b-a3b"], 40, 512), "mlp_only_layers": [0, 1], "intermediate_size": 6144}, ()),
        ("qwen2-moe dense layers", {**hf["qwen2-moe"], "mlp_only_layers": [0], "intermediate_size": 5632}, ()),
        ("deepseek-v2-lite+mtp", {**hf["deepseek-v2-lite"], "num_nextn_predict_layers": 1}, ("mtp",)),
    ):
        model = flopsreg.Model.from_hf_config(config, blocks=blocks)
        models.append((name, model, ("exact", *_bridge(model), *_verl(model))))
    # LayerNorms (scale and bias) and linear biases, as a Megatron-LM run's defaults make them
    layernorm = llama3_8b_args(normalization="LayerNorm", qk_layernorm=True, add_bias_linear=True, untie_embeddings_and_output_weights=True)
    models.append(("megatron-layernorm", flopsreg.Model.from_megatron_args(layernorm), ("exact", "nanogpt")))
    from flopsreg.integrations.nanogpt import gpt_model  # learned positions, which nanogpt leaves out

    gpt2 = SimpleNamespace(block_size=1024, vocab_size=50257, n_layer=12, n_head=12, n_embd=768, dropout=0.0, bias=True)
    models.append(("gpt2", gpt_model(gpt2), ("exact", "nanogpt", *_frameworks(gpt_model(gpt2)))))
    gemma = flopsreg.Model.example("gemma-3-4b")
    models.append(("gemma-layernorm", attrs.evolve(gemma, flags=gemma.flags | {"norm_bias"}), ("exact", "nanogpt")))
    dsa = flopsreg.Model.from_hf_config(HF / "deepseek-v3.2.json")
    models.append(("deepseek-v3.2 absorbed MLA", attrs.evolve(dsa, flags=dsa.flags | {"mla_absorbed"}), ("exact",)))
    padded = dsa.with_param("padded_vocab", 129280)  # Megatron-LM's output layer: no DSA term, no indexer
    models.append(("deepseek-v3.2 as Megatron-LM counts it", padded, ("megatron",)))
    recorded = json.loads((HF.parent / "hf_forward" / "forward_attention2026.json").read_text())["models"]
    models.append(("gemma4 with every feature", flopsreg.Model.from_hf_config(recorded["gemma4_features"]["config"]), ("exact",)))
    models.append(("deepseek-v4", flopsreg.Model.from_hf_config(HF / "deepseek-v4-defaults.json"), ("exact",)))
    models.append(("glm-5.3-flash", flopsreg.Model.from_hf_config(HF / "glm-5.3-flash-defaults.json"), ("exact",)))
    glm5_next = json.loads((HF.parent / "hf_forward" / "forward_glm5_next.json").read_text())["models"]
    models.append(("glm-5.3-flash k-pool without the tail", flopsreg.Model.from_hf_config(glm5_next["glm5_next_default_layout"]["config"]), ("exact",)))
    models.append(("mistral-large-4 layer variants", flopsreg.Model.from_hf_config(recorded["mistral_large4"]["config"]), ("exact",)))
    recurrent = json.loads((HF.parent / "hf_forward" / "forward_recurrent.json").read_text())["models"]
    models += [(name, flopsreg.Model.from_hf_config(recurrent[name]["config"]), ("exact",))
               for name in ("mamba-tiny", "mamba2-tiny", "bamba-tiny", "diffllama-tiny", "rwkv-tiny")]
    beam = json.loads((HF.parent / "hf_forward" / "forward_fam2026a.json").read_text())["defaults"]["beam"]["config"]
    models.append(("beam (an output gate with a bias per head)", flopsreg.Model.from_hf_config(beam), ("exact",)))
    fam2026b = json.loads((HF.parent / "hf_forward" / "forward_fam2026b.json").read_text())["models"]
    models += [(name, flopsreg.Model.from_hf_config(fam2026b[name]["config"]), ("exact",)) for name in ("laguna", "bailing_hybrid")]
    # helper r5moe: MoA (jetmoe), dynamic masks and product-key experts (doge), value heads of their own width (mimo_v2_flash)
    r5moe = json.loads((HF.parent / "hf_forward" / "forward_r5moe.json").read_text())["models"]
    models += [(name, flopsreg.Model.from_hf_config(r5moe[name]["config"]), ("exact",)) for name in ("jetmoe", "doge", "doge_moe", "mimo_v2_flash")]
    inkling = json.loads((HF.parent / "hf_forward" / "forward_inkling.json").read_text())["models"]  # convs beside attention, relative bias
    models.append(("inkling_text", flopsreg.Model.from_hf_config(inkling["inkling_text"]["config"]), ("exact",)))
    shared = json.loads((HF.parent / "hf_forward" / "forward_ssm2.json").read_text())["models"]  # shared blocks
    models += [(name, flopsreg.Model.from_hf_config(shared[name]["config"]), ("exact",)) for name in ("zamba-tiny", "hrm-text-tiny")]
    classic = json.loads((HF.parent / "hf_forward" / "forward_r5classic.json").read_text())["models"]  # no final norm; a dense head before the logits
    models += [(name, flopsreg.Model.from_hf_config(classic[name]["config"]), ("exact",)) for name in ("openai-gpt", "modernbert-decoder", "modernbert-decoder-biased")]
    r5rec = json.loads((HF.parent / "hf_forward" / "forward_r5rec.json").read_text())["models"]  # Zamba2, RG-LRU, mLSTM
    models += [(name, flopsreg.Model.from_hf_config(r5rec[name]["config"]), ("exact",))
               for name in ("zamba2-tiny", "zamba2-gqa-tiny", "recurrent-gemma-tiny", "xlstm-tiny")]
    qwen_vl = json.loads((HF.parent / "hf_forward" / "forward_towers5.json").read_text())["models"]  # verl's Qwen-VL rules
    models += [(name, flopsreg.Model.from_hf_config(qwen_vl[name]["config"]), ("exact", "verl")) for name in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")]
    qwenvid = json.loads((HF.parent / "hf_forward" / "forward_qwenvid.json").read_text())["models"]  # verl's qwen3_vl_moe (a dense layer 0)
    hy_v3 = json.loads((HF / "hy-v3-defaults.json").read_text())
    models += [(name, flopsreg.Model.from_hf_config(config), ("exact", "verl")) for name, config in (
        ("qwen3_vl_moe", qwenvid["qwen3_vl_moe"]["config"]), ("apertus", HF / "apertus-defaults.json"), ("seed_oss", HF / "seed-oss-defaults.json"),
        ("hy_v3 every layer MoE", {**hy_v3, "mlp_layer_types": ["sparse"] * hy_v3["num_hidden_layers"]}))]
    r5new = json.loads((HF.parent / "hf_forward" / "forward_r5new.json").read_text())["models"]  # iHC, A.X K2's gates, block-sparse, a loop
    models += [(name, flopsreg.Model.from_hf_config(r5new[name]["config"]), ("exact",)) for name in ("hy_v4", "axk2_freq", "minimax_m3_vl_text", "dory")]
    longseq = json.loads((HF.parent / "hf_forward" / "forward_longseq.json").read_text())["models"]  # look-back chunks, a 2h head
    models += [(name, flopsreg.Model.from_hf_config(longseq[name]["config"]), ("exact",)) for name in ("reformer", "reformer_wide")]
    qwen4exp = json.loads((HF.parent / "hf_forward" / "forward_qwen4exp.json").read_text())  # QSA, low-rank gated residuals, n-gram PLE
    models.append(("qwen4_exp_text", flopsreg.Model.from_hf_config(qwen4exp["models"]["qsa_ple"]["config"]), ("exact", "hf_trainer")))
    models.append(("qwen4_exp", flopsreg.Model.from_hf_config(qwen4exp["images"]["config"]), ("hf_trainer",)))  # its tower per weight
    for name, args in (("llama", llama3_8b_args()), ("dsv3", deepseek_v3_args()), ("gemma", gemma3_4b_args()),
                       ("gated", deepseek_v3_args(attention_output_gate=True, moe_shared_expert_gate=True)),
                       ("plain", llama3_8b_args(swiglu=False, gated_linear_unit=False)),
                       ("mha", llama3_8b_args(group_query_attention=False, num_query_groups=1)),
                       ("dsv3 default padding", deepseek_v3_args(vocab_size=129000, padded_vocab_size=None))):
        models.append((f"megatron-{name}", flopsreg.Model.from_megatron_args(args), ("exact", "megatron", "slime", "nanogpt", "megatron_bridge")))
    return models + IDENTITY_MODELS + MEGATRON_2026_MODELS + MINIMAX_MODELS


MODELS = _models()
CASES = [(0, 1), (0, 4096), (1, 1), (7, 13), (1023, 1), (1024, 1), (1025, 3000), (8191, 1), (131071, 1), (5000, 8192)]


@pytest.mark.parametrize(("name", "model", "conventions"), MODELS, ids=[m[0] for m in MODELS])
def test_a_cached_forward_is_the_difference_of_two_forwards(registry, name, model, conventions):
    for convention in conventions:
        for cached, new in CASES:
            got = registry.evaluate(model, seq_len=new, cached=cached, convention=convention).forward
            before = registry.evaluate(model, seq_len=cached, convention=convention).forward if cached else 0
            after = registry.evaluate(model, seq_len=cached + new, convention=convention).forward
            assert got == after - before, (name, convention, cached, new)


def test_the_identity_models_cover_every_registered_pattern(registry):
    """Every pattern that counts FLOPs; those that only hold weights never fill a FLOPs slot."""
    from flopsreg.engine.compose import holds_weights_only
    from flopsreg.engine.select import select

    used = {p.name for p in registry.patterns if holds_weights_only(p)}
    for _, model, conventions in MODELS:
        for convention in conventions:
            used |= {p for unit in registry.select(model, convention=convention).units for p in unit.patterns.values()}
            for block in registry.blocks.values():  # the layers of blocks (MTP), with the flags the block sets
                for layer in model.block(block.name):
                    flags = layer.flags | block.layer_flags | ({convention} - {"exact"})
                    used |= {sel.pattern.name for sel in select(registry, "layer", flags, block.name)}
    refusals = {p.name for p in registry.patterns if p.refusal}  # never in a plan: tested where they refuse
    # CPM-Ant's layers run over a prepended prompt (a replaces_seq_len quantity): no cached-prefix form,
    # refused by name (tests/hf/test_longseq_forward.py)
    refusals |= {"prompt_prefix", "full_bidirectional"}
    # the chunked scans and padded convs of the linear mixers count one pass: no cached-prefix form;
    # vLLM bills each new token against its whole context, which no difference of forwards gives:
    # its patterns are covered against vLLM's own functions (tests/conventions/test_vllm.py)
    assert {p.name for p in registry.patterns if not p.flags & (REFERENCE_FLAGS | {"vllm"})} - refusals - used == set()


def test_every_registered_pattern_counts_only_work_of_the_new_tokens(registry):
    """Each FLOPs formula is a sum of terms proportional to seq_len or to a 'difference' or 'rectangle' quantity
    (or a block's FLOPs), and each 'fixed' quantity does not depend on the sequence."""
    growing = {q.symbol for q in registry.quantities.values() if q.cached != "fixed"}
    growing |= {b.flops for b in registry.blocks.values()}
    for pattern in registry.patterns:
        if pattern.produces == "flops" and not pattern.flags & REFERENCE_FLAGS:
            assert _is_proportional(pattern.formula, {s, *growing}), pattern.name
        for name, formula in pattern.quantities.items():
            # a quantity that replaces seq_len has no cached-prefix form: its unit refuses one (tests/hf/test_longseq_forward.py)
            if name != "flops" and registry.quantities[name].cached == "fixed" and not registry.quantities[name].replaces_seq_len:
                assert s not in formula.free_symbols, (pattern.name, name)


def test_cached_zero_is_todays_forward(registry):
    model = flopsreg.Model.example("gemma-3-27b")
    assert registry.evaluate(model, seq_len=5000, cached=0).forward == registry.evaluate(model, seq_len=5000).forward
    assert registry.evaluate(model, seqlens=[3, 9], cached=[0, 0]).forward == registry.evaluate(model, seqlens=[3, 9]).forward


def test_numpy_prefixes_are_accepted(registry):
    np = pytest.importorskip("numpy")
    model = flopsreg.Model.example("qwen3-8b")
    expected = registry.evaluate(model, seqlens=[4, 1], cached=[7, 900]).forward
    assert registry.evaluate(model, seqlens=np.array([4, 1]), cached=np.array([7, 900])).forward == expected
    assert registry.evaluate(model, seq_len=4, cached=np.int64(0)).forward == registry.evaluate(model, seq_len=4).forward


def test_packed_rows_take_one_prefix_per_sequence(registry):
    model = flopsreg.Model.example("gemma-3-4b")
    packed = registry.evaluate(model, seqlens=[5, 1, 5], cached=[100, 2000, 0], batch=3)
    one = [registry.evaluate(model, seq_len=n, cached=c).forward for n, c in ((5, 100), (1, 2000), (5, 0))]
    assert packed.forward == 3 * sum(one)
    assert packed.tokens == 33
    assert sum(layer.flops for layer in packed.layers) + packed.unit_totals[packed.selection.head] == packed.forward
    assert sum(packed.slot_flops.values()) == packed.forward


def test_a_sliding_layer_stops_growing_past_its_window(registry):
    """Gemma-3-27B: decode cost grows only through its global layers once the window is full."""
    model = flopsreg.Model.example("gemma-3-27b")
    res = [registry.evaluate(model, seq_len=1, cached=c) for c in (10_000, 20_000)]
    local = next(u for u in res[0].selection.kinds if "sliding_window" in u.flags)
    assert res[0].unit_totals[local] == res[1].unit_totals[next(u for u in res[1].selection.kinds if u.name == local.name)]
    assert res[1].forward > res[0].forward


# -- decode by hand: Llama-3-8B ----------------------------------------------------------------


def test_llama3_8b_decode_step_by_hand(registry):
    h, nh, kv, d, ffn, V, L = 4096, 32, 8, 128, 14336, 128256, 32
    c = 131071  # the step that fills a 128k context: 1 query against c + 1 keys
    per_layer = 2 * h * nh * d + 2 * 2 * h * kv * d + 2 * nh * d * h + 3 * 2 * h * ffn + 2 * nh * (d + d) * (c + 1)
    res = registry.evaluate(flopsreg.Model.example("llama-3-8b"), seq_len=1, cached=c, logits="last")
    assert res.forward == L * per_layer + 2 * h * V
    assert res.forward_per_token == res.forward


def test_last_position_logits_count_one_position_per_sequence(registry):
    model = flopsreg.Model.example("llama-3-8b")
    h, V = 4096, 128256
    for new, cached in ((1, 0), (7, 0), (300, 4000)):
        every = registry.evaluate(model, seq_len=new, cached=cached, batch=2).forward
        last = registry.evaluate(model, seq_len=new, cached=cached, batch=2, logits="last").forward
        assert every - last == 2 * (new - 1) * 2 * h * V


# -- generation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["llama-3-8b", "gemma-3-27b", "llama-4-scout", "deepseek-v3"])
def test_generation_is_a_prefill_and_a_loop_of_decode_steps(registry, name):
    model = flopsreg.Model.example(name)
    prompt, new, batch = 1000, 24, 3
    gen = registry.generate(model, prompt=prompt, new_tokens=new, batch=batch)
    prefill = registry.evaluate(model, seq_len=prompt, batch=batch, logits="last").forward
    steps = [registry.evaluate(model, seq_len=1, cached=prompt + i, batch=batch, logits="last").forward for i in range(new - 1)]
    assert (gen.prefill_flops, gen.decode_flops) == (prefill, sum(steps))
    assert gen.total == prefill + sum(steps)
    assert gen.per_token == Fraction(prefill + sum(steps), batch * new)
    assert gen.decode_per_token == Fraction(sum(steps), batch * (new - 1))
    assert gen.decode_steps == new - 1


def test_one_new_token_is_the_prefill_alone(registry):
    gen = registry.generate(flopsreg.Model.example("qwen3-8b"), prompt=77, new_tokens=1)
    assert gen.decode is None and gen.decode_flops == 0 and gen.decode_per_token is None
    assert gen.total == gen.per_token == gen.prefill_flops


# -- MFU and HFU -------------------------------------------------------------------------------


def tiny():
    return flopsreg.Model.uniform("tiny", layers=1, hidden=8, heads=2, kv_heads=2, head_dim=4)


def test_mfu_by_hand(registry):
    res = registry.evaluate(tiny(), seq_len=4)  # forward 2368 (the package docstring's example)
    # training 3 x 2368 = 7104 FLOPs in 1 s on 2 devices of 7104 FLOP/s each: half the peak
    assert res.mfu(step_time=1, devices=2, peak=7104).fraction == Fraction(1, 2)
    assert res.mfu(step_time=0.25, devices=1, peak=7104 * 8).fraction == Fraction(1, 2)
    # 4 tokens per step; 2 tokens/s per device is 2 x 7104 / 4 = 3552 FLOP/s per device
    assert res.mfu(tokens_per_second=2, devices=2, peak=7104).fraction == Fraction(1, 2)


def test_hfu_counts_recomputation_and_mfu_does_not(registry):
    model = flopsreg.Model.example("llama-3-8b")
    plain = registry.evaluate(model, seq_len=4096, batch=8)
    full = registry.evaluate(model, seq_len=4096, batch=8, recompute="full")
    mfu = full.mfu(step_time=1.5, devices=8, peak="h100-sxm-bf16")
    hfu = full.hfu(step_time=1.5, devices=8, peak="h100-sxm-bf16")
    assert mfu == plain.mfu(step_time=1.5, devices=8, peak="h100-sxm-bf16")
    peak = Fraction(9895, 10) * 10**12
    assert mfu.fraction == Fraction(3 * plain.forward) / (Fraction(3, 2) * 8 * peak)
    assert hfu.fraction == Fraction(full.training) / (Fraction(3, 2) * 8 * peak)
    assert hfu.fraction > mfu.fraction


def test_mfu_of_a_serving_step_counts_its_forward(registry):
    res = registry.evaluate(tiny(), seq_len=1, cached=3, logits="last")
    assert res.mfu(step_time=1, devices=1, peak=res.forward).fraction == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(peak="h100"), "peak: 'h100' is neither FLOP/s nor a known accelerator (names starting so: h100-sxm-bf16, "),
        (dict(peak=-1.0), "peak: -1.0: expected FLOP/s per device"),
        (dict(peak=1e15, devices=0), "devices: 0: expected an integer >= 1"),
        (dict(peak=1e15, step_time=0), "step_time: 0: expected seconds per step"),
        (dict(peak=1e15, tokens_per_second=1), "give exactly one of step_time"),
    ],
)
def test_mfu_refuses_bad_input_by_name(registry, kwargs, message):
    res = registry.evaluate(tiny(), seq_len=4)
    kwargs = {"step_time": 1, **kwargs}
    with pytest.raises(flopsreg.ModelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        res.mfu(**kwargs)


def test_every_peak_has_a_source_and_the_issue_s_accelerators_are_there():
    for peak in PEAKS.values():
        assert peak.flops > 0 and peak.source.strip() and "(" in peak.source, peak.name
    assert {"a100-sxm-bf16", "h100-sxm-bf16", "h100-sxm-fp8", "h100-pcie-bf16", "h100-pcie-fp8", "h200-bf16",
            "h200-fp8", "b200-bf16", "b200-fp8", "gb200-bf16", "gb200-fp8", "mi300x-bf16", "mi300x-fp8",
            "mi325x-bf16", "mi355x-bf16", "mi355x-fp8", "tpu-v5e-bf16", "tpu-v5p-bf16", "tpu-v6e-bf16",
            "gaudi3-bf16", "gaudi3-fp8"} <= set(PEAKS)


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(seq_len=4, cached=-1), "cached: -1 is not a count of cached tokens: expected an integer >= 0"),
        (dict(seq_len=4, cached=1.5), "cached: 1.5 is not a count of cached tokens"),
        (dict(seqlens=[4, 5], cached=[1, 2, 3]), "cached: 3 entries for 2 sequences"),
        (dict(seq_len=4, logits="first"), "logits: 'first': expected one of 'all', 'last'"),
    ],
)
def test_serving_options_refuse_bad_values_by_name(registry, kwargs, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        registry.evaluate(tiny(), **kwargs)


def test_generate_refuses_an_empty_prompt(registry):
    with pytest.raises(flopsreg.ModelError, match="prompt: 0 is not a prompt length in tokens"):
        registry.generate(tiny(), prompt=0, new_tokens=3)


def test_a_quantity_without_a_prefix_rule_is_refused_when_cached(registry):
    growing = flopsreg.Quantity(name="blocks_so_far", latex="b", meaning="grows with the sequence")
    counting = flopsreg.Pattern(
        name="block_counter", slot="counter", precedence=10, formula=3 * growing.symbol,
        summary="3 per block", reference="a test", flags={"counted"},
    )
    producer = flopsreg.Pattern(
        name="block_source", slot="counter.source", precedence=10, produces="blocks_so_far",
        formula=sympy.floor(s / 2), summary="floor(s/2)", reference="a test", flags={"counted"},
    )

    class Plugin:
        @flopsreg.hookimpl
        def flopsreg_register_quantities(self):
            return [growing]

        @flopsreg.hookimpl
        def flopsreg_register_slots(self):
            return [flopsreg.Slot(name="counter", scope="layer", summary="a test"),
                    flopsreg.Slot(name="counter.source", scope="layer", summary="a test")]

        @flopsreg.hookimpl
        def flopsreg_register_patterns(self):
            return [counting, producer]

    reg = flopsreg.Registry([Plugin()], load_entry_points=False)
    model = flopsreg.Model.uniform("m", layers=1, hidden=8, heads=2, kv_heads=2, head_dim=4)
    model = flopsreg.Model(name="m", params=model.params, flags=model.flags | {"counted"}, kinds=model.kinds, plan=model.plan)
    assert reg.evaluate(model, seq_len=6).forward > 0
    with pytest.raises(flopsreg.ModelError, match="quantity 'blocks_so_far' depends on seq_len but declares cached='fixed'"):
        reg.evaluate(model, seq_len=6, cached=2)


# -- command line ------------------------------------------------------------------------------


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_eval_cached_and_last_logits(registry, capsys):
    status, out, _ = run(capsys, "eval", "llama-3-8b", "--seq-len", "1", "--cached", "131071", "--logits", "last", "--format", "json")
    data = json.loads(out)
    expected = registry.evaluate(flopsreg.Model.example("llama-3-8b"), seq_len=1, cached=131071, logits="last").forward
    assert status == 0 and data["forward_flops"] == str(expected) and data["cached"] == [131071] and data["logits"] == "last"
    assert data["forward_flops_per_token"] == str(expected)


def test_latex_of_a_cached_step_says_how_it_relates_to_the_forward(registry):
    model = flopsreg.Model.example("gemma-3-4b")
    every = registry.evaluate(model, seq_len=3, cached=100).latex()
    last = registry.evaluate(model, seq_len=3, cached=100, logits="last").latex()
    assert r"F(s \mid c) &= F(c + s) - F(c) \notag" in every and r"tokens already in the key/value (KV) cache" in every
    assert r"$c = 100$: tokens already in the key/value (KV) cache" in every  # its value in the definitions
    assert r"F(s \mid c) &= F(c + s) - F(c) - (s - 1)\,F_{1}," in last
    assert r"F_{1}\!: \text{head at one position}" in last
    assert r"F(3 \mid 100)" in last
    assert "mid c" not in registry.evaluate(model, seq_len=3).latex()


def test_cli_generate_json(registry, capsys):
    status, out, _ = run(capsys, "generate", "gemma-3-27b", "--prompt", "1000", "--new-tokens", "24", "--batch", "2", "--format", "json")
    gen = registry.generate(flopsreg.Model.example("gemma-3-27b"), prompt=1000, new_tokens=24, batch=2)
    data = json.loads(out)
    assert status == 0
    assert (data["prefill_flops"], data["decode_flops"], data["total_flops"]) == (str(gen.prefill_flops), str(gen.decode_flops), str(gen.total))
    assert Fraction(data["flops_per_generated_token"]) == Fraction(gen.total, 48)


def test_cli_mfu_is_the_hand_calculation(registry, capsys):
    status, out, _ = run(capsys, "mfu", "llama-3-8b", "--seq-len", "4096", "--batch", "8", "--step-time", "1.5",
                         "--devices", "8", "--peak", "h100-sxm-bf16", "--format", "json")
    forward = registry.evaluate(flopsreg.Model.example("llama-3-8b"), seq_len=4096, batch=8).forward
    expected = Fraction(3 * forward) / (Fraction(3, 2) * 8 * 989_500_000_000_000)
    data = json.loads(out)
    assert status == 0 and data["mfu"]["float"] == float(expected)
    assert abs(Fraction(data["mfu"]["fraction"]) - expected) < Fraction(1, 10**11)
    status, out, _ = run(capsys, "mfu", "llama-3-8b", "--seq-len", "4096", "--batch", "8", "--tokens-per-second",
                         str(Fraction(4096 * 8, 12)), "--devices", "8", "--peak", "989.5e12", "--format", "json")
    assert status == 0 and json.loads(out)["mfu"]["float"] == float(expected)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["mfu", "llama-3-8b", "--seq-len", "8", "--step-time", "fast", "--devices", "1", "--peak", "h100-sxm-bf16"], "--step-time: 'fast': expected seconds per step, a number from 1e-9 to 1e7"),
        (["mfu", "llama-3-8b", "--seq-len", "8", "--step-time", "1", "--devices", "1", "--peak", "h100-sxm"], "peak: 'h100-sxm' is neither"),
        (["eval", "llama-3-8b", "--seq-len", "8", "--cached", "-3"], "cached: -3 is not a count of cached tokens"),
    ],
)
def test_cli_errors_are_one_line(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_cli_peaks_lists_every_entry_with_its_source(capsys):
    status, out, _ = run(capsys, "peaks", "--format", "json")
    data = json.loads(out)
    assert status == 0 and [p["name"] for p in data] == list(PEAKS)
    assert all(p["source"] for p in data)
    status, out, _ = run(capsys, "peaks")
    assert status == 0 and "h100-sxm-bf16" in out and "989.5" in out
