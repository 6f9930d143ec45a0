"""A Prolific participant in real Chromium (issue 20): the study link -> consent -> the tutorial ->
the game -> the session quota -> the completion page with the code and the way back to Prolific;
the same link in a fresh browser resumes the same rater; another id is another rater."""

import re

import pytest
from django.utils import timezone

from annotators.models import Participation, RaterAction, RaterProfile, RaterState
from ratinggame.models import Pool, Rating
from tests.browser import ARTIFACTS, SIZES, inside_viewport, photo_like_image, signed_in
from tests.factories import CaptionPairFactory, TutorialPairFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EXPERTS = [5, 4, 3, 2, 1, 3, 4, 2, 5, 1]
PID = "6123456789abcdef01234567"
LINK = f"/study/enter/?PROLIFIC_PID={PID}&STUDY_ID=study42&SESSION_ID=sessionA"
MIN_SECONDS = 0.3


def rate_on_screen(page, value: int) -> None:
    from playwright.sync_api import expect

    page.wait_for_load_state()
    page.keyboard.press(str(value))
    expect(page.locator("#submit-rating")).to_be_enabled(timeout=MIN_SECONDS * 1000 + 5000)
    page.keyboard.press("Enter")
    # The feedback shows in place, or (at a stage's end) as a page: wait_for_url waits for that
    # page's load, so its keys are bound before the next press (expect's URL match does not).
    page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))


def test_a_prolific_link_to_the_completion_code(live_server, browser, settings):
    from playwright.sync_api import expect

    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": MIN_SECONDS, "CONTROL_EVERY": 0}
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "QUOTA_RATINGS": 2, "COMPLETION_CODE": "CQ2DONE7"}
    for index, expert in enumerate(EXPERTS):
        TutorialPairFactory(image=photo_like_image(index), expert_rating=expert, display_order=index, explanation="why")
    for index in range(4):
        CaptionPairFactory(pool=Pool.GAME, image=photo_like_image(20 + index), primes=[3.0, 3.0])
    ARTIFACTS.mkdir(exist_ok=True)

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(15_000)
    page.goto(live_server.url + LINK)
    expect(page).to_have_url(re.compile(r"/play/consent/$"))
    page.check("#id_agree")
    page.get_by_role("button", name="I agree, continue").click()
    expect(page).to_have_url(re.compile(r"/play/introduction/$"))
    page.click("#continue")
    for expert in EXPERTS:
        expect(page).to_have_url(re.compile(r"/play/tutorial/(\d+/)?$"))
        rate_on_screen(page, expert)
        page.keyboard.press("n")
    for _ in range(2):
        expect(page).to_have_url(re.compile(r"/play/game/(\d+/)?$"))
        rate_on_screen(page, 3)
        page.keyboard.press("n")
    # The quota reached: the completion page, its code and the way back to Prolific.
    expect(page).to_have_url(re.compile(r"/study/complete/$"))
    expect(page.locator("#completion-code")).to_have_text("CQ2DONE7")
    back = page.locator("#return-link")
    expect(back).to_have_attribute("href", "https://app.prolific.com/submissions/complete?cc=CQ2DONE7")
    page.screenshot(path=str(ARTIFACTS / "study-complete.png"))
    # The automatic return is a meta refresh (no inline script under the CSP): it names the same address.
    refresh = page.locator('meta[http-equiv="refresh"]').get_attribute("content")
    assert refresh == "5; url=https://app.prolific.com/submissions/complete?cc=CQ2DONE7"

    # The same link in a fresh browser (another device): the same rater, at the completion page.
    other = browser.new_context().new_page()
    other.goto(live_server.url + LINK)
    other.goto(live_server.url + "/play/game/")
    expect(other).to_have_url(re.compile(r"/study/complete/$"))
    expect(other.locator("#completion-code")).to_have_text("CQ2DONE7")
    # Another participant id: another rater, who starts at consent.
    third = browser.new_context().new_page()
    third.goto(live_server.url + LINK.replace(PID, "7" * 24))
    expect(third).to_have_url(re.compile(r"/play/consent/$"))

    assert Participation.objects.count() == 2
    first = Participation.objects.get(external_id=PID)
    assert first.outcome == "completed"
    assert Rating.objects.filter(rater=first.profile.user, stage=Pool.GAME).count() == 2
    assert RaterAction.objects.filter(rater=first.profile, action="session_completed").count() == 1


@pytest.mark.parametrize("size", SIZES)
def test_a_participant_with_nothing_left_finishes_on_the_page_and_gets_the_code(
    live_server, browser, settings, client, size
):
    """Issue 36: a participant who met an empty pool had no code and no way out. "Finish my session"
    ends it; the completion page shows the code; Back and a reload do not start it again."""
    from playwright.sync_api import expect

    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": 0}
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "QUOTA_RATINGS": 5, "COMPLETION_CODE": "CEMPTY42"}
    client.get(LINK)
    profile = RaterProfile.objects.get(participation__external_id=PID)
    RaterProfile.objects.filter(pk=profile.pk).update(
        consent_at=timezone.now(), state=RaterState.GAME, game_entered_at=timezone.now()
    )
    page = signed_in(browser, live_server, profile.user, **SIZES[size])
    page.goto(f"{live_server.url}/play/game/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Nothing left to rate right now")
    finish = page.get_by_role("button", name="Finish my session")
    assert not inside_viewport(page, "#finish-session button")
    page.screenshot(path=str(ARTIFACTS / f"nothing-left-{size}.png"))
    finish.click()
    expect(page).to_have_url(re.compile(r"/study/complete/$"))
    expect(page.locator("#completion-code")).to_have_text("CEMPTY42")
    page.screenshot(path=str(ARTIFACTS / f"nothing-left-complete-{size}.png"))
    page.go_back()
    page.reload()
    expect(page).to_have_url(re.compile(r"/study/complete/$"))  # the ended session's page, again
    assert Participation.objects.get().outcome == "completed"
    assert RaterAction.objects.filter(action="session_completed").count() == 1
