"""The cost of a validated pair under each assignment policy (SPEC 5.1), in a seeded study with known truth.

A study of ``--pairs`` game pairs, whose true levels are drawn from the VICR sample's (each of its
pairs' rounded mean rating), is rated by a simulated crowd through the game's own code: the real
serve (``rating.pair_serve``: the claim, the ranks, the cap), the real rating
(``rating.rating_submit``: Algorithm 1, the aggregates, the label evidence, the rank under the
pair's row lock) and the real refit of the raters' models as the site runs it (``labels.refit_due``
checked every ``--refit-check-seconds`` of the study's time, as beat checks (every 30 s), and
``labels.rater_models_refit`` when due: ``RATINGGAME_REFIT_RATINGS`` ratings since the last fit,
``--refit-ratings`` here), on a SQLite database of its own. Raters arrive at random, one rating at
a time, 11 seconds each (the paper's average), until no pair is open to any rater.

The crowd is the one ``bench/bench_quality.py`` shows to be VICR-like (``tools.simulator.crowd``:
a rating is the true level plus Gaussian noise whose sd grows as competency falls, competencies
spread evenly over 0.3..1), each honest rater with a severity of their own (normal, sd
``--severity-sd`` levels), and a share ``--careless`` of raters who passed qualification and now
answer at random (before the drift rule would catch them: controls are off here, so every
rating is a game rating and each policy is measured on the same crowd).

Per policy, the mean over ``--seeds`` seeds with a 95% interval (t distribution): game ratings per
validated pair (at least 3 counted ratings, SPEC 6), validated pairs per 10,000 ratings, the share
of validated pairs whose label is the true level (the export's model-based label, and the rounded
mean for comparison), Kendall tau_c between the validated pairs' mean ratings and the truth, the
export's virtual-rater statistics (tau_X-YZ, W, kappa), and the money per validated pair at
11 s a rating and $24 an hour. The VICR study's 4.36 ratings per pair is printed beside them.

    .venv/bin/python bench/bench_cost.py [--pairs 600] [--raters 30] [--seeds 8] [--careless 0.1]
        [--thresholds 0.2] [--json]

``--thresholds 0.1,0.2,0.3`` runs the settled policy at each threshold (how the default was chosen).
With ``--json`` the last line is one JSON object: ``{"policies": {"unanimous": {...}, "settled": {...}}, ...}``
(with the command and the date: ``bench/figures/cost.json`` is one, which ``bench/plots.py`` draws).
"""

import argparse
import csv
import json
import math
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
_DB = tempfile.NamedTemporaryFile(prefix="bench_cost_", suffix=".sqlite3", delete=False)  # noqa: SIM115
os.environ.update(
    DJANGO_SETTINGS_MODULE="ratinggame.settings",
    DATABASE_URL=f"sqlite:///{_DB.name}",
    RATINGGAME_CONTROL_EVERY="0",
    RATINGGAME_COMPETENCY_EVERY="100000000",
    RATINGGAME_DEMO_MODE="0",
    CELERY_BROKER_URL="",
)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from scipy import stats  # noqa: E402

from annotators.models import RaterProfile, RaterState  # noqa: E402
from ratinggame.game import labels  # noqa: E402
from ratinggame.game.prior import level_prior_known  # noqa: E402
from ratinggame.game.rating import pair_serve, rating_submit  # noqa: E402
from ratinggame.models import CaptionPair, Image, LevelPrior, Pool, PrimingStatus, Rating  # noqa: E402
from scoring import agreement, ordinal  # noqa: E402
from tools.simulator.crowd import simulated_rating  # noqa: E402

VICR_SAMPLE = ROOT.parent / "shared" / "external" / "vicr_sample250" / "VICR_Sample250.csv"
PAPER_RATINGS_PER_PAIR = 4.36  # VICR: 68,217 ratings over 15,646 pairs
SECONDS_PER_RATING = 11
DOLLARS_PER_HOUR = 24
COMPETENCIES = (0.3, 1.0)
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
User = get_user_model()


def vicr_levels() -> np.ndarray:
    """The VICR sample's rounded mean ratings (the distribution true levels are drawn from)."""
    if not VICR_SAMPLE.is_file():
        print("VICR sample not at hand: true levels uniform over 1..5")
        return np.arange(1, 6)
    levels = []
    with VICR_SAMPLE.open(encoding="utf-8-sig") as handle:
        for row in csv.DictReader(handle):
            values = [float(row[name]) for name in ("ratings", *(f"rating_{i}" for i in range(2, 8))) if row[name]]
            levels.append(math.floor(np.mean(values) + 0.5))
    return np.array(levels)


class Crowd:
    """The simulated raters: (user, competency, severity, careless) and their answers."""

    def __init__(self, raters: int, careless: float, severity_sd: float, rng: np.random.Generator) -> None:
        careless_count = round(raters * careless)
        self.rng = rng
        self.members = []
        for index in range(raters):
            user = User.objects.create(username=f"rater{index}")
            RaterProfile.objects.create(
                user=user, state=RaterState.GAME, consent_at=START, game_entered_at=START, window_count=20,
                window_points=40,
            )  # fmt: skip
            self.members.append(
                (user, rng.uniform(*COMPETENCIES), rng.normal(0.0, severity_sd), index < careless_count)
            )

    def rating(self, member: tuple, truth: int) -> int:
        _, competency, severity, careless = member
        if careless:
            return int(self.rng.integers(1, 6))
        return simulated_rating(truth + severity, competency, self.rng)


def study_create(truths: np.ndarray) -> dict[int, int]:
    """The study's game pairs (one image each), primed as the priming task leaves them; pair -> truth."""
    images = Image.objects.bulk_create(
        Image(file=f"bench/{i}.png", original_name=f"{i}.png", sha256=f"{i:064x}", width=64, height=48, source="bench")
        for i in range(len(truths))
    )
    pairs = CaptionPair.objects.bulk_create(
        CaptionPair(
            image=image, caption=f"caption {i}", pool=Pool.GAME, primes=[3.0, 3.0], priming_status=PrimingStatus.DONE
        )
        for i, image in enumerate(images)
    )
    return {pair.pk: int(truth) for pair, truth in zip(pairs, truths, strict=True)}


def study_time(ratings: int, raters: int) -> datetime:
    """The study's clock after ``ratings`` ratings: its raters rate side by side, 11 s a rating each."""
    return START + timedelta(seconds=ratings * SECONDS_PER_RATING / raters)


def study_run(policy: str, threshold: float, prior: bool, seed: int, args, levels: np.ndarray) -> dict:
    """One study under one policy, rolled back at the end; its figures."""
    settings.RATINGGAME["ASSIGNMENT_POLICY"] = policy
    settings.RATINGGAME["SETTLED_THRESHOLD"] = threshold
    settings.RATINGGAME["LEVEL_PRIOR"] = prior
    settings.RATINGGAME["REFIT_RATINGS"] = args.refit_ratings
    level_prior_known(None)  # flat until the study's first refit, as on a new site
    rng = np.random.default_rng(seed)
    random.seed(seed)  # the pairs' order keys and the raters' order seeds (``random``)
    with transaction.atomic():
        truth = study_create(rng.choice(levels, size=args.pairs))
        crowd = Crowd(args.raters, args.careless, args.severity_sd, rng)
        clocks = [START] * len(crowd.members)
        active = list(range(len(crowd.members)))
        ratings = 0
        next_check = START + timedelta(seconds=args.refit_check_seconds)
        while active:
            index = active[int(rng.integers(len(active)))]
            member = crowd.members[index]
            served = pair_serve(rater=member[0], now=clocks[index])
            if served is None:
                active.remove(index)
                continue
            clocks[index] += timedelta(seconds=SECONDS_PER_RATING)
            value = crowd.rating(member, truth[served.pair_id])
            rating_submit(rater=member[0], assignment_id=served.assignment_id, value=value, now=clocks[index])
            ratings += 1
            now = study_time(ratings, args.raters)
            if now >= next_check:  # beat's check
                next_check += timedelta(seconds=args.refit_check_seconds)
                if labels.refit_due(now):
                    labels.rater_models_refit(now)
        labels.rater_models_refit(study_time(ratings, args.raters))
        figures = study_figures(truth, ratings)
        transaction.set_rollback(True)
    return figures


def study_figures(truth: dict[int, int], ratings: int) -> dict:
    validated = list(CaptionPair.objects.validated().values_list("id", flat=True))
    per_pair: dict[int, list[int]] = {pair_id: [] for pair_id in validated}
    for pair_id, value in Rating.objects.counted().filter(pair_id__in=validated).values_list("pair_id", "value"):
        per_pair[pair_id].append(value)
    evidence = Rating.objects.counted().label_evidence(validated)
    prior = LevelPrior.in_force()  # the labels as the export gives them
    model_labels = np.array([ordinal.label_of(evidence[pair_id], prior)[0] for pair_id in validated])
    means = np.array([np.mean(per_pair[pair_id]) for pair_id in validated])
    true = np.array([truth[pair_id] for pair_id in validated])
    report = agreement.virtual_rater_report(list(per_pair.values()), samples=20, seed=0, resamples=0)
    per_validated = ratings / len(validated)
    return {
        "ratings": ratings,
        "validated_pairs": len(validated),
        "ratings_per_validated_pair": per_validated,
        "validated_pairs_per_10k_ratings": 10_000 / per_validated,
        "label_accuracy": float(np.mean(model_labels == true)),
        "mean_rounded_accuracy": float(np.mean(np.floor(means + 0.5) == true)),
        "tau_c_means_truth": float(stats.kendalltau(means, true, variant="c").statistic),
        "tau_X_YZ": report["tau_X_YZ"]["mean"],
        "kendall_w": report["kendall_w"]["mean"],
        "fleiss_kappa": report["fleiss_kappa"]["mean"],
        "dollars_per_validated_pair": per_validated * SECONDS_PER_RATING * DOLLARS_PER_HOUR / 3600,
    }


def summary(runs: list[dict]) -> dict:
    """Each figure's mean over seeds and its 95% interval (t distribution over seeds)."""
    out = {}
    for name in runs[0]:
        values = np.array([run[name] for run in runs], dtype=float)
        half = (
            float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
            if len(values) > 1
            else float("nan")
        )
        out[name] = {"mean": float(values.mean()), "ci95": [float(values.mean() - half), float(values.mean() + half)]}
    return out


ROWS = (
    ("ratings_per_validated_pair", "ratings per validated pair", "{:.2f}"),
    ("validated_pairs_per_10k_ratings", "validated pairs per 10,000 ratings", "{:.0f}"),
    ("label_accuracy", "label = truth (model label)", "{:.3f}"),
    ("mean_rounded_accuracy", "label = truth (rounded mean)", "{:.3f}"),
    ("tau_c_means_truth", "tau_c(mean rating, truth)", "{:.3f}"),
    ("tau_X_YZ", "virtual-rater tau_X-YZ (x100)", "{:.1f}"),
    ("kendall_w", "Kendall's W (x100)", "{:.1f}"),
    ("fleiss_kappa", "Fleiss' kappa (x100)", "{:.1f}"),
    ("dollars_per_validated_pair", "$ per validated pair", "{:.3f}"),
)


def table(results: dict[str, dict]) -> None:
    names = list(results)
    print(f"{'':38s}" + "".join(f"{name:>28s}" for name in names))
    for key, label, form in ROWS:
        cells = []
        for name in names:
            figure = results[name][key]
            low, high = figure["ci95"]
            cells.append(f"{form.format(figure['mean'])} [{form.format(low)}, {form.format(high)}]")
        print(f"{label:38s}" + "".join(f"{cell:>28s}" for cell in cells))
    for key, label, form in (
        ("fewer_ratings_share", "fewer ratings than unanimous (paired)", "{:.1%}"),
        ("label_accuracy_change", "label accuracy change (paired)", "{:+.3f}"),
    ):
        cells = []
        for name in names:
            figure = results[name]["against_unanimous"][key]
            low, high = figure["ci95"]
            cells.append(f"{form.format(figure['mean'])} [{form.format(low)}, {form.format(high)}]")
        print(f"{label:38s}" + "".join(f"{cell:>28s}" for cell in cells))
    print(f"{'VICR study: ratings per pair':38s}{PAPER_RATINGS_PER_PAIR:>28.2f}")


def arguments() -> argparse.Namespace:
    """The command line; its defaults are the site's settings (the refit, beat's period, the policy)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=600)
    parser.add_argument("--raters", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--careless", type=float, default=0.1, help="share of raters answering at random")
    parser.add_argument("--severity-sd", type=float, default=0.2)
    parser.add_argument(
        "--refit-ratings",
        type=int,
        default=settings.RATINGGAME["REFIT_RATINGS"],
        help="new ratings that make a refit of the raters' models due (RATINGGAME_REFIT_RATINGS)",
    )
    parser.add_argument(
        "--refit-check-seconds",
        type=float,
        default=settings.CELERY_BEAT_SCHEDULE["refit-rater-models"]["schedule"],
        help="the study's seconds between checks (beat's period)",
    )
    parser.add_argument("--thresholds", default=str(settings.RATINGGAME["SETTLED_THRESHOLD"]))
    parser.add_argument(
        "--level-prior",
        choices=["on", "off", "both"],
        default="on" if settings.RATINGGAME["LEVEL_PRIOR"] else "off",
        help="the settled policy with the fitted level prior, a flat one, or each",
    )
    parser.add_argument("--json", action="store_true")
    return parser.parse_args()


def policies_of(args) -> list[tuple[str, str, float, bool]]:
    """(name, policy, threshold, level prior) of each study: unanimous, then settled at each
    threshold with each prior; the name tells them apart only where there are several."""
    thresholds = args.thresholds.split(",")
    priors = {"on": [True], "off": [False], "both": [True, False]}[args.level_prior]
    return [("unanimous", "unanimous", 0.5, priors[0])] + [
        (
            "settled"
            + ("" if len(thresholds) == 1 else f"@{value}")
            + ("" if len(priors) == 1 else ("" if prior else ",flat")),
            "settled",
            float(value),
            prior,
        )
        for value in thresholds
        for prior in priors
    ]


def results_of(runs: dict[str, list[dict]]) -> dict[str, dict]:
    """Each policy's summary over seeds, with its runs paired by seed against unanimous's (the same
    truths and crowd): the saving and the change in accuracy."""
    results = {name: summary(found) for name, found in runs.items()}
    for name, found in runs.items():
        results[name]["against_unanimous"] = summary(
            [
                {
                    "fewer_ratings_share": 1 - run["ratings_per_validated_pair"] / base["ratings_per_validated_pair"],
                    "label_accuracy_change": run["label_accuracy"] - base["label_accuracy"],
                }
                for run, base in zip(found, runs["unanimous"], strict=True)
            ]
        )
    return results


def main() -> None:
    args = arguments()
    started = time.monotonic()
    call_command("migrate", verbosity=0)
    levels = vicr_levels()
    runs = {
        name: [study_run(policy, threshold, prior, seed, args, levels) for seed in range(args.seeds)]
        for name, policy, threshold, prior in policies_of(args)
    }
    results = results_of(runs)
    load = os.getloadavg()
    print(
        f"{args.pairs} pairs, {args.raters} raters ({args.careless:.0%} careless), {args.seeds} seeds, "
        f"refit due after {args.refit_ratings} ratings, checked every {args.refit_check_seconds:.0f} s, "
        f"{connection.vendor}, {time.monotonic() - started:.0f} s, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    table(results)
    if args.json:
        command = " ".join([".venv/bin/python", "bench/bench_cost.py", *sys.argv[1:]])
        when = datetime.now(UTC).date().isoformat()
        print(
            json.dumps(
                {
                    "policies": results,
                    "paper_ratings_per_pair": PAPER_RATINGS_PER_PAIR,
                    "load": load,
                    "command": command,
                    "date": when,
                }
            )
        )
    Path(_DB.name).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
