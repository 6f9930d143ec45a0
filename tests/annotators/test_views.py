"""The rater's pages through the Django test client: sign-up, consent, tutorial, feedback, game,
the one state machine behind every page, suspension, disputes, leaderboard, and the delay."""

import re
from datetime import timedelta
from html import unescape
from html.parser import HTMLParser

import pytest
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotators.models import Dispute, RaterProfile, RaterState
from annotators.roles import ANNOTATOR
from ratinggame.models import Assignment, CaptionPair, Pool, Rating
from tests.factories import CaptionPairFactory, ProbationPairFactory, TutorialPairFactory, UserFactory, rating_make
from tests.ratinggame.journey_helpers import seed_ratings

pytestmark = pytest.mark.django_db

EXPERTS = [5, 4, 3, 2, 1, 3, 4, 2, 5, 1]
PASSWORD = "a long enough pass phrase 42"
# SPEC section 1, rating 5, as the Rating Guide must show it.
SPEC_LEVEL_5 = (
    "Objects, a general scene, and actions are correctly identified if present in the image. "
    "The caption describes what is seen and where things are in space. "
    "Interpretation of overall setting and/or event is included."
)


@pytest.fixture(autouse=True)
def _three_seconds(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 3.0, "ASSIGNMENT_EXPIRY_SECONDS": 1800}


@pytest.fixture
def tutorial():
    return [
        TutorialPairFactory(expert_rating=expert, display_order=index, explanation=f"Because of reason {index}.")
        for index, expert in enumerate(EXPERTS)
    ]


def rater(state=RaterState.TUTORIAL, consent=True, **fields):
    user = UserFactory()
    RaterProfile.objects.create(
        user=user,
        state=state,
        consent_at=timezone.now() - timedelta(days=1) if consent else None,
        game_entered_at=timezone.now() - timedelta(hours=1) if state == RaterState.GAME else None,
        **fields,
    )
    return user


def look_long_enough(user, seconds: float = 4) -> None:
    """The rater looks at the open pair for ``seconds``: its server-side served time moves back."""
    Assignment.objects.filter(rater=user, submitted_at__isnull=True).update(
        served_at=F("served_at") - timedelta(seconds=seconds)
    )


def open_assignment_id(response) -> int:
    return open_assignment_id_in(response.content.decode())


def open_assignment_id_in(html: str) -> int:
    match = re.search(r'name="assignment" value="(\d+)"', html)
    assert match, "the rating form carries its assignment"
    return int(match.group(1))


def rate(client, user, stage: str, value) -> tuple[int, object]:
    """Open the stage's rating screen, look for 4 s, submit ``value``; (assignment id, response)."""
    page = client.get(reverse("rate", args=[stage]))
    assert page.status_code == 200
    assignment_id = open_assignment_id(page)
    look_long_enough(user)
    return assignment_id, client.post(reverse("rate", args=[stage]), {"assignment": assignment_id, "value": value})


class Page(HTMLParser):
    """What the accessibility checks need from a page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.lang = None
        self.mains = 0
        self.radios: list[str] = []
        self.label_fors: set[str] = set()
        self.legends = 0
        self.images: list[dict] = []
        self.dialogs: list[str] = []
        self.live_regions = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.lang = attrs.get("lang")
        elif tag == "main":
            self.mains += 1
        elif tag == "input" and attrs.get("type") == "radio":
            self.radios.append(attrs.get("id", ""))
        elif tag == "label" and attrs.get("for"):
            self.label_fors.add(attrs["for"])
        elif tag == "legend":
            self.legends += 1
        elif tag == "img":
            self.images.append(attrs)
        elif tag == "dialog":
            self.dialogs.append(attrs.get("id", ""))
        if attrs.get("aria-live") == "polite":
            self.live_regions += 1


def body(response) -> str:
    return response.content.decode()


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


# --- Rejections: clear messages, right status codes, nothing stored --------------------------


def test_the_guide_beside_a_tutorial_pair_never_shows_a_pair_the_rater_has_not_rated(client, tutorial):
    # The guide's examples are tutorial pairs with their expert ratings: an unrated one, the pair
    # on the screen above all, would hand the rater its answer.
    user = rater()
    client.force_login(user)
    first = body(client.get(reverse("rate", args=["tutorial"])))
    assert tutorial[0].caption in first  # the pair being rated
    assert "guide-example" not in first
    assignment_id = open_assignment_id_in(first)
    look_long_enough(user)
    client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": "4"})
    second = body(client.get(reverse("rate", args=["tutorial"])))
    assert tutorial[1].caption in second
    # The pair just rated (expert 5, its answer now shown in the feedback) is the one example.
    assert second.count('class="guide-example"') == 1
    assert f"rated 5 by the experts: “{tutorial[0].caption}”" in second
    assert f"“{tutorial[1].caption}”" not in second


def test_early_submit_redirects_to_the_pair_with_the_message_and_the_choice(client, tutorial):
    user = rater()
    client.force_login(user)
    assignment_id = open_assignment_id(client.get(reverse("rate", args=["tutorial"])))
    response = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": "4"})
    # Post/redirect/get: reloading what follows sends no rating again.
    assert response["Location"] == reverse("rate", args=["tutorial"])
    html = body(client.get(response["Location"]))
    assert "Take at least 3 seconds to look at the pair before rating it." in html
    # The same pair again, with the rater's choice kept.
    assert open_assignment_id_in(html) == assignment_id
    assert re.search(r'value="4"[^>]*checked', html)
    # The message is shown once; a reload once the seconds have passed still stores nothing.
    look_long_enough(user)
    again = body(client.get(reverse("rate", args=["tutorial"])))
    assert "Take at least 3 seconds" not in again
    assert not Rating.objects.exists()
    assert Assignment.objects.get(pk=assignment_id).submitted_at is None


def test_countdown_comes_from_the_servers_times(client, tutorial):
    user = rater()
    client.force_login(user)
    html = body(client.get(reverse("rate", args=["tutorial"])))
    now_ms = int(re.search(r'data-server-now-ms="(\d+)"', html).group(1))
    min_ms = int(re.search(r'data-min-submit-ms="(\d+)"', html).group(1))
    assert 2500 < min_ms - now_ms <= 3000
    look_long_enough(user, seconds=2)
    reloaded = client.get(reverse("rate", args=["tutorial"]))
    # Reload-safe: the same assignment, and 2 s of the 3 s already gone.
    assert open_assignment_id(reloaded) == Assignment.objects.get().pk
    html = body(reloaded)
    now_ms = int(re.search(r'data-server-now-ms="(\d+)"', html).group(1))
    min_ms = int(re.search(r'data-min-submit-ms="(\d+)"', html).group(1))
    assert 500 < min_ms - now_ms <= 1000


def test_invalid_value_is_refused_with_the_screen_again(client, tutorial):
    user = rater()
    client.force_login(user)
    for value in ("", "3.5", "6", "x"):
        assignment_id, response = rate(client, user, "tutorial", value)
        assert response["Location"] == reverse("rate", args=["tutorial"])
        page = client.get(response["Location"])
        assert "Choose a rating from 1 to 5." in body(page)
        assert open_assignment_id(page) == assignment_id
    assert not Rating.objects.exists()


def test_a_second_submission_shows_the_first_result_and_says_when_its_rating_was_not_taken(client, tutorial):
    user = rater()
    client.force_login(user)
    assignment_id, first = rate(client, user, "tutorial", 5)
    feedback = reverse("feedback", args=[assignment_id])
    # A double click sends the same rating again: the first result, and nothing alarming.
    double = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 5})
    assert first["Location"] == double["Location"] == feedback
    assert "not taken" not in body(client.get(feedback))
    # Another tab (the same session), still showing the pair, sends another rating.
    other_tab = Client()
    other_tab.cookies = client.cookies
    second = other_tab.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 1})
    assert second["Location"] == feedback
    html = unescape(body(other_tab.get(feedback)))
    assert re.search(r'Your rating</dt><dd class="fb-big">5<', html)
    assert (
        "This pair was already rated (in another tab or window): your rating 1 was not taken. "
        "The rating stored is 5, and this page shows its result." in html
    )
    assert "your rating 1 was not taken" in re.search(r'id="feedback-announce"[^>]*data-text="([^"]*)"', html)[1]
    assert Rating.objects.get().value == 5
    assert "not taken" not in body(client.get(feedback))  # said once


def test_another_raters_pair_is_forbidden(client, tutorial):
    owner, intruder = rater(), rater()
    client.force_login(owner)
    assignment_id, _ = rate(client, owner, "tutorial", 5)
    client.force_login(intruder)
    response = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 3}, follow=True)
    assert response.redirect_chain[0] == (reverse("annotators:play"), 302)
    assert "This pair was served to someone else." in body(response)
    assert client.get(reverse("feedback", args=[assignment_id])).status_code == 403
    missing = client.post(reverse("rate", args=["tutorial"]), {"assignment": 999999, "value": 3}, follow=True)
    assert "There is no such pair to rate." in body(missing)
    assert Rating.objects.count() == 1


def test_expired_pair_offers_the_next_one(client, tutorial):
    user = rater()
    client.force_login(user)
    assignment_id = open_assignment_id(client.get(reverse("rate", args=["tutorial"])))
    Assignment.objects.filter(pk=assignment_id).update(
        served_at=timezone.now() - timedelta(hours=1), expires_at=timezone.now() - timedelta(minutes=1)
    )
    response = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 3}, follow=True)
    assert response.redirect_chain[-1] == (reverse("rate", args=["tutorial"]), 302)
    html = body(response)
    assert "This pair is no longer open for rating. Please rate the next one." in html
    assert open_assignment_id(response) != assignment_id  # a new assignment of the pair to rate
    assert not Rating.objects.exists()


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
    assert "You matched the consensus of 2 other players." in html
    assert "Qualification: 1 of 20 ratings · 2 points so far, 25 needed" in html
    # The full 2 points: a dispute could not restore anything, so none is offered.
    assert "Dispute this score" not in html


@pytest.mark.parametrize(
    ("primes", "others", "said"),
    [
        ([4.0, 4.0], [], "The model's estimate (no other player has rated this pair yet) was 4"),
        ([4.0, 4.0], [4], "The consensus of 1 other player and the model's estimate was 4"),
        ([], [4], "The consensus of 1 other player was 4"),
    ],
)
def test_game_feedback_says_whose_consensus_it_was(client, primes, others, said):
    pair = CaptionPairFactory(pool=Pool.GAME, primes=primes)
    seed_ratings(pair, others)
    user = rater(RaterState.GAME)
    client.force_login(user)
    _, response = rate(client, user, "game", 2)
    assert said in unescape(body(client.get(response["Location"])))


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


# --- Leaderboard and personal page -----------------------------------------------------------


def test_leaderboard_opt_out_hides_the_rater(client):
    rater(RaterState.GAME, game_score=300, display_name="Ada")
    bob = rater(RaterState.GAME, game_score=120, display_name="Bob")
    page = body(client.get(reverse("annotators:leaderboard")))
    assert page.index("Ada") < page.index("Bob")  # ranked by points

    client.force_login(bob)
    response = client.post(reverse("annotators:me"), {"display_name": "Bob"})  # box unticked: opt out
    assert response.status_code == 302
    page = body(client.get(reverse("annotators:leaderboard")))
    assert "Ada" in page
    assert "Bob" not in page


def test_the_leaderboard_highlights_the_raters_own_row_and_asks_for_a_pseudonym(client):
    rater(RaterState.GAME, game_score=300, display_name="Ada")
    me = rater(RaterState.GAME, game_score=120)
    client.force_login(me)
    page = body(client.get(reverse("annotators:leaderboard")))
    own = re.findall(r'<tr class="me" aria-current="true">.*?</tr>', page, re.S)
    assert len(own) == 1 and "Anonymous rater" in own[0] and "(you)" in own[0]
    assert 'id="pseudonym-prompt"' in page
    assert 'id="pseudonym-prompt"' in body(client.get(reverse("annotators:me")))
    client.post(reverse("annotators:me"), {"display_name": "Quill", "on_leaderboard": "on"})
    page = body(client.get(reverse("annotators:leaderboard")))
    assert 'id="pseudonym-prompt"' not in page
    assert "Quill" in re.findall(r'<tr class="me" aria-current="true">.*?</tr>', page, re.S)[0]


@pytest.mark.parametrize("copy", ["Ada", "ADA", "  ada "])
def test_a_pseudonym_cannot_copy_another_raters_whatever_its_case(client, copy):
    ada = rater(RaterState.GAME, game_score=300, display_name="Ada")
    me = rater(RaterState.GAME, game_score=120, display_name="Quill")
    client.force_login(me)
    response = client.post(reverse("annotators:me"), {"display_name": copy, "on_leaderboard": "on"})
    assert response.status_code == 400
    assert "Another rater uses this pseudonym already" in body(response)
    assert RaterProfile.objects.get(user=me).display_name == "Quill"
    assert RaterProfile.objects.get(user=ada).display_name == "Ada"
    # Their own name in another case, and the anonymous name refused with its own reason.
    assert client.post(reverse("annotators:me"), {"display_name": "QUILL", "on_leaderboard": "on"}).status_code == 302
    assert RaterProfile.objects.get(user=me).display_name == "QUILL"
    refused = client.post(reverse("annotators:me"), {"display_name": "anonymous rater", "on_leaderboard": "on"})
    assert "leave the field empty" in body(refused)


def test_the_database_refuses_a_copied_pseudonym_written_around_the_service():
    from django.db import IntegrityError, transaction

    rater(RaterState.GAME, display_name="Ada")
    copier = RaterProfile.objects.get(user=rater(RaterState.GAME))
    with pytest.raises(IntegrityError), transaction.atomic():
        RaterProfile.objects.filter(pk=copier.pk).update(display_name="aDA")
    rater(RaterState.GAME)  # many raters have no pseudonym: the empty name is nobody's
    assert RaterProfile.objects.filter(display_name="").count() == 2


def test_personal_page_shows_record_and_saves_display_name(client):
    pair = CaptionPairFactory(pool=Pool.GAME)
    seed_ratings(pair, [4, 4])
    user = rater(RaterState.GAME)
    client.force_login(user)
    rate(client, user, "game", 4)  # matches the consensus 4: 2 points
    page = body(client.get(reverse("annotators:me")))
    assert re.search(r'id="stat-ratings">1<', page)
    assert re.search(r'id="stat-agreement">100 %<', page)
    assert re.search(r'id="stat-streak">1<', page)
    assert re.search(r'id="stat-score">2<', page)
    assert re.search(r'id="stat-next">250 points<', page)

    client.post(reverse("annotators:me"), {"display_name": "  Grace  ", "on_leaderboard": "on"})
    profile = RaterProfile.objects.get(user=user)
    assert (profile.display_name, profile.on_leaderboard) == ("Grace", True)


def test_a_failed_window_leaves_its_ratings_on_the_personal_page_as_excluded_and_says_why(client):
    CaptionPairFactory(pool=Pool.GAME)
    ProbationPairFactory(expert_rating=3)
    user = rater(RaterState.GAME, window_count=19, window_points=20, game_score=20)
    earlier = [CaptionPairFactory(pool=Pool.GAME) for _ in range(19)]
    for pair in earlier:
        # The window's first 19 ratings, as the game stored them (in their pairs' aggregates too).
        rating_make(rater=user, pair=pair, value=3, submitted_at=timezone.now() - timedelta(minutes=5))
    CaptionPair.objects.filter(pk__in=[pair.pk for pair in earlier]).update(human_count=1, human_sum=3, human_sumsq=9)
    staff_excluded = CaptionPairFactory(pool=Pool.GAME)
    rating_make(rater=user, pair=staff_excluded, value=2, excluded=True, excluded_reason="a duplicate account")
    client.force_login(user)
    _, response = rate(client, user, "game", 3)  # the 20th: 20 of the 25 points needed, the window fails
    assert "Qualification failed" in body(client.get(response["Location"]))
    page = unescape(body(client.get(reverse("annotators:me"))))
    assert re.search(r'Game ratings that count</dt><dd id="stat-ratings">0<', page)
    assert re.search(r'Game ratings excluded</dt><dd id="stat-excluded">21<', page)
    listed = re.sub(r"\s+", " ", re.search(r'<ul class="excluded-list" id="excluded-list">(.*?)</ul>', page, re.S)[1])
    assert (
        "<strong>20 ratings</strong> from a qualification window that failed: your first 20 game ratings after "
        "entering the game scored fewer than the 25 points needed" in listed
    )
    assert "<strong>1 rating</strong> excluded: a duplicate account." in listed
    assert Rating.objects.filter(rater=user, excluded=True).count() == 21


# --- Every page: lang, one <main>, labelled controls ------------------------------------------


def test_pages_have_lang_a_main_landmark_and_labelled_radios(client, tutorial):
    for url in (reverse("home"), reverse("annotators:signup"), reverse("login"), reverse("annotators:leaderboard")):
        page = Page(body(client.get(url)))
        assert (page.lang, page.mains) == ("en", 1), url

    client.force_login(rater(consent=False))
    assert Page(body(client.get(reverse("annotators:consent")))).mains == 1

    user = rater()
    client.force_login(user)
    rating_screen = Page(body(client.get(reverse("rate", args=["tutorial"]))))
    assert (rating_screen.lang, rating_screen.mains) == ("en", 1)
    assert sorted(rating_screen.radios) == [f"value-{v}" for v in range(1, 6)]
    assert set(rating_screen.radios) <= rating_screen.label_fors
    assert rating_screen.legends == 1
    # The image to rate is named; the guide's examples are described by their captions (alt="").
    assert all("alt" in img for img in rating_screen.images)
    assert [img["alt"] for img in rating_screen.images if img["alt"]] == ["Image to rate"]
    assert rating_screen.dialogs == ["guide"]
    assert rating_screen.live_regions >= 1  # the countdown's end is announced

    html = body(client.get(reverse("rate", args=["tutorial"])))
    assert SPEC_LEVEL_5 in html  # the Rating Guide has the rubric verbatim

    assignment_id, _ = rate(client, user, "tutorial", 5)
    feedback = Page(body(client.get(reverse("feedback", args=[assignment_id]))))
    assert (feedback.lang, feedback.mains, feedback.dialogs) == ("en", 1, ["guide"])
    assert feedback.live_regions >= 1

    for url in (reverse("annotators:intro"), reverse("annotators:me")):
        page = Page(body(client.get(url)))
        assert (page.lang, page.mains) == ("en", 1), url
