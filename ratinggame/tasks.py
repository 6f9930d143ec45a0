"""Celery tasks of the ratinggame app (default queue). Each calls the app's services."""

import logging
from datetime import timedelta

from celery import shared_task

from ratinggame.background import BackgroundTask
from ratinggame.game.aggregates import pairs_aggregates_check
from ratinggame.pairs.jobs import TIME_LIMIT_SECONDS, import_folders_delete, import_job_execute, import_jobs_resume
from ratinggame.pairs.services import media_orphans_delete

log = logging.getLogger(__name__)

# Files no row names are kept this long: far longer than any import runs (the import task
# stops after 2 hours), so a file whose row is about to be committed is never taken.
ORPHAN_GRACE = timedelta(days=1)


@shared_task(base=BackgroundTask, name="ratinggame.tasks.check_aggregates", acks_late=True, time_limit=30 * 60)
def check_aggregates() -> int:
    """Periodic: repair pairs whose aggregates drifted from their rows, each logged as an error
    (a drift means some write went around the game's services, and later raters were scored
    against a wrong consensus until now). Returns how many pairs were repaired."""
    drifts = pairs_aggregates_check(repair=True)
    for drift in drifts:
        log.error("rating aggregates drifted, repaired: %s", drift)
    return len(drifts)


@shared_task(
    base=BackgroundTask,
    name="ratinggame.tasks.import_job_run",
    queue="default",
    acks_late=True,
    soft_time_limit=TIME_LIMIT_SECONDS - 5 * 60,
    time_limit=TIME_LIMIT_SECONDS,
)
def import_job_run(job_id: int) -> str:
    """Import the manifest of job ``job_id``; idempotent (a job runs once)."""
    return import_job_execute(job_id)


@shared_task(base=BackgroundTask, name="ratinggame.tasks.sweep_storage", acks_late=True, time_limit=30 * 60)
def sweep_storage() -> dict:
    """Periodic: resume imports a dead worker left, then delete what no row uses any more."""
    return {
        "imports_resumed": import_jobs_resume(),
        "folders_deleted": import_folders_delete(older_than=ORPHAN_GRACE),
        "images_deleted": media_orphans_delete(older_than=ORPHAN_GRACE),
    }
