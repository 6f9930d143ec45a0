"""A participant who finds nothing left to rate can end their session (issue 36, from a researcher's
walk-through: a participant who met an empty pool got no code): "Finish my session" on the page, or
``POST /api/study/session/finish``, ends it with the completion code, paid for the time given and
logged as short of the quota; a pair that has come free since is served instead."""

import pytest
from django.urls import reverse

from annotators.models import Participation, RaterAction, RaterState, SessionOutcome
from annotators.study.report import pay_period, pay_report
from ratinggame.models import Assignment
from tests.annotators.study.test_completion import participant, study_quota
from tests.ratinggame.api_helpers import token_client
from tests.ratinggame.journey_helpers import T0, Clock, game_pairs, rate_next, rater

pytestmark = pytest.mark.django_db

COMPLETE = reverse("annotators:study_complete")
FINISH = reverse("session_finish")


@pytest.fixture
def dry(client, settings):
    """A participant (quota 3) who has rated the only 2 game pairs there are."""
    study_quota(settings, MIN_SECONDS_PER_RATING=0)
    profile = participant(client)
    clock = Clock()
    for _ in game_pairs(2, primes=[3.0, 3.0]):
        rate_next(profile.user, 3, clock)
    return profile


def test_a_participant_with_nothing_left_finishes_with_the_completion_code(client, dry):
    page = client.get(reverse("rate", args=["game"])).content.decode()
    assert 'id="finish-session"' in page and "Finish my session" in page
    assert Participation.objects.get().outcome == ""  # the page alone ends nothing

    answer = client.post(FINISH)
    assert answer.status_code == 302 and answer["Location"] == COMPLETE
    assert 'class="code">C7QUOTA1<' in client.get(COMPLETE).content.decode()
    participation = Participation.objects.get()
    assert participation.outcome == SessionOutcome.COMPLETED and participation.ended_at is not None
    logged = RaterAction.objects.get(rater=dry, action="session_completed")
    assert "before its quota" in logged.reason and "2 counted game rating(s)" in logged.reason
    # Paid for the time given: the pay report has the session.
    start, end = pay_period(T0.date(), T0.date())
    (row,) = pay_report(start=start, end=end).rows
    assert (row.participant_id, row.outcome, row.counted) == (participation.external_id, "completed", 2)
    assert row.active_seconds > 0
    # Ended: nothing more is served, and a second press changes nothing.
    game_pairs(1, primes=[3.0, 3.0])
    assert client.get(reverse("rate", args=["game"]))["Location"] == COMPLETE
    assert client.post(FINISH)["Location"] == COMPLETE
    assert RaterAction.objects.filter(action="session_completed").count() == 1
    assert not Assignment.objects.filter(rater=dry.user, submitted_at__isnull=True).exists()


def test_a_pair_that_came_free_is_served_and_the_session_goes_on(client, dry):
    assert 'id="finish-session"' in client.get(reverse("rate", args=["game"])).content.decode()
    pair = game_pairs(1, primes=[3.0, 3.0])[0]  # another rater's held pair, given back
    answer = client.post(FINISH)
    opened = Assignment.objects.get(rater=dry.user, submitted_at__isnull=True)
    assert opened.pair_id == pair.pk
    assert answer["Location"] == reverse("rate_pair", args=["game", opened.pk])
    assert Participation.objects.get().outcome == ""


def test_the_api_finishes_only_when_nothing_is_left(client, dry):
    api = token_client(dry.user)
    pair = game_pairs(1, primes=[3.0, 3.0])[0]
    refused = api.post("/api/study/session/finish")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "pair_open"
    opened = Assignment.objects.get(rater=dry.user, submitted_at__isnull=True)
    assert opened.pair_id == pair.pk
    assert api.post("/api/game/next").json()["assignment_id"] == opened.pk  # the pair it kept open
    assert Participation.objects.get().outcome == ""
    # The pair goes (a researcher retired it): now nothing is left, and the session ends.
    Assignment.objects.filter(rater=dry.user, submitted_at__isnull=True).delete()
    pair.delete()
    assert api.post("/api/game/next").json()["code"] == "none_left"
    ended = api.post("/api/study/session/finish")
    assert ended.status_code == 200
    assert ended.json()["outcome"] == SessionOutcome.COMPLETED and ended.json()["code"] == "C7QUOTA1"


def test_open_sign_up_raters_have_no_session_to_end(client, settings):
    study_quota(settings, MIN_SECONDS_PER_RATING=0)
    client.force_login(rater(RaterState.GAME))
    page = client.get(reverse("rate", args=["game"])).content.decode()
    assert "Nothing left to rate" in page and 'id="finish-session"' not in page
    followed = client.post(FINISH, follow=True)  # back to their own step: nothing to end
    assert followed.redirect_chain[-1][0] == reverse("rate", args=["game"])
    assert "Nothing left to rate" in followed.content.decode()
    assert not Participation.objects.exists()
