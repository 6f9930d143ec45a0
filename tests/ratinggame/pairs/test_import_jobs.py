"""Manifest uploads as import jobs (issue 15, part 3): a large one answers 202 at once with the
job to follow and is imported by a worker, all or nothing, with its progress and refused rows;
a worker that died is resumed; what a dead request or import left is cleaned up."""

import os
import time
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from ratinggame.models import CaptionPair, Image, ImportJob
from ratinggame.pairs.jobs import import_folders_delete, import_job_execute, import_job_start, import_jobs_sweep
from tests.factories import png_bytes
from tests.ratinggame.api_helpers import error_of, image_file, researcher, token_client, zip_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _small_inline_limit(settings):
    # Anything over 2 rows is "large" here (100,000 rows answered 500 after 61 s before).
    settings.RATINGGAME = {**settings.RATINGGAME, "IMPORT_INLINE_MAX_ROWS": 2}


def manifest(rows: list[str]) -> SimpleUploadedFile:
    return SimpleUploadedFile("pairs.csv", ("image,caption\n" + "\n".join(rows) + "\n").encode(), "text/csv")


def upload(client, rows: list[str], **fields):
    archive = SimpleUploadedFile("photos.zip", zip_bytes({f"p{i}.png": png_bytes(500 + i) for i in range(4)}))
    body = {"manifest": manifest(rows), "images": [archive, image_file("loose.png", 600)], **fields}
    return client.post("/api/pairs/import", body, format="multipart")


def test_a_large_upload_answers_202_with_the_job_which_a_worker_then_imports(
    settings, sent_tasks, django_capture_on_commit_callbacks
):
    client = token_client(researcher())
    rows = ["p0.png,a", "p1.png,b", "p2.png,c", "loose.png,d"]
    with django_capture_on_commit_callbacks(execute=True):
        answer = upload(client, rows)

    assert answer.status_code == 202, answer.content
    job = answer.json()
    assert answer["Location"] == job["url"] == f"/api/imports/{job['id']}/"
    assert (job["status"], job["params"]["rows"]) == ("queued", 4)
    assert sent_tasks == [("ratinggame.tasks.import_job_run", (job["id"],))]
    assert not CaptionPair.objects.exists()

    assert import_job_execute(job["id"]) == "done"  # what the worker does
    done = client.get(job["url"]).json()
    assert (done["status"], done["progress"], done["progress_message"], done["rows"]) == ("done", 1.0, "Done", [])
    report = done["report"]
    assert (report["rows"], report["pairs_created"], report["images_created"], report["written"]) == (4, 4, 4, True)
    assert report["pair_ids"] == list(CaptionPair.objects.order_by("id").values_list("id", flat=True))
    assert not (settings.MEDIA_ROOT / ImportJob.objects.get().folder).exists()  # the upload is cleaned up
    assert import_job_execute(job["id"]) == "skipped"  # a redelivered message imports nothing twice
    assert CaptionPair.objects.count() == 4


def test_a_large_upload_with_bad_rows_writes_nothing_and_the_job_names_every_row(settings, sent_tasks):
    client = token_client(researcher())
    job = upload(client, ["p0.png,a", "missing.png,b", "p1.png,", "p2.png,c"]).json()
    assert import_job_execute(job["id"]) == "failed"
    failed = client.get(job["url"]).json()
    assert failed["status"] == "failed" and failed["error"] == "2 invalid row(s); nothing was imported."
    assert [row["row"] for row in failed["rows"]] == [3, 4]
    assert (
        "'missing.png' not found" in failed["rows"][0]["reason"] and "caption is empty" in failed["rows"][1]["reason"]
    )
    assert not CaptionPair.objects.exists() and not Image.objects.exists()


def test_a_small_upload_is_imported_within_the_request_as_a_job_too():
    client = token_client(researcher())
    answer = upload(client, ["p0.png,a", "p1.png,b"])
    assert answer.status_code == 201
    job = ImportJob.objects.get()
    assert answer.json()["job_url"] == f"/api/imports/{job.pk}/"
    assert (job.status, job.report["pairs_created"]) == (ImportJob.Status.DONE, 2)
    refused = upload(client, ["p2.png,c", "nowhere.png,d"])
    assert refused.status_code == 400
    assert error_of(refused)["details"]["rows"] == [
        {"row": 3, "reason": "image file 'nowhere.png' not found in the uploaded images"}
    ]


@pytest.mark.django_db(transaction=True)  # commits as a request does: the message is sent at once
def test_a_large_upload_while_the_broker_is_down_is_refused_with_503_and_cleaned_up(settings, monkeypatch):
    from kombu.exceptions import OperationalError

    from ratinggame.background import BackgroundTask
    from ratinggame.celery import app

    app.conf.task_always_eager = False  # _isolated_media puts it back

    def down(self, *args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(BackgroundTask, "apply_async", down)
    answer = upload(token_client(researcher()), ["p0.png,a", "p1.png,b", "p2.png,c"])
    assert answer.status_code == 503
    assert error_of(answer)["code"] == "unavailable" and "Could not queue the import" in error_of(answer)["message"]
    assert not any((settings.MEDIA_ROOT / "imports").iterdir())


def test_a_job_whose_worker_died_is_resumed_and_imports_once(settings, sent_tasks):
    user = researcher()
    job = import_job_start(
        created_by=user,
        manifest=manifest(["p0.png,a", "p1.png,b", "p2.png,c"]),
        files=[SimpleUploadedFile("photos.zip", zip_bytes({f"p{i}.png": png_bytes(700 + i) for i in range(3)}))],
    )
    # A worker claimed it and was killed: the job is running, its files are still there.
    now = timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.RUNNING, started_at=now, heartbeat_at=now)
    assert import_jobs_sweep() == {"resumed": [], "failed": []}  # its heartbeat is fresh: its worker may be alive
    silent = now - timedelta(seconds=settings.RATINGGAME["IMPORT_SWEEP_SECONDS"] + 1)
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=silent)
    assert import_jobs_sweep() == {"resumed": [job.pk], "failed": []}
    assert ImportJob.objects.get(pk=job.pk).status == ImportJob.Status.QUEUED
    assert import_job_execute(job.pk) == "done"
    assert CaptionPair.objects.count() == 3


def test_upload_folders_no_job_uses_are_deleted_once_old(settings, sent_tasks):
    job = import_job_start(created_by=researcher(), manifest=manifest(["p0.png,a", "p1.png,b", "p2.png,c"]), files=[])
    imports = settings.MEDIA_ROOT / "imports"
    stray = imports / "left-by-a-killed-request"
    stray.mkdir()
    (stray / "pairs.csv").write_text("image,caption\n")
    long_ago = time.time() - 3 * 24 * 3600
    for folder in imports.iterdir():
        os.utime(folder, (long_ago, long_ago))
    assert import_folders_delete(older_than=timedelta(days=1)) == ["imports/left-by-a-killed-request"]
    assert (settings.MEDIA_ROOT / job.folder).is_dir()  # queued: still needed


def test_the_hourly_sweep_resumes_lost_imports_and_deletes_what_no_row_uses(
    settings, sent_tasks, django_capture_on_commit_callbacks
):
    from ratinggame.tasks import sweep_storage

    lost = import_job_start(created_by=researcher(), manifest=manifest(["p0.png,a", "p1.png,b", "p2.png,c"]), files=[])
    ImportJob.objects.filter(pk=lost.pk).update(
        status=ImportJob.Status.RUNNING, started_at=timezone.now() - timedelta(hours=3)
    )
    orphan = settings.MEDIA_ROOT / "images" / "cd" / ("cd" + "1" * 62 + ".png")
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(png_bytes(5))
    long_ago = time.time() - 2 * 24 * 3600
    os.utime(orphan, (long_ago, long_ago))
    sent_tasks.clear()

    with django_capture_on_commit_callbacks(execute=True):
        swept = sweep_storage.run()

    assert swept["imports"] == {"resumed": [lost.pk], "failed": []}
    assert sent_tasks == [("ratinggame.tasks.import_job_run", (lost.pk,))]
    assert swept["images_deleted"] == [f"images/cd/{orphan.name}"] and not orphan.exists()
    assert swept["folders_deleted"] == []  # the lost job's files wait for its new run
