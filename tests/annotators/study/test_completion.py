"""The end of a participant's session (issue 20, item 3; SPEC 7): the quota of counted game ratings
(or active minutes) completes it with the completion code and a way back to the platform; failing
probation the set number of rounds screens the rater out with its own code; both are logged."""

import random
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotators.models import Participation, RaterAction, RaterProfile, RaterState, SessionOutcome
from annotators.study.completion import outcome_due, session_end_check
from annotators.study.report import pay_period, pay_report
from annotators.study.settings import study
from annotators.study.timing import active_seconds_sum, capped_seconds
from ratinggame import game
from ratinggame.models import Rating
from tests.factories import TutorialPairFactory, rating_record
from tests.ratinggame.api_helpers import token_client
from tests.ratinggame.journey_helpers import T0, Clock, game_pairs, probation_pairs, rate_next, rater

pytestmark = pytest.mark.django_db

PID = "60a1b2c3d4e5f60718293a4b"


def study_quota(settings, *, ratings: int = 3, **game) -> None:
    """A study of ``ratings`` counted game ratings a session, screen-out after 2 failed rounds, no
    control pairs (and the game settings ``game``): the study tests' rules."""
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 0, **game}
    settings.RATINGGAME_STUDY = {
        **settings.RATINGGAME_STUDY,
        "QUOTA_RATINGS": ratings,
        "COMPLETION_CODE": "C7QUOTA1",
        "SCREEN_OUT_CODE": "CSCREEN9",
        "SCREEN_OUT_ROUNDS": 2,
    }


@pytest.fixture
def quota(settings):
    study_quota(settings)


def participant(client: Client, state: str = RaterState.GAME, *, entered_game: bool | None = None) -> RaterProfile:
    """A participant through a Prolific link on ``state``; ``entered_game``: has been in the game
    (by default when on the game)."""
    client.get(reverse("annotators:study_enter"), {"PROLIFIC_PID": PID, "STUDY_ID": "s1", "SESSION_ID": "x1"})
    profile = RaterProfile.objects.get(participation__external_id=PID)
    entered = state == RaterState.GAME if entered_game is None else entered_game
    RaterProfile.objects.filter(pk=profile.pk).update(
        consent_at=T0 - timedelta(days=1), state=state, game_entered_at=T0 - timedelta(hours=1) if entered else None
    )
    profile.refresh_from_db()
    return profile


def test_the_rule_counts_ratings_minutes_and_failed_rounds():
    rules = study()  # defaults: 100 ratings, no minutes, 3 rounds
    assert outcome_due(counted=99, active_seconds=1e6, failed_rounds=2, rules=rules) is None
    assert outcome_due(counted=100, active_seconds=0, failed_rounds=0, rules=rules) == SessionOutcome.COMPLETED
    assert outcome_due(counted=100, active_seconds=0, failed_rounds=3, rules=rules) == SessionOutcome.SCREENED_OUT


def test_the_active_minutes_quota_completes_first_when_it_comes_first(settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "QUOTA_MINUTES": 30}
    rules = study()
    assert outcome_due(counted=10, active_seconds=30 * 60 - 1, failed_rounds=0, rules=rules) is None
    assert outcome_due(counted=10, active_seconds=30 * 60, failed_rounds=0, rules=rules) == SessionOutcome.COMPLETED


def test_reaching_the_quota_shows_the_code_and_the_way_back_to_prolific(client, quota):
    profile = participant(client)
    game_pairs(5, primes=[3.0, 3.0])
    clock = Clock()
    for _ in range(2):
        rate_next(profile.user, 3, clock)
    assert client.get(reverse("rate", args=["game"])).status_code == 200  # two of three: rating goes on
    assert Participation.objects.get().outcome == ""
    rate_next(profile.user, 3, clock)
    answer = client.get(reverse("rate", args=["game"]))
    assert answer.status_code == 302 and answer["Location"] == reverse("annotators:study_complete")
    page = client.get(answer["Location"]).content.decode()
    assert 'id="completion-code" class="code">C7QUOTA1<' in page
    back = "https://app.prolific.com/submissions/complete?cc=C7QUOTA1"
    assert f'href="{back}"' in page
    assert f'<meta http-equiv="refresh" content="5; url={back}">' in page
    assert parse_qs(urlsplit(back).query) == {"cc": ["C7QUOTA1"]}
    participation = Participation.objects.get()
    assert participation.outcome == SessionOutcome.COMPLETED and participation.completion_shown_at is not None
    assert RaterAction.objects.filter(rater=profile, action="session_completed").count() == 1
    assert 'id="session-ended"' in client.get(reverse("annotators:me")).content.decode()
    # Rating may not go on: the rating screen keeps sending the participant to the code.
    assert client.get(reverse("rate", args=["game"]))["Location"] == reverse("annotators:study_complete")


def test_excluded_and_tutorial_ratings_do_not_count_toward_the_quota(client, quota):
    profile = participant(client)
    user = profile.user
    for pair in game_pairs(3):
        rating_record(rater=user, pair=pair, value=3, excluded=True)
    for _ in range(3):
        rating_record(rater=user, pair=TutorialPairFactory(expert_rating=3), value=3)
    game_pairs(2, primes=[3.0, 3.0])
    assert client.get(reverse("rate", args=["game"])).status_code == 200
    assert Participation.objects.get().outcome == ""


def test_with_continuation_allowed_the_page_shows_once_and_rating_goes_on(client, quota, settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "CONTINUE_AFTER_COMPLETION": True}
    profile = participant(client)
    game_pairs(6, primes=[3.0, 3.0])
    clock = Clock()
    for _ in range(3):
        rate_next(profile.user, 3, clock)
    first = client.get(reverse("rate", args=["game"]))
    assert first["Location"] == reverse("annotators:study_complete")
    page = client.get(first["Location"]).content.decode()
    assert "C7QUOTA1" in page and 'id="keep-rating"' in page and "http-equiv" not in page
    assert client.get(reverse("rate", args=["game"])).status_code == 200


def test_failing_probation_the_set_rounds_screens_out_with_its_own_code(client, quota, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    profile = participant(client, state=RaterState.PROBATION)
    probation_pairs(20, expert=5)
    clock = Clock()
    for _ in range(2):  # two rounds of 20 ratings of 1 against experts' 5: 0 of 40 points each
        for _ in range(20):
            rate_next(profile.user, 1, clock)
    answer = client.get(reverse("rate", args=["probation"]))
    assert answer["Location"] == reverse("annotators:study_complete")
    page = client.get(answer["Location"]).content.decode()
    assert 'data-outcome="screened_out"' in page and "CSCREEN9" in page
    assert "https://app.prolific.com/submissions/complete?cc=CSCREEN9" in page
    assert "C7QUOTA1" not in page
    assert RaterAction.objects.filter(rater=profile, action="session_screened_out").count() == 1
    # Paid for the time given: 40 ratings, each submitted 4 s after its serve (journey_helpers.WAIT).
    start, end = pay_period(T0.date(), T0.date())
    (row,) = pay_report(start=start, end=end).rows
    assert (row.participant_id, row.outcome, row.active_seconds, row.ratings) == (PID, "screened_out", 160, 40)
    # The API serves no further round either.
    with pytest.raises(game.RatingRejected) as refused:
        game.pair_serve(rater=profile.user, now=clock.tick(5))
    assert refused.value.code == "session_ended"


def test_one_failed_round_short_of_the_limit_goes_on(client, quota, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    profile = participant(client, state=RaterState.PROBATION)
    probation_pairs(20, expert=5)
    clock = Clock()
    for _ in range(20):
        rate_next(profile.user, 1, clock)
    assert client.get(reverse("rate", args=["probation"])).status_code == 200
    assert Participation.objects.get().outcome == ""


def test_an_open_sign_up_rater_has_no_quota(client, quota):
    user = rater(RaterState.GAME)
    client.force_login(user)
    game_pairs(5, primes=[3.0, 3.0])
    clock = Clock()
    for _ in range(4):
        rate_next(user, 3, clock)
    assert client.get(reverse("rate", args=["game"])).status_code == 200
    assert client.get(reverse("annotators:study_complete"))["Location"] == reverse("annotators:play")


def test_the_generic_platform_returns_to_its_configured_address(client, quota, settings):
    settings.RATINGGAME_STUDY = {
        **settings.RATINGGAME_STUDY,
        "PLATFORMS": ["generic"],
        "GENERIC_ID_PARAM": "pid",
        "GENERIC_RETURN_URL": "https://connect.example.org/done?code={code}",
    }
    client.get(reverse("annotators:study_enter"), {"pid": "cr-7"})
    profile = RaterProfile.objects.get(participation__external_id="cr-7")
    RaterProfile.objects.filter(pk=profile.pk).update(consent_at=T0, state=RaterState.GAME, game_entered_at=T0)
    game_pairs(4, primes=[3.0, 3.0])
    clock = Clock()
    for _ in range(3):
        rate_next(profile.user, 3, clock)
    page = client.get(reverse("annotators:study_complete")).content.decode()
    assert 'href="https://connect.example.org/done?code=C7QUOTA1"' in page


def test_the_api_tells_a_participant_their_session_ended(client, quota):
    profile = participant(client)
    api = token_client(profile.user)
    game_pairs(4, primes=[3.0, 3.0])
    before = api.get("/api/study/session").json()
    assert before == {"participant": True, "outcome": "", "code": "", "return_url": "", "may_rate_on": True}
    clock = Clock()
    for _ in range(3):
        rate_next(profile.user, 3, clock)
    after = api.get("/api/study/session").json()
    assert after == {
        "participant": True,
        "outcome": "completed",
        "code": "C7QUOTA1",
        "return_url": "https://app.prolific.com/submissions/complete?cc=C7QUOTA1",
        "may_rate_on": False,
    }


def test_the_database_sums_active_time_as_the_rule_caps_each_rating():
    """The quota's sum (``active_seconds_sum``, in the database) against the pay report's rule
    row by row (``capped_seconds``): durations under, at and over the cap, to the microsecond."""
    user = rater(RaterState.GAME)
    rng = random.Random(7)
    durations = [0.0, 59.999999, 60.0, 60.000001, 3600.0] + [round(rng.uniform(0, 150), 6) for _ in range(40)]
    for pair, seconds in zip(game_pairs(len(durations)), durations, strict=True):
        rating_record(rater=user, pair=pair, value=3, seconds=seconds)
    rows = Rating.objects.filter(rater=user).values_list("served_at", "submitted_at")
    expected = sum(capped_seconds(served, submitted, 60.0) for served, submitted in rows)
    summed = Rating.objects.filter(rater=user).aggregate(total=active_seconds_sum(60.0))["total"]
    assert summed.total_seconds() == pytest.approx(expected, abs=1e-6)
    assert expected == pytest.approx(sum(min(60.0, s) for s in durations), abs=1e-5)
    none = Rating.objects.filter(rater=user, value=5).aggregate(total=active_seconds_sum(60.0))["total"]
    assert none == timedelta(0)


def test_a_participants_quota_check_reads_the_same_statements_however_long_the_session(client, quota, settings):
    """Checked after every rating: one aggregate for the counted ratings and the active time,
    not a row per rating read back (it grew with the session)."""
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "QUOTA_RATINGS": 0, "QUOTA_MINUTES": 30}
    profile = participant(client)

    def statements_and_rows() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            assert session_end_check(user=profile.user, now=T0) is None
        return len(captured), sum("served_at" in query["sql"] and "SUM(" not in query["sql"] for query in captured)

    pairs = game_pairs(60)
    for pair in pairs[:5]:
        rating_record(rater=profile.user, pair=pair, value=3, seconds=20)
    few = statements_and_rows()
    for pair in pairs[5:]:
        rating_record(rater=profile.user, pair=pair, value=3, seconds=20)
    assert statements_and_rows() == few and few[1] == 0
    # 60 ratings of 20 s are 20 minutes: under the quota; 30 more reach it.
    for pair in game_pairs(30):
        rating_record(rater=profile.user, pair=pair, value=3, seconds=20)
    ended = session_end_check(user=profile.user, now=T0)
    assert ended is not None and ended.outcome == SessionOutcome.COMPLETED
