"""Prime every unprimed game pair in this process, with a progress bar (same path as the task).

Unprimed means pending (never primed, or waiting for a model), failed (a load error, an
undecodable image: retried, since the cause may have been fixed) or a stale running claim.
The model is loaded before any pair is claimed, so a wrong --model/--pretrained or an
unloadable checkpoint stops the command with an error and leaves every pair as it was.
Stopped with Ctrl-C or SIGTERM, it gives back the pairs it claimed but did not store, and a
new run goes on from there; killed outright (SIGKILL), it strands the few batches it had
claimed ahead until PRIMING_STALE_SECONDS have passed.

Weights: with --model, nothing about the open_clip weights is taken from the settings
(--pretrained and --pacs-checkpoint default to none); without it, the settings'
RATINGGAME_PRIMING_MODEL, RATINGGAME_PRIMING_PRETRAINED and RATINGGAME_PRIMING_PACS_CHECKPOINT
apply, each one overridable (an empty value, e.g. --pretrained "", means none). FLEUR's LLaVA
model comes from RATINGGAME_PRIMING_FLEUR_MODEL unless --fleur-model names another ("" for
none); --explain (or RATINGGAME_PRIMING_FLEUR_EXPLAIN) stores its explanations.
"""

import signal

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ratinggame.models import CaptionPair
from scoring.priming.configuration import PrimingModels
from scoring.priming.runner import CLAIM_BATCHES, claimable, run_priming
from scoring.priming.scorer import ScorerLoadError


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
        parser.add_argument(
            "--fleur-model",
            help='LLaVA model folder (or hub name) for FLEUR and RefFLEUR (default: settings; "" means none)',
        )
        parser.add_argument(
            "--explain",
            action="store_true",
            help="store FLEUR's explanation with each FLEUR prime (a second, slower generation per pair)",
        )
        parser.add_argument("--batch-size", type=positive_int, help="pairs per encoder batch")
        parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: settings, else CUDA when available)")
        parser.add_argument(
            "--pending-only", action="store_true", help="leave pairs whose priming failed alone (default: retry them)"
        )

    def models(self, options: dict) -> PrimingModels:
        settings_models = PrimingModels.from_settings()
        if options["model"]:
            chosen = {
                "model": options["model"],
                "pretrained": options["pretrained"] or None,
                "pacs_checkpoint": options["pacs_checkpoint"] or None,
            }
        else:
            chosen = {
                name: getattr(settings_models, name) if options[name] is None else options[name] or None
                for name in ("pretrained", "pacs_checkpoint")
            }
        if options["fleur_model"] is not None:
            chosen["fleur_model"] = options["fleur_model"]
        if options["explain"]:
            chosen["fleur_explain"] = True
        if options["device"]:
            chosen["device"] = options["device"]
        if options["batch_size"]:
            chosen["batch_size"] = options["batch_size"]
        return PrimingModels.from_settings(**chosen)

    def handle(self, *args, **options):
        models = self.models(options)
        if not models.configured:
            raise CommandError(
                "no model: pass --model or --fleur-model, or set RATINGGAME_PRIMING_MODEL or "
                "RATINGGAME_PRIMING_FLEUR_MODEL"
            )
        try:
            scorers = models.scorers()
        except ScorerLoadError as exc:
            raise CommandError(f"the priming model could not be loaded (no pair was changed): {exc}") from exc
        for scorer in scorers:
            self.stdout.write(f"{scorer.label}: {scorer.identity}")

        include_failed = not options["pending_only"]
        ids = list(CaptionPair.objects.filter(claimable(include_failed)).order_by("pk").values_list("pk", flat=True))
        # SIGTERM (a service stop, `kill`) ends the run like Ctrl-C: the claims not stored yet are
        # given back, so running the command again goes on where this one stopped.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            with tqdm(total=len(ids), unit="pair", disable=not ids) as bar:
                # Claims a few batches ahead: a run killed outright strands only those (until stale).
                totals = run_priming(
                    ids,
                    models=models,
                    include_failed=include_failed,
                    progress=bar.update,
                    claim_chunk=models.batch_size * CLAIM_BATCHES,
                )
        except KeyboardInterrupt:
            left = CaptionPair.objects.filter(pk__in=ids).filter(claimable(include_failed)).count()
            raise CommandError(
                f"interrupted: {len(ids) - left} of {len(ids)} pair(s) done; the other {left} wait "
                "(pending): run the command again to go on"
            ) from None
        finally:
            signal.signal(signal.SIGTERM, previous)
        self.stdout.write(
            f"{len(ids)} pair(s): {totals['primed']} primed, {totals['failed']} failed, {totals['skipped']} skipped"
        )


def _interrupt(signum, frame):
    raise KeyboardInterrupt
