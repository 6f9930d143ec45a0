"""The rating in one request (issue 22): the rating page's ``POST /play/submit/`` and the API's
hot path (``ratinggame.api.submit_fast``), against what the pages and DRF answered before."""

import json
import re

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from annotators.models import RaterState
from ratinggame import game
from ratinggame.api import submit_fast
from ratinggame.api.game import SubmitAnswerSerializer, SubmittedSerializer
from ratinggame.models import Assignment, Rating
from tests.ratinggame.api_helpers import token_client
from tests.ratinggame.journey_helpers import game_pairs, rater, tutorial_pairs

pytestmark = pytest.mark.django_db


@pytest.fixture
def quick(settings):
    cache.clear()
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": 0}


def browser_of(user) -> tuple[Client, str, int]:
    """A signed-in browser on its rating page: the client, its CSRF token, the pair open."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    page = browser.get("/play/", follow=True)
    return browser, browser.cookies["csrftoken"].value, page.context["served"].assignment_id


def test_a_game_rating_answers_its_feedback_and_the_next_pair_served_with_it(quick):
    game_pairs(4, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, window_count=20, window_points=40)
    browser, token, assignment = browser_of(user)
    answer = browser.post("/play/submit/", {"assignment": assignment, "value": 4}, headers={"X-CSRFToken": token})
    assert answer.status_code == 200
    body = answer.json()
    stored = Rating.objects.get(assignment_id=assignment)
    assert (stored.value, stored.points) == (4, 0)  # one level off the primes' consensus 3: 0 points
    assert body["feedback"]["url"] == f"/play/feedback/{assignment}/"
    html = body["feedback"]["html"]
    assert "Your rating" in html and "Consensus rating" in html and 'id="continue"' in html
    assert "Dispute this score" in html  # 0 points: a dispute may be filed, as on the feedback page
    assert (
        body["feedback"]["announce"]
        == f"You rated 4. Consensus 3. 0 points. Game score {stored.feedback['stage_total']}, level 1."
    )
    # The next pair was served by the same request, and its floor counts from that serve.
    following = Assignment.objects.get(pk=body["next"]["assignment_id"])
    assert following.rater_id == user.pk and following.submitted_at is None
    assert following.served_at == stored.submitted_at
    assert body["next"]["url"] == f"/play/game/{following.pk}/"
    assert body["next"]["caption"] == following.pair.caption
    # Its URL shows that pair; the rated pair's URL gives way to it.
    assert browser.get(body["next"]["url"]).context["served"].assignment_id == following.pk
    assert browser.get(f"/play/game/{assignment}/").url == f"/play/game/{following.pk}/"


def test_the_in_place_dispute_form_is_the_feedback_page_s(quick):
    """The panel's dispute form is rendered once per process (ratinggame.play): the same HTML as
    the feedback page's form for that rating, but for the CSRF token, which the page's script
    adds from the page (the answer masks none and sends no CSRF cookie)."""
    game_pairs(3, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, window_count=20, window_points=40)
    browser, token, assignment = browser_of(user)
    forms = []
    for _ in range(2):  # the second rating's panel reuses the rendering
        body = browser.post("/play/submit/", {"assignment": assignment, "value": 4}, headers={"X-CSRFToken": token})
        assert "csrfmiddlewaretoken" not in body.json()["feedback"]["html"] and "csrftoken" not in body.cookies
        page = browser.get(body.json()["feedback"]["url"]).content.decode()
        forms.append((_dispute_form_of(body.json()["feedback"]["html"]), _dispute_form_of(page)))
        assignment = body.json()["next"]["assignment_id"]
    for in_place, on_the_page in forms:
        assert 'name="comment"' in in_place and in_place == on_the_page


def test_the_in_place_feedback_is_the_feedback_page_s_panel(quick):
    """One fragment renders both (``ratinggame.fragments``): the in-place feedback is the feedback
    page's panel under a title of its own, but for the CSRF token, which the page's script adds."""
    game_pairs(3, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, window_count=5, window_points=8)  # the window open: its progress shown
    browser, token, assignment = browser_of(user)
    answer = browser.post("/play/submit/", {"assignment": assignment, "value": 4}, headers={"X-CSRFToken": token})
    in_place = re.sub(r'^\s*<h2 id="feedback-panel-title".*?</h2>', "", answer.json()["feedback"]["html"], flags=re.S)
    page = browser.get(answer.json()["feedback"]["url"]).content.decode()
    on_the_page = re.search(r'<div class="feedback-main">(.*?)</div>\s*</section>', page, re.S).group(1)
    assert "Qualification: 6 of 20 ratings" in in_place and "Dispute this score" in in_place
    assert _without_token(in_place).strip() == _without_token(on_the_page).strip()


def test_the_fragments_escape_what_they_show(quick):
    first, _ = tutorial_pairs([3, 3])
    first.explanation = '<script>alert("x")</script> & more'
    first.save(update_fields=["explanation"])
    browser, token, assignment = browser_of(rater(RaterState.TUTORIAL))
    answer = browser.post("/play/submit/", {"assignment": assignment, "value": 3}, headers={"X-CSRFToken": token})
    in_place = answer.json()["feedback"]["html"]
    page = browser.get(answer.json()["feedback"]["url"]).content.decode()
    for html in (in_place, page):
        assert "<script>alert" not in html and "&lt;script&gt;alert(" in html and "&amp; more" in html


def _without_token(html: str) -> str:
    return re.sub(r'<input type="hidden" name="csrfmiddlewaretoken" value="[^"]+">', "", html)


def _dispute_form_of(html: str) -> str:
    found = re.search(r'<details class="dispute".*?</details>', html, re.S)
    assert found, "no dispute form"
    return _without_token(found.group(0))


def test_a_refusal_changes_nothing_and_says_why(quick, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 30}
    game_pairs(2, primes=[3.0, 3.0])
    browser, token, assignment = browser_of(rater(RaterState.GAME))
    too_early = browser.post("/play/submit/", {"assignment": assignment, "value": 4}, headers={"X-CSRFToken": token})
    assert too_early.status_code == 400
    assert too_early.json()["code"] == "too_early" and "page" not in too_early.json()  # the pair stays open
    no_value = browser.post("/play/submit/", {"assignment": assignment}, headers={"X-CSRFToken": token})
    assert (no_value.status_code, no_value.json()["code"]) == (400, "invalid_value")
    no_csrf = browser.post("/play/submit/", {"assignment": assignment, "value": 4})
    assert no_csrf.status_code == 403
    assert not Rating.objects.exists()


def test_a_session_signed_out_by_a_password_change_rates_nothing(quick):
    game_pairs(2, primes=[3.0, 3.0])
    user = rater(RaterState.GAME)
    browser, token, assignment = browser_of(user)
    user.set_password("a new password 123")
    user.save()
    answer = browser.post("/play/submit/", {"assignment": assignment, "value": 4}, headers={"X-CSRFToken": token})
    assert answer.status_code == 401
    assert answer.json()["code"] == "not_signed_in" and answer.json()["page"].startswith("/accounts/login/")
    assert not Rating.objects.exists()


def test_the_end_of_a_stage_is_a_page_to_open(quick):
    tutorial_pairs([3])
    game_pairs(2, primes=[3.0, 3.0])
    browser, token, assignment = browser_of(rater(RaterState.TUTORIAL))
    answer = browser.post("/play/submit/", {"assignment": assignment, "value": 3}, headers={"X-CSRFToken": token})
    assert answer.json() == {"page": f"/play/feedback/{assignment}/"}
    assert "Tutorial passed" in browser.get(answer.json()["page"]).content.decode()


def _as_json(data) -> dict:
    return json.loads(json.dumps(data))


@pytest.mark.parametrize("serve_next", [True, False])
def test_the_hot_path_answers_what_the_serializers_answer(quick, serve_next):
    tutorial_pairs([3, 4])
    user = rater(RaterState.TUTORIAL)
    served = game.pair_serve(rater=user)
    feedback = game.rating_submit(rater=user, assignment_id=served.assignment_id, value=2, serve_next=serve_next)
    serializer = SubmittedSerializer if serve_next else SubmitAnswerSerializer
    assert _as_json(submit_fast.feedback_answer(feedback, serve_next=serve_next)) == _as_json(serializer(feedback).data)


def test_the_api_answers_the_same_through_its_hot_path_and_through_drf(quick, monkeypatch):
    game_pairs(6, primes=[3.0, 4.0])
    user = rater(RaterState.GAME, window_count=20, window_points=40)
    api = token_client(user)
    served = api.post("/api/game/next", format="json").json()
    sent = {"assignment_id": served["assignment_id"], "value": 3, "next": True}
    fast = api.post("/api/game/submit", sent, format="json")
    assert fast.status_code == 200
    # The same rating sent again through DRF's handling: the stored rating's feedback, and the pair
    # open now (the one the hot path served), field for field.
    with monkeypatch.context() as patched:
        patched.setattr(submit_fast, "submit", lambda request, view: None)
        again = api.post("/api/game/submit", sent, format="json")
    assert again.status_code == 200 and again.json()["already_rated"] is True
    body = fast.json()
    assert body == {**again.json(), "already_rated": False}
    # Refusals keep their codes; an unknown token is DRF's 401; a browser session needs CSRF.
    assert api.post("/api/game/submit", {"assignment_id": 10**9, "value": 3}, format="json").json()["error"][
        "code"
    ] == ("not_found")
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Token nope")
    assert stranger.post("/api/game/submit", {"assignment_id": 1, "value": 3}, format="json").status_code == 401
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    next_id = body["next"]["assignment_id"]
    refused = browser.post("/api/game/submit", {"assignment_id": next_id, "value": 3}, format="json")
    assert refused.status_code == 403
    assert not Rating.objects.filter(assignment_id=next_id).exists()


def test_the_title_beside_the_in_place_feedback_names_the_pair_rated_with_its_points_counted(quick):
    """The tutorial's title beside the feedback: the pair just rated, the points after it (as
    the panel's total), and Next's title the pair after it."""
    tutorial_pairs([3, 3, 3])
    browser, token, assignment = browser_of(rater(RaterState.TUTORIAL))
    before = browser.get(f"/play/tutorial/{assignment}/").content.decode()
    assert "Tutorial 1 of 3" in before and "0 of 6 points" in before
    body = browser.post("/play/submit/", {"assignment": assignment, "value": 3}, headers={"X-CSRFToken": token}).json()
    beside, following = body["feedback"]["title_html"], body["next"]["title_html"]
    assert "Tutorial 1 of 3" in beside and "2 of 6 points" in beside  # was 0 of 6 until Next
    assert "Tutorial 2 of 3" in following and "2 of 6 points" in following
    assert '<dd class="fb-big">2 <span class="of">of 6</span>' in body["feedback"]["html"]  # the panel's total


# --- The hot path's refusals: DRF's, case for case -------------------------------------------------

UNKNOWN = 10**9  # an assignment no one has: a request that gets past every check is refused not_found


class Clock:
    """The throttles' clock, moved on 0.4 s before each request: a throttled request then waits a
    fraction of a second more or less than a whole number (DRF rounds it up)."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _answers(requests, *, through_drf: bool, monkeypatch) -> list:
    """Each request's status, JSON body and Retry-After, on a fresh throttle history and clock."""
    from rest_framework.throttling import SimpleRateThrottle

    cache.clear()
    answered = []
    clock = Clock()
    with monkeypatch.context() as patched:
        patched.setattr(SimpleRateThrottle, "timer", clock)
        if through_drf:
            patched.setattr(submit_fast, "submit", lambda request, view: None)
        for send in requests:
            clock.now += 0.4
            response = send()
            # The body as JSON text with one spacing: 60 and 60.0 stay apart.
            body = json.dumps(json.loads(response.content), sort_keys=True)
            answered.append((response.status_code, body, response.get("Retry-After")))
    return answered


def _session_client(user, *, secure: bool = False) -> tuple[APIClient, str]:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/play/", follow=True, secure=secure)  # sets the CSRF cookie
    return client, client.cookies["csrftoken"].value


@pytest.mark.parametrize("rate", ["2/min", "2/s"])
def test_the_hot_path_throttles_as_drf_does(quick, monkeypatch, rate):
    """The third rating within the rate is refused with DRF's answer: its message (a whole number
    of seconds, "1 second" in the singular), ``retry_after_seconds`` and Retry-After."""
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, "user": rate})
    api = token_client(rater(RaterState.GAME))
    requests = [lambda: api.post("/api/game/submit", {"assignment_id": UNKNOWN, "value": 3}, format="json")] * 3
    fast = _answers(requests, through_drf=False, monkeypatch=monkeypatch)
    assert [status for status, *_ in fast] == [404, 404, 429]
    assert fast == _answers(requests, through_drf=True, monkeypatch=monkeypatch)


def _post(client, **extra):
    return lambda: client.post("/api/game/submit", {"assignment_id": UNKNOWN, "value": 3}, format="json", **extra)


def test_the_hot_path_signs_in_and_checks_csrf_as_drf_does(quick, monkeypatch):
    """Every way a rating request can be signed in, or not: the answer of the hot path is DRF's."""
    from rest_framework.authtoken.models import Token

    from tests.ratinggame.api_helpers import role_user

    user = rater(RaterState.GAME)
    inactive = rater(RaterState.GAME)
    no_role = role_user(None)
    for account in (inactive, no_role):
        Token.objects.create(user=account)
    inactive.is_active = False
    inactive.save()
    browser, csrf = _session_client(user)
    https, https_csrf = _session_client(user, secure=True)
    tokens = {"good": token_client(user), "inactive": token_client(inactive), "no role": token_client(no_role)}
    for name, header in {
        "unknown": "Token nope",
        "no key": "Token",
        "bearer": "Bearer x",
        "two keys": "Token a b",
    }.items():
        tokens[name] = APIClient()
        tokens[name].credentials(HTTP_AUTHORIZATION=header)
    cases = {
        **{f"token: {name}": _post(client) for name, client in tokens.items()},
        "no credentials": _post(APIClient()),
        "session: no CSRF token": _post(browser),
        "session: a wrong CSRF token": _post(browser, headers={"X-CSRFToken": "x" * 32}),
        "session: its CSRF token": _post(browser, headers={"X-CSRFToken": csrf}),
        "https session: no Referer": _post(https, secure=True, headers={"X-CSRFToken": https_csrf}),
        "https session: another site's Referer": _post(
            https, secure=True, headers={"X-CSRFToken": https_csrf, "Referer": "https://elsewhere.example/"}
        ),
        "https session: its own Referer": _post(
            https, secure=True, headers={"X-CSRFToken": https_csrf, "Referer": "https://testserver/play/"}
        ),
        "https session: another Origin": _post(
            https, secure=True, headers={"X-CSRFToken": https_csrf, "Origin": "https://elsewhere.example"}
        ),
    }
    fast = dict(zip(cases, _answers(cases.values(), through_drf=False, monkeypatch=monkeypatch), strict=True))
    drf = dict(zip(cases, _answers(cases.values(), through_drf=True, monkeypatch=monkeypatch), strict=True))
    assert fast == drf
    # The cases do differ: the rater's own requests reach the game, the others are refused before it.
    statuses = {name: status for name, (status, *_) in fast.items()}
    assert statuses["token: good"] == statuses["session: its CSRF token"] == 404
    assert statuses["https session: its own Referer"] == 404
    assert statuses["session: no CSRF token"] == statuses["https session: no Referer"] == 403
    assert statuses["token: unknown"] == 401
    assert not Rating.objects.exists()
