"""The Celery application. Queues: `default` (exports, analysis) and `gpu` (model priming)."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratinggame.settings")

app = Celery("ratinggame")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name) for name in ("default", "gpu")]
app.autodiscover_tasks()
