"""The rater's loop in real Chromium, at a laptop's 1280x720 and a phone's 390x844, where a browser
could otherwise set traps: a page that comes back (Back from the feedback, a reload, the
back-forward cache) with a choice the rater made for another pair. Screenshots go to
test-artifacts/."""

import contextlib
import re

import pytest

from annotators.models import RaterState
from ratinggame.models import PairReport, Pool, Rating
from tests.browser import ARTIFACTS, SIZES, inside_viewport, launch, photo_like_image, signed_in, wait_until
from tests.factories import CaptionPairFactory, TutorialPairFactory
from tests.ratinggame.journey_helpers import rater
from tests.test_accessibility import blocking_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHECKED = "[...document.querySelectorAll('input[name=value]')].filter(radio => radio.checked).map(radio => radio.value)"
# Set by the page that Chromium brings back from its back-forward cache (event.persisted).
RECORD_RESTORE = (
    "window.addEventListener('pageshow', event => { if (event.persisted) sessionStorage.setItem('restored', '1'); });"
)


@pytest.fixture
def fast(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0.3}
    ARTIFACTS.mkdir(exist_ok=True)


class Rater:
    """A rater's hands at one screen size: keys on a laptop, taps on a phone."""

    def __init__(self, page, size: str) -> None:
        self.page = page
        self.phone = size == "390x844"
        self.posts: list[str] = []
        page.on("request", lambda request: request.method == "POST" and self.posts.append(request.url))

    def choose(self, value: int) -> None:
        if self.phone:
            self.page.locator(f"label[for=value-{value}]").tap()
        else:
            self.page.keyboard.press(str(value))

    def press_submit(self) -> None:
        """Submit as soon as the countdown allows, whatever is (or is not) chosen."""
        submit = self.page.locator("#submit-rating:enabled")
        submit.tap() if self.phone else submit.click()

    def rate(self, value: int) -> None:
        self.last_pair = self.page.url
        self.choose(value)
        self.press_submit()
        self.page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))

    def back(self) -> None:
        """Back from a rating's feedback (shown in place): the page asks the server for the URL it
        goes back to, the rated pair's, which gives way to the pair open now."""
        rated_pair = self.page.evaluate("history.state && history.state.screen") and self.last_pair
        self.page.go_back()
        self.page.wait_for_url(lambda url: url != rated_pair and "/feedback/" not in url)

    def on_screen(self) -> str:
        wait_until(self.page, "document.readyState === 'complete'")
        return self.page.inner_text("#caption").split("\n")[-1].strip()

    def checked(self) -> list[str]:
        return self.page.evaluate(CHECKED)

    def submit_sends_nothing(self) -> None:
        """Press Submit with nothing chosen: the form asks for a choice, nothing is posted."""
        before = len(self.posts)
        self.press_submit()
        self.page.wait_for_timeout(400)
        assert self.posts[before:] == []
        assert "/play/feedback/" not in self.page.url


def stored(stage: str) -> list[tuple[str, int]]:
    return list(Rating.objects.filter(stage=stage).order_by("id").values_list("pair__caption", "value"))


@pytest.mark.parametrize("size", SIZES)
def test_a_page_that_comes_back_never_sends_a_choice_the_rater_did_not_make(
    live_server, browser, chromium_path, fast, size
):
    for index in range(3):
        TutorialPairFactory(image=photo_like_image(index), caption=f"Tutorial pair {index + 1}", display_order=index)
    for index in range(2):
        CaptionPairFactory(image=photo_like_image(10 + index), caption=f"Game pair {index + 1}", primes=[3.0, 3.0])
    learner, player = rater(RaterState.TUTORIAL), rater(RaterState.GAME)

    # Back from the feedback: the next pair, with nothing chosen; Submit sends nothing.
    hands = Rater(signed_in(browser, live_server, learner, **SIZES[size]), size)
    page = hands.page
    page.goto(f"{live_server.url}/play/tutorial/")
    hands.rate(4)
    hands.back()
    assert hands.on_screen() == "Tutorial pair 2"
    assert hands.checked() == []
    page.screenshot(path=str(ARTIFACTS / f"back-after-rating-{size}.png"))
    hands.submit_sends_nothing()
    hands.rate(2)
    # A reload of a pair with a choice made: the pair comes back with nothing chosen.
    page.goto(f"{live_server.url}/play/tutorial/")
    assert hands.on_screen() == "Tutorial pair 3"
    hands.choose(5)
    page.reload()
    assert hands.on_screen() == "Tutorial pair 3"
    assert hands.checked() == []
    hands.submit_sends_nothing()
    page.context.close()

    # A second Chromium beside the module's, through the same driver, with the cache on.
    with contextlib.closing(launch(browser.browser_type, chromium_path, back_forward_cache=True)) as cached:
        # Back to the rating page with the back-forward cache on (from another page): the page
        # comes back from memory, as it was left, and asks the server what its URL holds now.
        hands = Rater(signed_in(cached, live_server, player, **SIZES[size]), size)
        page = hands.page
        page.add_init_script(RECORD_RESTORE)
        page.goto(f"{live_server.url}/play/game/")
        first = hands.on_screen()  # each rater has an order of their own
        hands.choose(3)
        page.goto(f"{live_server.url}/me/")
        page.go_back()
        wait_until(page, "sessionStorage.getItem('restored') === '1'")
        page.wait_for_selector("#rating-form")
        assert hands.on_screen() == first
        assert hands.checked() == []
        hands.submit_sends_nothing()
        hands.rate(3)
        page.goto(f"{live_server.url}/me/")
        page.go_back(wait_until="commit")
        # The rating page left on its feedback comes back as the server's feedback page.
        page.wait_for_selector("#continue")
        assert re.search(r"/play/feedback/\d+/$", page.url)
        page.locator("#continue").click()
        page.wait_for_selector("#rating-form")
        assert hands.on_screen() == ({"Game pair 1", "Game pair 2"} - {first}).pop()
        assert hands.checked() == []
        page.context.close()

    assert stored(Pool.TUTORIAL) == [("Tutorial pair 1", 4), ("Tutorial pair 2", 2)]
    assert stored(Pool.GAME) == [(first, 3)]


@pytest.mark.parametrize("size", SIZES)
def test_a_refused_report_comes_back_open_as_the_rater_left_it(live_server, browser, fast, size):
    CaptionPairFactory(image=photo_like_image(20), caption="A red box on green grass", primes=[3.0, 3.0])
    CaptionPairFactory(image=photo_like_image(21), caption="A yellow sun in a blue sky", primes=[3.0, 3.0])
    page = signed_in(browser, live_server, rater(RaterState.GAME), **SIZES[size])
    page.goto(f"{live_server.url}/play/game/")
    shown = page.inner_text("#caption").split("\n")[-1].strip()
    other = ({"A red box on green grass", "A yellow sun in a blue sky"} - {shown}).pop()
    page.locator("#report summary").click()
    page.select_option("#report-reason", "other")  # "something else" needs a few words
    page.get_by_role("button", name="Report and skip this pair").click()
    page.wait_for_selector("#report-error")
    assert page.locator("#report").evaluate("details => details.open")
    assert page.locator("#report-reason").input_value() == "other"
    assert page.locator("#report-error").is_visible()
    assert "Say in a few words" in page.inner_text("#report-error")
    assert page.evaluate("document.activeElement.id") == "report-text"  # where the words go
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size]["viewport"]["width"]
    page.screenshot(path=str(ARTIFACTS / f"report-refused-{size}.png"))
    assert not blocking_violations(page)
    page.fill("#report-text", "The caption is in Latin")
    page.get_by_role("button", name="Report and skip this pair").click()
    page.wait_for_selector(".messages")
    assert "reported and skipped" in page.inner_text(".messages")
    assert other in page.inner_text("#caption")
    assert PairReport.objects.get().text == "The caption is in Latin"


@pytest.mark.parametrize("size", SIZES)
def test_a_second_tab_is_told_that_its_rating_was_not_taken(live_server, browser, fast, size):
    CaptionPairFactory(image=photo_like_image(30), caption="A red box on green grass", primes=[4.0, 4.0])
    CaptionPairFactory(image=photo_like_image(31), caption="A yellow sun in a blue sky", primes=[4.0, 4.0])
    first = Rater(signed_in(browser, live_server, rater(RaterState.GAME), **SIZES[size]), size)
    second = Rater(first.page.context.new_page(), size)  # another tab of the same browser
    for tab in (first, second):
        tab.page.goto(f"{live_server.url}/play/game/")
    shown = first.on_screen()
    assert second.on_screen() == shown  # the rater's one open pair, in both tabs
    first.rate(4)
    second.rate(2)
    notice = second.page.locator("#not-taken")
    assert notice.is_visible()
    assert "your rating 2 was not taken. The rating stored is 4" in notice.inner_text()
    assert second.page.locator(".fb-points dd").inner_text() == "+2"  # the stored 4's points
    second.page.screenshot(path=str(ARTIFACTS / f"second-tab-not-taken-{size}.png"))
    assert not blocking_violations(second.page)
    assert first.page.locator("#not-taken").count() == 0
    assert stored(Pool.GAME) == [(shown, 4)]


# The element a click at the middle of the selected one would reach is that element (or inside it).
ON_TOP = """el => {
  const box = el.getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return el === hit || el.contains(hit);
}"""
IN_REACH = ["#caption", *[f"label[for=value-{value}]" for value in range(1, 6)], "#submit-rating"]


def test_the_rating_guide_leaves_the_choices_in_reach_and_has_an_example_per_level_from_the_first_pair(
    live_server, browser, fast
):
    for level in (1, 2, 3, 4, 5):
        CaptionPairFactory(
            pool=Pool.GUIDE,
            image=photo_like_image(40 + level),
            caption=f"Guide example at level {level}",
            expert_rating=level,
            explanation=f"The rubric's words for level {level}.",
        )
    TutorialPairFactory(image=photo_like_image(50), caption="The first tutorial pair", expert_rating=4)
    learner = rater(RaterState.TUTORIAL)
    page = signed_in(browser, live_server, learner, **SIZES["1280x720"])
    page.goto(f"{live_server.url}/play/tutorial/")
    wait_until(page, "document.getElementById('pair-image').complete")
    before = page.locator("#pair-image").bounding_box()
    page.keyboard.press("g")
    guide = page.locator("#guide")
    guide.wait_for()
    # An example per level, the guide's own, on the very first tutorial pair.
    examples = page.locator(".guide-example figcaption").all_inner_texts()
    assert [text.split("\n")[0] for text in examples] == [
        f"For example, rated {level} by the experts: “Guide example at level {level}”" for level in (5, 4, 3, 2, 1)
    ]
    assert [text.split("\n")[1] for text in examples] == [
        f"Why: The rubric's words for level {level}." for level in (5, 4, 3, 2, 1)
    ]
    # A side panel: the page narrows for it (the image shrinks), and the caption, every choice
    # and Submit stay in view, left of the panel, with nothing over them.
    panel = guide.bounding_box()
    image = page.locator("#pair-image").bounding_box()
    assert image["width"] < before["width"]
    for selector in IN_REACH:
        box = page.locator(selector).bounding_box()
        assert box["x"] + box["width"] <= panel["x"] and box["y"] + box["height"] <= 720, selector
        assert page.locator(selector).evaluate(ON_TOP), f"{selector} is covered"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert page.get_by_role("button", name="Rating Guide").get_attribute("aria-expanded") == "true"
    page.screenshot(path=str(ARTIFACTS / "guide-beside-the-choices-1280x720.png"))
    # Clicks and keys reach the choices with the guide open.
    page.locator("label[for=value-2]").click()
    assert page.evaluate(CHECKED) == ["2"] and guide.is_visible()
    # The button toggles the guide; focus goes back to it; G and Escape open and close it too.
    page.get_by_role("button", name="Rating Guide").click()
    guide.wait_for(state="hidden")
    assert page.evaluate("document.activeElement.dataset.guideOpen") == ""  # the guide's button
    assert page.locator("#pair-image").bounding_box()["width"] == before["width"]
    page.keyboard.press("g")
    guide.wait_for()
    page.keyboard.press("Escape")
    guide.wait_for(state="hidden")
    page.keyboard.press("g")
    guide.wait_for()
    page.keyboard.press("3")
    assert page.evaluate(CHECKED) == ["3"] and guide.is_visible()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))
    page.context.close()
    assert stored(Pool.TUTORIAL) == [("The first tutorial pair", 3)]


def test_on_a_phone_the_rating_guide_covers_the_page_and_its_close_button_stays_in_reach(live_server, browser, fast):
    for level in (1, 2, 3, 4, 5):
        CaptionPairFactory(pool=Pool.GUIDE, image=photo_like_image(60 + level), expert_rating=level, explanation="Why.")
    TutorialPairFactory(image=photo_like_image(70), caption="The first tutorial pair")
    page = signed_in(browser, live_server, rater(RaterState.TUTORIAL), **SIZES["390x844"])
    page.goto(f"{live_server.url}/play/tutorial/")
    page.get_by_role("button", name="Rating Guide").tap()
    guide = page.locator("#guide")
    guide.wait_for()
    assert page.locator(".guide-example").count() == 5
    assert page.evaluate("document.getElementById('guide').matches(':modal')")
    # Read to the end: Close is still at the top of the screen.
    guide.evaluate("dialog => { dialog.scrollTop = dialog.scrollHeight; }")
    close = guide.get_by_role("button", name="Close")
    assert not inside_viewport(page, "#guide .guide-top button")
    page.screenshot(path=str(ARTIFACTS / "guide-scrolled-390x844.png"))
    close.tap()
    guide.wait_for(state="hidden")
    assert page.evaluate("document.activeElement.dataset.guideOpen") == ""
    page.locator("label[for=value-4]").tap()
    assert page.evaluate(CHECKED) == ["4"]


@pytest.mark.parametrize("size", SIZES)
def test_the_feedback_in_place_and_the_title_above_it_give_the_same_game_score(live_server, browser, fast, size):
    """The title's score changed only with the next pair: beside the feedback in place it still gave
    the score before the rating ("Score 0" over a panel saying "Game score 2")."""
    for index in range(3):
        CaptionPairFactory(image=photo_like_image(20 + index), caption=f"Game pair {index + 1}", primes=[3.0, 3.0])
    player = rater(RaterState.GAME, window_count=20, window_points=40)  # qualified: feedback in place
    hands = Rater(signed_in(browser, live_server, player, **SIZES[size]), size)
    page = hands.page
    page.goto(f"{live_server.url}/play/game/")
    for _ in range(2):
        hands.rate(3)
        assert page.locator("#rating-form").count() == 1  # in place, not the feedback page
        score = page.locator(".fb-item", has_text="Game score").locator("dd").inner_text()
        player.rater.refresh_from_db()
        assert score == str(player.rater.game_score) != "0"
        assert page.locator("#progress").inner_text().startswith(f"Score {score}")
        page.screenshot(path=str(ARTIFACTS / f"feedback-in-place-title-{size}.png"))
        page.locator("#continue").click()
        page.wait_for_selector("#submit-rating")
        assert page.locator("#progress").inner_text().startswith(f"Score {score}")
    page.context.close()


@pytest.mark.parametrize("size", SIZES)
def test_in_the_tutorial_the_title_beside_the_feedback_counts_the_points_of_the_pair_rated(
    live_server, browser, fast, size
):
    """The tutorial's title kept "0 of 6 points" beside a panel saying "Total so far 2 of 6"."""
    for index in range(3):
        TutorialPairFactory(image=photo_like_image(40 + index), expert_rating=3, display_order=index)
    player = rater(RaterState.TUTORIAL)
    hands = Rater(signed_in(browser, live_server, player, **SIZES[size]), size)
    page = hands.page
    page.goto(f"{live_server.url}/play/tutorial/")
    hands.rate(3)
    assert page.locator("#rating-form").count() == 1  # in place, not the feedback page
    total = page.locator(".fb-item", has_text="Total so far").locator("dd").inner_text()
    assert total.split()[0] == "2"
    assert page.locator("#play-title h1").inner_text() == "Tutorial 1 of 3"
    assert page.locator("#progress").inner_text().startswith("2 of 6 points")
    page.locator("#continue").click()
    page.wait_for_selector("#submit-rating")
    assert page.locator("#play-title h1").inner_text() == "Tutorial 2 of 3"
    assert page.locator("#progress").inner_text().startswith("2 of 6 points")
    page.context.close()
