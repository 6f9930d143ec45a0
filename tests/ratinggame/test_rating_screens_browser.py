"""The rating and feedback screens in real Chromium, at a laptop's 1280x720 and a phone's 390x844:
everything needed to rate on one screen, the countdown waiting for the image, a reload that
never submits, and probation rounds that do not repeat pairs. Screenshots go to test-artifacts/."""

import re
import time

import pytest

from annotators.models import RaterState
from ratinggame.models import Assignment, Pool, Rating
from tests.browser import ARTIFACTS, SIZES, inside_viewport, photo_like_image, signed_in, wait_until
from tests.factories import (
    CaptionPairFactory,
    ControlPairFactory,
    ProbationPairFactory,
    TutorialPairFactory,
    rating_make,
)
from tests.ratinggame.journey_helpers import rater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# 30 words: the longest caption the screen must show whole, next to the image.
LONG_CAPTION = (
    "A smiling astronaut in an orange flight suit holds her white helmet beside a model "
    "of the space shuttle while an American flag hangs on the wall behind her shoulder"
)
ON_SCREEN = ["#pair-image", "#caption", ".choice", "#submit-rating", "#countdown"]


@pytest.fixture
def fast(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0.5}
    ARTIFACTS.mkdir(exist_ok=True)


def test_each_rating_screen_and_its_feedback_fit_one_screen_at_both_sizes(live_server, browser, fast):
    assert len(LONG_CAPTION.split()) == 30
    TutorialPairFactory(image=photo_like_image(1), caption=LONG_CAPTION, expert_rating=5, explanation="x " * 60)
    ProbationPairFactory(image=photo_like_image(2), caption=LONG_CAPTION, expert_rating=2)
    CaptionPairFactory(image=photo_like_image(3, size=(427, 640)), caption=LONG_CAPTION, primes=[4.0, 4.0])
    raters = {stage: rater(stage) for stage in (RaterState.TUTORIAL, RaterState.PROBATION, RaterState.GAME)}
    problems = []
    for stage, user in raters.items():
        for size, options in SIZES.items():
            page = signed_in(browser, live_server, user, **options)
            page.goto(f"{live_server.url}/play/{stage}/")
            wait_until(page, "document.getElementById('pair-image').complete")
            page.screenshot(path=str(ARTIFACTS / f"rate-{stage}-{size}.png"))
            problems += [f"{stage} {size}: {p}" for p in inside_viewport(page, ", ".join(ON_SCREEN))]
            if page.evaluate("document.documentElement.scrollHeight") > options["viewport"]["height"]:
                problems.append(f"{stage} {size}: the rating screen scrolls")
            # Key hints on a laptop; none on a touch screen, which has no keys to press.
            assert page.locator(".keys").is_visible() is (size == "1280x720"), (stage, size)
            if size == "390x844":
                # The compact row: a tap on 4 shows the words of level 4 under the row.
                page.locator("label[for=value-4]").tap()
                assert page.locator("#choice-chosen").inner_text().startswith("4: Mostly identified")
                page.locator("#submit-rating:enabled").tap()
                page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))
                feedback_url = page.url
            page.context.close()
        for size, options in SIZES.items():
            page = signed_in(browser, live_server, user, **options)
            page.goto(feedback_url)
            page.screenshot(path=str(ARTIFACTS / f"feedback-{stage}-{size}.png"))
            # The points, Next, and the pair they are for (a 30-word caption): on a phone too.
            shown = ".fb-points, #continue, .pair-small .pair-thumb, .pair-small .caption"
            problems += [f"{stage} feedback {size}: {p}" for p in inside_viewport(page, shown)]
            page.context.close()
    assert not problems, "\n".join(problems)
    assert Rating.objects.count() == 3


# Page-clock times of the image's arrival and of Submit's unlocking, recorded by the page itself.
RECORD_TIMES = """
window.times = {};
document.addEventListener("load", (event) => {
  if (event.target.id === "pair-image") { window.times.loaded = performance.now(); }
}, true);
setInterval(() => {
  const submit = document.getElementById("submit-rating");
  if (submit && submit.disabled) { window.times.locked = true; }
  if (window.times.locked && !submit.disabled && window.times.enabled === undefined) {
    window.times.enabled = performance.now();
  }
}, 10);
"""


def test_the_countdown_starts_when_the_image_has_arrived(live_server, browser, fast, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 1.0}
    TutorialPairFactory(image=photo_like_image(4))
    user = rater(RaterState.TUTORIAL)
    page = signed_in(browser, live_server, user, **SIZES["1280x720"])
    page.add_init_script(RECORD_TIMES)
    # A slow connection: the picture takes 2.5 s to arrive, longer than the 1 s minimum.
    page.route(re.compile(r"/media/images/"), lambda route: (time.sleep(2.5), route.continue_()))
    page.goto(f"{live_server.url}/play/tutorial/")
    wait_until(page, "window.times.enabled !== undefined", timeout=10)
    times = page.evaluate("window.times")
    # The server's floor (1 s after serving) passed while the image was on its way; Submit
    # still waited the full second with the image on screen.
    assert times["loaded"] >= 2400
    assert times["enabled"] - times["loaded"] >= 950


def test_a_reload_after_a_refused_submission_stores_nothing(live_server, browser, fast, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 2.0}
    TutorialPairFactory(image=photo_like_image(5), caption="A red box on the grass under a yellow sun")
    user = rater(RaterState.TUTORIAL)
    page = signed_in(browser, live_server, user, **SIZES["1280x720"])
    page.goto(f"{live_server.url}/play/tutorial/")
    # Submit at once, past the page's own countdown (as a script or an old browser could).
    page.check("#value-4", force=True)
    page.evaluate("document.getElementById('rating-form').submit()")
    page.wait_for_selector("#rate-error")
    assert re.fullmatch(rf"{live_server.url}/play/tutorial/(\d+/)?", page.url)
    assert "Take at least 2 seconds" in page.inner_text("#rate-error")
    assert page.locator("#value-4").is_checked()  # the choice is kept
    time.sleep(2.5)  # now a re-sent POST would be in time
    page.reload()
    page.wait_for_selector("#rating-form")
    assert re.fullmatch(rf"{live_server.url}/play/tutorial/(\d+/)?", page.url)
    assert page.locator("#rate-error").count() == 0
    assert not Rating.objects.exists()


def test_two_failed_probation_rounds_show_forty_different_pairs(live_server, browser, fast, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0.2}
    images = [photo_like_image(10 + index) for index in range(5)]
    for index in range(45):
        ProbationPairFactory(image=images[index % 5], caption=f"Probation caption number {index}", expert_rating=3)
    user = rater(RaterState.PROBATION)
    seen: list[str] = []
    outcomes: list[str] = []
    page = signed_in(browser, live_server, user, **SIZES["1280x720"])
    page.goto(f"{live_server.url}/play/")
    for _ in range(40):
        page.wait_for_url(re.compile(r"/play/probation/(\d+/)?$"))
        seen.append(page.inner_text("#caption").removeprefix("Caption").strip())
        page.keyboard.press("4")  # one off the experts' 3: 1 point, 20 of 40 in a round
        page.wait_for_selector("#submit-rating:enabled")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))
        if page.locator(".outcome").count():
            outcomes.append(page.inner_text(".outcome"))
        page.keyboard.press("n")
    page.wait_for_url(re.compile(r"/play/probation/(\d+/)?$"))
    assert len(seen) == len(set(seen)) == 40
    assert len(outcomes) == 2
    assert "Next: round 2, 20 pairs you have not rated before." in outcomes[0]
    assert "Next: round 3, 20 pairs: 5 you have not rated before and 15 you rated longest ago" in outcomes[1]
    assert Rating.objects.filter(rater=user, stage=Pool.PROBATION).count() == 40


def test_a_reported_pair_is_skipped_and_no_longer_served(live_server, browser, fast, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "REPORTS_TO_WITHDRAW": 1}
    pairs = [
        CaptionPairFactory(image=photo_like_image(20), caption="A broken picture of nothing", primes=[3, 3]),
        CaptionPairFactory(image=photo_like_image(21), caption="A red box on green grass", primes=[3, 3]),
    ]
    first, second = rater(RaterState.GAME), rater(RaterState.GAME)
    page = signed_in(browser, live_server, first, **SIZES["390x844"])
    page.goto(f"{live_server.url}/play/game/")
    # Each rater has an order of their own: the pair shown first is the one reported.
    (reported,) = [pair for pair in pairs if pair.caption in page.inner_text("#caption")]
    (kept,) = [pair for pair in pairs if pair != reported]
    page.locator("#report summary").tap()
    page.select_option("#report-reason", "broken_image")
    page.fill("#report-text", "Only grey squares")
    page.get_by_role("button", name="Report and skip this pair").tap()
    page.wait_for_selector(".messages")
    assert "reported and skipped" in page.inner_text(".messages")
    assert kept.caption in page.inner_text("#caption")
    page.screenshot(path=str(ARTIFACTS / "report-skipped-390x844.png"))
    page.context.close()

    # Another rater gets the other pair, and after it nothing: the reported pair is out of play.
    page = signed_in(browser, live_server, second, **SIZES["1280x720"])
    page.goto(f"{live_server.url}/play/game/")
    assert kept.caption in page.inner_text("#caption")
    page.keyboard.press("3")
    page.wait_for_selector("#submit-rating:enabled")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))
    page.keyboard.press("n")
    page.wait_for_selector("h1")
    assert page.inner_text("h1") == "Nothing left to rate right now"
    assert not Rating.objects.filter(pair=reported).exists()
    assert Rating.objects.filter(pair=kept).count() == 1


def _rate_a_two(page, live_server) -> None:
    """Rate the game pair served a 2 (against the primes' 4: -1 point) and wait for its feedback."""
    page.goto(f"{live_server.url}/play/game/")
    page.keyboard.press("2")
    page.wait_for_selector("#submit-rating:enabled")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))


def _dispute(page, comment: str) -> None:
    """Dispute the score on screen with ``comment``; the feedback then says an admin will read it."""
    page.get_by_text("Dispute this score").click()
    page.fill("textarea[name=comment]", comment)
    page.get_by_role("button", name="Send the dispute").click()
    page.wait_for_selector(".dispute-outcome")
    assert "Waiting for an admin" in page.inner_text(".dispute-outcome")


def test_a_dispute_and_its_outcome_reach_the_rater(live_server, browser, fast):
    from annotators.models import Dispute
    from annotators.staff.services import dispute_resolve
    from tests.factories import UserFactory

    CaptionPairFactory(image=photo_like_image(22), caption="A red box on green grass", primes=[4.0, 4.0])
    user = rater(RaterState.GAME)
    page = signed_in(browser, live_server, user, **SIZES["1280x720"])
    _rate_a_two(page, live_server)
    feedback_url = page.url
    assert page.inner_text("#consensus-note").startswith("The consensus was 4: “Mostly identified")
    _dispute(page, "The box is clearly red: a 2 is fair.")
    assert page.get_by_text("Dispute this score").count() == 0  # filed: not offered again

    dispute_resolve(dispute=Dispute.objects.get(), actor=UserFactory(is_staff=True), accept=True, note="Fair point.")
    page.goto(f"{live_server.url}/me/")
    outcome = page.inner_text(".dispute-list")
    assert "Accepted" in outcome and "1 point restored" in outcome and "Fair point." in outcome
    page.screenshot(path=str(ARTIFACTS / "me-dispute-outcome-1280x720.png"), full_page=True)
    page.goto(feedback_url)
    assert "Accepted" in page.inner_text(".dispute-outcome")


@pytest.mark.parametrize("size", SIZES)
def test_dispute_this_score_brings_its_form_into_view(live_server, browser, fast, size):
    """Issue 35, item 6: the form opened below the fold and nothing moved to it."""
    CaptionPairFactory(image=photo_like_image(23), caption=LONG_CAPTION, primes=[4.0, 4.0])
    page = signed_in(browser, live_server, rater(RaterState.GAME), **SIZES[size])
    _rate_a_two(page, live_server)
    page.goto(page.url)  # the feedback as a page
    page.get_by_text("Dispute this score").click()
    send = page.get_by_role("button", name="Send the dispute")
    deadline = time.monotonic() + 5
    while inside_viewport(page, ".dispute form button") and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # a smooth scroll
    assert inside_viewport(page, ".dispute form button") == []
    assert send.is_visible()
    assert page.evaluate("document.activeElement.name") == "comment"
    page.screenshot(path=str(ARTIFACTS / f"dispute-open-{size}.png"))


def test_a_dispute_sent_from_the_feedback_shown_in_place_is_filed(live_server, browser, fast):
    """The in-place feedback's dispute form comes without a CSRF token (the answer mints none):
    the page's script gives it the page's own, and the dispute goes through."""
    from annotators.models import Dispute

    for index, caption in enumerate(("A red box on green grass", "A yellow sun in a blue sky")):
        CaptionPairFactory(image=photo_like_image(23 + index), caption=caption, primes=[4.0, 4.0])
    # Qualified, and a pair to rate next: the feedback is shown in place.
    user = rater(RaterState.GAME, window_count=20, window_points=40)
    page = signed_in(browser, live_server, user, **SIZES["1280x720"])
    _rate_a_two(page, live_server)
    assert page.locator("#rating-form").count() == 1  # still the rating page: the feedback in place
    _dispute(page, "The box is clearly red: a 2 is fair.")
    assert Dispute.objects.get().comment == "The box is clearly red: a 2 is fair."


def test_the_rating_guide_opens_beside_the_image_with_one_example_per_level(live_server, browser, fast):
    user = rater(RaterState.TUTORIAL)
    # The examples are tutorial pairs this rater has already rated; the pair being rated is not one.
    for level in (5, 4, 3, 2, 1):
        example = TutorialPairFactory(
            image=photo_like_image(30 + level), caption=f"Example at level {level}", expert_rating=level
        )
        rating_make(rater=user, pair=example, value=level)
    TutorialPairFactory(image=photo_like_image(40), caption="The pair being rated", expert_rating=4)
    page = signed_in(browser, live_server, user, **SIZES["1280x720"])
    page.goto(f"{live_server.url}/play/tutorial/")
    wait_until(page, "document.getElementById('pair-image').complete")
    page.keyboard.press("g")
    guide = page.locator("#guide")
    guide.wait_for()
    examples = page.locator(".guide-example figcaption").all_inner_texts()
    assert [text.split(": ", 1)[0] for text in examples] == [
        f"For example, rated {level} by the experts" for level in (5, 4, 3, 2, 1)
    ]
    assert not any("The pair being rated" in text for text in examples)
    # A side panel right of the image: the image stays in full view, and 1-5 still choose.
    assert (
        page.locator("#pair-image").bounding_box()["x"] + page.locator("#pair-image").bounding_box()["width"]
        <= guide.bounding_box()["x"]
    )
    page.keyboard.press("3")
    assert page.locator("#value-3").is_checked()
    page.screenshot(path=str(ARTIFACTS / "guide-side-panel-1280x720.png"))
    page.keyboard.press("Escape")
    guide.wait_for(state="hidden")


@pytest.mark.parametrize("size", SIZES)
def test_skip_this_pair_by_button_or_key_shows_the_next_pair_and_never_the_skipped_one(
    live_server, browser, fast, size
):
    captions = ["A red box on green grass", "A yellow sun in a blue sky", "Grey clouds over a field"]
    for index, caption in enumerate(captions):
        CaptionPairFactory(image=photo_like_image(40 + index), caption=caption, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, game_serves=29)  # the next serve is the 30th: one skip earned
    page = signed_in(browser, live_server, user, **SIZES[size])
    page.goto(f"{live_server.url}/play/game/")
    seen = [page.inner_text("#caption").split("\n")[-1].strip()]
    assert page.locator("#skip-pair").is_visible()
    assert not inside_viewport(page, "#skip-pair")
    if size == "1280x720":
        page.keyboard.press("s")
    else:
        page.locator("#skip-pair").tap()
    page.wait_for_selector(".messages")
    assert "Skipped: no rating, no points" in page.inner_text(".messages")
    seen.append(page.inner_text("#caption").split("\n")[-1].strip())
    page.screenshot(path=str(ARTIFACTS / f"skipped-{size}.png"))
    assert seen[1] != seen[0]
    # The limit: the button is gone, the note says when the next skip comes, and S does nothing.
    assert not page.locator("#skip-pair").is_visible()
    assert page.inner_text("#skip-note") == "Skip: from game pair 40"
    page.keyboard.press("s")
    page.wait_for_timeout(300)
    assert page.inner_text("#caption").split("\n")[-1].strip() == seen[1]
    # A page shown before the limit was reached (another tab) is refused with the reason, and
    # the pair stays on screen as it was: not reloaded (its countdown and the choice kept).
    page.locator("label[for=value-3]").click()
    page.evaluate("document.body.dataset.before = 'refusal'")
    page.evaluate("document.getElementById('skip-pair').hidden = false")
    page.locator("#skip-pair").click()
    page.wait_for_selector("#rate-error")
    assert "Your next skip comes with game pair 40" in page.inner_text("#rate-error")
    assert page.inner_text("#caption").split("\n")[-1].strip() == seen[1]
    assert page.evaluate("document.body.dataset.before") == "refusal"  # the same page
    assert page.locator("#value-3").is_checked()
    assert not Rating.objects.exists()


def test_the_next_pair_in_place_shows_skip_once_it_is_allowed(live_server, browser, fast):
    for index in range(3):
        CaptionPairFactory(image=photo_like_image(50 + index), caption=f"A box {index}", primes=[3.0, 3.0])
    user = rater(RaterState.GAME, game_serves=28, window_count=20, window_points=40)  # this serve: the 29th
    page = signed_in(browser, live_server, user, **SIZES["1280x720"])
    page.goto(f"{live_server.url}/play/game/")
    assert not page.locator("#skip-pair").is_visible() and not page.locator("#skip-key").is_visible()
    assert page.inner_text("#skip-note") == "Skip: from game pair 30"
    page.evaluate("document.body.dataset.before = 'in place'")
    page.locator("label[for=value-3]").click()
    page.locator("#submit-rating:enabled").click()
    page.locator(".actions.next #continue").click()  # the 30th pair, shown in place
    page.wait_for_url(re.compile(r"/play/game/\d+/$"))
    assert page.evaluate("document.body.dataset.before") == "in place"  # no page load
    assert page.locator("#skip-pair").is_visible() and page.locator("#skip-key").is_visible()
    assert not page.locator("#skip-note").is_visible()


# What the feedback most needs read: the demo's longest explanation is 60 words; this one is longer.
LONG_EXPLANATION = " ".join(
    ["Everything important is here and correct: the astronaut, her suit, the flag, the model and the helmet,"]
    + ["each placed in space, and calling it a portrait interprets the setting, which level 5 asks for."] * 3
)
# How far the panel's last line before the bar reaches under the sticky "Next" bar (px; <= 0: in view).
HIDDEN_BY = """() => {
  const bar = document.querySelector(".actions.next");
  let bottom = 0;
  for (let e = bar.previousElementSibling; e; e = e.previousElementSibling) {
    if (e.getClientRects().length) { bottom = Math.max(bottom, e.getBoundingClientRect().bottom); }
  }
  return bottom - bar.getBoundingClientRect().top;
}"""


def _hidden_feedback(page, label: str) -> list[str]:
    """Either the verdict and the explanation end above the Next bar, or the bar says "More below"
    and a press on it brings their end above the bar (and the words go)."""
    more = page.locator(".more-below")
    if page.evaluate(HIDDEN_BY) <= 0:
        return [f"{label}: 'More below' with nothing below"] if more.count() and more.is_visible() else []
    if not more.is_visible():
        return [f"{label}: hidden under the bar, and nothing says so"]
    more.click()
    deadline = time.monotonic() + 5
    while (page.evaluate(HIDDEN_BY) > 0 or more.is_visible()) and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # the scroll is smooth; the button follows the scroll
    if page.evaluate(HIDDEN_BY) > 0:
        return [f"{label}: still hidden after 'More below'"]
    return [f"{label}: 'More below' stays after the rest is shown"] if more.is_visible() else []


# Each stage's feedback after a right answer, one level off and far off (the expert, the primes
# and the controls say 5), with the game's controls among its pairs.
ANSWERS = {"right": 5, "one off": 4, "far off": 1}


def _feedback_world() -> dict[str, object]:
    for order in range(3):
        TutorialPairFactory(
            image=photo_like_image(order + 1),
            caption=LONG_CAPTION,
            expert_rating=5,
            explanation=LONG_EXPLANATION,
            display_order=order,
        )
        ProbationPairFactory(
            image=photo_like_image(order + 4), caption=LONG_CAPTION, expert_rating=5, explanation=LONG_EXPLANATION
        )
    for index in range(6):
        CaptionPairFactory(image=photo_like_image(index + 7), caption=f"{LONG_CAPTION} {index}", primes=[5.0, 5.0])
    for index in range(3):
        ControlPairFactory(image=photo_like_image(index + 13), caption=f"{LONG_CAPTION} c{index}", expert_rating=5)
    return {
        RaterState.TUTORIAL: rater(RaterState.TUTORIAL),
        RaterState.PROBATION: rater(RaterState.PROBATION),
        RaterState.GAME: rater(RaterState.GAME, window_count=20, window_points=40),
    }


@pytest.mark.parametrize("size", SIZES)
def test_every_feedback_shows_its_verdict_and_the_pair_rated_or_says_there_is_more(
    live_server, browser, fast, settings, size
):
    """Issue 35, item 1: a wrong answer's explanation ran on under the sticky "Next pair" with
    nothing to say so, and on a phone the feedback page put the pair rated after the button. For
    the tutorial, probation, game and control pairs, right, one off and far off, in place and as a
    page (opened again): the verdict and the explanation are in view or "More below" brings them, and
    the page shows the pair rated (its picture and a 30-word caption) without scrolling."""
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 2, "MIN_SECONDS_PER_RATING": 0.2}
    raters = _feedback_world()
    problems, met = [], set()
    for stage, user in raters.items():
        page = signed_in(browser, live_server, user, **SIZES[size])
        page.goto(f"{live_server.url}/play/{stage}/")
        answers = list(ANSWERS.items()) + ([("far off", 1)] if stage == RaterState.GAME else [])
        for answer, value in answers:
            wait_until(page, "document.getElementById('pair-image').complete")
            page.locator(f"label[for=value-{value}]").click()
            page.locator("#submit-rating:enabled").click()
            page.wait_for_url(re.compile(r"/play/feedback/\d+/$"))
            assignment = Assignment.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
            label = f"{size} {assignment.stage} {answer}"
            met.add((str(assignment.stage), answer))
            page.locator(".actions.next #continue").wait_for()
            problems += _hidden_feedback(page, f"{label} in place")
            page.goto(page.url)  # opened as a page (a reload would keep the scroll made in place)
            page.locator(".actions.next #continue").wait_for()
            problems += [f"{label} as a page: {p}" for p in inside_viewport(page, ".pair-small .pair-thumb")]
            problems += [f"{label} as a page: {p}" for p in inside_viewport(page, ".pair-small .caption")]
            problems += _hidden_feedback(page, f"{label} as a page")
            name = f"feedback-{assignment.stage}-{answer.replace(' ', '-')}-{size}.png"
            page.screenshot(path=str(ARTIFACTS / name))
            page.locator(".actions.next #continue").click()
            page.wait_for_load_state()
        page.context.close()
    assert not problems, "\n".join(problems)
    stages = {stage for stage, _ in met}
    assert stages == {"tutorial", "probation", "game", "control"}, met
