"""Model files: canonical TOML out, strict TOML in, and the bundled Gemma 3 example.

``Model.from_toml_string(model.to_toml())`` must give the same model back for every plan shape;
reading must reject anything unexpected with a message naming the key path, the value and
what was expected (and the closest valid name for typos).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import flopsreg

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

VALID = """
name = "m"
[params]
hidden = 64
heads = 4
kv_heads = 2
head_dim = 8
[plan]
layers = 4
cycle = ["local", "global"]
[kinds.local]
flags = ["sliding_window"]
params = { window = 16 }
[kinds.global]
"""


def gqa(**extra: int) -> dict[str, int]:
    return {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 8, **extra}


# -- round trip ----------------------------------------------------------------------------------

ROUND_TRIP_MODELS = {
    "uniform": flopsreg.Model.uniform("uniform", layers=3, **gqa()),
    "uniform-flagged-kind": flopsreg.Model.uniform("u2", layers=2, flags={"sliding_window"}, **gqa(window=7)),
    "cycle": flopsreg.Model(
        name="cycle",
        source="https://example.org/config.json",
        params=gqa(),
        kinds={
            "local": flopsreg.LayerKind(flags={"sliding_window"}, params={"window": 1024}),
            "global": flopsreg.LayerKind(),
        },
        plan=flopsreg.Plan(layers=34, cycle=["local"] * 5 + ["global"]),
    ),
    "first-and-cycle": flopsreg.Model(
        name="first+cycle",
        params=gqa(),
        kinds={
            "dense": flopsreg.LayerKind(),
            "chunky": flopsreg.LayerKind(flags={"chunked"}, params={"chunk": 8192}),
            "nope": flopsreg.LayerKind(),
        },
        plan=flopsreg.Plan(layers=10, first=["dense", "dense"], cycle=["chunky", "chunky", "nope"]),
    ),
    "explicit-list": flopsreg.Model(
        name="list",
        params=gqa(),
        kinds={"a": flopsreg.LayerKind(flags={"sliding_window"}, params={"window": 3}), "b": flopsreg.LayerKind()},
        plan=flopsreg.Plan.explicit(["a", "b", "b", "a", "a"]),
    ),
    "model-level-flags": flopsreg.Model(
        name="mla-model",
        flags={"mla", "q_lora"},
        params={"hidden": 64, "heads": 4, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6, "q_lora_rank": 24},
        kinds={"layer": flopsreg.LayerKind()},
        plan=flopsreg.Plan.uniform("layer", 2),
    ),
    "awkward-strings": flopsreg.Model(
        name='quote " backslash \\ no-break\u00a0space é ✓',
        source="line1\nline2\ttab",
        params=gqa(),
        kinds={"kind-with-dash": flopsreg.LayerKind(), "_under": flopsreg.LayerKind()},
        plan=flopsreg.Plan(layers=3, cycle=["kind-with-dash", "_under"]),
    ),
}


@pytest.mark.parametrize("model", ROUND_TRIP_MODELS.values(), ids=ROUND_TRIP_MODELS.keys())
def test_to_toml_round_trips(model):
    text = model.to_toml()
    again = flopsreg.Model.from_toml_string(text)
    assert again == model
    assert [(layer.kind, layer.flags, dict(layer.params)) for layer in again.layers] == [
        (layer.kind, layer.flags, dict(layer.params)) for layer in model.layers
    ]
    assert again.to_toml() == text, "the canonical form is a fixed point"


def test_round_trip_preserves_flops(registry):
    """The re-read model is not just equal: it evaluates to the same count."""
    model = ROUND_TRIP_MODELS["first-and-cycle"]
    again = flopsreg.Model.from_toml_string(model.to_toml())
    assert registry.evaluate(again, seq_len=100).forward == registry.evaluate(model, seq_len=100).forward


def test_round_trip_of_a_non_ascii_parameter_name():
    """Model accepts any string as a parameter name, so to_toml must quote non-ASCII keys."""
    model = flopsreg.Model.uniform("m", layers=1, **{"fenêtre": 4})
    assert flopsreg.Model.from_toml_string(model.to_toml()) == model


def test_round_trip_of_a_name_outside_the_basic_multilingual_plane():
    """json.dumps writes an emoji as a surrogate pair, which TOML rejects; names may hold emoji."""
    model = flopsreg.Model.uniform("llama \U0001f999", layers=1, hidden=8)
    assert flopsreg.Model.from_toml_string(model.to_toml()) == model


_KIND = st.from_regex(r"[A-Za-z_][A-Za-z0-9_\-]{0,6}", fullmatch=True)
_PARAM = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
_FLAG = st.sampled_from(["sliding_window", "chunked", "mla", "q_lora", "made_up_flag"])


def _is_name(text: str) -> bool:
    """What a model may be called: some text, every character printable (see test_api_validation)."""
    try:
        return flopsreg.model.check_name("name", text) == text
    except flopsreg.ModelError:
        return False


@st.composite
def models(draw) -> flopsreg.Model:
    kind_names = draw(st.lists(_KIND, min_size=1, max_size=4, unique=True))
    kinds = {
        name: flopsreg.LayerKind(
            flags=draw(st.sets(_FLAG, max_size=2)),
            params=draw(st.dictionaries(_PARAM, st.integers(-(2**63), 2**63 - 1), max_size=3)),
        )
        for name in kind_names
    }
    shape = draw(st.sampled_from(["list", "cycle"]))
    if shape == "list":
        order = kind_names + draw(st.lists(st.sampled_from(kind_names), max_size=5))
        plan = flopsreg.Plan.explicit(draw(st.permutations(order)))
    else:
        first = draw(st.lists(st.sampled_from(kind_names), max_size=3))
        cycle = [k for k in kind_names if k not in first] or [kind_names[0]]
        plan = flopsreg.Plan(layers=len(first) + len(cycle) + draw(st.integers(0, 6)), first=first, cycle=cycle)
    return flopsreg.Model(
        name=draw(st.text(min_size=1, max_size=20).filter(_is_name)),
        source=draw(st.text(max_size=20)),
        flags=draw(st.sets(_FLAG, max_size=2)),
        params=draw(st.dictionaries(_PARAM, st.integers(-(2**63), 2**63 - 1), max_size=4)),
        kinds=kinds,
        plan=plan,
    )


@settings(max_examples=150, deadline=None)
@given(models())
@example(
    flopsreg.Model(name="\U00010000", source="", kinds={"A": flopsreg.LayerKind()}, plan=flopsreg.Plan.explicit(["A"]))
)
def test_round_trip_property(model):
    """Any structurally valid model (any valid name, big integers, any plan shape) round-trips."""
    assert flopsreg.Model.from_toml_string(model.to_toml()) == model


# -- the bundled example --------------------------------------------------------------------------


def test_bundled_gemma_3_4b_layout():
    """Gemma 3 4B: 34 layers, layer i global iff (i + 1) % 6 == 0 (sliding_window_pattern 6)."""
    model = flopsreg.Model.from_toml(EXAMPLES / "gemma-3-4b.toml")
    assert model.name == "gemma-3-4b"
    assert len(model.layers) == 34
    sliding = [layer.index for layer in model.layers if "sliding_window" in layer.flags]
    glob = [layer.index for layer in model.layers if "sliding_window" not in layer.flags]
    assert len(sliding) == 29
    assert glob == [5, 11, 17, 23, 29]
    assert glob == [i for i in range(34) if (i + 1) % 6 == 0]
    assert all(model.layers[i].params["window"] == 1024 for i in sliding)
    # the window is model-wide too (Megatron-Bridge counts every Gemma layer with it); without the
    # sliding_window flag the global layers stay full causal
    assert all(model.layers[i].params["window"] == 1024 for i in glob)
    assert {k: model.params[k] for k in ("hidden", "heads", "kv_heads", "head_dim")} == {
        "hidden": 2560,
        "heads": 8,
        "kv_heads": 4,
        "head_dim": 256,
    }


def test_bundled_gemma_plans_without_warnings(registry):
    plan = registry.select(flopsreg.Model.from_toml(str(EXAMPLES / "gemma-3-4b.toml")))
    assert plan.warnings == ()
    assert {k.name: k.patterns["attention.mask"] for k in plan.kinds} == {"local": "sliding_window", "global": "full_causal"}


# -- strict reading --------------------------------------------------------------------------------


def replaced(old: str, new: str) -> str:
    assert old in VALID
    return VALID.replace(old, new, 1)


BAD = {
    "unknown-top-key": (VALID.replace("[params]", "[param]"), r"<string>: param: unknown key; did you mean 'params'\?"),
    "unknown-kind-key": (replaced('flags = ["sliding_window"]', 'flag = ["sliding_window"]'), r"kinds\.local\.flag: unknown key; did you mean 'flags'\?"),
    "unknown-plan-key": (replaced("layers = 4", "layres = 4"), r"plan\.layres = 4: unknown key; did you mean 'layers'\?"),
    "undefined-kind": (replaced('"local", "global"]', '"locl", "global"]'), r"plan\.cycle: unknown layer kind 'locl'.*did you mean 'local'\?"),
    "unused-kind": (VALID + "[kinds.extra]\n", r"kinds\.extra is defined but the plan never uses it"),
    "float-param": (replaced("hidden = 64", "hidden = 64.0"), r"params\.hidden = 64\.0: expected an integer, got float"),
    "float-kind-param": (replaced("window = 16", "window = 1024.0"), r"kinds\.local\.params\.window = 1024\.0: expected an integer"),
    "exp-float-param": (replaced("hidden = 64", "hidden = 1e3"), r"params\.hidden = 1000\.0: expected an integer"),
    "string-param": (replaced("hidden = 64", 'hidden = "64"'), r"params\.hidden = '64': expected an integer, got str"),
    "bool-param": (replaced("heads = 4", "heads = true"), r"params\.heads = (True|true): expected an integer, got bool"),
    "float-layers": (replaced("layers = 4", "layers = 4.0"), r"plan\.layers = 4\.0: expected an integer >= 1"),
    "zero-layers": (replaced("layers = 4", "layers = 0"), r"plan\.layers = 0: expected an integer >= 1"),
    "string-flags": (replaced('flags = ["sliding_window"]', 'flags = "sliding_window"'), r"kinds\.local\.flags = 'sliding_window': expected a list of flag names"),
    "name-not-string": (replaced('name = "m"', "name = 5"), r"name = 5: expected a string"),
    "missing-name": (replaced('name = "m"', ""), r"name: missing"),
    "missing-plan": (VALID.replace("[plan]\nlayers = 4\ncycle = [\"local\", \"global\"]\n", ""), r"plan: missing"),
    "missing-kinds": (VALID.split("[kinds.local]")[0], r"kinds: missing"),
    "missing-layers": (replaced("layers = 4\n", ""), r"plan\.layers: missing; how many layers does the cycle plan fill\?"),
    "two-shapes": (replaced("layers = 4", 'layers = 4\nuniform = "local"'), r"plan: give exactly one of uniform, cycle or list \(found uniform, cycle\)"),
    "no-shape": (replaced('cycle = ["local", "global"]', ""), r"plan: give exactly one of uniform, cycle or list \(found none\)"),
    "list-with-layers": (replaced('cycle = ["local", "global"]', 'list = ["local", "global"]'), r"plan\.list: a list names every layer, so it takes no 'first' or 'layers'"),
    "empty-cycle": (replaced('cycle = ["local", "global"]', "cycle = []"), r"plan\.cycle: empty"),
    "cycle-not-list": (replaced('cycle = ["local", "global"]', 'cycle = "local"'), r"plan\.cycle = 'local': expected a list of layer-kind names"),
    "first-too-long": (replaced('cycle = ["local", "global"]', 'cycle = ["local", "global"]\nfirst = ["local", "global", "local", "global", "local"]'), r"plan\.first lists 5 layers but plan\.layers = 4"),
    "kind-not-table": (VALID + "[kinds]\nodd = 3\n", r"kinds\.odd: expected a table, got 3"),
}


@pytest.mark.parametrize(("text", "message"), BAD.values(), ids=BAD.keys())
def test_invalid_model_file_is_a_model_error_naming_key_and_value(text, message):
    with pytest.raises(flopsreg.ModelError, match=message) as info:
        flopsreg.Model.from_toml_string(text)
    assert str(info.value).startswith("<string>: ")
    assert "\n" not in str(info.value)


def test_the_valid_base_text_is_valid():
    """The strict-reading cases each break exactly one thing in a text that is itself valid."""
    model = flopsreg.Model.from_toml_string(VALID)
    assert [layer.kind for layer in model.layers] == ["local", "global"] * 2


def test_invalid_toml_syntax_names_where():
    with pytest.raises(flopsreg.ModelError, match=r"^models/x\.toml: not valid TOML: .*line 2"):
        flopsreg.Model.from_toml_string('name = "m"\nhidden = = 3\n', where="models/x.toml")


def test_invalid_toml_file_names_the_path(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("name = \n", encoding="utf-8")
    with pytest.raises(flopsreg.ModelError, match=r"broken\.toml: not valid TOML"):
        flopsreg.Model.from_toml(path)


def test_semantic_error_in_a_file_names_the_path(tmp_path):
    path = tmp_path / "typo.toml"
    path.write_text(VALID.replace("[params]", "[param]"), encoding="utf-8")
    with pytest.raises(flopsreg.ModelError) as info:
        flopsreg.Model.from_toml(path)
    assert str(info.value).startswith(f"{path}: param: unknown key")


def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nope.toml"
    with pytest.raises(flopsreg.ModelError, match=r"nope\.toml: cannot read model file"):
        flopsreg.Model.from_toml(path)
