"""Pseudonyms chosen before they were unique: the oldest keeps its name, later copies are cleared."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotators.models import RaterProfile
from tests.factories import UserFactory

BEFORE = [("annotators", "0011_participation_session_outcome")]


def migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection)


@pytest.mark.django_db(transaction=True)
def test_copied_pseudonyms_are_cleared_and_the_oldest_kept():
    old = migrate(BEFORE).loader.project_state(BEFORE).apps.get_model("annotators", "RaterProfile")
    names = ["Ada", "ada", "Bob", "", "", "ADA"]
    profiles = [old.objects.create(user_id=UserFactory().pk, display_name=name).pk for name in names]

    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    after = dict(RaterProfile.objects.values_list("pk", "display_name"))
    assert [after[pk] for pk in profiles] == ["Ada", "", "Bob", "", "", ""]
