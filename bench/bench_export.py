"""Wall time and query count of the dataset export at VICR scale (SPEC section 6).

VICR: 9,990 images, 15,646 pairs, 68,217 ratings (3..7 per pair) by 113 raters; two model scores
per pair. The data is synthetic and seeded, written with bulk_create into a fresh SQLite file
in a temporary folder (the project's database is not touched); images are rows only, so the
bundle is built without --with-images.

    .venv/bin/python bench/bench_export.py [--pairs 15646] [--formats csv,jsonl,parquet] [--keep]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
WORK = Path(tempfile.mkdtemp(prefix="bench-export-"))
os.environ["DATABASE_URL"] = f"sqlite:///{WORK / 'bench.sqlite3'}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratinggame.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.hashers import make_password  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from ratinggame.models import Assignment, CaptionPair, Image, Rating  # noqa: E402
from scoring.export.bundle import export_build  # noqa: E402
from scoring.models import ModelRating  # noqa: E402

LENGTH_SHARES = (0.36, 0.22, 0.22, 0.10, 0.10)  # 3..7 ratings per pair: mean 4.36, as VICR
START = datetime(2023, 1, 1, tzinfo=UTC)


def populate(n_pairs: int, n_images: int, n_raters: int, seed: int = 2023) -> int:
    rng = np.random.default_rng(seed)
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"bench{i}", password=make_password(None)) for i in range(n_raters)]
    )
    images = Image.objects.bulk_create(
        [Image(file=f"images/{i:064x}"[:9] + f"/{i:064x}.jpg", sha256=f"{i:064x}") for i in range(n_images)]
    )
    image_of = rng.integers(0, n_images, n_pairs)
    pairs = CaptionPair.objects.bulk_create(
        [
            CaptionPair(image=images[image_of[k]], caption=f"caption {k}", source=("coco", "pythia", "glacnet")[k % 3])
            for k in range(n_pairs)
        ],
        batch_size=2000,
    )
    lengths = rng.choice(np.arange(3, 8), size=n_pairs, p=LENGTH_SHARES)
    quality = rng.uniform(0.6, 5.4, n_pairs)
    assignments, values = [], []
    moment = START
    for k, pair in enumerate(pairs):
        for rater in rng.choice(n_raters, size=lengths[k], replace=False):
            moment += timedelta(seconds=11)
            assignments.append(
                Assignment(
                    rater=users[rater],
                    pair=pair,
                    stage="game",
                    served_at=moment - timedelta(seconds=11),
                    expires_at=moment + timedelta(minutes=30),
                    submitted_at=moment,
                )
            )
            values.append(int(np.clip(np.rint(quality[k] + rng.normal(0, 0.55)), 1, 5)))
    assignments = Assignment.objects.bulk_create(assignments, batch_size=2000)
    Rating.objects.bulk_create(
        [
            Rating(
                assignment=a,
                pair=a.pair,
                rater=a.rater,
                stage="game",
                value=v,
                served_at=a.served_at,
                submitted_at=a.submitted_at,
            )
            for a, v in zip(assignments, values, strict=True)
        ],
        batch_size=2000,
    )
    ModelRating.objects.bulk_create(
        [
            ModelRating(
                pair=pair,
                slot=slot,
                model_identity="ViT-B-32/openai",
                metric=metric,
                raw_score=float(quality[k] / 6 + rng.normal(0, 0.05)),
                value=float(quality[k]),
            )
            for k, pair in enumerate(pairs)
            for slot, metric in ((1, "clip_s"), (2, "ref_clip_s"))
        ],
        batch_size=2000,
    )
    return len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=15_646)
    parser.add_argument("--images", type=int, default=9_990)
    parser.add_argument("--raters", type=int, default=113)
    parser.add_argument("--formats", default="csv,jsonl,parquet")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary database and bundle.")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    start = time.perf_counter()
    n_ratings = populate(args.pairs, args.images, args.raters)
    print(f"populated {args.pairs} pairs, {n_ratings} ratings in {time.perf_counter() - start:.1f} s ({WORK})")
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        counts = export_build(out_dir=WORK / "bundle", formats=args.formats.split(","))
        elapsed = time.perf_counter() - start
    print(f"exported {counts['pairs']} pairs, {counts['ratings']} ratings, {counts['raters']} raters")
    print(f"export_build wall time: {elapsed:.2f} s, SQL queries: {len(queries.captured_queries)}")
    if not args.keep:
        shutil.rmtree(WORK)


if __name__ == "__main__":
    main()
