"""The Megatron-LM argument readers: one module per argument feature, each a built-in plugin."""
