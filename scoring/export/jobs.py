"""Dataset exports as tracked jobs (ExportJob): start one, run it, find its archive.

A job is started by a researcher (page or API), runs in a Celery worker on the default queue
(``scoring.tasks.export_job_run``), writes its progress on the job row, and ends with a zip at
MEDIA_ROOT/exports/<job id>.zip, served only through a permission-checked view. Its life
(claim, progress, end, a broker that did not answer) is ``ratinggame.background.TrackedJobs``.
"""

import logging
import os
import shutil
from datetime import timedelta
from pathlib import Path

from django.conf import settings

from ratinggame.background import TrackedJobs, dispatch
from ratinggame.models import MIN_HUMAN_RATINGS, Assignment, Pool
from scoring.export.bundle import export_build
from scoring.export.files import folder_zip
from scoring.export.formats import DEFAULT_FORMATS, formats_parse
from scoring.models import ExportJob

log = logging.getLogger(__name__)

EXPORT_DIR = "exports"
# Hard limit of the export task; a job still "running" this long after it started lost its worker.
TIME_LIMIT_SECONDS = 2 * 60 * 60
JOBS = TrackedJobs(ExportJob, stale_after=timedelta(seconds=TIME_LIMIT_SECONDS))


def export_job_start(
    *,
    created_by,
    min_ratings: int = MIN_HUMAN_RATINGS,
    seed: int = 0,
    formats=DEFAULT_FORMATS,
    with_images: bool = False,
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
    dispatch(
        "scoring.tasks.export_job_run",
        job.pk,
        on_not_queued=lambda reason: JOBS.not_queued(job.pk, "the export", reason, progress_message="Failed"),
    )
    return job


def export_download_refusal(user) -> str:
    """Why ``user`` may not download an export now; "" when they may.

    An export holds every rater's ratings and the pairs' consensus: not while ``user`` holds
    an open game assignment (SPEC 5, whatever roles they also hold), which may be in it.
    """
    if Assignment.objects.pairs_held_by(user).filter(stage=Pool.GAME).exists():
        return "You are rating a game pair: rate it (or let it expire) first, then download the export."
    return ""


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
    if not JOBS.claim(job_id, progress=0.0, progress_message="Starting", error=""):
        log.info("export job %s is not queued (or is running elsewhere): skipped", job_id)
        return "skipped"
    job = ExportJob.objects.get(pk=job_id)
    exports = Path(settings.MEDIA_ROOT) / EXPORT_DIR
    build = exports / f".build-{job_id}"
    archive = exports / f"{job_id}.zip"
    partial = exports / f"{job_id}.zip.part"
    reporter = JOBS.progress_writer(job_id)
    try:
        shutil.rmtree(build, ignore_errors=True)
        params = job.params
        counts = export_build(
            out_dir=build,
            min_ratings=params.get("min_ratings", MIN_HUMAN_RATINGS),
            seed=params.get("seed", 0),
            formats=params.get("formats", DEFAULT_FORMATS),
            with_images=params.get("with_images", False),
            progress=lambda fraction, message: reporter(0.9 * fraction, message),
        )
        reporter(0.92, "Compressing the archive")
        folder_zip(build, partial, prefix=f"export-{job_id}")
        os.replace(partial, archive)
    except Exception as error:
        log.exception("export job %s failed", job_id)
        partial.unlink(missing_ok=True)
        return JOBS.fail(job_id, f"{type(error).__name__}: {error}", progress_message="Failed")
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return JOBS.finish(
        job_id, progress=1.0, progress_message="Done", archive=f"{EXPORT_DIR}/{job_id}.zip", counts=counts
    )
