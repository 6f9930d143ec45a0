"""First visits of one participant id at once, on PostgreSQL: one rater, whatever the race (the
unique constraint on platform and external id decides; the loser resumes the winner's rater)."""

import pytest
from django.utils import timezone

from annotators.models import Participation, RaterProfile
from annotators.study.entry import EntryLink
from annotators.study.services import participant_enter
from tests.ratinggame.game.test_concurrency import run_at_once

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

VISITS = 8


def test_simultaneous_first_visits_of_one_id_make_one_rater(require_postgres):
    link = EntryLink(platform="prolific", external_id="5" * 24, study_id="s", session_id="t")
    results = run_at_once(lambda index: participant_enter(link=link, now=timezone.now()), VISITS)
    errors = [result for result in results if isinstance(result, Exception)]
    assert not errors, errors
    assert len({user.pk for user, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert Participation.objects.count() == 1 and RaterProfile.objects.count() == 1
