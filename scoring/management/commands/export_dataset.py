"""python manage.py export_dataset --out DIR [--min-ratings 3] [--seed 0] [--formats csv,jsonl,parquet]
[--with-images] [--force]: the validated dataset export (scoring.export.bundle) with a progress bar on stderr."""

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ratinggame.models import MIN_HUMAN_RATINGS
from scoring.bootstrap import RESAMPLES
from scoring.export.bundle import export_build
from scoring.export.formats import DEFAULT_FORMATS, FORMATS, formats_parse


class Command(BaseCommand):
    help = "Export the validated dataset (pairs, ratings, statistics, report, datasheet, manifest) into a folder."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="Folder to write the bundle into (created if missing).")
        parser.add_argument(
            "--min-ratings", type=int, default=MIN_HUMAN_RATINGS, help=f"Default {MIN_HUMAN_RATINGS} (SPEC section 6)."
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the split and the virtual raters.")
        parser.add_argument(
            "--formats", default=",".join(DEFAULT_FORMATS), help=f"Comma-separated, from {', '.join(FORMATS)}."
        )
        parser.add_argument(
            "--resamples",
            type=int,
            default=RESAMPLES,
            help=f"Bootstrap resamples over pairs for the 95%% intervals (default {RESAMPLES}; 0: none).",
        )
        parser.add_argument("--with-images", action="store_true", help="Copy the images into images/.")
        parser.add_argument("--force", action="store_true", help="Write into a folder that is not empty.")

    def handle(self, *args, **options):
        try:
            formats = formats_parse(options["formats"])
        except ValueError as error:
            raise CommandError(f"--formats: {error}") from None
        min_ratings = options["min_ratings"]
        if min_ratings < 1:
            raise CommandError(f"--min-ratings must be at least 1, got {min_ratings}")
        if min_ratings < MIN_HUMAN_RATINGS:
            self.stderr.write(
                self.style.WARNING(
                    f"--min-ratings {min_ratings} is below {MIN_HUMAN_RATINGS}: pairs with fewer than "
                    f"{MIN_HUMAN_RATINGS} ratings are not part of the validated dataset (SPEC section 6) and are "
                    "left out of the agreement statistics."
                )
            )
        out = Path(options["out"])
        if out.exists() and not out.is_dir():
            raise CommandError(f"--out {out} exists and is not a folder")
        if out.is_dir() and any(out.iterdir()) and not options["force"]:
            raise CommandError(
                f"--out {out} is not empty: choose an empty folder, or pass --force to replace the export there"
            )

        bar = tqdm(total=100, unit="%", desc="export", file=sys.stderr, disable=options["verbosity"] == 0)

        def progress(fraction: float, message: str) -> None:
            bar.set_postfix_str(message, refresh=False)
            bar.update(round(fraction * 100) - bar.n)

        try:
            counts = export_build(
                out_dir=out,
                min_ratings=min_ratings,
                seed=options["seed"],
                formats=formats,
                with_images=options["with_images"],
                progress=progress,
                resamples=options["resamples"],
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        finally:
            bar.close()
        summary = {key: counts[key] for key in ("pairs", "images", "ratings", "raters")}
        self.stdout.write(f"Exported to {out}: {json.dumps(summary)}")
