"""Celery tasks of the scoring app. Model code (torch, open_clip) is imported inside tasks only.

prime_pairs and train_predictor run on the `gpu` queue (CELERY_TASK_ROUTES) and never inside
the web process (``inline_when_eager = False``); the sweep, the calibration refit and the
dataset export on `default`. Every task is sent with ``ratinggame.background.BackgroundTask``.
"""

import logging
from datetime import timedelta

from celery import shared_task
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from ratinggame.background import BackgroundTask
from scoring.export.jobs import TIME_LIMIT_SECONDS, export_job_execute

log = logging.getLogger(__name__)

PRIME_SOFT_TIME_LIMIT = 600
PRIME_TIME_LIMIT = 660  # PRIMING_STALE_SECONDS (default 900) must stay above this
MESSAGE_CHUNK = 256  # pairs per message: a large import is split so each task fits the limits
SWEEP_LIMIT = 20_000


class GpuTask(BackgroundTask):
    """Model work: never run inside the web process (it would import torch there)."""

    inline_when_eager = False


@shared_task(
    base=GpuTask,
    name="scoring.tasks.prime_pairs",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    max_retries=3,
    retry_backoff=True,
    retry_backoff_max=120,
    soft_time_limit=PRIME_SOFT_TIME_LIMIT,
    time_limit=PRIME_TIME_LIMIT,
)
def prime_pairs(pair_ids: list[int]) -> dict:
    """Prime these game pairs (claimed first, so duplicates and redeliveries are harmless)."""
    from scoring.priming.runner import run_priming

    pair_ids = [int(i) for i in pair_ids]
    if len(pair_ids) > MESSAGE_CHUNK:
        for start in range(0, len(pair_ids), MESSAGE_CHUNK):
            prime_pairs.delay(pair_ids[start : start + MESSAGE_CHUNK])
        return {"split_into": -(-len(pair_ids) // MESSAGE_CHUNK)}
    return run_priming(pair_ids)


@shared_task(base=BackgroundTask, name="scoring.tasks.sweep_pending_priming", acks_late=True)
def sweep_pending_priming() -> int:
    """Re-queue game pairs left pending or with a stale running claim.

    Pending covers a broker that was down, a GPU worker that was away, and pairs waiting
    for a priming model (scoring.priming.runner.NO_MODEL_NOTE): those are primed by the first
    sweep after a worker has a model. Failed pairs are not retried here (an undecodable
    image would fail every time): `manage.py prime_pairs` and the admin's "Retry priming"
    action retry them. For a pending pair, priming_claimed_at records when the sweep last
    queued it, so a pair is queued again at most once per PRIMING_STALE_SECONDS.
    Returns the number of pairs queued.
    """
    from django.db.models import Q

    from ratinggame.models import CaptionPair, Pool, PrimingStatus
    from scoring.priming.runner import stale_after

    now = timezone.now()
    cutoff = now - stale_after()
    recent = now - timedelta(seconds=60)  # leave just-created pairs to their on_commit dispatch
    due = Q(pool=Pool.GAME) & (
        Q(priming_status=PrimingStatus.PENDING, priming_claimed_at__isnull=True, created_at__lt=recent)
        | Q(priming_status=PrimingStatus.PENDING, priming_claimed_at__lt=cutoff)
        | Q(priming_status=PrimingStatus.RUNNING, priming_claimed_at__lt=cutoff)
    )
    ids = list(CaptionPair.objects.filter(due).order_by("pk").values_list("pk", flat=True)[:SWEEP_LIMIT])
    CaptionPair.objects.filter(pk__in=ids, priming_status=PrimingStatus.PENDING).update(priming_claimed_at=now)
    for start in range(0, len(ids), MESSAGE_CHUNK):
        prime_pairs.delay(ids[start : start + MESSAGE_CHUNK])
    return len(ids)


@shared_task(base=BackgroundTask, name="scoring.tasks.refit_calibrations")
def refit_calibrations() -> list[int]:
    from scoring.priming.calibration_service import refit_all

    return [c.pk for c in refit_all()]


@shared_task(
    base=GpuTask,
    name="scoring.tasks.train_predictor",
    acks_late=True,
    soft_time_limit=3 * 3600,
    time_limit=3 * 3600 + 60,
)
def train_predictor() -> dict:
    from scoring.priming.model_vicr_training import train_from_db

    try:
        run = train_from_db()
    except ValueError as exc:
        log.info("predictor not trained: %s", exc)
        return {"trained": False, "reason": str(exc)}
    return {"trained": True, "run": run.pk, "active": run.active, "metrics": run.metrics}


@shared_task(
    base=BackgroundTask,
    name="scoring.tasks.export_job_run",
    queue="default",
    acks_late=True,
    soft_time_limit=TIME_LIMIT_SECONDS - 5 * 60,
    time_limit=TIME_LIMIT_SECONDS,
)
def export_job_run(job_id: int) -> str:
    """Build the export of job ``job_id`` and zip it; idempotent (a job runs once)."""
    return export_job_execute(job_id)
