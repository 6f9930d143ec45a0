"""The export as a job: the command, the Celery task, its parameters and its record."""

import hashlib
import json
import zipfile
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scoring.export.bundle import export_build
from scoring.export.jobs import TIME_LIMIT_SECONDS
from scoring.models import ExportJob
from scoring.tasks import export_job_run
from tests.scoring.export.bundle_files import (
    build,
    db_exported_pair_ids,
)
from tests.scoring.export.export_world import pairs_add

pytestmark = pytest.mark.django_db


def test_a_new_export_replaces_the_old_bundle_only(world, tmp_path):
    out = tmp_path / "out"
    build(out, with_images=True)
    (out / "notes.txt").write_text("mine")
    build(out, formats=("csv",))
    names = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    splits = {
        f"data/{table}-{split}.csv" for table in ("pairs", "ratings") for split in ("train", "validation", "test")
    }
    assert names == {
        "pairs.csv",
        "ratings.csv",
        "control_ratings.csv",
        "statistics.json",
        "report.html",
        "datasheet.md",
        "README.md",
        "manifest.json",
        "notes.txt",
        *splits,
        "polaris/README.md",
        *(f"polaris/data/{split}.parquet" for split in ("train", "validation", "test")),
    }
    assert "notes.txt" not in json.loads((out / "manifest.json").read_text())["files"]


def test_query_count_does_not_grow_with_pairs(world, tmp_path):
    with CaptureQueriesContext(connection) as small:
        build(tmp_path / "a", formats=("jsonl",), samples=2)
    pairs_add(world, 15, first_image_seed=8000)
    with CaptureQueriesContext(connection) as large:
        counts = build(tmp_path / "b", formats=("jsonl",), samples=2)
    assert counts["pairs"] > 40
    assert len(large.captured_queries) == len(small.captured_queries)


def test_bad_parameters_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown format"):
        export_build(out_dir=tmp_path / "x", formats=("csv", "xlsx"))
    with pytest.raises(ValueError, match="min_ratings"):
        export_build(out_dir=tmp_path / "x", min_ratings=0)


def test_an_empty_database_exports_an_empty_bundle(tmp_path):
    counts = build(tmp_path / "out")
    statistics = json.loads((tmp_path / "out" / "statistics.json").read_text())
    assert counts["pairs"] == counts["ratings"] == 0
    assert statistics["agreement"] is None and "at least 2 pairs" in statistics["agreement_note"]
    assert pq.read_table(tmp_path / "out" / "pairs.parquet").num_rows == 0


def test_export_dataset_command(world, tmp_path, capsys):
    out = tmp_path / "cmd"
    call_command("export_dataset", "--out", str(out), "--formats", "csv,parquet", "--seed", "2")
    printed = capsys.readouterr()
    assert f"Exported to {out}" in printed.out
    assert "export" in printed.err  # tqdm's bar on stderr
    assert {p.name for p in out.iterdir()} >= {"pairs.csv", "pairs.parquet", "ratings.parquet", "manifest.json"}
    assert json.loads((out / "manifest.json").read_text())["parameters"]["seed"] == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--formats", "csv,xml"], "unknown format"),
        (["--min-ratings", "0"], "at least 1"),
    ],
)
def test_export_dataset_command_rejects_bad_arguments(tmp_path, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("export_dataset", "--out", str(tmp_path / "x"), *arguments)


def test_export_dataset_command_protects_a_non_empty_folder(world, tmp_path, capsys):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(CommandError, match="not empty"):
        call_command("export_dataset", "--out", str(out))
    call_command("export_dataset", "--out", str(out), "--force", "--min-ratings", "2", "--formats", "jsonl")
    assert "below 3" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "x" and (out / "pairs.jsonl").exists()


def test_celery_job_runs_to_a_zip_with_every_file(world, settings, django_user_model):
    job = ExportJob.objects.create(
        params={"min_ratings": 3, "seed": 0, "formats": ["csv", "parquet"], "with_images": True}
    )
    export_job_run.delay(job.pk)  # eager in tests (conftest)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE, job.error
    assert job.progress == 1.0 and job.finished_at is not None
    assert job.archive == f"exports/{job.pk}.zip"
    archive = Path(settings.MEDIA_ROOT) / job.archive
    with zipfile.ZipFile(archive) as bundle:
        names = set(bundle.namelist())
        prefix = f"export-{job.pk}/"
        manifest = json.loads(bundle.read(prefix + "manifest.json"))
        assert names == {prefix + name for name in manifest["files"]} | {prefix + "manifest.json"}
        for name, entry in manifest["files"].items():
            assert hashlib.sha256(bundle.read(prefix + name)).hexdigest() == entry["sha256"]
    assert job.counts["pairs"] == len(db_exported_pair_ids())
    # The build folder is gone; only the zip stays.
    assert sorted(p.name for p in archive.parent.iterdir()) == [f"{job.pk}.zip"]


def test_celery_job_runs_once(world):
    job = ExportJob.objects.create(params={"formats": ["jsonl"]})
    assert export_job_run.delay(job.pk).get() == "done"
    assert export_job_run.delay(job.pk).get() == "skipped"


def test_celery_job_failure_is_recorded(world):
    job = ExportJob.objects.create(params={"formats": ["xlsx"]})
    assert export_job_run.delay(job.pk).get() == "failed"
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED
    assert "unknown format" in job.error and job.finished_at is not None


def test_export_task_is_registered_on_the_default_queue():
    from ratinggame.celery import app

    app.loader.import_default_modules()
    task = app.tasks["scoring.tasks.export_job_run"]
    assert task.queue == "default" and task.acks_late
    assert task.time_limit and task.soft_time_limit < task.time_limit


def test_a_job_that_waited_in_the_queue_is_not_taken_from_its_worker(world):
    queued_long_ago = timezone.now() - timedelta(seconds=TIME_LIMIT_SECONDS + 600)
    job = ExportJob.objects.create(params={"formats": ["csv"]})
    # Queued hours ago, started a minute ago by a worker that is still at it: a redelivered
    # message must not run it a second time.
    ExportJob.objects.filter(pk=job.pk).update(
        status=ExportJob.Status.RUNNING, created_at=queued_long_ago, started_at=timezone.now() - timedelta(minutes=1)
    )
    assert export_job_run.delay(job.pk).get() == "skipped"
    job.refresh_from_db()
    assert job.status == ExportJob.Status.RUNNING

    # Started longer ago than the task's hard time limit: its worker is gone, the job runs again.
    ExportJob.objects.filter(pk=job.pk).update(started_at=queued_long_ago)
    assert export_job_run.delay(job.pk).get() == "done"
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE
    assert job.started_at > queued_long_ago  # claimed anew


def test_a_job_records_when_it_started(world):
    job = ExportJob.objects.create(params={"formats": ["csv"]})
    assert job.started_at is None
    export_job_run.delay(job.pk)
    job.refresh_from_db()
    assert job.created_at <= job.started_at <= job.finished_at
