from django.conf import settings
from django.core.management.base import BaseCommand

from ratinggame.demo import load_demo


class Command(BaseCommand):
    help = "Load the demo photographs, tutorial/probation/game pairs and (in demo mode) demo accounts."

    def handle(self, *args, **options):
        demo_mode = settings.RATINGGAME["DEMO_MODE"]
        report = load_demo(with_accounts=demo_mode)
        self.stdout.write(
            f"Demo content: {report.pairs_created} new pair(s), {report.pairs_existing} already present, "
            f"{report.images_created} new image(s)."
        )
        if not demo_mode:
            self.stdout.write("Not in demo mode (RATINGGAME_DEMO_MODE=0): no demo accounts created.")
            return
        self.stdout.write(self.style.WARNING("Demo accounts (demo mode only; passwords are reset on every run):"))
        for username, password in report.passwords.items():
            self.stdout.write(f"  {username:<12} {password}")
