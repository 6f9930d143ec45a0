"""Cost of the researchers' progress page (``scoring.progress.dashboard.study_progress``) and its chart.

The same seeded synthetic study as bench_competency.py (raters with a chance of an exact rating
from 0.3 to 0.9, 3..7 ratings per game pair as in VICR), in a throw-away SQLite database (or
DATABASE_URL, if set to a scratch PostgreSQL database); the ratings are then moved into the last
week so that the hourly chart and the rate have data. Prints the load average, the data, and the
query count and median wall time of ``study_progress()`` and of the chart over ``--repeat`` runs.
Run it at two pool sizes to see how the page grows with the pool (its query count must not):

    .venv/bin/python bench/bench_progress.py [--raters 113] [--pairs 15646] [--seed 2023] [--repeat 5]
"""

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_competency import fill, setup_database  # the bench folder, put on the path above


def aggregates_set() -> None:
    """Each pair's count of counted ratings, as the game keeps it (the bench writes ratings in bulk)."""
    from django.db.models import Count, OuterRef, Subquery
    from django.db.models.functions import Coalesce

    from ratinggame.models import CaptionPair, Rating

    counted = Rating.objects.counted().filter(pair=OuterRef("pk")).values("pair").annotate(n=Count("id")).values("n")
    CaptionPair.objects.update(human_count=Coalesce(Subquery(counted), 0))


def last_week() -> None:
    """Spread the ratings evenly over the week before now, keeping their order."""
    from django.db.models import Max, Min
    from django.utils import timezone

    from ratinggame.models import Rating

    bounds = Rating.objects.aggregate(first=Min("submitted_at"), last=Max("submitted_at"))
    span = bounds["last"] - bounds["first"]
    week_start = timezone.now() - timedelta(days=7)
    ratings = list(Rating.objects.only("id", "served_at", "submitted_at"))
    for rating in ratings:
        shift = week_start + (rating.submitted_at - bounds["first"]) * (timedelta(days=7) / span) - rating.submitted_at
        rating.served_at += shift
        rating.submitted_at += shift
    Rating.objects.bulk_update(ratings, ["served_at", "submitted_at"], batch_size=5000)


def measure(label: str, function, repeat: int) -> object:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, result, queries = [], None, 0
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            result = function()
            times.append(time.perf_counter() - started)
        queries = len(captured)
    print(f"{label}: median {1000 * statistics.median(times):.1f} ms over {repeat} runs, {queries} queries")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=113)
    parser.add_argument("--pairs", type=int, default=15646)
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    setup_database()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from scoring.progress.chart import ratings_per_hour_svg
    from scoring.progress.dashboard import study_progress

    print(f"database: {connection.vendor}")
    started = time.perf_counter()
    fill(args.raters, args.pairs, args.seed)
    aggregates_set()
    last_week()
    print(f"fill: {time.perf_counter() - started:.1f} s")
    progress = measure("study_progress()", study_progress, args.repeat)
    with CaptureQueriesContext(connection) as captured:
        study_progress()
    for query in captured.captured_queries:
        print(f"  {1000 * float(query['time']):.1f} ms  {query['sql'][:90]}")
    print(
        f"  validated {progress.validated} of {progress.target}, {progress.raters_last_day} raters in the last day, "
        f"{progress.rate_per_hour:.0f} counted ratings an hour, estimate: {progress.estimate.result}"
    )
    measure(
        "ratings_per_hour_svg()",
        lambda: ratings_per_hour_svg(
            start=progress.chart_start, counted=progress.counted_per_hour, other=progress.other_per_hour
        ),
        args.repeat,
    )
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
