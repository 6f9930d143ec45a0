"""The Django admin cannot bypass the audit trail of staff actions.

A rater's state and scores and a dispute's outcome are read-only there (the staff dashboard's
actions change them and log who and why), and the RaterAction log cannot be added to, edited
or deleted by hand.
"""

import pytest
from django.urls import reverse

from annotators.models import Dispute, DisputeStatus, RaterAction, RaterProfile, RaterState
from tests.factories import CaptionPairFactory, RaterProfileFactory, UserFactory, rating_record
from tests.ratinggame.api_helpers import admin as admin_role_user

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["superuser", "admin role"])
def admin_client(client, request):
    """Both kinds of staff who use the Django admin: a superuser and a member of the admin role."""
    user = UserFactory(is_staff=True, is_superuser=True) if request.param == "superuser" else admin_role_user()
    client.force_login(user)
    return client


@pytest.fixture
def profile():
    return RaterProfileFactory(state=RaterState.GAME, tutorial_score=14, game_score=10, display_name="Ada")


@pytest.fixture
def dispute(profile):
    pair = CaptionPairFactory()
    rating = rating_record(rater=profile.user, pair=pair, value=1, points=-2, stage="game")
    return Dispute.objects.create(rating=rating, comment="The sofa is red.")


def test_profile_state_and_scores_cannot_be_edited_but_the_leaderboard_name_can(admin_client, profile):
    url = reverse("admin:annotators_raterprofile_change", args=[profile.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="state"' not in page and 'name="game_score"' not in page and 'name="tutorial_score"' not in page
    assert 'name="display_name"' in page
    assert reverse("staff:rater", args=[profile.pk]) in page  # where the logged actions are

    response = admin_client.post(
        url,
        {
            "display_name": "Ada L.",
            "on_leaderboard": "on",
            "state": RaterState.SUSPENDED,
            "game_score": 999,
            "tutorial_score": 20,
            "window_count": 0,
            "window_points": 0,
        },
    )
    assert response.status_code == 302
    profile.refresh_from_db()
    assert profile.display_name == "Ada L."
    assert (profile.state, profile.game_score, profile.tutorial_score) == (RaterState.GAME, 10, 14)
    assert not RaterAction.objects.exists()


def test_a_profile_added_in_the_admin_starts_in_the_tutorial(admin_client):
    user = UserFactory()
    response = admin_client.post(
        reverse("admin:annotators_raterprofile_add"),
        {"user": user.pk, "display_name": "", "state": RaterState.GAME, "game_score": 500},
    )
    assert response.status_code == 302
    profile = RaterProfile.objects.get(user=user)
    assert (profile.state, profile.game_score) == (RaterState.TUTORIAL, 0)


def test_dispute_status_cannot_be_set_in_the_admin(admin_client, profile, dispute):
    url = reverse("admin:annotators_dispute_change", args=[dispute.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="status"' not in page and 'name="points_restored"' not in page
    assert reverse("staff:dispute_resolve", args=[dispute.pk]) in page

    admin_client.post(url, {"status": DisputeStatus.ACCEPTED, "points_restored": 2, "resolution_note": "ok"})
    dispute.refresh_from_db()
    profile.refresh_from_db()
    assert (dispute.status, dispute.points_restored, dispute.resolution_note) == (DisputeStatus.OPEN, 0, "")
    assert profile.game_score == 10


def test_the_action_log_is_read_only(admin_client, profile):
    action = RaterAction.objects.create(rater=profile, action="suspend", reason="spam", from_state="game")
    changelist = reverse("admin:annotators_rateraction_changelist")
    change = reverse("admin:annotators_rateraction_change", args=[action.pk])

    assert admin_client.get(changelist).status_code == 200
    view = admin_client.get(change)
    assert view.status_code == 200  # shown, without a form to save
    assert 'name="reason"' not in view.content.decode()

    assert admin_client.get(reverse("admin:annotators_rateraction_add")).status_code == 403
    assert (
        admin_client.post(reverse("admin:annotators_rateraction_add"), {"action": "x", "reason": "y"}).status_code
        == 403
    )
    assert admin_client.post(change, {"action": "note", "reason": "rewritten"}).status_code == 403
    delete = reverse("admin:annotators_rateraction_delete", args=[action.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    # The bulk "delete selected" action is not offered either.
    admin_client.post(changelist, {"action": "delete_selected", "_selected_action": [action.pk], "post": "yes"})

    action.refresh_from_db()
    assert (action.action, action.reason) == ("suspend", "spam")
    assert RaterAction.objects.count() == 1


def test_the_dashboard_actions_still_change_state_and_log_who_and_why(admin_client, profile):
    response = admin_client.post(reverse("staff:rater_suspend", args=[profile.pk]), {"reason": "Copying primes."})
    assert response.status_code == 302
    profile.refresh_from_db()
    assert profile.state == RaterState.SUSPENDED
    logged = RaterAction.objects.get()
    assert (logged.action, logged.reason, logged.to_state) == ("suspend", "Copying primes.", RaterState.SUSPENDED)


def test_a_probation_rounds_record_cannot_be_edited_or_deleted(admin_client, profile):
    from annotators.models import ProbationRound

    pairs = [CaptionPairFactory(pool="probation", expert_rating=3).pk for _ in range(3)]
    round_ = ProbationRound.objects.create(
        profile=profile, number=1, pair_order=pairs, score=12, rated=20, passed=False
    )
    change = reverse("admin:annotators_probationround_change", args=[round_.pk])
    page = admin_client.get(change)
    assert page.status_code == 200  # shown to read
    assert 'name="score"' not in page.content.decode()

    edit = {"score": 30, "rated": 20, "passed": "true", "pair_order": "[]", "number": 1, "profile": profile.pk}
    assert admin_client.post(change, edit).status_code == 403
    assert admin_client.post(reverse("admin:annotators_probationround_add"), edit).status_code == 403
    delete = reverse("admin:annotators_probationround_delete", args=[round_.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403

    round_.refresh_from_db()
    assert (round_.score, round_.rated, round_.passed, round_.pair_order) == (12, 20, False, pairs)
