"""The benchmarks page's plots are drawn from the figures kept in ``bench/figures`` (``bench/plots.py``):
each committed plot is what its figures draw now, and every plot a page of the docs shows is one of
them (a bench's new figures without the plot drawn again, or a plot edited by hand, fails here)."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

plots = pytest.importorskip("plots", reason="bench/plots.py needs matplotlib (requirements-dev.txt)")


def test_each_plot_is_what_its_figures_draw(tmp_path):
    for path in plots.plots_draw(tmp_path):
        committed = ROOT / "docs" / "img" / path.name
        assert committed.is_file(), f"{path.name}: run .venv/bin/python bench/plots.py"
        assert path.read_bytes() == committed.read_bytes(), f"{path.name}: run .venv/bin/python bench/plots.py"


def test_every_plot_the_docs_show_is_drawn_by_the_script():
    shown = {
        name
        for page in (ROOT / "docs").rglob("*.md")
        for name in re.findall(r"\(\s*(?:\.\./)*img/([\w.-]+\.svg)", page.read_text())
    }
    assert shown and shown <= set(plots.PLOTS), shown - set(plots.PLOTS)
