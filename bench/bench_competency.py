"""Cost of the staff dashboard's statistics and of the competency analysis at VICR scale.

VICR: 113 raters, 15,646 game pairs, about 68K ratings (3..7 per pair). A throw-away SQLite
database (or DATABASE_URL, if set to a scratch PostgreSQL database) is migrated and filled
with seeded synthetic ratings: each rater has a chance of an exact rating from 0.3 to 0.9,
otherwise off by one or two; every rater also rates 10 tutorial pairs. Prints the query
count and wall time of ``rater_statistics()`` (all raters), ``rater_statistics([one])`` and
``run_analysis()`` (response matrix, PCM fit, regression, Wright map).

    .venv/bin/python bench/bench_competency.py [--raters 113] [--pairs 15646] [--seed 2023]
"""

import argparse
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
LENGTH_SHARES = (0.36, 0.22, 0.22, 0.10, 0.10)  # 3..7 ratings per pair, mean 4.36 as VICR


def setup_database() -> None:
    if not os.environ.get("DATABASE_URL"):
        path = Path(tempfile.mkdtemp()) / "bench.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratinggame.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fill(n_raters: int, n_pairs: int, seed: int) -> None:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotators.models import RaterProfile, RaterState
    from ratinggame.models import Assignment, CaptionPair, Image, Pool, Rating

    rng = np.random.default_rng(seed)
    image = Image.objects.create(file="images/bench.png", sha256="0" * 64, width=10, height=10)
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"bench{i}") for i in range(n_raters)], batch_size=1000
    )
    tutorial_scores = rng.integers(10, 21, n_raters)
    RaterProfile.objects.bulk_create(
        [
            RaterProfile(user=u, state=RaterState.GAME, tutorial_score=int(s))
            for u, s in zip(users, tutorial_scores, strict=True)
        ]
    )
    tutorial = CaptionPair.objects.bulk_create(
        [CaptionPair(image=image, caption=f"t{i}", pool=Pool.TUTORIAL, expert_rating=3) for i in range(10)]
    )
    game = CaptionPair.objects.bulk_create(
        [CaptionPair(image=image, caption=f"g{i}", primes=[float(rng.uniform(1, 5))]) for i in range(n_pairs)],
        batch_size=2000,
    )
    p_exact = 0.3 + 0.6 * (tutorial_scores - 10) / 10
    truth = rng.integers(1, 6, n_pairs)
    lengths = rng.choice(np.arange(3, 8), size=n_pairs, p=LENGTH_SHARES)
    start = timezone.now() - timedelta(days=100)
    triples = [(r, tutorial[i], 3) for r in range(n_raters) for i in range(10)]
    for j, pair in enumerate(game):
        for r in rng.choice(n_raters, size=lengths[j], replace=False):
            triples.append((int(r), pair, int(truth[j])))
    assignments, ratings = [], []
    for k, (r, pair, reference) in enumerate(triples):
        draw = rng.random()
        off = 0 if draw < p_exact[r] else (1 if draw < p_exact[r] + 0.7 * (1 - p_exact[r]) else 2)
        value = int(np.clip(reference + rng.choice([-1, 1]) * off, 1, 5))
        served = start + timedelta(seconds=30 * k)
        submitted = served + timedelta(seconds=float(rng.uniform(3, 30)))
        assignments.append(
            Assignment(
                rater=users[r],
                pair=pair,
                stage=pair.pool,
                served_at=served,
                expires_at=served + timedelta(minutes=30),
                submitted_at=submitted,
            )
        )
        ratings.append((users[r], pair, value, served, submitted))
    assignments = Assignment.objects.bulk_create(assignments, batch_size=5000)
    Rating.objects.bulk_create(
        [
            Rating(assignment=a, rater=u, pair=p, stage=p.pool, value=v, served_at=s, submitted_at=t)
            for a, (u, p, v, s, t) in zip(assignments, ratings, strict=True)
        ],
        batch_size=5000,
    )
    print(
        f"data: {n_raters} raters, {n_pairs} game pairs, {len(ratings)} ratings ({len(ratings) - 10 * n_raters} game)"
    )


def timed(label: str, function, *args) -> object:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        result = function(*args)
        elapsed = time.perf_counter() - started
    print(f"{label}: {elapsed:.2f} s, {len(queries)} queries")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=113)
    parser.add_argument("--pairs", type=int, default=15646)
    parser.add_argument("--seed", type=int, default=2023)
    args = parser.parse_args()
    setup_database()
    from django.db import connection

    from annotators.competency.analysis import run_analysis
    from annotators.competency.flags import rater_statistics
    from annotators.models import RaterProfile

    print(f"database: {connection.vendor}")
    started = time.perf_counter()
    fill(args.raters, args.pairs, args.seed)
    print(f"fill: {time.perf_counter() - started:.1f} s")
    rows = timed("rater_statistics() all raters", rater_statistics)
    flagged = sum(bool(r.flags) for r in rows)
    print(f"  raters: {len(rows)}, flagged: {flagged}")
    timed("rater_statistics([one rater])", rater_statistics, [RaterProfile.objects.first().pk])
    fields = timed("run_analysis()", run_analysis)
    regression = fields["regression"]
    print(
        f"  items {fields['n_items']}, responses {fields['n_responses']}, converged {fields['details']['converged']}, "
        f"coef per 10% {regression.get('coef_per_10_percent', float('nan')):.3f} "
        f"(SE {regression.get('se_per_10_percent', float('nan')):.3f}, p {regression.get('p_value', float('nan')):.2g})"
    )


if __name__ == "__main__":
    main()
