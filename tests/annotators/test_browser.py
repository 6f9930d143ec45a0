"""The rater's journey in real Chromium, keyboard only: sign up, consent, the whole tutorial with
1-5, Enter and N, the countdown holding the submit control, the Rating Guide on G and Escape,
and the game screen. Screenshots go to test-artifacts/ (git-ignored)."""

import re
import time

import pytest
from playwright.sync_api import expect

from ratinggame.models import Pool, Rating
from tests.browser import ARTIFACTS, photo_like_image, wait_until
from tests.factories import CaptionPairFactory, TutorialPairFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EXPERTS = [5, 4, 3, 2, 1, 3, 4, 2, 5, 1]
PASSWORD = "a long enough pass phrase 42"
MIN_SECONDS = 1.5


def keyboard_choice(expert: int, index: int) -> int:
    # Exact on even pairs (2 points), one step off on odd ones (1 point): 15 of 20, a pass.
    if index % 2 == 0:
        return expert
    return expert - 1 if expert > 1 else 2


def test_keyboard_only_tutorial_to_the_game(live_server, browser, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": MIN_SECONDS}
    pairs_create()
    ARTIFACTS.mkdir(exist_ok=True)

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(15_000)
    sign_up_and_consent(page, live_server.url)

    submit = page.locator("#submit-rating")
    for index, expert in enumerate(EXPERTS):
        value = tutorial_pair_rated(page, submit, settings, index, expert)
        tutorial_feedback_read(page, index, expert, value)
        page.keyboard.press("Enter" if index % 2 == 0 else "n")

    game_screen_checked(page)
    game_pair_rated(page, submit)

    assert Rating.objects.filter(stage="tutorial").count() == 10
    assert Rating.objects.filter(stage="game").count() == 1
    assert sorted(Rating.objects.filter(stage="tutorial").values_list("points", flat=True)) == [1] * 5 + [2] * 5


def pairs_create() -> None:
    """The ten tutorial pairs with the experts' ratings (EXPERTS), and three game pairs to come after."""
    for index, expert in enumerate(EXPERTS):
        TutorialPairFactory(
            image=photo_like_image(index),
            caption=f"A red box stands on the grass under a yellow sun (tutorial pair {index + 1})",
            expert_rating=expert,
            display_order=index,
            explanation=f"The experts chose {expert}: the caption names the box and the sun, and says where they are.",
        )
    for index in range(3):
        CaptionPairFactory(
            pool=Pool.GAME,
            image=photo_like_image(20 + index),
            caption=f"A field with a shed on a sunny day ({index + 1})",
        )


def sign_up_and_consent(page, url: str) -> None:
    """From the home page to the tutorial: sign up (clicks and typing), then consent and the introduction
    with the keyboard alone."""
    page.goto(url + "/")
    page.get_by_role("link", name="Sign up and play").click()
    page.fill("#id_username", "keyboard_rater")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.get_by_role("button", name="Create my account").click()

    expect(page).to_have_url(re.compile(r"/play/consent/$"))
    page.focus("#id_agree")
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # "I agree, continue"
    expect(page).to_have_url(re.compile(r"/play/introduction/$"))
    page.focus("#continue")
    page.keyboard.press("Enter")  # "Start the tutorial"


def tutorial_pair_rated(page, submit, settings, index: int, expert: int) -> int:
    """Tutorial pair ``index`` rated with 1-5 and Enter; the value chosen. On the first pair, the
    countdown (Enter does nothing until it ends) and the Rating Guide on G and Escape too."""
    expect(page).to_have_url(re.compile(r"/play/tutorial/(\d+/)?$"))
    loaded = time.monotonic()
    page.wait_for_load_state()  # the page's scripts have run
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Tutorial {index + 1} of 10")
    value = keyboard_choice(expert, index)
    if index == 0:
        # The countdown holds the submit control, and Enter does nothing meanwhile.
        assert submit.is_disabled()
        page.keyboard.press(str(value))
        page.keyboard.press("Enter")
        assert re.search(r"/play/tutorial/(\d+/)?$", page.url)
        expect(page.locator("#countdown-status")).to_contain_text("Not yet")
        assert not Rating.objects.exists()
        page.screenshot(path=str(ARTIFACTS / "rating-screen.png"))

        page.keyboard.press("g")
        guide = page.locator("#guide")
        expect(guide).to_be_visible()
        expect(guide).to_contain_text("Interpretation of overall setting and/or event is included.")
        page.screenshot(path=str(ARTIFACTS / "rating-guide.png"))
        page.keyboard.press("Escape")
        expect(guide).to_be_hidden()
    else:
        page.keyboard.press(str(value))
    expect(page.locator(f"#value-{value}")).to_be_checked()
    expect(submit).to_be_enabled(timeout=MIN_SECONDS * 1000 + 5000)
    if index == 0:
        # Enabled by the countdown, not at once: most of the 1.5 s passed after load.
        assert time.monotonic() - loaded >= MIN_SECONDS - 0.5
        expect(page.locator("#countdown-status")).to_have_text("You can submit your rating now.")
        # The countdown is checked on this pair; the nine after it are served with a short one.
        settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0.3}
    page.keyboard.press("Enter")
    return value


def tutorial_feedback_read(page, index: int, expert: int, value: int) -> None:
    """The feedback on tutorial pair ``index``: the experts' choice and the points; the guide on the
    first, the tutorial's outcome on the last."""
    expect(page).to_have_url(re.compile(r"/play/feedback/\d+/$"))
    # In place on the rating page (the script), or the feedback page after a stage's end.
    feedback = page.locator("main")
    expect(feedback).to_contain_text(f"The experts chose {expert}")
    expect(page.locator(".fb-points dd")).to_have_text("+2" if value == expert else "+1")
    if index == 0:
        expect(page.locator("#feedback-announce")).to_contain_text(f"Expert rating {expert}")
        page.screenshot(path=str(ARTIFACTS / "feedback.png"))
        # The guide opens on feedback screens too.
        page.keyboard.press("G")
        expect(page.locator("#guide")).to_be_visible()
        page.keyboard.press("Escape")
        expect(page.locator("#guide")).to_be_hidden()
    if index == len(EXPERTS) - 1:
        expect(page.locator(".outcome")).to_contain_text("Tutorial passed")
        expect(page.locator(".outcome")).to_contain_text("You scored 15 of 20 points")
        page.screenshot(path=str(ARTIFACTS / "tutorial-passed.png"))


def game_screen_checked(page) -> None:
    """The game screen after the tutorial: the qualification window, and the image whole on a
    1280x800 screen with no page to scroll."""
    expect(page).to_have_url(re.compile(r"/play/game/(\d+/)?$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Rating game")
    expect(page.locator("#progress")).to_contain_text("Qualification: 0 of 20 ratings · 0 points so far, 25 needed")
    image = page.get_by_alt_text("Image to rate")
    expect(image).to_be_visible()
    # The image may still be arriving on a loaded machine: wait for it, then check its size.
    wait_until(page, "document.querySelector('.pair-image').complete")
    assert page.evaluate("document.querySelector('.pair-image').naturalWidth") == 640
    box = image.bounding_box()
    # The image takes the height the rest leaves: all of it on screen, no page to scroll.
    assert box["y"] + box["height"] <= 800
    assert page.evaluate("document.documentElement.scrollHeight") <= 800
    page.screenshot(path=str(ARTIFACTS / "game-screen.png"))


def game_pair_rated(page, submit) -> None:
    """One game rating: the first rater of a pair is told it scores 0 points."""
    page.keyboard.press("3")
    expect(submit).to_be_enabled(timeout=MIN_SECONDS * 1000 + 5000)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/play/feedback/\d+/$"))
    expect(page.locator(".feedback")).to_contain_text("You are the first to rate this pair: 0 points.")
    expect(page.locator("#window-progress")).to_have_text("Qualification: 1 of 20 ratings · 0 points so far, 25 needed")
    page.screenshot(path=str(ARTIFACTS / "game-feedback.png"))
