"""Who is one of the study's raters (RaterProfile.objects.raters()): never staff (staff users,
superusers, the admin and researcher roles) and never an account that withdrew. The staff rater
table, its API and the leaderboard count with it."""

import re

import pytest
from django.urls import reverse

from annotators.models import RaterAction, RaterProfile, RaterState
from annotators.roles import ADMIN, ANNOTATOR, RESEARCHER
from annotators.services import leaderboard
from ratinggame.game.withdrawal import rater_withdraw
from tests.factories import RaterProfileFactory, UserFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowd():
    """One profile of each kind, each with a game score (the leaderboard shows scores above 0)."""

    def profile(user, name):  # users without a password: no hashing, a fast test
        return RaterProfileFactory(user=user, state=RaterState.GAME, game_score=10, display_name=name)

    withdrawn = profile(user_with_role(ANNOTATOR, username="leaving", password=None), "Leaving")
    rater_withdraw(user=withdrawn.user)
    return {
        "rater": profile(user_with_role(ANNOTATOR, username="ada", password=None), "Ada"),
        "no_group": profile(UserFactory(username="bea", password=None), "Bea"),  # signed up before the roles existed
        "staff": profile(UserFactory(username="staffer", is_staff=True, password=None), "Staffer"),
        "superuser": profile(UserFactory(username="root", is_superuser=True, password=None), "Root"),
        "admin": profile(user_with_role(ADMIN, username="admin", password=None), "Admin"),
        "researcher": profile(user_with_role(RESEARCHER, username="rita", password=None), "Rita"),
        "withdrawn": RaterProfile.objects.get(pk=withdrawn.pk),
    }


def test_raters_are_the_profiles_of_people_who_only_rate(crowd):
    assert set(RaterProfile.objects.raters()) == {crowd["rater"], crowd["no_group"]}
    assert crowd["withdrawn"].withdrawn_at is not None


def test_a_rater_who_is_also_a_researcher_is_staff(crowd):
    crowd["rater"].user.groups.add(*user_with_role(RESEARCHER, password=None).groups.all())
    assert set(RaterProfile.objects.raters()) == {crowd["no_group"]}


def test_the_staff_rater_table_and_its_api_list_the_raters_only(client, crowd):
    client.force_login(crowd["staff"].user)
    page = client.get(reverse("staff:dashboard")).content.decode()
    assert re.findall(r'<th scope="row"><a href="/staff/raters/\d+/">([^<]+)</a>', page) == ["ada", "bea"]
    assert "2 raters shown" in page
    listed = client.get("/api/admin/raters/").json()["results"]
    assert sorted(row["username"] for row in listed) == ["ada", "bea"]
    # A staff member's own page still opens (an admin who tried the game).
    assert client.get(reverse("staff:rater", args=[crowd["admin"].pk])).status_code == 200


def test_the_leaderboard_shows_raters_only(crowd):
    assert sorted(row["name"] for row in leaderboard(period="all")) == ["Ada", "Bea"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_marks_the_accounts_that_withdrew_before():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    before = [("annotators", "0006_import_job_roles")]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    old_profile, old_action = old.get_model("annotators", "RaterProfile"), old.get_model("annotators", "RaterAction")
    gone = old_profile.objects.create(user_id=UserFactory(username="withdrawn-1", password=None).pk)
    staying = old_profile.objects.create(user_id=UserFactory(username="stays", password=None).pk)
    withdrawal = old_action.objects.create(rater=gone, action="withdraw", reason="deleted their data")
    old_action.objects.create(rater=staying, action="suspend", reason="speeding")

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert RaterProfile.objects.get(pk=gone.pk).withdrawn_at == RaterAction.objects.get(pk=withdrawal.pk).created_at
    assert RaterProfile.objects.get(pk=staying.pk).withdrawn_at is None
    assert list(RaterProfile.objects.raters()) == [RaterProfile.objects.get(pk=staying.pk)]
