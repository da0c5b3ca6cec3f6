"""The nanogpt convention and the estimate_mfu drop-in, against nanoGPT's published formula.

nanoGPT (karpathy/nanoGPT model.py at 3adf61e1): flops per token = 6 N + 12 L H Q T, N =
get_num_params() (all parameters minus the position embedding wpe), Q = n_embd // n_head,
T = block_size; flops per iteration = that x T x fwdbwd_per_iter; MFU = flops / dt / 312e12.
The expected numbers below follow that formula by hand, with N derived by hand or taken from
the recorded transformers counts (tests/data/hf_params), never from the convention itself.
"""

import json
from pathlib import Path
from types import SimpleNamespace

import attrs
import pytest

import flopsreg
from flopsreg.engine.compose import holds_weights_only
from flopsreg.integrations.nanogpt import estimate_mfu, gpt_model

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_params" / "params.json").read_text())["models"]
GPT2 = SimpleNamespace(block_size=1024, vocab_size=50257, n_layer=12, n_head=12, n_embd=768, dropout=0.0, bias=True)


def nanogpt_training(n: int, layers: int, heads: int, hidden: int, seq_len: int) -> int:
    """nanoGPT's flops_per_fwdbwd: (6N + 12 L H Q T) x T, Q = n_embd // n_head."""
    return (6 * n + 12 * layers * heads * (hidden // heads) * seq_len) * seq_len


def test_gpt2_small_has_its_124_439_808_parameters(registry):
    h, v, t = 768, 50257, 1024
    per_layer = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h)  # ln_1, ln_2, c_attn, attn c_proj, c_fc, mlp c_proj
    counts = registry.parameters(gpt_model(GPT2))
    assert counts.total == 12 * per_layer + v * h + t * h + 2 * h == 124_439_808  # + wte (tied), wpe, ln_f: Hugging Face gpt2
    assert counts.head == 0


@pytest.mark.parametrize("seq_len", [1, 1024])
def test_dense_gpt2_as_nanogpt_counts_it(registry, seq_len):
    n = 124_439_808 - 1024 * 768  # get_num_params(): 123,653,376 ("123.65M")
    got = registry.evaluate(gpt_model(GPT2), seq_len=seq_len, convention="nanogpt").training
    assert got == nanogpt_training(n, 12, 12, 768, seq_len)


@pytest.mark.parametrize(
    ("name", "layers", "heads", "hidden"),
    [
        ("llama-3-8b", 32, 32, 4096),  # dense
        ("mixtral-8x7b", 32, 32, 4096),  # MoE: N counts all 8 experts
        ("mistral-7b-v0.1", 32, 32, 4096),  # sliding window of 4096: ignored
        ("gemma-3-4b", 34, 8, 2560),  # sliding windows; Q = 2560 // 8 = 320, not head_dim 256; tied head
        ("deepseek-v3", 61, 128, 7168),  # MLA and MoE
    ],
)
def test_real_configs_as_nanogpt_counts_them(registry, name, layers, heads, hidden):
    model = flopsreg.Model.from_hf_config(Path(__file__).parents[1] / "data" / "hf" / f"{name}.json")
    for seq_len in (4096, 32768):
        got = registry.evaluate(model, seq_len=seq_len, convention="nanogpt").training
        assert got == nanogpt_training(RECORD[name]["total"], layers, heads, hidden, seq_len)


def test_nanogpt_counts_every_expert(registry):
    """GPT-OSS-120B: nanoGPT's 6N counts 128 experts where 4 run: its MoE layers at 21x exact."""
    h, experts, k, width, s = 2880, 128, 4, 2880, 4096
    model = flopsreg.Model.example("gpt-oss-120b")
    exact = registry.evaluate(model, seq_len=s).slot_flops["mlp"]
    nanogpt = registry.evaluate(model, seq_len=s, convention="nanogpt").slot_flops["mlp"]
    assert exact == 36 * (2 * s * h * experts + 2 * s * k * 3 * h * width)  # router, then 4 gated experts
    assert nanogpt == 36 * 2 * s * (h * experts + experts * 3 * h * width)  # router and all 128 experts
    assert 20 < nanogpt / exact < 32


def test_estimate_mfu_reproduces_nanogpt_to_the_last_bit():
    n = 123_653_376
    for fwdbwd, dt in ((40, 0.5), (1, 0.123), (480, 3.7)):
        ours = estimate_mfu(GPT2, fwdbwd, dt, convention="nanogpt")
        theirs = nanogpt_training(n, 12, 12, 768, 1024) * fwdbwd * (1.0 / dt) / 312e12  # nanoGPT's order of operations
        assert ours == theirs
        model = SimpleNamespace(config=GPT2)  # a GPT, as train.py calls it
        assert estimate_mfu(model, fwdbwd, dt, convention="nanogpt") == ours
        assert estimate_mfu(GPT2, fwdbwd, dt) < ours  # exact: causal pairs, no FLOPs for norms and biases


def test_estimate_mfu_exact_is_the_exact_training_flops(registry):
    exact = registry.evaluate(gpt_model(GPT2), seq_len=1024, batch=40).training
    assert estimate_mfu(GPT2, 40, 0.5) == exact * (1.0 / 0.5) / 312e12


@pytest.mark.parametrize(
    ("config", "fwdbwd", "message"),
    [
        (SimpleNamespace(**{**vars(GPT2), "n_embd": 770}), 1, r"config.n_embd = 770: not a multiple of config.n_head = 12"),
        (SimpleNamespace(**{**vars(GPT2), "bias": None}), 1, r"config.bias = None: expected True or False"),
        (SimpleNamespace(**{**vars(GPT2), "n_layer": 0}), 1, r"config.n_layer = 0: expected an integer >= 1"),
        (GPT2, 0, r"fwdbwd_per_iter = 0: expected an integer >= 1"),
    ],
)
def test_bad_configs_are_refused_naming_the_field(config, fwdbwd, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        estimate_mfu(config, fwdbwd, 1.0)


def test_gpt_without_bias_has_layernorms_without_bias(registry):
    h = 768
    counts = registry.parameters(gpt_model(SimpleNamespace(**{**vars(GPT2), "bias": False})))
    assert counts.total == 124_439_808 - 12 * (2 * h + 3 * h + h + 4 * h + h) - h  # every bias, LayerNorms' included


def test_a_plugin_pattern_holding_weights_is_counted_per_weight_with_no_twin():
    """nanogpt counts per weight (Convention.per_weight): a pattern another plugin adds, with a
    formula of its own, counts 2 FLOPs per token per weight it holds; its own formula is not used."""
    from flopsreg.declarations.symbols import h

    class Adapter:
        @flopsreg.hookimpl
        def flopsreg_register_slots(self):
            return [flopsreg.Slot(name="adapter", scope="layer", summary="a low-rank adapter")]

        @flopsreg.hookimpl
        def flopsreg_register_patterns(self):
            return [flopsreg.Pattern(
                name="adapter", slot="adapter", flags={"adapter"}, precedence=10, formula=7 * flopsreg.declarations.symbols.s * h,
                weights=2 * 16 * h, summary="a rank-16 adapter, counted its own way", reference="test",
            )]

    registry = flopsreg.Registry(plugins=[Adapter()], load_entry_points=False)
    base = flopsreg.Model.example("llama-3-8b")
    model = attrs.evolve(base, flags=base.flags | {"adapter"})
    s, h_value, layers = 4096, 4096, 32
    exact_difference = registry.evaluate(model, seq_len=s).forward - registry.evaluate(base, seq_len=s).forward
    assert exact_difference == layers * 7 * s * h_value  # its own formula, exactly
    nanogpt = registry.evaluate(model, seq_len=s, convention="nanogpt").forward - registry.evaluate(base, seq_len=s, convention="nanogpt").forward
    assert nanogpt == layers * 2 * s * (2 * 16 * h_value)  # 2 FLOPs per weight per token
    assert registry.select(model, convention="nanogpt").kinds[0].patterns["adapter"] == "nanogpt_adapter"


def test_nanogpt_leaves_out_only_the_learned_positions_and_mtp(registry):
    """get_num_params subtracts wpe; MTP is no part of nanoGPT's model: both are nanogpt's own (zero) rules."""
    gpt = gpt_model(GPT2)
    plan = registry.select(gpt, convention="nanogpt")
    assert plan.head.patterns["position_embedding"] == "nanogpt_learned_positions"
    assert any(holds_weights_only(p) for p in registry.patterns)  # norms and biases: counted under nanogpt
    assert plan.kinds[0].patterns["norms"].startswith("nanogpt_")


def test_the_gpt_oss_ratios_docs_conventions_quotes(registry):
    model = flopsreg.Model.example("gpt-oss-120b")
    ratios = [
        registry.evaluate(model, seq_len=s, convention="nanogpt").training / registry.evaluate(model, seq_len=s).training
        for s in (4096, 32768, 131072)
    ]
    assert [round(r, 1) for r in ratios] == [21.6, 16.3, 9.7]
