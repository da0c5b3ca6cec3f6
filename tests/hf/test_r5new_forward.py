"""2026 model types of brief r5new (issue 21) against real forward passes and parameter counts,
recorded in tests/data/hf_forward/forward_r5new.json: ``dory`` (patterns/hf/dory.py), ``hy_v4``
(patterns/hf/hy_v4.py), ``axk2`` (patterns/hf/axk2.py) and ``minimax_m3_vl_text`` (patterns/hf/minimax_m3.py).

tests/data/hf_forward/measure_r5new.py ran a tiny config of every type (odd widths: hidden 44,
head_dim 12, intermediate 58, vocabulary 97) through transformers 5.24 on the CPU (eager
attention) under torch's FlopCounterMode at two lengths, and recorded the totals, the FLOPs of
every module, the (query, key) pairs each attention call's mask let through and
``sum(p.numel())``; for Dory also the config as ``to_dict`` saves it (``saved``); and, per type,
the class-default config with the parameters of its model built on the meta device (the config
saved as tests/data/hf/<type>-defaults.json). Those numbers come from torch and transformers.
Eager attention and the indexers of HY-V4, A.X K2 and MiniMax-M3 score the whole s x s rectangle, then mask: the ``eager``
convention counts those rectangles, so whole modules compare; the pairs compare with the exact count.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from eager import BLOCK_INDEXER_RECTANGLE, DSA_INDEXER_RECTANGLE
from eager import eager_registry as make_eager_registry
from recorded_forward import forward_at, mlp_per_layer, pairs_per_layer

import flopsreg
from flopsreg.formula.exact import compile_exact
from flopsreg.patterns.block_sparse import BLOCK_TOPK
from flopsreg.patterns.hyper_connections import IHC
from flopsreg.patterns.latent_query_gate import LATENT_GATE_QUERY, LATENT_OUTPUT_GATE
from flopsreg.patterns.norm_gate import BOTH_NORM_GATES, INPUT_NORM_GATE

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_r5new.json").read_text())
TYPES = {"axk2", "dory", "hy_v4", "minimax_m3_vl_text"}
MODELS = sorted(RECORD["models"])
# Each case as the test wrote it and as transformers saves it (Dory's to_dict doubles its counts).
FORMS = [(name, form) for name in MODELS for form in ("config", "saved")]


@pytest.fixture(scope="module")
def eager_registry():
    return make_eager_registry(DSA_INDEXER_RECTANGLE, BLOCK_INDEXER_RECTANGLE)


def _model(name: str, form: str = "config", **changes) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config({**RECORD["models"][name][form], **changes})


def test_every_type_was_recorded_and_ran_and_built_from_its_defaults():
    assert TYPES == {entry["config"]["model_type"] for entry in RECORD["models"].values()} == set(RECORD["defaults"])
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert all("totals" in entry for entry in RECORD["models"].values()), "a model failed to run when recorded"
    assert all("parameters" in entry for entry in RECORD["defaults"].values()), "a class-default model failed to build"


@pytest.mark.parametrize(("name", "form"), FORMS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name, form):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name, form), totals) == totals


@pytest.mark.parametrize(("name", "form"), FORMS)
def test_parameters_equal_what_transformers_allocates(registry, name, form):
    assert registry.parameters(_model(name, form)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize("name", MODELS)
def test_pairs_of_every_attention_call_equal_what_the_masks_let_through(registry, name):
    """One entry per call (the record sorts them by the called layer's index): which layers slide,
    and every recurrent layer once per loop."""
    entry = RECORD["models"][name]
    runs = pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1])
    assert [n for _, n in sorted((_weights_layer(entry["config"], run), n) for run, n in enumerate(runs))] == entry["pairs"]


def _weights_layer(config: dict, run: int) -> int:
    """The index of the decoder layer (its weights) the *run*-th layer call uses, from the config
    alone: Dory's recurrent layers run once per loop, every other type's layers once each."""
    if config["model_type"] != "dory":
        return run
    first, last, layers = config["n_input_layers"], config["n_output_layers"], config["num_hidden_layers"]
    recurrent = layers - first - last
    looped = recurrent * config["n_recurrent_loops"]
    if run < first:
        return run
    if run < first + looped:
        return first + (run - first) % recurrent
    return run - looped + recurrent


@pytest.mark.parametrize("name", MODELS)
def test_each_decoder_layers_mlp_equals_its_module_over_every_run(eager_registry, name):
    """Dense, or router, experts and shared experts. FlopCounterMode adds up the calls of a module:
    a recurrent layer's MLP counts once per loop."""
    entry, length = RECORD["models"][name], RECORD["seq_lens"][-1]
    model = _model(name)
    runs = mlp_per_layer(eager_registry, model, length)
    assert len(runs) == len(entry["pairs"])
    per_weights: dict[int, int] = {}
    for run, flops in enumerate(runs):
        index = _weights_layer(entry["config"], run)
        per_weights[index] = per_weights.get(index, 0) + flops
    recorded = {int(module.split(".")[2]): n for module, n in entry["modules"].items() if module.endswith(".mlp") and module.count(".") == 3}
    assert per_weights == recorded


@pytest.mark.parametrize("model_type", sorted(RECORD["defaults"]))
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    """The saved tests/data/hf/<type>-defaults.json is the recorded class-default config."""
    path = DATA / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
    entry = RECORD["defaults"][model_type]
    assert json.loads(path.read_text()) == entry["config"]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == entry["parameters"]


def _recorded(name: str, *suffixes: str) -> int:
    return sum(n for module, n in RECORD["models"][name]["module_parameters"].items() if module.endswith(suffixes))


def test_dory_ngpt_scales_and_logit_scale_are_the_recorded_vectors(registry):
    """Each layer's lambda_1, lambda_2 (on the layer), sqk, s_gate (on self_attn), suv_gate, suv_up
    (on mlp); the lm_head's logit_scale (lm_head holds its weight and the scale)."""
    slots = registry.parameters(_model("dory")).by_slot()
    layers = RECORD["models"]["dory"]["config"]["num_hidden_layers"]
    own = [f"layers.{i}{part}" for i in range(layers) for part in ("", ".self_attn", ".mlp")]
    assert slots["norms"] == _recorded("dory", *own) == layers * (2 * 44 + 2 * 4 * 12 + 2 * 58)
    assert slots["head.scale"] == _recorded("dory", "lm_head") - 97 * 44 == 97


def test_dory_loops_change_flops_and_keep_parameters(registry, eager_registry):
    """Each further loop runs the 3 recurrent layers once more with the same weights."""
    one, three = _model("dory", n_recurrent_loops=1), _model("dory")
    assert registry.parameters(one).total == registry.parameters(three).total
    length = RECORD["seq_lens"][-1]
    runs = mlp_per_layer(eager_registry, three, length)
    assert len(runs) - len(mlp_per_layer(eager_registry, one, length)) == 2 * 3
    extra = forward_at(eager_registry, three, [str(length)])[str(length)] - forward_at(eager_registry, one, [str(length)])[str(length)]
    looped = sum(RECORD["models"]["dory"]["modules"][f"model.layers.{i}"] for i in (1, 2, 3))  # 3 runs each recorded
    assert extra == looped * 2 // 3


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"n_recurrent_layers": 4}, r"n_recurrent_layers = 4: n_input_layers \(1\) \+ n_recurrent_layers \+ n_output_layers \(2\) must equal num_hidden_layers \(6\)"),
        ({"layer_types": ["sliding_attention"] * 5}, r"layer_types: 5 layer types but num_hidden_layers = 6"),
        ({"layer_types": ["sliding_attention", "mlp"] * 5 + ["mlp", "sliding_attention"]}, r"layer_types: a saved Dory config alternates"),
        ({"layer_types": ["sliding_atention"] * 6}, r"layer_types\[0\] = 'sliding_atention'.*did you mean 'sliding_attention'"),
    ],
)
def test_dory_refuses_sections_and_layer_types_that_do_not_add_up(changes, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        _model("dory", **changes)


def _layer_flops(eager_registry, model: flopsreg.Model, length: int) -> list[dict[str, int]]:
    units = {unit.name: unit for unit in eager_registry.select(model, convention="eager").kinds}
    return [units[layer.kind].flops(length) for layer in model.layers]


@pytest.mark.parametrize("name", ["hy_v4", "hy_v4_lists"])
def test_hy_v4_indexers_gates_and_hyper_connections_per_layer_equal_their_modules(eager_registry, name):
    """The indexer runs on the indexer_types 'full' layers only; gate_proj and both iHC on every layer."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    for i, ours in enumerate(_layer_flops(eager_registry, _model(name), length)):
        at = f"model.layers.{i}"
        assert ours.get("attention.topk_indexer", 0) == modules.get(f"{at}.self_attn.indexer", 0), (name, i)
        assert ours["attention.gate"] == modules[f"{at}.self_attn.gate_proj"], (name, i)
        assert ours["residual_mixer"] == modules[f"{at}.attn_hc"] + modules[f"{at}.ffn_hc"], (name, i)


@pytest.mark.parametrize("name", ["hy_v4", "hy_v4_lists"])
def test_hy_v4_weights_of_the_hyper_connections_sinks_and_indexers(registry, name):
    """iHC: fn (2n x n h), base (2n), scale (2) per sublayer; the head: hc_fn, hc_base, hc_scale;
    sinks: one per head (the parameter on self_attn); the indexers of the 'full' layers."""
    slots = registry.parameters(_model(name)).by_slot()
    assert slots["residual_mixer"] == _recorded(name, "attn_hc", "ffn_hc")
    assert slots["residual_mixer.head"] == _recorded(name, "hc_head")
    assert slots["attention.sinks"] == _recorded(name, "self_attn") == 6 * 4
    indexers = [".self_attn.indexer.wq_b", ".self_attn.indexer.wk", ".self_attn.indexer.k_norm", ".self_attn.indexer.weights_proj"]
    assert slots["attention.topk_indexer"] == _recorded(name, *indexers)


def test_hy_v4_indexer_layers_follow_indexer_types(registry):
    """HYV4Config's default: layer i has an indexer iff i == 0 or (i - 1) % 4 == 0 (layers 0, 1, 5 of 6)."""

    def indexed(config: dict) -> list[int]:
        model = flopsreg.Model.from_hf_config(config)
        return [layer.index for layer in model.layers if "dsa_indexer" in model.kinds[layer.kind].flags]

    assert indexed(RECORD["models"]["hy_v4"]["config"]) == [0, 1, 5]
    assert indexed({**RECORD["models"]["hy_v4"]["config"], "num_hidden_layers": 10}) == [0, 1, 5, 9]
    assert indexed(RECORD["models"]["hy_v4_lists"]["config"]) == [0, 2]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"indexer_types": ["shared"] + ["full"] * 5}, r"indexer_types\[0\] = 'shared': the first layer has no earlier indexer"),
        ({"q_lora_rank": None}, r"q_lora_rank = null: HY-V4's indexer reads the query latent"),
        ({"attention_bias": True}, r"attention_bias = true: the biases it adds to the MLA projections"),
        ({"layer_types": ["full_attention"] * 6}, r"layer_types\[0\] = 'full_attention': model_type hy_v4 runs DeepSeek sparse attention"),
    ],
)
def test_hy_v4_refuses_what_transformers_cannot_run_or_flopsreg_does_not_count(changes, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        _model("hy_v4", **changes)


@pytest.mark.parametrize(("seq_len", "streams", "hidden"), [(1, 2, 3), (5, 3, 4), (7, 4, 2)])
def test_ihc_by_a_literal_loop(seq_len, streams, hidden):
    """Per layer two iHC (around attention, around the MLP); each token's fn multiplies its n h
    features into 2n weights (a multiply and an add each). Weights: fn, base (2n), scale (2)."""
    flops = weights = 0
    for _sublayer in range(2):
        for _token in range(seq_len):
            for _weight in range(2 * streams):
                for _feature in range(streams * hidden):
                    flops += 2
        weights += 2 * streams * streams * hidden + 2 * streams + 2
    at = {"seq_len": seq_len, "hc_mult": streams, "hidden": hidden}
    assert compile_exact(IHC.formula)(at) == flops
    assert compile_exact(IHC.weights)(at) == weights


@pytest.mark.parametrize("name", ["axk2", "axk2_freq"])
def test_axk2_query_gate_and_norm_gates_per_layer_equal_their_modules(eager_registry, name):
    """q_a_proj plus q_gate_proj is the query and the gate slots together; the gate MLPs of the
    gated norms: the input norm on every layer, the post-attention norm on MoE layers only."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model = _model(name)
    for layer, ours in zip(model.layers, _layer_flops(eager_registry, model, length)):
        at = f"model.layers.{layer.index}"
        assert ours["attention.query"] + ours["attention.gate"] == modules[f"{at}.self_attn.q_a_proj"] + modules[f"{at}.self_attn.q_gate_proj"]
        assert ours["attention.topk_indexer"] == modules[f"{at}.self_attn.indexer"]
        gates = modules[f"{at}.input_layernorm"] + modules.get(f"{at}.post_attention_layernorm", 0)
        assert ours["norms.gate"] == gates, (name, layer.index)


@pytest.mark.parametrize("name", ["axk2", "axk2_freq"])
def test_axk2_weights_of_the_query_gate_and_norms(registry, name):
    """q_gate_proj splits into the query (heads x 12 columns) and the gate (heads x 10) over 2 x 20
    latent features; the norms' scales and their gate MLPs (fc1, fc2) are held apart."""
    slots = registry.parameters(_model(name)).by_slot()
    layers = RECORD["models"][name]["config"]["num_hidden_layers"]
    assert slots["attention.gate"] == layers * 2 * 20 * 4 * 10
    assert slots["attention.query"] + slots["attention.gate"] == _recorded(name, "q_a_proj", "q_a_layernorm", "q_gate_proj")
    assert slots["norms.gate"] == _recorded(name, "mlp.fc1", "mlp.fc2")
    assert slots["norms"] == _recorded(name, "input_layernorm.norm", "post_attention_layernorm.norm", "post_attention_layernorm")


def test_axk2_moe_layers_follow_first_k_dense_replace():
    """AXK2Config pops first_k_dense_replace (default 1) and moe_layer_freq: axk2_freq makes layers 2 and 3 MoE."""

    def moe_layers(config: dict) -> list[int]:
        model = flopsreg.Model.from_hf_config(config)
        return [layer.index for layer in model.layers if "moe" in model.kinds[layer.kind].flags]

    assert moe_layers(RECORD["models"]["axk2"]["config"]) == [1, 2, 3]
    assert moe_layers(RECORD["models"]["axk2_freq"]["config"]) == [2, 3]
    assert moe_layers({**RECORD["models"]["axk2"]["config"], "moe_layer_freq": 2}) == [2]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"q_lora_rank": None}, r"q_lora_rank = null: AXK2Config requires it"),
        ({"attention_bias": True}, r"attention_bias = true: the biases it adds to A.X K2's MLA"),
        ({"layer_types": ["full_attention"] * 4}, r"layer_types\[0\] = 'full_attention': model_type axk2 runs DeepSeek sparse attention"),
    ],
)
def test_axk2_refuses_what_transformers_cannot_build_or_flopsreg_does_not_count(changes, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        _model("axk2", **changes)


def _matmul_flops(rows: int, inner: int, columns: int) -> int:
    """A literal (rows x inner) @ (inner x columns): a multiply and an add per term."""
    flops = 0
    for _row in range(rows):
        for _column in range(columns):
            for _term in range(inner):
                flops += 2
    return flops


@pytest.mark.parametrize(("seq_len", "hidden", "rank", "heads", "qk", "v"), [(1, 3, 2, 1, 2, 1), (4, 5, 3, 2, 3, 2)])
def test_latent_query_and_gate_by_a_literal_loop(seq_len, hidden, rank, heads, qk, v):
    """q_a_proj (h -> r_q), then q_gate_proj over the 2 r_q features [norm(latent), latent], split
    into heads x qk query columns and heads x v gate columns."""
    at = {"seq_len": seq_len, "hidden": hidden, "q_lora_rank": rank, "heads": heads, "qk_dim": qk, "v_dim": v}
    query = _matmul_flops(seq_len, hidden, rank) + _matmul_flops(seq_len, 2 * rank, heads * qk)
    assert compile_exact(LATENT_GATE_QUERY.formula)(at) == query
    assert compile_exact(LATENT_OUTPUT_GATE.formula)(at) == _matmul_flops(seq_len, 2 * rank, heads * v)
    assert compile_exact(LATENT_GATE_QUERY.weights)(at) + compile_exact(LATENT_OUTPUT_GATE.weights)(at) == (
        hidden * rank + rank + 2 * rank * heads * (qk + v)
    )


@pytest.mark.parametrize(("seq_len", "hidden", "rank"), [(1, 2, 1), (5, 4, 3)])
def test_norm_gates_by_a_literal_loop(seq_len, hidden, rank):
    """Each gate MLP: fc1 (h -> r) then fc2 (r -> h) on every token; one gate, or two on MoE layers."""
    at = {"seq_len": seq_len, "hidden": hidden, "norm_gate_rank": rank}
    one = _matmul_flops(seq_len, hidden, rank) + _matmul_flops(seq_len, rank, hidden)
    assert compile_exact(INPUT_NORM_GATE.formula)(at) == one
    assert compile_exact(BOTH_NORM_GATES.formula)(at) == 2 * one
    assert (compile_exact(INPUT_NORM_GATE.weights)(at), compile_exact(BOTH_NORM_GATES.weights)(at)) == (2 * hidden * rank, 4 * hidden * rank)


@pytest.mark.parametrize("name", ["minimax_m3_vl_text", "minimax_m3_vl_text_local"])
def test_minimax_m3_indexers_per_layer_equal_their_modules(eager_registry, name):
    """The block indexer runs on the minimax_m3_sparse layers only (q_proj, k_proj, the scores)."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    for i, ours in enumerate(_layer_flops(eager_registry, _model(name), length)):
        assert ours.get("attention.topk_indexer", 0) == modules.get(f"model.layers.{i}.self_attn.indexer", 0), (name, i)


def _kept_keys_by_simulation(seq_len: int, block: int, top: int, local: int, rng: random.Random) -> int:
    """MiniMaxM3VLIndexer's selection run literally on random scores: per query, the max-pooled
    score of every block (future blocks -inf), the local blocks boosted to +inf, the top blocks
    kept (ties broken at random), then the causal keys of the kept blocks counted."""
    kept = 0
    for query in range(seq_len):
        own = query // block
        blocks = -(-seq_len // block)
        scores = [rng.random() if b <= own else float("-inf") for b in range(blocks)]
        for back in range(local):
            scores[max(own - back, 0)] = float("inf")
        order = sorted(range(blocks), key=lambda b: (scores[b], rng.random()), reverse=True)[: min(top, blocks)]
        kept += sum(1 for b in order if scores[b] > float("-inf") for key in range(b * block, (b + 1) * block) if key <= query)
    return kept


@pytest.mark.parametrize(("block", "top", "local"), [(1, 1, 1), (3, 2, 1), (4, 2, 2), (5, 3, 1), (2, 6, 3)])
def test_block_topk_pairs_equal_the_selection_run_on_random_scores(block, top, local):
    rng = random.Random(block * 100 + top * 10 + local)
    pairs = compile_exact(BLOCK_TOPK.formula)
    for seq_len in range(1, 31):
        at = {"seq_len": seq_len, "index_block": block, "index_top_blocks": top}
        assert pairs(at) == _kept_keys_by_simulation(seq_len, block, top, local, rng), (seq_len, block, top, local)


def test_minimax_m3_reads_the_legacy_sparse_attention_config_and_moe_layer_freq(registry):
    """The checkpoint's config.json spelling, which MiniMaxM3VLTextConfig maps onto the flat fields."""
    config = {k: v for k, v in RECORD["models"]["minimax_m3_vl_text"]["config"].items() if not k.startswith("index_") and not k.endswith("layer_types")}
    legacy = {
        **config,
        "sparse_attention_config": {
            "sparse_attention_freq": [1, 0, 1], "sparse_num_index_heads": 2, "sparse_index_dim": 8,
            "sparse_block_size": 4, "sparse_topk_blocks": 2, "sparse_local_block": 1,
        },
        "moe_layer_freq": [0, 1, 1],
    }
    model = flopsreg.Model.from_hf_config(legacy)
    assert registry.parameters(model).total == RECORD["models"]["minimax_m3_vl_text"]["parameters"]
    assert pairs_per_layer(registry, model, RECORD["seq_lens"][-1]) == RECORD["models"]["minimax_m3_vl_text"]["pairs"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"index_local_blocks": 0}, r"index_local_blocks = 0: a query's own block is then kept only if its scores win"),
        ({"index_local_blocks": 3}, r"index_local_blocks = 3: .*expected 1 to index_topk_blocks = 2"),
        ({"index_n_heads": 3}, r"index_n_heads = 3: build_block_mask repeats each index head's blocks"),
        ({"layer_types": ["sparse_attention"] * 3}, r"layer_types\[0\] = 'sparse_attention'"),
    ],
)
def test_minimax_m3_refuses_a_data_dependent_selection_and_what_transformers_cannot_run(changes, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        _model("minimax_m3_vl_text", **changes)
