"""The neutral skip (SPEC 5): "Skip this pair" passes a game pair without a reason, within a limit."""

import pytest

from annotators.models import RaterProfile, RaterState
from ratinggame import game
from ratinggame.models import Assignment, CaptionPair, PairReport, Rating
from tests.ratinggame.api_helpers import token_client
from tests.ratinggame.journey_helpers import (
    T0,
    Clock,
    assert_pairs_consistent,
    game_pairs,
    probation_pairs,
    rate_next,
    rater,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settings(settings, three_second_rules):
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 0}


def test_a_skip_passes_the_pair_gives_its_slot_back_and_it_never_returns():
    pairs = game_pairs(3, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, game_serves=40)  # past the first 20 serves: 2 skips allowed
    served = game.pair_serve(rater=user, now=T0)
    skipped = game.pair_skip(rater=user, assignment_id=served.assignment_id, now=T0)
    assert skipped.skips_left == 1  # 41 serves (this one counted): (41 - 20) // 10 = 2 allowed, 1 used
    pair = CaptionPair.objects.get(pk=served.pair_id)
    assert pair.in_flight == 0
    assert not Rating.objects.exists()
    assert not PairReport.objects.exists()  # nothing reaches staff
    assert_pairs_consistent()
    # The rater gets the other pairs, never the skipped one again.
    clock = Clock(T0)
    seen = {rate_next(user, 3, clock)[0].pair_id for _ in range(2)}
    assert seen == {p.pk for p in pairs} - {served.pair_id}
    assert game.pair_serve(rater=user, now=clock.now) is None
    # Another rater may rate it.
    assert rate_next(rater(RaterState.GAME), 3, Clock(T0))[0].pair_id in {p.pk for p in pairs}


def test_no_skip_in_the_first_twenty_serves_then_one_in_ten():
    game_pairs(60, primes=[3.0, 3.0])
    user, clock = rater(RaterState.GAME), Clock()
    for _ in range(20):
        served = game.pair_serve(rater=user, now=clock.now)
        with pytest.raises(game.RatingRejected) as refused:
            game.pair_skip(rater=user, assignment_id=served.assignment_id, now=clock.now)
        assert (refused.value.code, refused.value.status) == ("skip_limit", 409)
        assert "first 20" in refused.value.message
        rate_next(user, 3, clock)
    outcomes = []
    for _ in range(20):  # serves 21 to 40: a skip as soon as one is earned
        served = game.pair_serve(rater=user, now=clock.now)
        try:
            game.pair_skip(rater=user, assignment_id=served.assignment_id, now=clock.now)
            outcomes.append("skip")
        except game.RatingRejected as refused:
            assert refused.code == "skip_limit"
            outcomes.append("rate")
            rate_next(user, 3, clock)
    # 10% of the serves after the first 20: one skip per ten serves, never more.
    assert outcomes.count("skip") == 2
    assert Assignment.objects.filter(rater=user, skipped_at__isnull=False).count() == 2
    assert_pairs_consistent()


def test_a_skip_of_a_pair_not_served_to_the_rater_or_not_open_is_refused_and_changes_nothing():
    game_pairs(3, primes=[3.0, 3.0])
    owner, other = rater(RaterState.GAME, game_serves=100), rater(RaterState.GAME, game_serves=100)
    served = game.pair_serve(rater=owner, now=T0)
    cases = [
        (other, served.assignment_id, "not_yours", 403),
        (owner, 10**9, "not_found", 404),
        (owner, "12", "not_found", 404),
    ]
    for user, assignment_id, code, status in cases:
        with pytest.raises(game.RatingRejected) as refused:
            game.pair_skip(rater=user, assignment_id=assignment_id, now=T0)
        assert (refused.value.code, refused.value.status) == (code, status)
    clock = Clock(T0)
    _, feedback = rate_next(owner, 3, clock)  # rates the open pair
    with pytest.raises(game.RatingRejected) as refused:
        game.pair_skip(rater=owner, assignment_id=feedback.assignment_id, now=clock.now)
    assert (refused.value.code, refused.value.status) == ("expired", 409)
    assert not Assignment.objects.filter(skipped_at__isnull=False).exists()
    assert_pairs_consistent()


def test_tutorial_and_probation_pairs_cannot_be_skipped():
    probation_pairs(3)
    user = rater(RaterState.PROBATION, game_serves=100)
    served = game.pair_serve(rater=user, now=T0)
    with pytest.raises(game.RatingRejected) as refused:
        game.pair_skip(rater=user, assignment_id=served.assignment_id, now=T0)
    assert (refused.value.code, refused.value.status) == ("wrong_stage", 403)


def test_the_api_skips_and_answers_the_next_pair_with_clear_errors():
    game_pairs(3, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, game_serves=100)
    client = token_client(user)
    served = client.post("/api/game/next", format="json").json()
    answer = client.post("/api/game/skip", {"assignment_id": served["assignment_id"]}, format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["skipped"] == served["assignment_id"]
    skipped_pair = Assignment.objects.get(pk=served["assignment_id"]).pair_id
    assert Assignment.objects.get(pk=body["next"]["assignment_id"]).pair_id != skipped_pair
    assert body["next"]["stage"] == "game"
    # Again: the pair is no longer open.
    again = client.post("/api/game/skip", {"assignment_id": served["assignment_id"]}, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "expired")
    for bad in ({}, {"assignment_id": "x"}, {"assignment_id": True}):
        refused = client.post("/api/game/skip", bad, format="json")
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid")
    unknown = client.post("/api/game/skip", {"assignment_id": 10**9}, format="json")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")


def test_the_skip_limit_answers_409_through_the_api():
    game_pairs(3, primes=[3.0, 3.0])
    client = token_client(rater(RaterState.GAME))
    served = client.post("/api/game/next", format="json").json()
    refused = client.post("/api/game/skip", {"assignment_id": served["assignment_id"]}, format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "skip_limit")
    assert client.post("/api/game/next", format="json").json()["assignment_id"] == served["assignment_id"]


def test_the_page_skips_with_a_message_and_shows_the_next_pair(client):
    game_pairs(3, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, game_serves=100)
    client.force_login(user)
    page = client.get("/play/game/")
    assert b'id="skip-pair"' in page.content and b'aria-keyshortcuts="S"' in page.content
    served = page.context["served"]
    answer = client.post("/play/skip/", {"assignment": served.assignment_id}, follow=True)
    assert answer.status_code == 200
    assert "Skipped: no rating, no points" in answer.content.decode()
    assert answer.context["served"].pair_id != served.pair_id
    # A skip that is refused says why and keeps the rater on their pair.
    answer = client.post("/play/skip/", {"assignment": served.assignment_id}, follow=True)
    assert "no longer open" in answer.content.decode()
    answer = client.post("/play/skip/", {"assignment": "nonsense"}, follow=True)
    assert answer.status_code == 200 and "no such pair" in answer.content.decode()


def test_the_page_s_script_asks_for_json_and_a_refusal_leaves_the_page_alone(client):
    """The rating page's script sends the skip with ``Accept: application/json``: a refusal is
    answered with its reason (no message is left for the next page, nothing is changed), a skip
    taken with the page to open."""
    game_pairs(3, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, game_serves=100)
    client.force_login(user)
    served = client.get("/play/game/").context["served"]
    as_script = {"headers": {"Accept": "application/json"}}
    taken = client.post("/play/skip/", {"assignment": served.assignment_id}, **as_script)
    assert (taken.status_code, taken.json()) == (200, {"page": "/play/"})
    refused = client.post("/play/skip/", {"assignment": served.assignment_id}, **as_script)
    assert refused.status_code == 409
    assert refused.json() == {
        "code": "expired",
        "message": "This pair is no longer open: it was rated or skipped already.",
    }
    page = client.get("/play/", follow=True)
    messages = [str(message) for message in page.context["messages"]]
    assert len(messages) == 1 and messages[0].startswith("Skipped: no rating, no points")  # none for the refusal


def test_a_refused_skip_says_truly_when_the_next_one_comes():
    """Issue 35, item 3: on game pair 21 with no skip used the refusal said "you have skipped as
    many pairs as you may"; the first skip comes with pair 30 (one in ten after the first 20),
    the second with pair 40."""
    game_pairs(30, primes=[3.0, 3.0])
    user, clock = rater(RaterState.GAME, game_serves=20), Clock()
    served = game.pair_serve(rater=user, now=clock.now)  # game pair 21
    with pytest.raises(game.RatingRejected) as refused:
        game.pair_skip(rater=user, assignment_id=served.assignment_id, now=clock.now)
    assert "Your first skip comes with game pair 30 (one in ten of the pairs after your first 20)" in (
        refused.value.message
    )
    rate_next(user, 3, clock)
    for _ in range(8):  # pairs 22 to 29
        rate_next(user, 3, clock)
    served = game.pair_serve(rater=user, now=clock.now)  # pair 30: the first skip
    game.pair_skip(rater=user, assignment_id=served.assignment_id, now=clock.now)
    served = game.pair_serve(rater=user, now=clock.now)  # pair 31
    with pytest.raises(game.RatingRejected) as refused:
        game.pair_skip(rater=user, assignment_id=served.assignment_id, now=clock.now)
    assert "Your next skip comes with game pair 40" in refused.value.message


def _skip_shown(page) -> tuple[bool, str]:
    """Whether the rating page shows "Skip this pair" (not hidden), and its note."""
    import re

    html = page.content.decode()
    button = re.search(r'<button[^>]*id="skip-pair"[^>]*>', html)[0]
    note = re.search(r'<span class="skip-note" id="skip-note">(.*?)</span>', html)[1]
    return " hidden" not in button, note


def test_the_button_is_shown_only_while_a_skip_is_allowed_and_otherwise_says_from_when(client, settings):
    """Issue 35, item 3: the button was shown on game pair 1, whose skip was then refused."""
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    game_pairs(4, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, game_serves=0, window_count=20, window_points=40)
    client.force_login(user)
    assert _skip_shown(client.get("/play/game/")) == (False, "Skip: from game pair 30")
    RaterProfile.objects.filter(user=user).update(game_serves=29)  # the next serve is the 30th
    served = client.get("/play/game/").context["served"]
    client.post("/play/game/", {"assignment": served.assignment_id, "value": "3"})
    page = client.get("/play/game/")
    assert _skip_shown(page) == (True, "")
    client.post("/play/skip/", {"assignment": page.context["served"].assignment_id})
    assert RaterProfile.objects.get(user=user).game_skips == 1
    assert _skip_shown(client.get("/play/game/")) == (False, "Skip: from game pair 40")


def test_the_next_pair_shown_in_place_says_whether_it_may_be_skipped(client, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    game_pairs(4, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, game_serves=28, window_count=20, window_points=40)
    client.force_login(user)
    served = client.get("/play/game/").context["served"]  # the 29th serve: no skip yet
    answer = client.post(
        "/play/submit/", {"assignment": served.assignment_id, "value": "3"}, HTTP_ACCEPT="application/json"
    ).json()
    assert (answer["next"]["skip_open"], answer["next"]["skip_from"]) == (True, None)  # the 30th
