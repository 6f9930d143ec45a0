"""Refit the calibrations of the model primes now (also done periodically by Celery beat)."""

from django.core.management.base import BaseCommand

from scoring.priming.calibration_service import refit_all


class Command(BaseCommand):
    help = "Refit the raw-score -> 1-5 calibrations on pairs with >= 3 human ratings."

    def handle(self, *args, **options):
        for cal in refit_all():
            self.stdout.write(
                f"{cal.model_identity}: {cal.method}, {cal.fitted_on_pairs} pairs, {len(cal.x_knots)} knots"
            )
