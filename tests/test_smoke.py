"""A first end-to-end check against hand arithmetic (the detailed suites live beside it)."""

from oracles import attention_layer_flops, causal_mask, pairs, sliding_window_mask

import flopsreg


def test_gemma_like_model_matches_hand_arithmetic():
    model = flopsreg.Model.from_toml_string(
        """
        name = "g"
        [params]
        hidden = 2560
        heads = 8
        kv_heads = 4
        head_dim = 256
        [plan]
        layers = 6
        cycle = ["local", "local", "local", "local", "local", "global"]
        [kinds.local]
        flags = ["sliding_window"]
        params = { window = 16 }
        [kinds.global]
        """
    )
    s = 40
    dims = dict(s=s, hidden=2560, heads=8, kv_heads=4, head_dim=256)
    local = attention_layer_flops(**dims, attended_pairs=pairs(sliding_window_mask(s, 16)))
    full = attention_layer_flops(**dims, attended_pairs=pairs(causal_mask(s)))
    result = flopsreg.Registry.default().evaluate(model, seq_len=s, batch=3)
    assert result.forward == 3 * (5 * local + full)
    assert result.training == 3 * result.forward
