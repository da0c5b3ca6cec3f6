"""Chunked causal attention (Llama 4): a query sees keys from the start of its chunk to itself."""

import sympy

from flopsreg.plugin import Param, Pattern, hookimpl, s

CHUNK = Param(
    name="chunk",
    latex="C",
    meaning="tokens per attention chunk; chunks start at positions 0, C, 2C, ... (attention_chunk_size)",
)
C = CHUNK.symbol
_rest = sympy.Mod(s, C)

CHUNKED = Pattern(
    name="chunked",
    slot="attention.mask",
    flags={"chunked"},
    precedence=30,
    produces="pairs",
    params=(CHUNK,),
    formula=sympy.floor(s / C) * C * (C + 1) / 2 + _rest * (_rest + 1) / 2,
    provides={"kv_tokens": sympy.Min(s, C)},  # the keys of the current chunk, at most C (vLLM's chunked local attention holds a chunk)
    latex=r"\left\lfloor s/C \right\rfloor \frac{C(C+1)}{2} + \frac{r(r+1)}{2},\ r = s \bmod C",
    summary="causal within aligned chunks of C tokens: floor(s/C) C(C+1)/2 + r(r+1)/2, r = s mod C",
    reference="Meta 2025, Llama 4 (Hugging Face Llama4TextConfig.attention_chunk_size)",
)


@hookimpl
def flopsreg_register_patterns():
    return [CHUNKED]
