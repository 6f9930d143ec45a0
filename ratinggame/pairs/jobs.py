"""Manifest imports as tracked jobs (ImportJob): start one from an upload, run it, settle it, clean up.

``import_job_start`` stores the upload in the job's folder (MEDIA_ROOT/imports/<name>/, shared
by the web and worker machines like the images), measures its work (rows, files, bytes, and
the pixels the image headers declare: ``ratinggame.pairs.workload``) and runs the import: at
once, in the calling process, when the work is within every inline limit, else on a worker
(``ratinggame.tasks.import_job_run``; the embedded mode's thread without a broker) while the
caller answers with the job to follow. Either way the importer is ``manage.py import_pairs``'s
(``ratinggame.pairs.importing``): every row checked first, all or nothing, the refused rows
named on the job. Display copies are never made here: each stored image asks for its own task.
The job's life (claim, progress, end, a broker that did not answer) is
``ratinggame.background.TrackedJobs``.

Every job reaches a final state. The job is marked done in the transaction that writes its
rows, so a worker that dies after that commit leaves a finished job. A running job writes a
heartbeat (``heartbeat_at``); one whose heartbeat is older than the sweep's period lost its
worker before writing anything: ``import_jobs_sweep`` (Celery beat, every
IMPORT_SWEEP_SECONDS, and any read of the job) sends it again while its files are there, at
most MAX_ATTEMPTS times, and otherwise marks it failed with the reason.
``import_folders_delete`` removes the folders no queued or running job uses.
"""

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import DatabaseError, connection
from django.db.models import Q
from django.utils import timezone

from ratinggame.background import NotQueued, TrackedJobs, dispatch
from ratinggame.models import ImportJob, Pool
from ratinggame.pairs.importing import ImportFailed, ImportReport, ManifestError, import_manifest, read_manifest_rows
from ratinggame.pairs.uploads import IMAGES, upload_store, zips_unpack
from ratinggame.pairs.validation import PairInvalid, clean_pool
from ratinggame.pairs.workload import InlineLimits, runs_inline, workload_measure

log = logging.getLogger(__name__)

IMPORTS_DIR = "imports"
# Hard limit of the import task; a job still "running" this long after it started lost its worker.
TIME_LIMIT_SECONDS = 2 * 60 * 60
JOBS = TrackedJobs(ImportJob, stale_after=timedelta(seconds=TIME_LIMIT_SECONDS))
# Runs of one job that ended with their worker: past it the job fails instead of killing another.
MAX_ATTEMPTS = 3


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
    limits = InlineLimits.from_settings(settings.RATINGGAME)
    try:
        manifest_path = upload_store(folder=folder, manifest=manifest, files=files)
        rows = len(read_manifest_rows(manifest_path.read_bytes(), manifest_path.name))
        work = workload_measure(folder=folder, rows=rows, limits=limits)
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
    if runs_inline(work, limits):
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
    if not JOBS.claim(job_id, progress=0.0, progress_message="Starting", error="", heartbeat_at=timezone.now()):
        log.info("import job %s is not queued (or is running elsewhere): skipped", job_id)
        return "skipped"
    job = ImportJob.objects.get(pk=job_id)
    folder = Path(settings.MEDIA_ROOT) / job.folder
    params = job.params
    reporter = JOBS.progress_writer(job_id)
    taken_over = False
    try:
        with Heartbeat(job_id, claimed_at=job.started_at):
            reporter(0.0, "Unpacking the images")
            zips_unpack(folder)
            report = import_manifest(
                manifest=folder / params["manifest"],
                images_dir=folder / IMAGES,
                images_named="the uploaded images",
                pool=params["pool"],
                dry_run=params["dry_run"],
                skip_invalid=params["skip_invalid"],
                progress=reporter,
                # Done in the rows' own transaction: a worker that dies after the commit
                # leaves a finished job, never one "running" for good.
                on_written=lambda written: _finish(job_id, written, claimed_at=job.started_at),
            )
    except TakenOver:
        taken_over = True  # the files are the new run's now
        log.warning("import job %s was taken over by another run: this one wrote nothing", job_id)
        return "skipped"
    except ImportFailed as failed:
        message = f"{len(failed.report.errors)} invalid row(s); nothing was imported."
        return JOBS.fail(job_id, message, progress_message="Failed", **_report_fields(failed.report))
    except (ManifestError, PairInvalid) as error:
        return JOBS.fail(job_id, str(error), progress_message="Failed")
    except Exception as error:
        log.exception("import job %s failed", job_id)
        return JOBS.fail(job_id, f"The import failed on the server ({type(error).__name__}); nothing was imported.")
    finally:
        if not taken_over:
            shutil.rmtree(folder, ignore_errors=True)
    if report.written:
        return JOBS.done  # finished with its rows (_finish)
    return _finish(job_id, report, claimed_at=job.started_at)


class TakenOver(Exception):
    """This run was taken for dead and the job claimed again: it must write nothing."""


def _finish(job_id: int, report: ImportReport, *, claimed_at: datetime) -> str:
    """The job done, by the run that holds its claim; else TakenOver (inside the rows'
    transaction, that rolls the rows back: two runs of one job never both write)."""
    fields = _report_fields(report)
    if not JOBS.finish_claimed(job_id, claimed_at, progress=1.0, progress_message="Done", **fields):
        raise TakenOver
    return JOBS.done


class Heartbeat:
    """While a job runs: ``heartbeat_at`` written every IMPORT_HEARTBEAT_SECONDS by a thread
    with its own database connection (the job's may be inside a long transaction)."""

    def __init__(self, job_id: int, *, claimed_at: datetime) -> None:
        self.job_id = job_id
        self.claimed_at = claimed_at
        self.period = settings.RATINGGAME["IMPORT_HEARTBEAT_SECONDS"]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"import-{job_id}-heartbeat", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        self.thread.join()

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(self.period):
                try:
                    running = ImportJob.objects.filter(
                        pk=self.job_id, status=ImportJob.Status.RUNNING, started_at=self.claimed_at
                    )
                    running.update(heartbeat_at=timezone.now())
                except DatabaseError as error:  # the next beat tries again; the sweep allows for several
                    log.warning("import job %s: heartbeat not written (%s)", self.job_id, error)
        finally:
            connection.close()


def _silent_since() -> datetime:
    return timezone.now() - timedelta(seconds=settings.RATINGGAME["IMPORT_SWEEP_SECONDS"])


def _lost() -> Q:
    """Running jobs whose worker is gone (no heartbeat for the sweep's period), and queued jobs
    whose message was lost (waiting longer than a run may last)."""
    silent = _silent_since()
    return Q(status=ImportJob.Status.RUNNING) & (
        Q(heartbeat_at__lt=silent) | Q(heartbeat_at__isnull=True, started_at__lt=silent)
    ) | Q(status=ImportJob.Status.QUEUED, created_at__lt=timezone.now() - JOBS.stale_after)


def import_job_settle(job: ImportJob) -> str | None:
    """Bring a lost job (see ``_lost``) to a state that moves: sent again while its files are
    there and it has runs left, else failed with the reason. Returns "resumed", "failed" or
    None (the job is not lost). Conditional updates: a sweep and a read at once act once."""
    lost = ImportJob.objects.filter(_lost(), pk=job.pk, status=job.status)
    attempts = job.params.get("attempts", 0) + (job.status == ImportJob.Status.RUNNING)
    if (Path(settings.MEDIA_ROOT) / job.folder).is_dir() and attempts < MAX_ATTEMPTS:
        params = {**job.params, "attempts": attempts}
        if not lost.update(status=ImportJob.Status.QUEUED, params=params, progress=0.0, progress_message="Queued"):
            return None
        # A broker that does not answer leaves the job queued, for the next sweep.
        dispatch("ratinggame.tasks.import_job_run", job.pk)
        return "resumed"
    if attempts >= MAX_ATTEMPTS:
        error = f"The import stopped with its worker {attempts} times; nothing was imported. Split the upload."
    else:
        error = (
            "The import stopped before it wrote anything (its worker or its message was lost) "
            "and its upload is gone: upload it again."
        )
    updated = lost.update(
        status=ImportJob.Status.FAILED, error=error, finished_at=timezone.now(), progress_message="Failed"
    )
    return "failed" if updated else None


def import_job_read(pk: int) -> ImportJob:
    """The job, settled first when it is lost: without Celery beat (the embedded mode) the
    page or API client that follows a job is what notices its worker died. Raises DoesNotExist."""
    job = ImportJob.objects.get(pk=pk)
    if job.status in (ImportJob.Status.QUEUED, ImportJob.Status.RUNNING) and import_job_settle(job):
        job.refresh_from_db()
    return job


def import_jobs_sweep() -> dict[str, list[int]]:
    """Settle every lost job (``import_job_settle``): the periodic sweep."""
    settled: dict[str, list[int]] = {"resumed": [], "failed": []}
    for job in ImportJob.objects.filter(_lost()):
        outcome = import_job_settle(job)
        if outcome is not None:
            settled[outcome].append(job.pk)
            log.warning("import job %s lost its worker: %s", job.pk, outcome)
    return settled


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
