"""Celery tasks of the ratinggame app (default queue). Each calls the app's services; they are sent
with ``ratinggame.background.dispatch`` or by beat."""

import logging
from datetime import timedelta

from celery import shared_task
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from ratinggame.background import BackgroundTask
from ratinggame.game.aggregates import pairs_aggregates_check
from ratinggame.game.assignment import assignments_release_expired
from ratinggame.game.labels import rater_models_refit, refit_due
from ratinggame.models import Image
from ratinggame.pairs.derivatives import derivatives_make
from ratinggame.pairs.jobs import TIME_LIMIT_SECONDS, import_folders_delete, import_job_execute, import_jobs_sweep
from ratinggame.pairs.services import media_orphans_delete

log = logging.getLogger(__name__)

# Files no row names are kept this long: far longer than any import runs (the import task
# stops after 2 hours), so a file whose row is about to be committed is never taken.
ORPHAN_GRACE = timedelta(days=1)
# Expired slots released per run: a run takes a second or so at most, and what it leaves is
# taken by the next run (or by a rater who finds no pair).
RELEASE_BATCH = 1000


class OffRequestTask(BackgroundTask):
    """Work that can outlast a request: without a broker, the embedded mode's thread runs it."""

    off_request_when_eager = True


@shared_task(base=BackgroundTask, name="ratinggame.tasks.check_aggregates", acks_late=True, time_limit=30 * 60)
def check_aggregates() -> int:
    """Periodic: repair pairs whose aggregates drifted from their rows, each logged as an error
    (a drift means some write went around the game's services, and later raters were scored
    against a wrong consensus until now). Returns how many pairs were repaired."""
    drifts = pairs_aggregates_check(repair=True)
    for drift in drifts:
        log.error("rating aggregates drifted, repaired: %s", drift)
    return len(drifts)


@shared_task(base=BackgroundTask, name="ratinggame.tasks.refit_rater_models", acks_late=True, time_limit=30 * 60)
def refit_rater_models(force: bool = False) -> dict:
    """Periodic, every 30 s: once enough ratings came in (``labels.refit_due``; every time with
    ``force``), the raters' ordinal models refitted and the undecided pairs brought in step (SPEC 5.1)."""
    if not force and not refit_due():
        return {"due": False}
    refit = rater_models_refit()
    if refit is None:
        return {"raters": 0}
    log.info("rater models refitted: %s", refit)
    return {"raters": refit.raters, "reopened": refit.pairs_reopened, "settled": refit.pairs_settled}


@shared_task(
    base=OffRequestTask,
    name="ratinggame.tasks.import_job_run",
    queue="default",
    acks_late=True,
    soft_time_limit=TIME_LIMIT_SECONDS - 5 * 60,
    time_limit=TIME_LIMIT_SECONDS,
)
def import_job_run(job_id: int) -> str:
    """Import the manifest of job ``job_id``; idempotent (a job runs once)."""
    return import_job_execute(job_id)


@shared_task(base=BackgroundTask, name="ratinggame.tasks.sweep_imports", acks_late=True, time_limit=120)
def sweep_imports() -> dict:
    """Periodic: import jobs whose worker died (no heartbeat for the sweep's period) are sent
    again while their files are there, else marked failed with the reason."""
    return import_jobs_sweep()


@shared_task(base=BackgroundTask, name="ratinggame.tasks.sweep_storage", acks_late=True, time_limit=30 * 60)
def sweep_storage() -> dict:
    """Periodic: settle lost imports first (their folders are then free), then delete what no row uses any more."""
    return {
        "imports": import_jobs_sweep(),
        "folders_deleted": import_folders_delete(older_than=ORPHAN_GRACE),
        "images_deleted": media_orphans_delete(older_than=ORPHAN_GRACE),
    }


@shared_task(
    base=OffRequestTask,
    name="ratinggame.tasks.make_derivatives",
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    max_retries=3,
    retry_backoff=True,
    soft_time_limit=120,
    time_limit=150,
)
def make_derivatives(image_id: int) -> int:
    """The display copies of one stored image; nothing when it has them (a redelivered message)."""
    image = Image.objects.filter(pk=image_id, derivatives=[]).first()
    if image is None:
        return 0
    return len(derivatives_make(image=image))


@shared_task(base=BackgroundTask, name="ratinggame.tasks.release_expired_assignments", acks_late=True, time_limit=120)
def release_expired_assignments() -> int:
    """Periodic: give the slots of expired, unsubmitted game assignments back to their pairs (SPEC 5).

    Off the rating path: a serve sweeps only when the rater finds no pair. Idempotent (each slot
    is released by a conditional UPDATE under its pair's lock). Returns how many were released.
    """
    return assignments_release_expired(now=timezone.now(), limit=RELEASE_BATCH)
