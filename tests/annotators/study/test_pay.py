"""Time on task and pay (issue 20, item 4; SPEC 7), on a worked example computed by hand:
active time capped per rating, sessions split by a half-hour gap, base from the hourly rate, bonus
from the points last shown, each half up to the cent and never negative; a withdrawn rater is
still paid; the page, the API and the command agree; the CSVs have their shapes."""

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotators.models import Participation
from annotators.study.pay import Pay, median_pay, money, pay_for, session_seconds
from annotators.study.pay_files import COLUMNS, adjustment_csv, full_csv, prolific_bonus_csv
from annotators.study.report import PayPeriodError, pay_period, pay_report
from tests.annotators.study.pay_world import DAY
from tests.ratinggame.api_helpers import admin, annotator, error_of, researcher, token_client
from tests.ratinggame.journey_helpers import T0

pytestmark = pytest.mark.django_db


def test_the_arithmetic_of_one_rater():
    # 226 s at 9.00 an hour is 0.565: half up 0.57 (half-even would say 0.56); 37 x 0.025 = 0.925 -> 0.93.
    assert pay_for(active_seconds=226, points=37, hourly=Decimal("9.00"), per_point=Decimal("0.025")) == Pay(
        Decimal("0.57"), Decimal("0.93")
    )
    assert pay_for(active_seconds=80, points=-5, hourly=Decimal("9"), per_point=Decimal("1")) == Pay(
        Decimal("0.20"), Decimal("0.00")
    )
    assert money(Decimal("-3.2")) == Decimal("0.00")


def test_sessions_split_at_a_half_hour_gap():
    rows = [
        (T0, T0 + timedelta(seconds=10), 10.0),
        (T0 + timedelta(minutes=30), T0 + timedelta(minutes=30, seconds=5), 5.0),  # 29:50 after: same session
        (T0 + timedelta(minutes=61), T0 + timedelta(minutes=61, seconds=7), 7.0),  # 30:55 after: a new one
    ]
    assert session_seconds(rows) == [15.0, 7.0]


def test_the_report_of_the_worked_example(crowd):
    a, b, c = crowd
    start, end = pay_period(DAY, DAY)
    report = pay_report(start=start, end=end)
    rows = {row.username: row for row in report.rows}
    assert set(rows) == {a.username, f"withdrawn-{b.pk}", c.username}
    row_a = rows[a.username]
    assert row_a.active_seconds == 20 + 60 + 10 + 30 + 45 + 60 + 1 == 226
    assert (row_a.sessions, row_a.ratings, row_a.counted, row_a.excluded, row_a.points) == (2, 7, 3, 1, 37)
    assert (row_a.base, row_a.bonus, row_a.amount) == (Decimal("0.57"), Decimal("0.93"), Decimal("1.50"))
    row_b = rows[f"withdrawn-{b.pk}"]
    assert row_b.withdrawn and row_b.participant_id == "P2bbbbbbbbbbbbbbbbbbbbbb"
    assert (row_b.active_seconds, row_b.counted, row_b.excluded, row_b.points) == (80, 0, 2, -5)
    assert (row_b.base, row_b.bonus, row_b.amount) == (Decimal("0.20"), Decimal("0.00"), Decimal("0.20"))
    row_c = rows[c.username]
    # 10 s: 0.025 -> 0.03; 4 points: 0.10.
    assert (row_c.platform, row_c.amount) == ("", Decimal("0.13"))
    assert report.total == Decimal("1.83")
    # Sessions 225, 1 (A), 80 (B), 10 (C): median 45 s. Pay per session 0.75, 0.75, 0.20, 0.13: median
    # 0.475 -> 0.48; 0.48 over 45 s is 38.40 an hour, under the minimum of 40.
    assert report.median.median_session_seconds == 45
    assert report.median.median_pay_per_session == Decimal("0.48")
    assert report.median.hourly_at_median == Decimal("38.40")
    assert report.median.under_minimum
    # 40 an hour over 45 s is 0.50: 0.02 more per participant, each who came through a platform link.
    assert report.median.adjustment == Decimal("0.02")
    assert {row.username: row.adjustment for row in report.rows} == {
        a.username: Decimal("0.02"),
        f"withdrawn-{b.pk}": Decimal("0.02"),
        c.username: Decimal("0"),
    }


def test_the_prolific_csv_has_one_line_per_prolific_participant_with_a_bonus_and_only_the_bonus(crowd, settings):
    """SPEC 7: the bonus file carries what Prolific pays on top of the study's reward: the points'
    bonus (A: 0.93; B earned no bonus: no line); the base too only where the study says so."""
    report = pay_report(start=pay_period(DAY, DAY)[0], end=pay_period(DAY, DAY)[1])
    text = prolific_bonus_csv(report)
    assert text == "P1aaaaaaaaaaaaaaaaaaaaaa,0.93\n"
    assert all(len(line) == 2 for line in csv.reader(io.StringIO(text)))
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PAY_BASE_AS_BONUS": True}
    report = pay_report(start=pay_period(DAY, DAY)[0], end=pay_period(DAY, DAY)[1])
    assert prolific_bonus_csv(report) == "P1aaaaaaaaaaaaaaaaaaaaaa,1.50\nP2bbbbbbbbbbbbbbbbbbbbbb,0.20\n"


def test_the_full_csv_has_every_column(crowd):
    report = pay_report(start=pay_period(DAY, DAY)[0], end=pay_period(DAY, DAY)[1])
    rows = list(csv.DictReader(io.StringIO(full_csv(report))))
    assert tuple(rows[0]) == COLUMNS and len(rows) == 3
    first = rows[0]
    assert (first["participant_id"], first["active_seconds"], first["amount"], first["currency"]) == (
        "P1aaaaaaaaaaaaaaaaaaaaaa",
        "226.0",
        "1.50",
        "GBP",
    )


def test_an_inverted_period_is_refused_everywhere(client, crowd):
    with pytest.raises(PayPeriodError):
        pay_period(DAY, DAY - timedelta(days=1))
    answer = token_client(researcher()).get("/api/study/pay", {"start": "2030-01-02", "end": "2030-01-01"})
    assert answer.status_code == 400 and "swap the dates" in error_of(answer)["message"]
    client.force_login(researcher())
    page = client.get(reverse("annotators:pay_report"), {"start": "2030-01-02", "end": "2030-01-01"})
    assert page.status_code == 400 and "swap the dates" in page.content.decode()
    with pytest.raises(CommandError, match="swap the dates"):
        call_command("pay_report", "--start", "2030-01-02", "--end", "2030-01-01")
    with pytest.raises(CommandError, match="YYYY-MM-DD"):
        call_command("pay_report", "--start", "1/1/2030", "--end", "2030-01-01")


@pytest.mark.parametrize("start,end", [("2030-01-01", "9999-12-31"), ("0001-01-01", "2030-01-01")])
def test_a_period_beyond_the_days_a_study_can_run_is_refused_everywhere_never_a_500(client, crowd, start, end):
    answer = token_client(researcher()).get("/api/study/pay", {"start": start, "end": end})
    assert answer.status_code == 400 and "outside the days a pay period may name" in error_of(answer)["message"]
    client.force_login(researcher())
    page = client.get(reverse("annotators:pay_report"), {"start": start, "end": end, "download": "csv"})
    assert page.status_code == 400 and "outside the days a pay period may name" in page.content.decode()
    with pytest.raises(CommandError, match="outside the days"):
        call_command("pay_report", "--start", start, "--end", end)


def test_the_pay_files_write_text_a_spreadsheet_would_run_as_plain_text(crowd, settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PAY_BASE_AS_BONUS": True}  # B's line: its base
    _a, b, c = crowd
    c.username = "+1+1"
    c.save(update_fields=["username"])
    Participation.objects.filter(profile__user=b).update(external_id="-A1-B2")
    report = pay_report(start=pay_period(DAY, DAY)[0], end=pay_period(DAY, DAY)[1])
    rows = {row["profile_id"]: row for row in csv.DictReader(io.StringIO(full_csv(report)))}
    by_user = {row["username"]: row for row in rows.values()}
    assert "'+1+1" in by_user and by_user["'+1+1"]["bonus"] == "0.10"
    assert {row["participant_id"] for row in rows.values()} >= {"'-A1-B2", "P1aaaaaaaaaaaaaaaaaaaaaa"}
    assert "'-A1-B2,0.20\n" in prolific_bonus_csv(report)


def test_the_page_the_api_and_the_command_give_the_same_figures(client, crowd, capsys):
    params = {"start": "2030-01-01", "end": "2030-01-01"}
    client.force_login(researcher())
    page = client.get(reverse("annotators:pay_report"), params).content.decode()
    assert 'id="pay-total">1.83 GBP<' in page and 'id="under-minimum"' in page
    assert client.get(reverse("annotators:pay_report"), {**params, "download": "prolific"}).content.decode() == (
        "P1aaaaaaaaaaaaaaaaaaaaaa,0.93\n"
    )
    body = token_client(researcher()).get("/api/study/pay", params).json()
    assert body["total"] == "1.83" and body["hourly_at_median"] == "38.40" and len(body["rows"]) == 3
    api_csv = token_client(researcher()).get("/api/study/pay", {**params, "download": "csv"})
    assert api_csv["Content-Type"].startswith("text/csv") and api_csv.content.decode().startswith("profile_id,")
    call_command("pay_report", "--start", "2030-01-01", "--end", "2030-01-01")
    assert "total 1.83 GBP for 3 rater(s)" in capsys.readouterr().out


def test_the_pay_page_reads_its_period_and_outcomes_one_way_and_says_what_the_bonus_file_holds(client, crowd, settings):
    a, _, _ = crowd
    Participation.objects.filter(profile__user=a).update(outcome="screened_out")
    client.force_login(researcher())
    page = client.get(reverse("annotators:pay_report"), {"start": "2030-01-01", "end": "2030-01-01"}).content.decode()
    assert 'id="period-heading">1 Jan 2030 to 1 Jan 2030 (UTC, both days included)<' in page
    assert "· screened out<" in page and "screenedout" not in page
    assert 'id="base-in-bonus"' not in page and "bonus column only (Prolific's reward pays the base)" in page
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PAY_BASE_AS_BONUS": True}
    page = client.get(reverse("annotators:pay_report"), {"start": "2030-01-01", "end": "2030-01-02"}).content.decode()
    assert "1 Jan 2030 to 2 Jan 2030 (UTC, both days included)" in page and 'id="base-in-bonus"' in page


def test_only_researchers_and_staff_see_pay(client, crowd):
    client.force_login(annotator())
    assert client.get(reverse("annotators:pay_report")).status_code == 403
    assert (
        token_client(annotator()).get("/api/study/pay", {"start": "2030-01-01", "end": "2030-01-01"}).status_code == 403
    )
    client.force_login(admin())
    assert client.get(reverse("annotators:pay_report")).status_code == 200


def test_median_pay_with_no_session_says_nothing():
    empty = median_pay([], [], Decimal("8"))
    assert (empty.median_session_seconds, empty.hourly_at_median, empty.under_minimum) == (None, None, False)


def test_the_adjustment_file_has_one_line_per_prolific_participant_and_the_reward_counts(crowd, settings):
    report = pay_report(start=pay_period(DAY, DAY)[0], end=pay_period(DAY, DAY)[1])
    assert adjustment_csv(report) == "P1aaaaaaaaaaaaaaaaaaaaaa,0.02\nP2bbbbbbbbbbbbbbbbbbbbbb,0.02\n"
    # With Prolific's reward set, a Prolific participant receives the reward and the bonus (the base
    # is the reward's part): a reward of 1.00 gives A 1.93 over two sessions (0.97 each), B 1.00,
    # C (sign-up) its 0.13: the median pay 0.97 over 45 s is 77.60 an hour, over the minimum.
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PLATFORM_REWARD": Decimal("1.00")}
    report = pay_report(start=pay_period(DAY, DAY)[0], end=pay_period(DAY, DAY)[1])
    assert report.median.median_pay_per_session == Decimal("0.97")
    assert (report.median.hourly_at_median, report.median.under_minimum) == (Decimal("77.60"), False)
    assert report.median.adjustment == 0 and adjustment_csv(report) == ""
    # A reward of 0.10: A 1.03 (0.52 a session), B 0.10, C 0.13: the median 0.325 rounds to 0.33,
    # 26.40 an hour; 40 an hour over 45 s is 0.50, so 0.17 more each. (Counting the base as well,
    # 0.55 and 44.00, would have paid no adjustment: the base is the reward's part.)
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PLATFORM_REWARD": Decimal("0.10")}
    report = pay_report(start=pay_period(DAY, DAY)[0], end=pay_period(DAY, DAY)[1])
    assert (report.median.median_pay_per_session, report.median.hourly_at_median) == (Decimal("0.33"), Decimal("26.40"))
    assert report.median.adjustment == Decimal("0.17")


def test_median_pay_rounds_the_adjustment_up_so_the_median_reaches_the_minimum():
    # 100 s at a minimum of 8.00 an hour is 0.2222...: from 0.10, 0.1223 rounds up to 0.13, not down to 0.12.
    median = median_pay([100.0], [Decimal("0.10")], Decimal("8.00"))
    assert median.under_minimum and median.adjustment == Decimal("0.13")
    after = median_pay([100.0], [Decimal("0.10") + median.adjustment], Decimal("8.00"))
    assert not after.under_minimum and after.adjustment == 0
