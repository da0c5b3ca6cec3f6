"""Model types whose layers run over another length than the input (patterns/hf/cpmant.py, the
``layer_positions`` quantity) against real forward passes and parameter counts, recorded in
tests/data/hf_forward/forward_longseq.json.

tests/data/hf_forward/measure_longseq.py ran a tiny config of every type (odd widths: hidden 44,
dim_head 12, dim_ff 58, vocabulary 97, a prompt of 5 tokens, and a case without one) through
transformers 5.24 on the CPU (eager attention) under torch's FlopCounterMode at two lengths, and
recorded the totals, the FLOPs of every module and ``sum(p.numel())``; and, per type, the
class-default config with the parameters of its model built on the meta device (the config saved
as tests/data/hf/<type>-defaults.json). Those numbers come from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy
from eager import eager_registry as make_eager_registry
from recorded_forward import forward_at, mlp_per_layer

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.engine import cold
from flopsreg.formula.exact import compile_exact
from flopsreg.patterns.local_chunks import CHUNKS_BEFORE, LOCAL_CHUNK

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_longseq.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
CPMANTS = [name for name in MODELS if RECORD["models"][name]["config"]["model_type"] == "cpmant"]
LONG = RECORD["seq_lens"][-1]


def _model(name: str, **changes) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({**RECORD["models"][name]["config"], **changes})


def _positions(name: str, seq_len: int) -> int:
    """What CpmAntModel.forward runs its encoder over: the prompt ids, then the input ids."""
    return RECORD["models"][name]["config"]["prompt_length"] + seq_len


def test_every_type_was_recorded_and_ran_and_built_from_its_defaults():
    assert {entry["config"]["model_type"] for entry in RECORD["models"].values()} == set(DEFAULTS) == {"cpmant", "reformer"}
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert all("totals" in entry for entry in RECORD["models"].values()), "a model failed to run when recorded"
    assert "parameters" in RECORD["defaults"]["cpmant"], "a class-default model failed to build"


@pytest.mark.parametrize("name", CPMANTS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", CPMANTS)
def test_exact_counts_what_eager_does_every_pair_is_attended(registry, name):
    """CpmAnt's mask lets every (query, key) pair of the s + prompt_length positions through
    (context is all ones): the exact count is the eager one, no masked pair to leave out."""
    totals = RECORD["models"][name]["totals"]
    assert {length: registry.evaluate(_model(name), seq_len=int(length)).forward for length in totals} == totals


@pytest.mark.parametrize("name", CPMANTS)
def test_every_layers_modules_run_over_the_prompt_and_the_head_over_the_input(eager_registry, name):
    """Each layer's MLP and projections count s + prompt_length positions; the head, s."""
    modules, model = RECORD["models"][name]["modules"], _model(name)
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, LONG)):
        assert ours == modules[f"cpmant.encoder.layers.{layer.index}.ffn"], layer.index
    flops = eager_registry.select(model, convention="eager").kinds[0].flops(LONG)
    projection = modules["cpmant.encoder.layers.0.self_att.self_attention.project_q"]
    assert flops["attention.query"] == projection == 2 * _positions(name, LONG) * 44 * 4 * 12
    assert eager_registry.evaluate(model, seq_len=LONG, convention="eager").slot_flops["head"] == modules["lm_head"] == 2 * LONG * 44 * 97


@pytest.mark.parametrize("name", CPMANTS)
def test_the_layers_pairs_are_every_pair_of_the_positions(registry, name):
    """A literal loop over CpmAntModel._prepare_attention_mask with context all ones, no span and no padding."""
    positions = _positions(name, LONG)
    context, span, kept = [True] * positions, [0] * positions, [True] * positions  # no input id is 0: no left padding
    attended = sum(
        1 for q in range(positions) for k in range(positions)
        if (context[k] or (not context[q] and k <= q)) and span[q] == span[k] and kept[q] and kept[k]
    )
    unit = registry.select(_model(name)).kinds[0]
    assert compile_exact(unit.quantities["pairs"])({**unit.params, "seq_len": LONG}) == attended == positions**2


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


def test_the_prompt_and_segment_weights_are_what_the_modules_hold(registry):
    held = RECORD["models"]["cpmant"]["module_parameters"]
    counts = registry.parameters(_model("cpmant")).by_slot()
    assert counts["embedding"] == held["cpmant.input_embedding"] == (97 + 3 * 5) * 44
    assert counts["position_embedding"] == held["cpmant.segment_embedding"] + held["cpmant.position_bias"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    """The saved tests/data/hf/<type>-defaults.json is the recorded class-default config (for
    Reformer, whose defaults transformers refuses, with local layers and is_decoder true)."""
    path = DATA / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
    entry = RECORD["built_defaults"].get(model_type, RECORD["defaults"][model_type])
    assert json.loads(path.read_text()) == entry["config"]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == entry["parameters"]


def test_a_layer_over_a_prompt_counts_as_the_same_layer_over_the_longer_input(registry):
    """The positions a layer runs over stand in for seq_len in every slot of that layer, and only there."""
    with_prompt, without = _model("cpmant"), _model("cpmant", prompt_length=0)
    longer = registry.select(without).kinds[0].flops(LONG + 5)
    assert registry.select(with_prompt).kinds[0].flops(LONG) == longer
    head = registry.evaluate(with_prompt, seq_len=LONG).slot_flops["head"]
    assert head == registry.evaluate(without, seq_len=LONG).slot_flops["head"] != registry.evaluate(without, seq_len=LONG + 5).slot_flops["head"]


def test_the_manifest_trees_compose_it_as_sympy_does(registry):
    model = _model("cpmant")
    tree = cold.cold_selection(model)
    assert tree is not None
    assert [tree.forward(n) for n in (1, 13, LONG)] == [registry.evaluate(model, seq_len=n).forward for n in (1, 13, LONG)]


def test_after_a_cached_prefix_there_is_no_count(registry):
    """With a cache CpmAnt embeds the prompt again and keeps its keys: not new tokens in a longer sequence."""
    with pytest.raises(flopsreg.ModelError, match=r"run over layer_positions = prompt_length \+ seq_len, not over the seq_len input tokens"):
        registry.evaluate(_model("cpmant"), seq_len=4, cached=8)


def test_a_bidirectional_layer_has_no_cached_prefix_either(registry):
    """Without a prompt the mask alone refuses: the cached tokens would attend to the new ones."""
    model = flopsreg.Model(
        name="bidirectional-only",
        params={"hidden": 64, "heads": 4, "kv_heads": 4, "head_dim": 16},
        kinds={"layer": flopsreg.LayerKind(flags={"full_bidirectional"})},
        plan=flopsreg.Plan(layers=2, cycle=["layer"]),
    )
    assert registry.evaluate(model, seq_len=12).forward > 0
    with pytest.raises(flopsreg.ModelError, match=r"pattern 'full_bidirectional': every query sees every key") as error:
        registry.evaluate(model, seq_len=4, cached=8)
    assert "\n" not in str(error.value)

def test_no_framework_convention_counts_it(registry):
    with pytest.raises(flopsreg.ModelError, match=r"megatron has no term for full_bidirectional"):
        registry.evaluate(_model("cpmant"), seq_len=LONG, convention="megatron")


# -- Reformer (local layers only) ----------------------------------------------------------------

REFORMERS = [name for name in MODELS if RECORD["models"][name]["config"]["model_type"] == "reformer"]
EAGER_LOCAL = flopsreg.Pattern(
    name="eager_local_chunks",
    slot="attention.mask",
    flags={"eager"},
    precedence=1001,
    params=(LOCAL_CHUNK, CHUNKS_BEFORE),
    produces="pairs",
    # LocalSelfAttention over a padded length: full scores while it fits one chunk, else every
    # chunk of C queries against its own and the B chunks before (wrapped round at chunk 0), then masked
    formula=sympy.Piecewise((s**2, s <= LOCAL_CHUNK.symbol), (s * (CHUNKS_BEFORE.symbol + 1) * LOCAL_CHUNK.symbol, True)),
    summary="LocalSelfAttention's scores before masking",
    reference="transformers 5.24 LocalSelfAttention.forward",
)


def _padded(config: dict, seq_len: int) -> int:
    """ReformerModel.forward's padding: to a multiple of the chunk length once longer than one chunk."""
    chunk = config["local_attn_chunk_length"]
    return seq_len if seq_len <= chunk or seq_len % chunk == 0 else seq_len + chunk - seq_len % chunk


@pytest.mark.parametrize("name", REFORMERS)
def test_reformer_counts_the_real_positions_and_flop_counter_mode_adds_the_padding_and_masked_scores(registry, name):
    """flopsreg counts useful work: the layers over the s real positions, each query's keys in its
    chunk and the B before, up to itself. FlopCounterMode also counts the padded positions every
    layer runs over and every score of the chunks before masking; the head reads the s real ones."""
    entry, model = RECORD["models"][name], _model(name)
    eager = make_eager_registry(EAGER_LOCAL)
    for length, recorded in entry["totals"].items():
        seq_len = int(length)
        exact = registry.evaluate(model, seq_len=seq_len)
        assert exact.slot_flops["head"] == 2 * seq_len * (2 * 44) * 97  # two streams of 44 into the logits
        padded = _padded(entry["config"], seq_len)
        layers = eager.select(model, convention="eager").kinds[0]
        assert len(model.layers) * layers.total(padded) + exact.slot_flops["head"] == recorded, length
        assert exact.forward < recorded


@pytest.mark.parametrize("name", REFORMERS)
def test_reformer_layers_modules_equal_the_recorded_ones_at_an_unpadded_length(registry, name):
    """24 is a multiple of the chunk (8): no padding, so each projection and FFN is what torch counted."""
    modules, model = RECORD["models"][name]["modules"], _model(name)
    flops = registry.select(model).kinds[0].flops(LONG)
    attention = "reformer.encoder.layers.0.attention"
    assert flops["attention.query"] == modules[f"{attention}.self_attention.query"]
    assert flops["attention.projection"] == modules[f"{attention}.self_attention.key"] + modules[f"{attention}.self_attention.value"]
    assert flops["attention.output"] == modules[f"{attention}.output.dense"]
    assert flops["mlp"] == modules["reformer.encoder.layers.0.feed_forward"]


@pytest.mark.parametrize("name", REFORMERS)
@pytest.mark.parametrize("seq_len", [1, 5, 8, 9, 13, 16, 24, 31, 40, 57])
def test_reformer_pairs_are_what_a_literal_loop_over_its_causal_chunks_lets_through(registry, name, seq_len):
    """LocalSelfAttention's mask, literally: key k is in chunk i - B .. i of query q's chunk i (i - b
    wraps round at chunk 0 in transformers: those keys are later, so causally masked) and k <= q."""
    config = RECORD["models"][name]["config"]
    chunk, before = config["local_attn_chunk_length"], config["local_num_chunks_before"]
    attended = sum(1 for q in range(seq_len) for k in range(seq_len) if k <= q and q // chunk - before <= k // chunk)
    unit = registry.select(_model(name)).kinds[0]
    assert compile_exact(unit.quantities["pairs"])({**unit.params, "seq_len": seq_len}) == attended


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attn_layers": ["local", "lsh"]}, r"attn_layers = \['local', 'lsh'\]: an 'lsh' layer buckets keys by hashing the data"),
        ({"is_decoder": False}, r"is_decoder = false: ReformerModelWithLMHead runs only as a causal decoder"),
        ({"local_num_chunks_after": 1}, r"local_num_chunks_after: a causal Reformer looks at no later chunk"),
        ({"axial_pos_embds_dim": [20, 20]}, r"axial_pos_embds_dim = \[20, 20\]: expected one width per axis"),
    ],
)
def test_reformer_refuses_what_it_cannot_count_by_name(change, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        _model("reformer", **change)


def test_reformer_class_defaults_are_refused_as_transformers_refuses_them():
    """ReformerConfig's defaults have lsh layers (refused here) and is_decoder false (refused by
    ReformerModelWithLMHead); the built defaults change exactly those two keys."""
    built = RECORD["built_defaults"]["reformer"]["config"]
    changed = {key for key, value in RECORD["defaults"]["reformer"]["config"].items() if built.get(key) != value}
    assert changed == {"attn_layers", "is_decoder"}
    assert RECORD["defaults"]["reformer"]["error"].startswith("AssertionError: If you want to use `ReformerModelWithLMHead`")
    with pytest.raises(flopsreg.ModelError, match=r"an 'lsh' layer"):
        flopsreg.Model.from_hf_config(RECORD["defaults"]["reformer"]["config"])
