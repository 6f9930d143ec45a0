"""Wall time, parameter recovery and honesty of the PCM fit at VICR scale (SPEC section 6, paper section 4).

VICR: 113 raters, 15,646 pairs, about 68K ratings (3..7 per pair). Goal: the fit under 10 s on
the 2-core development machine. Synthetic rubric scores (0 = LA, 1 = AA, 2 = EA), seeded, drawn
from Masters' PCM with known competencies and thresholds. Competency depends on a tutorial
score as the paper found (+0.017 logits per 1%), so the latent regression's recovery is shown
too. Raters' workloads are uneven (log-normal weights), as in a game.

Also, over --seeds simulated data sets at VICR scale: the coverage of the competencies' 95%
intervals for raters with at least 20 responses (goal 0.93-0.97; the truth in the fit's frame,
the core raters' mean), the slope of the estimates on the truth (1 = no spread bias), and the
latent regression's bias with true slopes 0 and 0.017; and over --sparse-datasets small data
sets (113 raters, --sparse-pairs pairs, so some raters have 1-8 responses) how many converged.

    .venv/bin/python bench/bench_pcm.py [--raters 113] [--pairs 15646] [--repeat 3] [--seed 2023] \
        [--seeds 10] [--sparse-datasets 100] [--sparse-pairs 400]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotators.competency.pcm import fit_pcm, thurstonian_thresholds
from annotators.competency.regression import game_competency_regression, latent_regression
from annotators.competency.wright_map import wright_map_svg

# Share of pairs with 3, 4, 5, 6, 7 ratings: mean 4.36 ratings per pair, as VICR's 68,217 / 15,646.
LENGTH_SHARES = (0.36, 0.22, 0.22, 0.10, 0.10)
TRUE_SLOPE = 0.017  # logits per 1% of tutorial score (paper, section 4.2)


def synthetic_scores(n_raters: int, n_pairs: int, seed: int, slope: float = TRUE_SLOPE) -> tuple[np.ndarray, ...]:
    """Scores (raters x pairs, NaN = not rated), true competency, true thresholds, tutorial %."""
    rng = np.random.default_rng(seed)
    tutorial = 5.0 * rng.integers(10, 21, n_raters)  # out of 20, at least 50% to play
    theta = 0.4 + slope * (tutorial - 75) + rng.normal(0, 0.35, n_raters)
    step1 = rng.normal(-1.5, 0.8, n_pairs)
    delta = np.stack([step1, step1 + rng.normal(1.5, 0.6, n_pairs)], axis=1)

    # Who rates what: k raters per pair, drawn without replacement with uneven weights (Gumbel top-k).
    lengths = rng.choice(np.arange(3, 8), size=n_pairs, p=LENGTH_SHARES)
    log_weight = rng.normal(0, 1, n_raters)  # log-normal workload weights
    keys = log_weight[None, :] + rng.gumbel(size=(n_pairs, n_raters))
    ranked = np.argsort(-keys, axis=1)
    rater = np.concatenate([ranked[lengths == k, :k].ravel() for k in range(3, 8)])
    pair = np.concatenate([np.repeat(np.flatnonzero(lengths == k), k) for k in range(3, 8)])

    eta = np.stack(
        [np.zeros(rater.size), theta[rater] - delta[pair, 0], 2 * theta[rater] - delta[pair].sum(axis=1)], axis=1
    )
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    score = (rng.random(rater.size)[:, None] > np.cumsum(p, axis=1)[:, :2]).sum(axis=1)
    scores = np.full((n_raters, n_pairs), np.nan)
    scores[rater, pair] = score
    return scores, theta, delta, tutorial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=113)
    parser.add_argument("--pairs", type=int, default=15646)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--sparse-datasets", type=int, default=100)
    parser.add_argument("--sparse-pairs", type=int, default=400)
    args = parser.parse_args()

    scores, theta, delta, tutorial = synthetic_scores(args.raters, args.pairs, args.seed)
    observed = ~np.isnan(scores)
    shares = np.bincount(scores[observed].astype(int), minlength=3) / observed.sum()
    print(f"raters {args.raters}, pairs {args.pairs}, responses {observed.sum()}")
    print(
        f"responses per pair {observed.sum(axis=0).mean():.2f}, per rater min/median/max "
        f"{observed.sum(axis=1).min()}/{np.median(observed.sum(axis=1)):.0f}/{observed.sum(axis=1).max()}"
    )
    print(f"score shares LA/AA/EA: {shares[0]:.3f} / {shares[1]:.3f} / {shares[2]:.3f}")

    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = fit_pcm(scores)
        times.append(time.perf_counter() - start)
    print(f"fit_pcm wall time: best {min(times):.2f} s, all {', '.join(f'{t:.2f}' for t in times)} s (goal < 10 s)")
    print(f"converged {result.converged} after {result.iterations} iterations, bias factor {result.bias_factor:.4f}")
    print(
        f"extreme raters {result.rater_extreme.sum()}, extreme pairs {result.item_extreme.sum()}, "
        f"pairs with a null category (smoothed) {result.item_null_category.sum()}"
    )

    # The true parameters, in the fit's frame (the core raters' competencies centred at 0).
    shift = theta[~result.rater_extreme].mean()
    true_theta, true_delta = theta - shift, delta - shift
    r = np.corrcoef(result.abilities, true_theta)[0, 1]
    slope, intercept = np.polyfit(true_theta, result.abilities, 1)
    print(f"competency: r = {r:.3f} with the truth; estimate = {intercept:+.3f} + {slope:.3f} x truth")
    for j, name in enumerate(("AA step", "EA step")):
        print(f"{name} difficulty: r = {np.corrcoef(result.thresholds[:, j], true_delta[:, j])[0, 1]:.3f}")
    tau, true_tau = thurstonian_thresholds(result.thresholds), thurstonian_thresholds(true_delta)
    for j, name in enumerate(("AA", "EA")):
        print(f"{name} Thurstonian threshold: r = {np.corrcoef(tau[:, j], true_tau[:, j])[0, 1]:.3f}")
    many = observed.sum(axis=0) >= 6
    print(
        f"pairs with 6-7 ratings ({many.sum()}): EA Thurstonian r = "
        f"{np.corrcoef(tau[many, 1], true_tau[many, 1])[0, 1]:.3f}"
    )

    regression = latent_regression(result.abilities, tutorial)
    truth = latent_regression(true_theta, tutorial)
    print(
        f"latent regression (OLS): {regression['coef_per_percent']:.4f} per 1% (SE {regression['se_per_percent']:.4f},"
        f" p = {regression['p_value']:.2g}); on true competencies {truth['coef_per_percent']:.4f};"
        f" generating slope {TRUE_SLOPE}"
    )

    start = time.perf_counter()
    svg = wright_map_svg(result.abilities, tau, regression=regression, max_items=50)
    print(f"wright_map_svg: {time.perf_counter() - start:.3f} s, {len(svg)} characters")

    honesty(args)
    sparse_convergence(args)


def honesty(args) -> None:
    """Coverage of the 95% intervals, spread, and the regression's bias over seeded data sets."""
    covered, counted, spread = 0, 0, []
    slopes: dict[float, list[tuple[float, float]]] = {0.0: [], TRUE_SLOPE: []}
    for offset in range(args.seeds):
        for true_slope, found in slopes.items():
            seed = args.seed + 1000 + offset
            scores, theta, _, tutorial = synthetic_scores(args.raters, args.pairs, seed, true_slope)
            regression = game_competency_regression(scores, np.ones(scores.shape[1], dtype=bool), tutorial)
            found.append((regression["coef_per_percent"], regression["se_per_percent"]))
            if true_slope != TRUE_SLOPE:
                continue
            result = fit_pcm(scores)
            core = ~result.rater_extreme & np.isfinite(result.abilities)
            truth = theta - theta[core].mean()
            enough = core & ((~np.isnan(scores)).sum(axis=1) >= 20)
            error = np.abs(result.abilities - truth)[enough]
            covered += int(np.sum(error <= 1.96 * result.ability_se[enough]))
            counted += int(enough.sum())
            spread.append(np.polyfit(truth[core], result.abilities[core], 1)[0])
    print(
        f"over {args.seeds} data sets: 95% interval coverage {covered / counted:.3f} "
        f"({covered} of {counted} raters with >= 20 responses; goal 0.93-0.97); "
        f"slope of estimate on truth {np.mean(spread):.3f} (1 = no spread bias)"
    )
    for true_slope, found in slopes.items():
        estimates, errors = np.array(found).T
        bias = estimates.mean() - true_slope
        print(
            f"latent regression, true slope {true_slope:.3f} per 1%: mean estimate {estimates.mean():+.4f}, "
            f"bias {bias:+.4f} (SE of the mean {estimates.std(ddof=1) / np.sqrt(estimates.size):.4f}), "
            f"mean reported SE {errors.mean():.4f}, within 2 reported SE of the truth in "
            f"{int(np.sum(np.abs(estimates - true_slope) < 2 * errors))} of {estimates.size}"
        )


def sparse_convergence(args) -> None:
    """How many small VICR-like data sets (raters with 1-8 responses among them) converge."""
    converged, few, times = 0, 0, []
    for offset in range(args.sparse_datasets):
        scores, *_ = synthetic_scores(args.raters, args.sparse_pairs, args.seed + 5000 + offset)
        few += int(np.sum((~np.isnan(scores)).sum(axis=1) <= 8))
        start = time.perf_counter()
        converged += fit_pcm(scores).converged
        times.append(time.perf_counter() - start)
    print(
        f"sparse data ({args.raters} raters x {args.sparse_pairs} pairs, {few / args.sparse_datasets:.1f} raters "
        f"with 1-8 responses per data set): converged in {converged} of {args.sparse_datasets}, "
        f"median fit {np.median(times):.2f} s"
    )


if __name__ == "__main__":
    main()
