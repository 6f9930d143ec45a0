"""Celery tasks of the ratinggame app (default queue), sent with ``ratinggame.background.dispatch``
or by beat: display copies of new images, and abandoned game slots given back."""

from celery import shared_task
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from ratinggame.background import BackgroundTask
from ratinggame.game.assignment import assignments_release_expired
from ratinggame.models import Image
from ratinggame.pairs.derivatives import derivatives_make

# Expired slots released per run: a run takes a second or so at most, and what it leaves is
# taken by the next run (or by a rater who finds no pair).
RELEASE_BATCH = 1000


@shared_task(
    base=BackgroundTask,
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
