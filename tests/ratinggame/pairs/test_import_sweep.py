"""Every import job reaches a final state (issue 21, item 2): a job whose worker died is sent
again or failed with the reason within the sweep's period, even when its folder is gone; a
worker that dies after the rows are committed leaves a finished job; a followed job is settled
when it is read (the embedded mode has no Celery beat)."""

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from ratinggame.models import CaptionPair, ImportJob
from ratinggame.pairs import jobs
from ratinggame.pairs.jobs import MAX_ATTEMPTS, import_job_execute, import_job_start, import_jobs_sweep
from tests.factories import png_bytes
from tests.ratinggame.api_helpers import researcher, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _to_a_worker(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "IMPORT_INLINE_MAX_ROWS": 1}


def queued_job() -> ImportJob:
    manifest = SimpleUploadedFile("pairs.csv", b"image,caption\np0.png,a\np1.png,b\n", "text/csv")
    images = [SimpleUploadedFile(f"p{i}.png", png_bytes(900 + i), "image/png") for i in range(2)]
    return import_job_start(created_by=researcher(), manifest=manifest, files=images)


def killed_while_running(job: ImportJob, *, silent_for: float) -> None:
    """The state a worker killed mid-run leaves: running, its last heartbeat ``silent_for`` s ago."""
    now = timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.RUNNING,
        started_at=now - timedelta(seconds=silent_for + 5),
        heartbeat_at=now - timedelta(seconds=silent_for),
        progress=0.8,
        progress_message="Writing 2 pairs",
    )


def test_a_dead_job_whose_folder_is_gone_is_failed_with_the_reason_within_the_period(settings, sent_tasks):
    # The job: killed at 80% with its folder already removed, it stayed "running" for good.
    period = settings.RATINGGAME["IMPORT_SWEEP_SECONDS"]
    job = queued_job()
    shutil.rmtree(Path(settings.MEDIA_ROOT) / job.folder)
    killed_while_running(job, silent_for=period - 5)
    assert import_jobs_sweep() == {"resumed": [], "failed": []}  # within the period its worker may be alive
    killed_while_running(job, silent_for=period + 1)
    assert import_jobs_sweep() == {"resumed": [], "failed": [job.pk]}
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED and job.finished_at is not None
    assert "before it wrote anything" in job.error and "upload it again" in job.error
    assert import_jobs_sweep() == {"resumed": [], "failed": []}  # settled once


def test_a_dead_job_whose_files_are_there_is_sent_again_and_finishes(
    settings, sent_tasks, django_capture_on_commit_callbacks
):
    job = queued_job()
    killed_while_running(job, silent_for=settings.RATINGGAME["IMPORT_SWEEP_SECONDS"] + 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert import_jobs_sweep() == {"resumed": [job.pk], "failed": []}
    assert sent_tasks == [("ratinggame.tasks.import_job_run", (job.pk,))]
    assert import_job_execute(job.pk) == "done"
    assert CaptionPair.objects.count() == 2


def test_a_job_that_keeps_killing_its_worker_is_failed_after_its_attempts(settings, sent_tasks):
    job = queued_job()
    silent = settings.RATINGGAME["IMPORT_SWEEP_SECONDS"] + 1
    for _ in range(MAX_ATTEMPTS - 1):
        killed_while_running(job, silent_for=silent)
        assert import_jobs_sweep()["resumed"] == [job.pk]
    killed_while_running(job, silent_for=silent)
    assert import_jobs_sweep() == {"resumed": [], "failed": [job.pk]}
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED and f"{MAX_ATTEMPTS} times" in job.error


def test_a_worker_killed_after_the_commit_leaves_a_finished_job(settings, sent_tasks, monkeypatch):
    # The 100 pairs were committed and the job still said "running": the job now ends
    # in the rows' own transaction, so whatever kills the worker after the commit finds it done.
    job = queued_job()

    def killed(*args, **kwargs):
        raise SystemExit("worker killed")

    monkeypatch.setattr(jobs.shutil, "rmtree", killed)
    with pytest.raises(SystemExit):
        import_job_execute(job.pk)
    job.refresh_from_db()
    assert (job.status, job.progress, job.report["pairs_created"]) == (ImportJob.Status.DONE, 1.0, 2)
    assert CaptionPair.objects.count() == 2


def test_a_followed_job_whose_worker_died_is_settled_when_read(settings, sent_tasks):
    job = queued_job()
    shutil.rmtree(Path(settings.MEDIA_ROOT) / job.folder)
    killed_while_running(job, silent_for=settings.RATINGGAME["IMPORT_SWEEP_SECONDS"] + 1)
    body = token_client(researcher(username="reader")).get(f"/api/imports/{job.pk}/").json()
    assert body["status"] == "failed" and "upload it again" in body["error"]


@pytest.mark.django_db(transaction=True)  # the heartbeat's thread has a connection of its own
def test_a_running_job_writes_its_heartbeat(settings, sent_tasks):
    settings.RATINGGAME = {**settings.RATINGGAME, "IMPORT_HEARTBEAT_SECONDS": 0.05}
    job = queued_job()
    before = timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.RUNNING, started_at=before)
    claimed_at = ImportJob.objects.get(pk=job.pk).started_at
    with jobs.Heartbeat(job.pk, claimed_at=claimed_at) as beating:
        beating.stopped.wait(0.3)
    beat = ImportJob.objects.get(pk=job.pk).heartbeat_at
    assert beat is not None and beat >= before


def test_a_run_taken_for_dead_writes_nothing_once_the_job_was_claimed_again(settings, sent_tasks, monkeypatch):
    # The sweep sent the job again while its first run was only slow: the first run to write must
    # hold the job's current claim, or its rows are rolled back (never two imports of one upload).
    job = queued_job()
    import_manifest = jobs.import_manifest

    def claimed_again_meanwhile(**kwargs):
        ImportJob.objects.filter(pk=job.pk).update(started_at=timezone.now() + timedelta(seconds=1))
        return import_manifest(**kwargs)

    monkeypatch.setattr(jobs, "import_manifest", claimed_again_meanwhile)
    assert import_job_execute(job.pk) == "skipped"
    assert not CaptionPair.objects.exists()
    assert (Path(settings.MEDIA_ROOT) / job.folder).is_dir()  # the new run's files are left to it
