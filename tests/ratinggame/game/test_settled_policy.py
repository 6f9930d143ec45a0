"""The "settled" assignment policy (SPEC 5.1): past 3 counted ratings a pair takes another only
while the ordinal rater model says more ratings could well change its label; never past 7."""

from datetime import timedelta

import pytest

from annotators.models import RaterProfile, RaterState
from ratinggame import game
from ratinggame.game.aggregates import ratings_exclude
from ratinggame.game.assignment import assign_rank_for
from ratinggame.game.labels import pairs_evidence_refresh, rater_models_refit
from ratinggame.models import Assignment, AssignRank, CaptionPair, LevelPrior, Pool, Rating
from scoring import ordinal
from tests.factories import ControlPairFactory
from tests.ratinggame.journey_helpers import (
    T0,
    Clock,
    assert_pairs_consistent,
    game_pairs,
    rate_next,
    rater,
    seed_ratings,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("three_second_rules")]


@pytest.fixture
def settled(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "ASSIGNMENT_POLICY": "settled", "SETTLED_THRESHOLD": 0.2}


CAREFUL = {"label_precision": 2.5, "label_severity": 0.0, "label_lapse": 0.05}
CAREFUL_MODEL = ordinal.RaterModel(2.5, 0.0, 0.05)


def evidence_of(values, rater=None):
    evidence = None
    for value in values:
        evidence = ordinal.evidence_add(evidence, value, rater)
    return evidence


def rank(values, in_flight=0, rater=CAREFUL_MODEL):
    return assign_rank_for(
        human_count=len(values),
        human_sum=sum(values),
        human_sumsq=sum(v * v for v in values),
        in_flight=in_flight,
        evidence=evidence_of(values, rater),
    )


@pytest.mark.usefixtures("settled")
def test_the_rank_follows_the_settled_rule():
    assert rank([]) == AssignRank.FRESH
    assert rank([3, 3]) == AssignRank.NEAR_MINIMUM
    # Three committed but one still open: its rating may settle the pair, so it waits for it.
    assert rank([1, 5], in_flight=1) is None
    assert rank([4, 4, 4]) is None
    # Three ratings spread over the scale leave the label open. Two careful raters of three on 3
    # settle it; the same ratings from raters no fit has seen yet (the VICR crowd's model, one
    # level off about half the time) do not, nor do three equal ones.
    assert rank([1, 3, 5]) == AssignRank.DISAGREEING
    assert rank([3, 4, 3]) is None
    assert rank([3, 4, 3], rater=None) == AssignRank.DISAGREEING
    assert rank([4, 4, 4], rater=None) == AssignRank.DISAGREEING
    # Never past 7, whatever the ratings.
    assert rank([1, 5, 1, 5, 1, 5]) == AssignRank.DISAGREEING
    assert rank([1, 5, 1, 5, 1, 5], in_flight=1) is None
    assert rank([1, 5, 1, 5, 1, 5, 1]) is None


def test_unanimous_sends_a_pair_that_the_settled_policy_stops_to_more_raters(settings):
    values = [4, 4, 4, 5]
    settings.RATINGGAME = {**settings.RATINGGAME, "ASSIGNMENT_POLICY": "unanimous"}
    assert rank(values) == AssignRank.DISAGREEING
    settings.RATINGGAME = {**settings.RATINGGAME, "ASSIGNMENT_POLICY": "settled"}
    assert rank(values) is None


@pytest.mark.usefixtures("settled")
def test_raters_through_the_game_stop_a_settled_pair_at_3_and_rate_an_open_one_on():
    agreed, spread = game_pairs(2)
    raters = [rater(RaterState.GAME, window_count=20, window_points=40, **CAREFUL) for _ in range(5)]
    clock = Clock()
    values = {agreed.pk: [4, 4, 4], spread.pk: [1, 3, 5]}
    for user in raters[:3]:
        for _ in range(2):
            rate_next(user, lambda pair: values[pair.pk].pop(), clock)
    agreed.refresh_from_db()
    spread.refresh_from_db()
    assert (agreed.human_count, agreed.assign_rank) == (3, None)
    assert (spread.human_count, spread.assign_rank) == (3, AssignRank.DISAGREEING)
    # The evidence on the row is the model's over the stored ratings.
    assert spread.label_evidence == pytest.approx(Rating.objects.counted().label_evidence([spread.pk])[spread.pk])
    served = game.pair_serve(rater=raters[3], now=clock.now)
    assert served is not None and served.pair_id == spread.pk
    assert_pairs_consistent()


@pytest.mark.usefixtures("settled")
def test_a_refit_that_finds_the_raters_sloppy_opens_the_pair_they_settled_again():
    (pair,) = game_pairs(1)
    raters = [rater(RaterState.GAME, **CAREFUL) for _ in range(3)]
    seed_ratings(pair, [4, 4, 4], raters=raters)
    assert pair.assign_rank is None
    RaterProfile.objects.filter(user__in=raters).update(label_precision=0.4, label_severity=0.0, label_lapse=0.2)
    assert pairs_evidence_refresh() == (1, 0)
    pair.refresh_from_db()
    assert pair.assign_rank == AssignRank.DISAGREEING
    assert_pairs_consistent()


@pytest.mark.usefixtures("settled")
def test_excluding_a_rating_takes_its_evidence_out_of_the_pair():
    (pair,) = game_pairs(1)
    raters = [rater(RaterState.GAME, **CAREFUL) for _ in range(4)]
    seed_ratings(pair, [2, 4, 4, 4], raters=raters)
    assert pair.assign_rank is None
    first = Rating.objects.filter(pair=pair).order_by("id").first()
    ratings_exclude(rating_ids=[first.pk], reason="test")
    pair.refresh_from_db()
    assert pair.label_evidence == pytest.approx(evidence_of([4, 4, 4], CAREFUL_MODEL))
    assert_pairs_consistent()


def test_the_refit_tells_a_careful_rater_from_a_careless_one_by_the_controls():
    controls = [ControlPairFactory(expert_rating=level) for level in [1, 2, 3, 4, 5] * 4]
    careful, careless = rater(RaterState.GAME), rater(RaterState.GAME)
    control_ratings(careful, controls, lambda pair, index: pair.expert_rating)
    control_ratings(careless, controls, lambda pair, index: 1 + (pair.expert_rating + 2 + index) % 5)
    refit = rater_models_refit()
    assert refit.raters == 2 and refit.ratings == 40
    models = {
        profile.user_id: ordinal.RaterModel(profile.label_precision, profile.label_severity, profile.label_lapse)
        for profile in RaterProfile.objects.all()
    }
    assert ordinal.exact_share(models[careful.pk]) > 0.8
    assert ordinal.exact_share(models[careless.pk]) < 0.35
    assert CaptionPair.objects.filter(pool=Pool.GAME).count() == 0


def test_no_ratings_no_refit():
    assert rater_models_refit() is None


def control_ratings(user, pairs, answer):
    at = T0 - timedelta(hours=1)
    for index, pair in enumerate(pairs):
        assignment = Assignment.objects.create(
            rater=user, pair=pair, stage=Pool.CONTROL, served_at=at, expires_at=at, submitted_at=at
        )
        Rating.objects.create(
            assignment=assignment, pair=pair, rater=user, stage=Pool.CONTROL, value=answer(pair, index),
            served_at=at, submitted_at=at,
        )  # fmt: skip


@pytest.mark.usefixtures("settled")
def test_the_periodic_task_refits_and_reports_what_it_changed():
    from ratinggame.tasks import refit_rater_models

    controls = [ControlPairFactory(expert_rating=level) for level in [1, 2, 3, 4, 5] * 2]
    raters = [rater(RaterState.GAME) for _ in range(3)]
    for user in raters:
        control_ratings(user, controls, lambda pair, index: pair.expert_rating)
    (pair,) = game_pairs(1)
    seed_ratings(pair, [4, 4, 4], raters=raters)
    # Raters no fit has seen count as the VICR crowd: three 4s leave the label open.
    assert pair.assign_rank == AssignRank.DISAGREEING
    # The refit finds them exact on every control: their three 4s settle the pair.
    assert refit_rater_models() == {"raters": 3, "reopened": 0, "settled": 1}
    for profile in RaterProfile.objects.all():
        assert profile.label_precision > ordinal.POPULATION.precision
    pair.refresh_from_db()
    assert pair.assign_rank is None
    assert_pairs_consistent()


@pytest.mark.usefixtures("settled")
def test_the_refit_stores_the_level_prior_and_the_policy_decides_with_it(settings):
    """A pair rated [3, 3, 4] by the population's raters is not settled with a flat prior at 0.2;
    in a study where 3s are most pairs, the refit's prior settles it, and a reader of the table
    (another process, the export) finds the same prior."""
    from ratinggame.game.prior import level_prior, level_prior_known
    from ratinggame.models import LevelPrior

    values = [3, 3, 4]
    evidence = evidence_of(values)
    assert not ordinal.is_settled(evidence, 0.2)
    pairs = game_pairs(30, primes=[3.0, 3.0])
    for pair in pairs[:24]:
        seed_ratings(pair, [3, 3, 3])
    for pair in pairs[24:]:
        seed_ratings(pair, [4, 4, 4])
    rater_models_refit()
    shares = LevelPrior.in_force()
    assert shares is not None and shares[2] > 0.6 and level_prior() == shares
    assert ordinal.is_settled(evidence, 0.2, shares)
    assert rank(values, rater=None) is None  # settled: no more raters
    settings.RATINGGAME = {**settings.RATINGGAME, "LEVEL_PRIOR": False}
    assert rank(values, rater=None) == AssignRank.DISAGREEING  # the flat prior: one more
    level_prior_known(None)
    settings.RATINGGAME = {**settings.RATINGGAME, "LEVEL_PRIOR": True}
    assert level_prior() is None  # until the process reads the table again (every few minutes)


@pytest.mark.usefixtures("settled")
def test_a_refit_is_due_once_enough_ratings_came_in_since_the_last_or_some_and_half_an_hour(settings):
    """The refit follows the ratings (``labels.refit_due``): a careless rater's answers count as the
    population's until a fit has seen them. Due with the first ratings; then after
    ``REFIT_RATINGS`` more that a fit reads (a tutorial rating is not one); with fewer, once the
    last fit is 30 minutes old; never without new ones. The periodic task refits only when due."""
    from ratinggame.game.labels import refit_due
    from ratinggame.tasks import refit_rater_models

    settings.RATINGGAME = {**settings.RATINGGAME, "REFIT_RATINGS": 5}
    controls = [ControlPairFactory(expert_rating=level) for level in [1, 2, 3, 4, 5]]
    user = rater(RaterState.GAME)
    assert not refit_due(T0) and refit_rater_models() == {"due": False}
    control_ratings(user, controls[:2], lambda pair, index: pair.expert_rating)
    assert refit_due(T0)
    assert refit_rater_models()["raters"] == 1
    assert not refit_due(T0 + timedelta(hours=5))  # nothing new
    control_ratings(rater(RaterState.GAME), controls, lambda pair, index: pair.expert_rating)
    tutorial = CaptionPair.objects.create(
        image=controls[0].image, caption="a tutorial pair", pool=Pool.TUTORIAL, expert_rating=3
    )
    at = T0 - timedelta(hours=1)
    Rating.objects.create(
        assignment=Assignment.objects.create(
            rater=user, pair=tutorial, stage=Pool.TUTORIAL, served_at=at, expires_at=at, submitted_at=at
        ),
        pair=tutorial, rater=user, stage=Pool.TUTORIAL, value=3, served_at=at, submitted_at=at,
    )  # fmt: skip
    fitted_at = LevelPrior.objects.first().fitted_at
    assert refit_due(fitted_at)  # 5 new control ratings (the tutorial's does not count)
    rater_models_refit(fitted_at)
    assert not refit_due(fitted_at + timedelta(minutes=29))
    control_ratings(user, controls[2:3], lambda pair, index: pair.expert_rating)  # one more
    assert not refit_due(fitted_at + timedelta(minutes=29))
    assert refit_due(fitted_at + timedelta(minutes=30))
    assert refit_rater_models(force=True)["raters"] == 2
