"""Competency analyses stored before they became tracked jobs keep their data and their meaning."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotators.competency.jobs import competency_analysis_run, competency_refresh_request, latest_analysis
from annotators.models import CompetencyAnalysis
from tests.factories import UserFactory

BEFORE = [("annotators", "0006_import_job_roles")]


def migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection)


def latest() -> list[tuple[str, int]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_analyses_of_the_old_schema_keep_who_asked_their_results_and_a_waiting_one_still_runs():
    staff = UserFactory(is_staff=True)
    old = migrate(BEFORE).loader.project_state(BEFORE).apps.get_model("annotators", "CompetencyAnalysis")
    waiting = old.objects.create(status="pending", requested_by_id=staff.pk, game_ratings_count=7)
    done = old.objects.create(status="done", abilities={"1": [0.4, 0.2]}, n_raters=1, wright_map_svg="<svg/>")
    failed = old.objects.create(status="failed", error="nothing to analyse")

    migrate(latest())
    rows = {row.pk: row for row in CompetencyAnalysis.objects.all()}
    assert (rows[waiting.pk].status, rows[waiting.pk].created_by, rows[waiting.pk].game_ratings_count) == (
        CompetencyAnalysis.Status.QUEUED,
        staff,
        7,
    )
    assert (rows[done.pk].status, rows[done.pk].abilities, rows[done.pk].wright_map_svg) == (
        "done",
        {"1": [0.4, 0.2]},
        "<svg/>",
    )
    assert (rows[failed.pk].status, rows[failed.pk].error) == ("failed", "nothing to analyse")
    assert latest_analysis().pk == done.pk
    # The analysis that waited still counts as in progress (no second one beside it) and a worker
    # still takes it: it ends, here as failed for want of ratings.
    assert competency_refresh_request().pk == waiting.pk
    assert competency_analysis_run(analysis_id=waiting.pk) == CompetencyAnalysis.Status.FAILED

    # And back: the status and the column the old code reads.
    CompetencyAnalysis.objects.filter(pk=failed.pk).update(status=CompetencyAnalysis.Status.QUEUED)
    old = migrate(BEFORE).loader.project_state(BEFORE).apps.get_model("annotators", "CompetencyAnalysis")
    assert old.objects.get(pk=failed.pk).status == "pending"
    assert old.objects.get(pk=waiting.pk).requested_by_id == staff.pk
    migrate(latest())
