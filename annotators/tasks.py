"""Celery tasks of the annotators app (default queue): the competency analysis."""

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from annotators.competency.jobs import (
    competency_analysis_fail,
    competency_analysis_run,
    competency_refresh_due,
    competency_refresh_request,
)
from ratinggame.background import BackgroundTask


@shared_task(
    base=BackgroundTask,
    name="annotators.tasks.refresh_competency",
    acks_late=True,
    soft_time_limit=15 * 60,
    time_limit=16 * 60,
)
def refresh_competency(analysis_id: int) -> str:
    """Run the queued CompetencyAnalysis ``analysis_id`` (idempotent: claimed by a conditional UPDATE)."""
    try:
        return competency_analysis_run(analysis_id=analysis_id)
    except SoftTimeLimitExceeded:
        return competency_analysis_fail(analysis_id=analysis_id, error="stopped: over the time limit")


@shared_task(base=BackgroundTask, name="annotators.tasks.maybe_refresh_competency", acks_late=True, time_limit=60)
def maybe_refresh_competency() -> int | None:
    """Periodic, cheap: request an analysis once RATINGGAME_COMPETENCY_EVERY new game ratings arrived."""
    if not competency_refresh_due():
        return None
    return competency_refresh_request().pk
