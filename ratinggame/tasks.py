"""Celery tasks of the ratinggame app (default queue). Each calls the app's services."""

import logging

from celery import shared_task

from ratinggame.background import BackgroundTask
from ratinggame.game.aggregates import pairs_aggregates_check

log = logging.getLogger(__name__)


@shared_task(base=BackgroundTask, name="ratinggame.tasks.check_aggregates", acks_late=True, time_limit=30 * 60)
def check_aggregates() -> int:
    """Periodic: repair pairs whose aggregates drifted from their rows, each logged as an error
    (a drift means some write went around the game's services, and later raters were scored
    against a wrong consensus until now). Returns how many pairs were repaired."""
    drifts = pairs_aggregates_check(repair=True)
    for drift in drifts:
        log.error("rating aggregates drifted, repaired: %s", drift)
    return len(drifts)
