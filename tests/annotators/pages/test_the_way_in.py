"""The rater's pages through the Django test client: sign-up, consent, the tutorial and its
feedback, probation and the game, and the one state machine that sends a rater to their step."""

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from annotators.models import RaterProfile, RaterState
from annotators.roles import ANNOTATOR
from ratinggame.models import Assignment, CaptionPair, Pool, Rating
from tests.annotators.pages.helpers import (
    EXPERTS,
    PASSWORD,
    body,
    look_long_enough,
    open_assignment_id,
    rate,
    rater,
)
from tests.factories import CaptionPairFactory, ProbationPairFactory

pytestmark = pytest.mark.django_db


# --- The whole way in --------------------------------------------------------------------


def test_signup_consent_tutorial_feedback_then_game(client, tutorial):
    CaptionPairFactory(pool=Pool.GAME)
    home = client.get(reverse("home"))
    assert reverse("annotators:signup") in body(home)

    response = client.post(
        reverse("annotators:signup"),
        {"username": "newrater", "email": "", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    user = RaterProfile.objects.get(user__username="newrater").user
    assert user.groups.filter(name=ANNOTATOR).exists()
    # Logged in, and the journey starts with consent: the tutorial is not open yet.
    assert client.get(reverse("annotators:play"))["Location"] == reverse("annotators:consent")
    assert client.get(reverse("rate", args=["tutorial"]))["Location"] == reverse("annotators:consent")

    refused = client.post(reverse("annotators:consent"), {})
    assert refused.status_code == 400
    assert RaterProfile.objects.get(user=user).consent_at is None
    before = timezone.now()
    response = client.post(reverse("annotators:consent"), {"agree": "on"})
    assert response["Location"] == reverse("annotators:intro")
    assert RaterProfile.objects.get(user=user).consent_at >= before
    assert "Start the tutorial" in body(client.get(reverse("annotators:intro")))
    assert "Continue the tutorial" in body(client.get(reverse("home")))
    assert client.get(reverse("annotators:play"))["Location"] == reverse("rate", args=["tutorial"])

    for index, expert in enumerate(EXPERTS, start=1):
        page = client.get(reverse("rate", args=["tutorial"]))
        assert f"Tutorial {index} of 10" in body(page)
        assignment_id = open_assignment_id(page)
        look_long_enough(user)
        # One step off the expert every time: 2 - 1 = 1 point per pair, 10 of 20 in the end.
        value = expert - 1 if expert > 1 else 2
        response = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": value})
        assert response["Location"] == reverse("feedback", args=[assignment_id])
        feedback = body(client.get(response["Location"]))
        assert f"Because of reason {index - 1}." in feedback  # the expert's explanation
        assert re.search(rf'Expert rating</dt><dd class="fb-big">{expert}<', feedback)
        assert re.search(r'Points</dt><dd class="fb-big">\+1<', feedback)
        assert re.search(rf">{index} <span class=\"of\">of 20</span>", feedback)

    assert "Tutorial passed" in feedback
    assert "You scored 10 of 20 points (10 needed)" in feedback
    assert "Go to the game" in feedback
    assert client.get(reverse("annotators:play"))["Location"] == reverse("rate", args=["game"])
    game_page = body(client.get(reverse("rate", args=["game"])))
    assert "Rating game" in game_page
    assert "Qualification: 0 of 20 ratings · 0 points so far, 25 needed" in game_page
    assert RaterProfile.objects.get(user=user).tutorial_score == 10


def test_tutorial_below_10_points_ends_with_probation(client, tutorial):
    ProbationPairFactory(expert_rating=3)
    user = rater()
    client.force_login(user)
    for expert in EXPERTS:
        # Two steps off the expert (0 points) every time: 0 of 20.
        assignment_id, _ = rate(client, user, "tutorial", expert + 2 if expert <= 3 else expert - 2)
    feedback = body(client.get(reverse("feedback", args=[assignment_id])))
    assert "Tutorial finished: probation next" in feedback
    assert "You scored 0 of 20 points, fewer than the 10 needed" in feedback
    page = client.get(reverse("annotators:play"))
    assert page["Location"] == reverse("rate", args=["probation"])
    assert "Probation round 1" in body(client.get(page["Location"]))


def served_pair(assignment_id: int) -> CaptionPair:
    return Assignment.objects.select_related("pair").get(pk=assignment_id).pair


def play_stage(client, user, stage: str, count: int, value_for) -> list[str]:
    """Rate ``count`` pairs of ``stage`` through the pages, ``value_for(pair)`` each time; the feedback pages."""
    pages = []
    for _ in range(count):
        page = client.get(reverse("rate", args=[stage]))
        assert page.status_code == 200, page
        assignment_id = open_assignment_id(page)
        look_long_enough(user)
        value = value_for(served_pair(assignment_id))
        response = client.post(reverse("rate", args=[stage]), {"assignment": assignment_id, "value": value})
        assert response["Location"] == reverse("feedback", args=[assignment_id])
        pages.append(body(client.get(response["Location"])))
    return pages


def test_whole_journey_through_the_pages(client, tutorial):
    """Sign up, fail the tutorial, fail probation, pass it, fail the qualification window (its
    ratings excluded and the consensus recomputed), pass probation again, pass the window."""
    probation = [ProbationPairFactory(expert_rating=1 + index % 5) for index in range(20)]
    first_pairs = [CaptionPairFactory(pool=Pool.GAME, primes=[4.0, 4.0]) for _ in range(20)]
    client.post(
        reverse("annotators:signup"),
        {"username": "journey", "email": "", "password1": PASSWORD, "password2": PASSWORD},
    )
    user = RaterProfile.objects.get(user__username="journey").user
    client.post(reverse("annotators:consent"), {"agree": "on"})

    # Tutorial: two steps off every expert rating, 0 of 20 -> probation.
    two_off = lambda p: p.expert_rating + 2 if p.expert_rating <= 3 else p.expert_rating - 2  # noqa: E731
    pages = play_stage(client, user, "tutorial", 10, two_off)
    assert "You scored 0 of 20 points, fewer than the 10 needed" in pages[-1]
    assert RaterProfile.objects.get(user=user).tutorial_score == 0
    # Probation round 1: one step off every time, 20 of 40 -> a new round.
    pages = play_stage(client, user, "probation", 20, lambda p: p.expert_rating + 1 if p.expert_rating < 5 else 4)
    assert "20 of 40" in pages[-1] and "25 needed" in pages[-1]
    # With only 20 probation pairs the next round can only repeat them, and the page says so.
    assert "Next: round 2, 20 pairs: 0 you have not rated before and 20 you rated longest ago" in pages[-1]
    assert client.get(reverse("annotators:play"))["Location"] == reverse("rate", args=["probation"])
    assert "Probation round 2" in body(client.get(reverse("rate", args=["probation"])))
    # Round 2: exact every time, 40 of 40 -> the game.
    pages = play_stage(client, user, "probation", 20, lambda p: p.expert_rating)
    assert "40 of 40" in pages[-1]
    rounds = RaterProfile.objects.get(user=user).probation_rounds.order_by("number")
    assert [r.passed for r in rounds] == [False, True]
    assert sorted(rounds[0].pair_order) == sorted(rounds[1].pair_order) == sorted(p.pk for p in probation)
    assert client.get(reverse("annotators:play"))["Location"] == reverse("rate", args=["game"])

    # The first qualification window: twenty 1s against primes [4, 4] score -2 each (SPEC section 3).
    pages = play_stage(client, user, "game", 20, lambda p: 1)
    assert re.search(r'Points</dt><dd class="fb-big">(-|−)2<', pages[0])
    assert "Qualification failed: back to probation" in pages[-1]
    profile = RaterProfile.objects.get(user=user)
    assert (profile.state, profile.game_score) == (RaterState.PROBATION, 0)
    excluded = Rating.objects.filter(rater=user, stage="game")
    assert excluded.count() == 20 and all(excluded.values_list("excluded", flat=True))
    # Out of every consensus: the pairs are back to their primes only.
    for pair in first_pairs:
        pair.refresh_from_db()
        assert (pair.human_count, pair.human_sum, pair.human_sumsq) == (0, 0, 0)
    # Another rater of one of those pairs is scored against [4, 4] again: 4 -> +2, consensus 4.
    other = rater(RaterState.GAME)
    client.force_login(other)
    other_page = play_stage(client, other, "game", 1, lambda p: 4)[0]
    assert re.search(r'Consensus rating</dt><dd class="fb-big">4<', other_page)
    assert re.search(r'Points</dt><dd class="fb-big">\+2<', other_page)

    # Back in: probation round 3 passed, then a window of twenty 4s on new pairs passes.
    client.force_login(user)
    for _ in range(20):
        CaptionPairFactory(pool=Pool.GAME, primes=[4.0, 4.0])
    play_stage(client, user, "probation", 20, lambda p: p.expert_rating)
    pages = play_stage(client, user, "game", 20, lambda p: 4)
    assert "Qualification passed" in pages[-1]
    # Already in the game: the button says to keep playing (issue 35, item 6), not "Go to the game".
    assert ">Keep playing</a>" in pages[-1] and "Go to the game" not in pages[-1]
    # Words that read right once passed: "Qualified", never "40 of 25 points needed".
    assert '<span class="window-text">Qualified</span>' in pages[-1]
    CaptionPairFactory(pool=Pool.GAME)
    assert "Qualified" in body(client.get(reverse("rate", args=["game"])))
    rated = list(Rating.objects.filter(rater=user, stage="game").values_list("pair_id", flat=True))
    assert len(rated) == len(set(rated)) == 40  # never the same pair twice
    profile.refresh_from_db()
    assert (profile.state, profile.game_score) == (RaterState.GAME, 40)


# --- One state machine -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "consent", "url", "expected"),
    [
        (RaterState.TUTORIAL, True, ("rate", ["game"]), ("rate", ["tutorial"])),
        (RaterState.TUTORIAL, True, ("rate", ["probation"]), ("rate", ["tutorial"])),
        (RaterState.PROBATION, True, ("rate", ["game"]), ("rate", ["probation"])),
        (RaterState.GAME, True, ("rate", ["tutorial"]), ("rate", ["game"])),
        (RaterState.TUTORIAL, False, ("annotators:intro", []), ("annotators:consent", [])),
        (RaterState.GAME, True, ("annotators:consent", []), ("rate", ["game"])),
        (RaterState.GAME, True, ("annotators:suspended", []), ("rate", ["game"])),
    ],
)
def test_a_page_of_another_step_redirects_to_the_raters_step(client, state, consent, url, expected):
    client.force_login(rater(state, consent=consent))
    response = client.get(reverse(url[0], args=url[1]))
    assert response.status_code == 302
    assert response["Location"] == reverse(expected[0], args=expected[1])


def test_anonymous_visitor_is_sent_to_log_in(client):
    response = client.get(reverse("rate", args=["game"]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_suspended_rater_sees_a_clear_page_and_cannot_rate(client, tutorial):
    user = rater()
    client.force_login(user)
    assignment_id = open_assignment_id(client.get(reverse("rate", args=["tutorial"])))
    RaterProfile.objects.filter(user=user).update(state=RaterState.SUSPENDED, state_before_suspension="tutorial")
    look_long_enough(user)

    for url in (reverse("annotators:play"), reverse("rate", args=["tutorial"]), reverse("rate", args=["game"])):
        assert client.get(url)["Location"] == reverse("annotators:suspended")
    page = client.get(reverse("annotators:suspended"))
    assert page.status_code == 200
    assert "Your account is suspended" in body(page)

    response = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 3})
    assert response["Location"] == reverse("annotators:suspended")
    assert not Rating.objects.filter(rater=user).exists()
