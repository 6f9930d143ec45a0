"""The benchmarks page's plots, drawn from the figures a bench printed (its ``--json`` line, kept in
``bench/figures/``), so a plot changes only when its figures do.

    .venv/bin/python bench/plots.py [--out docs/img]

- ``bench-cost.svg`` from ``bench/figures/cost.json`` (``bench_cost.py --json``'s last line): each
  assignment policy's ratings per validated pair against its label accuracy, with their 95%
  intervals over seeds, and VICR's 4.36 ratings per pair: where a policy lies on the trade-off
  between what a validated pair costs and how often its label is the truth.
- ``bench-crowd.svg`` from ``bench/figures/crowd.json`` (``bench_crowd.py --json``): ratings/s
  against the number of raters playing at once, for each way the site is served, and the serve's
  median latency: where adding raters stops adding ratings.
- ``bench-coverage.svg`` from ``bench/figures/coverage.json`` (``bench_agreement.py --coverage
  --json``): how often each statistic's 95% interval covers the population value, against the
  sample's size, with the goal's band: whether an interval stays honest on a small study.

The SVG carries no date and fixed element ids (matplotlib's ``svg.hashsalt``): drawn again from the
same figures it is the same file, which ``tests/docs/test_plots.py`` checks.
"""

import argparse
import json
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.ticker import NullLocator

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


def crowd_plot(figures: dict, path: Path) -> None:
    by_setup: dict[str, dict[int, list[dict]]] = {}
    for run in figures["runs"]:
        by_setup.setdefault(run["setup"], {}).setdefault(run["raters"], []).append(run)
    with plt.rc_context(STYLE):
        figure, (rate_axes, latency_axes) = plt.subplots(1, 2, figsize=(7.2, 3.6))
        for (setup, sizes), colour in zip(sorted(by_setup.items()), ("#1f77b4", "#ff7f0e", "#2ca02c"), strict=False):
            raters = sorted(sizes)
            # The mean of a size's runs (bursts), when a size was run more than once.
            rates = [sum(r["ratings_per_s"] for r in sizes[n]) / len(sizes[n]) for n in raters]
            serves = [sum(r["serve_p50_ms"] for r in sizes[n]) / len(sizes[n]) for n in raters]
            rate_axes.plot(raters, rates, marker="o", color=colour, label=setup)
            latency_axes.plot(raters, serves, marker="o", color=colour, label=setup)
        rate_axes.set_xlabel("raters playing at once")
        rate_axes.set_ylabel("ratings per second")
        rate_axes.set_ylim(bottom=0)
        latency_axes.set_xlabel("raters playing at once")
        latency_axes.set_ylabel("serve, median latency (ms)")
        latency_axes.set_ylim(bottom=0)
        for axes in (rate_axes, latency_axes):
            axes.grid(alpha=0.3)
        rate_axes.legend(fontsize=8, loc="lower right")
        figure.suptitle("Ratings per second and the serve's latency as the crowd grows (delay 0)", fontsize=10)
        figure.tight_layout()
        figure.savefig(path, format="svg", metadata={"Date": None})
        plt.close(figure)


def coverage_plot(figures: dict, path: Path) -> None:
    runs, (low, high) = figures["runs"], figures["goal"]
    populations = figures["populations"]
    with plt.rc_context(STYLE):
        figure, panels = plt.subplots(1, len(populations), figsize=(7.2, 3.8), sharey=True, squeeze=False)
        for axes, (label, statistics) in zip(panels[0], populations.items(), strict=True):
            axes.axhspan(low, high, color="#2ca02c", alpha=0.12, label=f"goal {low}-{high}")
            axes.axhline(0.95, color="#2ca02c", linewidth=0.8)
            for name, counts in statistics.items():
                sizes = sorted(counts, key=int)
                axes.plot([int(n) for n in sizes], [counts[n] / runs for n in sizes], marker=".", linewidth=0.8,
                          alpha=0.75, label=name)  # fmt: skip
            axes.set_xscale("log")
            sizes = sorted({int(n) for counts in statistics.values() for n in counts})
            axes.set_xticks(sizes, [str(n) for n in sizes])
            axes.xaxis.set_minor_locator(NullLocator())
            axes.set_xlabel("pairs in the sample")
            axes.set_title(label, fontsize=9)
            axes.grid(alpha=0.3)
        panels[0][0].set_ylabel(f"share of {runs} samples covered")
        handles, names = panels[0][0].get_legend_handles_labels()
        figure.legend(handles, names, fontsize=6, loc="lower center", ncol=5, frameon=False)
        figure.suptitle("Coverage of the 95% intervals against the sample's size", fontsize=10)
        figure.tight_layout(rect=(0, 0.2, 1, 1))
        figure.savefig(path, format="svg", metadata={"Date": None})
        plt.close(figure)


PLOTS = {
    "bench-cost.svg": ("cost.json", cost_plot),
    "bench-crowd.svg": ("crowd.json", crowd_plot),
    "bench-coverage.svg": ("coverage.json", coverage_plot),
}


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
