"""Point this test process's Celery app at a real broker for a block, then back to inline tasks.

One helper for every test that sends tasks (real workers, a broker that is down, a broker that
restarts): kombu keeps its connection and producer pools in process-wide groups keyed by the
broker URL, so a pool that one test force-closed would be handed to the next test sending to
the same URL ("Acquire on closed pool"). Every switch therefore closes and forgets them all.
"""

import contextlib
from collections.abc import Iterator

from celery import Celery


def _fresh_pools(app: Celery) -> None:
    from kombu import pools

    pools.reset()  # closes every pooled connection and empties the groups
    app._pool = None
    app.amqp._producer_pool = None


@contextlib.contextmanager
def celery_sending_to(broker_url: str) -> Iterator[Celery]:
    """Tasks sent in the block go to ``broker_url`` (task_always_eager off)."""
    from ratinggame.celery import app

    saved = (app.conf.broker_url, app.conf.task_always_eager)
    _fresh_pools(app)
    app.conf.broker_url, app.conf.task_always_eager = broker_url, False
    try:
        yield app
    finally:
        _fresh_pools(app)
        app.conf.broker_url, app.conf.task_always_eager = saved
