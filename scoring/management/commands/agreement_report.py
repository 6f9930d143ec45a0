"""python manage.py agreement_report FILE [--format long|wide] [--samples 100] [--resamples 1000] [--seed 0] [--out F]

The export's agreement statistics (virtual raters and all ratings, each with a 95% interval
from a bootstrap over pairs, SPEC section 6) for an external rating set, so that it can be set
beside VICR's and this project's exports; ``paper_comparison`` says whether each of the paper's
Table 3 figures lies inside our interval, and ``too_few`` marks a set below the documented
minimum of pairs.
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scoring.bootstrap import RESAMPLES
from scoring.export.stats import (
    PAPER_TABLE3,
    agreement_block,
    json_safe,
    pair_summary,
    paper_comparison,
    rating_distribution,
)
from scoring.rating_files import RatingFileError, read_ratings_file


class Command(BaseCommand):
    help = "Agreement statistics (virtual-rater Kendall τ_c, W, Fleiss' κ, Krippendorff's α) of a rating file."

    def add_arguments(self, parser):
        parser.add_argument("file", help="CSV file of ratings.")
        parser.add_argument(
            "--format",
            choices=("long", "wide"),
            default="long",
            help="long: pair_id,rating[,rater_id] per row; wide: one pair per row with rating columns.",
        )
        parser.add_argument("--samples", type=int, default=100, help="Virtual-rater draws (default 100).")
        parser.add_argument(
            "--resamples",
            type=int,
            default=RESAMPLES,
            help=f"Bootstrap resamples over pairs for the 95%% intervals (default {RESAMPLES}; 0: none).",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--out", help="Write the JSON here instead of printing it.")

    def handle(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        if options["samples"] < 1:
            raise CommandError(f"--samples must be at least 1, got {options['samples']}")
        if options["resamples"] < 0:
            raise CommandError(f"--resamples must be at least 0, got {options['resamples']}")
        try:
            ratings = read_ratings_file(path, options["format"])
        except RatingFileError as error:
            raise CommandError(f"{path}: {error}") from None
        block = agreement_block(
            list(ratings.values()), samples=options["samples"], seed=options["seed"], resamples=options["resamples"]
        )
        if block["virtual_raters"] is None:
            raise CommandError(f"{path}: {block['note']}")
        rated = [values for values in ratings.values() if values]
        result = json_safe(
            {
                "file": path.name,
                "format": options["format"],
                "pairs": len(ratings),
                "ratings": sum(len(values) for values in ratings.values()),
                "agreement": block["virtual_raters"],
                "agreement_all_ratings": block["all_ratings"],
                "too_few": block["too_few"],
                "paper_comparison": paper_comparison(block["virtual_raters"]),
                "rating_distribution": rating_distribution(pair_summary(values)[1] for values in rated),
                "paper_table3": PAPER_TABLE3,
            }
        )
        text = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False)
        if options["out"]:
            Path(options["out"]).write_text(text + "\n", encoding="utf-8")
            self.stderr.write(f"Wrote {options['out']}")
        else:
            self.stdout.write(text)
