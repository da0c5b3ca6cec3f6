"""The hf_trainer convention and its drop-in, against transformers' Trainer.

transformers 5.24.0's ``Trainer.floating_point_ops`` and ``PreTrainedModel.num_parameters`` are
copied verbatim below (trainer.py and modeling_utils.py; the 4-bit branch left out, as no
quantised model is counted here), run on minimal stand-ins; the parameter counts they multiply are
transformers' own, measured by tests/data/hf_trainer/measure.py (trainer.json) for every config of
tests/data/hf, never computed by flopsreg.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as NS

import attrs
import pytest
from plugins_for_tests import two_map_attention

import flopsreg
from flopsreg.integrations.hf_trainer import floating_point_ops

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_trainer" / "trainer.json").read_text())
CONFIGS = {p.stem: p for folder in (DATA / "hf", DATA / "hf_params" / "configs") for p in folder.glob("*.json")}


# ---- verbatim from transformers 5.24.0 ----------------------------------------------------------
class Trainer:
    def __init__(self, model):
        self.model = model

    def floating_point_ops(self, inputs):
        if (main_input := getattr(self.model, "main_input_name", "input_ids")) in inputs and hasattr(
            self.model, "num_parameters"
        ):
            return 6 * inputs[main_input].numel() * self.model.num_parameters(exclude_embeddings=True)
        return 0


class nn:  # noqa: N801 (stands in for torch.nn)
    class Embedding:
        pass


def num_parameters(self, only_trainable: bool = False, exclude_embeddings: bool = False) -> int:
    if exclude_embeddings:
        embedding_param_names = [
            f"{name}.weight" for name, module_type in self.named_modules() if isinstance(module_type, nn.Embedding)
        ]

    total_params = 0
    for name, param in self.named_parameters():
        if exclude_embeddings and name in embedding_param_names:
            continue
        if param.requires_grad or not only_trainable:
            total_params += param.numel()

    return total_params
# ---- end of the verbatim copy ---------------------------------------------------------------------


class Ids:
    def __init__(self, batch, length):
        self.shape = (batch, length)

    def numel(self):
        return self.shape[0] * self.shape[1]


class Recorded:
    """A model whose num_parameters(exclude_embeddings=True) is the one transformers measured."""

    main_input_name = "input_ids"

    def __init__(self, non_embedding):
        self.non_embedding = non_embedding

    def num_parameters(self, exclude_embeddings=False):
        assert exclude_embeddings
        return self.non_embedding


def decoder(name, registry):
    """The text decoder measure.py built: from the text_config, or (Kimi-K2.6, whose text model_type
    kimi_k2 only its wrapper reads) the whole config with no vision tower."""
    config = json.loads(CONFIGS[name].read_text())
    if name == "kimi-k2.6":
        model = flopsreg.Model.from_hf_config(config, registry=registry)
        return attrs.evolve(model, params={**model.params, "vision_parameters": 0})
    if "text_config" in config:
        config = {**config["text_config"], "model_type": config["text_config"].get("model_type", config["model_type"])}
    return flopsreg.Model.from_hf_config(config, registry=registry)


@pytest.mark.parametrize("name", sorted(RECORD["models"]))
def test_trainer_total_flos_to_the_digit(registry, name):
    """Every recorded config: flopsreg's hf_trainer count of a (2 x 512) batch is the Trainer's."""
    expected = Trainer(Recorded(RECORD["models"][name]["non_embedding"])).floating_point_ops({"input_ids": Ids(2, 512)})
    model = decoder(name, registry)
    assert registry.evaluate(model, seq_len=512, batch=2, convention="hf_trainer").training == expected


@pytest.mark.parametrize("name", sorted(n for n, m in RECORD["models"].items() if "composite" in m and m["composite"]["non_embedding"] != m["non_embedding"]))
def test_a_multimodal_models_vision_tower_is_counted(registry, name):
    """The whole ...ForConditionalGeneration: the Trainer counts its vision tower and projector too;
    flopsreg counts them from the config's vision_config (its tower kinds) as vision_parameters,
    takes them as given where no tower is read, and otherwise refuses by name."""
    measured = RECORD["models"][name]
    config = json.loads(CONFIGS[name].read_text())
    whole = flopsreg.Model.from_hf_config(config, registry=registry)
    expected = Trainer(Recorded(measured["composite"]["non_embedding"])).floating_point_ops({"input_ids": Ids(1, 512)})
    assert registry.evaluate(whole, seq_len=512, convention="hf_trainer").training == expected
    unread = attrs.evolve(whole, params={k: v for k, v in whole.params.items() if k != "vision_parameters"}, towers={})
    with pytest.raises(flopsreg.ModelError, match=r"parameter 'vision_parameters' \(parameters of a multimodal model's vision tower"):
        registry.evaluate(unread, seq_len=512, convention="hf_trainer")
    vision = measured["composite"]["non_embedding"] - measured["non_embedding"]
    given = attrs.evolve(unread, params={**unread.params, "vision_parameters": vision})
    assert registry.evaluate(given, seq_len=512, convention="hf_trainer").training == expected


def test_num_parameters_leaves_out_every_embedding_and_a_tied_head_with_it():
    """The verbatim num_parameters on a stand-in module tree: named_parameters yields a tied
    lm_head.weight once, under the embedding's name, so exclude_embeddings drops it too."""
    embedding, linear = nn.Embedding(), object()
    weight = NS(numel=lambda: 100 * 8, requires_grad=True)
    layer = NS(numel=lambda: 8 * 8, requires_grad=True)
    for tied in (False, True):
        head = weight if tied else NS(numel=lambda: 100 * 8, requires_grad=True)
        params = [("model.embed_tokens.weight", weight), ("model.layers.0.proj.weight", layer)] + ([] if tied else [("lm_head.weight", head)])
        model = NS(named_modules=lambda: [("model.embed_tokens", embedding), ("lm_head", linear)], named_parameters=lambda params=params: params)
        assert num_parameters(model, exclude_embeddings=True) == 64 + (0 if tied else 800)


def test_the_drop_in(registry):
    config = json.loads(CONFIGS["qwen3-8b"].read_text())
    inputs = {"input_ids": Ids(4, 1024)}
    expected = Trainer(Recorded(RECORD["models"]["qwen3-8b"]["non_embedding"])).floating_point_ops(inputs)
    assert floating_point_ops(config, inputs, convention="hf_trainer", registry=registry) == expected
    model = flopsreg.Model.from_hf_config(config, registry=registry)
    assert floating_point_ops(model, inputs, registry=registry) == registry.evaluate(model, seq_len=1024, batch=4).training
    with pytest.raises(flopsreg.ModelError, match=r"^inputs\['input_ids'\].shape = \(4,\): expected \(batch, sequence length\)"):
        floating_point_ops(config, {"input_ids": NS(shape=(4,))})
    with pytest.raises(flopsreg.ModelError, match=r"^inputs = list: expected the Trainer's batch, a mapping with 'input_ids'"):
        floating_point_ops(config, [1, 2])


def test_a_plugin_attention_core_counts_as_the_trainer_counts_it():
    """The Trainer counts any model by its parameters: a plugin's core (no weight) adds nothing."""
    with_plugin = flopsreg.Registry(plugins=[two_map_attention], load_entry_points=False)
    base = flopsreg.Model.example("llama-3-8b")
    model = attrs.evolve(base, flags=base.flags | {two_map_attention.FLAG})
    assert with_plugin.evaluate(model, seq_len=64, convention="hf_trainer").training == with_plugin.evaluate(base, seq_len=64, convention="hf_trainer").training
