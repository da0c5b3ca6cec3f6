"""Bounded memory and time whatever the input (issue 19, points 4 and 6): sweeps, Hugging Face
configs of 10**8 layers, block depths of 10**7, deeply nested and ambiguous files, and the
streamed sweep output's bytes."""

import itertools
import json
import random
from fractions import Fraction
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.engine import sweep as sweep_module
from flopsreg.readers.decoder import Layers, shortest_plan
from flopsreg.readers.files import MAX_NESTING, check_nesting

HF = Path(__file__).parent / "data" / "hf"
HUGE = 10**8


def _config(name: str, **changes) -> dict:
    """A recorded config.json with *changes* applied to its decoder (its text_config, if any)."""
    data = json.loads((HF / name).read_text())
    decoder = data["text_config"] if isinstance(data.get("text_config"), dict) else data
    decoder.update(changes)
    return data


def _forward(registry, data: dict, **options) -> int:
    return registry.evaluate(flopsreg.Model.from_hf_config(data, **options), seq_len=4096).forward


# ---- Registry.sweep: bounded, and the streaming form ------------------------------------------


def test_sweep_refuses_a_huge_range_with_its_size_and_points_at_iter_sweep(registry):
    model = flopsreg.Model.example("llama-3-8b")
    with pytest.raises(flopsreg.ModelError, match=r"seq_len: 999,999,999,999 sequence lengths.*at most 16,777,216.*iter_sweep"):
        registry.sweep(model, range(1, 10**12))
    with pytest.raises(flopsreg.ModelError, match=r"999,999,999,999 sequence lengths"):
        registry.sweep(model, range(1, 10**12), dtype=float)
    assert sweep_module.MAX_SWEEP == 2**24


def test_sweep_refuses_an_endless_iterator_after_reading_one_past_the_bound(registry, monkeypatch):
    monkeypatch.setattr(sweep_module, "MAX_SWEEP", 100)
    model = flopsreg.Model.example("llama-3-8b")
    with pytest.raises(flopsreg.ModelError, match=r"more than 100 sequence lengths"):
        registry.sweep(model, itertools.count(1))
    assert len(registry.sweep(model, range(1, 101))) == 100  # exactly the bound: taken
    assert len(registry.sweep(model, iter(range(1, 101)))) == 100
    with pytest.raises(flopsreg.ModelError, match=r"101 sequence lengths"):
        registry.sweep(model, list(range(1, 102)))


def test_iter_sweep_streams_the_exact_values_of_evaluate(registry):
    model = flopsreg.Model.example("gemma-3-4b")
    rows = registry.iter_sweep(model, range(1, 10**12, 999_983), batch=3)  # a million million lengths: streamed
    for n, flops in itertools.islice(rows, 5):
        assert flops == registry.evaluate(model, seq_len=n, batch=3).forward
    endless = registry.iter_sweep(model, itertools.count(1000, 7))  # an iterator is read a chunk at a time
    for n, flops in itertools.islice(endless, sweep_module.CHUNK + 3):
        pass
    assert n == 1000 + 7 * (sweep_module.CHUNK + 2)
    assert flops == registry.evaluate(model, seq_len=n).forward


def test_iter_sweep_checks_its_arguments(registry):
    model = flopsreg.Model.example("gemma-3-4b")
    with pytest.raises(flopsreg.ModelError, match="batch"):
        registry.iter_sweep(model, range(1, 3), batch=0)
    with pytest.raises(flopsreg.ModelError, match="below 1"):
        registry.iter_sweep(model, range(0, 3))
    with pytest.raises(flopsreg.ModelError, match="seq_len: 0 is not a sequence length"):
        list(registry.iter_sweep(model, iter([5, 0])))
    with pytest.raises(flopsreg.ModelError, match="empty"):
        list(registry.iter_sweep(model, iter([])))


# ---- the command line's sweep output: same bytes, computed independently ---------------------

H, HEADS, KV, D, F, V = 4096, 32, 8, 128, 14336, 128256  # Llama 3 8B (examples/llama-3-8b.toml)


def _llama_forward(s: int) -> int:
    """Llama-3-8B forward FLOPs written out: 32 GQA + SwiGLU layers, full causal, untied logits."""
    linear = 2 * s * H * HEADS * D + 2 * 2 * s * H * KV * D + 2 * s * HEADS * D * H + 3 * 2 * s * H * F
    return 32 * (linear + 2 * HEADS * (D + D) * (s * (s + 1) // 2)) + 2 * s * H * V


def _expected_columns(s: int, batch: int, forward: int) -> list[str]:
    per_token = Fraction(forward, batch * s)
    return [str(s), str(forward), str(3 * forward), str(per_token), str(3 * per_token)]


COLUMNS = "seq_len,forward_flops,training_flops,forward_per_token,training_per_token"


@pytest.mark.parametrize("batch", [1, 3, 7])
def test_sweep_csv_rows_are_the_hand_written_values(capsys, batch):
    assert main(["sweep", "llama-3-8b", "--seq-len", "1:5000:7", "--batch", str(batch)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == COLUMNS
    assert len(lines) == 1 + len(range(1, 5001, 7))
    for line, s in zip(lines[1:], range(1, 5001, 7)):
        assert line.split(",") == _expected_columns(s, batch, batch * _llama_forward(s))


def test_sweep_json_and_jsonl_keep_their_format_and_fractions(capsys, registry):
    """gemma-3-4b's sliding layers make fractional per-token values; batch 3 makes some reduce by 3."""
    lengths = [1, 2, 3, 1025, 1026, 1027, 4096, 999_999]
    spec = ",".join(map(str, lengths))
    assert main(["sweep", "gemma-3-4b", "--seq-len", spec, "--batch", "3", "--format", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    keys = COLUMNS.split(",")
    model = flopsreg.Model.example("gemma-3-4b")
    for line, s in zip(lines, lengths, strict=True):
        row = json.loads(line)
        assert json.dumps(row) == line  # ", " and ": " separators, key order, values as json.dumps writes them
        expected = _expected_columns(s, 3, registry.evaluate(model, seq_len=s, batch=3).forward)
        assert list(row) == keys and row == {"seq_len": s, **dict(zip(keys[1:], expected[1:]))}
    assert any("/" in json.loads(line)["forward_per_token"] for line in lines)
    assert main(["sweep", "gemma-3-4b", "--seq-len", spec, "--batch", "3", "--format", "json"]) == 0
    text = capsys.readouterr().out
    assert text == "[\n" + ",\n".join(f"  {line}" for line in lines) + "\n]\n"


def test_sweep_output_over_several_chunks_is_whole(capsys):
    assert main(["sweep", "llama-3-8b", "--seq-len", "1:10000", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["seq_len"] for row in rows] == list(range(1, 10001))
    assert rows[-1]["forward_flops"] == str(_llama_forward(10000))


# ---- Hugging Face configs of 10**8 layers: read in the size of their rule ----------------------


def test_a_periodic_config_of_1e8_layers_reads_as_a_cycle_with_the_right_total(registry):
    """Gemma 3: 5 sliding layers to 1 full. F(6a layers) = head + a x (one period), from two small models."""
    data = lambda n: _config("gemma-3-27b.json", num_hidden_layers=n, layer_types=None)  # noqa: E731
    small, double = _forward(registry, data(6)), _forward(registry, data(12))
    period = double - small
    huge = 100_000_002  # 6 x 16,666,667
    model = flopsreg.Model.from_hf_config(data(huge))
    assert model.plan.layers == huge and len(model.kinds) == 2 and len(model.plan.first) + len(model.plan.cycle) == 6
    assert registry.evaluate(model, seq_len=4096).forward == small - period + (huge // 6) * period


def test_a_dense_prefix_then_moe_config_of_1e8_layers(registry):
    """DeepSeek-V3: first_k_dense_replace dense layers, then MoE: F(n) = F(4) + (n - 4) x (F(5) - F(4))."""
    data = lambda n: _config("deepseek-v3.json", num_hidden_layers=n)  # noqa: E731
    four, five = _forward(registry, data(4)), _forward(registry, data(5))
    model = flopsreg.Model.from_hf_config(data(HUGE))
    assert len(model.kinds) == 2 and model.plan.first == ("dense",) * 3 and model.plan.cycle == ("moe",)
    assert registry.evaluate(model, seq_len=4096).forward == four + (HUGE - 4) * (five - four)


@pytest.mark.parametrize(
    "name, changes",
    [
        ("llama-3-8b.json", {}),
        ("gemma-2-9b.json", {}),
        ("jamba-defaults.json", {}),
        ("qwen2-moe.json", {"decoder_sparse_step": 3, "mlp_only_layers": [0, 4]}),
        ("glm-5.json", {}),
        ("glm-5.3-flash-defaults.json", {"layer_types": None, "mlp_layer_types": None, "indexer_types": None}),
        ("qwen3-next-80b-a3b.json", {"layer_types": None}),
        ("olmo-hybrid-7b-defaults.json", {"layer_types": None}),
        ("gpt-oss-20b.json", {"layer_types": None}),
    ],
)
def test_configs_of_1e8_layers_read_as_few_kinds(registry, name, changes):
    """The total is affine in the number of periods: F(p + 2k) - F(p + k) = F(p + k) - F(p) for a
    period k past the prefix, checked at 10**8 + a multiple against small models."""
    data = lambda n: _config(name, num_hidden_layers=n, **changes)  # noqa: E731
    model = flopsreg.Model.from_hf_config(data(HUGE))
    plan = model.plan
    assert len(model.kinds) <= 4 and len(plan.first) <= 8 and len(plan.cycle) <= 12
    period, start = len(plan.cycle), len(plan.first)
    base = start + period * 2  # small models with the same prefix and whole periods
    a, b = _forward(registry, data(base)), _forward(registry, data(base + period))
    huge = base + period * ((HUGE - base) // period)
    assert registry.evaluate(flopsreg.Model.from_hf_config(data(huge)), seq_len=4096).forward == a + (huge - base) // period * (b - a)


def test_a_rule_that_cannot_be_planned_without_listing_1e8_layers_is_one_line():
    """Gemma 4 forces its last layer full: unless 6 divides the layers, only a list of them all says so."""
    data = _config("gemma-4-31b.json", num_hidden_layers=HUGE + 1, layer_types=None)
    with pytest.raises(flopsreg.ModelError, match=r"^config.json: model_type gemma4_text: layer 100,000,000: more than 1,048,576 layers"):
        flopsreg.Model.from_hf_config(data)


def test_an_mtp_depth_of_1e7_costs_what_depth_2_costs(registry):
    data = lambda depth: _config("deepseek-v3.json", num_nextn_predict_layers=depth)  # noqa: E731
    none, one = _forward(registry, data(0)), _forward(registry, data(1), blocks=("mtp",))
    model = flopsreg.Model.from_hf_config(data(10**7), blocks=("mtp",))
    assert len(model.plan.blocks["mtp"]) == 10**7 and model.block_kinds("mtp") == {"moe": (range(61, 61 + 10**7),)}
    assert registry.evaluate(model, seq_len=4096).forward == none + 10**7 * (one - none)
    one_depth = registry.parameters(flopsreg.Model.from_hf_config(data(1), blocks=("mtp",))).blocks["mtp"]
    assert registry.parameters(model).blocks["mtp"] == 10**7 * one_depth  # counted once per kind, not per layer
    text = model.to_toml()
    assert "mtp = { kinds = [\"moe\"], depth = 10000000 }" in text and flopsreg.Model.from_toml_string(text) == model
    two = flopsreg.Model.from_hf_config(data(2), blocks=("mtp",))
    assert two.plan.blocks["mtp"] == ("moe", "moe") and "mtp = [\"moe\", \"moe\"]" in two.to_toml()  # small: listed as before


def test_a_repeated_block_in_a_model_file(registry):
    listed_once = flopsreg.Model.from_hf_config(_config("deepseek-v3.json", num_nextn_predict_layers=1), blocks=("mtp",)).to_toml()
    base = listed_once.replace("mtp = [\"moe\"]", "mtp = { kinds = [\"moe\"], depth = 3 }")
    assert base != listed_once
    listed = flopsreg.Model.from_toml_string(base.replace("{ kinds = [\"moe\"], depth = 3 }", "[\"moe\", \"moe\", \"moe\"]"))
    assert registry.evaluate(flopsreg.Model.from_toml_string(base), seq_len=100).forward == registry.evaluate(listed, seq_len=100).forward
    with pytest.raises(flopsreg.ModelError, match=r"plan.mtp.depth = 0: expected an integer >= 1"):
        flopsreg.Model.from_toml_string(base.replace("depth = 3", "depth = 0"))
    with pytest.raises(flopsreg.ModelError, match=r"plan.mtp.dept: unknown key; did you mean 'depth'"):
        flopsreg.Model.from_toml_string(base.replace("depth = 3", "dept = 3"))


# ---- Layers and the plan they give -----------------------------------------------------------


def _brute_shortest_plan(kinds):
    """Every (prefix, period) by increasing total length: the definition, quadratic."""
    n = len(kinds)
    for total in range(1, n + 1):
        for prefix in range(total):
            period = total - prefix
            if all(kinds[i] == kinds[prefix + (i - prefix) % period] for i in range(prefix, n)):
                return tuple(kinds[:prefix]), tuple(kinds[prefix:total])


def test_shortest_plan_is_the_definition():
    rng = random.Random(19)
    for _ in range(3000):
        unit = [rng.choice("ab") for _ in range(rng.randint(1, 5))]
        kinds = [rng.choice("abc") for _ in range(rng.randint(0, 4))] + unit * rng.randint(1, 4) + unit[: rng.randint(0, len(unit))]
        assert shortest_plan(kinds) == _brute_shortest_plan(kinds), kinds


def test_layers_behave_as_their_list():
    rng = random.Random(7)
    for _ in range(500):
        first = [rng.choice("ab") for _ in range(rng.randint(0, 4))]
        cycle = [rng.choice("ab") for _ in range(rng.randint(1, 4))]
        n = len(first) + rng.randint(0, 30)
        layers = Layers.rule(n, lambda i: first[i] if i < len(first) else cycle[(i - len(first)) % len(cycle)], period=len(cycle), start=len(first))
        listed = [layers[i] for i in range(n)]
        other = [rng.choice("xy") for _ in range(n)]
        assert list(layers) == listed and list(Layers.zip(layers, other)) == list(zip(listed, other))
        assert set(layers.distinct()) == set(listed) and ("a" in layers) == ("a" in listed)
        if n:
            i = rng.randrange(n)
            assert list(layers.replaced(i, "z")) == listed[:i] + ["z"] + listed[i + 1 :]
        first_plan, cycle_plan = Layers.of(listed).plan()
        assert (first_plan, cycle_plan) == _brute_shortest_plan(listed) if n else True


def test_a_plan_of_1e8_layers_is_the_plan_its_start_would_give():
    layers = Layers(first=("d", "d", "s"), cycle=("s", "f", "s", "f"), length=HUGE)
    assert layers.plan() == (("d", "d", "s"), ("s", "f"))
    assert _brute_shortest_plan(list(itertools.islice(layers, 40))) == (("d", "d", "s"), ("s", "f"))


# ---- config.json and model files: strict, and never a RecursionError --------------------------


def _write(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_key_given_twice_is_an_error_naming_it(tmp_path):
    text = (HF / "llama-3-8b.json").read_text().rstrip().rstrip("}") + ',\n  "hidden_size": 2048\n}'
    with pytest.raises(flopsreg.ModelError, match=r"config.json: hidden_size: given 2 times \(4096, then 2048\)"):
        flopsreg.Model.from_hf_config(_write(tmp_path, "config.json", text))


def test_a_nested_key_given_twice_names_its_path(tmp_path):
    data = json.loads((HF / "gemma-3-27b.json").read_text())
    text = json.dumps(data).replace('"text_config": {', '"text_config": {"head_dim": 64, ', 1)
    assert '"head_dim"' in json.dumps(data["text_config"])  # given again below: twice in text_config
    with pytest.raises(flopsreg.ModelError, match=r"text_config.head_dim: given 2 times \(64, then 128\)"):
        flopsreg.Model.from_hf_config(_write(tmp_path, "config.json", text))
    text = '{"model_type": "llama", "x": [1, {"a": 1, "a": 1}]}'
    with pytest.raises(flopsreg.ModelError, match=r"x\[1\].a: given 2 times"):
        flopsreg.Model.from_hf_config(_write(tmp_path, "config.json", text))


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 10**5, 10**6])
def test_json_nested_too_deep_is_one_line(tmp_path, depth, capsys):
    path = _write(tmp_path, "config.json", '{"a": ' * depth + "1" + "}" * depth)
    with pytest.raises(flopsreg.ModelError, match=rf"{path}: nested more than {MAX_NESTING} levels deep"):
        flopsreg.Model.from_hf_config(path)
    path = _write(tmp_path, "config.json", "[" * depth + "]" * depth)
    assert main(["eval", str(path), "--seq-len", "8", "--no-cache"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("value", ["[" * 10**5 + "]" * 10**5, "{a = " * 10**5 + "1" + "}" * 10**5, "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)])
def test_toml_nested_too_deep_is_one_line(value):
    with pytest.raises(flopsreg.ModelError, match=rf"^<string>: nested more than {MAX_NESTING} levels deep"):
        flopsreg.Model.from_toml_string(f'name = "x"\nx = {value}\n')


def test_nesting_up_to_the_cap_is_read():
    check_nesting(json.loads("[" * MAX_NESTING + "]" * MAX_NESTING), "x")
    with pytest.raises(flopsreg.ModelError, match="nested more than"):
        check_nesting(json.loads("[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)), "x")
