"""The Hugging Face family readers: one module per family (``model_type``), each a built-in plugin."""
