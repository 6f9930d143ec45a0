"""The documentation's pictures, taken from the demo in real Chromium: the rating screen and its
feedback at a laptop's and a phone's size, the staff dashboard, the research pages. Each page is
checked as it is taken (it answers, it fits the screen's width); ``make screenshots`` sets
``RATINGGAME_DOCS_SCREENSHOTS=docs/img`` to refresh the pictures the docs show, otherwise they go to
``test-artifacts/docs/``, so a change that breaks a screen fails here before the docs go stale."""

import io
import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from annotators.models import RaterState
from annotators.roles import ADMIN, RESEARCHER
from tests.browser import ARTIFACTS, SIZES, chromium, signed_in, wait_until
from tests.factories import user_with_role
from tests.ratinggame.journey_helpers import rater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# (file name, who, path, size): what the docs show.
PICTURES = [
    ("rating-1280x720.png", "player", "/play/game/", "1280x720"),
    ("rating-390x844.png", "player", "/play/game/", "390x844"),
    ("staff-1280x720.png", "staff", "/staff/", "1280x720"),
    ("research-1280x720.png", "researcher", "/research/", "1280x720"),
    ("pay-1280x720.png", "researcher", "/research/pay/", "1280x720"),
]


@pytest.fixture
def demo(settings, monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    settings.RATINGGAME = {**settings.RATINGGAME, "DEMO_MODE": True, "MIN_SECONDS_PER_RATING": 0.5}
    call_command("load_demo", stdout=io.StringIO())
    return {
        "player": rater(RaterState.GAME, window_count=20, window_points=40, display_name="Ada"),
        "staff": user_with_role(ADMIN, is_staff=True),
        "researcher": user_with_role(RESEARCHER),
    }


def test_the_documentations_pictures(live_server, chromium_path, demo):
    folder = Path(os.environ.get("RATINGGAME_DOCS_SCREENSHOTS") or ARTIFACTS / "docs")
    folder.mkdir(parents=True, exist_ok=True)
    with chromium(chromium_path) as browser:
        for name, who, path, size in PICTURES:
            page = signed_in(browser, live_server, demo[who], **SIZES[size])
            answer = page.goto(live_server.url + path)
            assert answer.status == 200, (name, answer.status)
            if page.locator("#pair-image").count():
                wait_until(page, "document.getElementById('pair-image').complete")
            width = SIZES[size]["viewport"]["width"]
            assert page.evaluate("document.documentElement.scrollWidth") <= width, name
            page.screenshot(path=str(folder / name), scale="css")
            if name == "rating-390x844.png":  # and its feedback, as the rater sees it in place
                page.locator("label[for=value-4]").tap()
                page.locator("#submit-rating:enabled").tap()
                page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))
                page.locator(".actions.next #continue").wait_for()
                page.screenshot(path=str(folder / "feedback-390x844.png"), scale="css")
            page.context.close()
