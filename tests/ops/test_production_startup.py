"""Production start-up of the background tiers (issue 7, "Document and test production start-up").

Real processes, started as the deployment starts them, with production settings
(``DJANGO_DEBUG=0``, tests/live_process.server_env) on the test database (PostgreSQL) and Redis:

- ``celery -A ratinggame worker -Q default`` runs a dataset export job, started the way the
  research page starts one (``export_job_start``), to a zip with a manifest whose checksums
  match, an import job of a manifest too large to import within its request (started the way
  the upload API starts one, ``import_job_start``), and a competency analysis requested the
  way the staff dashboard requests one;
- ``celery -A ratinggame beat`` starts with the project's schedule (CELERY_BEAT_SCHEDULE): its
  log lists every entry, and the competency check, made due every second here, reaches the
  worker through Redis and runs there.

Use a Redis database of your own (RATINGGAME_TEST_REDIS_URL): it is emptied before and after.
"""

import hashlib
import json
import re
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile

from annotators.competency.jobs import competency_refresh_request
from annotators.models import CompetencyAnalysis, RaterProfile
from ratinggame.models import ImportJob
from ratinggame.pairs.jobs import import_job_start
from scoring.export.jobs import export_job_start
from scoring.models import ExportJob
from tests.celery_broker import celery_sending_to
from tests.factories import png_bytes
from tests.live_process import QUIET_WORKER, celery_process, server_env
from tests.ratinggame.api_helpers import researcher
from tests.scoring.export.export_world import world_build

pytestmark = [pytest.mark.slow, pytest.mark.redis, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

START_SECONDS = 90
JOB_SECONDS = 120
CHECK_SUCCEEDED = re.compile(r"Task annotators\.tasks\.maybe_refresh_competency\[[0-9a-f-]+\] succeeded")


def wait_for(predicate, seconds: float, what: str, log: Path | None = None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    tail = log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""
    raise AssertionError(f"{what}: not within {seconds} s\n{tail}")


@pytest.fixture
def broker(redis_url) -> Iterator[str]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()  # no message of an earlier run for this test's worker
    yield redis_url
    client.flushdb()
    client.close()


@pytest.fixture
def env(broker, settings, require_postgres) -> dict[str, str]:
    return server_env(media_root=Path(settings.MEDIA_ROOT), min_seconds=0, extra={"CELERY_BROKER_URL": broker})


def test_default_worker_runs_exports_and_analyses_and_beat_feeds_it(env, broker, settings, tmp_path):
    Path(settings.MEDIA_ROOT).mkdir(parents=True, exist_ok=True)
    world = world_build(pairs=12)
    for index, user in enumerate(world.raters):
        RaterProfile.objects.create(user=user, state="game", tutorial_score=8 + index)
    worker_log = tmp_path / "worker.log"
    worker_args = ["worker", "-Q", "default", "-c", "1", "-n", f"ops-{uuid.uuid4().hex[:8]}@%h", *QUIET_WORKER]

    with celery_process(worker_args, env, worker_log) as worker, celery_sending_to(broker):
        wait_for(lambda: " ready." in worker_log.read_text(errors="replace"), START_SECONDS, "worker ready", worker_log)
        assert worker.poll() is None
        worker_runs_an_export(world, Path(settings.MEDIA_ROOT), worker_log)
        worker_runs_an_import(settings, worker_log)
        worker_runs_a_competency_analysis(world, worker_log)
        beat_feeds_the_worker(env, tmp_path, worker_log)

    log = worker_log.read_text(errors="replace")
    assert "scoring.tasks.export_job_run[" in log and "annotators.tasks.refresh_competency[" in log
    assert "ratinggame.tasks.import_job_run[" in log
    assert "Traceback" not in log, log[-4000:]


def job_finished(model, pk: int, what: str, worker_log: Path):
    """The job once the worker is done with it (done or failed); fails the test after JOB_SECONDS."""
    return wait_for(
        lambda: model.objects.filter(pk=pk, status__in=["done", "failed"]).first(), JOB_SECONDS, what, worker_log
    )


def worker_runs_an_export(world, media_root: Path, worker_log: Path) -> None:
    """An export job, as the research page starts it: queued on commit, run by the worker, to a zip
    whose manifest's checksums match its files."""
    job = export_job_start(created_by=researcher(), formats=("csv",))
    finished = job_finished(ExportJob, job.pk, "export job finished", worker_log)
    assert finished.status == ExportJob.Status.DONE, finished.error
    assert finished.started_at is not None and finished.progress == 1.0
    assert finished.counts["pairs"] == len(
        [p for p in world.game_pairs if p.ratings.filter(excluded=False).count() >= 3]
    )
    archive = media_root / finished.archive
    with zipfile.ZipFile(archive) as bundle:
        prefix = f"export-{job.pk}/"
        manifest = json.loads(bundle.read(prefix + "manifest.json"))
        assert {"pairs.csv", "ratings.csv", "statistics.json", "report.html"} <= set(manifest["files"])
        for name, entry in manifest["files"].items():
            assert hashlib.sha256(bundle.read(prefix + name)).hexdigest() == entry["sha256"], name


def worker_runs_an_import(settings, worker_log: Path) -> None:
    """A manifest upload too large for its request, as the API starts it: the worker imports it."""
    settings.RATINGGAME = {**settings.RATINGGAME, "IMPORT_INLINE_MAX_ROWS": 2}
    names = ["a.png", "b.png", "c.png"]
    upload = import_job_start(
        created_by=researcher(),
        manifest=SimpleUploadedFile("pairs.csv", ("image,caption\n" + "".join(f"{n},{n}\n" for n in names)).encode()),
        files=[SimpleUploadedFile(name, png_bytes(900 + index)) for index, name in enumerate(names)],
    )
    assert upload.status == ImportJob.Status.QUEUED
    imported = job_finished(ImportJob, upload.pk, "import job finished", worker_log)
    assert imported.status == ImportJob.Status.DONE, imported.error
    assert (imported.progress, imported.report["pairs_created"]) == (1.0, 3)


def worker_runs_a_competency_analysis(world, worker_log: Path) -> None:
    """A competency analysis, as the staff dashboard requests it."""
    analysis = competency_refresh_request()
    done = job_finished(CompetencyAnalysis, analysis.pk, "competency analysis finished", worker_log)
    assert done.status == CompetencyAnalysis.Status.DONE, done.error
    assert done.n_raters == len(world.raters) and done.wright_map_svg.startswith("<svg")


def beat_feeds_the_worker(env: dict[str, str], tmp_path: Path, worker_log: Path) -> None:
    """Beat, with the competency check due every second: it lists the project's schedule and the
    check it sends reaches the worker through Redis."""
    beat_log = tmp_path / "beat.log"
    beat_env = {**env, "RATINGGAME_COMPETENCY_CHECK_SECONDS": "1"}
    beat_args = ["beat", "-s", str(tmp_path / "beat-schedule"), "--pidfile=", "-l", "debug"]
    with celery_process(beat_args, beat_env, beat_log) as beat:
        wait_for(
            lambda: CHECK_SUCCEEDED.search(worker_log.read_text(errors="replace")),
            START_SECONDS,
            "the beat's competency check ran on the worker",
            beat_log,
        )
        assert beat.poll() is None, beat_log.read_text()
    text = beat_log.read_text(errors="replace")
    assert "beat: Starting..." in text
    schedule = text.split("Current schedule:", 1)[1]
    for name, entry in django_settings.CELERY_BEAT_SCHEDULE.items():
        assert f"<ScheduleEntry: {name} {entry['task']}()" in schedule, name
