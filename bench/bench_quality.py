"""The drift rule's defaults against SPEC 2.5's targets, in a seeded simulation of the game.

SPEC 2.5: with VICR-like raters, a straight-liner (always 3) and a uniform random clicker who
qualified are sent back within 200 game ratings in at least 95% of runs, and an honest rater at
the median competency is sent back in at most 5% of 500-rating sessions.

The simulation runs the game's own rules (``annotators.journey``: where each block's control
pair falls, the rubric's agreement, the drift rule, the qualification window) on a rater who
entered the game and rates without skipping; only the control pairs matter to the rule. The
control set is the demo's shape: 25 pairs, five per level; a rater meets each once before any
repeats, then the least recently seen (as ``ratinggame.game.controls`` serves them).

Raters are the crowd simulator's (``tools.simulator.crowd``): a rating is the pair's true level
plus Gaussian noise whose sd grows as competency falls, with some uniformly random ratings at
the lowest competencies. "VICR-like": a population with competencies spread evenly over
``POPULATION`` (0.3 to 1) rating the VICR sample's pairs (its rounded means as true levels, as
many ratings per pair as the sample has) gives agreement statistics close to the VICR sample's
and the paper's; the bench prints them side by side (virtual-rater τ_c method A, Kendall's W,
Fleiss' κ). The median rater of that population has competency 0.65; the bench also shows a
weaker rater (0.5, the median of the simulator's default spread over 0..1) and others.

    .venv/bin/python bench/bench_quality.py [--runs 2000] [--seed 0] [--grid]

``--grid`` also prints the targets for other windows and thresholds (how the defaults were chosen).
"""

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratinggame.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from annotators import journey  # noqa: E402
from annotators.journey import ControlResult, Window  # noqa: E402
from scoring import agreement  # noqa: E402
from scoring.rating_files import read_ratings_file  # noqa: E402
from tools.simulator.crowd import simulated_rating  # noqa: E402

CONTROL_LEVELS = np.repeat(np.arange(1, 6), 5)  # 25 control pairs, five per level
POPULATION = (0.3, 1.0)
MEDIAN_COMPETENCY = sum(POPULATION) / 2
# The VICR paper's Table 3 (SPEC section 6), x100.
PAPER = {"tau_X_YZ": 75.6, "tau_Y_XZ": 77.8, "tau_Z_XY": 78.1, "kendall_w": 93.8, "fleiss_kappa": 58.1}
Rater = Callable[[int, np.random.Generator], int]


def straight_liner(level: int, rng: np.random.Generator) -> int:
    return 3


def random_clicker(level: int, rng: np.random.Generator) -> int:
    return int(rng.integers(1, 6))


def honest(competency: float) -> Rater:
    return lambda level, rng: simulated_rating(level, competency, rng)


def sent_back_at(rater: Rater, ratings: int, seed: int) -> int | None:
    """The game rating (1-based) at which the drift rule sends the rater back; None if never."""
    rng = np.random.default_rng(seed)
    rater_seed = int(rng.integers(2**62))
    last_seen = np.full(CONTROL_LEVELS.size, -1)
    tie_break = rng.permutation(CONTROL_LEVELS.size)  # a rater's own order among unseen controls
    window = Window(count=0, points=0)
    controls: list[ControlResult] = []
    for serve in range(ratings):
        window = window.after(2)  # qualified: the window's points do not matter here
        if not journey.control_due(rater_seed, serve):
            continue
        # Never seen first (in the rater's own order), then the least recently seen.
        pick = min(range(CONTROL_LEVELS.size), key=lambda i: (last_seen[i], tie_break[i]))
        last_seen[pick] = serve
        expert = int(CONTROL_LEVELS[pick])
        agreement_score = journey.control_agreement(rater(expert, rng), expert)
        # submitted_at is not used by the rule's decision; the serve number stands in for it.
        controls.append(ControlResult(submitted_at=serve, agreement=agreement_score))
        if journey.drift_transition(controls, window) is not None:
            return serve + 1
    return None


def share_sent_back(rater: Rater, ratings: int, runs: int, seed: int) -> float:
    return sum(sent_back_at(rater, ratings, seed * 1_000_003 + run) is not None for run in range(runs)) / runs


def vicr_likeness(seed: int) -> None:
    """Agreement of the simulated population beside the VICR sample's and the paper's."""
    sample = Path(__file__).resolve().parents[2] / "shared" / "external" / "vicr_sample250" / "VICR_Sample250.csv"
    if not sample.is_file():
        print("VICR sample not at hand: VICR-likeness not checked")
        return
    real = list(read_ratings_file(sample, format="wide").values())
    rng = np.random.default_rng(seed)
    # The sample's pairs, each with as many simulated ratings as it has real ones, the true level
    # being its rounded mean; raters drawn from the population for every rating.
    simulated = []
    for ratings in real:
        level = int(np.floor(np.mean(ratings) + 0.5))
        simulated.append([simulated_rating(level, rng.uniform(*POPULATION), rng) for _ in ratings])
    rows = {"the paper's VICR": PAPER}
    for name, pairs in (("VICR sample (249 pairs)", real), ("simulated population", simulated)):
        report = agreement.virtual_rater_report(pairs, samples=100, seed=seed, resamples=0)
        rows[name] = {key: report[key]["mean"] for key in PAPER}
    for name, figures in rows.items():
        print(f"  {name:26s} " + ", ".join(f"{key} {value:.1f}" for key, value in figures.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print(
        f"settings: one control in every {journey.control_every()} game serves, drift window "
        f"{journey.drift_window()} control ratings, threshold {journey.drift_threshold():g}; "
        f"{args.runs} runs per line, seed {args.seed}"
    )
    print("VICR-likeness of the rater model (virtual raters, x100):")
    vicr_likeness(args.seed)
    lines = (
        ("straight-liner (always 3)", straight_liner, 200, "sent back within 200 game ratings", ">= 0.95"),
        ("uniform random clicker", random_clicker, 200, "sent back within 200 game ratings", ">= 0.95"),
        (
            "honest, median competency 0.65",
            honest(MEDIAN_COMPETENCY),
            500,
            "sent back in a 500-rating session",
            "<= 0.05",
        ),
        ("honest, competency 0.5", honest(0.5), 500, "sent back in a 500-rating session", ""),
        ("honest, competency 0.3 (the weakest)", honest(POPULATION[0]), 500, "sent back in a 500-rating session", ""),
        ("honest, competency 0.8", honest(0.8), 500, "sent back in a 500-rating session", ""),
    )
    for name, rater, ratings, what, goal in lines:
        share = share_sent_back(rater, ratings, args.runs, args.seed)
        se = (share * (1 - share) / args.runs) ** 0.5
        print(f"  {name:32s} {what}: {share:.3f} (SE {se:.3f}){'  goal ' + goal if goal else ''}")
    if args.grid:
        grid(args)
    print(f"load average at end: {os.getloadavg()[0]:.2f}; {time.monotonic() - started:.1f} s")


def grid(args) -> None:
    """The targets for other windows and thresholds (smaller run counts)."""
    runs = max(200, args.runs // 4)
    print(f"grid ({runs} runs per cell): straight / random within 200, honest median / 0.5 within 500")
    for window in (10, 12, 15, 20):
        for threshold in (1.0, 1.1, 1.2, 1.3):
            settings.RATINGGAME["DRIFT_WINDOW"] = window
            settings.RATINGGAME["DRIFT_THRESHOLD"] = threshold
            cells = [
                share_sent_back(straight_liner, 200, runs, args.seed),
                share_sent_back(random_clicker, 200, runs, args.seed),
                share_sent_back(honest(MEDIAN_COMPETENCY), 500, runs, args.seed),
                share_sent_back(honest(0.5), 500, runs, args.seed),
            ]
            ok = cells[0] >= 0.95 and cells[1] >= 0.95 and cells[2] <= 0.05
            print(
                f"  window {window:2d} threshold {threshold:.2f}: "
                + " / ".join(f"{c:.3f}" for c in cells)
                + ("  meets all three" if ok else "")
            )


if __name__ == "__main__":
    main()
