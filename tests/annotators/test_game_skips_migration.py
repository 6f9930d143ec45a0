"""The skip counter on each profile starts from the game pairs the rater skipped before it."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from annotators.models import RaterProfile
from tests.factories import CaptionPairFactory, ControlPairFactory, UserFactory

BEFORE = [("annotators", "0016_rater_label_model"), ("ratinggame", "0012_attention_checks")]


@pytest.mark.django_db(transaction=True)
def test_the_counter_counts_each_raters_skipped_game_and_control_assignments():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = MigrationExecutor(connection).loader.project_state(BEFORE).apps
    old_profile, old_assignment = (
        apps.get_model("annotators", "RaterProfile"),
        apps.get_model("ratinggame", "Assignment"),
    )
    now = timezone.now()
    pairs = [CaptionPairFactory().pk for _ in range(3)]
    control = ControlPairFactory().pk
    skipper, other = UserFactory(), UserFactory()
    for user in (skipper, other):
        old_profile.objects.create(user_id=user.pk)

    def assignment(user, pair_id, stage, skipped):
        old_assignment.objects.create(
            rater_id=user.pk,
            pair_id=pair_id,
            stage=stage,
            served_at=now,
            expires_at=now + timedelta(minutes=30),
            skipped_at=now if skipped else None,
        )

    assignment(skipper, pairs[0], "game", True)
    assignment(skipper, pairs[1], "game", False)
    assignment(skipper, control, "control", True)
    assignment(other, pairs[2], "game", False)

    MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    counts = dict(RaterProfile.objects.values_list("user_id", "game_skips"))
    assert counts == {skipper.pk: 2, other.pk: 0}
