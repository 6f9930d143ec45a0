"""Inline or worker by the work of an upload (issue 21, item 2): rows, files, bytes and the pixels
the image headers declare; display copies never made inside the request; a heavy upload answers
202 with its job, which the embedded mode's thread runs when there is no broker."""

import io
import threading
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image as PILImage

from ratinggame import tasks
from ratinggame.background import EAGER_WORKER
from ratinggame.models import CaptionPair, Image, ImportJob
from ratinggame.pairs import derivatives
from ratinggame.pairs.uploads import IMAGES, ZIPS
from ratinggame.pairs.workload import InlineLimits, Workload, header_pixels, runs_inline, workload_measure
from tests.factories import png_bytes
from tests.ratinggame.api_helpers import researcher, token_client, zip_bytes

LIMITS = InlineLimits(rows=10, files=10, bytes=10_000, pixels=10_000)


@pytest.mark.parametrize(
    ("work", "inline"),
    [
        (Workload(rows=10, files=10, bytes=10_000, pixels=10_000), True),
        (Workload(rows=11, files=1, bytes=1, pixels=1), False),
        (Workload(rows=1, files=11, bytes=1, pixels=1), False),
        (Workload(rows=1, files=1, bytes=10_001, pixels=1), False),
        # 100 rows of 40-megapixel PNGs: few rows and bytes, a worker's amount of pixels.
        (Workload(rows=1, files=1, bytes=1, pixels=10_001), False),
    ],
)
def test_an_upload_runs_inline_only_within_every_limit(work, inline):
    assert runs_inline(work, LIMITS) is inline


def truncated_png(size: tuple[int, int]) -> bytes:
    """A PNG whose header declares ``size`` and whose pixel data is cut short: decoding it fails."""
    buffer = io.BytesIO()
    PILImage.new("RGB", size, (40, 90, 200)).save(buffer, format="PNG")
    return buffer.getvalue()[:200]


def test_pixels_come_from_the_headers_without_decoding(tmp_path):
    data = truncated_png((4000, 3000))
    assert header_pixels(io.BytesIO(data)) == 12_000_000  # decoding it would raise
    assert header_pixels(io.BytesIO(b"not an image")) == 0  # the import's check names it


def test_the_work_counts_loose_files_and_zip_members_by_their_headers(tmp_path):
    (tmp_path / IMAGES).mkdir()
    (tmp_path / ZIPS).mkdir()
    loose = truncated_png((1000, 1000))
    (tmp_path / IMAGES / "a.png").write_bytes(loose)
    member = png_bytes(3, size=(300, 200))
    (tmp_path / ZIPS / "00001-more.zip").write_bytes(zip_bytes({"sub/b.png": member, "c.png": member}))
    big = InlineLimits(rows=10**9, files=10**9, bytes=10**12, pixels=10**12)
    work = workload_measure(folder=tmp_path, rows=3, limits=big)
    assert work == Workload(rows=3, files=3, bytes=len(loose) + 2 * len(member), pixels=1_000_000 + 2 * 60_000)


def test_measuring_stops_once_the_upload_is_over_a_limit(tmp_path):
    (tmp_path / IMAGES).mkdir()
    (tmp_path / ZIPS).mkdir()
    for index in range(20):
        (tmp_path / IMAGES / f"{index}.png").write_bytes(png_bytes(index))
    work = workload_measure(folder=tmp_path, rows=20, limits=InlineLimits(rows=100, files=5, bytes=10**9, pixels=10**9))
    assert work.files == 6 and not runs_inline(work, LIMITS)


def manifest(rows: list[str]) -> SimpleUploadedFile:
    return SimpleUploadedFile("pairs.csv", ("image,caption\n" + "\n".join(rows) + "\n").encode(), "text/csv")


def upload_two(client):
    images = [SimpleUploadedFile(f"p{i}.png", png_bytes(800 + i, size=(120, 100)), "image/png") for i in range(2)]
    return client.post(
        "/api/pairs/import", {"manifest": manifest(["p0.png,a", "p1.png,b"]), "images": images}, format="multipart"
    )


@pytest.mark.django_db
def test_two_rows_of_many_pixels_answer_202_and_go_to_a_worker(
    settings, sent_tasks, django_capture_on_commit_callbacks
):
    # Two rows were imported in the request whatever their images weighed (the limit counted rows only).
    settings.RATINGGAME = {**settings.RATINGGAME, "IMPORT_INLINE_MAX_PIXELS": 20_000}  # each image is 12,000
    with django_capture_on_commit_callbacks(execute=True):
        answer = upload_two(token_client(researcher()))
    assert answer.status_code == 202, answer.content
    job = answer.json()
    assert job["status"] == "queued" and answer["Location"] == job["url"]
    assert sent_tasks == [("ratinggame.tasks.import_job_run", (job["id"],))]
    assert not CaptionPair.objects.exists()


@pytest.mark.django_db(transaction=True)  # the embedded worker's thread reads what the request committed
def test_without_a_broker_the_heavy_job_runs_in_the_embedded_worker_and_finishes(settings, monkeypatch):
    settings.RATINGGAME = {**settings.RATINGGAME, "IMPORT_INLINE_MAX_PIXELS": 20_000, "EAGER_IN_THREADS": True}
    ran_in: list[str] = []
    execute = tasks.import_job_execute

    def recorded(job_id):
        ran_in.append(threading.current_thread().name)
        return execute(job_id)

    monkeypatch.setattr(tasks, "import_job_execute", recorded)
    answer = upload_two(token_client(researcher()))
    assert answer.status_code == 202, answer.content
    EAGER_WORKER.join()
    assert ran_in == ["eager-worker"]
    job = ImportJob.objects.get(pk=answer.json()["id"])
    assert (job.status, job.report["pairs_created"]) == (ImportJob.Status.DONE, 2)
    assert CaptionPair.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_display_copies_are_never_made_inside_the_request(settings, monkeypatch):
    # A small upload is imported within the request; its images' copies are made after it, by
    # the embedded worker (or a Celery worker), never by the thread that serves the request.
    settings.RATINGGAME = {**settings.RATINGGAME, "EAGER_IN_THREADS": True}
    made_in: list[str] = []
    make = derivatives.derivatives_make

    def recorded(*, image):
        made_in.append(threading.current_thread().name)
        return make(image=image)

    monkeypatch.setattr(tasks, "derivatives_make", recorded)
    answer = upload_two(token_client(researcher()))
    assert answer.status_code == 201, answer.content
    EAGER_WORKER.join()
    assert made_in == ["eager-worker", "eager-worker"]
    assert all(len(image.derivatives) == 1 for image in Image.objects.all())  # 160 px only: the images are 120 px
    assert all(
        Path(settings.MEDIA_ROOT, copy["name"]).is_file() for image in Image.objects.all() for copy in image.derivatives
    )
