from django.conf import settings
from django.core.management.base import BaseCommand

from ratinggame.demo.loader import load_demo


class Command(BaseCommand):
    help = "Load the demo photographs, tutorial/probation/game pairs and (in demo mode) demo accounts."

    def handle(self, *args, **options):
        demo_mode = settings.RATINGGAME["DEMO_MODE"]
        report = load_demo(with_accounts=demo_mode)
        self.stdout.write(
            f"Demo content: {report.pairs_created} new pair(s), {report.pairs_existing} already present, "
            f"{report.images_created} new image(s); {report.pairs_primed} game pair(s) primed from the written "
            "levels (no model weights in the demo)."
        )
        if not demo_mode:
            self.stdout.write("Not in demo mode (RATINGGAME_DEMO_MODE=0): no demo accounts created.")
            return
        self.stdout.write(self.style.WARNING("Demo accounts (demo mode only; passwords are reset on every run):"))
        for username, password in report.passwords.items():
            self.stdout.write(f"  {username:<12} {password}")
        crowd = report.crowd
        if crowd.raters:
            self.stdout.write(
                f"Demo crowd: {crowd.raters} simulated rater(s) played ({crowd.ratings} ratings, "
                f"{crowd.game_ratings} in the game); they cannot log in."
            )
