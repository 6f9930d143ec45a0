"""``manage.py simulate_crowd``: a simulated crowd plays a running server through its HTTP API.

    python manage.py simulate_crowd --server http://127.0.0.1:8000 --raters 20 --pairs 100 \
        [--seed 0] [--concurrency 20] [--timeout 10] [--admin-token KEY --setup] [--json]

The server needs tutorial and probation pairs (and game pairs) to play: ``--setup`` creates
them through the researcher API (``--admin-token``: a researcher's or admin's API token, from
``POST /api/auth/token``); without it the server must be loaded beforehand (``manage.py
load_demo`` or ``import_pairs``). With ``--admin-token`` alone the expert ratings of the
tutorial and probation pairs are read from the API and used as their true quality; without
a token every pair's true quality is a hash of its id and the seed.

For a quick run set ``RATINGGAME_MIN_SECONDS_PER_RATING`` (tests and benchmarks only) and
the API throttles (``RATINGGAME_THROTTLE_USER``, ``RATINGGAME_THROTTLE_SIGNUP``) on the
server: the simulated raters rate faster than people may. See tools.simulator.crowd.
"""

import json
import logging

from django.core.management.base import BaseCommand, CommandError

from tools.simulator.crowd import CrowdConfig, crowd_simulate
from tools.simulator.report import format_report
from tools.simulator.setup import SetupFailed


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


class Command(BaseCommand):
    help = "Simulated raters with known competencies play a server through the HTTP API, and a report."
    # A plain HTTP client: no system checks, no database of its own.
    requires_system_checks: list = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("--server", required=True, help="Base URL of the site, e.g. http://127.0.0.1:8000")
        parser.add_argument("--raters", type=_positive_int, required=True)
        parser.add_argument(
            "--pairs", type=_positive_int, required=True, help="Game pairs: with --setup, created; else the share."
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--concurrency", type=_positive_int, default=None, help="HTTP requests in flight.")
        parser.add_argument("--timeout", type=float, default=10.0, help="Seconds per HTTP request.")
        parser.add_argument("--admin-token", default=None, help="A researcher's or admin's API token.")
        parser.add_argument("--setup", action="store_true", help="Create the pairs through the API first.")
        parser.add_argument("--max-probation-rounds", type=_positive_int, default=2)
        parser.add_argument(
            "--straight-liners", type=int, default=0, help="Raters who answer 3 once they qualified (beside --raters)."
        )
        parser.add_argument(
            "--random-clickers", type=int, default=0, help="Raters who answer at random once they qualified."
        )
        parser.add_argument("--retry-seconds", type=float, default=60.0, help="How long to retry a failing call.")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args, **options) -> None:
        # httpx logs every request at INFO: thousands of lines that hide the report.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        config = CrowdConfig(
            server=options["server"],
            raters=options["raters"],
            pairs=options["pairs"],
            seed=options["seed"],
            concurrency=options["concurrency"],
            timeout=options["timeout"],
            admin_token=options["admin_token"],
            setup=options["setup"],
            max_probation_rounds=options["max_probation_rounds"],
            retry_seconds=options["retry_seconds"],
            straight_liners=max(0, options["straight_liners"]),
            random_clickers=max(0, options["random_clickers"]),
        )
        try:
            result = crowd_simulate(config)
        except (ValueError, SetupFailed) as error:
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result.report, indent=2))
        else:
            self.stdout.write(format_report(result.report))
