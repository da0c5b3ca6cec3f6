"""A new architecture is one plugin package: tests/plugin_package, installed through its entry point.

The package (``flopsreg-pooled``) adds a Hugging Face model type with a new layer type, a new
mask pattern with its own LaTeX, a new quantity and a new slot, and touches nothing in flopsreg.
It is pip-installed into a temporary folder; the command line, run with that folder on its path
and plugin autoloading on, must read the family's config.json and count it, explain it, print its
formula and compare it. Expected numbers are written out here, pairs counted by brute force.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flopsreg.plugins.testing import check_mask_pattern

pytestmark = pytest.mark.slow  # every test here runs pdflatex or pip

PACKAGE = Path(__file__).parents[1] / "plugin_package"
CONFIG = PACKAGE / "config.json"

# config.json: hidden 64, 4 heads / 2 kv heads of 16, layers pooled, pooled, pooled, full;
# blocks of 8 tokens; gated MLP of 128; vocabulary 1000.
H, N_H, N_KV, D, F, V, POOL = 64, 4, 2, 16, 128, 1000, 8


def pooled_pairs(s: int, pool: int) -> int:
    """Query q sees the pooled blocks j with (j + 1) * pool <= q + 1: counted one by one."""
    return sum(1 for q in range(s) for j in range(s) if (j + 1) * pool <= q + 1)


def forward(s: int) -> int:
    """Forward FLOPs of one sequence of s tokens, matmul by matmul."""
    projections = 2 * s * H * (N_H * D) + 2 * (2 * s * H * (N_KV * D)) + 2 * s * (N_H * D) * H
    mlp = 3 * 2 * s * H * F
    core = lambda pairs: 2 * N_H * (D + D) * pairs  # noqa: E731 - QK^T and PV over the pairs
    blocks = s // POOL
    pooling = 2 * 2 * blocks * N_KV * (POOL * D) * D  # keys and values, (B d -> d) per kv head
    pooled_layer = projections + mlp + core(pooled_pairs(s, POOL)) + pooling
    full_layer = projections + mlp + core(s * (s + 1) // 2)
    return 3 * pooled_layer + full_layer + 2 * s * H * V


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """The environment of a process that has the package installed and loads installed plugins."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(PACKAGE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {key: value for key, value in os.environ.items() if key != "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join([str(target), *filter(None, [env.get("PYTHONPATH")])])
    return env


def flopsreg(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "flopsreg", *argv], capture_output=True, text=True, env=env, timeout=120, cwd=PACKAGE.parent
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # no plugin skipped, no warning
    return done


def test_the_pooled_mask_counts_the_pairs_its_mask_allows():
    import flopsreg_pooled  # tests/plugin_package is on pytest's pythonpath (pyproject.toml)

    pooled = flopsreg_pooled.KEY_POOLING.provides["pooled_blocks"]  # floor(s / B), from the pooling slot
    check_mask_pattern(
        flopsreg_pooled.POOLED_CAUSAL,
        lambda q, j, p: (j + 1) * p["pool"] <= q + 1,
        params=[{"pool": pool} for pool in range(1, 8)],
        max_len=30,
        quantities={flopsreg_pooled.POOLED_BLOCKS.symbol: pooled},
    )


def test_eval_reads_the_new_family_through_the_installed_entry_point(installed):
    data = json.loads(flopsreg(installed, "eval", str(CONFIG), "--seq-len", "64", "--format", "json").stdout)
    assert data["forward_flops"] == str(forward(64)) == "28170240"
    pooled, full = data["kinds"]
    assert pooled["kind"] == "pooled" and pooled["layers"] == [{"first": 0, "last": 2, "step": 1}]
    assert pooled["patterns"]["attention.mask"] == "pooled_causal"
    assert pooled["patterns"]["attention.pooling"] == "key_pooling"
    assert full["patterns"]["attention.mask"] == "full_causal" and "attention.pooling" not in full["patterns"]


def test_explain_formula_compare_and_patterns_show_it(installed):
    explained = flopsreg(installed, "explain", str(CONFIG)).stdout
    assert "attention.mask: pooled_causal (flag pooled_keys set; pooled_causal 40 > full_causal 10)" in explained
    latex = flopsreg(installed, "formula", str(CONFIG), "--format", "latex").stdout
    assert r"B \binom{m}{2} + m\,(s - mB + 1)" in latex  # the pattern's own LaTeX
    compared = flopsreg(installed, "compare", str(CONFIG), "--seq-len", "64").stdout
    # slime would count every layer as causal, s^2/2 = 2048 pairs, against the pooled layers' 232: it has no
    # term for the plugin's mask (Convention.counts), so compare says it cannot count the model, and why
    assert "layers 0-2 (kind 'pooled'), slot attention.mask: slime has no term for pooled_causal" in compared
    assert f"attention.core {2048 / pooled_pairs(64, POOL):.5g}x exact" not in compared
    listed = json.loads(flopsreg(installed, "patterns", "--format", "json").stdout)
    plugin = {p["name"]: p["plugin"] for p in listed}
    assert plugin["pooled_causal"] == plugin["key_pooling"] == "pooled (flopsreg-pooled)"


def test_without_the_package_the_model_type_is_refused_by_name(installed):
    env = {**installed, "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "flopsreg", "eval", str(CONFIG), "--seq-len", "64"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2 and "model_type = 'pooledformer': unsupported" in done.stderr, done.stderr
