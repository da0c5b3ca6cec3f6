"""The ``hf_trainer`` convention: transformers' ``Trainer`` ``total_flos`` as formulas.

Reproduces huggingface/transformers 5.24.0: ``Trainer.floating_point_ops(inputs)`` (trainer.py)
is ``6 * inputs["input_ids"].numel() * model.num_parameters(exclude_embeddings=True)``, summed
into ``state.total_flos``. ``PreTrainedModel.num_parameters`` (modeling_utils.py) counts each
parameter once (a tied lm_head shares the embedding's, so it is left out with it) and skips the
``weight`` of every ``nn.Embedding`` module: the token embedding, learned position embeddings,
per-layer embedding tables; every other parameter counts, norms, biases, all routed experts and
a composite model's vision tower and projector included. So 6 training FLOPs per token per
non-embedding parameter, and no attention term at all. As formulas: the convention counts per
weight (``Convention.per_weight``), its own patterns drop the embeddings and the attention core
and add a composite model's towers from ``vision_parameters``: the Hugging Face reader sets it
from the towers it reads from the config (docs/hf-configs.md, "Multimodal wrappers: towers");
a model without them (Gemma 3n, a bundled example) needs it given.
"""

from flopsreg.patterns.conventions._rules import PRECEDENCE
from flopsreg.patterns.ngram_ple import NGRAM_DIM, NGRAM_PLE, NGRAM_ROWS
from flopsreg.patterns.per_layer_input import PER_LAYER_EMBEDDING, PLE_DIM, PLE_LAYERS
from flopsreg.plugin import Convention, Param, Pattern, h, hookimpl, s
from flopsreg.plugin import family_flag as family

VERSION = "5.24.0"
SOURCE = (
    "huggingface/transformers trainer.py Trainer.floating_point_ops and modeling_utils.py "
    f"PreTrainedModel.num_parameters(exclude_embeddings=True) (transformers {VERSION})"
)

HF_TRAINER = Convention(
    name="hf_trainer",
    summary="transformers' Trainer total_flos: 6 x num_parameters(exclude_embeddings=True) per token "
    "(every nn.Embedding weight left out, all experts in, vision tower in), no attention term",
    reference=SOURCE,
    per_weight="weights",  # num_parameters: every parameter, all experts
    # counts=None: the Trainer counts any model it trains by its parameters, so any plugin's pattern
    # is counted per weight and a core without weights (attention) counts nothing, as in the Trainer.
)
NAME = HF_TRAINER.name

# Model types whose reader reads a multimodal ...ForConditionalGeneration config: the Trainer
# trains the whole model, vision tower and projector included (flopsreg.readers.towers.TOWER_PARAMETERS).
COMPOSITE = ("gemma3", "gemma3n", "gemma4", "llama4", "kimi_k25", "mistral_large4", "qwen3_5", "qwen3_5_moe", "qwen4_exp")
VISION = Param(
    name="vision_parameters",
    latex=r"N_{\mathrm{vision}}",
    meaning="parameters of a multimodal model's vision tower and projector, less their nn.Embedding weights "
    "(what num_parameters(exclude_embeddings=True) adds to the text decoder's); 0 when training the decoder alone",
    minimum=0,
)

PATTERNS = [
    Pattern(
        name="hf_trainer_embedding",
        slot="embedding",
        flags={NAME, "lm_head"},
        precedence=PRECEDENCE,
        scope="model",
        formula=0,
        summary="hf_trainer: the token embedding is an nn.Embedding, left out (a tied lm_head with it)",
        reference=SOURCE,
    ),
    Pattern(
        name="hf_trainer_learned_positions",
        slot="position_embedding",
        flags={NAME, "learned_positions"},
        precedence=PRECEDENCE,
        scope="model",
        formula=0,
        summary="hf_trainer: a learned position embedding is an nn.Embedding, left out",
        reference=SOURCE,
    ),
    Pattern(
        name="hf_trainer_per_layer_embedding",
        slot="per_layer_embedding",
        flags={NAME, *PER_LAYER_EMBEDDING.flags},
        precedence=PRECEDENCE,
        scope="model",
        params=(PLE_DIM, PLE_LAYERS),
        # The per-layer embedding table is an nn.Embedding; its projection and norm are not.
        formula=2 * s * (h * PLE_LAYERS.symbol * PLE_DIM.symbol + PLE_DIM.symbol),
        summary="hf_trainer: the per-layer embedding table (an nn.Embedding) left out, its projection and norm counted per weight",
        reference=SOURCE,
    ),
    Pattern(
        name="hf_trainer_ngram_ple",
        slot="per_layer_input",
        flags={NAME, *NGRAM_PLE.flags},
        precedence=PRECEDENCE,
        params=NGRAM_PLE.params,
        # Qwen4-Exp's n-gram table is an nn.Embedding: left out; the rest of the PLE layer per weight.
        formula=2 * s * (NGRAM_PLE.weights - NGRAM_ROWS.symbol * NGRAM_DIM.symbol),
        summary="hf_trainer: a PLE layer's n-gram table (an nn.Embedding) left out, its projections, norms and conv per weight",
        reference=SOURCE,
    ),
    Pattern(
        name="hf_trainer_attention",
        slot="attention.core",
        flags={NAME},
        precedence=PRECEDENCE,
        formula=0,
        summary="hf_trainer: no attention term (6 x parameters per token only)",
        reference=SOURCE,
    ),
    Pattern(
        name="hf_trainer_mtp",
        slot="mtp",
        flags={NAME, "mtp"},
        precedence=PRECEDENCE,
        scope="model",
        formula=0,
        summary="hf_trainer: transformers builds no multi-token-prediction layers (their weights are not loaded)",
        reference=SOURCE,
    ),
]
for _type in COMPOSITE:
    PATTERNS.append(
        Pattern(
            name=f"hf_trainer_{_type}_vision_tower",
            slot="embedding",
            flags={NAME, "lm_head", family(_type)},
            precedence=PRECEDENCE + 10 + COMPOSITE.index(_type),
            scope="model",
            params=(VISION,),
            formula=2 * s * VISION.symbol,
            summary=f"hf_trainer ({_type}): the token embedding left out; the vision tower and projector "
            "(vision_parameters) counted per weight, as num_parameters counts them",
            reference=SOURCE,
        )
    )


@hookimpl
def flopsreg_register_conventions():
    return [HF_TRAINER]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
