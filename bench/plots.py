"""The benchmarks page's plots, drawn from the figures a bench printed (its ``--json`` line, kept in
``bench/figures/``), so a plot changes only when its figures do.

    .venv/bin/python bench/plots.py [--out docs/img]

- ``bench-cost.svg`` from ``bench/figures/cost.json`` (``bench_cost.py --json``'s last line): each
  assignment policy's ratings per validated pair against its label accuracy, with their 95%
  intervals over seeds, and VICR's 4.36 ratings per pair: where a policy lies on the trade-off
  between what a validated pair costs and how often its label is the truth.

The SVG carries no date and fixed element ids (matplotlib's ``svg.hashsalt``): drawn again from the
same figures it is the same file, which ``tests/docs/test_plots.py`` checks.
"""

import argparse
import json
from pathlib import Path

import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "bench" / "figures"
STYLE = {"svg.hashsalt": "ratinggame-benchmarks", "svg.fonttype": "none", "font.size": 10}


def series_of(policies: dict) -> dict[str, list[tuple[str, dict]]]:
    """The policies by series: "unanimous", "settled" (with the level prior) and "settled, flat
    prior", each a list of (threshold, figures) in the order of the thresholds."""
    series: dict[str, list[tuple[str, dict]]] = {}
    for name, found in policies.items():
        policy, _, setting = name.partition("@")
        threshold, _, flat = setting.partition(",")
        key = policy + (", flat prior" if flat else (", level prior" if policy == "settled" else ""))
        series.setdefault(key, []).append((threshold, found))
    return series


COLOURS = {"unanimous": "#444444", "settled, level prior": "#1f77b4", "settled, flat prior": "#ff7f0e"}
MARKERS = {"unanimous": "s", "settled, level prior": "o", "settled, flat prior": "^"}


def means_and_errors(points: list[tuple[str, dict]], name: str) -> tuple[list[float], list[list[float]]]:
    """A figure's means over the points, and the distances to its 95% interval's ends (below, above)."""
    means = [found[name]["mean"] for _, found in points]
    below = [mean - found[name]["ci95"][0] for mean, (_, found) in zip(means, points, strict=True)]
    above = [found[name]["ci95"][1] - mean for mean, (_, found) in zip(means, points, strict=True)]
    return means, [below, above]


def cost_plot(figures: dict, path: Path) -> None:
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(7.2, 4.2))
        for key, points in series_of(figures["policies"]).items():
            x, xerr = means_and_errors(points, "ratings_per_validated_pair")
            y, yerr = means_and_errors(points, "label_accuracy")
            colour = COLOURS.get(key, "#9467bd")
            axes.errorbar(x, y, xerr=xerr, yerr=yerr, fmt=MARKERS.get(key, "D"), linestyle="-", color=colour,
                          capsize=3, elinewidth=0.8, alpha=0.9, label=key)  # fmt: skip
            for (threshold, _), at in zip(points, zip(x, y, strict=True), strict=True):
                if threshold:
                    axes.annotate(threshold, at, xytext=(4, 4), textcoords="offset points", fontsize=8, color=colour)
        paper = figures["paper_ratings_per_pair"]
        axes.axvline(
            paper, linestyle="--", color="#2ca02c", linewidth=1, label=f"VICR's study: {paper} ratings per pair"
        )
        axes.set_xlabel("ratings per validated pair (mean over seeds, 95% interval)")
        axes.set_ylabel("label = true level (share of pairs)")
        axes.set_title("Each policy's cost of a validated pair and its labels' accuracy", fontsize=10)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8, loc="lower right")
        figure.tight_layout()
        figure.savefig(path, format="svg", metadata={"Date": None})
        plt.close(figure)


PLOTS = {"bench-cost.svg": ("cost.json", cost_plot)}


def plots_draw(out: Path) -> list[Path]:
    """Every plot whose figures are at hand, drawn into ``out``; the paths written."""
    written = []
    for name, (source, draw) in PLOTS.items():
        figures = json.loads((FIGURES / source).read_text())
        draw(figures, out / name)
        written.append(out / name)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    for path in plots_draw(args.out):
        print(path)


if __name__ == "__main__":
    main()
