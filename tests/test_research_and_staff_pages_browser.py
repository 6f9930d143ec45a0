"""The pages researchers and staff read, in real Chromium at a laptop's and a phone's size: none is
wider than the screen (wide tables scroll inside their own region) and axe finds no serious
problem, the staff rater table is compact on a phone with all its columns a link away, and a job
that fails says why."""

from datetime import UTC, datetime, timedelta

import pytest

from annotators.models import Dispute, RaterAction, RaterState
from annotators.roles import ADMIN, RESEARCHER
from annotators.staff.views import COLUMNS, COMPACT_COLUMNS, WIDE_COLUMNS
from ratinggame import game
from ratinggame.game.reports import pair_report
from ratinggame.models import ImportJob, ReportReason
from scoring.models import ExportJob
from scoring.progress.chart import ratings_per_hour_svg
from tests.browser import ARTIFACTS, SIZES, photo_like_image, signed_in, wait_until
from tests.factories import CaptionPairFactory, TutorialPairFactory, user_with_role
from tests.ratinggame.journey_helpers import rater
from tests.test_accessibility import blocking_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_CAPTION = (
    "A man in a dark suit and a striped tie standing beside a tripod on a wide field of grass, "
    "looking through the viewfinder of an old film camera at buildings far away"
)


@pytest.fixture
def world(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    ARTIFACTS.mkdir(exist_ok=True)
    TutorialPairFactory(image=photo_like_image(1), caption="A tutorial caption")
    pairs = [
        CaptionPairFactory(image=photo_like_image(10 + i), caption=f"{LONG_CAPTION} ({i})", primes=[4.0, 4.0])
        for i in range(4)
    ]
    players = [rater(RaterState.GAME, window_count=20, window_points=40) for _ in range(3)]
    ratings = []
    for player in players:
        for value in (2, 4, 3):
            served = game.pair_serve(rater=player)
            ratings.append(game.rating_submit(rater=player, assignment_id=served.assignment_id, value=value))
    Dispute.objects.create(rating_id=ratings[0].rating_id, comment="The caption names the camera and the field. " * 6)
    reporter = rater(RaterState.GAME, window_count=20, window_points=40)
    pair_report(
        rater=reporter,
        assignment_id=game.pair_serve(rater=reporter).assignment_id,
        reason=ReportReason.OTHER,
        text="The caption describes a different picture from the one shown, with a tripod that is not there.",
    )
    staff = user_with_role(ADMIN, is_staff=True, password=None)
    RaterAction.objects.create(
        rater=players[0].rater, actor=staff, action="suspend", reason="Too fast. " * 20, from_state="game"
    )
    researcher = user_with_role(RESEARCHER, password=None)
    ExportJob.objects.create(created_by=researcher, status=ExportJob.Status.DONE, progress=1.0, params=EXPORT)
    ExportJob.objects.create(
        created_by=researcher,
        status=ExportJob.Status.FAILED,
        progress=0.45,
        progress_message="Failed",
        error="The export failed on the server (MemoryError).",
        params=EXPORT,
    )
    failed_import = ImportJob.objects.create(
        created_by=researcher,
        status=ImportJob.Status.FAILED,
        progress=0.8,
        progress_message="Failed",
        error="2 invalid row(s); nothing was imported.",
        params={"pool": "game", "dry_run": False, "skip_invalid": False, "manifest": "pairs.csv", "rows": 5},
        row_errors=[{"row": 3, "reason": "image a_rather_long_file_name_of_a_photograph.png: no such file"}] * 2,
    )
    return {
        "staff": staff,
        "researcher": researcher,
        "profile": players[0].rater,
        "import": failed_import,
        "pairs": pairs,
    }


EXPORT = {"min_ratings": 3, "seed": 0, "formats": ["csv", "jsonl", "parquet"], "with_images": True}


def test_no_page_is_wider_than_the_screen_and_axe_finds_nothing_serious(live_server, browser, world):
    visits = [
        (world["researcher"], ["/research/", "/research/import/", f"/research/import/{world['import'].pk}/"]),
        (
            world["staff"],
            [
                "/staff/",
                "/staff/?columns=all",
                f"/staff/raters/{world['profile'].pk}/",
                "/staff/disputes/",
                "/staff/reports/",
            ],
        ),
    ]
    too_wide, problems = [], []
    for size, options in SIZES.items():
        for user, paths in visits:
            page = signed_in(browser, live_server, user, **options)
            for path in paths:
                page.goto(live_server.url + path)
                width = page.evaluate("document.documentElement.scrollWidth")
                if width > options["viewport"]["width"]:
                    too_wide.append(f"{path} at {size}: {width} px")
                for svg in page.locator("svg[viewBox]").all():
                    too_wide += [f"{path} at {size}: '{text}' cut" for text in svg.evaluate(CUT_TEXTS)]
                problems += [f"{size} {line}" for line in blocking_violations(page)]
                name = path.strip("/").replace("/", "-").replace("?", "-").replace("=", "-")
                page.screenshot(path=str(ARTIFACTS / f"{name}-{size}.png"), full_page=True)
            page.context.close()
    assert not too_wide, "\n".join(too_wide)
    assert not problems, "\n".join(problems)


def test_on_a_phone_the_rater_table_is_compact_and_shows_every_column_on_request(live_server, browser, world):
    page = signed_in(browser, live_server, world["staff"], **SIZES["390x844"])
    page.goto(f"{live_server.url}/staff/?sort=-game_score")
    headings = page.locator("table.raters thead th")
    shown = [heading.inner_text() for heading in headings.all() if heading.is_visible()]
    assert len(shown) == len(COMPACT_COLUMNS) < len(COLUMNS)
    page.get_by_role("link", name=f"Show all {len(COLUMNS)} columns").click()
    page.wait_for_url(lambda url: "columns=all" in url)
    assert "columns=all" in page.url and "sort=-game_score" in page.url  # the sort is kept
    assert all(heading.is_visible() for heading in headings.all()) and headings.count() == len(COLUMNS)
    region = page.locator(".table-scroll")
    assert region.evaluate("r => r.scrollWidth > r.clientWidth")  # the table scrolls in its region...
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # ...not the page
    # Sorting again keeps every column, and a way back to the compact table.
    page.locator("table.raters thead th a", has_text="Ratings").click()
    page.wait_for_url(lambda url: "sort=ratings" in url)
    assert "columns=all" in page.url and headings.all()[3].is_visible()
    page.get_by_role("link", name="Show fewer columns").click()
    page.wait_for_url(lambda url: "columns=all" not in url)
    assert sum(heading.is_visible() for heading in headings.all()) == len(COMPACT_COLUMNS)
    # At a laptop's size every column but the few it leaves to "Show all columns".
    page.set_viewport_size(SIZES["1280x720"]["viewport"])
    assert sum(heading.is_visible() for heading in headings.all()) == len(COLUMNS) - len(WIDE_COLUMNS)


def test_an_export_that_fails_while_followed_says_why(live_server, browser, world):
    running = ExportJob.objects.create(
        created_by=world["researcher"], status=ExportJob.Status.RUNNING, progress=0.45, params=EXPORT
    )
    page = signed_in(browser, live_server, world["researcher"], **SIZES["1280x720"])
    page.goto(f"{live_server.url}/research/")
    row = f"tr.export-job:has(#export-{running.pk})"
    assert page.locator(f"{row} progress").is_visible()
    ExportJob.objects.filter(pk=running.pk).update(
        status=ExportJob.Status.FAILED,
        progress_message="Failed",
        error="The export failed on the server (OSError).",
    )
    wait_until(page, f"document.querySelector('#export-{running.pk}-message').textContent.includes('OSError')")
    message = page.locator(f"#export-{running.pk}-message").inner_text()
    assert message == "Failed: The export failed on the server (OSError)."
    assert not page.locator(f"{row} progress").is_visible()


CUT_TEXTS = """svg => {
    const box = svg.viewBox.baseVal;
    return [...svg.querySelectorAll("text:not([transform])")]
        .map(text => [text.textContent, text.getBBox()])
        .filter(([, b]) => b.x < box.x - 0.5 || b.x + b.width > box.x + box.width + 0.5
            || b.y < box.y - 0.5 || b.y + b.height > box.y + box.height + 0.5)
        .map(([text]) => text);
}"""


@pytest.mark.parametrize("last_midnight", [0, 1, 6, 23])
def test_the_ratings_chart_cuts_no_label_wherever_the_last_midnight_falls(browser, last_midnight):
    # The research page's chart of the last 7 days ends at the current hour: its last midnight can
    # fall on its last bar (the walk saw "03 Dec" cut to "03 De").
    hours = 7 * 24
    start = datetime(2026, 12, 3, tzinfo=UTC) - timedelta(hours=hours - 1 - last_midnight)
    svg = ratings_per_hour_svg(start=start, counted=[3] * hours, other=[1] * hours)
    page = browser.new_page(**SIZES["1280x720"])
    page.set_content(f"<!doctype html><html lang=en><body>{svg}</body></html>")
    assert page.locator("svg").evaluate(CUT_TEXTS) == []
    assert page.locator("svg text").count() >= 7 + 3 + 1  # a label for each midnight, the axis, its title
