"""Hugging Face readers of multimodal wrappers whose language model is a family read elsewhere,
with their towers (patterns/hf/_towers.py) counted beside it: what runs on text-only input is the
language model alone, and ``params`` adds the towers to give transformers' total of the whole model.

``fuyu``: FuyuForCausalLM, a Persimmon language model (its ``text_config``) whose image patches
enter through one linear projection (no image encoder) and an lm_head of its own, untied by default.

``phi4_multimodal``: Phi4MultimodalForCausalLM, a Phi-3 decoder whose config keeps the text fields at
its top level, with an image and an audio embedding (encoders and projections) that run only when
the input holds images or audio. transformers 5.24 builds no LoRA adapter: the vision and speech
LoRA weights of the published checkpoint are applied by PEFT, outside the model class, so they are
neither counted nor run.

``git``: GitForCausalLM, a BERT-style text decoder (learned positions, a LayerNorm after the
embeddings, post-norm blocks with biases, a plain GELU MLP, a biased head) whose config keeps the
text fields at its top level, beside a CLIP image encoder and its projection, which run only when
the input holds an image; on text alone the mask is causal.

``mllama`` and its text config ``mllama_text_model``: the whole model of an ``mllama`` config is
MllamaForConditionalGeneration (vision model and projector as towers); AutoModelForCausalLM builds
MllamaForCausalLM from its text config alone, the path text runs. MllamaTextModel.forward skips every layer of
``cross_attention_layers`` when no image (and no cached cross-attention state) is given, so on
text-only input the decoder that runs is its self-attention layers alone, Llama's: those are the
counted layers, and the skipped cross-attention layers (with the embedding rows past
``vocab_size``) are the ``cross_attention`` part, counted in parameters on text alone; with
images (``images=``), the vision tower's image rule (_mllama_vit.py) adds their FLOPs over each
sequence (the ``cross_attention`` kind's ``sequence_flops``).
"""

import attrs

from flopsreg.patterns.biases import ATTENTION_BIAS, HEAD_BIAS, MLP_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.patterns.hf._towers import (
    FUYU_PROJECTOR,
    GIT_PROJECTOR,
    GIT_VISION,
    MLLAMA_PROJECTOR,
    MLLAMA_VISION,
    PHI4_MULTIMODAL_AUDIO,
    PHI4_MULTIMODAL_VISION,
    mllama_cross_attention,
)
from flopsreg.patterns.hf._traits import FamilyTraits, Positions, window_everywhere
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.norms import DECODER_LAYERNORMS
from flopsreg.plugin import Decoder, Fields, HFReader, HFTower, Layers, gqa_params, hookimpl

# FuyuConfig.__post_init__ ("Hub configs are saved as flat dicts"): without a text_config, these
# top-level keys (its text sub-config's init_kwargs, and the rotary ones) become the persimmon text_config.
FUYU_FLAT = (
    "vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "hidden_act", "initializer_range", "layer_norm_eps", "use_cache", "qk_layernorm", "hidden_dropout", "attention_dropout",
    "eos_token_id", "rope_scaling", "rope_theta",
)

# modeling_phi4_multimodal.py: Phi-3's decoder (fused qkv_proj and gate_up_proj, no biases,
# RMSNorms; every layer slides when sliding_window is set), lm_head untied by default.
PHI4_MULTIMODAL = FamilyTraits(
    name="phi4_multimodal", title="Phi-4-multimodal",
    summary="Phi4MultimodalConfig: Phi-3's decoder; image and audio embeddings beside it", attention=window_everywhere,
)
# modeling_git.py: word and learned position embeddings then a LayerNorm (GitEmbeddings); per layer
# biased query/key/value and attention.output.dense, each sublayer followed by a LayerNorm (post-norm:
# as many LayerNorm weights as pre-norm with a final one); intermediate.dense hidden_act
# output.dense, biased (plain); the output head biased, untied by default; heads of hidden / heads.
GIT = FamilyTraits(
    name="git", title="GIT", summary="GitConfig: a post-norm BERT-style decoder with learned positions and biases; a CLIP image encoder beside it",
    gated=False, activation=("hidden_act", "gelu"), norms=DECODER_LAYERNORMS.flags,
    flags=ATTENTION_BIAS.flags | MLP_BIAS.flags | HEAD_BIAS.flags, positions=Positions(), heads_only=True,
)


def mllama_text(c: Fields) -> Decoder:
    """MllamaTextConfig on text-only input: the self-attention layers (every layer not in
    ``cross_attention_layers``), Llama's, with heads of hidden / heads whatever ``head_dim`` says."""
    layers = c.int("num_hidden_layers")
    # MllamaTextConfig.__post_init__: null is [3, 8, 13, 18, 23, 28, 33, 38]. An index past the last
    # layer builds nothing, and one listed twice builds one layer: both refused, since the
    # cross_attention part counts one layer per entry.
    cross = c.int_list("cross_attention_layers")
    cross = [3, 8, 13, 18, 23, 28, 33, 38] if cross is None else cross
    if len(set(cross)) != len(cross) or any(index >= layers for index in cross):
        raise c.error("cross_attention_layers", f" = {cross!r:.60}: expected distinct layer indices below num_hidden_layers = {layers}")
    # embed_tokens holds vocab_size + 8 rows, lm_head vocab_size: tying them is not a model transformers builds.
    refuse_unless(c, "tie_word_embeddings", False, False, "embed_tokens has 8 rows more than lm_head")
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    counted = layers - len(cross)
    return Decoder(
        params={**gqa_params(c, head_dim=hidden // heads), "vocab": c.int("vocab_size")},
        flags=silu_gated(c) | weight_flags(c, tied=False),
        attention=Layers.uniform(FULL, counted),
        mlps=Layers.uniform("dense", counted),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="fuyu", title="Fuyu", text_config="persimmon", flat_text=FUYU_FLAT, tied_by="wrapper",
            summary="FuyuConfig: the decoder is its persimmon text_config; image patches enter through one linear projection",
            towers=(HFTower(part="projector", kind=FUYU_PROJECTOR, config="text_config"),),
        ),
        attrs.evolve(
            PHI4_MULTIMODAL.reader(),
            towers=(
                HFTower(part="vision", kind=PHI4_MULTIMODAL_VISION, config="vision_config"),
                HFTower(part="audio", kind=PHI4_MULTIMODAL_AUDIO, config="audio_config"),
            ),
        ),
        attrs.evolve(
            GIT.reader(),
            towers=(
                HFTower(part="vision", kind=GIT_VISION, config="vision_config"),
                HFTower(part="projector", kind=GIT_PROJECTOR, config="vision_config"),
            ),
        ),
        HFReader(
            name="mllama_text_model", title="Mllama", read=mllama_text,
            summary="MllamaTextConfig: on text-only input its self-attention layers (Llama's); the cross-attention layers are skipped",
            towers=(HFTower(part="cross_attention", kind=mllama_cross_attention(""), config="cross_attention_layers"),),
        ),
        HFReader(
            name="mllama", title="Mllama", text_config="mllama_text_model",
            summary="MllamaConfig: its mllama_text_model text_config runs text; the vision model and projector beside it",
            towers=(
                HFTower(part="cross_attention", kind=mllama_cross_attention("text_config."), config="text_config"),
                HFTower(part="vision", kind=MLLAMA_VISION, config="vision_config"),
                HFTower(part="projector", kind=MLLAMA_PROJECTOR, config="vision_config"),
            ),
        ),
    ]
