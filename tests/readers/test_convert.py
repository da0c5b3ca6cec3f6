"""flopsreg convert: a config.json becomes an editable model file that counts the same."""

import pytest
from hf_data import DATA

import flopsreg
from flopsreg.cli import main

CONFIGS = sorted(p.stem for p in DATA.glob("*.json"))
LENGTHS = [1000, 4096, 20000]


@pytest.mark.parametrize("name", CONFIGS)
def test_converted_file_evaluates_like_the_config(registry, name, tmp_path, capsys):
    target = tmp_path / f"{name}.toml"
    assert main(["convert", str(DATA / f"{name}.json"), "-o", str(target)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {target}"
    from_config = flopsreg.Model.from_hf_config(DATA / f"{name}.json")
    from_file = flopsreg.Model.from_toml(target)
    assert from_file == from_config
    for length in LENGTHS:
        assert registry.evaluate(from_file, seq_len=length).forward == registry.evaluate(from_config, seq_len=length).forward


def test_convert_to_stdout_with_mtp(registry, capsys):
    assert main(["convert", str(DATA / "deepseek-v3.json"), "--mtp"]) == 0
    text = capsys.readouterr().out
    assert 'mtp = ["moe"]' in text and '"mtp"' in text
    model = flopsreg.Model.from_toml_string(text)
    with_mtp = flopsreg.Model.from_hf_config(DATA / "deepseek-v3.json", blocks=("mtp",))
    assert registry.evaluate(model, seq_len=4096).forward == registry.evaluate(with_mtp, seq_len=4096).forward


def test_edited_file_counts_the_edit(registry, tmp_path, capsys):
    """The point of converting: change a dimension by hand and count again."""
    target = tmp_path / "mistral.toml"
    assert main(["convert", str(DATA / "mistral-7b-v0.1.json"), "-o", str(target)]) == 0
    text = target.read_text(encoding="utf-8")
    assert "window = 4096" in text
    target.write_text(text.replace("window = 4096", "window = 1024"), encoding="utf-8")
    edited = registry.evaluate(flopsreg.Model.from_toml(target), seq_len=8192).forward
    original = registry.evaluate(flopsreg.Model.from_hf_config(DATA / "mistral-7b-v0.1.json"), seq_len=8192).forward
    # only the core changes: 32 layers x 2 heads-widths x pairs difference
    pairs = lambda w: sum(min(q + 1, w) for q in range(8192))  # noqa: E731
    assert original - edited == 32 * 2 * 32 * (128 + 128) * (pairs(4096) - pairs(1024))
