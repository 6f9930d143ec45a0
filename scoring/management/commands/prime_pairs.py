"""Prime every unprimed game pair in this process, with a progress bar (same path as the task).

Unprimed means pending (never primed, or waiting for a model), failed (a load error, an
undecodable image: retried, since the cause may have been fixed) or a stale running claim.
The model is loaded before any pair is claimed, so a wrong --model/--pretrained or an
unloadable checkpoint stops the command with an error and leaves every pair as it was.

Weights: with --model, nothing about the weights is taken from the settings (--pretrained
and --pacs-checkpoint default to none); without it, the settings' RATINGGAME_PRIMING_MODEL,
RATINGGAME_PRIMING_PRETRAINED and RATINGGAME_PRIMING_PACS_CHECKPOINT apply, each one
overridable (an empty value, e.g. --pretrained "", means none).
"""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ratinggame.models import CaptionPair
from scoring.priming.runner import claimable, get_scorer, priming_config, run_priming, scorer_identity


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = "Prime every unprimed game pair (pending, failed, stale) with the configured or given model."

    def add_arguments(self, parser):
        parser.add_argument("--model", help="open_clip model name or checkpoint folder (default: settings)")
        parser.add_argument(
            "--pretrained",
            help="pretrained tag or checkpoint file; with --pacs-checkpoint, the base weights PAC-S was "
            "fine-tuned from (decides QuickGELU). Default: settings, or none when --model is given",
        )
        parser.add_argument(
            "--pacs-checkpoint",
            help="PAC-S checkpoint file loaded over --model, scored with w = 2.0 "
            "(default: settings, or none when --model is given)",
        )
        parser.add_argument("--batch-size", type=positive_int, help="pairs per encoder batch")
        parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: settings, else CUDA when available)")
        parser.add_argument(
            "--pending-only", action="store_true", help="leave pairs whose priming failed alone (default: retry them)"
        )

    def weights(self, options: dict, config: dict) -> tuple[str, str | None, str | None]:
        if options["model"]:
            return options["model"], options["pretrained"] or None, options["pacs_checkpoint"] or None
        pretrained = config["pretrained"] if options["pretrained"] is None else options["pretrained"] or None
        pacs = config["pacs_checkpoint"] if options["pacs_checkpoint"] is None else options["pacs_checkpoint"] or None
        return config["model"], pretrained, pacs

    def handle(self, *args, **options):
        from scoring.priming.clip_models import ScorerLoadError

        config = priming_config()
        model, pretrained, pacs_checkpoint = self.weights(options, config)
        if not model:
            raise CommandError("no model: pass --model or set RATINGGAME_PRIMING_MODEL")
        device = options["device"] or config["device"]
        try:
            scorer = get_scorer(model, pretrained, device, pacs_checkpoint)
        except ScorerLoadError as exc:
            raise CommandError(f"the priming model could not be loaded (no pair was changed): {exc}") from exc
        self.stdout.write(f"model: {scorer_identity(scorer)}")

        include_failed = not options["pending_only"]
        ids = list(CaptionPair.objects.filter(claimable(include_failed)).order_by("pk").values_list("pk", flat=True))
        batch = options["batch_size"] or config["batch_size"]
        totals = {"primed": 0, "failed": 0, "skipped": 0}
        with tqdm(total=len(ids), unit="pair", disable=not ids) as bar:
            # Chunks of a few batches: claims stay short-lived and progress is visible.
            step = batch * 4
            for start in range(0, len(ids), step):
                counts = run_priming(
                    ids[start : start + step],
                    scorer=scorer,
                    batch_size=batch,
                    include_failed=include_failed,
                    progress=bar.update,
                )
                for key in totals:
                    totals[key] += counts[key]
        self.stdout.write(
            f"{len(ids)} pair(s): {totals['primed']} primed, {totals['failed']} failed, {totals['skipped']} skipped"
        )
