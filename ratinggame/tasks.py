"""Celery tasks of the ratinggame app (sent with ``ratinggame.background.dispatch``)."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from ratinggame.background import BackgroundTask
from ratinggame.models import Image
from ratinggame.pairs.derivatives import derivatives_make


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
