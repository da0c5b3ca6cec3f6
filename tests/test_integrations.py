"""Drop-ins with Megatron-LM's, slime's, verl's and Megatron-Bridge's signatures; expected numbers derived by hand."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import flopsreg
from flopsreg.integrations.megatron import num_floating_point_operations
from flopsreg.integrations.slime import calculate_fwd_flops

HF = Path(__file__).parent / "data" / "hf"


def llama3_8b_args(**overrides):
    """Megatron-LM arguments of Llama-3-8B, with Megatron's MLA defaults present but unused."""
    args = dict(
        hidden_size=4096, num_layers=32, num_attention_heads=32, group_query_attention=True,
        num_query_groups=8, kv_channels=128, ffn_hidden_size=14336, swiglu=True,
        multi_latent_attention=False, kv_lora_rank=32, qk_head_dim=128, qk_pos_emb_head_dim=64,
        v_head_dim=128, q_lora_rank=None, num_experts=None, vocab_size=128256,
        padded_vocab_size=128256, seq_length=4096, mtp_num_layers=None, window_size=None,
    )
    return SimpleNamespace(**{**args, **overrides})


# Megatron-LM's per-token training term for these args (anchors 10.1), written out:
MLP = 6 * 4096 * (3 * 14336) * 32
ATTENTION_LINEAR = 6 * 32 * (4096 * (4096 + 1024 + 1024) + 4096 * 4096)
LOGITS = 6 * 4096 * 128256
PER_TOKEN = MLP + ATTENTION_LINEAR + LOGITS  # 45,027,950,592
CORE_PER_SQUARED_TOKEN = 6 * 32 * 128 * 32  # 6 n_h d L, causal s^2/2 already folded in


def test_megatron_convention_reproduces_megatron_for_a_global_batch():
    assert PER_TOKEN == 45_027_950_592
    per_sequence = 4096 * PER_TOKEN + 4096**2 * CORE_PER_SQUARED_TOKEN
    assert per_sequence == 197_628_625_158_144
    assert num_floating_point_operations(llama3_8b_args(), 512, convention="megatron") == 512 * per_sequence


def test_megatron_packed_statistics_use_real_tokens_and_squared_lengths():
    tokens, squares = 1000 + 3096, 1000**2 + 3096**2
    expected = tokens * PER_TOKEN + squares * CORE_PER_SQUARED_TOKEN
    got = num_floating_point_operations(llama3_8b_args(), 2, squares, tokens, convention="megatron")
    assert got == expected


def test_exact_packed_statistics_equal_the_per_sequence_count():
    """Full causal attention is a*s + b*s^2 per sequence, so T and sum(s^2) suffice for exact too."""
    tokens, squares = 1000 + 3096, 1000**2 + 3096**2
    by_lengths = 3 * calculate_fwd_flops([1000, 3096], llama3_8b_args())
    assert num_floating_point_operations(llama3_8b_args(), 2, squares, tokens) == by_lengths
    pairs = 1000 * 1001 // 2 + 3096 * 3097 // 2  # exact causal pairs
    core = 2 * 32 * (128 + 128) * pairs * 32  # forward, 32 layers
    linear = tokens * PER_TOKEN // 3  # forward per-token terms, as in Megatron
    assert by_lengths == 3 * (linear + core)


def test_packed_statistics_are_refused_when_they_cannot_determine_the_count():
    sliding = llama3_8b_args(window_size=(1023, 0))
    with pytest.raises(flopsreg.ModelError, match=r"not a\*s \+ b\*s\^2 \(sliding-window or chunked layers\)"):
        num_floating_point_operations(sliding, 2, 1000**2 + 3096**2, 4096)
    # ... but the megatron convention ignores windows, so it can:
    assert num_floating_point_operations(sliding, 2, 1000**2 + 3096**2, 4096, convention="megatron") > 0


def test_slime_drop_in_sums_sequences_and_reproduces_slime():
    forward = calculate_fwd_flops([4096], llama3_8b_args(), convention="slime")
    assert 3 * forward == 197_628_625_158_144  # slime equals Megatron when n_h d = h and gated
    assert calculate_fwd_flops([100, 200], llama3_8b_args()) == calculate_fwd_flops(
        [100], llama3_8b_args()
    ) + calculate_fwd_flops([200], llama3_8b_args())


def test_drop_ins_need_what_megatron_needs():
    with pytest.raises(flopsreg.ModelError, match=r"args.seq_length: missing"):
        num_floating_point_operations(llama3_8b_args(seq_length=None), 8)
    with pytest.raises(flopsreg.ModelError, match=r"convention: 'megatorn' is not registered; did you mean 'megatron'"):
        calculate_fwd_flops([10], llama3_8b_args(), convention="megatorn")


# -- statistics as Megatron-LM's training loop passes them: float64 all-reduce results ---------


def test_megatron_passes_whole_number_floats_and_gets_the_exact_number():
    """Megatron's loop passes .item() of a float64 all-reduce: 4096.0 tokens, 1000^2 + 3096^2 squares."""
    tokens, squares = 1000 + 3096, 1000**2 + 3096**2
    expected = tokens * PER_TOKEN + squares * CORE_PER_SQUARED_TOKEN  # written out above
    got = num_floating_point_operations(llama3_8b_args(), 2, float(squares), float(tokens), convention="megatron")
    assert got == expected and type(got) is int
    assert num_floating_point_operations(llama3_8b_args(), 2.0, convention="megatron") == 2 * (
        4096 * PER_TOKEN + 4096**2 * CORE_PER_SQUARED_TOKEN
    )


def test_numpy_scalars_are_taken_exactly():
    np = pytest.importorskip("numpy")
    tokens, squares = 1000 + 3096, 1000**2 + 3096**2
    expected = tokens * PER_TOKEN + squares * CORE_PER_SQUARED_TOKEN
    for cast in (np.int64, np.float64, np.float32):
        got = num_floating_point_operations(llama3_8b_args(), np.int32(2), cast(squares), cast(tokens), convention="megatron")
        assert got == expected and type(got) is int, cast


@pytest.mark.parametrize(
    "position, name, value",
    [
        (2, "seqlen_squared_sum_in_batch", 10_561_216.5),
        (3, "total_real_tokens_in_batch", 4095.25),
        (3, "total_real_tokens_in_batch", float("nan")),
        (2, "seqlen_squared_sum_in_batch", float("inf")),
        (3, "total_real_tokens_in_batch", True),
        (2, "seqlen_squared_sum_in_batch", "10561216"),
        (1, "batch_size", 2.5),
        (1, "batch_size", None),
    ],
)
def test_fractional_or_non_numeric_statistics_are_named(position, name, value):
    call = [llama3_8b_args(), 2, 1000**2 + 3096**2, 4096]
    call[position] = value
    with pytest.raises(flopsreg.ModelError, match=rf"^{name} = {value!r}: expected a whole number".replace("(", r"\(")):
        num_floating_point_operations(*call)


def test_batch_size_below_one_is_refused():
    with pytest.raises(flopsreg.ModelError, match=r"^batch_size = 0: expected an integer >= 1"):
        num_floating_point_operations(llama3_8b_args(), 0, 100, 10)


def test_drop_ins_read_the_arguments_with_the_readers_of_their_registry():
    """A plugin reader in the registry passed to a drop-in reads the namespace; without it, the built-in reads it."""
    import types

    from flopsreg.declarations.readers import MegatronReader

    @flopsreg.hookimpl
    def flopsreg_register_megatron_readers():
        ignore = MegatronReader(
            name="latent_as_plain", arguments="moe_latent_size", read=lambda args, decoder: decoder,
            precedence=30, summary="counts a dense run's moe_latent_size as nothing",
        )
        return [ignore]

    plugin = types.ModuleType("latent_as_plain")
    plugin.flopsreg_register_megatron_readers = flopsreg_register_megatron_readers
    registry = flopsreg.Registry(plugins=[plugin], load_entry_points=False)
    latent = llama3_8b_args(moe_latent_size=1024)
    assert num_floating_point_operations(latent, 2, convention="megatron", registry=registry) == 2 * 197_628_625_158_144
    assert calculate_fwd_flops([4096], latent, registry=registry) == calculate_fwd_flops([4096], llama3_8b_args())
    with pytest.raises(flopsreg.ModelError, match=r"^args\.moe_latent_size = 1024: latent MoE needs args\.num_experts"):
        num_floating_point_operations(latent, 2)


def test_repeated_calls_reuse_the_plan_and_a_changed_argument_is_read_afresh():
    """The training-loop pattern: the same namespace every step; mutating it must not serve a stale model."""
    from flopsreg.integrations._shared import megatron_plan

    args = llama3_8b_args()
    registry = flopsreg.Registry(load_entry_points=False)
    first = megatron_plan(args, registry, "megatron")
    assert megatron_plan(llama3_8b_args(), registry, "megatron") is first  # equal values, another object
    assert megatron_plan(args, registry, "exact") is not first
    per_sequence = 4096 * PER_TOKEN + 4096**2 * CORE_PER_SQUARED_TOKEN
    assert num_floating_point_operations(args, 2, convention="megatron", registry=registry) == 2 * per_sequence
    args.num_layers = 16  # every per-layer term halves; the logits do not
    half = 4096 * (MLP + ATTENTION_LINEAR) // 2 + 4096 * LOGITS + 4096**2 * CORE_PER_SQUARED_TOKEN // 2
    assert num_floating_point_operations(args, 2, convention="megatron", registry=registry) == 2 * half
    args.num_layers = 32.0  # a float where an int is expected: read afresh, and refused by the reader
    with pytest.raises(flopsreg.ModelError, match="args.num_layers"):
        num_floating_point_operations(args, 2, convention="megatron", registry=registry)


def test_the_repeated_call_fast_path_sees_a_type_change_an_added_and_a_deleted_argument():
    """The last call's values are compared with their types: an equal value of another type, an
    argument that appears (it was absent) or disappears is read afresh, never served stale."""
    registry = flopsreg.Registry(load_entry_points=False)
    args = llama3_8b_args()
    per_sequence = 4096 * PER_TOKEN + 4096**2 * CORE_PER_SQUARED_TOKEN
    for _ in range(2):  # the second call takes the fast path
        assert num_floating_point_operations(args, 1, convention="megatron", registry=registry) == per_sequence
    args.num_layers = 32.0  # equal to 32, but a float: the reader refuses it
    with pytest.raises(flopsreg.ModelError, match="args.num_layers"):
        num_floating_point_operations(args, 1, convention="megatron", registry=registry)
    args.num_layers = 32
    assert num_floating_point_operations(args, 1, convention="megatron", registry=registry) == per_sequence
    args.attention_output_gate = True  # absent before: Megatron-LM then counts the gate's h x n_h*d matmul
    gated = per_sequence + 4096 * 6 * 32 * 4096 * 4096
    assert num_floating_point_operations(args, 1, convention="megatron", registry=registry) == gated
    del args.attention_output_gate
    assert num_floating_point_operations(args, 1, convention="megatron", registry=registry) == per_sequence
    del args.num_layers  # present before: now missing, so the reader says so
    with pytest.raises(flopsreg.ModelError, match="num_layers"):
        num_floating_point_operations(args, 1, convention="megatron", registry=registry)


def test_an_unhashable_argument_value_is_read_every_call():
    from flopsreg.integrations._shared import megatron_plan

    args = llama3_8b_args(window_size=[1023, 0], seq_length=8)
    args.window_size = {"left": 1023}  # unhashable: no key, so the readers see (and refuse) it every call
    registry = flopsreg.Registry(load_entry_points=False)
    for _ in range(2):
        with pytest.raises(flopsreg.ModelError, match="args.window_size"):
            megatron_plan(args, registry, "exact")


# -- verl's FlopsCounter(config).estimate_flops(batch_seqlens, delta_time) -------------------------

LLAMA2_7B = {  # verl's own test config (tests/utils/test_flops_counter.py), a dict as to_dict() gives it
    "model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
}  # fmt: skip
# verl's formula, written out: 6 (2 V h + L (4 h^2 + 3 h F)) T + 6 sum(s^2) L h
LLAMA2_7B_VERL = 6 * (32000 * 4096 * 2 + 32 * (4096 * 4096 * 4 + 4096 * 11008 * 3)) * (512 + 1024 + 2048) + 6 * (
    512**2 + 1024**2 + 2048**2
) * 32 * 4096


class AttributeConfig:
    """A config as an object with attributes, as verl's tests build one (and PretrainedConfig is)."""

    def __init__(self, fields):
        self.__dict__.update(fields)


def test_verl_estimate_flops_returns_achieved_and_promised_tflops():
    from flopsreg.integrations.verl import FlopsCounter

    assert LLAMA2_7B_VERL == 149_226_491_215_872  # what verl's own test expects
    counter = FlopsCounter(AttributeConfig(LLAMA2_7B), convention="verl", device_name="NVIDIA H100 80GB HBM3")
    achieved, promised = counter.estimate_flops([512, 1024, 2048], 2.0)
    assert achieved == LLAMA2_7B_VERL / 2.0 / 1e12 and isinstance(achieved, float)
    assert promised == 989.5  # flopsreg's H100 SXM dense BF16 (verl's table says 989)
    assert counter.training_flops([512, 1024, 2048]) == LLAMA2_7B_VERL


def test_verl_drop_in_counts_exactly_by_default():
    from flopsreg.integrations.verl import FlopsCounter

    exact = flopsreg.Registry.default().evaluate(flopsreg.Model.from_hf_config(LLAMA2_7B), seqlens=[512, 1024]).training
    assert FlopsCounter(LLAMA2_7B, device_name="CPU").training_flops([512, 1024]) == exact
    assert exact < 149_226_491_215_872  # no embedding matmul, s(s+1)/2 pairs


@pytest.mark.parametrize(
    ("device", "promised"),
    [("NVIDIA A100-SXM4-80GB", 312.0), ("NVIDIA GB200", 2500.0), ("NVIDIA B200", 2250.0), ("AMD Instinct MI300X", 1307.4),
     ("NVIDIA H800", float("inf")), ("CPU", float("inf"))],
)
def test_verl_promised_peak_from_flopsregs_table_else_inf(device, promised):
    from flopsreg.integrations.verl import FlopsCounter

    assert FlopsCounter(LLAMA2_7B, device_name=device).estimate_flops([8], 1.0)[1] == promised
    assert FlopsCounter(LLAMA2_7B, device_name=device, peak="h100-sxm-bf16").estimate_flops([8], 1.0)[1] == 989.5


def test_verl_drop_in_refuses_what_it_cannot_count():
    from flopsreg.integrations.verl import FlopsCounter

    mixtral = json.loads((HF / "mixtral-8x7b.json").read_text())
    with pytest.raises(flopsreg.ModelError, match=r"model_type 'mixtral': its FlopsCounter returns 0"):
        FlopsCounter(mixtral, convention="verl")
    counter = FlopsCounter(LLAMA2_7B, device_name="CPU")
    with pytest.raises(flopsreg.ModelError, match=r"^delta_time = 0: expected the step time in seconds"):
        counter.estimate_flops([8], 0)
    with pytest.raises(flopsreg.ModelError, match=r"^images_seqlens: not counted by flopsreg"):
        counter.estimate_flops([8], 1.0, images_seqlens=[64])


# -- Megatron-Bridge's num_floating_point_operations(cfg, batch_size=1) -------------------------------


def test_bridge_drop_in_signature_and_units():
    from test_megatron_bridge import LLAMA_3_8B

    from flopsreg.integrations.megatron_bridge import num_floating_point_operations as bridge_flops

    cfg = SimpleNamespace(model=LLAMA_3_8B)
    assert bridge_flops(cfg) == bridge_flops(cfg, 1) == 197_631_846_383_616  # exact training FLOPs, one sequence
    # Bridge: Megatron-LM's count (anchors 10.1) with its padded vocabulary, here 128256 at TP 1
    assert bridge_flops(cfg, batch_size=512, convention="megatron_bridge") == 512 * 197_628_625_158_144


def test_verl_and_bridge_drop_ins_reuse_one_plan_per_config():
    """A training loop calls them every step: the model is read and planned once per config."""
    from test_megatron_bridge import LLAMA_3_8B

    from flopsreg.integrations.megatron_bridge import bridge_plan
    from flopsreg.integrations.verl import FlopsCounter

    assert FlopsCounter(dict(LLAMA2_7B), device_name="CPU")._plan is FlopsCounter(AttributeConfig(LLAMA2_7B), device_name="CPU")._plan
    registry = flopsreg.Registry.default()
    first = bridge_plan(LLAMA_3_8B, registry, "megatron_bridge")
    assert bridge_plan(SimpleNamespace(**vars(LLAMA_3_8B)), registry, "megatron_bridge") is first
    assert bridge_plan(SimpleNamespace(**{**vars(LLAMA_3_8B), "num_layers": 16}), registry, "megatron_bridge") is not first
