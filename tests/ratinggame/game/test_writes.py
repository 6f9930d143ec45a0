"""A transaction's writes sent together (ratinggame.game.writes): the same effect as one by one."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from annotators.models import RaterState
from ratinggame.game.writes import Writes
from ratinggame.models import Assignment, CaptionPair, Pool
from tests.ratinggame.journey_helpers import T0, game_pairs, rater

pytestmark = pytest.mark.django_db


def test_updates_and_inserts_answer_rows_updated_and_new_keys_in_one_statement_on_postgresql():
    first, second = game_pairs(2)
    user = rater(RaterState.GAME)
    assignment = Assignment(
        rater=user, pair=second, stage=Pool.GAME, served_at=T0, expires_at=T0 + timedelta(hours=1), holds_slot=True
    )
    writes = Writes()
    writes.update(CaptionPair.objects.filter(pk=first.pk), in_flight=3, primes=[2.5, 4.0])
    writes.update(CaptionPair.objects.filter(pk=second.pk, in_flight=99), in_flight=0)  # matches no row
    writes.insert(assignment)
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        results = writes.run()

    assert results == [1, 0, assignment.pk]
    assert Assignment.objects.get(pk=assignment.pk).served_at == T0 and not assignment._state.adding
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.in_flight, first.primes, second.in_flight) == (3, [2.5, 4.0], 0)
    writes_sent = [query for query in captured.captured_queries if "SAVEPOINT" not in query["sql"]]
    assert len(writes_sent) == (1 if connection.vendor == "postgresql" else 3)
