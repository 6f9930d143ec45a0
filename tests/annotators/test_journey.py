"""The state machine of the rater's journey and the rater services around the rating screens."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotators import journey, progress, services
from annotators.journey import Step
from annotators.models import Dispute, RaterProfile, RaterState
from annotators.roles import ANNOTATOR, has_role
from ratinggame.models import Rating
from tests.factories import UserFactory
from tests.ratinggame.journey_helpers import (
    Clock,
    game_pairs,
    probation_pairs,
    rate_next,
    rater,
    tutorial_pairs,
    value_scoring,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("three_second_rules")]


# --- The state machine ----------------------------------------------------------------------


def test_a_new_user_must_consent_first_then_starts_the_tutorial():
    user = UserFactory()
    assert progress.current_step(user) == Step.CONSENT
    assert RaterProfile.objects.filter(user=user).count() == 1  # created on first use
    progress.consent_give(user=user)
    assert progress.current_step(user) == Step.TUTORIAL
    progress.profile_for(user)
    assert RaterProfile.objects.filter(user=user).count() == 1


def test_consent_given_again_keeps_the_first_time():
    user = UserFactory()
    progress.consent_give(user=user)
    first = RaterProfile.objects.get(user=user).consent_at
    progress.consent_give(user=user)
    assert RaterProfile.objects.get(user=user).consent_at == first


@pytest.mark.parametrize(
    ("state", "consent", "step"),
    [
        (RaterState.PROBATION, True, Step.PROBATION),
        (RaterState.GAME, True, Step.GAME),
        (RaterState.GAME, False, Step.CONSENT),
        (RaterState.SUSPENDED, True, Step.SUSPENDED),
        (RaterState.SUSPENDED, False, Step.SUSPENDED),
    ],
)
def test_the_step_follows_consent_and_profile_state(state, consent, step):
    user = rater(state, consent_at=timezone.now() if consent else None)
    assert progress.current_step(user) == step


def test_an_anonymous_visitor_is_at_the_consent_step():
    assert progress.current_step(AnonymousUser()) == Step.CONSENT


def test_progress_through_tutorial_and_probation():
    tutorial_pairs([3] * 10)
    probation_pairs(20)
    user, clock = rater(), Clock()
    assert progress.tutorial_progress(user) == (0, 10, 0)
    for points in (2, 1, 0):
        rate_next(user, lambda pair, p=points: value_scoring(pair.expert_rating, p), clock)
    assert progress.tutorial_progress(user) == (3, 10, 3)
    for _ in range(7):
        rate_next(user, lambda pair: value_scoring(pair.expert_rating, 0), clock)
    # 3 of 20 points: probation, round 1, nothing rated yet.
    assert progress.current_step(user) == Step.PROBATION
    assert progress.probation_progress(user) == (1, 0, 20, 0)
    rate_next(user, lambda pair: value_scoring(pair.expert_rating, 2), clock)
    assert progress.probation_progress(user) == (1, 1, 20, 2)


# --- Sign-up, profile, disputes -------------------------------------------------------------


def test_signup_makes_an_annotator_with_a_profile_on_the_consent_step():
    user = services.rater_signup(username="newrater", password="a long enough passphrase 42", email="n@example.org")
    assert has_role(user, ANNOTATOR)
    assert user.check_password("a long enough passphrase 42")
    profile = RaterProfile.objects.get(user=user)
    assert (profile.state, profile.consent_at) == (RaterState.TUTORIAL, None)
    assert progress.current_step(user) == Step.CONSENT


def test_signup_refuses_a_taken_name_and_a_weak_password():
    services.rater_signup(username="taken", password="a long enough passphrase 42")
    with pytest.raises(ValidationError):
        services.rater_signup(username="TAKEN", password="another long passphrase 43")
    with pytest.raises(ValidationError):
        services.rater_signup(username="weak", password="123")


def test_profile_update_sets_the_leaderboard_name_and_refuses_long_names():
    user = rater(RaterState.GAME)
    services.profile_update(user=user, display_name="  Ada  ", on_leaderboard=False)
    profile = RaterProfile.objects.get(user=user)
    assert (profile.display_name, profile.on_leaderboard) == ("Ada", False)
    with pytest.raises(ValidationError):
        services.profile_update(user=user, display_name="x" * 41, on_leaderboard=True)


def test_profile_update_refuses_the_raters_own_user_name_in_any_case(client):
    user = rater(RaterState.GAME)
    for name in (user.username, user.username.upper(), f"  {user.username}  "):
        with pytest.raises(ValidationError, match="your user name"):
            services.profile_update(user=user, display_name=name, on_leaderboard=True)
    assert RaterProfile.objects.get(user=user).display_name == ""
    client.force_login(user)
    page = client.post("/me/", {"display_name": user.username, "on_leaderboard": "on"})
    assert page.status_code == 400 and "This is your user name" in page.content.decode()
    assert RaterProfile.objects.get(user=user).display_name == ""


def game_rating(user, value, clock):
    _, feedback = rate_next(user, value, clock)
    return Rating.objects.get(pk=feedback.rating_id)


def test_a_rater_disputes_only_their_own_game_rating_once():
    game_pairs(2, primes=[4.0, 4.0])
    owner, other, clock = rater(RaterState.GAME), rater(RaterState.GAME), Clock()
    rating = game_rating(owner, 3, clock)
    dispute = services.dispute_file(rater=owner, rating_id=rating.pk, comment="  The consensus looks wrong.  ")
    assert (dispute.rating, dispute.comment, dispute.status) == (rating, "The consensus looks wrong.", "open")
    with pytest.raises(ValidationError):
        services.dispute_file(rater=owner, rating_id=rating.pk, comment="again")
    with pytest.raises(Rating.DoesNotExist):
        services.dispute_file(rater=other, rating_id=rating.pk, comment="not mine")
    with pytest.raises(ValidationError):
        services.dispute_file(rater=owner, rating_id=rating.pk, comment="   ")
    assert Dispute.objects.count() == 1


def test_tutorial_ratings_cannot_be_disputed():
    tutorial_pairs([3])
    user = rater()
    _, feedback = rate_next(user, 3, Clock())
    with pytest.raises(ValidationError):
        services.dispute_file(rater=user, rating_id=feedback.rating_id, comment="the expert is wrong")


# --- Probation rounds (SPEC 2.2: a retry measures skill, not memory) ------------------------


def fail_a_probation_round(user, clock: Clock) -> list[int]:
    """Rate a whole round one level off the experts' 3 (1 point each: 20 of 40, a fail); its pair ids."""
    return [rate_next(user, 4, clock)[0].pair_id for _ in range(journey.PROBATION_SIZE)]


def test_a_new_probation_round_draws_pairs_not_rated_before_then_those_rated_longest_ago():
    probation_pairs(45)
    user, clock = rater(RaterState.PROBATION), Clock()
    first = fail_a_probation_round(user, clock)
    second = fail_a_probation_round(user, clock)
    # 45 pairs: the second round is 20 pairs the rater never rated.
    assert len(set(first) | set(second)) == 40
    third = progress.probation_round_current(progress.profile_for(user)).pair_order
    # Only 5 are new; the other 15 are the first round's first 15, rated longest ago.
    assert len(set(third) - set(first) - set(second)) == 5
    assert set(third) & set(first) == set(first[:15])
    assert not set(third) & set(second)


def test_with_twenty_probation_pairs_every_round_repeats_them_in_another_order():
    probation_pairs(20)
    user, clock = rater(RaterState.PROBATION), Clock()
    first = fail_a_probation_round(user, clock)
    second = progress.probation_round_current(progress.profile_for(user)).pair_order
    assert sorted(second) == sorted(first) and second != first


# --- Leaderboard and personal statistics ----------------------------------------------------


def test_leaderboard_orders_by_score_and_leaves_out_who_opted_out():
    rater(RaterState.GAME, game_score=300, display_name="Ada")
    rater(RaterState.GAME, game_score=900, display_name="")
    rater(RaterState.GAME, game_score=5000, display_name="Hidden", on_leaderboard=False)
    rater(RaterState.GAME, game_score=0, display_name="Zero")
    board = services.leaderboard(period="all")
    assert [{key: row[key] for key in ("rank", "name", "points", "level")} for row in board] == [
        {"rank": 1, "name": "Anonymous rater", "points": 900, "level": 2},
        {"rank": 2, "name": "Ada", "points": 300, "level": 2},
    ]
    with pytest.raises(ValueError):
        services.leaderboard(period="year")


def test_weekly_leaderboard_counts_only_last_weeks_counted_game_points():
    game_pairs(3, primes=[4.0, 4.0])
    user, clock = rater(RaterState.GAME, display_name="Ada"), Clock(timezone.now() - timedelta(days=10))
    game_rating(user, 4, clock)  # 2 points, ten days ago
    clock.now = timezone.now() - timedelta(minutes=5)
    recent = [game_rating(user, 4, clock) for _ in range(2)]  # 2 + 2 points this week
    assert services.leaderboard(period="week") == [
        {"rank": 1, "name": "Ada", "points": 4, "level": 1, "profile_id": user.rater.pk}
    ]
    Rating.objects.filter(pk=recent[0].pk).update(excluded=True)
    assert services.leaderboard(period="week")[0]["points"] == 2


def test_the_weekly_board_shows_the_raters_level_and_no_board_shows_suspended_raters():
    game_pairs(1, primes=[4.0, 4.0])
    veteran = rater(RaterState.GAME, game_score=1200, display_name="Veteran")
    game_rating(veteran, 4, Clock(timezone.now() - timedelta(minutes=5)))  # 2 points this week
    # Ranked by this week's 2 points, at the level of the 1202-point game score.
    assert services.leaderboard(period="week") == [
        {"rank": 1, "name": "Veteran", "points": 2, "level": 3, "profile_id": veteran.rater.pk}
    ]
    rater(RaterState.SUSPENDED, game_score=5000, display_name="Suspended")
    assert [row["name"] for row in services.leaderboard(period="all")] == ["Veteran"]
    RaterProfile.objects.filter(user=veteran).update(state=RaterState.SUSPENDED)
    assert services.leaderboard(period="week") == services.leaderboard(period="all") == []


def test_personal_stats_count_exact_agreement_streak_and_level():
    game_pairs(5, primes=[4.0, 4.0])
    user, clock = rater(RaterState.GAME), Clock()
    # Against the primes [4, 4]: 4 -> 2 points (exact), 1 -> -2, 3 -> 0 (SPEC worked examples).
    for value in (4, 1, 4, 3, 4):
        game_rating(user, value, clock)
    stats = services.personal_stats(user)
    assert stats["ratings"] == 5
    assert stats["exact_agreement"] == pytest.approx(3 / 5)
    assert stats["streak"] == 3  # 4, 3, 4 since the -2
    assert (stats["score"], stats["level"], stats["next_level_at"]) == (4, 1, 250)


@pytest.mark.parametrize(
    ("points", "level", "next_at"),
    [(-5, 1, 250), (0, 1, 250), (249, 1, 250), (250, 2, 1000), (999, 2, 1000), (1000, 3, 2000), (3000, 5, None)],
)
def test_levels_start_at_250_1000_2000_3000_points(points, level, next_at):
    assert journey.level_for(points) == level
    assert journey.next_level_at(points) == next_at
