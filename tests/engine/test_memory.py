"""Registry.memory and ``flopsreg memory``: weights, KV cache and state bytes, each expected value
worked out by hand from the published configs (docs/memory.md repeats the arithmetic), the
weights from transformers' own parameter counts (tests/data/hf_params/params.json)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.engine.cache import Cache
from flopsreg.engine.dtypes import DTYPES, dtype
from flopsreg.engine.peaks import BANDWIDTHS, PEAKS, bandwidth_bytes, device_bandwidth
from flopsreg.errors import ModelError
from flopsreg.patterns.slots import MIXER
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Pattern, h, hookimpl, s

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_params" / "params.json").read_text())["models"]
GIB = 2**30


def transformers_total(name: str) -> int:
    return RECORD[name]["total"]


def test_llama_3_8b_at_128k_in_bf16(registry):
    # 32 layers x 8 kv heads x 128 (head_dim) x 2 (K and V) x 2 bytes = 131,072 bytes per token.
    per_token = 32 * 8 * 128 * 2 * 2
    assert per_token == 131_072
    held = registry.memory(flopsreg.Model.example("llama-3-8b"), seq_len=131_072)
    assert held.kv_cache_bytes == per_token * 131_072 == 16 * GIB
    assert held.weights_bytes == 2 * transformers_total("llama-3-8b")  # 8,030,261,248 weights in bf16
    assert held.state_bytes == 0
    assert held.total_bytes == held.weights_bytes + 16 * GIB


def test_batch_multiplies_the_cache_not_the_weights(registry):
    model = flopsreg.Model.example("llama-3-8b")
    one, four = (registry.memory(model, seq_len=1000, batch=b) for b in (1, 4))
    assert four.kv_cache_bytes == 4 * 1000 * 131_072 and four.weights_bytes == one.weights_bytes


def test_kv_dtype_apart_from_the_weights(registry):
    held = registry.memory(flopsreg.Model.example("llama-3-8b"), seq_len=1000, kv_dtype="fp8")
    assert held.kv_cache_bytes == 1000 * 32 * 8 * 128 * 2 * 1
    assert held.weights_bytes == 2 * transformers_total("llama-3-8b")
    assert (held.weights_dtype, held.kv_dtype, held.state_dtype) == ("bf16", "fp8", "fp8")


def test_gemma_3_sliding_layers_keep_only_their_window(registry):
    # 62 layers: 52 slide over 1024 keys, 10 are global; 16 kv heads x 128 x 2 (K, V) x 2 bytes = 8,192 bytes a token and layer.
    per_layer_token = 16 * 128 * 2 * 2
    model = flopsreg.Model.example("gemma-3-27b")
    held = registry.memory(model, seq_len=131_072)
    assert held.kv_cache_bytes == 52 * per_layer_token * 1024 + 10 * per_layer_token * 131_072
    assert held.kv_cache_bytes == 11_173_625_856  # 10.4 GiB, where 62 global layers would hold 62 GiB
    assert {k.kind: k.kv_cache_bytes for k in held.kinds} == {"local": 436_207_616, "global": 10_737_418_240, "model": 0}
    short = registry.memory(model, seq_len=512)  # below the window every layer holds every token
    assert short.kv_cache_bytes == 62 * per_layer_token * 512


def test_deepseek_v3_keeps_the_mla_latent(registry):
    # 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes = 70,272 bytes a token.
    per_token = 61 * (512 + 64) * 2
    assert per_token == 70_272
    held = registry.memory(flopsreg.Model.example("deepseek-v3"), seq_len=131_072)
    assert held.kv_cache_bytes == per_token * 131_072
    # a GQA cache of its 128 heads of 192 (key) and 128 (value) would be 61 x 128 x (192 + 128) x 2 = 4,997,120 bytes a token
    assert 61 * 128 * (192 + 128) * 2 // per_token == 71


def test_qwen3_next_states_do_not_grow_with_the_context(registry):
    # 36 Gated DeltaNet layers: the state of 32 value heads x 128 x 128, and the conv state of
    # (kernel 4 - 1) x (q, k: 2 x 16 x 128, v: 32 x 128) channels; 12 attention layers of 2 kv heads x 256.
    state_per_layer = (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2
    model = flopsreg.Model.example("qwen3-next-80b-a3b")
    for length in (1, 4096, 262_144):
        held = registry.memory(model, seq_len=length)
        assert held.state_bytes == 36 * state_per_layer == 39_518_208
        assert held.kv_cache_bytes == 12 * 2 * 256 * 2 * 2 * length
    assert registry.memory(model, seq_len=1, state_dtype="fp32").state_bytes == 2 * 39_518_208


def test_deepseek_v4_keeps_a_window_and_compressed_entries(registry):
    # 23 HCA and 20 CSA layers; one shared K = V head of 512; window 128; CSA pools 4 tokens an
    # entry, HCA 128; the CSA indexer keeps a 128-wide key per entry. States: the tokens not yet
    # pooled (up to m - 1, kv and gate, 2 x 512 wide on CSA, 512 on HCA) and CSA's overlap slice.
    s = 131_072
    hca = 512 * (128 + s // 128)
    csa = 512 * (128 + s // 4) + 128 * (s // 4)
    held = registry.memory(flopsreg.Model.example("deepseek-v4-flash"), seq_len=s)
    assert held.kv_cache_bytes == 2 * (23 * hca + 20 * csa) == 868_614_144
    hca_state = 2 * 127 * 512
    csa_state = (2 * 3 * 2 * 512 + 2 * 512) + (2 * 3 * 2 * 128 + 2 * 128)
    assert held.state_bytes == 2 * (23 * hca_state + 20 * csa_state) == 6_340_608


@pytest.mark.parametrize(("name", "layers", "published_gib"), [("gpt-oss-120b", 36, "60.8"), ("gpt-oss-20b", 24, "12.8")])
def test_gpt_oss_in_mxfp4_reproduces_its_checkpoint(registry, name, layers, published_gib):
    # The experts' matrices (gate_up_proj, down_proj) in MXFP4: 32 elements in 16 bytes + one scale
    # byte; everything else (their biases, the router, attention, embeddings) in bf16.
    by_name = RECORD[name]["by_name"]
    experts = by_name["model.layers.*.mlp.experts.gate_up_proj"] + by_name["model.layers.*.mlp.experts.down_proj"]
    per_layer = experts // layers
    assert per_layer * layers == experts and per_layer % 32 == 0
    expected = layers * per_layer // 32 * 17 + 2 * (transformers_total(name) - experts)
    held = registry.memory(flopsreg.Model.example(name), seq_len=1, experts_dtype="mxfp4")
    assert held.weights_bytes == expected
    # OpenAI's model card (arXiv:2508.10925, table 1) gives the checkpoints' sizes in GiB.
    assert f"{held.weights_bytes / GIB:.1f}" == published_gib
    assert registry.memory(flopsreg.Model.example(name), seq_len=1).weights_bytes == 2 * transformers_total(name)


def test_the_4_bit_formats_count_whole_blocks_with_their_scales():
    assert (dtype("mxfp4", "d").bytes(32), dtype("mxfp4", "d").bytes(33), dtype("mxfp4", "d").bytes(64)) == (17, 34, 34)
    assert (dtype("nvfp4", "d").bytes(16), dtype("nvfp4", "d").bytes(17)) == (9, 18)
    assert [str(DTYPES[n].bits) for n in ("fp32", "bf16", "fp8", "mxfp4", "nvfp4")] == ["32", "16", "8", "17/4", "9/2"]


def test_vllm_pages_round_up_to_16_tokens(registry):
    # vLLM allocates the cache in blocks of 16 tokens: a 1,000-token context takes 63 blocks, 1,008 tokens.
    model = flopsreg.Model.example("llama-3-8b")
    exact = registry.memory(model, seq_len=1000).kv_cache_bytes
    paged = registry.memory(model, seq_len=-(-1000 // 16) * 16).kv_cache_bytes
    assert (exact, paged) == (1000 * 131_072, 1008 * 131_072)


def test_closed_forms_render_in_latex(registry):
    held = registry.memory(flopsreg.Model.example("gemma-3-27b"), seq_len=8)
    text = held.latex()
    assert r"\mathrm{KV}_{\mathrm{local}} &= 2 d_{\mathrm{h}} n_{\mathrm{kv}} \min\left(s, W\right)" in text
    assert text.startswith(r"\begin{align*}") and text.endswith(r"\end{align*}")
    assert held.kinds[0].cache_elements.free_symbols >= {s}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seq_len": 0}, "seq_len = 0: expected an integer >= 1"),
        ({"seq_len": 8, "batch": 1.5}, "batch = 1.5: expected an integer >= 1"),
        ({"seq_len": 8, "kv_dtype": "fp9"}, "kv_dtype: 'fp9': expected a number format"),
        ({"seq_len": 8, "weights_dtype": "bf61"}, "did you mean 'bf16'?"),
    ],
)
def test_bad_arguments_are_one_line(registry, kwargs, message):
    with pytest.raises(ModelError) as info:
        registry.memory(flopsreg.Model.example("llama-3-8b"), **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_experts_dtype_needs_the_routed_part_declared(registry):
    # Mixtral's experts are declared (moe routed_weights); its weights without the experts stay bf16.
    held = registry.memory(flopsreg.Model.example("mixtral-8x7b"), seq_len=1, experts_dtype="fp8")
    by_name = RECORD["mixtral-8x7b"]["by_name"]
    experts = sum(v for k, v in by_name.items() if ".experts." in k)
    assert held.weights_bytes == 2 * (transformers_total("mixtral-8x7b") - experts) + experts


class _ToyMixer:
    """A plugin's token mixer declaring *state* (None: nothing, which memory must name, not count as 0)."""

    def __init__(self, state=None):
        self.state = state

    @hookimpl
    def flopsreg_register_group_selectors(self):
        return [selects_mixer({"toy_mixer"}, "a toy mixer layer")]

    @hookimpl
    def flopsreg_register_patterns(self):
        return [
            Pattern(
                name="toy_mixer_core", slot="mixer.core", flags={"toy_mixer"}, precedence=999, formula=2 * s * h * h,
                weights=h * h, state=self.state, summary="a toy recurrence", reference="tests",
            )
        ]


TOY = (
    'name = "toy"\nflags = ["lm_head"]\n[params]\nhidden = 64\nheads = 4\nvocab = 100\n'
    '[plan]\nlayers = 2\ncycle = ["toy"]\n[kinds.toy]\nflags = ["toy_mixer"]\n'
)


def test_a_mixer_without_a_declared_state_is_named():
    registry = flopsreg.Registry([_ToyMixer()], load_entry_points=False)
    model = flopsreg.Model.from_toml_string(TOY)
    assert registry.evaluate(model, seq_len=8).forward > 0
    with pytest.raises(ModelError) as info:
        registry.memory(model, seq_len=8)
    message = str(info.value)
    assert f"token mixer {MIXER.name!r}" in message and "'toy_mixer_core'" in message and "\n" not in message


def test_a_declared_state_is_counted_and_may_not_grow():
    model = flopsreg.Model.from_toml_string(TOY)
    held = flopsreg.Registry([_ToyMixer(state=h)], load_entry_points=False).memory(model, seq_len=8, batch=3)
    assert held.state_bytes == 2 * 64 * 2 * 3 and held.kv_cache_bytes == 0  # 2 layers x 64 elements x 2 bytes x 3 sequences
    with pytest.raises(ModelError, match="grows with seq_len"):
        flopsreg.Registry([_ToyMixer(state=s * h)], load_entry_points=False).memory(model, seq_len=8)


def test_cli_json_equals_to_dict(registry, capsys):
    status = main(["memory", "llama-3-8b", "--seq-len", "131072", "--kv-dtype", "fp8", "--format", "json"])
    out, _ = capsys.readouterr()
    expected = registry.memory(flopsreg.Model.example("llama-3-8b"), seq_len=131_072, kv_dtype="fp8").to_dict()
    assert status == 0 and json.loads(out) == expected
    assert expected["kv_cache_bytes"] == str(8 * GIB) and expected["kinds"][0]["kind"] == "dense"


def test_cli_text_latex_and_one_line_errors(capsys):
    assert main(["memory", "gpt-oss-20b", "--seq-len", "4096", "--experts-dtype", "mxfp4"]) == 0
    out, _ = capsys.readouterr()
    assert "experts mxfp4" in out and "kv_cache_bytes" in out
    assert main(["memory", "llama-3-8b", "--seq-len", "8", "--format", "latex"]) == 0
    out, _ = capsys.readouterr()
    assert r"\mathrm{KV}_{\mathrm{dense}}" in out
    assert main(["memory", "llama-3-8b", "--seq-len", "8", "--weights-dtype", "mxpf4"]) == 2
    _, err = capsys.readouterr()
    assert "did you mean 'mxfp4'?" in err and len(err.strip().splitlines()) == 1


def test_every_peak_has_its_device_bandwidth(capsys):
    assert {peak.device for peak in PEAKS.values()} == {bw.device for bw in BANDWIDTHS.values()}
    assert all(type(bw.bytes_per_second) is int and bw.source for bw in BANDWIDTHS.values())
    assert bandwidth_bytes("h100-sxm") == bandwidth_bytes("h100-sxm-bf16") == 3_350 * 10**9
    assert bandwidth_bytes("2e12") == 2 * 10**12 and device_bandwidth(PEAKS["tpu-v5e-bf16"]).bytes_per_second == 819 * 10**9
    with pytest.raises(ModelError, match="did you mean 'h200'"):
        bandwidth_bytes("h20")
    assert main(["peaks", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in data] == list(PEAKS) and data[0]["bandwidth"] == str(2_039 * 10**9)
    assert main(["peaks"]) == 0
    out = capsys.readouterr().out
    assert "HBM TB/s" in out and "3,350,000,000,000" in out


def test_the_cli_answers_from_the_cache_as_the_registry_does(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FLOPSREG_CACHE_DIR", str(tmp_path))
    argv = ["memory", "gemma-3-27b", "--seq-len", "131072", "--experts-dtype", "fp8", "--format", "json"]
    outputs = []
    for _ in range(2):
        assert main(argv) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and json.loads(outputs[1])["kv_cache_bytes"] == "11173625856"
    model = flopsreg.Model.example("gemma-3-27b")
    held = Cache.default().holdings(model)
    assert held is not None and held.kinds[0].cache({"seq_len": 4096}) == 16 * 128 * 2 * 1024  # the window caps it
    (entry,) = tmp_path.glob("memory-*.json")
    mac, payload = entry.read_bytes().split(b"\n", 1)
    entry.write_bytes(mac + b"\n" + payload.replace(b'"layers":52', b'"layers":53', 1))  # changed, not re-signed: a miss
    assert Cache.default().holdings(model) is None
    assert main(argv) == 0 and capsys.readouterr().out == outputs[0]  # recomputed and rewritten
    assert Cache.default().holdings(model) is not None


@pytest.mark.slow
def test_a_cached_answer_imports_no_sympy(tmp_path):
    code = (
        "import sys; from flopsreg.cli import main; main(['memory', 'qwen3-next-80b-a3b', '--seq-len', '4096']);"
        "print('sympy' in sys.modules, 'flopsreg.plugins.loader' in sys.modules, file=sys.stderr)"
    )
    env = {**os.environ, "FLOPSREG_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and "39,518,208" in runs[0].stdout
    assert runs[0].stderr.split() == ["True", "True"] and runs[1].stderr.split() == ["False", "False"]
