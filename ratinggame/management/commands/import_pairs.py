from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ratinggame.models import Pool
from ratinggame.pairs.importing import ImportFailed, ManifestError, import_manifest


class Command(BaseCommand):
    help = (
        "Import caption pairs from a CSV or JSONL manifest (columns: image, caption, and optional "
        "source, references ('|'-separated), expert_rating, explanation, pool, display_order). "
        "All rows are checked first; nothing is imported if any row is invalid unless --skip-invalid."
    )

    def add_arguments(self, parser):
        parser.add_argument("manifest", type=Path)
        parser.add_argument("--images", type=Path, required=True, help="Folder holding the image files.")
        parser.add_argument("--pool", default=Pool.GAME, choices=[p.value for p in Pool])
        parser.add_argument("--dry-run", action="store_true", help="Check everything, write nothing.")
        parser.add_argument("--skip-invalid", action="store_true", help="Import the good rows, report the rest.")

    def handle(self, *args, manifest: Path, images: Path, pool: str, dry_run: bool, skip_invalid: bool, **options):
        try:
            report = import_manifest(
                manifest=manifest, images_dir=images, pool=pool, dry_run=dry_run, skip_invalid=skip_invalid
            )
        except ManifestError as exc:
            raise CommandError(f"{manifest}: {exc}") from None
        except ImportFailed as exc:
            raise CommandError(f"{manifest}: {exc}") from None
        for error in report.errors:
            self.stderr.write(f"skipped {error}")
        if dry_run:
            self.stdout.write(f"Dry run: {report.valid_rows} of {report.rows} row(s) valid; nothing was written.")
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Imported {report.pairs_created} pair(s) from {report.rows} row(s): "
                    f"{report.images_created} new image(s), {report.images_reused} already stored; "
                    f"{len(report.errors)} row(s) skipped."
                )
            )
            if report.priming_note:
                self.stdout.write(f"Priming: {report.priming_note}.")
