"""The Celery application. Queues: `default` (exports, analysis) and `gpu` (model priming)."""

import os

from celery import Celery
from celery.signals import setup_logging
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratinggame.settings")

app = Celery("ratinggame")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name) for name in ("default", "gpu")]
app.autodiscover_tasks()


@setup_logging.connect
def logging_from_settings(*, loglevel: int | None = None, **kwargs) -> None:
    """Workers and beat log as the web tier does, with the settings' LOGGING (its format,
    DJANGO_LOG_FORMAT, and the request id field), at the level of their ``--loglevel``.

    Without a receiver of this signal Celery replaces the root logger's handlers with its own,
    in its own plain format, whatever DJANGO_LOG_FORMAT says.
    """
    from django.conf import settings
    from django.utils.log import configure_logging

    config = settings.LOGGING
    if loglevel:
        config = {**config, "root": {**config["root"], "level": loglevel}}
    configure_logging(settings.LOGGING_CONFIG, config)
