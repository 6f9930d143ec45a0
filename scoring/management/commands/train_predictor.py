"""Train the learned rating predictor on validated pairs and record its test metrics."""

from django.core.management.base import BaseCommand, CommandError

from scoring.priming.model_vicr_training import train_from_db


class Command(BaseCommand):
    help = "Train the rating predictor (MLP 1024-64-1 on image+text embeddings); activate it if it beats CLIP-S."

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-epochs", type=int, default=500)
        parser.add_argument("--patience", type=int, default=30)

    def handle(self, *args, **options):
        try:
            run = train_from_db(seed=options["seed"], max_epochs=options["max_epochs"], patience=options["patience"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        m = run.metrics
        self.stdout.write(
            f"run {run.pk}: tau_c test predictor={m['tau_c_test_predictor']} clip_s={m['tau_c_test_clip_s']} "
            f"(CLIP-S calibration: {m['clip_s_calibration']['method']}, fitted on the training split) "
            f"pairs={m['pairs']} active={run.active}"
        )
