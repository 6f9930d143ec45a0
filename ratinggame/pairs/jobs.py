"""Manifest imports as tracked jobs (ImportJob): start one from an upload, run it, clean up after it.

``import_job_start`` stores the upload in the job's folder (MEDIA_ROOT/imports/<name>/, shared
by the web and worker machines like the images) and runs the import: at once, in the calling
process, when the manifest has at most RATINGGAME["IMPORT_INLINE_MAX_ROWS"] rows, else on a
worker (``ratinggame.tasks.import_job_run``) while the caller answers with the job to follow.
Either way the importer is ``manage.py import_pairs``'s (``ratinggame.pairs.importing``):
every row checked first, all or nothing, the refused rows named on the job. The job's life
(claim, progress, end, a broker that did not answer) is ``ratinggame.background.TrackedJobs``.

A worker killed during an import leaves nothing in the database (one transaction) and its
job "running": ``import_jobs_resume`` sends it again once it is stale, from the files still in
its folder. ``import_folders_delete`` removes the folders no queued or running job uses.
"""

import logging
import shutil
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Q
from django.utils import timezone

from ratinggame.background import NotQueued, TrackedJobs, dispatch
from ratinggame.models import ImportJob, Pool
from ratinggame.pairs.importing import ImportFailed, ImportReport, ManifestError, import_manifest, read_manifest_rows
from ratinggame.pairs.uploads import IMAGES, upload_store, zips_unpack
from ratinggame.pairs.validation import PairInvalid, clean_pool

log = logging.getLogger(__name__)

IMPORTS_DIR = "imports"
# Hard limit of the import task; a job still "running" this long after it started lost its worker.
TIME_LIMIT_SECONDS = 2 * 60 * 60
JOBS = TrackedJobs(ImportJob, stale_after=timedelta(seconds=TIME_LIMIT_SECONDS))


def import_job_start(
    *,
    created_by: AbstractBaseUser | None,
    manifest: UploadedFile,
    files: Iterable[UploadedFile],
    pool: str = Pool.GAME,
    dry_run: bool = False,
    skip_invalid: bool = False,
) -> ImportJob:
    """Store the upload (a manifest and image files or zips of them) and import it as a job.

    Raises ManifestError (``UploadRefused`` among them) or PairInvalid, before any job exists,
    when the upload or the manifest as a whole cannot be read; the rows are checked by the job.
    Returns the job as it is when this returns: finished when it ran here, else queued (or
    failed at once when the broker did not answer).
    """
    pool = clean_pool(pool)
    name = uuid.uuid4().hex
    folder = Path(settings.MEDIA_ROOT) / IMPORTS_DIR / name
    try:
        manifest_path = upload_store(folder=folder, manifest=manifest, files=files)
        rows = len(read_manifest_rows(manifest_path.read_bytes(), manifest_path.name))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    params = {"pool": pool, "dry_run": dry_run, "skip_invalid": skip_invalid, "manifest": manifest_path.name}
    job = ImportJob.objects.create(
        created_by=created_by,
        params={**params, "rows": rows},
        folder=f"{IMPORTS_DIR}/{name}",
        progress_message="Queued",
    )
    if rows <= settings.RATINGGAME["IMPORT_INLINE_MAX_ROWS"]:
        import_job_execute(job.pk)
    else:
        dispatch("ratinggame.tasks.import_job_run", job.pk, on_not_queued=lambda reason: _not_queued(job, reason))
    job.refresh_from_db()
    return job


def _not_queued(job: ImportJob, reason: NotQueued) -> None:
    JOBS.not_queued(job.pk, "the import", reason, progress_message="Failed")
    shutil.rmtree(Path(settings.MEDIA_ROOT) / job.folder, ignore_errors=True)


def _report_fields(report: ImportReport) -> dict:
    fields = asdict(report)
    return {"report": {k: v for k, v in fields.items() if k != "errors"}, "row_errors": fields["errors"]}


def import_job_execute(job_id: int) -> str:
    """Run one job: claim it, unpack its zips, import; returns the final status (or "skipped")."""
    if not JOBS.claim(job_id, progress=0.0, progress_message="Starting", error=""):
        log.info("import job %s is not queued (or is running elsewhere): skipped", job_id)
        return "skipped"
    job = ImportJob.objects.get(pk=job_id)
    folder = Path(settings.MEDIA_ROOT) / job.folder
    params = job.params
    reporter = JOBS.progress_writer(job_id)
    try:
        reporter(0.0, "Unpacking the images")
        zips_unpack(folder)
        report = import_manifest(
            manifest=folder / params["manifest"],
            images_dir=folder / IMAGES,
            pool=params["pool"],
            dry_run=params["dry_run"],
            skip_invalid=params["skip_invalid"],
            progress=reporter,
        )
    except ImportFailed as failed:
        message = f"{len(failed.report.errors)} invalid row(s); nothing was imported."
        return JOBS.fail(job_id, message, progress_message="Failed", **_report_fields(failed.report))
    except (ManifestError, PairInvalid) as error:
        return JOBS.fail(job_id, str(error), progress_message="Failed")
    except Exception as error:
        log.exception("import job %s failed", job_id)
        return JOBS.fail(job_id, f"The import failed on the server ({type(error).__name__}); nothing was imported.")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return JOBS.finish(job_id, progress=1.0, progress_message="Done", **_report_fields(report))


def import_jobs_resume() -> list[int]:
    """Send again the jobs whose worker was lost (running, stale) or whose message was (queued,
    stale), when their files are still there; the claim lets exactly one worker run each."""
    cutoff = timezone.now() - JOBS.stale_after
    lost = ImportJob.objects.filter(
        Q(status=ImportJob.Status.RUNNING, started_at__lt=cutoff)
        | Q(status=ImportJob.Status.QUEUED, created_at__lt=cutoff)
    )
    resent = []
    for job in lost:
        if (Path(settings.MEDIA_ROOT) / job.folder).is_dir():
            # A broker that does not answer leaves the job as it is, for the next call.
            dispatch("ratinggame.tasks.import_job_run", job.pk)
            resent.append(job.pk)
    return resent


def import_folders_delete(*, older_than: timedelta) -> list[str]:
    """Delete the upload folders under MEDIA_ROOT/imports that no queued or running job uses
    (left by a request that died before its job was created), once older than ``older_than``."""
    root = Path(settings.MEDIA_ROOT) / IMPORTS_DIR
    if not root.is_dir():
        return []
    waiting = [ImportJob.Status.QUEUED, ImportJob.Status.RUNNING]  # stale ones too: they are resumed
    in_use = set(ImportJob.objects.filter(status__in=waiting).values_list("folder", flat=True))
    cutoff = time.time() - older_than.total_seconds()
    deleted = []
    for folder in root.iterdir():
        name = f"{IMPORTS_DIR}/{folder.name}"
        if name in in_use or folder.stat().st_mtime > cutoff:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        deleted.append(name)
        log.info("deleted the upload folder %s: no import job uses it", name)
    return deleted
