"""What several built-in Hugging Face family readers share (private: not a plugin)."""

from flopsreg.patterns.hf_layer_types import FULL, SLIDING
from flopsreg.readers.fields import Fields

GATED_LM = frozenset({"gated", "lm_head"})  # every built-in family: gated MLPs and a logits head


def family(model_type: str) -> str:
    """The family flag of a ``model_type``, which its reader gives every model it reads (``HFReader.flags``):
    what conventions of systems that dispatch on ``config.model_type`` (verl) select by."""
    return f"hf_{model_type}"


def silu_gated(c: Fields) -> frozenset[str]:
    """GATED_LM, plus ``swiglu`` when the gate is SiLU (SwiGLU; the config classes default to it).

    Exact counting is the same for every gated MLP; the flag matters to the megatron convention,
    which counts 3 FFN matmuls only for runs with --swiglu.
    """
    return GATED_LM | {"swiglu"} if c.string("hidden_act", "silu") == "silu" else GATED_LM


def alternating(c: Fields, layers: int) -> list[str]:
    """``layer_types`` if given, else HF's default for Gemma 2 and GPT-OSS: layer i slides iff (i + 1) % 2 != 0."""
    given = c.layer_types(layers, (SLIDING, FULL))
    return given or [SLIDING if (i + 1) % 2 != 0 else FULL for i in range(layers)]
