"""Learned per-channel scales of the residual stream (Doge's input_residual and
post_attention_residual: residual x scale + sublayer output): weights only, an elementwise product."""

from flopsreg.plugin import Pattern, h, hookimpl

RESIDUAL_SCALES = Pattern(
    name="residual_scales",
    slot="residual_scales",  # declared in slots.py, in the built-in slot order
    flags={"residual_scales"},
    precedence=10,
    formula=0,
    weights=2 * h,
    summary="a learned scale of h on the residual before each of the two sublayers' adds (no matmul)",
    reference="Hugging Face DogeDecoderLayer.input_residual, post_attention_residual (modeling_doge.py)",
)


@hookimpl
def flopsreg_register_patterns():
    return [RESIDUAL_SCALES]
