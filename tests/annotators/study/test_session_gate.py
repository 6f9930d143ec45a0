"""One completion gate on every path (issue 34, items 1-4; SPEC 7): a study session that has ended
takes no rating and serves no pair, through the API (next, submit, skip), the rating page's one
request, the form without a script and the page's skip; the rating that ends a session serves
nothing after it and is answered with its feedback; the screen-out only before the game."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotators.models import Participation, ProbationRound, RaterAction, RaterState, SessionOutcome
from annotators.roles import ADMIN
from annotators.study.completion import outcome_due
from annotators.study.report import pay_period, pay_report
from annotators.study.settings import study
from ratinggame import game
from ratinggame.models import Assignment, CaptionPair, Rating
from tests.annotators.study.test_completion import PID, participant, study_quota
from tests.factories import rating_record
from tests.ratinggame.api_helpers import role_user, token_client
from tests.ratinggame.journey_helpers import Clock, game_pairs, probation_pairs, rate_next

pytestmark = pytest.mark.django_db

COMPLETE = reverse("annotators:study_complete")


@pytest.fixture
def quota(settings):
    study_quota(settings, MIN_SECONDS_PER_RATING=0)


def past_clock() -> Clock:
    """A clock an hour back: what it serves and rates is done before the requests' real now."""
    return Clock(timezone.now() - timedelta(hours=1))


def _api_next(client, api, served):
    return api.post("/api/game/next", format="json")


def _api_submit(client, api, served):
    body = {"assignment_id": served.assignment_id, "value": 3, "next": True}
    return api.post("/api/game/submit", body, format="json")


def _api_skip(client, api, served):
    return api.post("/api/game/skip", {"assignment_id": served.assignment_id}, format="json")


def _page_submit(client, api, served):
    return client.post(reverse("play_submit"), {"assignment": served.assignment_id, "value": 3})


def _page_form(client, api, served):
    return client.post(reverse("rate", args=["game"]), {"assignment": served.assignment_id, "value": 3})


def _page_skip(client, api, served):
    return client.post(reverse("pair_skip"), {"assignment": served.assignment_id})


def _page_open(client, api, served):
    return client.get(reverse("rate_pair", args=["game", served.assignment_id]))


PATHS = {
    "api next": (_api_next, 403),
    "api submit (one request)": (_api_submit, 403),
    "api skip": (_api_skip, 403),
    "page submit (its script)": (_page_submit, 403),
    "page form (no script)": (_page_form, 302),
    "page skip": (_page_skip, 302),
    "page of the open pair": (_page_open, 302),
}


@pytest.mark.parametrize("path", PATHS)
def test_a_session_that_has_ended_takes_no_rating_and_serves_no_pair_on_any_path(client, quota, path):
    """A participant holding an open game pair when their session ended (the time quota, another
    tab): every path refuses, and nothing is stored, served or skipped."""
    call, status = PATHS[path]
    profile = participant(client)
    game_pairs(4, primes=[3.0, 3.0])
    served = game.pair_serve(rater=profile.user, now=timezone.now() - timedelta(seconds=10))
    Participation.objects.update(outcome=SessionOutcome.COMPLETED, ended_at=timezone.now())
    api = token_client(profile.user)
    assignments = list(Assignment.objects.values_list("id", "submitted_at", "skipped_at", "expires_at"))

    answer = call(client, api, served)

    assert answer.status_code == status, answer.content
    if path.startswith("api"):
        assert answer.json()["error"]["code"] == "session_ended"
    elif status == 403:
        assert answer.json()["code"] == "session_ended"
    if path.startswith("page submit"):
        assert answer.json()["page"] == COMPLETE
    if status == 302:
        assert answer["Location"] == COMPLETE
    assert Rating.objects.count() == 0
    assert list(Assignment.objects.values_list("id", "submitted_at", "skipped_at", "expires_at")) == assignments
    # The completion page is where every path leads, with the code.
    assert "C7QUOTA1" in client.get(COMPLETE).content.decode()


def test_a_completed_participant_sent_back_to_probation_is_served_no_round(client, quota):
    profile = participant(client, state=RaterState.PROBATION, entered_game=True)
    probation_pairs(20)
    Participation.objects.update(outcome=SessionOutcome.COMPLETED, ended_at=timezone.now())
    answer = token_client(profile.user).post("/api/game/next", format="json")
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "session_ended"
    assert not Assignment.objects.exists() and not ProbationRound.objects.exists()


def test_with_continuation_allowed_a_completed_participant_is_served_on(client, quota, settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "CONTINUE_AFTER_COMPLETION": True}
    profile = participant(client)
    game_pairs(2, primes=[3.0, 3.0])
    Participation.objects.update(outcome=SessionOutcome.COMPLETED, ended_at=timezone.now())
    answer = token_client(profile.user).post("/api/game/next", format="json")
    assert answer.status_code == 200 and "assignment_id" in answer.json()


@pytest.mark.parametrize("through", ["api", "page"])
def test_the_rating_that_ends_a_session_serves_nothing_after_it(client, quota, through):
    profile = participant(client)
    game_pairs(6, primes=[3.0, 3.0])
    clock = past_clock()
    for _ in range(2):
        rate_next(profile.user, 3, clock)
    served = game.pair_serve(rater=profile.user, now=timezone.now() - timedelta(seconds=5))
    if through == "api":
        body = {"assignment_id": served.assignment_id, "value": 3, "next": True}
        answer = token_client(profile.user).post("/api/game/submit", body, format="json").json()
        assert answer["session_ended"] is True and answer["next"] is None and answer["already_rated"] is False
    else:
        answer = client.post(reverse("play_submit"), {"assignment": served.assignment_id, "value": 3}).json()
        # Its feedback, as a page: its "Finish" leads to the completion page.
        assert answer == {"page": reverse("feedback", args=[served.assignment_id])}
        page = client.get(answer["page"]).content.decode()
        assert ">Finish</a>" in page and "Your session is complete" in page
    assert Rating.objects.filter(rater=profile.user).count() == 3
    assert not Assignment.objects.open().filter(rater=profile.user).exists()
    assert set(CaptionPair.objects.values_list("in_flight", flat=True)) == {0}
    assert Participation.objects.get().outcome == SessionOutcome.COMPLETED
    assert client.get(reverse("annotators:play"), follow=True).redirect_chain[-1][0] == COMPLETE


def test_a_rating_short_of_the_quota_still_serves_the_next_pair_with_it(client, quota):
    profile = participant(client)
    game_pairs(4, primes=[3.0, 3.0])
    served = game.pair_serve(rater=profile.user, now=timezone.now() - timedelta(seconds=5))
    body = {"assignment_id": served.assignment_id, "value": 3, "next": True}
    answer = token_client(profile.user).post("/api/game/submit", body, format="json").json()
    assert answer["session_ended"] is False and answer["next"] is not None


def _fail_round(user, clock: Clock, *, keep_last: bool = False) -> game.Served | None:
    """Rate a probation round of 20 pairs with 1 against the experts' 5 (0 points); with
    ``keep_last``, its last pair is served (at the real now) and returned unrated."""
    for _ in range(19 if keep_last else 20):
        rate_next(user, 1, clock)
    return game.pair_serve(rater=user) if keep_last else None


@pytest.mark.parametrize("through", ["api", "page"])
def test_the_rating_that_screens_a_participant_out_is_answered_with_its_feedback(client, quota, through):
    profile = participant(client, state=RaterState.PROBATION)
    probation_pairs(20, expert=5)
    clock = past_clock()
    _fail_round(profile.user, clock)
    last = _fail_round(profile.user, clock, keep_last=True)
    if through == "api":
        api = token_client(profile.user)
        body = {"assignment_id": last.assignment_id, "value": 1, "next": True}
        answer = api.post("/api/game/submit", body, format="json")
        assert answer.status_code == 200, answer.content
        assert answer.json()["session_ended"] is True and answer.json()["next"] is None
        assert answer.json()["transition"] == "probation_failed"
        # Sent again: the stored rating's feedback, not a refusal.
        again = api.post("/api/game/submit", body, format="json")
        assert again.status_code == 200 and again.json()["already_rated"] is True
    else:
        answer = client.post(reverse("play_submit"), {"assignment": last.assignment_id, "value": 1})
        assert answer.status_code == 200 and answer.json() == {"page": reverse("feedback", args=[last.assignment_id])}
        page = client.get(answer.json()["page"]).content.decode()
        assert "your session ends here" in page and "That was your last round" in page
        assert ">Finish</a>" in page and "Start probation" not in page
    assert Rating.objects.filter(rater=profile.user).count() == 40
    # No third round is left open ("in progress" on the staff page), none is served.
    assert list(ProbationRound.objects.values_list("number", "passed")) == [(1, False), (2, False)]
    assert Participation.objects.get().outcome == SessionOutcome.SCREENED_OUT
    assert "CSCREEN9" in client.get(COMPLETE).content.decode()
    # The staff page says the session ended; no round shows "in progress".
    staff = Client()
    staff.force_login(role_user(ADMIN))
    rater_page = staff.get(reverse("staff:rater", args=[profile.pk])).content.decode()
    assert 'id="session-outcome">ended: screened out' in rater_page and "in progress" not in rater_page


def test_the_rules_screen_out_only_before_the_game():
    rules = study()  # 3 rounds by default
    assert outcome_due(counted=0, active_seconds=0, failed_rounds=3, rules=rules) == SessionOutcome.SCREENED_OUT
    after = outcome_due(counted=0, active_seconds=0, failed_rounds=3, rules=rules, entered_game=True)
    assert after == SessionOutcome.COMPLETED
    assert outcome_due(counted=0, active_seconds=0, failed_rounds=2, rules=rules, entered_game=True) is None


def test_a_participant_sent_back_after_the_game_who_fails_probation_completes_flagged(client, quota):
    """Issue 34, item 4: a participant who has been in the game, sent back (a failed window, a
    drift), and who then fails probation the set rounds completes with the completion code, paid
    for their time, flagged for the researcher; never the screen-out code."""
    profile = participant(client, state=RaterState.PROBATION, entered_game=True)
    probation_pairs(20, expert=5)
    clock = past_clock()
    start_day = clock.now.date()
    _fail_round(profile.user, clock)
    _fail_round(profile.user, clock)
    participation = Participation.objects.get()
    assert participation.outcome == SessionOutcome.COMPLETED and participation.probation_after_game
    (action,) = RaterAction.objects.filter(rater=profile, action__startswith="session_")
    assert action.action == "session_completed" and "Flagged for the researcher" in action.reason
    page = client.get(COMPLETE).content.decode()
    assert "C7QUOTA1" in page and "CSCREEN9" not in page
    (row,) = pay_report(start=pay_period(start_day, start_day)[0], end=timezone.now() + timedelta(days=1)).rows
    assert (row.participant_id, row.outcome, row.ratings) == (PID, "completed", 40)
    assert row.probation_after_game and "review" in row.outcome_label


@pytest.mark.parametrize("path", ["api next", "api skip"])
def test_a_session_the_gate_finds_ended_is_recorded_although_the_request_is_refused(client, quota, path):
    """A session that ended by other means than this rater's rating (here: ratings stored beside
    the game, as a lowered quota would find them): the refusal rolls its transaction back, and the
    outcome the gate recorded in it is recorded again, once, with its log entry."""
    profile = participant(client)
    game_pairs(2, primes=[3.0, 3.0])
    served = game.pair_serve(rater=profile.user, now=timezone.now() - timedelta(seconds=10))
    for pair in game_pairs(3):
        rating_record(rater=profile.user, pair=pair, value=3)
    call, status = PATHS[path]
    answer = call(client, token_client(profile.user), served)
    assert answer.status_code == status and answer.json()["error"]["code"] == "session_ended"
    assert Participation.objects.get().outcome == SessionOutcome.COMPLETED
    assert RaterAction.objects.filter(rater=profile, action="session_completed").count() == 1


def test_a_report_after_the_session_ended_files_nothing_and_skips_nothing(client, quota):
    """The audit's path: "Report a problem and skip" on the pair still open when the session ended."""
    from ratinggame.models import PairReport

    profile = participant(client)
    game_pairs(4, primes=[3.0, 3.0])
    served = game.pair_serve(rater=profile.user, now=timezone.now() - timedelta(seconds=10))
    Participation.objects.update(outcome=SessionOutcome.COMPLETED, ended_at=timezone.now())
    columns = ("id", "submitted_at", "skipped_at", "expires_at", "holds_slot")
    before = list(Assignment.objects.values_list(*columns))
    answer = client.post(reverse("pair_report"), {"assignment": served.assignment_id, "reason": "broken_image"})
    assert answer.status_code == 302 and client.get(answer["Location"])["Location"] == COMPLETE
    assert not PairReport.objects.exists()
    assert list(Assignment.objects.values_list(*columns)) == before


@pytest.mark.parametrize("assignment_id", [0, -5, 10**12])
def test_an_impossible_assignment_after_the_session_ended_is_refused_as_ended(client, quota, assignment_id):
    profile = participant(client)
    Participation.objects.update(outcome=SessionOutcome.COMPLETED, ended_at=timezone.now())
    body = {"assignment_id": assignment_id, "value": 3}
    answer = token_client(profile.user).post("/api/game/submit", body, format="json")
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "session_ended"
