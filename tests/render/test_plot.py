"""Plots: the numbers drawn are the exact counts, the files are written, bad requests are refused."""

from __future__ import annotations

import sys
from fractions import Fraction

import pytest
from test_cli import gemma_forward

import flopsreg
from flopsreg.cli import main
from flopsreg.model.examples_index import example_names

pytest.importorskip("matplotlib", reason='matplotlib is not installed (pip install "flopsreg[plot]"): the plot tests did not run')

from flopsreg.render import plot  # noqa: E402 - after the skip, which needs matplotlib

GEMMA = flopsreg.Model.example("gemma-3-4b")
MAGIC = {".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}


@pytest.fixture(scope="module")
def registry():
    return flopsreg.Registry.default()


def test_the_stacked_slots_add_up_to_the_hand_count(registry):
    lengths = [1, 1000, 1024, 1025, 4096, 5000]  # around gemma's window of 1024
    stacks = plot.slot_flops(registry.select(GEMMA), lengths, batch=3)
    for i, length in enumerate(lengths):
        assert sum(values[i] for values in stacks.values()) == 3 * gemma_forward(length)
    per_token = plot.slot_flops(registry.select(GEMMA), lengths, batch=3, per_token=True)
    assert [sum(v[i] for v in per_token.values()) for i in range(len(lengths))] == [Fraction(gemma_forward(n), n) for n in lengths]
    forward = ["embedding", "attention.mask", "attention.query", "attention.projection", "attention.core", "mlp", "head"]
    assert [slot for slot in stacks if slot in forward] == forward  # stacked in forward-pass order


def test_long_ranges_are_thinned_keeping_both_ends():
    for seq_len in ("1:131072", range(1024, 200_000, 7), "1000:3000"):
        lengths = plot._lengths(seq_len)
        assert len(lengths) <= plot.MAX_POINTS + 2 and lengths == sorted(set(lengths))
        expected = range(1, 131073) if seq_len == "1:131072" else (seq_len if isinstance(seq_len, range) else range(1000, 3001))
        assert lengths[0] == expected[0] and lengths[-1] == expected[-1] and set(lengths) <= set(expected)
    assert plot._lengths([64, 8, 64, 32]) == [8, 32, 64]
    with pytest.raises(flopsreg.FlopsregError, match="at least two lengths"):
        plot._lengths([4096])


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_every_figure_is_written_in_every_format(tmp_path, registry, suffix):
    figures = {
        "slots": plot.by_slot(GEMMA, "1024:32768", registry=registry, per_token=True),
        "conventions": plot.conventions(GEMMA, "1:32768", registry=registry),
        "models": plot.models([GEMMA, flopsreg.Model.example("llama-3-8b")], [1024, 2048, 4096], registry=registry),
    }
    for name, figure in figures.items():
        path = tmp_path / f"{name}{suffix}"
        assert plot.save(figure, str(path)) == str(path)
        assert path.read_bytes().startswith(MAGIC[suffix]), name


def test_conventions_are_ratios_to_exact_and_unusable_ones_are_named(registry):
    figure = plot.conventions(GEMMA, [1024, 4096], registry=registry)
    lines = {line.get_label(): list(line.get_ydata()) for line in figure.axes[0].get_lines()}
    slime = [registry.evaluate(GEMMA, seq_len=n, convention="slime").forward / gemma_forward(n) for n in (1024, 4096)]
    assert lines["slime"] == pytest.approx(slime, rel=1e-12) and "verl" not in lines and "megatron" in lines
    assert "verl: " in figure.texts[0].get_text() and "model_type 'gemma3'" in figure.texts[0].get_text()
    with pytest.raises(flopsreg.FlopsregError, match="model_type 'gemma3'"):
        plot.conventions(GEMMA, [1024, 4096], names=["verl"], registry=registry)


def test_the_cli_plots_megatron_on_a_config_model_without_a_padded_vocabulary(tmp_path, capsys):
    out = tmp_path / "megatron.svg"
    assert main(["plot", "gemma-3-4b", "--seq-len", "1024,2048", "--convention", "megatron", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"wrote {out}" and out.exists() and "warning" not in captured.err


def test_models_share_one_axis(registry):
    llama = flopsreg.Model.example("llama-3-8b")
    figure = plot.models([GEMMA, llama], [1024, 4096], registry=registry, per_token=True)
    lines = {line.get_label(): list(line.get_ydata()) for line in figure.axes[0].get_lines()}
    assert set(lines) == {"gemma-3-4b", "llama-3-8b"}
    assert lines["gemma-3-4b"] == pytest.approx([gemma_forward(n) / n for n in (1024, 4096)], rel=1e-12)


def test_the_cli_writes_the_file(tmp_path, capsys):
    out = tmp_path / "gemma.svg"
    assert main(["plot", "gemma-3-4b", "--seq-len", "1024:8192", "--per-token", "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}" and out.read_bytes().startswith(b"<?xml")
    two = tmp_path / "two.png"
    assert main(["plot", "gemma-3-4b", "llama-3-8b", "--seq-len", "1024,2048", "--convention", "slime", "-o", str(two)]) == 0
    assert two.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["gemma-3-4b", "--seq-len", "1024:2048", "-o", "x.jpg"], "-o x.jpg: .jpg is not a plot format (expected one of: .png, .svg, .pdf)"),
        (["gemma-3-4b", "--seq-len", "1024:2048", "--convention", "slime", "--per-token", "-o", "x.png"], "--per-token: the ratios"),
        (["gemma-3-4b", "llama-3-8b", "--seq-len", "1024:2048", "--convention", "slime", "--convention", "megatron", "-o", "x.png"], "--convention: with several models give at most one"),
        (["gemma-3-4b", "--seq-len", "2048:1024", "-o", "x.png"], "--seq-len '2048:1024'"),
        (["gemma-3-4b", "--seq-len", "1024:2048", "--convention", "slim", "-o", "x.png"], "did you mean 'slime'"),
    ],
)
def test_the_cli_refuses_in_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["plot", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not list(tmp_path.iterdir())


def test_without_matplotlib_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if not installed
    with pytest.raises(plot.PlotError, match=r'plots need matplotlib: pip install "flopsreg\[plot\]"'):
        plot.by_slot(GEMMA, "1024:2048")


# -- figures as a paper prints them ------------------------------------------------------------


def test_every_slot_of_every_example_has_its_own_colour_and_hatch(registry):
    for name in example_names():
        figure = plot.by_slot(flopsreg.Model.example(name), [1024, 2048], registry=registry)
        looks = [(tuple(area.get_facecolor()[0]), area.get_hatch() or "") for area in figure.axes[0].collections]
        assert len(looks) == len(set(looks)), name
    assert len(set(plot.styles(70))) == 70
    with pytest.raises(plot.PlotError, match="71 slots"):
        plot.styles(71)


def test_slots_stack_in_forward_order_named_in_words_with_the_legend_outside(registry):
    figure = plot.by_slot(flopsreg.Model.example("llama-3-8b"), "1024:131072", registry=registry, per_token=True)
    (legend,) = figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    forward = ["query projection", "key and value projections", "attention core", "output projection", "feed-forward network", "logits head"]
    assert labels == forward[::-1]  # the top of the stack first
    assert [area.get_label() for area in figure.axes[0].collections] == forward
    assert not legend.get_window_extent().overlaps(figure.axes[0].get_window_extent())


def test_titles_say_what_and_per_what_and_axes_carry_units(registry):
    llama = flopsreg.Model.example("llama-3-8b")
    ax = plot.by_slot(llama, "1024:131072", registry=registry, per_token=True).axes[0]
    assert ax.get_title() == "forward FLOPs per token by slot, llama-3-8b, batch 1"
    assert ax.get_ylabel() == "forward FLOPs per token (GFLOP)"  # 15 to 49 GFLOP per token
    ax = plot.by_slot(GEMMA, [1024, 4096], registry=registry, batch=8, convention="slime").axes[0]
    assert ax.get_title() == "forward FLOPs per batch by slot, gemma-3-4b, batch 8, slime convention"
    assert ax.get_ylabel() == "forward FLOPs per batch (TFLOP)"  # 8 x 34.5 TFLOP at 4096
    assert ax.yaxis.get_offset_text().get_text() == ""  # no bare 1e15
    shown = [float(label.get_text()) for label in ax.get_yticklabels() if label.get_text()]
    top = 8 * registry.evaluate(GEMMA, seq_len=4096, convention="slime").forward / 10**12
    assert max(shown) <= top * 1.3 and max(shown) >= top / 2
    ax = plot.models([GEMMA, llama], "1024:131072", registry=registry).axes[0]
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "forward FLOPs per sequence (PFLOP)"


def test_two_saves_are_byte_identical_and_carry_no_date(tmp_path, registry):
    figure = plot.conventions(GEMMA, [1024, 2048, 4096], registry=registry)
    for suffix in (".svg", ".pdf", ".png"):
        first, again, fresh = (tmp_path / f"{name}{suffix}" for name in ("first", "again", "fresh"))
        plot.save(figure, str(first))
        plot.save(figure, str(again))  # the same figure saved twice
        plot.save(plot.conventions(GEMMA, [1024, 2048, 4096], registry=registry), str(fresh))
        assert first.read_bytes() == again.read_bytes() == fresh.read_bytes(), suffix
        assert b"CreationDate" not in first.read_bytes() and b"<dc:date>" not in first.read_bytes()


def test_a_figure_shows_itself_in_a_notebook(registry):
    figure = plot.by_slot(GEMMA, [1024, 2048], registry=registry)
    assert figure._repr_png_().startswith(MAGIC[".png"]) and figure._repr_svg_().startswith("<?xml")


def test_the_cli_skips_and_names_a_convention_that_cannot_count(tmp_path, capsys):
    out = tmp_path / "ratios.svg"
    argv = ["plot", "gemma-3-4b", "--seq-len", "1024,2048", "--convention", "slime", "--convention", "verl", "-o", str(out)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"wrote {out}" and out.exists()
    assert "flopsreg: warning: --convention verl: " in captured.err and "model_type 'gemma3'" in captured.err
    assert "verl: " in out.read_text()  # named in the figure too
    assert main(["plot", "gemma-3-4b", "--seq-len", "1024,2048", "--convention", "verl", "-o", str(tmp_path / "none.svg")]) == 2
    err = capsys.readouterr().err
    assert "no convention could count it" in err and err.count("\n") == 1 and not (tmp_path / "none.svg").exists()
