"""The researchers' export pages: who may see them, starting an export, progress, download."""

import io
import re
import zipfile

import pytest
from django.urls import reverse

from annotators.roles import ANNOTATOR, RESEARCHER
from scoring.models import ExportJob
from tests.factories import UserFactory
from tests.ratinggame.api_helpers import role_user
from tests.scoring.export.export_world import world_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client):
    """A researcher, signed in on the test client."""
    user = role_user(RESEARCHER, username="rita")
    client.force_login(user)
    return user


@pytest.fixture
def done_job(settings):
    job = ExportJob.objects.create(status=ExportJob.Status.DONE, progress=1.0)
    path = settings.MEDIA_ROOT / "exports" / f"{job.pk}.zip"
    path.parent.mkdir(parents=True)
    with zipfile.ZipFile(path, "w") as bundle:
        bundle.writestr("export/manifest.json", "{}")
    job.archive = f"exports/{job.pk}.zip"
    job.save()
    return job


def urls(job_id: int = 1) -> list[tuple[str, str]]:
    return [
        ("get", reverse("scoring:research")),
        ("post", reverse("scoring:export-start")),
        ("get", reverse("scoring:export-status", args=[job_id])),
        ("get", reverse("scoring:export-download", args=[job_id])),
    ]


def test_anonymous_visitors_are_sent_to_log_in(client, done_job):
    for method, url in urls(done_job.pk):
        response = getattr(client, method)(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login")) and "next=" in response["Location"]


def test_annotators_are_refused(client, done_job):
    client.force_login(role_user(ANNOTATOR, username="ann"))
    for method, url in urls(done_job.pk):
        assert getattr(client, method)(url, {"min_ratings": 3, "seed": 0, "formats": ["csv"]}).status_code == 403
    assert ExportJob.objects.count() == 1


def test_researchers_and_staff_see_the_page(client, researcher, done_job):
    response = client.get(reverse("scoring:research"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<progress" in page and 'aria-labelledby="export-' in page
    assert reverse("scoring:export-download", args=[done_job.pk]) in page
    assert 'name="min_ratings"' in page and 'value="parquet"' in page
    client.force_login(UserFactory(username="sam", is_staff=True))
    assert client.get(reverse("scoring:research")).status_code == 200


def test_starting_an_export_runs_it_and_the_zip_downloads(client, researcher, django_capture_on_commit_callbacks):
    world_build(pairs=9)
    form = {"min_ratings": 3, "seed": 1, "formats": ["csv", "jsonl"], "with_images": "on"}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("scoring:export-start"), form)
    assert response.status_code == 302 and response["Location"] == reverse("scoring:research")
    assert len(callbacks) == 1  # the task is sent after the job row is committed
    job = ExportJob.objects.get()
    assert job.created_by == researcher
    assert job.params == {"min_ratings": 3, "seed": 1, "formats": ["csv", "jsonl"], "with_images": True}

    status = client.get(reverse("scoring:export-status", args=[job.pk])).json()
    assert status["status"] == "done" and status["progress"] == 1.0, status
    assert status["download_url"] == reverse("scoring:export-download", args=[job.pk])
    assert status["counts"]["pairs"] == 10  # the 9 scored pairs and export_world's 3 + 1 excluded pair

    response = client.get(status["download_url"])
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="export-{job.pk}.zip"'
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as bundle:
        names = {name.split("/", 1)[1] for name in bundle.namelist()}
    assert {"pairs.csv", "ratings.jsonl", "manifest.json", "report.html", "datasheet.md"} <= names
    assert any(name.startswith("images/") for name in names)


@pytest.mark.parametrize(
    "form",
    [
        {"min_ratings": 0, "seed": 0, "formats": ["csv"]},
        {"min_ratings": 3, "seed": 0, "formats": ["xlsx"]},
        {"min_ratings": 3, "seed": 0},
        {"min_ratings": "three", "seed": 0, "formats": ["csv"]},
    ],
)
def test_bad_forms_are_shown_again_and_start_nothing(client, researcher, form):
    response = client.post(reverse("scoring:export-start"), form)
    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode()
    assert not ExportJob.objects.exists()


def test_a_running_export_has_no_download(client, researcher):
    job = ExportJob.objects.create(status=ExportJob.Status.RUNNING, progress=0.4, progress_message="Writing tables")
    status = client.get(reverse("scoring:export-status", args=[job.pk])).json()
    assert status == {
        "id": job.pk,
        "status": "running",
        "status_display": "Running",
        "progress": 0.4,
        "message": "Writing tables",
        "error": "",
        "counts": {},
        "download_url": None,
    }
    assert client.get(reverse("scoring:export-download", args=[job.pk])).status_code == 404
    assert client.get(reverse("scoring:export-status", args=[job.pk + 100])).status_code == 404


def test_an_archive_path_outside_the_exports_folder_is_not_served(client, researcher, settings):
    (settings.MEDIA_ROOT).mkdir(parents=True, exist_ok=True)
    (settings.MEDIA_ROOT / "secret.zip").write_bytes(b"PK")
    job = ExportJob.objects.create(status=ExportJob.Status.DONE, archive="exports/../secret.zip")
    assert client.get(reverse("scoring:export-download", args=[job.pk])).status_code == 404


def test_an_unreachable_queue_fails_the_job_visibly(
    client, researcher, monkeypatch, django_capture_on_commit_callbacks
):
    from scoring import tasks

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(tasks.export_job_run, "apply_async", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("scoring:export-start"), {"min_ratings": 3, "seed": 0, "formats": ["csv"]})
    assert response.status_code == 302
    job = ExportJob.objects.get()
    assert job.status == ExportJob.Status.FAILED and "broker down" in job.error
    assert "broker down" in client.get(reverse("scoring:research")).content.decode()


def test_a_failed_export_says_why_without_a_stalled_bar(client, researcher):
    ExportJob.objects.create(
        status=ExportJob.Status.FAILED,
        progress=0.45,
        progress_message="Failed",
        error="The export failed on the server (MemoryError).",
    )
    page = client.get(reverse("scoring:research")).content.decode()
    assert "Failed: The export failed on the server (MemoryError)." in page
    assert "Failed: Failed" not in page
    assert re.search(r"<progress [^>]*hidden>", page)  # no bar that looks as if it were still going
