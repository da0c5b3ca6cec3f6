"""The recurrent families' token mixers against step-by-step loops (tests/linear_oracles.py) at small sizes:
Mamba1 without norm weights (Mamba, Falcon-Mamba), RWKV-4's WKV, differential attention, Griffin's RG-LRU, xLSTM's mLSTM (its recurrence and its chunked inference path)."""

import linear_oracles as lo
import pytest

import flopsreg

TOKENS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}


def _slots(registry, config: dict, n: int) -> dict[str, int]:
    model = flopsreg.Model.from_hf_config({**TOKENS, **config}, registry=registry)
    (unit, *rest) = registry.select(model).kinds
    assert all(k.flops(n) == unit.flops(n) for k in rest)  # one mixer per layer, alike
    return unit.flops(n)


@pytest.mark.parametrize("model_type", ["mamba", "falcon_mamba"])
@pytest.mark.parametrize("n", [1, 5, 9])
def test_mamba1_scan_is_the_loop(registry, model_type, n):
    config = {"model_type": model_type, "vocab_size": 11, "hidden_size": 6, "state_size": 3, "num_hidden_layers": 2,
              "expand": 3, "conv_kernel": 3, "time_step_rank": 2}
    update, readout = lo.mamba1_recurrent_macs(n, 18, 3)
    assert _slots(registry, config, n)["mixer.core"] == 2 * (update + readout)


@pytest.mark.parametrize("n", [1, 4, 7])
def test_rwkv4_wkv_is_the_loop(registry, n):
    config = {"model_type": "rwkv", "vocab_size": 11, "hidden_size": 6, "num_hidden_layers": 2, "attention_hidden_size": 5,
              "intermediate_size": 7}
    assert _slots(registry, config, n)["mixer.core"] == 2 * lo.rwkv4_recurrent_macs(n, 5)


@pytest.mark.parametrize("n", [1, 3, 6])
def test_differential_attention_is_the_loop(registry, n):
    config = {"model_type": "diffllama", "vocab_size": 11, "hidden_size": 12, "intermediate_size": 8, "num_hidden_layers": 1,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 3}
    assert _slots(registry, config, n)["attention.core"] == 2 * lo.differential_attention_macs(n, 4, 2, 3)


@pytest.mark.parametrize("n", [1, 4, 7])
def test_rglru_gates_and_recurrence_are_the_loop(registry, n):
    config = {"model_type": "recurrent_gemma", "vocab_size": 11, "hidden_size": 6, "intermediate_size": 8, "num_hidden_layers": 2,
              "num_attention_heads": 3, "lru_width": 12, "conv1d_width": 2, "attention_window_size": 4, "block_types": ["recurrent"]}
    assert _slots(registry, config, n)["mixer.core"] == 2 * sum(lo.rglru_recurrent_macs(n, 3, 4))


XLSTM = {"model_type": "xlstm", "vocab_size": 11, "hidden_size": 12, "num_hidden_layers": 2, "num_heads": 3, "qk_dim_factor": 0.5,
         "v_dim_factor": 1.0, "chunk_size": 3, "max_inference_chunksize": 7, "ffn_proj_factor": 1.0, "ffn_round_up_to_multiple_of": 4}


@pytest.mark.parametrize("n", [1, 4, 9])
def test_mlstm_recurrence_is_the_loop(registry, n):
    assert _slots(registry, XLSTM, n)["mixer.core"] == 2 * lo.mlstm_recurrent_macs(n, 3, 2, 4)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 16, 20])
def test_mlstm_chunked_inference_path_is_the_loop(registry, n):
    model = flopsreg.Model.from_hf_config({**TOKENS, **XLSTM}, registry=registry)
    (unit, *_) = registry.select(model, convention="chunked_scan").kinds
    assert unit.flops(n)["mixer.core"] == 2 * sum(lo.mlstm_chunked_macs(n, 3, 2, 4, 3, 7))
