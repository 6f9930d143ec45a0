"""Celery task of the dataset export (default queue). Loaded through CELERY_IMPORTS in settings,
because autodiscovery imports only `tasks` modules and scoring/tasks.py is the priming tasks'."""

from celery import shared_task

# Hard limit of the task; a job still "running" this long after it started lost its worker.
TIME_LIMIT_SECONDS = 2 * 60 * 60


@shared_task(
    name="scoring.tasks_export.export_job_run",
    queue="default",
    acks_late=True,
    soft_time_limit=TIME_LIMIT_SECONDS - 5 * 60,
    time_limit=TIME_LIMIT_SECONDS,
)
def export_job_run(job_id: int) -> str:
    """Build the export of job ``job_id`` and zip it; idempotent (a job runs once)."""
    from scoring.export.jobs import export_job_execute

    return export_job_execute(job_id)
