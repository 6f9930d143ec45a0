"""A rating's decision from rows alone (``ratinggame.game.decision``): no database.

The numbers are SPEC 3's worked examples of Algorithm 1, SPEC 2.3's window (20 ratings, 25
points), SPEC 2.5's drift rule and SPEC 2.1 and 2.2's pass marks (10 of 20, 25 of 40). No test
here has the ``django_db`` mark: pytest-django refuses any query, so each test also shows that
the decision reads and writes nothing.
"""

from datetime import UTC, datetime, timedelta

import pytest

from ratinggame.game.aggregates import pair_rating_add, rater_model_of
from ratinggame.game.decision import decide, teaching_decide
from ratinggame.game.sql import AssignmentRow, PairRow, ProfileRow
from ratinggame.models import AssignRank
from scoring import ordinal

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def profile_row(**fields) -> ProfileRow:
    """A rater past the qualification window (20 of 20 ratings, 40 points), 100 points in the game."""
    values = {
        "id": 7,
        "user_id": 70,
        "state": "game",
        "consent_at": NOW - timedelta(days=2),
        "game_score": 100,
        "game_entered_at": NOW - timedelta(days=1),
        "created_at": NOW - timedelta(days=2),
        "window_count": 20,
        "window_points": 40,
        "game_serves": 30,
        "control_owed_at": None,
        "controls_owed": 0,
        "game_skips": 0,
        "order_seed": 1,
        "label_precision": None,
        "label_severity": None,
        "label_lapse": None,
        "recent_images": [],
    }
    return ProfileRow(**(values | fields))


def pair_row(primes=(), humans=(), expert=None) -> PairRow:
    return PairRow(
        id=3,
        image_id=30,
        caption="a dog on a beach",
        pool="game",
        expert_rating=expert,
        human_count=len(humans),
        human_sum=sum(humans),
        human_sumsq=sum(h * h for h in humans),
        primes=list(primes),
        in_flight=1,
        assign_rank=0,
        withdrawn_at=None,
        label_evidence=[0.0] * 5,
    )


def assignment_row(stage="game", controls: list[tuple[datetime, int, int]] = ()) -> AssignmentRow:
    assignment = AssignmentRow(
        id=5,
        rater_id=70,
        pair_id=3,
        stage=stage,
        served_at=NOW - timedelta(seconds=10),
        expires_at=NOW + timedelta(minutes=20),
        submitted_at=None,
        skipped_at=None,
        holds_slot=True,
    )
    # As the assignment's read carries them: "submitted_at|value|reference", ";" between.
    assignment.rater_controls = ";".join(f"{at.isoformat()}|{value}|{ref}" for at, value, ref in controls) or None
    return assignment


@pytest.mark.parametrize(
    ("before", "value", "points"),
    [
        ((4, 4), 4, 2),
        ((4, 4), 3, 0),
        ((4, 4), 2, -1),
        ((4, 4), 1, -2),
        ((1, 5), 4, 1),
        ((1, 5), 5, 0),
    ],
)
def test_a_game_rating_scores_spec_3s_worked_examples_against_the_primes_and_the_humans(before, value, points):
    for pair in (pair_row(primes=before), pair_row(humans=before)):
        decision = decide(profile_row(), assignment_row(), pair, value, NOW, prior=None)
        assert decision.points == points
        assert decision.reference == (3 if before == (1, 5) else 4)  # r = round_half_up(mean(prev))
        assert decision.profile.game_score == 100 + points
        assert decision.transition is None
        assert decision.shown["stage_total"] == 100 + points and decision.shown["first_rater"] is False


def test_the_pair_after_the_rating_counts_it_gives_its_slot_back_and_the_rows_given_stay_as_they_were():
    profile, pair = profile_row(), pair_row(primes=(4, 4), humans=(4,))
    decision = decide(profile, assignment_row(), pair, 2, NOW, prior=None)
    after = decision.pair
    assert (after.human_count, after.human_sum, after.human_sumsq, after.in_flight) == (2, 6, 20, 0)
    assert after.label_evidence != [0.0] * 5
    assert (pair.human_count, pair.in_flight, pair.label_evidence) == (1, 1, [0.0] * 5)
    assert profile.game_score == 100


def test_the_pairs_rank_is_judged_with_the_level_prior_passed_in(settings):
    """SPEC 5.1's settled policy: a third 3 after two is not settled on a flat prior, and is on one
    that makes 3 the common level. The decision takes the prior with the rows (no query for it)."""
    settings.RATINGGAME = {**settings.RATINGGAME, "ASSIGNMENT_POLICY": "settled"}
    pair = pair_row()
    for value in (3, 3):
        pair_rating_add(pair, value, rater_model_of(profile_row()))
    threshold = settings.RATINGGAME["SETTLED_THRESHOLD"]
    ranks = {}
    for prior in (None, (0.02, 0.03, 0.9, 0.03, 0.02)):
        after = decide(profile_row(), assignment_row(), pair, 3, NOW, prior=prior).pair
        settled = ordinal.is_settled(after.label_evidence, threshold, prior)
        ranks[prior] = after.assign_rank
        assert after.assign_rank == (None if settled else AssignRank.DISAGREEING)
    assert ranks == {None: AssignRank.DISAGREEING, (0.02, 0.03, 0.9, 0.03, 0.02): None}


def test_the_first_rater_of_a_pair_with_no_primes_scores_0_and_is_told_so():
    decision = decide(profile_row(), assignment_row(), pair_row(), 5, NOW, prior=None)
    assert (decision.points, decision.reference, decision.shown["first_rater"]) == (0, None, True)
    assert decision.pair.human_count == 1


def test_a_control_is_scored_against_its_expert_rating_and_moves_no_pair_counter():
    pair = pair_row(primes=(1, 1), expert=4)
    decision = decide(profile_row(), assignment_row("control"), pair, 3, NOW, prior=None)
    assert (decision.points, decision.reference) == (0, 4)  # [4, 4] before it, x = 3: 0 points
    assert (decision.pair.human_count, decision.pair.in_flight) == (0, 1)


def test_an_attention_check_scores_nothing_and_leaves_the_window_and_the_score():
    profile = profile_row(window_count=5, window_points=6)
    decision = decide(profile, assignment_row("attention"), pair_row(expert=2), 2, NOW, prior=None)
    assert (decision.points, decision.reference, decision.shown["attention"]) == (0, 2, True)
    assert (decision.profile.window_count, decision.profile.window_points) == (5, 6)
    assert decision.profile.game_score == 100 and decision.transition is None


@pytest.mark.parametrize(("points_before", "outcome"), [(22, "window_failed"), (23, "window_passed")])
def test_the_twentieth_rating_closes_the_window_passed_from_25_points(points_before, outcome):
    profile = profile_row(window_count=19, window_points=points_before, game_score=points_before)
    pair = pair_row(primes=(4, 4))
    decision = decide(profile, assignment_row(), pair, 4, NOW, prior=None, window_rating_ids=[11, 12])
    assert decision.shown["transition"] == outcome
    assert decision.shown["window"] == [20, points_before + 2]
    if outcome == "window_failed":  # SPEC 2.3: the score reset, the window's ratings out of consensus
        assert decision.transition.exclude_ids == (11, 12)
        assert decision.profile.game_score == 0
    else:
        assert decision.transition is None
        assert decision.profile.game_score == points_before + 2


def test_a_control_that_brings_the_mean_agreement_under_the_threshold_sends_the_rater_back(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "DRIFT_WINDOW": 3, "DRIFT_THRESHOLD": 1.1}
    earlier = [(NOW - timedelta(hours=h), value, 4) for h, value in ((1, 4), (2, 2))]  # newest first: 2, then 0
    pair = pair_row(expert=4)
    # Agreements 0, 2 and now 1 (x = 3 against 4): mean 1.0, under 1.1.
    drifted = decide(profile_row(), assignment_row("control", earlier), pair, 3, NOW, prior=None)
    assert drifted.transition.name == "drift" and drifted.shown["transition"] == "drift"
    assert drifted.transition.exclude_since == NOW - timedelta(hours=2)  # the first of the three
    assert drifted.profile.game_score == 0
    # Exact this time (2): mean 1.33, and the rater goes on.
    kept = decide(profile_row(), assignment_row("control", earlier), pair, 4, NOW, prior=None)
    assert kept.transition is None and kept.profile.game_score == 102


# --- Tutorial and probation (SPEC 2.1 and 2.2) -------------------------------------------------------


@pytest.mark.parametrize(("value", "points"), [(4, 2), (3, 1), (5, 1), (1, -1)])
def test_a_teaching_rating_scores_2_minus_its_distance_to_the_expert(value, points):
    decided = teaching_decide("tutorial", value, 4, earlier=3, rated=2, size=10)
    assert (decided.points, decided.total, decided.passed, decided.finished) == (points, 3 + points, None, False)
    assert decided.shown == {"stage_total": 3 + points, "stage_max": 20, "transition": None}


@pytest.mark.parametrize(
    ("stage", "size", "earlier", "value", "passed"),
    [
        ("tutorial", 10, 8, 4, True),  # 10 of 20: at least 10 passes
        ("tutorial", 10, 8, 3, False),  # 9
        ("probation", 20, 23, 4, True),  # 25 of 40: at least 25 passes
        ("probation", 20, 23, 3, False),  # 24
    ],
)
def test_the_last_pair_of_a_tutorial_or_a_round_decides_it_at_its_pass_mark(stage, size, earlier, value, passed):
    decided = teaching_decide(stage, value, 4, earlier=earlier, rated=size - 1, size=size)
    assert decided.finished and decided.passed is passed
    assert decided.shown["transition"] == f"{stage}_{'passed' if passed else 'failed'}"
    assert decided.shown["stage_max"] == 2 * size


def test_a_smaller_tutorial_passes_at_half_its_maximum():
    # 4 tutorial pairs: the pass mark is 4 of 8 (SPEC 2.1's 10 of 20, scaled).
    assert teaching_decide("tutorial", 4, 4, earlier=2, rated=3, size=4).passed is True
    assert teaching_decide("tutorial", 3, 4, earlier=2, rated=3, size=4).passed is False
