"""Small layout slips a user met on the site's plain pages, in real Chromium at a laptop's size
and a phone's: errors in view, buttons lined up with their fields, no key hints on a touch screen,
feedback cards that never break their words, and the home page's pictures."""

import pytest

from annotators.models import RaterState
from ratinggame import game
from tests.browser import ARTIFACTS, SIZES, inside_viewport, photo_like_image, signed_in
from tests.factories import CaptionPairFactory, TutorialPairFactory
from tests.ratinggame.journey_helpers import rater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# True when every line box of the element's text shares one horizontal band: one line, however
# many inline elements (a figure and a smaller "of 20") it holds.
ONE_LINE = """(element) => {
  const range = document.createRange();
  range.selectNodeContents(element);
  const rects = [...range.getClientRects()].filter((r) => r.width > 0);
  return Math.max(...rects.map((r) => r.top)) < Math.min(...rects.map((r) => r.bottom));
}"""


@pytest.fixture(autouse=True)
def _setup(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    ARTIFACTS.mkdir(exist_ok=True)


def left_edges(page, *selectors: str) -> list[float]:
    return [round(page.locator(selector).first.bounding_box()["x"]) for selector in selectors]


def test_sign_up_errors_are_in_view_at_1280x720(live_server, browser):
    page = browser.new_context(**SIZES["1280x720"]).new_page()
    page.goto(live_server.url + "/accounts/signup/")
    page.fill("#id_username", "newcomer")
    page.fill("#id_password1", "a long enough pass phrase 42")
    page.fill("#id_password2", "another pass phrase 43")
    page.get_by_role("button", name="Create my account").click()
    page.wait_for_selector("#form-errors")
    page.screenshot(path=str(ARTIFACTS / "signup-errors-1280x720.png"))
    assert inside_viewport(page, "#form-errors") == []
    assert "The two password fields didn" in page.inner_text("#form-errors")


@pytest.mark.parametrize("size", ["1280x720", "390x844"])
def test_log_in_and_delete_buttons_line_up_with_their_fields(live_server, browser, size):
    user = rater(RaterState.GAME)
    page = browser.new_context(**SIZES[size]).new_page()
    page.goto(live_server.url + "/accounts/login/")
    assert len(set(left_edges(page, "#id_username", "form.form button[type=submit]"))) == 1
    page = signed_in(browser, live_server, user, **SIZES[size])
    page.goto(live_server.url + "/me/delete/")
    assert len(set(left_edges(page, "#id_confirm", "form.form button[type=submit]"))) == 1


@pytest.mark.parametrize(("size", "shown"), [("1280x720", True), ("390x844", False)])
def test_key_hints_on_the_introduction_only_where_there_is_a_keyboard(live_server, browser, size, shown):
    TutorialPairFactory(image=photo_like_image(1))
    user = rater(RaterState.TUTORIAL)
    page = signed_in(browser, live_server, user, **SIZES[size])
    page.goto(live_server.url + "/play/introduction/")
    assert page.locator("#key-hints").count() == 1  # in the page, and shown where there are keys
    assert page.locator("#key-hints").is_visible() is shown


@pytest.mark.parametrize("size", ["1280x720", "390x844"])
def test_feedback_cards_keep_each_label_and_figure_on_one_line(live_server, browser, size):
    TutorialPairFactory(image=photo_like_image(2), expert_rating=4)
    user = rater(RaterState.TUTORIAL)
    served = game.pair_serve(rater=user)
    game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3)
    page = signed_in(browser, live_server, user, **SIZES[size])
    page.goto(f"{live_server.url}/play/feedback/{served.assignment_id}/")
    page.screenshot(path=str(ARTIFACTS / f"feedback-cards-{size}.png"))
    texts = page.locator(".fb-item dt, .fb-item dd")
    assert texts.count() == 8
    broken = [texts.nth(i).inner_text() for i in range(texts.count()) if not texts.nth(i).evaluate(ONE_LINE)]
    assert broken == []


def test_the_home_page_on_a_phone_shows_its_pictures_4_by_3(live_server, browser):
    for index in range(3):
        CaptionPairFactory(image=photo_like_image(30 + index, size=(512, 512)), caption=f"a square picture {index}")
    page = browser.new_context(**SIZES["390x844"]).new_page()
    page.goto(live_server.url + "/")
    boxes = [image.bounding_box() for image in page.locator(".gallery img").all()]
    assert len(boxes) == 3
    # A full-width column: a 4:3 window onto each picture, not a 10-rem strip across a portrait.
    assert all(box["height"] / box["width"] == pytest.approx(0.75, abs=0.01) for box in boxes)
    assert page.locator(".gallery img").first.evaluate("(img) => getComputedStyle(img).objectPosition") == "50% 30%"
