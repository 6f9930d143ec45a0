"""Disputes under parallel requests, on PostgreSQL with real threads (issue 15, part 2).

Twenty "dispute this score" posts at once on each of six ratings file one dispute per rating
(the database's constraint decides; the others get a clear refusal, not a 500), and staff who
then accept every dispute, four at once on each, restore each rating's lost points exactly once.
"""

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from annotators.models import Dispute, DisputeStatus, RaterProfile, RaterState
from annotators.staff.services import ActionRefused, dispute_resolve
from ratinggame.models import Pool
from tests.factories import CaptionPairFactory, UserFactory, rating_record
from tests.ratinggame.game.test_concurrency import run_at_once
from tests.ratinggame.journey_helpers import rater

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres(require_postgres):
    """Every test here runs on PostgreSQL."""


def test_parallel_disputes_file_one_per_rating_and_accepting_restores_once():
    costs = [1, 2, 2, 1, 2, 1]
    raters = [rater(RaterState.GAME, window_count=20, game_score=10) for _ in costs]
    ratings = [
        rating_record(
            rater=user, pair=CaptionPairFactory(pool=Pool.GAME), value=1, points=-cost, stage="game", reference=3
        )
        for user, cost in zip(raters, costs, strict=True)
    ]

    def post(number: int) -> int:
        client = Client()
        client.force_login(raters[number])
        response = client.post(reverse("dispute", args=[ratings[number].assignment_id]), {"comment": "Unfair."})
        return response.status_code

    # Twenty at once on each rating (one rating after the other: a connection per thread).
    statuses = [status for number in range(len(ratings)) for status in run_at_once(lambda _, n=number: post(n), 20)]

    assert not [status for status in statuses if isinstance(status, Exception)], statuses
    # Post/redirect/get: filed, or back to the feedback page with "already disputed".
    assert set(statuses) == {302}
    assert sorted(Dispute.objects.values_list("rating_id", flat=True)) == sorted(r.pk for r in ratings)

    staff = [UserFactory(is_staff=True) for _ in range(4)]
    disputes = list(Dispute.objects.all())

    def accept(index: int) -> str:
        dispute = disputes[index // len(staff)]
        try:
            dispute_resolve(dispute=dispute, actor=staff[index % len(staff)], accept=True, note="Fair.")
        except ActionRefused:
            return "refused"
        return "accepted"

    outcomes = run_at_once(accept, len(disputes) * len(staff))

    assert sorted(outcomes) == sorted(["accepted"] * len(disputes) + ["refused"] * len(disputes) * 3), outcomes
    for user, cost in zip(raters, costs, strict=True):
        assert RaterProfile.objects.get(user=user).game_score == 10 + cost
    assert set(Dispute.objects.values_list("status", flat=True)) == {DisputeStatus.ACCEPTED}
    assert sorted(Dispute.objects.values_list("points_restored", flat=True)) == sorted(costs)


def test_parallel_filing_through_the_service_is_refused_with_a_reason():
    user = rater(RaterState.GAME, window_count=20)
    rating = rating_record(
        rater=user, pair=CaptionPairFactory(pool=Pool.GAME), value=1, points=-2, stage="game", reference=3
    )
    from annotators.services import dispute_file

    def file(index: int) -> str:
        try:
            dispute_file(rater=user, rating_id=rating.pk, comment=f"Attempt {index}.")
        except ValidationError as refused:
            return refused.code
        return "filed"

    outcomes = run_at_once(file, 20)
    assert sorted(outcomes) == ["duplicate"] * 19 + ["filed"]
    assert Dispute.objects.count() == 1
