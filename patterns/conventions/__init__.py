"""The framework conventions: one module per framework (Megatron-LM, Megatron-Bridge, slime, verl,
torchtitan, nanoGPT), with their shared rules (``_rules``) and the layers they refuse to count."""
