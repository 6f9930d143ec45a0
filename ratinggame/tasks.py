"""Celery tasks of the ratinggame app (default queue): abandoned game slots given back."""

from celery import shared_task
from django.utils import timezone

from ratinggame.background import BackgroundTask
from ratinggame.game.assignment import assignments_release_expired

# Expired slots released per run: a run takes a second or so at most, and what it leaves is
# taken by the next run (or by a rater who finds no pair).
RELEASE_BATCH = 1000


@shared_task(base=BackgroundTask, name="ratinggame.tasks.release_expired_assignments", acks_late=True, time_limit=120)
def release_expired_assignments() -> int:
    """Periodic: give the slots of expired, unsubmitted game assignments back to their pairs (SPEC 5).

    Off the rating path: a serve sweeps only when the rater finds no pair. Idempotent (each slot
    is released by a conditional UPDATE under its pair's lock). Returns how many were released.
    """
    return assignments_release_expired(now=timezone.now(), limit=RELEASE_BATCH)
