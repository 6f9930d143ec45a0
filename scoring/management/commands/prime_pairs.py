"""Prime every unprimed game pair in this process, with a progress bar (same path as the task)."""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ratinggame.models import CaptionPair
from scoring.prime_runner import claimable, priming_config, run_priming


class Command(BaseCommand):
    help = "Prime pending game pairs (and stale running claims) with the configured or given model."

    def add_arguments(self, parser):
        parser.add_argument("--model", help="open_clip model name or checkpoint folder (default: settings)")
        parser.add_argument("--pretrained", help="pretrained tag or checkpoint file (default: settings)")
        parser.add_argument("--batch-size", type=int, help="pairs per encoder batch")
        parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: CUDA when available)")
        parser.add_argument("--retry-failed", action="store_true", help="also retry pairs whose priming failed")

    def handle(self, *args, **options):
        config = priming_config()
        model = options["model"] or config["model"]
        if not model:
            raise CommandError("no model: pass --model or set RATINGGAME_PRIMING_MODEL")
        ids = list(
            CaptionPair.objects.filter(claimable(options["retry_failed"])).order_by("pk").values_list("pk", flat=True)
        )
        batch = options["batch_size"] or config["batch_size"]
        totals = {"primed": 0, "failed": 0, "skipped": 0}
        with tqdm(total=len(ids), unit="pair", disable=not ids) as bar:
            # Chunks of a few batches: claims stay short-lived and progress is visible.
            step = batch * 4
            for start in range(0, len(ids), step):
                counts = run_priming(
                    ids[start : start + step],
                    model=model,
                    pretrained=options["pretrained"] if options["pretrained"] is not None else None,
                    device=options["device"],
                    batch_size=batch,
                    retry_failed=options["retry_failed"],
                    progress=bar.update,
                )
                for key in totals:
                    totals[key] += counts[key]
        self.stdout.write(
            f"{len(ids)} pair(s): {totals['primed']} primed, {totals['failed']} failed, {totals['skipped']} skipped"
        )
