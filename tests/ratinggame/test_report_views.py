"""Report a problem from the rating screen, and the staff queue that answers reports."""

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from annotators.models import RaterState
from ratinggame.models import Assignment, CaptionPair, PairReport, Rating
from tests.factories import UserFactory
from tests.ratinggame.journey_helpers import game_pairs, rater, tutorial_pairs

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _rules(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "REPORTS_TO_WITHDRAW": 1, "SKIPS_PER_HOUR": 10}


def open_assignment(client, stage: str) -> int:
    html = client.get(reverse("rate", args=[stage])).content.decode()
    assert 'id="report-form"' in html
    return int(re.search(r'name="assignment" value="(\d+)"', html).group(1))


def test_a_game_report_skips_to_the_next_pair_and_goes_to_the_staff_queue(client):
    pairs = game_pairs(2)
    user = rater(RaterState.GAME)
    client.force_login(user)
    assignment_id = open_assignment(client, "game")
    reported = Assignment.objects.get(pk=assignment_id).pair  # each rater meets the pairs in an order of their own
    (other,) = [pair for pair in pairs if pair != reported]
    response = client.post(
        reverse("pair_report"), {"assignment": assignment_id, "reason": "other", "text": "The caption is in Latin."}
    )
    assert response["Location"] == reverse("rate", args=["game"])
    page = client.get(response["Location"]).content.decode()
    assert "the pair is reported and skipped (no rating, no points); staff will look at it." in page
    # Not a second skip limit beside "Skip this pair"'s: the reports' own, named only when near.
    assert "this hour" not in page and "You can skip" not in page
    assert other.caption in page and reported.caption not in page
    assert not Rating.objects.exists()

    staff = UserFactory(is_staff=True)
    client.force_login(staff)
    queue = client.get(reverse("pair_reports")).content.decode()
    assert reported.caption in queue and "The caption is in Latin." in queue and "out of play since" in queue
    url = reverse("pair_reports_resolve", args=[reported.pk])
    assert client.post(url, {"decision": "back", "note": ""}).status_code == 400
    assert client.post(url, {"decision": "back", "note": "Latin is fine here."})["Location"] == reverse("pair_reports")
    assert CaptionPair.objects.get(pk=reported.pk).withdrawn_at is None
    answered = client.get(reverse("pair_reports") + "?status=resolved").content.decode()
    assert "Put back in play" in answered and "Latin is fine here." in answered


def test_a_tutorial_report_keeps_the_pair_on_screen_and_says_why(client):
    (pair,) = tutorial_pairs([3])
    client.force_login(rater(RaterState.TUTORIAL))
    assignment_id = open_assignment(client, "tutorial")
    response = client.post(reverse("pair_report"), {"assignment": assignment_id, "reason": "broken_image"})
    page = client.get(response["Location"]).content.decode()
    assert "Tutorial and probation pairs cannot be skipped" in page
    assert pair.caption in page
    assert PairReport.objects.get().skipped is False


def test_a_report_without_a_reason_is_refused_with_a_message(client):
    game_pairs(1)
    client.force_login(rater(RaterState.GAME))
    assignment_id = open_assignment(client, "game")
    response = client.post(reverse("pair_report"), {"assignment": assignment_id, "reason": ""})
    assert "The report was not sent" in client.get(response["Location"]).content.decode()
    response = client.post(reverse("pair_report"), {"assignment": assignment_id, "reason": "other"})
    assert "Say in a few words" in client.get(response["Location"]).content.decode()
    assert not PairReport.objects.exists()


def test_a_refused_report_comes_back_open_with_the_reason_and_details_given(client):
    (pair,) = game_pairs(1)
    client.force_login(rater(RaterState.GAME))
    assignment_id = open_assignment(client, "game")
    response = client.post(reverse("pair_report"), {"assignment": assignment_id, "reason": "other", "text": "  "})
    page = client.get(response["Location"]).content.decode()
    details = re.search(r'<details class="report" id="report"( open)?>(.*?)</details>', page, re.S)
    assert details.group(1) == " open"
    # The message is beside the form, inside the open details, not at the top of the page.
    assert "The report was not sent. Say in a few words what is wrong with the pair." in details.group(2)
    assert 'class="messages"' not in page
    assert '<option value="other" selected>' in details.group(2)
    assert pair.caption in page  # the same pair, still open

    # Without a reason, the details typed are kept, and the reason is asked for.
    response = client.post(reverse("pair_report"), {"assignment": assignment_id, "reason": "", "text": "Blurry"})
    page = client.get(response["Location"]).content.decode()
    assert "The report was not sent. Choose what is wrong with the pair." in page
    assert re.search(r'<input type="text" id="report-text"[^>]* value="Blurry"', page)
    assert " selected>" not in page
    # Read once: the next visit shows the form closed and empty again.
    page = client.get(response["Location"]).content.decode()
    assert '<details class="report" id="report">' in page and "The report was not sent" not in page
    assert not PairReport.objects.exists()


def test_a_report_refused_because_the_pair_has_gone_says_so_above_the_next_pair(client):
    pairs = game_pairs(2)
    user = rater(RaterState.GAME)
    client.force_login(user)
    assignment_id = open_assignment(client, "game")
    Assignment.objects.filter(pk=assignment_id).update(expires_at=timezone.now())
    gone = Assignment.objects.get(pk=assignment_id).pair
    (now_open,) = [pair for pair in pairs if pair != gone]
    response = client.post(reverse("pair_report"), {"assignment": assignment_id, "reason": "offensive"})
    page = client.get(response["Location"]).content.decode()
    assert "This pair is no longer open: the report was not filed." in page.split('id="rating-form"')[0]
    assert now_open.caption in page and gone.caption not in page
    assert '<details class="report" id="report">' in page  # the pair on screen now has no report of its own
    assert not PairReport.objects.exists()


def test_the_resolve_page_reads_a_pairs_reports_in_a_fixed_number_of_queries(client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from ratinggame.models import ReportReason

    one, many = game_pairs(2)
    for pair, count in ((one, 1), (many, 5)):
        for _ in range(count):
            PairReport.objects.create(
                pair=pair, rater=UserFactory(), reason=ReportReason.BROKEN_IMAGE, created_at=timezone.now()
            )
    client.force_login(UserFactory(is_staff=True))
    counts = []
    for pair in (one, many):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("pair_reports_resolve", args=[pair.pk])).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_the_reports_hourly_limit_is_named_when_it_is_near_and_when_it_is_reached(client, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "SKIPS_PER_HOUR": 2, "REPORTS_TO_WITHDRAW": 5}
    game_pairs(4)
    client.force_login(rater(RaterState.GAME))
    pages = []
    for _ in range(3):
        assignment_id = open_assignment(client, "game")
        response = client.post(reverse("pair_report"), {"assignment": assignment_id, "reason": "other", "text": "x"})
        pages.append(client.get(response["Location"]).content.decode())
    assert "You can report and skip 1 more pair this hour." in pages[0]
    assert "That was the last pair you may report and skip this hour." in pages[1]
    assert "You have reported and skipped as many pairs as you may in an hour, so this one stays" in pages[2]
