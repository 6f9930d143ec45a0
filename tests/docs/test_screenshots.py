"""The documentation's pictures, taken from the demo in real Chromium: each screen an annotator
meets (consent, the tutorial and its feedback, the game and its feedback, the Rating Guide, their
own page) at a laptop's and a phone's size, the staff dashboard and its Wright map, the research
pages. Each page is checked as it is taken (it answers, it fits the screen's width);
``make screenshots`` sets ``RATINGGAME_DOCS_SCREENSHOTS=docs/img`` to refresh the pictures the docs
show, otherwise they go to ``test-artifacts/docs/``, so a change that breaks a screen fails here
before the docs go stale. A picture the docs show that this test does not take fails too."""

import io
import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from annotators.competency.jobs import competency_refresh_request
from annotators.models import RaterState
from annotators.roles import ADMIN, RESEARCHER
from tests.browser import ARTIFACTS, SIZES, signed_in, wait_until
from tests.factories import RaterProfileFactory, user_with_role
from tests.ratinggame.journey_helpers import rater

DOCS = Path(__file__).resolve().parents[2] / "docs"
RATE_AND_SUBMIT = "rate"  # the picture is of the feedback after rating the pair shown (a 4)
GUIDE_OPEN = "guide"  # the picture is of the page with its Rating Guide open

# (file name, who, path, size, what to do before the picture, or a CSS selector of the part to take):
# what the docs show.
PICTURES = [
    ("consent-390x844.png", "newcomer", "/play/consent/", "390x844", None),
    ("tutorial-1280x720.png", "learner", "/play/tutorial/", "1280x720", None),
    ("tutorial-feedback-1280x720.png", "learner", "/play/tutorial/", "1280x720", RATE_AND_SUBMIT),
    ("rating-1280x720.png", "player", "/play/game/", "1280x720", None),
    ("rating-390x844.png", "player", "/play/game/", "390x844", None),
    ("guide-390x844.png", "player", "/play/game/", "390x844", GUIDE_OPEN),
    ("feedback-1280x720.png", "player", "/play/game/", "1280x720", RATE_AND_SUBMIT),
    ("feedback-390x844.png", "player", "/play/game/", "390x844", RATE_AND_SUBMIT),
    ("me-1280x720.png", "player", "/me/", "1280x720", None),
    ("staff-1280x720.png", "staff", "/staff/", "1280x720", None),
    ("wright-map-1280x720.png", "staff", "/staff/", "1280x720", "figure.wright-map"),
    ("research-1280x720.png", "researcher", "/research/", "1280x720", None),
    ("import-1280x720.png", "researcher", "/research/import/", "1280x720", None),
    ("pay-1280x720.png", "researcher", "/research/pay/", "1280x720", None),
]


@pytest.fixture
def demo(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "DEMO_MODE": True, "MIN_SECONDS_PER_RATING": 0.5}
    call_command("load_demo", stdout=io.StringIO())
    competency_refresh_request()  # the demo crowd's competency analysis, inline: the Wright map
    return {
        "newcomer": RaterProfileFactory(consent_at=None).user,
        "learner": rater(RaterState.TUTORIAL),
        "player": rater(RaterState.GAME, window_count=20, window_points=40, display_name="Ada"),
        "staff": user_with_role(ADMIN, is_staff=True),
        "researcher": user_with_role(RESEARCHER),
    }


def test_every_picture_the_docs_show_is_one_this_test_takes():
    shown = {
        name
        for page in DOCS.rglob("*.md")
        for name in re.findall(r"\(\s*(?:\.\./)*img/([\w.-]+\.png)", page.read_text())
    }
    taken = {name for name, *_ in PICTURES}
    assert shown - taken == set(), "pictures no test takes: add them to PICTURES"
    assert taken - shown == set(), "pictures taken that no page shows"
    assert all((DOCS / "img" / name).exists() for name in taken), "run make screenshots"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_documentations_pictures(live_server, browser, demo):
    folder = Path(os.environ.get("RATINGGAME_DOCS_SCREENSHOTS") or ARTIFACTS / "docs")
    folder.mkdir(parents=True, exist_ok=True)
    for name, who, path, size, then in PICTURES:
        page = signed_in(browser, live_server, demo[who], **SIZES[size])
        answer = page.goto(live_server.url + path)
        assert answer.status == 200, (name, answer.status)
        if page.locator("#pair-image").count():
            wait_until(page, "document.getElementById('pair-image').complete")
        width = SIZES[size]["viewport"]["width"]
        assert page.evaluate("document.documentElement.scrollWidth") <= width, name
        shot = page  # the whole screen, or the one part of it that ``then`` names
        if then == RATE_AND_SUBMIT:  # as the rater sees it: in place, or as the feedback page
            page.locator("label[for=value-4]").click()
            page.locator("#submit-rating:enabled").click()
            page.locator("#continue").wait_for()
        elif then == GUIDE_OPEN:
            page.keyboard.press("g")
            page.locator("dialog[open]").wait_for()
        elif then is not None:
            shot = page.locator(then)
        shot.screenshot(path=str(folder / name), scale="css")
        page.context.close()
