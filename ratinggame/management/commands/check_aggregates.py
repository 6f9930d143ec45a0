from django.core.management.base import BaseCommand, CommandError

from ratinggame.game.aggregates import pairs_aggregates_check


class Command(BaseCommand):
    help = (
        "Compare every pair's stored rating aggregates, open slots and serving rank with its ratings "
        "and assignments. Reports each pair that drifted (exit status 1); --repair sets them to what "
        "the rows say, under the pair's row lock, while the game keeps running."
    )

    def add_arguments(self, parser):
        parser.add_argument("--repair", action="store_true", help="Set drifted pairs to what their rows say.")

    def handle(self, *args, repair: bool, **options):
        drifts = pairs_aggregates_check(repair=repair)
        for drift in drifts:
            self.stdout.write(f"{'repaired ' if repair else ''}{drift}")
        if not drifts:
            self.stdout.write(self.style.SUCCESS("Every pair's aggregates match its ratings and assignments."))
        elif repair:
            self.stdout.write(self.style.WARNING(f"{len(drifts)} pair(s) repaired."))
        else:
            raise CommandError(f"{len(drifts)} pair(s) drifted from their rows; run with --repair to set them right.")
