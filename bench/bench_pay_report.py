"""Cost of the pay report (``annotators.study.report.pay_report``, SPEC 7) at VICR scale.

The same seeded synthetic study as bench_competency.py (113 raters, 15,646 game pairs with 3..7
ratings each, about 69,000 ratings 30 s apart: about 24 days, each rater's ratings about an hour
apart, so every rating is a session of its own), in a throw-away SQLite database (or
DATABASE_URL, if set to a scratch PostgreSQL database). Prints the load average, the data, and the
query count and median wall time of the report over the whole period and of its two CSVs, over
``--repeat`` runs. The report reads each rating of the period once (a row of four values): its
query count must not grow with the data.

    .venv/bin/python bench/bench_pay_report.py [--raters 113] [--pairs 15646] [--seed 2023] [--repeat 5]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_competency import fill, setup_database  # the bench folder, put on the path above


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=113)
    parser.add_argument("--pairs", type=int, default=15646)
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    setup_database()
    from decimal import Decimal

    from django.conf import settings
    from django.db import connection
    from django.db.models import Max, Min
    from django.test.utils import CaptureQueriesContext

    from annotators.study.pay_files import full_csv, prolific_bonus_csv
    from annotators.study.report import pay_period, pay_report
    from ratinggame.models import Rating

    settings.RATINGGAME_STUDY = {
        **settings.RATINGGAME_STUDY,
        "PAY_HOURLY": Decimal("9.00"),
        "PAY_PER_POINT": Decimal("0.01"),
    }
    fill(options.raters, options.pairs, options.seed)
    bounds = Rating.objects.aggregate(first=Min("submitted_at"), last=Max("submitted_at"))
    start, end = pay_period(bounds["first"].date(), bounds["last"].date())
    times, queries = [], []
    for _ in range(options.repeat):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            report = pay_report(start=start, end=end)
            times.append(time.perf_counter() - started)
        queries.append(len(captured.captured_queries))
    started = time.perf_counter()
    prolific, full = prolific_bonus_csv(report), full_csv(report)
    files = time.perf_counter() - started
    print(f"database: {connection.vendor}")
    print(
        f"report: {len(report.rows)} raters, {report.total} {report.currency}, sessions median "
        f"{report.median.median_session_seconds:.0f} s"
    )
    print(
        f"pay_report over {(end - start).days} days: {statistics.median(times):.2f} s median of "
        f"{options.repeat} (min {min(times):.2f} s), {queries[0]} queries"
    )
    print(f"both CSVs: {files * 1000:.0f} ms ({len(full.splitlines())} lines, {len(prolific.splitlines())} Prolific)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
