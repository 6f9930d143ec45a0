"""Importing from the browser (the rater-experience issue): the research page's upload runs the
importer of ``manage.py import_pairs`` as a tracked job, all or nothing, with the same row errors."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ratinggame.models import CaptionPair, ImportJob
from tests.factories import png_bytes
from tests.ratinggame.api_helpers import annotator, researcher, zip_bytes

pytestmark = pytest.mark.django_db


def images_zip(names: list[str]) -> SimpleUploadedFile:
    members = {name: png_bytes(seed + 40) for seed, name in enumerate(names)}
    return SimpleUploadedFile("images.zip", zip_bytes(members), content_type="application/zip")


def manifest(text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("pairs.csv", text.encode(), content_type="text/csv")


@pytest.fixture
def signed_in(client):
    client.force_login(researcher())
    return client


def test_a_researcher_imports_a_manifest_and_its_zip_and_sees_the_report(signed_in):
    upload = {
        "manifest": manifest("image,caption\na.png,a red square\nb.png,a blue square\na.png,a square in red\n"),
        "images": [images_zip(["a.png", "b.png"])],
        "pool": "game",
    }
    answer = signed_in.post(reverse("pairs_import"), upload)
    job = ImportJob.objects.get()
    assert answer.status_code == 302 and answer["Location"] == reverse("pairs_import_job", args=[job.pk])
    assert job.status == ImportJob.Status.DONE
    assert sorted(CaptionPair.objects.values_list("caption", flat=True)) == [
        "a blue square",
        "a red square",
        "a square in red",
    ]
    page = signed_in.get(answer["Location"]).content.decode()
    assert "Imported" in page and "<dt>Pairs created</dt><dd>3</dd>" in page
    assert "2 new, 1 already stored" in page  # the third row names a.png again
    # Without a broker the new game pairs wait for model priming, and the page says how.
    assert "manage.py prime_pairs" in page


def test_one_bad_row_imports_nothing_and_the_page_names_it_as_the_command_does(signed_in, tmp_path):
    from ratinggame.pairs.importing import ImportFailed, import_manifest

    text = "image,caption,expert_rating\na.png,a red square,\nb.png,,\nc.png,a circle,9\n"
    answer = signed_in.post(reverse("pairs_import"), {"manifest": manifest(text), "images": [images_zip(["a.png"])]})
    job = ImportJob.objects.get()
    assert answer.status_code == 302
    assert not CaptionPair.objects.exists()
    page = signed_in.get(answer["Location"]).content.decode()
    assert "Rows refused: nothing was imported" in page
    # The same rows and reasons as manage.py import_pairs gives for the same files.
    # The reasons read off the manifest: row 3 has no caption, row 4 an expert rating of 9.
    assert [(error["row"], error["reason"]) for error in job.row_errors] == [
        (3, "caption is empty"),
        (4, "expert_rating 9 is outside 1-5"),
    ]
    folder = job_folder_like(text, tmp_path)
    with pytest.raises(ImportFailed) as failed:
        import_manifest(manifest=folder / "pairs.csv", images_dir=folder)
    assert [(e.row, e.reason) for e in failed.value.report.errors] == [
        (error["row"], error["reason"]) for error in job.row_errors
    ]
    for error in job.row_errors:
        assert error["reason"] in page


def job_folder_like(text: str, folder):
    """The same manifest and image on disk (in ``folder``), for the command's importer."""
    (folder / "pairs.csv").write_text(text)
    (folder / "a.png").write_bytes(png_bytes(40))
    return folder


def test_a_large_manifest_goes_to_a_worker_and_its_page_follows_it(
    signed_in, settings, sent_tasks, django_capture_on_commit_callbacks
):
    settings.RATINGGAME = {**settings.RATINGGAME, "IMPORT_INLINE_MAX_ROWS": 1}
    text = "image,caption\na.png,a red square\nb.png,a blue square\n"
    with django_capture_on_commit_callbacks(execute=True):
        answer = signed_in.post(
            reverse("pairs_import"), {"manifest": manifest(text), "images": [images_zip(["a.png", "b.png"])]}
        )
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.QUEUED and not CaptionPair.objects.exists()
    assert sent_tasks == [("ratinggame.tasks.import_job_run", (job.pk,))]
    page = signed_in.get(answer["Location"]).content.decode()
    assert 'data-status="queued"' in page and "js/import_job.js" in page
    status = signed_in.get(reverse("pairs_import_status", args=[job.pk])).json()
    assert (status["status"], status["progress"]) == ("queued", 0.0)

    from ratinggame.tasks import import_job_run

    import_job_run(job.pk)  # what the worker does with the message
    assert signed_in.get(reverse("pairs_import_status", args=[job.pk])).json()["status"] == "done"
    assert CaptionPair.objects.count() == 2
    assert "<dt>Pairs created</dt><dd>2</dd>" in signed_in.get(answer["Location"]).content.decode()


def test_an_upload_without_a_manifest_goes_back_with_the_message(signed_in):
    answer = signed_in.post(reverse("pairs_import"), {"pool": "game"}, follow=True)
    assert answer.redirect_chain[0] == (reverse("pairs_import"), 302)
    assert "Choose a manifest file" in answer.content.decode()
    assert not ImportJob.objects.exists()


def test_an_annotator_cannot_import(client):
    client.force_login(annotator())
    answer = client.post(reverse("pairs_import"), {"manifest": manifest("image,caption\na.png,x\n")})
    assert answer.status_code == 403 and not ImportJob.objects.exists()


def test_a_failed_import_says_why_in_words_without_a_stalled_bar(signed_in, monkeypatch):
    """The rows were checked (80% done) and writing them failed: the page says why, not "Failed:
    Failed" beside a bar stopped at 80%."""
    from ratinggame.pairs import jobs

    def checked_then_broken(*, progress, **options):
        progress(0.8, "Writing the pairs")
        raise OSError("disk full")

    monkeypatch.setattr(jobs, "import_manifest", checked_then_broken)
    text = "image,caption\na.png,a red square\n"
    answer = signed_in.post(reverse("pairs_import"), {"manifest": manifest(text), "images": [images_zip(["a.png"])]})
    job = ImportJob.objects.get()
    assert (job.status, job.progress) == (ImportJob.Status.FAILED, 0.8)
    page = signed_in.get(answer["Location"]).content.decode()
    reason = "Failed: The import failed on the server (OSError); nothing was imported."
    assert reason in page and 'role="alert"' in page
    assert "Failed: Failed" not in page and "<progress" not in page
    assert reason in signed_in.get(reverse("pairs_import")).content.decode()  # the list of imports too
