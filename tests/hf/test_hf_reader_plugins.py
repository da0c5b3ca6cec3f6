"""Hugging Face reader plugins: a new model_type and layer type, conflicts, dispatch errors, blocks.

Expected FLOPs are written out by hand from the counting rules (2 FLOPs per multiply-add) with
the attended pairs counted by brute force in tests/oracles.py.
"""

from __future__ import annotations

import json

import oracles
import pytest
from hf_data import path

import flopsreg
from flopsreg import ModelError, PluginWarning
from flopsreg.cli import main
from flopsreg.declarations.readers import HFLayerType, HFReader
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.plugins.loader import default_plugins
from flopsreg.plugins.loader import default_plugins as default_registry
from flopsreg.readers.decoder import Decoder
from flopsreg.readers.fields import Fields, gqa_params
from flopsreg.readers.hf import load_hf_config


def read_tinyformer(c: Fields) -> Decoder:
    """A made-up family: ungated MLPs; ``layer_types`` mixes local and full attention."""
    layers = c.int("num_hidden_layers")
    attention = c.layer_types(layers, ("local_attention", "full_attention")) or ["full_attention"] * layers
    return Decoder(
        params={**gqa_params(c), "vocab": c.int("vocab_size")},
        flags={"lm_head"},
        attention=attention,
        mlps=["dense"] * layers,
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


class Tinyformer:
    """Reads model_type tinyformer, and the layer type local_attention: a window of local_window keys."""

    @flopsreg.hookimpl
    def flopsreg_register_hf_layer_types(self):
        return [
            HFLayerType(
                name="local_attention",
                flags={"sliding_window"},
                params={"window": "local_window"},
                summary="the last local_window keys, the query included",
            )
        ]

    @flopsreg.hookimpl
    def flopsreg_register_hf_readers(self):
        return [
            HFReader(name="tinyformer", read=read_tinyformer, summary="a made-up family for tests"),
            HFReader(name="tinyformer_vl", text_config="tinyformer", summary="a made-up wrapper"),
        ]


TINY = {
    "model_type": "tinyformer",
    "hidden_size": 8,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 4,
    "num_hidden_layers": 2,
    "layer_types": ["local_attention", "full_attention"],
    "local_window": 3,
    "intermediate_size": 16,
    "vocab_size": 10,
}


@pytest.fixture(scope="module")
def tiny_registry():
    return flopsreg.Registry(plugins=[Tinyformer()], load_entry_points=False)


def tiny_forward(s: int) -> int:
    """Written out: per layer q, k, v, o projections, core 2·n_h·(d_qk + d_v)·pairs, a 2-matrix MLP;
    then the logits head."""
    h, heads, kv_heads, d, ffn, vocab = 8, 2, 1, 4, 16, 10
    projections = 2 * s * h * heads * d + 2 * 2 * s * h * kv_heads * d + 2 * s * heads * d * h
    mlp = 2 * 2 * s * h * ffn
    core = 2 * heads * (d + d)
    local, full = oracles.window_pairs(s, 3), oracles.causal_pairs(s)
    return 2 * (projections + mlp) + core * (local + full) + 2 * s * h * vocab


def test_a_plugin_adds_a_model_type_and_a_layer_type(tiny_registry):
    model = flopsreg.Model.from_hf_config(TINY, registry=tiny_registry)
    assert [layer.kind for layer in model.layers] == ["local", "full"]
    assert "sliding_window" in model.layers[0].flags and model.layers[0].params["window"] == 3
    assert "sliding_window" not in model.layers[1].flags
    for s in (1, 3, 5, 17):
        assert tiny_registry.evaluate(model, seq_len=s).forward == tiny_forward(s), s


def test_the_layer_type_parameter_is_required_where_a_layer_has_that_type(tiny_registry):
    cfg = {**TINY, "layer_types": ["full_attention", "local_attention"]}
    del cfg["local_window"]
    with pytest.raises(ModelError) as info:
        load_hf_config(cfg, registry=tiny_registry)
    assert str(info.value) == "config.json: local_window: missing (layers 1 are local_attention)"


def test_a_plugin_wrapper_reads_its_text_config(tiny_registry):
    wrapped = {"model_type": "tinyformer_vl", "text_config": {k: v for k, v in TINY.items() if k != "model_type"}}
    assert load_hf_config(wrapped, registry=tiny_registry).kinds == load_hf_config(TINY, registry=tiny_registry).kinds


def test_a_plugin_readers_models_carry_the_family_flag_of_the_type_the_config_states(tiny_registry):
    """Every model read from a config.json carries hf_<model_type>, with nothing in the reader:
    a wrapper's own type, not its text_config's (what a system dispatching on model_type sees)."""
    assert "hf_tinyformer" in flopsreg.Model.from_hf_config(TINY, registry=tiny_registry).flags
    wrapped = {"model_type": "tinyformer_vl", "text_config": {k: v for k, v in TINY.items() if k != "model_type"}}
    flags = load_hf_config(wrapped, registry=tiny_registry).flags
    assert "hf_tinyformer_vl" in flags and "hf_tinyformer" not in flags


def test_the_default_registry_does_not_know_the_plugin():
    with pytest.raises(ModelError) as info:
        load_hf_config(TINY)
    assert "model_type = 'tinyformer': unsupported" in str(info.value)


def test_unknown_model_type_lists_the_registered_ones_with_the_plugins(tiny_registry):
    with pytest.raises(ModelError) as info:
        load_hf_config({**TINY, "model_type": "tinyformr"}, registry=tiny_registry)
    message = str(info.value)
    assert "model_type = 'tinyformr': unsupported; did you mean 'tinyformer'?" in message
    listed = message.split("(supported: ")[1].rstrip(")").split(", ")
    assert listed == sorted(listed)
    assert {"tinyformer", "tinyformer_vl", "llama", "gemma3", "deepseek_v3"} <= set(listed)
    assert len(listed) == len(default_plugins().hf_readers) + 2  # the built-in model types and the plugin's two


class LlamaImpostor:
    """Claims model_type llama with a reader of its own."""

    @flopsreg.hookimpl
    def flopsreg_register_hf_readers(self):
        return [HFReader(name="llama", read=read_tinyformer, summary="not the real llama")]


def test_a_plugin_claiming_a_registered_model_type_is_skipped_and_named():
    with pytest.warns(PluginWarning, match="LlamaImpostor"):
        reg = flopsreg.Registry(plugins=[LlamaImpostor()], load_entry_points=False)
    (error,) = reg.errors
    assert "plugin 'LlamaImpostor'" in str(error)
    assert "'llama' is already declared by plugin 'flopsreg.patterns.hf.llama'" in str(error)
    assert reg.hf_readers["llama"].read is not read_tinyformer
    assert load_hf_config(path("llama-3-8b"), registry=reg) == load_hf_config(path("llama-3-8b"))


class BothReadAndWrapper:
    @flopsreg.hookimpl
    def flopsreg_register_hf_readers(self):
        return [HFReader(name="odd", read=read_tinyformer, text_config="llama", summary="both")]


def test_a_reader_must_read_or_wrap_not_both():
    with pytest.warns(PluginWarning):
        reg = flopsreg.Registry(plugins=[BothReadAndWrapper()], load_entry_points=False)
    (error,) = reg.errors
    assert "plugin 'BothReadAndWrapper'" in str(error) and "exactly one of read= " in str(error)


class UndeclaredLayerType:
    @flopsreg.hookimpl
    def flopsreg_register_hf_readers(self):
        def read(c: Fields) -> Decoder:
            return Decoder(
                params={**gqa_params(c), "vocab": c.int("vocab_size")},
                flags=(),
                attention=["slidng_attention"],
                mlps=["dense"],
                mlp_kinds={"dense": dense_mlp(4)},
            )

        return [HFReader(name="nolayer", read=read, summary="names a layer type nobody declares")]


def test_a_reader_giving_an_undeclared_layer_type_is_an_error():
    reg = flopsreg.Registry(plugins=[UndeclaredLayerType()], load_entry_points=False)
    with pytest.raises(ModelError) as info:
        load_hf_config({**TINY, "model_type": "nolayer"}, registry=reg)
    assert str(info.value) == (
        "config.json: model_type nolayer's reader gives layer type 'slidng_attention', which no plugin declares; "
        "did you mean 'sliding_attention'? (declare it with flopsreg_register_hf_layer_types)"
    )


# -- blocks ----------------------------------------------------------------------------------------


def test_deprecated_mtp_warns_and_still_counts_the_mtp_layers():
    with pytest.warns(DeprecationWarning, match=r"mtp=\.\.\.\) is deprecated; use blocks=\('mtp',\)"):
        old = flopsreg.Model.from_hf_config(path("deepseek-v3"), mtp=True)
    assert old == load_hf_config(path("deepseek-v3"), blocks=("mtp",))
    assert old.plan.blocks["mtp"] == ("moe",)  # num_nextn_predict_layers = 1


def test_an_unknown_block_name_is_an_error_with_the_closest_one():
    with pytest.raises(ModelError) as info:
        load_hf_config(path("deepseek-v3"), blocks=("mpt",))
    assert str(info.value) == "blocks: 'mpt': no plugin declares that block; did you mean 'mtp'? (declared: mtp)"


def test_the_default_registry_is_loaded_once():
    assert default_registry() is default_registry()
    assert {"llama", "gemma3", "deepseek_v3"} <= set(default_registry().hf_readers)


# -- command line ----------------------------------------------------------------------------------


def test_cli_block_option_is_the_mtp_option(capsys):
    argv = ["eval", str(path("deepseek-v3")), "--seq-len", "64", "--format", "json"]
    assert main([*argv, "--block", "mtp"]) == 0
    with_block = json.loads(capsys.readouterr().out)
    assert main([*argv, "--mtp"]) == 0
    assert json.loads(capsys.readouterr().out) == with_block
    assert main(argv) == 0
    assert int(json.loads(capsys.readouterr().out)["forward_flops"]) < int(with_block["forward_flops"])


def test_cli_block_the_config_does_not_declare_is_an_error(capsys):
    assert main(["eval", "gemma-3-4b", "--seq-len", "8", "--block", "mtp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--block mtp: gemma-3-4b has no mtp layers to count" in err


def test_cli_reads_configs_with_the_plugins_it_loaded(tmp_path, monkeypatch, capsys, tiny_registry):
    file = tmp_path / "config.json"
    file.write_text(json.dumps(TINY))
    monkeypatch.setattr(flopsreg.registry.Registry, "default", classmethod(lambda cls: tiny_registry))
    assert main(["eval", str(file), "--seq-len", "5", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["forward_flops"] == str(tiny_forward(5))


class SameKind:
    """A layer type ``sliding`` whose kind (its name) is the kind of the built-in sliding_attention."""

    @flopsreg.hookimpl
    def flopsreg_register_hf_layer_types(self):
        return [HFLayerType(name="sliding", flags={"sliding_window"}, params={"window": "local_window"}, summary="x")]

    @flopsreg.hookimpl
    def flopsreg_register_hf_readers(self):
        def read(c: Fields) -> Decoder:
            return Decoder(
                params={**gqa_params(c), "vocab": c.int("vocab_size")},
                flags=(),
                attention=c.layer_types(2, ("sliding", "sliding_attention")),
                mlps=["dense"] * 2,
                mlp_kinds={"dense": dense_mlp(4)},
            )

        return [HFReader(name="samekind", read=read, summary="mixes two layer types of one kind")]


def test_two_layer_types_of_one_kind_name_in_a_config_are_an_error():
    assert HFLayerType(name="sliding_attention", flags=(), summary="x").kind == "sliding"
    reg = flopsreg.Registry(plugins=[SameKind()], load_entry_points=False)
    cfg = {**TINY, "model_type": "samekind", "layer_types": ["sliding", "sliding_attention"], "sliding_window": 5}
    with pytest.raises(ModelError) as info:
        load_hf_config(cfg, registry=reg)
    assert str(info.value) == (
        "config.json: layer types 'sliding' and 'sliding_attention' both name layer kind 'sliding'; "
        "give one HFLayerType another kind="
    )


class WiderSliding:
    @flopsreg.hookimpl
    def flopsreg_register_hf_layer_types(self):
        return [HFLayerType(name="sliding_attention", flags={"sliding_window"}, params={"window": "window2"}, summary="x")]


def test_a_plugin_redeclaring_a_layer_type_differently_is_skipped_and_named():
    with pytest.warns(PluginWarning, match="WiderSliding"):
        reg = flopsreg.Registry(plugins=[WiderSliding()], load_entry_points=False)
    (error,) = reg.errors
    assert "'sliding_attention' is already declared by plugin 'flopsreg.patterns.hf.layer_types'" in str(error)
    assert reg.hf_layer_types["sliding_attention"].params == {"window": "sliding_window"}


# -- per_layer_config ---------------------------------------------------------------------------


def _per_layer_plugin():
    from flopsreg.patterns.dense_mlp import dense_mlp as mlp_kind
    from flopsreg.readers.fields import gqa_params

    def read(c):
        layers = c.int("num_hidden_layers")
        return Decoder(
            params={**gqa_params(c), "vocab": c.int("vocab_size")},
            flags={"lm_head"},
            attention=["full_attention"] * layers,
            mlps=["dense"] * layers,
            mlp_kinds={"dense": mlp_kind(c.int("intermediate_size"))},
        )

    class PerLayer:
        @flopsreg.hookimpl
        def flopsreg_register_hf_readers(self):
            return [HFReader(name="widehead", read=read, per_layer={"head_dim": "head_dim"}, summary="test")]

    return PerLayer()


def _wide_config(**extra) -> dict:
    return {
        "model_type": "widehead", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "num_hidden_layers": 4, "intermediate_size": 128, "vocab_size": 100, **extra,
    }


def test_per_layer_config_sets_the_mapped_parameter_on_the_layers_it_names():
    """transformers' per_layer_config {"03": {"head_dim": 32}}: layer 3 has 32-wide heads, the others 16."""
    reg = flopsreg.Registry(plugins=[_per_layer_plugin()], load_entry_points=False)
    model = flopsreg.Model.from_hf_config(_wide_config(per_layer_config={"03": {"head_dim": 32}}), registry=reg)
    assert [layer.params["head_dim"] for layer in model.layers] == [16, 16, 16, 32]
    s, h, n, g = 10, 64, 4, 2

    def layer(d: int) -> int:  # projections (q, k, v, o), core over s(s+1)/2 pairs, plain MLP of 128
        return 2 * s * h * n * d + 2 * (2 * s * h * g * d) + 2 * s * n * d * h + 2 * n * (2 * d) * (s * (s + 1) // 2) + 2 * 2 * s * h * 128

    assert reg.evaluate(model, seq_len=s).forward == 3 * layer(16) + layer(32) + 2 * s * h * 100


@pytest.mark.parametrize(
    ("per_layer", "parts"),
    [
        ({"03": {"head_dims": 32}}, ["per_layer_config['03'].head_dims", "did you mean 'head_dim'", "it reads: head_dim"]),
        ({"07": {"head_dim": 32}}, ["per_layer_config: key '07'", "num_hidden_layers = 4"]),
        ({"03": {"head_dim": "32"}}, ["per_layer_config['03'].head_dim = '32'", "expected an integer"]),
        ({"01": {"skip": ["mlp"]}}, ["per_layer_config['01'].skip", "not read per layer"]),
    ],
)
def test_per_layer_config_attributes_a_reader_does_not_map_are_refused(per_layer, parts):
    reg = flopsreg.Registry(plugins=[_per_layer_plugin()], load_entry_points=False)
    with pytest.raises(flopsreg.ModelError) as info:
        flopsreg.Model.from_hf_config(_wide_config(per_layer_config=per_layer), registry=reg)
    for part in parts:
        assert part in str(info.value), str(info.value)


def test_a_built_in_family_refuses_per_layer_config_it_does_not_read():
    from hf_data import config

    cfg = config("llama-3-8b")
    cfg["per_layer_config"] = {"05": {"head_dim": 256}}
    with pytest.raises(flopsreg.ModelError, match=r"per_layer_config\['05'\]\.head_dim: not read per layer by the llama reader"):
        flopsreg.Model.from_hf_config(cfg)


def test_a_reader_s_flags_mark_its_models_and_a_wrapper_gives_its_own():
    """HFReader.flags: the model_type as the config states it (the family flag verl dispatches on)."""
    text = json.loads(path("gemma-3-4b").read_text())["text_config"]
    assert "hf_gemma3" in flopsreg.Model.from_hf_config(path("gemma-3-4b")).flags
    alone = flopsreg.Model.from_hf_config({**text, "model_type": "gemma3_text"})
    assert "hf_gemma3_text" in alone.flags and "hf_gemma3" not in alone.flags
    wrapped = flopsreg.Model.from_hf_config(path("gemma-3-4b"))
    assert "hf_gemma3_text" not in wrapped.flags


@pytest.mark.parametrize("flags", ["hf_x", [""], ["Hf"]])
def test_reader_flags_are_flag_names(flags):
    with pytest.raises(ValueError, match=r"HFReader.flags = .*: expected a collection of lower_snake_case flag names"):
        HFReader(name="x", read=read_tinyformer, summary="s", flags=flags)


class WrapperAroundWrappers:
    """A wrapper around Llama (read one level down), and one around that (refused)."""

    @flopsreg.hookimpl
    def flopsreg_register_hf_readers(self):
        return [HFReader(name="llama_outer", inner=("inner_config", "llama"), summary="a wrapper around llama"),
                HFReader(name="llama_outer_outer", inner=("inner_config", "llama_outer"), summary="two levels")]


def test_a_wrapper_around_another_reads_its_inner_model_under_its_own_family_flag():
    reg = flopsreg.Registry(plugins=[WrapperAroundWrappers()], load_entry_points=False)
    llama = json.loads(path("llama-3-8b").read_text())
    outer = load_hf_config({"model_type": "llama_outer", "inner_config": llama}, registry=reg)
    plain = load_hf_config(llama, registry=reg)
    assert outer.flags == (plain.flags - {"hf_llama"}) | {"hf_llama_outer"}
    assert reg.evaluate(outer, seq_len=100).forward == reg.evaluate(plain, seq_len=100).forward
    with pytest.raises(ModelError, match=r"^config.json: inner_config: num_hidden_layers: missing"):
        load_hf_config({"model_type": "llama_outer"}, registry=reg)
    with pytest.raises(ModelError, match=r"of model_type 'llama_outer', itself a wrapper around another \(one level is read\)$"):
        load_hf_config({"model_type": "llama_outer_outer", "inner_config": {}}, registry=reg)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"inner": ("thinker_config",)}, r"expected \(sub-config field, model_type\)"),
    ({"inner": ("thinker_config", "llama"), "text_config": "llama"}, r"give exactly one of read= \(a reader\), text_config= \(a wrapper\) and inner="),
])
def test_a_wrapper_around_another_is_declared_with_one_field_and_model_type(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HFReader(name="odd", summary="odd", **kwargs)
