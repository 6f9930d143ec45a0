"""Approvals and bonuses through Prolific's API (issue 34, items 5 and 6; SPEC 7), against a local
server that speaks Prolific's documented API (``fake_prolific``): every participant is paid exactly
what the pay report says, once, whatever failure the server injects; the pay call, which Prolific
does not make idempotent, is sent once per batch; the token is never logged."""

import logging
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from annotators.models import BonusBatch, BonusState, Participation, SessionOutcome
from annotators.study.ledger import (
    LedgerError,
    batch_cancel,
    batch_create,
    batch_draft,
    batch_pay,
    batch_resolve,
    bonus_run,
    owed,
    submissions_sync,
)
from annotators.study.prolific import Prolific
from annotators.study.report import pay_period, pay_report
from tests.annotators.study.fake_prolific import FakeProlific
from tests.annotators.study.pay_world import DAY, rate
from tests.ratinggame.api_helpers import annotator, researcher

pytestmark = pytest.mark.django_db

P1, P2 = "P1aaaaaaaaaaaaaaaaaaaaaa", "P2bbbbbbbbbbbbbbbbbbbbbb"


@pytest.fixture
def fake(settings, crowd):
    with FakeProlific() as server:
        server.submission(P1)
        server.submission(P2, status="RETURNED")
        server.submission("PXnotoursxxxxxxxxxxxxxxx")
        settings.RATINGGAME_STUDY = {
            **settings.RATINGGAME_STUDY,
            "PROLIFIC_API_TOKEN": server.token,
            "PROLIFIC_STUDY_ID": "study-1",
            "PROLIFIC_API_URL": server.url,
            "PLATFORM_MIN_HOURLY": Decimal("0"),  # no adjustment but where a test asks for one
        }
        yield server


@pytest.fixture
def api(fake):
    client = Prolific(token=fake.token, base_url=fake.url, timeout=0.5, retries=3, sleep=lambda seconds: None)
    yield client
    client.close()


def bonus_due(up_to=DAY) -> dict[str, Decimal]:
    """What the pay report says each Prolific participant earned as a bonus, up to ``up_to``."""
    start, end = pay_period(DAY - timedelta(days=30), up_to)
    rows = pay_report(start=start, end=end).rows
    return {r.participant_id: r.platform_due for r in rows if r.platform == "prolific" and r.platform_due}


def test_a_bonus_run_pays_each_participant_the_report_to_the_cent_once(fake, api, crowd):
    a, _, _ = crowd
    now = timezone.now()
    batch = bonus_run(up_to=DAY, by=researcher(), now=now, api=api)
    assert batch.state == BonusState.PAID and batch.total == Decimal("0.93")
    assert fake.paid_to() == bonus_due() == {P1: Decimal("0.93")}
    # The same day again, or a day before it: nothing owed, nothing sent.
    for up_to in (DAY, DAY - timedelta(days=1)):
        with pytest.raises(LedgerError, match="Nothing is owed"):
            bonus_run(up_to=up_to, by=None, now=now, api=api)
    # A's score grows the next day (77 points: 1.93 in all): the next batch pays only the difference.
    rate(a, 10, 24 * 60, shown_total=77)
    second = bonus_run(up_to=DAY + timedelta(days=1), by=None, now=now, api=api)
    assert second.total == Decimal("1.00")
    assert fake.paid_to() == bonus_due(DAY + timedelta(days=1)) == {P1: Decimal("1.93")}
    assert sum("/pay/" in path for _, path, _ in fake.seen) == 2


@pytest.mark.parametrize("fault", ["429", "401", "late"])
def test_a_pay_call_certainly_not_carried_out_is_sent_again_and_pays_once(fake, api, fault):
    """429 is retried at once; a 401 or a timeout before Prolific acts leaves the batch payable."""
    fake.fault("pay", fault)
    now = timezone.now()
    batch = batch_create(batch_draft(up_to=DAY, by=None, now=now), api)
    if fault == "429":
        batch_pay(batch, api, now=now)
    elif fault == "401":
        with pytest.raises(LedgerError, match="refused the API token"):
            batch_pay(batch, api, now=now)
        assert BonusBatch.objects.get().state == BonusState.CREATED and fake.payments == []
        batch_pay(batch, api, now=now)
    else:
        # A timeout says nothing of what Prolific did: the batch counts as paid, never sent again.
        with pytest.raises(LedgerError, match="counts as paid"):
            batch_pay(batch, api, now=now)
        assert fake.payments == [] and BonusBatch.objects.get().state == BonusState.PAYING
        with pytest.raises(LedgerError, match="already sent"):
            batch_pay(batch, api, now=now)
        assert owed(DAY) == []  # counted as paid meanwhile: no new batch pays it again
        batch_resolve(batch, paid=False, now=now)  # the researcher looked on Prolific: not paid
        batch_pay(BonusBatch.objects.get(), api, now=now)
    assert BonusBatch.objects.get().state == BonusState.PAID
    assert fake.paid_to() == bonus_due()


@pytest.mark.parametrize("fault", ["lost", "dropped", "500"])
def test_a_pay_call_whose_answer_is_lost_is_never_sent_again(fake, api, fault):
    """Prolific paid (``lost``, ``dropped``), or may have (a 500): the ledger counts the batch as
    paid, a second Pay answers "already", the next run owes nothing; the researcher's word ends it."""
    fake.fault("pay", fault)
    now = timezone.now()
    with pytest.raises(LedgerError, match="counts as paid"):
        bonus_run(up_to=DAY, by=None, now=now, api=api)
    batch = BonusBatch.objects.get()
    assert batch.state == BonusState.PAYING and "look at the study's bonuses on Prolific" in batch.error
    for _ in range(2):
        with pytest.raises(LedgerError, match="already sent"):
            bonus_run(up_to=DAY, by=None, now=now, api=api)
    with pytest.raises(LedgerError, match="on its way"):
        batch_draft(up_to=DAY + timedelta(days=3), by=None, now=now)
    carried_out = fault != "500"
    assert fake.paid_to() == (bonus_due() if carried_out else {})
    batch_resolve(batch, paid=carried_out, now=now)
    if not carried_out:
        bonus_run(up_to=DAY, by=None, now=now, api=api)
    assert fake.paid_to() == bonus_due()
    with pytest.raises(LedgerError, match="Nothing is owed"):
        bonus_run(up_to=DAY, by=None, now=now, api=api)


@pytest.mark.parametrize("fault", ["500", "late", "lost", "dropped"])
def test_setting_a_bonus_up_is_repeated_where_it_failed_and_pays_once(fake, api, fault):
    """A set-up pays nothing, so it may go again; a lost one leaves an unpaid bulk bonus on
    Prolific, which costs nothing."""
    fake.fault("bonus", fault)
    bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api)
    assert fake.paid_to() == bonus_due()
    assert len(fake.bonuses) == (2 if fault in ("lost", "dropped") else 1)


def test_a_bonus_prolific_refuses_fails_pays_nothing_and_a_new_batch_may_follow(fake, api):
    fake.fault("bonus", "400")
    with pytest.raises(LedgerError, match="did not set the bonus up"):
        bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api)
    assert BonusBatch.objects.get().state == BonusState.FAILED and fake.payments == []
    bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api)
    assert fake.paid_to() == bonus_due()


def test_a_cancelled_draft_pays_nothing_and_its_lines_stay_owed(fake, api):
    now = timezone.now()
    batch = batch_draft(up_to=DAY, by=None, now=now)
    assert batch_cancel(batch).state == BonusState.CANCELLED
    assert owed(DAY)[0][1] == Decimal("0.93")
    bonus_run(up_to=DAY, by=None, now=now, api=api)
    assert fake.paid_to() == bonus_due()
    with pytest.raises(LedgerError, match="cannot be cancelled"):
        batch_cancel(BonusBatch.objects.get(state=BonusState.PAID))


def test_approval_takes_the_completed_participants_submissions_only(fake, api, crowd):
    a, b, _ = crowd
    fake.fault("list", "500")  # a list may be read again
    first = submissions_sync(api, approve=True, now=timezone.now())
    assert first.approvable == [] and first.not_completed == [P1] and first.unknown == ["PXnotoursxxxxxxxxxxxxxxx"]
    Participation.objects.filter(profile__user=a).update(outcome=SessionOutcome.COMPLETED)
    Participation.objects.filter(profile__user=b).update(outcome=SessionOutcome.SCREENED_OUT)
    preview = submissions_sync(api, approve=False, now=timezone.now())
    assert preview.approvable == [P1] and not preview.approved and fake.approved == []
    done = submissions_sync(api, approve=True, now=timezone.now())
    assert done.approved and fake.approved == [fake.submissions[0]["id"]]
    statuses = dict(Participation.objects.values_list("external_id", "platform_status"))
    assert statuses == {P1: "APPROVED", P2: "RETURNED"}


def test_the_token_is_sent_to_prolific_and_never_logged(fake, api, caplog):
    caplog.set_level(logging.INFO, logger="annotators.study.prolific")
    fake.fault("pay", "429")
    bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api)
    assert {auth for _, _, auth in fake.seen} == {f"Token {fake.token}"}
    assert "prolific POST /api/v1/bulk-bonus-payments/" in caplog.text and "-> 429" in caplog.text
    assert fake.token not in caplog.text


def test_the_command_shows_the_batch_then_pays_it_when_told(fake, capsys):
    call_command("prolific", "batches")
    assert capsys.readouterr().out == "No bonus batches yet.\n"  # an empty ledger says so
    call_command("prolific", "bonus", "--up-to", str(DAY))
    shown = capsys.readouterr().out
    assert f"{P1}  0.93 GBP" in shown and "--yes" in shown and fake.payments == []
    call_command("prolific", "bonus", "--up-to", str(DAY), "--yes")
    assert "paid" in capsys.readouterr().out and fake.paid_to() == bonus_due()
    with pytest.raises(CommandError, match="Nothing is owed"):
        call_command("prolific", "bonus", "--up-to", str(DAY), "--yes")
    call_command("prolific", "batches")
    assert "Paid" in capsys.readouterr().out
    assert fake.token not in capsys.readouterr().out


def test_the_command_says_what_is_missing(settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PROLIFIC_STUDY_ID": "", "PROLIFIC_API_TOKEN": ""}
    with pytest.raises(CommandError, match="RATINGGAME_PROLIFIC_STUDY_ID"):
        call_command("prolific", "sync")


def test_the_pay_page_shows_a_batch_whole_before_it_pays_it_once(client, fake):
    client.force_login(researcher())
    page = client.get(reverse("annotators:pay_report"), {"start": "2030-01-01", "end": "2030-01-01"})
    assert 'id="bonus-draft"' in page.content.decode()
    drafted = client.post(reverse("annotators:bonus_draft"), {"up_to": "2030-01-01"})
    batch = BonusBatch.objects.get()
    assert drafted["Location"] == reverse("annotators:bonus_batch", args=[batch.pk]) and fake.bonuses == {}
    shown = client.get(drafted["Location"]).content.decode()
    assert f"<code>{P1}</code></td><td>0.93 GBP" in shown and 'id="pay-batch"' in shown
    paid = client.post(drafted["Location"], {"action": "pay"}, follow=True).content.decode()
    assert "is paid: 0.93 GBP" in paid and 'id="pay-batch"' not in paid
    again = client.post(drafted["Location"], {"action": "pay"}, follow=True).content.decode()
    assert "already paid" in again
    client.get(drafted["Location"])  # a reload sends nothing
    assert fake.paid_to() == bonus_due() and sum("/pay/" in path for _, path, _ in fake.seen) == 1


def test_the_pay_page_asks_the_researcher_about_a_batch_whose_answer_was_lost(client, fake):
    fake.fault("pay", "dropped")
    client.force_login(researcher())
    client.post(reverse("annotators:bonus_draft"), {"up_to": "2030-01-01"})
    url = reverse("annotators:bonus_batch", args=[BonusBatch.objects.get().pk])
    page = client.post(url, {"action": "pay"}, follow=True).content.decode()
    assert "counts as paid" in page and 'id="batch-unknown"' in page
    client.post(url, {"action": "paid"})
    assert BonusBatch.objects.get().state == BonusState.PAID and fake.paid_to() == bonus_due()


def test_approvals_from_the_pay_page_are_shown_then_done(client, fake, crowd):
    Participation.objects.filter(profile__user=crowd[0]).update(outcome=SessionOutcome.COMPLETED)
    client.force_login(researcher())
    preview = client.post(reverse("annotators:prolific_approve")).content.decode()
    assert f"<li><code>{P1}</code></li>" in preview and fake.approved == []
    client.post(reverse("annotators:prolific_approve"), {"confirm": "1"})
    assert fake.approved == [fake.submissions[0]["id"]]


def test_only_researchers_pay_and_the_page_says_what_to_set(client, crowd, settings):
    client.force_login(annotator())
    for name, args in (("bonus_draft", []), ("prolific_approve", []), ("bonus_batch", [1])):
        assert client.post(reverse(f"annotators:{name}", args=args)).status_code == 403
    client.force_login(researcher())
    page = client.get(reverse("annotators:pay_report"), {"start": "2030-01-01", "end": "2030-01-01"}).content.decode()
    assert 'id="prolific-not-set"' in page and "RATINGGAME_PROLIFIC_API_TOKEN" in page
    refused = client.post(reverse("annotators:bonus_draft"), {"up_to": "9999-12-31"}, follow=True).content.decode()
    assert "Name a day from 2000-01-01" in refused and not BonusBatch.objects.exists()


def test_a_short_paid_study_pays_everyone_the_adjustment_to_the_minimum_with_the_bonus_once(fake, api, settings):
    """The worked example's median pays 38.40 an hour against a minimum of 40: 0.02 more per
    participant brings the median session (45 s, 0.48) to 0.50, 40.00 an hour."""
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PLATFORM_MIN_HOURLY": Decimal("40.00")}
    bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api)
    assert fake.paid_to() == bonus_due() == {P1: Decimal("0.95"), P2: Decimal("0.02")}
    with pytest.raises(LedgerError, match="Nothing is owed"):
        bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api)


def test_a_success_whose_body_is_not_prolifics_json_counts_as_maybe_carried_out(fake, api, monkeypatch):
    """A proxy's page with a 200 after the pay call: the batch stays 'paying', counted as paid."""
    import httpx

    real = api._client.request

    def through_a_proxy(method, url, **kwargs):
        answer = real(method, url, **kwargs)
        if "/pay/" in url:
            return httpx.Response(200, text="<html>ok</html>", request=answer.request)
        return answer

    monkeypatch.setattr(api._client, "request", through_a_proxy)
    with pytest.raises(LedgerError, match="not its JSON"):
        bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api)
    assert BonusBatch.objects.get().state == BonusState.PAYING and fake.paid_to() == bonus_due()


def test_a_batch_pays_only_this_studys_participants(fake, api, crowd):
    Participation.objects.filter(profile__user=crowd[0]).update(study_id="another-study")
    with pytest.raises(LedgerError, match="Nothing is owed"):
        bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api)
    Participation.objects.filter(profile__user=crowd[0]).update(study_id="study-1")
    assert bonus_run(up_to=DAY, by=None, now=timezone.now(), api=api).total == Decimal("0.93")
