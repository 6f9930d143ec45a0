"""axe-core (shipped inside axe-playwright-python) on the rater's, the staff's and the researchers'
pages in real Chromium: no serious or critical violation, at a laptop's size and a phone's (the
phone's pass is the full-size run's: CI, or RATINGGAME_FULL_TESTS=1; the pages' phone layout is
checked in every run by the small-layout tests). The staff's rater table fits a 1280-px screen."""

import pytest
from axe_playwright_python.sync_playwright import Axe

from annotators.competency.flag_rules import FLAG_KEYS
from annotators.models import Dispute, RaterState
from annotators.roles import ADMIN, RESEARCHER
from annotators.staff import views as staff_views
from annotators.staff.views import COLUMNS
from ratinggame import game
from ratinggame.game.reports import pair_report
from ratinggame.models import Rating, ReportReason
from tests.browser import ARTIFACTS, SIZES, photo_like_image, signed_in
from tests.factories import CaptionPairFactory, RaterProfileFactory, TutorialPairFactory, user_with_role
from tests.ratinggame.journey_helpers import rater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BLOCKING = {"serious", "critical"}


@pytest.fixture
def world(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    ARTIFACTS.mkdir(exist_ok=True)
    for level in (5, 4, 3, 2, 1):
        TutorialPairFactory(image=photo_like_image(level), caption=f"A tutorial caption at level {level}")
    pairs = [
        CaptionPairFactory(image=photo_like_image(10 + i), caption=f"A game caption {i}", primes=[4.0, 4.0])
        for i in range(3)
    ]
    player = rater(RaterState.GAME, display_name="Ada")
    served = game.pair_serve(rater=player)
    feedback = game.rating_submit(rater=player, assignment_id=served.assignment_id, value=2)
    Dispute.objects.create(rating_id=feedback.rating_id, comment="The caption is right.")
    reporter = rater(RaterState.GAME)
    pair_report(
        rater=reporter,
        assignment_id=game.pair_serve(rater=reporter).assignment_id,
        reason=ReportReason.OTHER,
        text="Blurry",
    )
    return {
        "player": player,
        "feedback": f"/play/feedback/{feedback.assignment_id}/",
        "learner": rater(RaterState.TUTORIAL),
        "newcomer": RaterProfileFactory(consent_at=None).user,
        "staff": user_with_role(ADMIN, is_staff=True),
        "researcher": user_with_role(RESEARCHER),
        "pairs": pairs,
    }


def blocking_violations(page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{page.url} [{violation['impact']}] {violation['id']}: {violation['help']} "
        f"({', '.join(node['target'][0] for node in violation['nodes'][:3])})"
        for violation in results.response["violations"]
        if violation["impact"] in BLOCKING
    ]


@pytest.mark.parametrize("size", ["1280x720", pytest.param("390x844", marks=pytest.mark.slow)])
def test_no_serious_or_critical_violation_on_the_rater_staff_and_research_pages(live_server, browser, world, size):
    visits = [
        (
            None,
            [
                "/",
                "/accounts/signup/",
                "/accounts/login/",
                "/accounts/password_reset/",
                "/leaderboard/",
                "/nope/",
                "/study/enter/",
            ],
        ),
        (world["newcomer"], ["/play/consent/"]),
        (world["learner"], ["/play/introduction/", "/play/tutorial/"]),
        (world["player"], ["/play/game/", world["feedback"], "/me/", "/me/delete/", "/leaderboard/"]),
        # The staff pages, the progress page and the import pages have their axe pass, at both sizes,
        # over a fuller study in tests/test_research_and_staff_pages_browser.py.
        (world["researcher"], ["/research/pay/", "/research/study/", "/staff/"]),
    ]
    problems = []
    for user, paths in visits:
        if user is None:
            page = browser.new_context(**SIZES[size]).new_page()
        else:
            page = signed_in(browser, live_server, user, **SIZES[size])
        for path in paths:
            page.goto(live_server.url + path)  # its load event: images, style sheets and scripts
            problems += blocking_violations(page)
            if path.startswith("/play/") and path.endswith(("tutorial/", "game/")):
                # The open Rating Guide and the open report form are part of the page too.
                page.keyboard.press("g")
                problems += [f"guide {line}" for line in blocking_violations(page)]
                page.keyboard.press("Escape")
                page.locator("#report summary").click()
                problems += [f"report {line}" for line in blocking_violations(page)]
        page.context.close()
    assert not problems, "\n".join(problems)
    assert Rating.objects.count() == 1  # visiting changed nothing


def widest_statistics(real):
    """The rater table's widest rows: every flag raised, a figure in every column (``–`` is narrower
    than ``100%``), as a crowd of a study's raters can show them."""

    def statistics():
        rows = real()
        for row in rows:
            row.flags = list(FLAG_KEYS)
            row.tutorial_score, row.probation_rounds, row.game_score, row.ratings = 20, 12, 1234, 5678
            row.exact_rate = row.adjacent_rate = row.lack_rate = row.near_floor_share = 1.0
            row.prime_equal_share, row.mean_abs_deviation, row.median_seconds = 1.0, 1.25, 123.4
            row.control_recent_agreement, row.longest_run, row.skips, row.open_disputes = 1.75, 150, 99, 12
        return rows

    return statistics


def widest_competency(rows, analysis):
    for row in rows:
        row.competency, row.rater_quality = -12.34, 1.0
    return rows


def test_the_staff_rater_table_fits_a_laptop_screen_with_every_flag_in_view(live_server, browser, world, monkeypatch):
    for index in range(12):
        user = rater(RaterState.GAME, display_name=f"Rater with a long name {index}")
        user.username = f"walker_desk_2026_{index:02}"
        user.save(update_fields=["username"])
    monkeypatch.setattr(staff_views, "rater_statistics", widest_statistics(staff_views.rater_statistics))
    monkeypatch.setattr(staff_views, "_with_competency", widest_competency)
    page = signed_in(browser, live_server, world["staff"], **SIZES["1280x720"])
    page.goto(f"{live_server.url}/staff/")
    table, box = page.locator("table.raters"), page.locator(".table-scroll")
    assert table.evaluate("t => t.scrollWidth") <= box.evaluate("b => b.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    shown = page.locator("table.raters thead th:visible")
    labels = shown.evaluate_all("ths => ths.map(th => th.textContent.trim())")
    hidden = {label for key, label, *_ in COLUMNS if key in staff_views.WIDE_COLUMNS}
    assert labels == [label for _, label, *_ in COLUMNS if label not in hidden]
    assert all(title for title in shown.evaluate_all("ths => ths.map(th => th.title)"))
    right = box.evaluate("b => b.getBoundingClientRect().right")
    flags = page.locator("table.raters td.flags").first
    assert flags.evaluate("td => td.getBoundingClientRect().right") <= right  # every flag in view
    page.screenshot(path=str(ARTIFACTS / "staff-1280x720.png"), full_page=True)
    page.get_by_role("link", name=f"Show all {len(COLUMNS)} columns").click()
    assert page.locator("table.raters thead th:visible").count() == len(COLUMNS)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # the rest scrolls in its region
