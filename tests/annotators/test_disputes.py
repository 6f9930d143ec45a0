"""Disputes on ratings that a failed qualification window excluded (SPEC section 2.3).

Such a rating no longer counts and its points went with the game-score reset: it cannot be
disputed, and a dispute filed before the window failed cannot be accepted (only rejected).
"""

import re
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from annotators.journey import WINDOW_FAILED_REASON
from annotators.models import Dispute, DisputeStatus, RaterAction, RaterProfile, RaterState
from annotators.services import dispute_file
from annotators.staff.services import ActionRefused, dispute_resolve
from ratinggame import game
from ratinggame.models import Pool, Rating
from tests.factories import CaptionPairFactory, ProbationPairFactory, UserFactory, rating_record
from tests.ratinggame.journey_helpers import seed_ratings

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_wait(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}


def rater_in_the_window(*, window_count: int = 19, window_points: int = 20, game_score: int = 20):
    """A game rater inside the qualification window (19 ratings worth 20 points: the next closes it)."""
    user = UserFactory()
    RaterProfile.objects.create(
        user=user,
        state=RaterState.GAME,
        consent_at=timezone.now() - timedelta(days=1),
        game_entered_at=timezone.now() - timedelta(hours=1),
        window_count=window_count,
        window_points=window_points,
        game_score=game_score,
    )
    return user


def fail_the_window(user) -> Rating:
    """Rate a fresh game pair as its first rater (0 points): 20 of 25 points, the window fails."""
    CaptionPairFactory(pool=Pool.GAME)
    ProbationPairFactory(expert_rating=3)
    served = game.pair_serve(rater=user)
    feedback = game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3)
    rating = Rating.objects.get(pk=feedback.rating_id)
    assert rating.excluded and rating.excluded_reason == WINDOW_FAILED_REASON
    assert RaterProfile.objects.get(user=user).state == RaterState.PROBATION
    return rating


def test_filing_a_dispute_on_an_excluded_rating_is_refused_with_a_reason():
    user = rater_in_the_window()
    rating = fail_the_window(user)
    with pytest.raises(ValidationError) as refused:
        dispute_file(rater=user, rating_id=rating.pk, comment="The consensus was wrong.")
    assert refused.value.code == "excluded"
    assert "can no longer be disputed" in refused.value.message
    assert WINDOW_FAILED_REASON in refused.value.message
    assert not Dispute.objects.exists()


def test_the_feedback_page_does_not_offer_the_dispute_and_refuses_it_with_the_reason(client):
    user = rater_in_the_window()
    rating = fail_the_window(user)
    client.force_login(user)
    feedback = reverse("feedback", args=[rating.assignment_id])
    assert "Dispute this score" not in client.get(feedback).content.decode()
    response = client.post(reverse("dispute", args=[rating.assignment_id]), {"comment": "Unfair."})
    assert response["Location"] == feedback
    assert "can no longer be disputed" in client.get(feedback).content.decode()
    assert not Dispute.objects.exists()


def test_a_counted_game_rating_can_still_be_disputed():
    user = rater_in_the_window()
    pair = CaptionPairFactory(pool=Pool.GAME)
    rating = rating_record(rater=user, pair=pair, value=2, points=-1, stage="game", reference=4)
    assert dispute_file(rater=user, rating_id=rating.pk, comment="Look again.").status == DisputeStatus.OPEN


def test_a_dispute_whose_rating_was_excluded_later_cannot_be_accepted(client):
    # One rating before the window closes: a rating that costs 2 points, disputed at once.
    user = rater_in_the_window(window_count=18, window_points=20, game_score=18)
    pair = CaptionPairFactory(pool=Pool.GAME)
    seed_ratings(pair, [5, 5])
    served = game.pair_serve(rater=user)
    assert served.pair_id == pair.pk
    feedback = game.rating_submit(rater=user, assignment_id=served.assignment_id, value=1)
    assert feedback.points == -2
    dispute = dispute_file(rater=user, rating_id=feedback.rating_id, comment="The sofa is red.")
    # The window then fails (18 of 25 points): its ratings, the disputed one too, are excluded.
    fail_the_window(user)
    rating = Rating.objects.get(pk=feedback.rating_id)
    assert rating.excluded
    assert RaterProfile.objects.get(user=user).game_score == 0

    staff = UserFactory(is_staff=True)
    logged = list(RaterAction.objects.values_list("action", flat=True))
    assert logged == ["window_failed"]  # the window's end is in the staff log
    with pytest.raises(ActionRefused, match=r"was excluded .* cannot be accepted"):
        dispute_resolve(dispute=dispute, actor=staff, accept=True, note="Red indeed.")
    dispute.refresh_from_db()
    assert dispute.status == DisputeStatus.OPEN
    assert RaterProfile.objects.get(user=user).game_score == 0
    assert list(RaterAction.objects.values_list("action", flat=True)) == logged  # the refusal logged nothing

    # The staff page says so, shows the exclusion, and the dispute can still be rejected.
    client.force_login(staff)
    url = reverse("staff:dispute_resolve", args=[dispute.pk])
    page = client.get(url).content.decode()
    assert "The rating no longer counts" in page
    # Neither its page nor the queue offers "Accept"; "Reject" is there, chosen already.
    queue = client.get(reverse("staff:disputes")).content.decode()
    for shown in (page, queue):
        assert 'value="accept"' not in shown and "Accept: restore the points" not in shown
        assert re.search(r'value="reject"[^>]*checked', shown)
    accepted = client.post(url, {"decision": "accept", "note": "Red indeed."})
    assert accepted.status_code == 400
    assert "cannot be accepted" in accepted.content.decode()
    rejected = client.post(url, {"decision": "reject", "note": "Excluded with its window."})
    assert rejected.status_code == 302
    dispute.refresh_from_db()
    assert (dispute.status, dispute.points_restored) == (DisputeStatus.REJECTED, 0)
    assert RaterProfile.objects.get(user=user).game_score == 0
    assert RaterAction.objects.exclude(action="window_failed").get().action == "dispute_reject"


# --- One dispute per rating; restoring is bounded by what the rating lost (issue 15) ---------


def test_a_rating_is_disputed_once_whatever_the_first_disputes_outcome():
    user = rater_in_the_window(window_count=20)
    pair = CaptionPairFactory(pool=Pool.GAME)
    rating = rating_record(rater=user, pair=pair, value=1, points=-2, stage="game", reference=4)
    first = dispute_file(rater=user, rating_id=rating.pk, comment="Look again.")
    with pytest.raises(ValidationError, match="disputed this score already: it is waiting for an admin"):
        dispute_file(rater=user, rating_id=rating.pk, comment="Again.")
    dispute_resolve(dispute=first, actor=UserFactory(is_staff=True), accept=True, note="Fair.")
    with pytest.raises(ValidationError, match="disputed this score already: the dispute was accepted"):
        dispute_file(rater=user, rating_id=rating.pk, comment="And once more, for 2 more points.")
    assert Dispute.objects.filter(rating=rating).count() == 1
    assert RaterProfile.objects.get(user=user).game_score == 20 + 2


@pytest.mark.parametrize(("points", "restored_before", "restorable"), [(-2, 0, 2), (-2, 2, 0), (-2, 5, 0), (1, 0, 0)])
def test_restoring_gives_back_what_the_rating_lost_less_what_was_restored(points, restored_before, restorable):
    from annotators.staff.services import dispute_rescore

    user = rater_in_the_window(window_count=20)
    rating = rating_record(rater=user, pair=CaptionPairFactory(pool=Pool.GAME), value=1, points=points, stage="game")
    Dispute.objects.create(rating=rating, comment="x", status=DisputeStatus.ACCEPTED, points_restored=restored_before)
    assert dispute_rescore(rating).owed == restorable


@pytest.mark.django_db(transaction=True)
def test_the_migration_merges_duplicate_disputes_and_keeps_what_they_restored():
    """Disputes filed twice before the constraint: one stays, with every comment and the total restored."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    # The pair and its rating are made with today's models, then the schema goes back.
    pair = CaptionPairFactory(pool=Pool.GAME)
    rating = rating_record(rater=UserFactory(), pair=pair, value=1, points=-2, stage="game")
    executor = MigrationExecutor(connection)
    before = [("annotators", "0004_competency_rater_quality"), ("ratinggame", "0004_integrity")]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    old_dispute = old.get_model("annotators", "Dispute")
    old_dispute.objects.create(rating_id=rating.pk, comment="first", status="accepted", points_restored=2)
    old_dispute.objects.create(rating_id=rating.pk, comment="second", status="accepted", points_restored=2)
    old_dispute.objects.create(rating_id=rating.pk, comment="first", status="open")

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    from annotators.staff.services import dispute_rescore

    (kept,) = Dispute.objects.filter(rating_id=rating.pk)
    assert (kept.status, kept.comment, kept.points_restored) == (DisputeStatus.ACCEPTED, "first\n\nsecond", 4)
    assert dispute_rescore(Rating.objects.get(pk=rating.pk)).owed == 0


# --- Accepting re-scores the rating against the other raters now (issue 10) ------------------


def test_accepting_restores_what_a_re_score_against_the_other_raters_now_adds():
    """Scored 0 against a consensus of 4 (from the model's primes); since then two raters rated
    the pair 2 like it, and a third rating, 5, was excluded by a failed window. Against the
    others now (prev = [2, 2], n = 3, v = 4/3, d = 0) the rating scores 2: accepting restores 2."""
    user = rater_in_the_window(window_count=20, game_score=20)
    pair = CaptionPairFactory(pool=Pool.GAME)
    rating = rating_record(rater=user, pair=pair, value=2, points=0, stage="game", reference=4)
    for value in (2, 2):
        rating_record(rater=UserFactory(), pair=pair, value=value, stage="game", reference=3)
    rating_record(rater=UserFactory(), pair=pair, value=5, stage="game", reference=2, excluded=True)
    dispute = dispute_file(rater=user, rating_id=rating.pk, comment="The model's 4 was wrong.")

    from annotators.staff.services import dispute_rescore

    rescore = dispute_rescore(rating)
    assert (rescore.consensus, rescore.others, rescore.points, rescore.owed) == (2, 2, 2, 2)
    page = staff_page_of_disputes()
    assert "+2 against the consensus 2 of 2 other ratings" in page and "Accepting restores 2 points" in page

    dispute_resolve(dispute=dispute, actor=UserFactory(is_staff=True), accept=True, note="Fair.")
    dispute.refresh_from_db()
    assert dispute.points_restored == 2
    assert RaterProfile.objects.get(user=user).game_score == 22
    assert "re-scored +2 against the consensus 2 of 2 other rating(s)" in RaterAction.objects.get().reason
    # The rating keeps the points it was scored: the game's record stays as it happened.
    assert Rating.objects.get(pk=rating.pk).points == 0


def staff_page_of_disputes() -> str:
    from django.test import Client

    client = Client()
    client.force_login(UserFactory(is_staff=True))
    return client.get(reverse("staff:disputes")).content.decode()


def test_a_control_rating_may_be_disputed_like_a_game_rating_and_is_re_scored_against_the_expert():
    """The rater cannot tell a control pair apart, so its score is disputable as any game score;
    staff re-score it as it was scored (the expert's rating as the consensus): nothing to restore."""
    from tests.factories import ControlPairFactory

    user = rater_in_the_window(window_count=20, game_score=20)
    pair = ControlPairFactory(expert_rating=4)
    rating = rating_record(rater=user, pair=pair, value=2, points=-1, stage="control", reference=4)
    dispute = dispute_file(rater=user, rating_id=rating.pk, comment="It is a 2.")
    from annotators.staff.services import dispute_rescore

    rescore = dispute_rescore(rating)
    assert (rescore.consensus, rescore.points, rescore.owed) == (4, -1, 0)
    dispute_resolve(dispute=dispute, actor=UserFactory(is_staff=True), accept=True, note="The experts stand.")
    assert RaterProfile.objects.get(user=user).game_score == 20
