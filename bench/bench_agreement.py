"""Wall time of the agreement statistics at VICR scale (SPEC section 6).

VICR: 15,646 pairs, 68,217 ratings (3..7 per pair), 100 repetitions. Goals on the 2-core
development machine: the virtual-rater report under 2 s, and the export's whole statistics
block with 1,000 bootstrap resamples (virtual raters and all ratings, overall and per caption
source, and 4 metric correlations on the 20% test split, overall and per source, each with its 95% interval) under
10 s. Synthetic ratings, seeded: a latent quality per pair plus rater noise, rounded to the
1..5 scale; 5 caption sources; model scores are the quality plus noise.

    .venv/bin/python bench/bench_agreement.py [--pairs 15646] [--samples 100] [--resamples 1000] [--repeat 5]

With ``--coverage``: how often each statistic's 95% interval (``scoring.bootstrap``'s method, or
``--method`` for comparison) covers the population value, at 60, 249 (the VICR sample) and 2,000
pairs, with the exact binomial 95% interval of each coverage and whether the goal 0.93-0.97 is
met ("met": the coverage inside the goal; "MISSED": its binomial interval wholly outside;
"unclear": outside, but within the noise of the runs). Raters are simulated from a known latent
model: a pair has a quality q ~ U(0.6, 5.4) and each of its 3-7 ratings is q plus normal noise,
rounded and clipped to 1..5; a model's score is q plus N(0, 1). Two populations: VICR-like
agreement (noise sd 0.55) and a noisier one (sd 1.0). The population value of each statistic is
its limit on 2,000,000 simulated pairs (``--population``); every simulated sample has its own
random stream, so the cells' errors are independent across sizes and populations (one stream
shared by all would move a size's cells together). With 1,000 runs a coverage of 0.95 is
known to about ±0.014; 2,000 runs of one population took 24 minutes on the 2-core machine
(``--populations`` and ``--sizes`` run part of it, each part with the seeds it has in the whole run).

    .venv/bin/python bench/bench_agreement.py --coverage [--runs 1000] [--resamples 1000]
        [--populations vicr,noisier] [--sizes 60,249,2000] [--json]

With ``--json`` the coverage run ends with one JSON line: per population, each statistic's covered
count per size, the runs, the goal, the command and the date (``bench/figures/coverage.json`` is one,
which ``bench/plots.py`` draws as coverage against sample size).
"""

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring import agreement, bootstrap
from scoring.export.stats import agreement_block, metric_correlation

# Share of pairs with 3, 4, 5, 6, 7 ratings: mean 4.36 ratings per pair, as VICR's 68,217 / 15,646.
LENGTH_SHARES = (0.36, 0.22, 0.22, 0.10, 0.10)


def synthetic_ratings(n_pairs: int, seed: int = 2023) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    lengths = rng.choice(np.arange(3, 8), size=n_pairs, p=LENGTH_SHARES)
    quality = rng.uniform(0.6, 5.4, n_pairs)
    flat = np.clip(np.rint(np.repeat(quality, lengths) + rng.normal(0, 0.55, lengths.sum())), 1, 5).astype(int)
    return [chunk.tolist() for chunk in np.split(flat, np.cumsum(lengths)[:-1])]


COVERAGE_SIZES = (60, 249, 2000)
POPULATIONS = {
    "vicr": ("VICR-like raters (rating noise sd 0.55)", 0.55),
    "noisier": ("noisier raters (sd 1.0)", 1.0),
}
GOAL = (0.93, 0.97)


def simulated_population(n_pairs: int, noise: float, seed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ratings in pair order, each pair's number of ratings, a model's score per pair) of
    ``n_pairs`` pairs from the latent model of ``--coverage``."""
    rng = np.random.default_rng(seed)
    lengths = rng.choice(np.arange(3, 8), size=n_pairs, p=LENGTH_SHARES)
    quality = rng.uniform(0.6, 5.4, n_pairs)
    flat = np.clip(np.rint(np.repeat(quality, lengths) + rng.normal(0, noise, lengths.sum())), 1, 5).astype(int)
    return flat, lengths, quality + rng.normal(0, 1, n_pairs)


def population_values(noise: float, n_pairs: int, seed) -> dict[str, float]:
    """Each statistic's population value: its limit on ``n_pairs`` simulated pairs, computed with the
    reports' own kernels on the pairs' rating counts (the virtual raters' draws integrated out
    exactly, the limit of the mean over draws), which the tests check against the reports."""
    flat, lengths, scores = simulated_population(n_pairs, noise, seed)
    groups, sizes = bootstrap.pair_groups(bootstrap.level_counts(flat, lengths))
    weights = sizes[None, :].astype(np.float64)
    histogram = (weights @ bootstrap.sorted_triple_distribution(groups).reshape(len(groups), -1)).reshape(1, 5, 5, 5)
    values = {**agreement._statistics_from_histograms(histogram), **agreement._all_ratings_statistics(groups, weights)}
    values = {name: 100 * float(value[0]) for name, value in values.items()}
    values["metric tau_c"] = 100 * agreement.tau_c(np.repeat(scores, lengths), flat)
    return values


def intervals_of(flat, lengths, scores, resamples: int, seed: int) -> dict[str, tuple[float, float]]:
    """{statistic: (ci_low, ci_high)} as the export computes them for one simulated sample."""
    pairs = [chunk.tolist() for chunk in np.split(flat, np.cumsum(lengths)[:-1])]
    virtual = agreement.virtual_rater_report(pairs, samples=100, seed=seed, resamples=resamples)
    everything = agreement.all_ratings_report(pairs, resamples=resamples, seed=seed)
    metric = metric_correlation(
        dict(enumerate(scores.tolist())), dict(enumerate(pairs)), resamples=resamples, seed=seed
    )
    found = {name: value for name, value in [*virtual.items(), *everything.items()] if isinstance(value, dict)}
    found["metric tau_c"] = metric
    return {name: (value["ci_low"], value["ci_high"]) for name, value in found.items()}


def verdict(covered: int, runs: int) -> tuple[float, float, str]:
    """(low, high) of the exact (Clopper-Pearson) 95% interval of a coverage of ``covered`` out of
    ``runs``, and whether the goal is met: "met" (the estimate inside the goal, the interval
    meeting it), "MISSED" (the whole interval outside the goal), "unclear" (the estimate outside,
    the interval reaching into it: more runs would tell)."""
    ci = stats.binomtest(covered, runs).proportion_ci(0.95)
    share = covered / runs
    if ci.high < GOAL[0] or ci.low > GOAL[1]:
        return ci.low, ci.high, "MISSED"
    return ci.low, ci.high, "met" if GOAL[0] <= share <= GOAL[1] else "unclear"


def sample_sizes(text: str) -> tuple[int, ...]:
    """``--sizes``: comma-separated numbers of pairs, each at least 2."""
    try:
        sizes = tuple(int(size) for size in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers of pairs: {text!r}") from None
    if min(sizes) < 2:
        raise argparse.ArgumentTypeError("a sample needs at least 2 pairs")
    return sizes


def population_keys(text: str) -> list[str]:
    """``--populations``: comma-separated keys of POPULATIONS."""
    keys = text.split(",")
    unknown = sorted(set(keys) - set(POPULATIONS))
    if unknown:
        choices = ", ".join(POPULATIONS)
        raise argparse.ArgumentTypeError(f"unknown population(s) {', '.join(unknown)}: choose from {choices}")
    return keys


def coverage(options) -> None:
    bootstrap.METHOD = options.method
    print(
        f"coverage of the 95% {options.method} intervals: {options.runs} simulated samples per size, "
        f"{options.resamples} resamples, population values from {options.population:,} pairs; goal {GOAL[0]}-{GOAL[1]}"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    found = {}
    for number, (key, (label, noise)) in enumerate(POPULATIONS.items()):
        if key not in options.populations:
            continue  # its seeds stay its own: a population run alone gives what the whole run gives
        started = time.perf_counter()
        truth = population_values(noise, options.population, np.random.SeedSequence([number, 0]))
        covered = {name: dict.fromkeys(options.sizes, 0) for name in truth}
        for n in options.sizes:
            # Every sample its own stream: no sample is shared across sizes or populations.
            for run, stream in enumerate(np.random.SeedSequence([number, n]).spawn(options.runs)):
                for name, (low, high) in intervals_of(
                    *simulated_population(n, noise, stream), options.resamples, run
                ).items():
                    covered[name][n] += bool(low <= truth[name] <= high)
        print(f"\n{label}: {time.perf_counter() - started:.0f} s, load average {os.getloadavg()[0]:.2f}")
        print(f"{'statistic (x100)':28} {'population':>10}" + "".join(f"{f'{n} pairs':>30}" for n in options.sizes))
        for name, counts in covered.items():
            cells = ""
            for n in options.sizes:
                low, high, met = verdict(counts[n], options.runs)
                cells += f"{counts[n] / options.runs:>8.3f} [{low:.3f}, {high:.3f}] {met:<7}"
            print(f"{name:28} {truth[name]:>10.2f}{cells}")
        found[label] = {name: {str(n): counts[n] for n in options.sizes} for name, counts in covered.items()}
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if options.json:
        command = " ".join([".venv/bin/python", "bench/bench_agreement.py", *sys.argv[1:]])
        figures = {"populations": found, "runs": options.runs, "goal": list(GOAL), "method": options.method}
        when = datetime.now(UTC).date().isoformat()
        print(json.dumps({**figures, "command": command, "date": when, "load": os.getloadavg()}))


def statistics_block(pairs: list[list[int]], options) -> dict:
    """What the export computes around the ratings, as in scoring.export.bundle.export_statistics."""
    rng = np.random.default_rng(7)
    settings = {"samples": options.samples, "seed": 0, "resamples": options.resamples}
    block = {"overall": agreement_block(pairs, **settings)}
    source = rng.integers(0, 5, len(pairs))
    for name in range(5):
        chosen = [pair for pair, found in zip(pairs, source, strict=True) if found == name]
        block[f"source {name}"] = agreement_block(chosen, **settings)
    test = {index: pair for index, pair in enumerate(pairs) if rng.random() < 0.2}
    for column in range(4):
        scores = {index: float(np.mean(pair)) + rng.normal(0, 1) for index, pair in test.items()}
        block[f"metric {column}"] = metric_correlation(scores, test, resamples=options.resamples, seed=0)
        for name in range(5):  # and per caption source
            chosen = {index: pair for index, pair in test.items() if source[index] == name}
            block[f"metric {column} source {name}"] = metric_correlation(
                scores, chosen, resamples=options.resamples, seed=0
            )
    return block


def best_of(repeat: int, function, *args):
    """Smallest wall time of ``repeat`` calls (the machine is shared: the minimum is the least noisy)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args)
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=15_646)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--coverage", action="store_true", help="the intervals' coverage instead of wall times")
    parser.add_argument("--json", action="store_true", help="end the coverage run with its counts as one JSON line")
    parser.add_argument("--runs", type=int, default=1000, help="simulated samples per size (--coverage)")
    parser.add_argument("--population", type=int, default=2_000_000, help="pairs of the population values (--coverage)")
    parser.add_argument("--method", default=bootstrap.METHOD, choices=bootstrap.METHODS, help="interval (--coverage)")
    parser.add_argument(
        "--sizes",
        default=COVERAGE_SIZES,
        type=sample_sizes,
        help="pairs per simulated sample (--coverage; comma-separated; a size's seeds are its own)",
    )
    parser.add_argument(
        "--populations",
        default=list(POPULATIONS),
        type=population_keys,
        help=f"which simulated populations (--coverage; comma-separated of {', '.join(POPULATIONS)})",
    )
    options = parser.parse_args()
    if options.coverage:
        coverage(options)
        return

    pairs = synthetic_ratings(options.pairs)
    print(f"data: {len(pairs)} pairs, {sum(map(len, pairs))} ratings, samples={options.samples}")

    total, report = best_of(options.repeat, agreement.virtual_rater_report, pairs, options.samples, 0, 0)
    print(f"virtual_rater_report(samples={options.samples}): {total * 1000:8.1f} ms (best of {options.repeat})")
    seconds, _ = best_of(1, statistics_block, pairs, options)
    print(f"statistics block, {options.resamples} resamples (intervals on everything): {seconds:6.2f} s (goal < 10 s)")

    # The components, in the order the report runs them.
    seconds, (flat, starts, lengths, _) = best_of(options.repeat, agreement._ratings_table, pairs)
    print(f"  validate + flatten ratings:          {seconds * 1000:8.1f} ms")

    def draw_all():
        rng = np.random.default_rng(0)
        return [agreement._draw_virtual_raters(flat, starts, lengths, rng) for _ in range(options.samples)]

    seconds, draws = best_of(options.repeat, draw_all)
    print(f"  draw X, Y, Z ({options.samples} samples):          {seconds * 1000:8.1f} ms")
    seconds, histograms = best_of(options.repeat, lambda: np.stack([agreement._triple_histogram(xyz) for xyz in draws]))
    print(f"  (X, Y, Z) histograms:                {seconds * 1000:8.1f} ms")
    xy, xz, yz = histograms.sum(axis=3), histograms.sum(axis=2), histograms.sum(axis=1)
    swap = (0, 2, 1)
    tables = (xy + xz, xy.transpose(swap) + yz, xz.transpose(swap) + yz.transpose(swap))
    components = {
        "all statistics from the histograms": lambda: agreement._statistics_from_histograms(histograms),
        "tau_c x3 (tables)": lambda: [agreement._tau_c_from_tables(t) for t in tables],
        "kendall_w": lambda: agreement._kendall_w_from_histograms(histograms),
        "fleiss_kappa (merged + unmerged)": lambda: [
            agreement._fleiss_kappa_from_histograms(histograms, np.array(c)) for c in ([0, 1, 2, 3, 3], range(5))
        ],
        "krippendorff_alpha": lambda: agreement._alpha_from_coincidences(
            (xy + xy.transpose(swap) + xz + xz.transpose(swap) + yz + yz.transpose(swap)) / 2,
            agreement.SCALE,
            "ordinal",
        ),
    }
    for name, function in components.items():
        seconds, _ = best_of(options.repeat, function)
        print(f"  {name + ':':36} {seconds * 1000:8.1f} ms")

    # For scale: the general functions on ONE repetition (what the kernels replace, x100).
    x, y, z = draws[0].astype(int).T
    seconds, _ = best_of(options.repeat, agreement.tau_against_references, x, [y, z])
    print(f"  for comparison, scipy tau_c on one sample (method A): {seconds * 1000:6.1f} ms")
    seconds, _ = best_of(options.repeat, agreement.krippendorff_alpha, draws[0].T.astype(float))
    print(f"  for comparison, krippendorff_alpha on one sample:      {seconds * 1000:6.1f} ms")

    print("report:")
    for key, value in report.items():
        shown = f"{value['mean']:.2f} (sd {value['sd']:.2f})" if isinstance(value, dict) else value
        print(f"  {key}: {shown}")


if __name__ == "__main__":
    main()
