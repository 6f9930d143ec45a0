"""A game claim against the history of the rater who claims: one rater rating alone, a long time.

Not a test: it prints figures. A rater rating alone (the first of a study, the last one at night)
leaves every pair they rate in the started ranks until others rate it, and every claim of theirs
meets those pairs first in the serving order (SPEC 5: started pairs before fresh ones). This bench
builds a PostgreSQL database as ``bench_journey.py`` does (``[--db-prefix]bench_claim_history``,
dropped after), lets one rater rate ``--ratings`` pairs in a row through Django's WSGI handler
(production settings, ``POST /api/game/submit`` with the next pair, the 3-second floor off), and at
each checkpoint prints:

- the claim's statement alone, as the rating sends it (prepared, on a new connection), in a
  rolled-back transaction from ``--claims`` start points of that rater: median and p90 ms on a
  quiet database;
- the ratings since the previous checkpoint: median and p90 ms per rating, request to answer.

Run it in two checkouts (``--tree``) for a before and after in one invocation.

    .venv/bin/python bench/bench_claim_history.py [--ratings 2000] [--checkpoints 250,500,1000,2000]
        [--claims 50] [--tree ../other-checkout]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_journey import PYTHON, ROOT, SERVER_ENV, load  # the rating path bench's database and settings
from helpers import database_drop

PAIRS = 20000


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    return f"median {statistics.median(ordered):6.2f} ms, p90 {ordered[int(0.9 * (len(ordered) - 1))]:6.2f} ms"


def measure(tree: str, db_url: str, out: str, checkpoints: list[int], claims: int) -> None:
    """In a process of ``tree``'s code: rate alone to each checkpoint, timing claims at each."""
    sys.path.insert(0, tree)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ.update(SERVER_ENV, DATABASE_URL=db_url, DJANGO_SETTINGS_MODULE="ratinggame.settings")
    import django

    django.setup()
    import bench_journey
    from django.db import connection

    from ratinggame.game.assignment import claim_statements
    from ratinggame.game.prepared import execute_on

    credentials = json.loads(Path(out).read_text())
    player = bench_journey.Player(bench_journey._wsgi_post(credentials["tokens"][0], credentials["sessions"][0]), "one")
    from rest_framework.authtoken.models import Token

    rater_id = Token.objects.get(key=credentials["tokens"][0]).user_id
    done = 0
    for checkpoint in [0, *checkpoints]:
        player.rating_ms.clear()
        while done < checkpoint and not player.done:
            player.step()
            done += 1
        if player.errors:
            raise SystemExit(f"the rater was refused: {player.errors}")
        # A new connection, whose generic plans are made with the tables' sizes now: a web process
        # opens one at least every DATABASE_CONN_MAX_AGE seconds (60), and PostgreSQL plans again
        # after autovacuum's ANALYZE of a growing table (autovacuum is off on some machines).
        connection.close()
        times = []
        for draw in range(claims):
            # The first statement, the windows: what a claim runs unless every window misses.
            sql, params = next(claim_statements(rater_id, (draw * 2654435761) % 2**31, ()))
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")
                started = time.perf_counter()
                execute_on(connection, cursor, sql, params)
                cursor.fetchone()
                times.append((time.perf_counter() - started) * 1000)
                cursor.execute("ROLLBACK")
        rating = _ms(player.rating_ms) if player.rating_ms else "-"
        print(f"  after {done:5} ratings: claim {_ms(times)} | ratings since the last line: {rating} | {load()}")
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL (no db)")
    parser.add_argument("--db-prefix", default="")
    parser.add_argument("--ratings", type=int, default=2000)
    parser.add_argument("--checkpoints", default="250,500,1000,2000")
    parser.add_argument("--claims", type=int, default=50, help="claims timed at each checkpoint")
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure (repeatable)")
    parser.add_argument("--measure", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        tree, db_url, out, checkpoints, claims = args.measure
        measure(tree, db_url, out, [int(c) for c in checkpoints.split(",")], int(claims))
        return

    checkpoints = [c for c in (int(c) for c in args.checkpoints.split(",")) if c <= args.ratings]
    db_url = f"{args.pg}/{args.db_prefix}bench_claim_history"
    with tempfile.TemporaryDirectory(prefix="bench_claim_history_") as folder:
        out = str(Path(folder) / "built.json")
        for tree in [str(ROOT), *(str(Path(tree).resolve()) for tree in args.tree)]:
            build = [PYTHON, str(Path(__file__).resolve().parent / "bench_journey.py")]
            subprocess.run([*build, "--build", db_url, str(PAIRS), "1", out, "0", "one"], check=True)
            commit = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%h"], capture_output=True, text=True)
            print(f"{tree} ({commit.stdout.strip()}): one rater rating alone, {PAIRS:,} fresh game pairs")
            sys.stdout.flush()
            try:
                command = [PYTHON, __file__, "--measure", tree, db_url, out, ",".join(map(str, checkpoints))]
                log = Path(folder) / "log.txt"  # the request log: a file, not a pipe nobody reads
                with log.open("w") as stderr:
                    measured = subprocess.run([*command, str(args.claims)], cwd=tree, stderr=stderr)
                if measured.returncode != 0:
                    raise SystemExit(f"the measured process failed:\n{log.read_text()[-3000:]}")
            finally:
                database_drop(db_url)


if __name__ == "__main__":
    main()
