"""``Model.from_megatron_args``: Megatron-LM argument names, read with Megatron-LM's own meaning.

Checked against Megatron-LM's code (anchors.md §1): ``group_query_attention`` False means
``num_query_groups := num_attention_heads``; ``kv_channels`` defaults to hidden // heads;
``window_size`` is flash-attention's inclusive ``(left, right)``; ``window_attn_skip_freq`` N
makes 1-based layer l slide iff l % N != 0 (``is_layer_window_attention``); ``moe_layer_freq``
N makes 0-based layer i MoE iff i % N == 0; ``moe_ffn_hidden_size`` falls back to
``ffn_hidden_size``; MTP layers take the MLP of the last decoder layer.
"""

from types import SimpleNamespace

import pytest

import flopsreg
from flopsreg.readers.megatron import window_keys

MLA_DEFAULTS = dict(kv_lora_rank=32, qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128, q_lora_rank=None)


def args(**overrides):
    """A small GQA decoder as Megatron would leave the namespace after validate_args."""
    base = dict(
        hidden_size=512, num_layers=6, num_attention_heads=8, group_query_attention=True, num_query_groups=2,
        kv_channels=64, ffn_hidden_size=1024, swiglu=True, vocab_size=1000, padded_vocab_size=1024,
        multi_latent_attention=False, num_experts=None, **MLA_DEFAULTS,
    )
    return SimpleNamespace(**{**base, **overrides})


def mla_args(**overrides):
    mla = dict(
        group_query_attention=False, multi_latent_attention=True, q_lora_rank=96, kv_lora_rank=48,
        qk_head_dim=32, qk_pos_emb_head_dim=16, v_head_dim=32,
    )
    return args(**{**mla, **overrides})


def load(**overrides):
    return flopsreg.Model.from_megatron_args(args(**overrides))


def masks(model):
    """The attention mask flag of every decoder layer: 'sliding' or 'full'."""
    return ["sliding" if "sliding_window" in layer.flags else "full" for layer in model.layers]


def mlps(model):
    return ["moe" if "moe" in layer.flags else "dense" for layer in model.layers]


# -- attention ---------------------------------------------------------------------------------


def test_gqa_dimensions():
    model = load()
    assert model.params["hidden"] == 512
    assert model.params["heads"] == 8
    assert model.params["kv_heads"] == 2
    assert model.params["head_dim"] == 64
    assert "mla" not in model.flags


def test_without_group_query_attention_kv_heads_are_heads():
    """Megatron sets num_query_groups := num_attention_heads when the GQA flag is off."""
    model = load(group_query_attention=False, num_query_groups=1)
    assert model.params["kv_heads"] == 8
    # ... but slime reads args.num_query_groups as given: kept, with the flag its rule needs
    assert model.params["num_query_groups"] == 1 and "megatron_mha" in model.flags


def test_with_group_query_attention_num_query_groups_are_the_kv_heads():
    model = load()
    assert model.params["kv_heads"] == 2
    assert "num_query_groups" not in model.params and "megatron_mha" not in model.flags


def test_mha_without_num_query_groups_keeps_no_raw_value():
    model = load(group_query_attention=False, num_query_groups=None)
    assert model.params["kv_heads"] == 8 and "num_query_groups" not in model.params


def test_kv_channels_none_is_hidden_over_heads():
    assert load(kv_channels=None).params["head_dim"] == 512 // 8


def test_mla_arguments_are_ignored_without_the_mla_flag(registry):
    """The slime bug: MLA defaults (kv_lora_rank=32, ...) must not make a GQA model MLA.

    They are not copied into the model at all, so nothing can select on them and no warning
    about unused MLA parameters is needed.
    """
    model = load()
    assert "mla" not in model.flags and "q_lora" not in model.flags
    assert not {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "q_lora_rank"} & set(model.params)
    res = registry.evaluate(model, seq_len=128)
    assert res.layers[0].patterns["attention.projection"] == "gqa_projection"
    assert res.warnings == ()


def test_mla_flag_reads_the_mla_arguments():
    model = flopsreg.Model.from_megatron_args(mla_args())
    assert {"mla", "q_lora"} <= model.flags
    assert {k: model.params[k] for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "q_lora_rank")} == {
        "kv_lora_rank": 48, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "q_lora_rank": 96,
    }
    assert "kv_heads" not in model.params and "head_dim" not in model.params


def test_mla_without_q_lora_rank_has_no_q_lora_flag(registry):
    model = flopsreg.Model.from_megatron_args(mla_args(q_lora_rank=None))
    assert "mla" in model.flags and "q_lora" not in model.flags
    assert registry.select(model).kinds[0].patterns["attention.query"] == "query_projection"


def test_mla_exact_flops_by_hand(registry):
    """One MLA layer at s = 10: q through the latent, kv latent + shared rope key, core, out."""
    model = flopsreg.Model.from_megatron_args(mla_args(num_layers=1, swiglu=False))
    s, h, nh = 10, 512, 8
    pairs = s * (s + 1) // 2
    expected = (
        2 * s * (h * 96 + 96 * nh * (32 + 16))  # q: h -> 96 -> heads x 48
        + 2 * s * (h * (48 + 16) + 48 * nh * (32 + 32))  # kv: h -> 48 + 16, 48 -> heads x (32 + 32)
        + 2 * nh * (32 + 16) * pairs + 2 * nh * 32 * pairs  # QK^T, PV
        + 2 * s * nh * 32 * h  # out
        + 2 * 2 * s * h * 1024  # plain MLP
        + 2 * s * h * 1024  # logits over the padded_vocab_size rows the output layer runs (vocab_size 1000)
    )
    assert registry.evaluate(model, seq_len=s).forward == expected


def test_attention_output_gate_flag():
    assert "output_gate" in load(attention_output_gate=True).flags
    assert "output_gate" not in load().flags


# -- FFN and vocabulary ------------------------------------------------------------------------


def test_swiglu_sets_gated_and_swiglu():
    assert {"gated", "swiglu"} <= load(swiglu=True).flags


def test_gated_linear_unit_without_swiglu_is_gated_only():
    flags = load(swiglu=False, gated_linear_unit=True).flags
    assert "gated" in flags and "swiglu" not in flags


def test_quick_geglu_is_gated_only():
    flags = load(swiglu=False, quick_geglu=True).flags
    assert "gated" in flags and "swiglu" not in flags


def test_plain_mlp_has_no_gate_flags():
    assert not {"gated", "swiglu"} & load(swiglu=False, gated_linear_unit=False).flags


def test_vocabularies():
    """vocab is the rows the output layer runs: padded_vocab_size when given, else vocab_size."""
    model = load()
    assert (model.params["vocab"], model.params["padded_vocab"], model.params["unpadded_vocab"]) == (1024, 1024, 1000)
    assert "vocab_padding" in model.flags  # slime counts the 1000 rows of args.vocab_size
    no_vocab = load(vocab_size=None)
    assert (no_vocab.params["vocab"], "unpadded_vocab" in no_vocab.params) == (1024, False)
    no_padding = load(padded_vocab_size=None)
    assert (no_padding.params["vocab"], "padded_vocab" in no_padding.params) == (1000, False)
    assert "vocab_padding" not in no_padding.flags
    unpadded = load(padded_vocab_size=1000)  # TP 1 and a vocabulary already divisible: no padding
    assert unpadded.params == {**unpadded.params, "vocab": 1000, "padded_vocab": 1000}
    assert "unpadded_vocab" not in unpadded.params and "vocab_padding" not in unpadded.flags


def test_padded_vocabulary_smaller_than_the_vocabulary_is_refused():
    with pytest.raises(flopsreg.ModelError, match=r"^args\.padded_vocab_size = 999: smaller than args\.vocab_size = 1000$"):
        load(padded_vocab_size=999)


def test_exact_counts_the_padded_rows_of_the_output_layer(registry):
    """The output layer computes padded_vocab_size = 1024 logits per position: 2 s h 1024."""
    res = registry.evaluate(load(), seq_len=10)
    assert res.slot_flops["head"] == 2 * 10 * 512 * 1024
    assert res.warnings == ()


def test_no_vocabulary_at_all_is_an_error():
    with pytest.raises(flopsreg.ModelError, match=r"args\.vocab_size: missing"):
        load(vocab_size=None, padded_vocab_size=None)


# -- sliding windows ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "window_size, keys",
    [((127, 0), 128), ([127, 0], 128), ((0, 0), 1), ((-1, 0), None), (None, None), ("127,0", 128), ("1023, 0", 1024)],
)
def test_window_keys(window_size, keys):
    """Inclusive (left, right): left earlier keys plus the query itself; -1 or None = no window."""
    assert window_keys(window_size) == keys


def test_window_keys_accepts_megatrons_parenthesised_string():
    """Megatron's tuple_type strips parentheses: '--window-size (127,0)' is (127, 0)."""
    assert window_keys("(127,0)") == 128


@pytest.mark.parametrize("window_size", [(127, 1), (127, 5), (-5, 0), (127,), (1, 2, 3), 128])
def test_window_keys_rejects(window_size):
    with pytest.raises(flopsreg.ModelError, match=r"args\.window_size"):
        window_keys(window_size)


@pytest.mark.parametrize("window_size", ["x,0", ("a", 0), "128"])
def test_window_keys_rejects_non_integers_with_a_model_error(window_size):
    """Bad input gets one clear ModelError naming args.window_size, not a bare int() or '<' error."""
    with pytest.raises(flopsreg.ModelError, match=r"args\.window_size"):
        window_keys(window_size)


def test_window_without_skip_freq_slides_every_layer():
    """is_layer_window_attention: window set and window_attn_skip_freq None -> every layer slides."""
    model = load(window_size=(127, 0))
    assert masks(model) == ["sliding"] * 6
    assert {layer.params["window"] for layer in model.layers} == {128}


@pytest.mark.parametrize("window_size", [None, (-1, 0)])
def test_no_window_means_no_sliding_layer(window_size):
    model = load(window_size=window_size, window_attn_skip_freq=2)
    assert masks(model) == ["full"] * 6
    assert all("window" not in layer.params for layer in model.layers)


@pytest.mark.parametrize(
    "freq, expected",
    [
        (2, ["sliding", "full"] * 3),  # 1-based layers 2, 4, 6 are full
        (3, ["sliding", "sliding", "full"] * 2),
        (1, ["full"] * 6),
        (7, ["sliding"] * 6),
    ],
)
def test_window_attn_skip_freq_int_is_one_based(freq, expected):
    assert masks(load(window_size=(127, 0), window_attn_skip_freq=freq)) == expected


def test_window_attn_skip_freq_list_marks_sliding_layers_with_1():
    model = load(window_size=(63, 0), window_attn_skip_freq=[1, 0, 0, 1, 1, 0])
    assert masks(model) == ["sliding", "full", "full", "sliding", "sliding", "full"]


@pytest.mark.parametrize("freq", [0, -2])
def test_window_attn_skip_freq_below_one_is_a_model_error(freq):
    """0 would divide by zero; the error must name the argument."""
    with pytest.raises(flopsreg.ModelError, match="window_attn_skip_freq"):
        load(window_size=(127, 0), window_attn_skip_freq=freq)


@pytest.mark.parametrize("freq", [[1, 0, 1], [1, 0, 2, 1, 0, 1], True])
def test_window_attn_skip_freq_bad_list_or_type(freq):
    with pytest.raises(flopsreg.ModelError, match="window_attn_skip_freq"):
        load(window_size=(127, 0), window_attn_skip_freq=freq)


def test_gemma_like_window_pattern_evaluates_by_hand(registry):
    """Skip freq 3, window (3, 0) = 4 keys, s = 10: layers 3 and 6 (1-based) see the causal triangle."""
    model = load(window_size=(3, 0), window_attn_skip_freq=3)
    s = 10
    sliding_pairs = 4 * 5 // 2 + (10 - 4) * 4  # 10 + 24
    full_pairs = 10 * 11 // 2
    core = 2 * 8 * (64 + 64) * (4 * sliding_pairs + 2 * full_pairs)
    assert registry.evaluate(model, seq_len=s).slot_flops["attention.core"] == core


# -- mixture of experts ------------------------------------------------------------------------


def moe(**overrides):
    return load(num_experts=16, moe_router_topk=2, moe_ffn_hidden_size=256, **overrides)


def test_moe_every_layer_by_default():
    model = moe()
    assert mlps(model) == ["moe"] * 6
    layer = model.layers[0]
    assert (layer.params["experts"], layer.params["top_k"], layer.params["expert_hidden"]) == (16, 2, 256)


@pytest.mark.parametrize(
    "freq, expected",
    [(2, ["moe", "dense"] * 3), (3, ["moe", "dense", "dense"] * 2), (1, ["moe"] * 6)],
)
def test_moe_layer_freq_int_is_zero_based(freq, expected):
    """Megatron: layer i (0-based) is MoE iff i % N == 0."""
    assert mlps(moe(moe_layer_freq=freq)) == expected


def test_moe_layer_freq_list():
    assert mlps(moe(moe_layer_freq=[0, 0, 1, 1, 0, 1])) == ["dense", "dense", "moe", "moe", "dense", "moe"]


@pytest.mark.parametrize("freq", [[0, 1], [0, 1, 1, 1, 1, 1, 1], [0, 2, 1, 1, 1, 1], 0, True])
def test_moe_layer_freq_wrong(freq):
    with pytest.raises(flopsreg.ModelError, match="moe_layer_freq"):
        moe(moe_layer_freq=freq)


def test_moe_ffn_hidden_size_none_falls_back_to_ffn_hidden_size():
    model = load(num_experts=16, moe_router_topk=2, moe_ffn_hidden_size=None)
    assert model.layers[0].params["expert_hidden"] == 1024


def test_num_experts_none_is_all_dense_whatever_moe_layer_freq():
    assert mlps(load(num_experts=None, moe_layer_freq=1)) == ["dense"] * 6


def test_shared_experts_and_gate():
    layer = moe(moe_shared_expert_intermediate_size=512, moe_shared_expert_gate=True).layers[0]
    assert {"moe", "shared_experts", "shared_expert_gate"} <= layer.flags
    assert layer.params["shared_hidden"] == 512
    plain = moe().layers[0]
    assert not {"shared_experts", "shared_expert_gate"} & plain.flags
    assert "shared_hidden" not in plain.params


def test_dense_layers_keep_the_dense_width():
    model = moe(moe_layer_freq=[0, 1, 1, 1, 1, 1])
    assert model.layers[0].params["ffn_hidden"] == 1024 and "mlp" in model.layers[0].flags


# -- multi-token prediction --------------------------------------------------------------------


def test_mtp_layers_take_the_kind_of_the_last_layer():
    model = moe(moe_layer_freq=[0, 0, 1, 1, 1, 1], mtp_num_layers=2)
    assert "mtp" in model.flags
    last = model.layers[-1].kind
    assert model.plan.blocks["mtp"] == (last, last)
    assert "moe" in model.kinds[last].flags


def test_mtp_after_a_dense_last_layer_is_dense():
    model = moe(moe_layer_freq=[1, 1, 1, 1, 1, 0], mtp_num_layers=1)
    assert model.plan.blocks["mtp"] == (model.layers[-1].kind,)
    assert "mlp" in model.kinds[model.plan.blocks["mtp"][0]].flags


@pytest.mark.parametrize("depth, problem", [(-1, "expected an integer >= 0"), ("2", "expected an integer"), (True, "expected an integer")])
def test_bad_mtp_num_layers_is_named(depth, problem):
    with pytest.raises(flopsreg.ModelError, match=rf"^args\.mtp_num_layers = {depth!r}: {problem}$"):
        load(mtp_num_layers=depth)


@pytest.mark.parametrize("depth", [None, 0])
def test_no_mtp(depth):
    model = load(mtp_num_layers=depth)
    assert "mtp" not in model.flags and model.plan.blocks.get("mtp", ()) == ()


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["hidden_size", "num_layers", "num_attention_heads", "ffn_hidden_size"])
def test_missing_required_argument(field):
    with pytest.raises(flopsreg.ModelError, match=rf"args\.{field}: missing"):
        load(**{field: None})


def test_missing_attribute_is_missing():
    namespace = args()
    del namespace.hidden_size
    with pytest.raises(flopsreg.ModelError, match=r"args\.hidden_size: missing"):
        flopsreg.Model.from_megatron_args(namespace)


@pytest.mark.parametrize("field, value", [("hidden_size", "512"), ("hidden_size", 512.0), ("num_layers", True), ("kv_channels", "64"), ("num_query_groups", 2.5)])
def test_wrong_types(field, value):
    with pytest.raises(flopsreg.ModelError, match=rf"args\.{field} = {value!r}: expected an integer"):
        load(**{field: value})


def test_unsupported_arguments():
    """The legacy MTP pattern of hybrid models, which validate_args folds into hybrid_layer_pattern: refused.

    Gated DeltaNet, hybrid stacks and latent MoE are read (tests/megatron/test_mixers_2026.py)."""
    with pytest.raises(flopsreg.ModelError, match=r"^args\.mtp_hybrid_override_pattern = '\*E': .*not supported"):
        load(mtp_hybrid_override_pattern="*E")


def test_mla_with_group_query_attention_is_refused():
    """Megatron asserts not group_query_attention under multi_latent_attention."""
    with pytest.raises(flopsreg.ModelError, match="group_query_attention"):
        flopsreg.Model.from_megatron_args(mla_args(group_query_attention=True))


def test_mla_needs_its_arguments():
    with pytest.raises(flopsreg.ModelError, match=r"args\.kv_lora_rank: missing \(needed with multi_latent_attention\)"):
        flopsreg.Model.from_megatron_args(mla_args(kv_lora_rank=None))


def test_moe_needs_top_k():
    with pytest.raises(flopsreg.ModelError, match=r"args\.moe_router_topk: missing"):
        load(num_experts=16, moe_router_topk=None)


def test_name_and_source():
    model = flopsreg.Model.from_megatron_args(args(), name="run-42")
    assert model.name == "run-42"
    assert model.source == "Megatron-LM arguments"


def test_round_trips_through_toml():
    model = moe(moe_layer_freq=[0, 1, 1, 1, 1, 1], window_size=(127, 0), window_attn_skip_freq=3, mtp_num_layers=1)
    again = flopsreg.Model.from_toml_string(model.to_toml())
    assert [layer.flags for layer in again.layers] == [layer.flags for layer in model.layers]
    assert [dict(layer.params) for layer in again.layers] == [dict(layer.params) for layer in model.layers]
    assert again.plan.blocks == model.plan.blocks


@pytest.mark.parametrize("field", ["hidden_size", "ffn_hidden_size", "padded_vocab_size"])
def test_integers_beyond_max_int_are_refused_by_name(field):
    with pytest.raises(flopsreg.ModelError, match=rf"^args\.{field} = {10**30}: expected an integer <= 2\^63 - 1"):
        load(**{field: 10**30})
