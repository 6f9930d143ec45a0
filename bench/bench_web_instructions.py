"""The web side of one rating in instructions: what the CPU runs, whatever else the machine does.

Not a test: it prints figures. Seconds of CPU per rating move with the machine (a shared 2-core
machine here drifts by a third within minutes), so a change of a few percent in the web tier's
work cannot be seen in them. Valgrind's callgrind counts the instructions the web process runs
instead: the same count for the same code and inputs, whatever the load.

It builds a PostgreSQL database as ``bench_journey.py`` does (``[--db-prefix]bench_web_instructions``,
dropped after), then, for each way of rating (``one``: ``POST /api/game/submit`` with the next
pair; ``page``: the rating page's ``POST /play/submit/`` with a browser session and CSRF), runs a
process that rates through Django's WSGI handler (production settings, the middleware, the
game; no HTTP server) under callgrind, counting only while it makes ``--ratings`` ratings after
a few unmeasured ones, and prints the instructions per rating. ``--tree`` runs another checkout's
code (its own ``ratinggame`` and game) against the same database, for a before/after in one run.

Needs valgrind (Debian's package). About 40 s per way and tree.

    .venv/bin/python bench/bench_web_instructions.py [--ratings 100] [--modes one,page] [--tree ../other-checkout]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_journey import PYTHON, ROOT, SERVER_ENV  # the rating path bench's database and settings
from helpers import database_drop

WARM_UP = 5


def rate(tree: str, db_url: str, credentials: dict, mode: str, rater: int, ratings: int, gate: str) -> None:
    """In the measured process: rate ``ratings`` times as ``rater``, instrumented between the gate's files."""
    sys.path.insert(0, tree)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ.update(SERVER_ENV, DATABASE_URL=db_url, DJANGO_SETTINGS_MODULE="ratinggame.settings")
    import django

    django.setup()
    import bench_journey
    from django.core.management import call_command

    call_command("collectstatic", "--noinput", verbosity=0)  # this tree's assets: its pages name them

    player = bench_journey.Player(
        bench_journey._wsgi_post(credentials["tokens"][rater], credentials["sessions"][rater]), mode
    )
    for _ in range(WARM_UP):
        player.step()
    Path(gate + ".ready").touch()
    while not Path(gate + ".go").exists():
        time.sleep(0.05)
    for _ in range(ratings):
        player.step()
    Path(gate + ".done").touch()
    while not Path(gate + ".stop").exists():
        time.sleep(0.05)
    assert len(player.acked) == WARM_UP + ratings and not player.errors, player.errors


def instructions(tree: str, db_url: str, out: Path, mode: str, rater: int, ratings: int, work: Path) -> int:
    """Instructions per rating of ``ratings`` ratings by ``rater`` in ``mode``, the code of ``tree``."""
    gate = str(work / f"gate-{mode}-{rater}")
    counts = work / f"callgrind-{mode}-{rater}.out"
    command = [
        *("valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={counts}"),
        *(PYTHON, __file__, "--rate", tree, db_url, str(out), mode, str(rater), str(ratings), gate),
    ]
    # Its log goes to a file: a pipe nobody reads while it runs stops it once the pipe is full.
    log = work / f"log-{mode}-{rater}.txt"
    with log.open("w") as stderr:
        process = subprocess.Popen(command, cwd=tree, stdout=subprocess.DEVNULL, stderr=stderr)

    def log_tail() -> str:
        return log.read_text()[-3000:]

    def wait_for(suffix: str) -> None:
        while not Path(gate + suffix).exists():
            if process.poll() is not None:
                raise RuntimeError(f"the measured process ended early:\n{log_tail()}")
            time.sleep(0.2)

    wait_for(".ready")
    subprocess.run(["callgrind_control", "--instr=on", str(process.pid)], check=True, capture_output=True)
    Path(gate + ".go").touch()
    wait_for(".done")
    subprocess.run(["callgrind_control", "--instr=off", str(process.pid)], check=True, capture_output=True)
    Path(gate + ".stop").touch()
    if process.wait() != 0:
        raise RuntimeError(f"the measured process failed:\n{log_tail()}")
    # "totals:" counts what ran while instrumented ("summary:" only what the last part dumped).
    totals = [line for line in counts.read_text().splitlines() if line.startswith("totals:")]
    if not totals:
        raise RuntimeError(f"no instruction count in {counts}")
    return int(totals[-1].split()[1]) // ratings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL (no db)")
    parser.add_argument("--db-prefix", default="")
    parser.add_argument("--ratings", type=int, default=100, help="measured ratings per way and tree")
    parser.add_argument("--modes", default="one,page")
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure (repeatable)")
    parser.add_argument("--rate", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rate:
        tree, db_url, out, mode, rater, ratings, gate = args.rate
        rate(tree, db_url, json.loads(Path(out).read_text()), mode, int(rater), int(ratings), gate)
        return

    modes = args.modes.split(",")
    trees = [str(ROOT), *(str(Path(tree).resolve()) for tree in args.tree)]
    db_url = f"{args.pg}/{args.db_prefix}bench_web_instructions"
    with tempfile.TemporaryDirectory(prefix="bench_web_instructions_") as folder:
        work = Path(folder)
        out = work / "built.json"
        raters = len(modes) * len(trees)
        build = [PYTHON, str(Path(__file__).resolve().parent / "bench_journey.py")]
        subprocess.run([*build, "--build", db_url, "20000", str(raters), str(out), "0", modes[0]], check=True)
        try:
            print(f"{args.ratings} ratings per way and tree through Django's WSGI handler (production settings)")
            rater = 0
            for mode in modes:
                for tree in trees:
                    count = instructions(tree, db_url, out, mode, rater, args.ratings, work)
                    rater += 1
                    print(f"  {mode:5} {tree}: {count:,} instructions per rating")
        finally:
            database_drop(db_url)


if __name__ == "__main__":
    main()
