"""The game's feedback page: consensus, points and the qualification window, the points table,
the first rater, a failed window, and disputes."""

import re
from html import unescape

import pytest
from django.urls import reverse

from annotators.models import Dispute, RaterState
from ratinggame.models import Pool, Rating
from tests.annotators.pages.helpers import (
    body,
    rate,
    rater,
)
from tests.factories import CaptionPairFactory, ProbationPairFactory
from tests.ratinggame.journey_helpers import seed_ratings

pytestmark = pytest.mark.django_db


# --- Game feedback, window and disputes ----------------------------------------------------


def test_game_feedback_shows_consensus_points_and_window(client):
    # SPEC section 3's worked example: prev = [4, 4], x = 4 scores 2.
    pair = CaptionPairFactory(pool=Pool.GAME)
    seed_ratings(pair, [4, 4])
    user = rater(RaterState.GAME)
    client.force_login(user)
    _, response = rate(client, user, "game", 4)
    html = body(client.get(response["Location"]))
    assert re.search(r'Consensus rating</dt><dd class="fb-big">4<', html)
    assert re.search(r'Points</dt><dd class="fb-big">\+2<', html)
    assert "You matched the consensus." in html
    assert "Qualification: 1 of 20 ratings · 2 points so far, 25 needed" in html
    # The full 2 points: a dispute could not restore anything, so none is offered.
    assert "Dispute this score" not in html


@pytest.mark.parametrize(("primes", "others"), [([4.0, 4.0], []), ([4.0, 4.0], [4]), ([], [4]), ([], [4, 4, 4, 4])])
def test_game_feedback_says_the_consensus_in_the_same_words_whoever_made_it(client, primes, others):
    """SPEC 2.5: a control's consensus is the experts' rating; naming whose ratings made a game
    pair's ("of 5 other players", "the model's estimate") set controls apart (issue 35)."""
    pair = CaptionPairFactory(pool=Pool.GAME, primes=primes)
    seed_ratings(pair, others)
    user = rater(RaterState.GAME)
    client.force_login(user)
    _, response = rate(client, user, "game", 2)
    html = unescape(body(client.get(response["Location"])))
    assert "The consensus was 4: “Mostly identified" in html
    assert "player" not in html.split('id="consensus-note"')[1].split("</p>")[0]


def points_rows(html: str) -> list[list[str]]:
    """The cells of the "How game points work" table, row by row (the hidden words left out)."""
    table = re.search(r'<table class="points-table">(.*?)</table>', html, re.S)[1]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    cells = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S) for row in rows]
    return [[re.sub(r"<span.*?</span>", "", cell).strip() for cell in row] for row in cells]


# Algorithm 1 on the SPEC's worked examples: prev = [4, 4] and prev = [1, 5].
POINTS_TABLE = [
    ["matches the consensus", "+2", "+2"],
    ["1 level off", "0", "+1"],
    ["2 levels off", "-1", "0"],
    ["3 levels off", "-2", "–"],
    ["4 levels off", "-2", "–"],
]


def test_the_introduction_explains_game_points_with_a_table(client, tutorial):
    client.force_login(rater())
    html = body(client.get(reverse("annotators:intro")))
    assert points_rows(html) == POINTS_TABLE
    assert "the game divides your distance from it by a factor that grows with their disagreement" in unescape(html)


def test_the_first_game_feedback_explains_game_points_and_the_next_does_not(client):
    for _ in range(2):
        CaptionPairFactory(pool=Pool.GAME, primes=[4.0, 4.0])
    user = rater(RaterState.GAME)
    client.force_login(user)
    _, first = rate(client, user, "game", 3)
    assert points_rows(body(client.get(first["Location"]))) == POINTS_TABLE
    _, second = rate(client, user, "game", 3)
    assert "How game points work" not in body(client.get(second["Location"]))


def test_first_rater_of_a_pair_is_told_so(client):
    CaptionPairFactory(pool=Pool.GAME)
    user = rater(RaterState.GAME)
    client.force_login(user)
    _, response = rate(client, user, "game", 3)
    assert "You are the first to rate this pair: 0 points." in body(client.get(response["Location"]))


def test_failed_qualification_window_says_so_and_leads_to_probation(client):
    CaptionPairFactory(pool=Pool.GAME)
    ProbationPairFactory(expert_rating=3)
    user = rater(RaterState.GAME, window_count=19, window_points=20, game_score=20)
    client.force_login(user)
    _, response = rate(client, user, "game", 3)  # first rater: 0 points, 20 of 25 after 20 ratings
    html = body(client.get(response["Location"]))
    assert "Qualification failed: back to probation" in html
    assert "You scored 20 points in your first 20 game ratings, fewer than the 25 needed." in html
    assert client.get(reverse("annotators:play"))["Location"] == reverse("rate", args=["probation"])


def test_dispute_is_filed_on_a_game_score_and_then_no_longer_offered(client):
    pair = CaptionPairFactory(pool=Pool.GAME)
    seed_ratings(pair, [4, 4])
    user = rater(RaterState.GAME)
    client.force_login(user)
    assignment_id, _ = rate(client, user, "game", 2)  # -1 point against the consensus 4
    feedback = reverse("feedback", args=[assignment_id])
    assert "Dispute this score" in body(client.get(feedback))

    empty = client.post(reverse("dispute", args=[assignment_id]), {"comment": "   "})
    assert empty["Location"] == feedback
    assert "This field is required." in body(client.get(feedback))
    assert not Dispute.objects.exists()

    response = client.post(reverse("dispute", args=[assignment_id]), {"comment": "The caption names the dog."})
    assert response["Location"] == feedback
    dispute = Dispute.objects.get()
    assert dispute.rating == Rating.objects.get(assignment_id=assignment_id)
    assert dispute.comment == "The caption names the dog."
    html = body(client.get(feedback))
    assert "Your dispute is filed." in html
    assert "Waiting for an admin" in html
    assert "Dispute this score" not in html

    again = client.post(reverse("dispute", args=[assignment_id]), {"comment": "Again."})
    assert again["Location"] == feedback
    assert "You have disputed this score already" in body(client.get(feedback))
    assert Dispute.objects.count() == 1


def test_tutorial_scores_cannot_be_disputed(client, tutorial):
    user = rater()
    client.force_login(user)
    assignment_id, _ = rate(client, user, "tutorial", 1)
    response = client.post(reverse("dispute", args=[assignment_id]), {"comment": "I disagree."})
    assert response["Location"] == reverse("feedback", args=[assignment_id])
    assert "Only game scores can be disputed" in body(client.get(response["Location"]))
    assert not Dispute.objects.exists()
