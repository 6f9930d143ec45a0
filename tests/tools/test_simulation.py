"""The crowd simulator: its rater model, and a seeded crowd playing a live server through the API.

The validity test is issue 7's: simulated raters of known competency play the whole journey
over HTTP, every acknowledged rating is stored, nothing fails, and the game score ranks the
raters by their true competency (Spearman rho >= 0.8).
"""

import math

import numpy as np
import pytest
from rest_framework.authtoken.models import Token
from scipy import stats

from annotators.models import RaterProfile
from ratinggame.models import CaptionPair, Pool, Rating
from tests.acks import acknowledged, stored_ratings
from tests.conftest import FULL_TESTS
from tests.ratinggame.api_helpers import researcher
from tests.tools.crowd_helpers import SEED, live_concurrency, prime_like_a_model
from tools.simulator import crowd as simulation
from tools.simulator.crowd import CrowdConfig, crowd_simulate
from tools.simulator.report import format_report
from tools.simulator.setup import balanced_qualities

# --- The rater model -------------------------------------------------------------------------


def test_noise_sd_and_random_share_follow_competency():
    assert simulation.noise_sd(1.0) == simulation.SD_BEST
    assert simulation.noise_sd(0.0) == simulation.SD_WORST
    assert simulation.noise_sd(0.5) == pytest.approx((simulation.SD_BEST + simulation.SD_WORST) / 2)
    assert simulation.random_share(0.0) == simulation.RANDOM_SHARE_WORST
    assert simulation.random_share(simulation.RANDOM_BELOW) == 0.0
    assert simulation.random_share(0.9) == 0.0


def test_a_rater_errs_as_its_noise_sd_says():
    # Without random ratings the error before rounding is N(0, sd): after rounding to the
    # nearest level, P(exact) = P(|N(0, sd)| < 0.5) = erf(0.5 / (sd * sqrt(2))) for a
    # pair of quality 3 (no clipping within 2 levels).
    rng = np.random.default_rng(5)
    for competency in (0.95, 0.6):
        sd = simulation.noise_sd(competency)
        values = np.array([simulation.simulated_rating(3, competency, rng) for _ in range(20_000)])
        assert set(values) <= {1, 2, 3, 4, 5}
        expected = math.erf(0.5 / (sd * math.sqrt(2)))
        assert (values == 3).mean() == pytest.approx(expected, abs=0.015)


def test_the_worst_raters_add_uniformly_random_ratings():
    # Competency 0: a share RANDOM_SHARE_WORST of uniform ratings on 1..5, else N(0, SD_WORST)
    # noise. A pair of quality 1 is rated 5 by the noise only when it exceeds +3.5 (rounding
    # half up), P = 1 - Phi(3.5 / SD_WORST), or by a random rating, P = 1/5.
    share = simulation.RANDOM_SHARE_WORST
    expected = (1 - share) * stats.norm.sf(3.5 / simulation.SD_WORST) + share / 5
    rng = np.random.default_rng(6)
    values = np.array([simulation.simulated_rating(1, 0.0, rng) for _ in range(40_000)])
    assert (values == 5).mean() == pytest.approx(expected, abs=0.005)
    # Uniform ratings also land between: without them, 2 would need noise in [0.5, 1.5).
    no_random = stats.norm.cdf(1.5 / simulation.SD_WORST) - stats.norm.cdf(0.5 / simulation.SD_WORST)
    assert (values == 2).mean() == pytest.approx((1 - share) * no_random + share / 5, abs=0.008)


def test_true_quality_is_stable_and_spread_over_the_scale():
    assert simulation.true_quality(17, seed=3) == simulation.true_quality(17, seed=3)
    qualities = [simulation.true_quality(pair_id, seed=3) for pair_id in range(5000)]
    counts = np.bincount(qualities, minlength=6)[1:]
    assert counts.min() > 900 and counts.max() < 1100  # 1000 expected per level
    assert [simulation.true_quality(pair_id, seed=4) for pair_id in range(50)] != qualities[:50]


def test_competencies_are_evenly_spread_and_shuffled_by_the_seed():
    values = simulation.competencies(4, seed=1)
    assert sorted(values) == [0.125, 0.375, 0.625, 0.875]
    assert simulation.competencies(4, seed=1) == values
    assert any(simulation.competencies(8, seed=s) != sorted(simulation.competencies(8, seed=s)) for s in range(3))


def test_setup_qualities_are_balanced_and_game_share_rounds_up():
    assert sorted(balanced_qualities(10, seed=2)) == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert simulation.game_share(60, 12) == 20  # 60 x 4 / 12
    assert simulation.game_share(10, 3) == 14  # 40 / 3 = 13.3, rounded up


# --- A crowd against a live server -------------------------------------------------------------

# Sizes (seeded; the server's serving order is not): 12 raters x 300 pairs = 100 scored game
# ratings each (a qualification window is 20; a failed window's ratings do not count toward
# the share, see tools.simulator.crowd). An offline replay of the game's rules at these sizes
# gave rho >= 0.85 in 200 of 200 seeds (mean 0.95); when the share also counted the ratings of
# failed windows, rho fell below 0.8 in 15% of the runs (0.75 was seen here once).
RATERS = 12
PAIRS = 300
SMALL_RATERS, SMALL_PAIRS = 4, 30


def play_crowd(server: str, *, raters: int, pairs: int):
    token = Token.objects.create(user=researcher()).key
    config = CrowdConfig(
        server=server,
        raters=raters,
        pairs=pairs,
        seed=SEED,
        concurrency=live_concurrency(),
        admin_token=token,
        setup=True,
        retry_seconds=5,
    )
    result = crowd_simulate(config, after_setup=prime_like_a_model)
    print(format_report(result.report))  # shown by pytest when the test fails: the per-rater table
    return result


def assert_played_as_acknowledged(result, *, raters: int, pairs: int) -> None:
    report = result.report
    assert report["errors"] == {} and report["gave_up"] == {}
    # Every acknowledged rating is stored, as acknowledged; nothing else is.
    assert report["ratings_acknowledged"] == len(result.acks) == Rating.objects.count()
    assert acknowledged(result.acks) == stored_ratings()
    # Everyone played the tutorial; the game pairs rated are the ones the setup uploaded, and
    # each rating was simulated around the quality the setup gave its pair.
    assert report["ratings_by_stage"]["tutorial"] == 10 * raters
    game_pairs = set(CaptionPair.objects.filter(pool=Pool.GAME).values_list("id", flat=True))
    assert len(game_pairs) == pairs
    controls = set(CaptionPair.objects.filter(pool=Pool.CONTROL).values_list("id", flat=True))
    assert len(controls) == 25  # the setup's control pairs, met in the game as game pairs
    assert {a.pair_id for a in result.acks if a.stage == "game"} <= game_pairs | controls
    assert all(a.truth == result.truths[a.pair_id] for a in result.acks)
    # The game score correlated is the server's (the simulator keeps the last feedback's total).
    scores = dict(RaterProfile.objects.values_list("user_id", "game_score"))
    assert {o.user_id: o.game_score for o in result.outcomes} == {o.user_id: scores[o.user_id] for o in result.outcomes}


@pytest.mark.django_db(transaction=True)
def test_a_small_crowd_plays_through_http_and_every_acknowledged_rating_is_stored(live_server, fast_server):
    """The crowd's plumbing at a size a developer runs often; the competency claim is the full-size test's."""
    result = play_crowd(live_server.url, raters=SMALL_RATERS, pairs=SMALL_PAIRS)
    assert_played_as_acknowledged(result, raters=SMALL_RATERS, pairs=SMALL_PAIRS)
    assert result.report["ratings_by_stage"]["game"] > 0


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.django_db(transaction=True)
def test_a_seeded_crowd_plays_through_http_and_its_competency_is_recovered(live_server, fast_server):
    result = play_crowd(live_server.url, raters=RATERS, pairs=PAIRS)
    assert_played_as_acknowledged(result, raters=RATERS, pairs=PAIRS)
    rho = result.report["spearman_game_score"]["rho"]
    assert rho is not None and rho >= 0.8, result.report["spearman_game_score"]


@pytest.mark.django_db(transaction=True)
def test_setup_uploads_pairs_through_the_api_and_raters_rate_around_their_quality(live_server, fast_server):
    token = Token.objects.create(user=researcher()).key
    config = CrowdConfig(
        server=live_server.url,
        raters=2,
        pairs=5,
        seed=1,
        concurrency=live_concurrency(),
        admin_token=token,
        setup=True,
        share=3,
        retry_seconds=5,
    )
    result = crowd_simulate(config)

    # 10 tutorial, 20 probation and 25 control pairs (the pools were empty) and 5 game pairs, through
    # the API, with the qualities the setup drew: the expert ratings of those pairs.
    experts = dict(CaptionPair.objects.exclude(pool=Pool.GAME).values_list("id", "expert_rating"))
    assert len(experts) == 55 and all(result.truths[pair_id] == expert for pair_id, expert in experts.items())
    controls = CaptionPair.objects.filter(pool=Pool.CONTROL).values_list("expert_rating", flat=True)
    assert sorted(controls) == sorted([1, 2, 3, 4, 5] * 5)
    game = CaptionPair.objects.filter(pool=Pool.GAME)
    assert game.count() == 5 and sorted(result.truths[p.pk] for p in game) == [1, 2, 3, 4, 5]
    assert result.report["truth_source"] == "setup"
    # Each tutorial rating the server scored 2 - |expert - rating| against the truth the simulator used.
    tutorial = [a for a in result.acks if a.stage == "tutorial"]
    assert len(tutorial) == 20
    assert all(a.points == 2 - abs(a.truth - a.value) for a in tutorial)
    assert acknowledged(result.acks) == stored_ratings()
    # Both signed up through the API as annotators with consent.
    assert RaterProfile.objects.filter(consent_at__isnull=False).count() == 2


# --- Quality control over HTTP: raters who turn bad once qualified (SPEC 2.5) -----------------


def _had_a_window_under_the_threshold(user_id: int) -> bool:
    """Whether some ``DRIFT_WINDOW`` of the rater's control ratings in a row (excluded ones too:
    a drift excludes its own) agreed with the experts under ``DRIFT_THRESHOLD`` on average."""
    from annotators import journey

    controls = Rating.objects.filter(rater_id=user_id, stage=Pool.CONTROL).order_by("submitted_at", "id")
    agreements = [
        journey.control_agreement(value, expert) for value, expert in controls.values_list("value", "reference")
    ]
    window = journey.drift_window()
    return any(
        sum(agreements[start : start + window]) / window < journey.drift_threshold()
        for start in range(len(agreements) - window + 1)
    )


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True)
def test_the_drift_rule_sends_back_raters_who_turn_bad_and_the_straight_liner_ends_below_every_honest_rater(
    live_server, fast_server, settings
):
    """Honest raters of a VICR-like crowd (competencies 0.3 to 1), one straight-liner and one random
    clicker who rate well until they qualify and then always 3 / at random, on the real server.
    Full size (CI): the default control rate and drift rule, 200 game ratings each. Locally a
    smaller run: a control every 3 serves, a window of 8, 80 game ratings, honest raters of 0.7 and
    0.9 (``competencies``: evenly spread, so the same in every run).

    What no run can break, whoever the server serves what: the rule is applied as written (every
    rater sent back had 8 control ratings in a row whose mean agreement fell under the threshold),
    and the most competent honest rater is never sent back. What the drift rule makes near certain
    (Monte Carlo of the rule over the simulator's raters and the 25 controls' expert ratings,
    drawn at random, 2 x 10^5 runs each; locally ~10 honest controls, then ~27 more): the random
    clicker is sent back (it stays over the threshold in 7 x 10^-5 of runs; with a control every
    4 serves, 10^-3) and the straight-liner too (3 x 10^-4). A weak honest rater may be sent back
    (0.7: 1.3 x 10^-3 of runs, which broke the old claim that none is; 0.9: none seen): this test
    claims only that the rule's arithmetic did it."""
    from annotators.services import leaderboard

    if not FULL_TESTS:
        settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 3, "DRIFT_WINDOW": 8}
    share, pairs, honest = (200, 240, 4) if FULL_TESTS else (80, 100, 2)
    honest_range = (0.3, 1.0) if FULL_TESTS else (0.6, 1.0)
    token = Token.objects.create(user=researcher()).key
    config = CrowdConfig(
        server=live_server.url,
        raters=honest,
        pairs=pairs,
        seed=SEED,
        concurrency=live_concurrency(),
        admin_token=token,
        setup=True,
        share=share,
        retry_seconds=5,
        competency_range=honest_range,
        straight_liners=1,
        random_clickers=1,
        max_probation_rounds=1,
    )
    result = crowd_simulate(config, after_setup=prime_like_a_model)
    print(format_report(result.report))
    assert result.report["errors"] == {} and result.report["gave_up"] == {}
    by_kind = {}
    for outcome in result.outcomes:
        by_kind.setdefault(outcome.rater.kind, []).append(outcome)
    for kind in ("straight_liner", "random_clicker"):
        (bad,) = by_kind[kind]
        assert bad.qualified and bad.drifts == 1, (kind, bad)
        assert RaterProfile.objects.get(user_id=bad.user_id).state == "probation"
    for outcome in result.outcomes:
        assert (outcome.drifts > 0) <= _had_a_window_under_the_threshold(outcome.user_id), outcome
    best = max(by_kind["honest"], key=lambda o: o.rater.competency)
    assert best.drifts == 0, best
    # The leaderboard (everyone shown): the straight-liner below every honest rater on it.
    RaterProfile.objects.update(on_leaderboard=True)
    board = {row["profile_id"]: row["points"] for row in leaderboard(limit=100)}
    score = {o.user_id: board.get(RaterProfile.objects.get(user_id=o.user_id).pk, 0) for o in result.outcomes}
    (liner,) = by_kind["straight_liner"]
    # A weak honest rater may fail a qualification window (SPEC 2.3: the score reset to 0, off the
    # board, like the straight-liner's after its drift): the board never shows them in that order.
    honest_shown = [score[o.user_id] for o in by_kind["honest"] if score[o.user_id] > 0]
    assert honest_shown and all(points > score[liner.user_id] for points in honest_shown), score
