"""Two "Pay" presses of one bonus batch at once, on PostgreSQL: one pay call reaches Prolific (the
conditional claim decides; the other answers "already"), and two drafts at once make one batch (the
one-open-batch constraint decides)."""

import pytest
from django.utils import timezone

from annotators.models import BonusBatch, BonusState
from annotators.study.ledger import LedgerError, batch_create, batch_draft, batch_pay
from annotators.study.prolific import Prolific
from tests.annotators.study.fake_prolific import FakeProlific
from tests.annotators.study.pay_world import DAY
from tests.annotators.study.test_prolific import P1, P2
from tests.ratinggame.game.test_concurrency import run_at_once

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PRESSES = 6


@pytest.fixture
def fake(settings, crowd):
    with FakeProlific() as server:
        server.submission(P1)
        server.submission(P2)
        settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PROLIFIC_STUDY_ID": "study-1"}
        yield server


def api_of(fake: FakeProlific) -> Prolific:
    return Prolific(token=fake.token, base_url=fake.url, timeout=5, sleep=lambda seconds: None)


def test_presses_of_pay_at_once_send_one_pay_call(require_postgres, fake):
    batch = batch_create(batch_draft(up_to=DAY, by=None, now=timezone.now()), api_of(fake))
    results = run_at_once(lambda index: batch_pay(batch, api_of(fake), now=timezone.now()), PRESSES)
    refused = [result for result in results if isinstance(result, LedgerError)]
    assert len(refused) == PRESSES - 1 and all("already" in str(error) for error in refused), results
    assert sum("/pay/" in path for _, path, _ in fake.seen) == 1
    lines = batch.lines.select_related("participation")
    assert sorted(fake.payments) == sorted((line.participation.external_id, line.amount) for line in lines)  # once
    assert BonusBatch.objects.get().state == BonusState.PAID


def test_drafts_at_once_make_one_batch(require_postgres, fake):
    results = run_at_once(lambda index: batch_draft(up_to=DAY, by=None, now=timezone.now()), PRESSES)
    made = [result for result in results if isinstance(result, BonusBatch)]
    assert len(made) == 1 and BonusBatch.objects.count() == 1, results
    assert all(isinstance(result, LedgerError) for result in results if result not in made)
