"""Per-rater statistics and behaviour flags (annotators.competency.flags, annotators.competency.rater_stats)."""

import itertools

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotators.competency.flags import flags_for, load_rating_rows, rater_statistics
from annotators.competency.rater_stats import group_stats, leave_one_out_consensus, rolling_share
from annotators.models import Dispute, ProbationRound, RaterState
from scoring.consensus import consensus_rating
from tests.factories import (
    CaptionPairFactory,
    ImageFactory,
    ProbationPairFactory,
    RaterProfileFactory,
    TutorialPairFactory,
    rating_record,
)

pytestmark = pytest.mark.django_db

DEFAULT_FLAGS = {
    "MIN_RATINGS": 20,
    "SPEEDER_MEDIAN_SECONDS": 5.0,
    "SPEEDER_NEAR_FLOOR_SHARE": 0.5,
    "STRAIGHT_RUN": 15,
    "STRAIGHT_VALUE_SHARE": 0.8,
    "PRIME_COPIER_SHARE": 0.8,
    "PRIME_COPIER_MARGIN": 0.25,
    "LOW_AGREEMENT_RATE": 0.7,
    "CONTROL_MIN_RATINGS": 10,
    "CONTROL_AGREEMENT": 1.2,
    "SKIP_SHARE": 0.08,
}


def test_the_documented_defaults_are_the_registry_s():
    from annotators.competency.flag_rules import threshold_defaults

    assert threshold_defaults() == DEFAULT_FLAGS


@pytest.fixture(autouse=True)
def _flag_settings(settings, three_second_rules):
    settings.RATINGGAME_FLAGS = dict(DEFAULT_FLAGS)


@pytest.fixture
def image():
    return ImageFactory()


def by_profile(rows):
    return {row.profile_id: row for row in rows}


# --- Pure statistics -------------------------------------------------------------------------


def test_leave_one_out_consensus_matches_consensus_rating_of_the_others():
    # Every subset pattern of a 4-rating pair, each rating's consensus against
    # scoring.consensus.consensus_rating of the others that count.
    rng = np.random.default_rng(7)
    for _ in range(200):
        values = rng.integers(1, 6, size=4)
        counted = rng.random(4) < 0.7
        total, count = int(values[counted].sum()), int(counted.sum())
        got = leave_one_out_consensus(np.full(4, total), np.full(4, count), values, counted)
        for i in range(4):
            others = [int(v) for j, v in enumerate(values) if j != i and counted[j]]
            expected = consensus_rating(others)
            assert (np.isnan(got[i]) and expected is None) or got[i] == expected


def test_group_stats_hand_computed():
    # Rater 0: values 3 3 3 1 3 3 (longest run 3), seconds 3.5 4 4.5 10 20 30.
    # Rater 1: values 3 3, their run does not join rater 0's trailing 3s.
    group = np.array([0, 0, 0, 0, 0, 0, 1, 1])
    value = np.array([3, 3, 3, 1, 3, 3, 3, 3])
    seconds = np.array([3.5, 4.0, 4.5, 10, 20, 30, 8, 12])
    reference = np.array([3, 4, 1, np.nan, 5, 3, np.nan, np.nan])
    stats = group_stats(group, 2, value, reference, seconds, np.ones(8, bool), np.full(8, np.nan), 3.0)
    assert stats.longest_run.tolist() == [3, 2]
    # Median of 3.5 4 4.5 10 20 30 is (4.5 + 10) / 2; of 8 and 12 is 10.
    assert stats.median_seconds.tolist() == [7.25, 10.0]
    # Within 1 s of the 3 s floor: 3.5 and 4.0 of six.
    assert stats.near_floor_share[0] == pytest.approx(2 / 6)
    # Distances to the reference: 0, 1, 2, (none), 2, 0 -> 2 exact, 1 adjacent, 2 lack of 5.
    assert stats.n_reference.tolist() == [5, 0]
    assert stats.exact_rate[0] == pytest.approx(2 / 5)
    assert stats.adjacent_rate[0] == pytest.approx(1 / 5)
    assert stats.lack_rate[0] == pytest.approx(2 / 5)
    assert stats.mean_abs_deviation[0] == pytest.approx(5 / 5)
    assert np.isnan(stats.exact_rate[1])
    assert stats.modal_share.tolist() == [pytest.approx(5 / 6), 1.0]


def test_rolling_share_over_the_last_compared_ratings():
    hits = np.array([1, 0, 0, 1, 1, 1], bool)
    valid = np.array([1, 1, 0, 1, 1, 1], bool)
    # Window 2 over valid entries (1, 0, -, 1, 1, 1): 1/1, 1/2, 1/2 (no new entry), 1/2, 2/2, 2/2.
    assert rolling_share(hits, valid, 2).tolist() == [1.0, 0.5, 0.5, 0.5, 1.0, 1.0]
    assert np.isnan(rolling_share(np.array([0], bool), np.array([0], bool), 5)[0])


# --- Leave-one-out consensus on the database, a hand-worked example ---------------------------


def test_leave_one_out_consensus_hand_worked(image):
    """Pair P: A=2, B=3, C=5 counted, D=1 excluded (failed window).

    A: others B, C -> 8/2 = 4 -> |2-4| = 2, lack.     B: others A, C -> 7/2 = 3.5 -> 4 (half up), adjacent.
    C: others A, B -> 5/2 = 2.5 -> 3, lack.           D: others A, B, C -> 10/3 -> 3, lack (D counts for D only).
    Pair Q is rated by A alone: no reference, left out. A's tutorial rating 3 on an expert 3: exact.
    """
    a, b, c, d = (RaterProfileFactory(state=RaterState.GAME) for _ in range(4))
    p = CaptionPairFactory(image=image)
    q = CaptionPairFactory(image=image)
    tutorial = TutorialPairFactory(image=image, expert_rating=3)
    rating_record(rater=a.user, pair=tutorial, value=3)
    for profile, value in ((a, 2), (b, 3), (c, 5)):
        rating_record(rater=profile.user, pair=p, value=value)
    rating_record(rater=d.user, pair=p, value=1, excluded=True)
    rating_record(rater=a.user, pair=q, value=4)

    rows = load_rating_rows()
    reference = {
        (int(r), int(pid)): ref for r, pid, ref in zip(rows.rater_id, rows.pair_id, rows.reference, strict=True)
    }
    assert reference[(a.user_id, p.pk)] == 4
    assert reference[(b.user_id, p.pk)] == 4
    assert reference[(c.user_id, p.pk)] == 3
    assert reference[(d.user_id, p.pk)] == 3
    assert np.isnan(reference[(a.user_id, q.pk)])
    assert reference[(a.user_id, tutorial.pk)] == 3

    stats = by_profile(rater_statistics())
    assert stats[a.pk].ratings == 3
    assert stats[a.pk].rated_with_reference == 2
    assert (stats[a.pk].exact_rate, stats[a.pk].adjacent_rate, stats[a.pk].lack_rate) == (0.5, 0.0, 0.5)
    assert stats[a.pk].mean_abs_deviation == 1.0  # (0 + 2) / 2
    assert (stats[b.pk].exact_rate, stats[b.pk].adjacent_rate, stats[b.pk].lack_rate) == (0.0, 1.0, 0.0)
    assert stats[c.pk].lack_rate == 1.0
    assert stats[d.pk].lack_rate == 1.0


def test_prime_share_rounds_the_first_prime_half_up(image):
    rater = RaterProfileFactory(state=RaterState.GAME)
    rating_record(rater=rater.user, pair=CaptionPairFactory(image=image, primes=[2.5, 4.0]), value=3)  # 2.5 -> 3: equal
    rating_record(rater=rater.user, pair=CaptionPairFactory(image=image, primes=[1.49, 2.0]), value=2)  # 1.49 -> 1
    rating_record(rater=rater.user, pair=CaptionPairFactory(image=image, primes=[]), value=3)  # no prime: not counted
    row = rater_statistics()[0]
    assert row.primed_ratings == 2
    assert row.prime_equal_share == 0.5


def test_probation_rounds_and_open_disputes_are_counted(image):
    rater = RaterProfileFactory(state=RaterState.PROBATION)
    ProbationRound.objects.create(profile=rater, number=1)
    ProbationRound.objects.create(profile=rater, number=2)
    rating = rating_record(rater=rater.user, pair=CaptionPairFactory(image=image), value=3)
    decided = rating_record(rater=rater.user, pair=CaptionPairFactory(image=image), value=2)
    Dispute.objects.create(rating=rating, comment="open")
    Dispute.objects.create(rating=decided, comment="done", status="rejected")
    row = rater_statistics()[0]
    assert (row.probation_rounds, row.open_disputes) == (2, 1)


def test_statistics_use_a_fixed_number_of_queries(image):
    """No query per rater: 2 raters and 6 raters cost the same number of queries."""
    pairs = [ProbationPairFactory(image=image, expert_rating=3) for _ in range(3)]

    def add_raters(n):
        for _ in range(n):
            profile = RaterProfileFactory(state=RaterState.GAME)
            ProbationRound.objects.create(profile=profile, number=1)
            for pair in pairs:
                rating_record(rater=profile.user, pair=pair, value=3)

    add_raters(2)
    with CaptureQueriesContext(connection) as two:
        assert len(rater_statistics()) == 2
    add_raters(4)
    with CaptureQueriesContext(connection) as six:
        assert len(rater_statistics()) == 6
    assert len(six) == len(two)


# --- Flags on crafted raters -----------------------------------------------------------------


@pytest.fixture
def probation_pairs(image):
    """20 expert-rated pairs with expert ratings cycling 1..5."""
    return [ProbationPairFactory(image=image, expert_rating=i % 5 + 1) for i in range(20)]


def rate_all(profile, pairs, values, seconds=12.0):
    for pair, value in zip(pairs, values, strict=True):
        rating_record(rater=profile.user, pair=pair, value=value, seconds=seconds)


def test_careful_rater_raises_no_flag(probation_pairs):
    careful = RaterProfileFactory(state=RaterState.GAME)
    rate_all(careful, probation_pairs, [p.expert_rating for p in probation_pairs])
    row = rater_statistics()[0]
    assert row.exact_rate == 1.0
    assert row.flags == []


def test_speeder_by_median_and_by_share_at_the_floor(probation_pairs):
    fast = RaterProfileFactory()
    rate_all(fast, probation_pairs, [p.expert_rating for p in probation_pairs], seconds=4.5)  # median 4.5 < 5
    floor = RaterProfileFactory()
    # 11 of 20 at 3.9 s, within 1 s of the 3 s floor (share 0.55 > 0.5), the other 9 at 60 s.
    # Its median is 3.9 s, so the share criterion alone is checked below with a 3 s median threshold.
    for i, pair in enumerate(probation_pairs):
        rating_record(rater=floor.user, pair=pair, value=pair.expert_rating, seconds=3.9 if i % 2 or i == 0 else 60)
    slow = RaterProfileFactory()
    rate_all(slow, probation_pairs, [p.expert_rating for p in probation_pairs], seconds=5.5)
    stats = by_profile(rater_statistics())
    assert "speeder" in stats[fast.pk].flags
    assert stats[floor.pk].near_floor_share == 11 / 20
    assert "speeder" in stats[floor.pk].flags
    assert "speeder" not in stats[slow.pk].flags  # 5.5 s, none within 1 s of the floor

    strict_median = {**DEFAULT_FLAGS, "SPEEDER_MEDIAN_SECONDS": 3.0}
    assert "speeder" in flags_for(stats[floor.pk], strict_median)  # by the share alone
    assert "speeder" not in flags_for(stats[fast.pk], strict_median)  # 4.5 s is not within 1 s of 3 s


def test_speeder_needs_min_ratings(probation_pairs):
    few = RaterProfileFactory()
    rate_all(few, probation_pairs[:19], [p.expert_rating for p in probation_pairs[:19]], seconds=3.1)
    row = rater_statistics()[0]
    assert row.near_floor_share == 1.0
    assert "speeder" not in row.flags


def test_straight_liner_by_run_and_by_share(probation_pairs):
    run = RaterProfileFactory()
    rate_all(run, probation_pairs, [3] * 20)
    share = RaterProfileFactory()
    # 16 threes and 4 fours, a four every fifth rating: longest run 4, share of 3 is 0.8.
    share_values = [4 if i % 5 == 4 else 3 for i in range(20)]
    rate_all(share, probation_pairs, share_values)
    stats = by_profile(rater_statistics())
    assert stats[run.pk].longest_run == 20
    assert "straight_liner" in stats[run.pk].flags
    assert stats[share.pk].longest_run == 4
    assert stats[share.pk].modal_share == 0.8
    assert "straight_liner" in stats[share.pk].flags
    assert "straight_liner" not in flags_for(stats[share.pk], {**DEFAULT_FLAGS, "STRAIGHT_VALUE_SHARE": 0.85})


def test_prime_copier(image):
    copier, honest = RaterProfileFactory(state=RaterState.GAME), RaterProfileFactory(state=RaterState.GAME)
    primes = itertools.cycle([1.2, 2.5, 3.4, 4.6, 3.0])
    for _ in range(20):
        first = next(primes)
        pair = CaptionPairFactory(image=image, primes=[first, 3.0])
        rating_record(rater=copier.user, pair=pair, value=int(np.floor(first + 0.5)))
        rating_record(rater=honest.user, pair=pair, value=5 if first < 4 else 1)
    stats = by_profile(rater_statistics())
    assert stats[copier.pk].prime_equal_share == 1.0
    assert "prime_copier" in stats[copier.pk].flags
    assert stats[honest.pk].prime_equal_share == 0.0
    assert "prime_copier" not in stats[honest.pk].flags


def test_prime_copying_is_judged_only_on_enough_pairs_with_a_consensus_of_others(image):
    # 20 ratings equal to the prime, but only one pair has another rater to compare with: the
    # "prime over consensus" share (1.0) rests on one rating, under the 20 the rule needs.
    copier, other = RaterProfileFactory(state=RaterState.GAME), RaterProfileFactory(state=RaterState.GAME)
    for index in range(20):
        pair = CaptionPairFactory(image=image, primes=[2.4, 3.0])
        rating_record(rater=copier.user, pair=pair, value=2)
        if index == 0:
            rating_record(rater=other.user, pair=pair, value=5)
    row = by_profile(rater_statistics())[copier.pk]
    assert (row.primed_ratings, row.primed_compared) == (20, 1)
    assert (row.prime_equal_share, row.prime_over_consensus) == (1.0, 1.0)
    assert "prime_copier" not in row.flags


def test_agreeing_with_good_primes_is_not_copying_them(image):
    # The primes are right: the other raters give the rounded prime too. A rater who matches
    # the prime every time also matches the people's consensus every time: not a copier.
    agreer = RaterProfileFactory(state=RaterState.GAME)
    others = [RaterProfileFactory(state=RaterState.GAME) for _ in range(2)]
    primes = itertools.cycle([1.2, 2.5, 3.4, 4.6, 3.0])
    for _ in range(20):
        first = next(primes)
        pair = CaptionPairFactory(image=image, primes=[first, 3.0])
        for profile in [agreer, *others]:
            rating_record(rater=profile.user, pair=pair, value=int(np.floor(first + 0.5)))
    row = by_profile(rater_statistics())[agreer.pk]
    assert (row.prime_equal_share, row.prime_over_consensus) == (1.0, 0.0)
    assert "prime_copier" not in row.flags


def test_low_agreement(probation_pairs):
    off = RaterProfileFactory()
    # Two or more away from every expert rating (1->3, 2->4, 3->5, 4->1, 5->1): no exact, no adjacent.
    far = {1: 3, 2: 4, 3: 5, 4: 1, 5: 1}
    rate_all(off, probation_pairs, [far[p.expert_rating] for p in probation_pairs])
    borderline = RaterProfileFactory()
    # 14 of 20 exact, 6 off by two: 0.7 exact+adjacent, not below 0.7.
    rate_all(
        borderline,
        probation_pairs,
        [p.expert_rating if i < 14 else far[p.expert_rating] for i, p in enumerate(probation_pairs)],
    )
    stats = by_profile(rater_statistics())
    assert stats[off.pk].agreement_rate == 0.0
    assert "low_agreement" in stats[off.pk].flags
    assert stats[borderline.pk].agreement_rate == pytest.approx(0.7)
    assert "low_agreement" not in stats[borderline.pk].flags


def test_flag_thresholds_come_from_settings(settings, probation_pairs):
    fast = RaterProfileFactory()
    rate_all(fast, probation_pairs, [p.expert_rating for p in probation_pairs], seconds=4.5)
    assert "speeder" in rater_statistics()[0].flags
    settings.RATINGGAME_FLAGS = {**DEFAULT_FLAGS, "SPEEDER_MEDIAN_SECONDS": 4.0}
    assert "speeder" not in rater_statistics()[0].flags


# --- Control agreement and skips (SPEC 2.5 and 5) ----------------------------------------------


def test_control_agreement_overall_and_as_the_drift_rule_reads_it(settings):
    """12 control ratings: the first four (before the rater last entered the game) agree 0; the
    eight since agree 2 except two exact-1s. Overall (2*6 + 1*2) / 12; the drift rule's view,
    the latest 15 since the entry, is the eight since: 14 / 8."""
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import ControlPairFactory

    settings.RATINGGAME = {**settings.RATINGGAME, "DRIFT_WINDOW": 15}
    profile = RaterProfileFactory(state="game")
    controls = [ControlPairFactory(expert_rating=3) for _ in range(12)]
    start = timezone.now() - timedelta(days=1)
    for index, (pair, value) in enumerate(zip(controls, [1] * 4 + [3] * 6 + [4, 2], strict=True)):
        rating_record(
            rater=profile.user, pair=pair, value=value, reference=3, submitted_at=start + timedelta(minutes=index)
        )
    profile.game_entered_at = start + timedelta(minutes=3, seconds=30)
    profile.save()
    stats = rater_statistics([profile.pk])[0]
    assert (stats.control_ratings, stats.control_agreement) == (12, pytest.approx(14 / 12))
    assert (stats.control_recent, stats.control_recent_agreement) == (8, pytest.approx(14 / 8))
    assert "low_control_agreement" not in stats.flags
    # Ten straight-lined controls with experts at 1 and 5, since the rater entered the game (the
    # factory's ratings are from 30 days ago on): the flag is raised.
    liner = RaterProfileFactory(state="game", game_entered_at=start - timedelta(days=30))
    for level in [1, 5] * 5:
        rating_record(rater=liner.user, pair=ControlPairFactory(expert_rating=level), value=3, reference=level)
    stats = rater_statistics([liner.pk])[0]
    assert (stats.control_ratings, stats.control_agreement) == (10, 0.0)
    assert "low_control_agreement" in stats.flags


def test_skips_are_counted_against_game_serves_and_a_frequent_skipper_is_flagged(image):
    # The profile's count, as each "Skip this pair" keeps it (tests/ratinggame/game/test_skips.py).
    skipper = RaterProfileFactory(state="game", game_serves=50, game_skips=5)
    careful = RaterProfileFactory(state="game", game_serves=50, game_skips=1)
    stats = by_profile(rater_statistics([skipper.pk, careful.pk]))
    assert (stats[skipper.pk].skips, stats[skipper.pk].skip_share) == (5, 0.1)
    assert "skipper" in stats[skipper.pk].flags
    assert (stats[careful.pk].skips, "skipper" in stats[careful.pk].flags) == (1, False)
