"""Write flopsreg/readers/transformers_types.json: the model types of the transformers release
installed beside it (every config's model_type, and MODEL_FOR_CAUSAL_LM_MAPPING_NAMES: type ->
class), with the causal-LM types flopsreg leaves out by kind, and those it refuses by name (FLOPs
that depend on the input), marked with the reason.

transformers is not a flopsreg dependency: run this with a Python that has it, after moving to a
new transformers release, then ``python docs/make_hf_configs_table.py``:

    /work/tf-venv/bin/python tools/make_transformers_types.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "flopsreg" / "readers" / "transformers_types.json"

ENCODER = "an encoder (bidirectional attention, a masked-LM model run as a decoder)"
ENCODER_DECODER = "the decoder of an encoder-decoder (cross-attending to an encoder's output)"
SPEECH = "a speech model (an audio encoder feeding the decoder)"
MUSIC = "a music model (audio codebooks, conditioned on a text encoder)"
OCR = "an OCR model (an image encoder feeding the decoder)"

# The causal-LM types left out by kind, with the reason (a phrase after 'is'): flopsreg counts decoder-only language models.
EXCLUDED = {
    **dict.fromkeys(
        [
            "bert", "bert-generation", "big_bird", "camembert", "data2vec-text", "electra", "ernie", "megatron-bert",
            "rembert", "roberta", "roberta-prelayernorm", "roc_bert", "roformer", "xlm", "xlm-roberta",
            "xlm-roberta-xl", "xmod",
        ],
        ENCODER,
    ),
    "xlnet": "an encoder (a permutation language model with two-stream attention over the whole sequence)",
    **dict.fromkeys(
        ["bart", "bigbird_pegasus", "blenderbot", "blenderbot-small", "marian", "mbart", "mvp", "pegasus", "plbart", "prophetnet"],
        ENCODER_DECODER,
    ),
    **dict.fromkeys(["whisper", "moshi", "moss_transcribe_diarize"], SPEECH),
    **dict.fromkeys(["musicgen", "musicgen_melody"], MUSIC),
    **dict.fromkeys(["trocr", "got_ocr2"], OCR),
}

# The causal-LM types whose FLOPs a config does not fix, refused by name with the reason (a phrase
# after 'cannot be counted from its config:'), rather than "not read yet".
REFUSED = {
    "blt": (
        "with its default patching_mode 'entropy' a byte patch ends where a small byte model's next-byte "
        "entropy crosses patching_threshold, so the global transformer's length, and the FLOPs, depend on "
        "the input bytes (and a forward pass may be given patch_lengths of its own)"
    ),
    **dict.fromkeys(
        ["gemma4_assistant", "gemma4_unified_assistant"],
        "a drafter that runs only inside its target model's assisted generation: its forward raises without the "
        "target's shared_kv_states and hidden states, and every layer attends to the target's cached keys and values "
        "(it projects none of its own), so its FLOPs follow the target's context length, which its config does not state",
    ),
    "zaya": (
        "its router picks one of num_experts + 1 classes per token, the last a skip expert with no compute "
        "(ZayaRouter masks it: the token's MLP does nothing), so how many tokens reach an expert, and the FLOPs, "
        "depend on the router's choices (ZayaConfig allows num_experts_per_tok 1 only)"
    ),
}


def build() -> dict:
    """The file's content, from the installed transformers."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    unknown = sorted((set(EXCLUDED) | set(REFUSED)) - set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES))
    if unknown:
        raise SystemExit(f"EXCLUDED or REFUSED names types transformers {transformers.__version__} has no causal LM for: {unknown}")
    causal = {
        name: {
            "class": cls,
            **({"excluded": EXCLUDED[name]} if name in EXCLUDED else {}),
            **({"refused": REFUSED[name]} if name in REFUSED else {}),
        }
        for name, cls in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items())
    }
    return {
        "transformers": transformers.__version__,
        "causal_lm": causal,
        "model_types": sorted(CONFIG_MAPPING_NAMES),
    }


def main(argv: list[str]) -> int:
    """Write the file, or with ``-o PATH`` write it there instead (the test suite compares the two)."""
    target = Path(argv[1]) if argv[:1] == ["-o"] and len(argv) == 2 else TARGET
    target.write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
