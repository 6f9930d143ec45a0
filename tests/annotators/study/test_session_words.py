"""A participant knows where they are (issue 34, item 6; SPEC 7): the session's progress in their
own terms on every rating screen (the page and the next pair shown in place), the consent and
introduction pages say what the session is and what is stored, and the last probation round
before the study would end says so."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotators.models import RaterProfile, RaterState
from ratinggame import game
from tests.annotators.study.test_completion import participant, study_quota
from tests.annotators.study.test_session_gate import past_clock
from tests.ratinggame.journey_helpers import Clock, game_pairs, probation_pairs, rate_next, rater

pytestmark = pytest.mark.django_db


@pytest.fixture
def quota(settings):
    study_quota(settings, ratings=5, MIN_SECONDS_PER_RATING=0)


def test_every_game_screen_says_which_rating_of_the_session_it_is(client, quota):
    profile = participant(client)
    game_pairs(6, primes=[3.0, 3.0])
    clock = past_clock()
    rate_next(profile.user, 3, clock)  # the first game rating opens its own page: one rated before
    page = client.get(reverse("rate", args=["game"])).content.decode()
    assert 'id="session-progress">Session: rating 2 of 5.<' in page
    served = game.pair_serve(rater=profile.user)
    answer = client.post(reverse("play_submit"), {"assignment": served.assignment_id, "value": 3}).json()
    assert "Session: rating 3 of 5." in answer["next"]["title_html"]


def test_a_probation_screen_says_practice_does_not_count_and_when_it_is_the_last_round(client, quota):
    profile = participant(client, state=RaterState.PROBATION)
    probation_pairs(20, expert=5)
    clock = past_clock()
    rate_next(profile.user, 1, clock)
    page = client.get(reverse("rate", args=["probation"])).content.decode()
    assert "Session: 0 of 5 game ratings done (practice pairs do not count)." in page
    assert "last probation round" not in page
    later = Clock(timezone.now() + timedelta(seconds=5))  # after the pair the page served
    for _ in range(18):
        rate_next(profile.user, 1, later)
    served = game.pair_serve(rater=profile.user, now=timezone.now() - timedelta(seconds=5))
    answer = client.post(reverse("play_submit"), {"assignment": served.assignment_id, "value": 1}).json()
    feedback = client.get(answer["page"]).content.decode()
    assert "It is your last: if you do not pass it, your session in this study ends there." in feedback
    assert ">Start the next round</a>" in feedback
    page = client.get(reverse("rate", args=["probation"])).content.decode()
    assert "This is your last probation round: if you do not pass it, your session ends here." in page


def test_the_consent_and_introduction_say_what_the_session_is_and_which_ids_are_stored(client, quota):
    participant(client, state=RaterState.TUTORIAL)
    RaterProfile.objects.update(consent_at=None)
    consent = client.get(reverse("annotators:consent")).content.decode()
    for words in (
        "Your session is complete after\n      5 rated pairs in the game",
        "a completion code and a link back to Prolific",
        "2 probation rounds before you reach the game",
        "your participant id, the study id and the\n      session id",
    ):
        assert words in consent, words
    RaterProfile.objects.update(consent_at=timezone.now())
    assert 'id="session-terms"' in client.get(reverse("annotators:intro")).content.decode()
    signup = Client()
    signup.force_login(rater(RaterState.TUTORIAL, consent_at=None))
    assert 'id="session-terms"' not in signup.get(reverse("annotators:consent")).content.decode()


def test_an_open_sign_up_rater_sees_no_session_line(client, quota):
    user = rater(RaterState.GAME)
    client.force_login(user)
    game_pairs(2, primes=[3.0, 3.0])
    assert 'id="session-progress"' not in client.get(reverse("rate", args=["game"])).content.decode()
