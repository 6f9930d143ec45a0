"""Control pairs cannot be told apart from game pairs before rating, and every rater has an order
of their own (SPEC 2.5 and 5), through the API and the pages as a rater meets them."""

import io
import itertools
import re

import pytest
from django.core.management import call_command

from annotators.models import RaterState
from ratinggame.models import Assignment, CaptionPair
from tests.factories import ControlPairFactory
from tests.ratinggame.api_helpers import token_client
from tests.ratinggame.journey_helpers import Clock, game_pairs, rate_next, rater

pytestmark = pytest.mark.django_db

IMAGE_URL = re.compile(r"^/media/images/[0-9a-f]{2}/[0-9a-f]{64}\.(png|jpg|jpeg|webp)$")


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0.0, "CONTROL_EVERY": 2}


def one_of_each(client) -> dict[str, dict]:
    """Serve pairs through the API until one control and one game pair came; their answers by pool."""
    answers: dict[str, dict] = {}
    served = client.post("/api/game/next", format="json").json()
    while not {"control", "game"} <= answers.keys():
        pool = str(Assignment.objects.get(pk=served["assignment_id"]).pair.pool)
        answers.setdefault(pool, served)
        submitted = client.post(
            "/api/game/submit", {"assignment_id": served["assignment_id"], "value": 3, "next": True}, format="json"
        ).json()
        answers.setdefault(f"{pool} feedback", submitted)
        served = submitted["next"]
    return answers


def shape(value):
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    return type(value).__name__


def test_the_api_answers_a_control_and_a_game_pair_with_the_same_fields_types_and_timing():
    game_pairs(6, primes=[3.0, 3.0])
    ControlPairFactory(expert_rating=4)
    ControlPairFactory(expert_rating=2)
    answers = one_of_each(token_client(rater(RaterState.GAME, window_count=20, window_points=40)))
    control, pair = answers["control"], answers["game"]
    assert shape(control) == shape(pair)
    assert control["stage"] == pair["stage"] == "game"
    assert (control["position"], control["total"]) == (pair["position"], pair["total"]) == (None, None)
    for answer in (control, pair):
        assert IMAGE_URL.match(answer["image_url"]), answer["image_url"]
    # The same floor and expiry after the serve.
    from django.utils.dateparse import parse_datetime

    def delays(answer):
        served = parse_datetime(answer["served_at"])
        return parse_datetime(answer["min_submit_at"]) - served, parse_datetime(answer["expires_at"]) - served

    assert delays(control) == delays(pair)
    # Their feedback too: the same fields, the stage "game", the expert rating as the consensus.
    assert shape(answers["control feedback"]) == shape(answers["game feedback"])
    assert answers["control feedback"]["stage"] == "game"


def normalised(html: str, served) -> str:
    """The rating page with what differs between any two pairs blanked: the caption, image
    addresses and sizes, ids, times and the form's token."""
    html = html.replace(served.caption, "CAPTION")
    html = re.sub(r"/media/images/[^\s\"',]+", "IMAGE", html)
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "TOKEN", html)
    return re.sub(r"\d+", "N", html)


def test_the_rating_page_of_a_control_differs_from_a_game_pair_s_only_in_image_caption_and_ids(client):
    game_pairs(6, primes=[3.0, 3.0])
    ControlPairFactory(expert_rating=4)
    ControlPairFactory(expert_rating=2)
    user = rater(RaterState.GAME, window_count=20, window_points=40)
    client.force_login(user)
    pages: dict[str, str] = {}
    while len(pages) < 2:
        page = client.get("/play/game/")
        served = page.context["served"]
        pool = str(CaptionPair.objects.get(pk=served.pair_id).pool)
        pages.setdefault(pool, normalised(page.content.decode(), served))
        client.post("/play/game/", {"assignment": served.assignment_id, "value": "3"})
    assert pages["control"] == pages["game"]


def test_two_fresh_raters_meet_the_demo_in_orders_of_their_own_never_one_image_twice_in_a_row(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 10, "DEMO_MODE": False}
    call_command("load_demo", stdout=io.StringIO())
    images = dict(CaptionPair.objects.values_list("id", "image_id"))
    orders = []
    for _ in range(2):
        user, clock = rater(RaterState.GAME, window_count=20, window_points=40), Clock()
        order = [rate_next(user, 3, clock)[0].pair_id for _ in range(30)]
        assert len(set(order)) == 30
        # Never two captions of one image in a row: the demo always has pairs of other images open.
        assert all(images[a] != images[b] for a, b in itertools.pairwise(order)), order
        orders.append(order)
    assert orders[0] != orders[1]
    # Not the import order either.
    assert orders[0] != sorted(orders[0])


def test_a_rater_is_sent_no_pair_id_before_or_after_rating():
    # The demo's game pairs had ids 71-132 and its controls 133-157: any control pool imported as a
    # batch of its own has such a range, and a control met again repeats its id.
    game_pairs(6, primes=[3.0, 3.0])
    ControlPairFactory(expert_rating=4)
    client = token_client(rater(RaterState.GAME, window_count=20, window_points=40))
    answers = one_of_each(client)
    for answer in answers.values():
        assert "pair_id" not in answer and "pair_id" not in (answer.get("next") or {}), answer
    served_control = answers["control"]
    stored = client.get(f"/api/game/feedback/{served_control['assignment_id']}").json()
    assert "pair_id" not in stored


def _messages(response) -> list[str]:
    return [str(message) for message in response.context["messages"]] if response.context else []


def test_a_control_and_a_game_pair_read_the_same_after_rating_and_when_reported_or_skipped(client):
    """The feedback page, and the answers of "Report a problem and skip" and "Skip this pair", with
    what differs between any two pairs blanked (caption, image, figures): the same words."""
    game_pairs(12, primes=[4.0, 4.0])
    for _ in range(4):
        ControlPairFactory(expert_rating=4)
    client.force_login(rater(RaterState.GAME, game_serves=100, window_count=20, window_points=40))
    seen: dict[tuple[str, str], str] = {}
    actions = ("rate", "report", "skip")
    for step in itertools.count():
        assert step < 60, f"only {sorted(seen)}"
        page = client.get("/play/game/")
        served = page.context["served"]
        pool = str(CaptionPair.objects.get(pk=served.pair_id).pool)
        action = next((a for a in actions if (pool, a) not in seen), "rate")
        if action == "rate":
            answer = client.post("/play/game/", {"assignment": served.assignment_id, "value": "4"}, follow=True)
            text = normalised(answer.content.decode(), served)
        elif action == "report":
            answer = client.post(
                "/play/report/",
                {"assignment": served.assignment_id, "reason": "other", "text": "odd"},
                follow=True,
            )
            text = re.sub(r"\d+", "N", " ".join(_messages(answer)))
        else:
            answer = client.post("/play/skip/", {"assignment": served.assignment_id}, follow=True)
            text = re.sub(r"\d+", "N", " ".join(_messages(answer)))
        seen.setdefault((pool, action), text)
        if len(seen) == 2 * len(actions):
            break
    for action in actions:
        assert seen[("control", action)] == seen[("game", action)], action
    assert "You matched the consensus." in seen[("control", "rate")]  # the feedback page, in the game's words
    assert "reported and skipped" in seen[("control", "report")]
    assert seen[("control", "skip")].startswith("Skipped: no rating, no points.")
