"""flopsreg against real Hugging Face forward passes, recorded in tests/data/hf_forward.

tests/data/hf_forward/measure.py built a tiny model of every published config in tests/data/hf
(same model_type and layer pattern, small widths), ran one forward pass of the transformers
implementation, and recorded what torch's FlopCounterMode counted and how many (query, key)
pairs the attention mask transformers built for each layer let through. Those numbers come
from torch and transformers, not from flopsreg.
"""

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg.compile import compile_exact
from flopsreg.symbols import s
from test_hf_forward_linear import LINEAR_FAMILY_CONFIGS

RECORD = json.loads((Path(__file__).parent / "data" / "hf_forward" / "forward.json").read_text())
SEQ_LEN = RECORD["seq_len"]
MODELS = sorted(RECORD["models"])


class EagerAttention:
    """A convention for implementation FLOPs of eager attention: QK^T and PV over the full
    s x s rectangle, the mask applied afterwards (what FlopCounterMode sees)."""

    @flopsreg.hookimpl
    def flopsreg_register_conventions(self):
        return [flopsreg.Convention(name="eager", summary="full s x s scores", reference="transformers eager attention")]

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return [
            flopsreg.Pattern(
                name="eager_rectangle",
                slot="attention.mask",
                flags={"eager"},
                precedence=1000,
                produces="pairs",
                formula=s**2,
                summary="every (query, key) pair is computed, then masked",
                reference="transformers eager_attention_forward",
            )
        ]


@pytest.fixture(scope="module")
def eager_registry():
    return flopsreg.Registry(plugins=[EagerAttention()], load_entry_points=False)


def test_the_record_covers_every_published_config():
    # the linear-attention / SSM hybrids are recorded as tiny configs of their own (forward_linear.json)
    published = sorted(p.stem for p in (Path(__file__).parent / "data" / "hf").glob("*.json") if p.stem not in LINEAR_FAMILY_CONFIGS)
    assert MODELS == published
    assert all("flops" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_the_masks_transformers_builds(registry, name):
    """Which layers slide or are chunked, and the window/chunk off-by-ones, against HF's masks."""
    entry = RECORD["models"][name]
    plan = registry.plan(flopsreg.Model.from_hf_config(entry["config"]))
    by_kind = {unit.name: unit for unit in plan.kinds}
    ours = [
        compile_exact(by_kind[layer.kind].quantities["pairs"])({**layer.params, "seq_len": SEQ_LEN})
        for layer in plan.model.layers
    ]
    assert ours == entry["pairs"]


def _all_experts_executed(config: dict) -> int:
    """Llama 4's transformers MoE runs every expert on every token (a dense bmm): the routed
    experts beyond top-k are implementation FLOPs, not model FLOPs. Written out for the test."""
    text = config.get("text_config", config)
    experts, top_k = text["num_local_experts"], text["num_experts_per_tok"]
    moe_layers = len(text["moe_layers"])
    per_expert = 3 * 2 * SEQ_LEN * text["hidden_size"] * text["intermediate_size"]  # gate, up, down
    return moe_layers * (experts - top_k) * per_expert


IMPLEMENTATION_EXTRA = {"llama-4-scout": _all_experts_executed}


@pytest.mark.parametrize("name", MODELS)
def test_every_matmul_equals_what_torch_counted(eager_registry, name):
    """Projections, MLPs, routers, routed and shared experts, MLA, logits: all of them."""
    entry = RECORD["models"][name]
    model = flopsreg.Model.from_hf_config(entry["config"])
    ours = eager_registry.evaluate(model, seq_len=SEQ_LEN, convention="eager").forward
    extra = IMPLEMENTATION_EXTRA.get(name, lambda config: 0)(entry["config"])
    assert ours + extra == entry["flops"]["total"]


def test_exact_counts_fewer_pairs_than_eager_attention_computes(registry, eager_registry):
    """The difference between eager and exact is only the masked-out half of the scores."""
    entry = RECORD["models"]["llama-3-8b"]
    model = flopsreg.Model.from_hf_config(entry["config"])
    exact = registry.evaluate(model, seq_len=SEQ_LEN).forward
    eager = eager_registry.evaluate(model, seq_len=SEQ_LEN, convention="eager").forward
    text = entry["config"]
    layers, heads = text["num_hidden_layers"], text["num_attention_heads"]
    head_dim = text["hidden_size"] // heads  # LlamaConfig: no head_dim given
    masked_out = SEQ_LEN**2 - SEQ_LEN * (SEQ_LEN + 1) // 2
    assert eager - exact == layers * 2 * heads * (head_dim + head_dim) * masked_out
