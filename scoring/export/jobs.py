"""Dataset exports as tracked jobs (ExportJob): start one, run it, find its archive.

A job is started by a researcher (page or API), runs in a Celery worker on the default queue
(`scoring.tasks_export.export_job_run`), writes its progress on the job row, and ends with a
zip at MEDIA_ROOT/exports/<job id>.zip, served only through a permission-checked view.
"""

import logging
import os
import shutil
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from scoring.export.bundle import export_build
from scoring.export.files import folder_zip, formats_parse
from scoring.models import ExportJob
from scoring.tasks_export import TIME_LIMIT_SECONDS, export_job_run

log = logging.getLogger(__name__)

EXPORT_DIR = "exports"
_PROGRESS_STEP = 0.01  # write progress to the database at most every 1%


def export_job_start(
    *, created_by, min_ratings: int = 3, seed: int = 0, formats=("csv", "jsonl"), with_images: bool = False
) -> ExportJob:
    """Create a queued job and send it to the worker once the transaction commits."""
    params = {
        "min_ratings": int(min_ratings),
        "seed": int(seed),
        "formats": list(formats_parse(formats)),
        "with_images": bool(with_images),
    }
    if params["min_ratings"] < 1:
        raise ValueError("min_ratings must be at least 1")
    job = ExportJob.objects.create(created_by=created_by, params=params, progress_message="Queued")

    transaction.on_commit(lambda: _send(job.pk))
    return job


def _send(job_id: int) -> None:
    try:
        export_job_run.delay(job_id)
    except Exception as error:
        # Broker unreachable: say so on the job (the page shows it) instead of failing the request.
        log.exception("could not queue export job %s", job_id)
        ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.QUEUED).update(
            status=ExportJob.Status.FAILED,
            error=f"Could not queue the export: {type(error).__name__}: {error}",
            progress_message="Failed",
            finished_at=timezone.now(),
        )


def export_job_archive_path(job: ExportJob) -> Path | None:
    """The job's zip on disk, when it is done and the file is inside MEDIA_ROOT/exports."""
    if job.status != ExportJob.Status.DONE or not job.archive:
        return None
    root = (Path(settings.MEDIA_ROOT) / EXPORT_DIR).resolve()
    path = (Path(settings.MEDIA_ROOT) / job.archive).resolve()
    if root not in path.parents or not path.is_file():
        return None
    return path


def export_job_execute(job_id: int) -> str:
    """Run one job: claim it, build the bundle, zip it; returns the final status (or "skipped")."""
    if not _claim(job_id):
        log.info("export job %s is not queued (or is running elsewhere): skipped", job_id)
        return "skipped"
    job = ExportJob.objects.get(pk=job_id)
    exports = Path(settings.MEDIA_ROOT) / EXPORT_DIR
    build = exports / f".build-{job_id}"
    archive = exports / f"{job_id}.zip"
    partial = exports / f"{job_id}.zip.part"
    reporter = _ProgressWriter(job_id)
    try:
        shutil.rmtree(build, ignore_errors=True)
        params = job.params
        counts = export_build(
            out_dir=build,
            min_ratings=params.get("min_ratings", 3),
            seed=params.get("seed", 0),
            formats=params.get("formats", ("csv", "jsonl")),
            with_images=params.get("with_images", False),
            progress=lambda fraction, message: reporter(0.9 * fraction, message),
        )
        reporter(0.92, "Compressing the archive")
        folder_zip(build, partial, prefix=f"export-{job_id}")
        os.replace(partial, archive)
    except Exception as error:
        log.exception("export job %s failed", job_id)
        ExportJob.objects.filter(pk=job_id).update(
            status=ExportJob.Status.FAILED,
            error=f"{type(error).__name__}: {error}",
            progress_message="Failed",
            finished_at=timezone.now(),
        )
        partial.unlink(missing_ok=True)
        return ExportJob.Status.FAILED
    finally:
        shutil.rmtree(build, ignore_errors=True)
    ExportJob.objects.filter(pk=job_id).update(
        status=ExportJob.Status.DONE,
        progress=1.0,
        progress_message="Done",
        archive=f"{EXPORT_DIR}/{job_id}.zip",
        counts=counts,
        error="",
        finished_at=timezone.now(),
    )
    return ExportJob.Status.DONE


def _claim(job_id: int) -> bool:
    """Conditional UPDATE: only one worker runs a job, and a job orphaned by a dead worker can run again.

    A running job counts as orphaned once the task's hard time limit has passed since it *started*
    (``started_at``): a job that waited long in the queue is not taken from the worker running it.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=TIME_LIMIT_SECONDS)
    claimable = Q(status=ExportJob.Status.QUEUED) | Q(status=ExportJob.Status.RUNNING, started_at__lt=stale)
    return bool(
        ExportJob.objects.filter(claimable, pk=job_id).update(
            status=ExportJob.Status.RUNNING, started_at=now, progress=0.0, progress_message="Starting", error=""
        )
    )


class _ProgressWriter:
    """Writes progress on the job row, at most every 1% or when the message changes."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.written = (-1.0, "")

    def __call__(self, fraction: float, message: str) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        last_fraction, last_message = self.written
        if fraction - last_fraction < _PROGRESS_STEP and message.split(" (")[0] == last_message.split(" (")[0]:
            return
        ExportJob.objects.filter(pk=self.job_id).update(progress=fraction, progress_message=message[:200])
        self.written = (fraction, message)
