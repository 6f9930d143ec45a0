"""What one rating decides, from rows alone: no database, no clock.

A rating of a game, control or attention pair is decided here from the rater's and the pair's
rows, the assignment, the value and the time it came in; ``ratinggame.game.gameplay`` reads those
rows, and writes what the decision says (the rows after it, the rating with its feedback) and
applies its transition. A tutorial or probation rating is decided from the expert's rating and
where the rater is in the tutorial or the round (``teaching_decide``); ``ratinggame.game.rating``
reads that and writes what it decided. The rules are the journey's (``annotators.journey``) and
Algorithm 1 (``scoring.consensus``); this module only puts them in the order one rating meets
them, so that the order can be read, and tested, without a database (the level prior a pair's
rank is judged with comes in with the rows)
(``tests/ratinggame/game/test_decision.py``).
"""

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from annotators import journey
from annotators.journey import ControlResult, Transition, Window
from ratinggame.game import sql
from ratinggame.game.aggregates import in_force, pair_rating_add, rater_model_of
from ratinggame.game.assignment import pair_rank_refresh
from ratinggame.game.controls import control_results
from ratinggame.game.prior import Prior
from ratinggame.game.sql import AssignmentRow, PairRow, ProfileRow
from ratinggame.models import Pool
from scoring.consensus import consensus_from_aggregates, player_score, player_score_from_aggregates, tutorial_points

GAME, CONTROL, ATTENTION = Pool.GAME.value, Pool.CONTROL.value, Pool.ATTENTION.value


@dataclass(frozen=True)
class Decision:
    """A game-stage rating, decided: its points and the consensus it was scored against, what the
    feedback shows, the rater's and the pair's rows after it (the inputs are left as they were),
    and the journey's transition to apply once it is stored (the window's end, the drift rule)."""

    points: int
    reference: int | None
    shown: dict
    profile: ProfileRow
    pair: PairRow
    transition: Transition | None


def decide(
    profile: ProfileRow,
    assignment: AssignmentRow,
    pair: PairRow,
    value: int,
    now: datetime,
    *,
    prior: Prior,
    window_rating_ids: Sequence[int] = (),
) -> Decision:
    """The decision of ``value`` for ``assignment``, which the caller checked (the rater's, open,
    old enough, the value on the scale). ``prior``: the level prior the pair's rank is judged with
    (SPEC 5.1; None: flat), which the caller reads (``prior.level_prior``), so that nothing here
    reads the database. ``window_rating_ids``: when this rating closes the qualification window,
    the ids of the window's earlier ratings (a failed window takes them out of consensus); the
    assignment carries the rater's recent control ratings for the drift rule."""
    # Copies, with what was read beside the rows (``ProfileRow.participant``): the decision's own.
    profile, pair = copy.copy(profile), copy.copy(pair)
    # An attention check (SPEC 7) is in no score, window or consensus: recorded, and that is all.
    counted = assignment.stage != ATTENTION
    window_before = Window(count=profile.window_count, points=profile.window_points)
    points, reference, shown = _score(profile, assignment, pair, value, prior)
    window = window_before.after(points) if counted else window_before
    decided = _decided(assignment, window, window_before, window_rating_ids, value, reference, now) if counted else None
    profile.game_score = journey.score_after(profile.game_score, points, decided)
    profile.window_count, profile.window_points = window.count, window.points
    shown |= {
        "stage_total": profile.game_score,
        "stage_max": None,
        "transition": decided.name if decided is not None else window.outcome if window_before.open else None,
        "window": [window.count, window.points],
        "level": journey.level_for(profile.game_score),
    }
    return Decision(points, reference, shown, profile, pair, decided)


def _score(
    profile: ProfileRow, assignment: AssignmentRow, pair: PairRow, value: int, prior: Prior
) -> tuple[int, int | None, dict]:
    """(points, the consensus it was scored against, what the feedback says of it) by Algorithm 1;
    a game pair's aggregates, slot and rank are moved on (on ``pair``, the decision's copy)."""
    if assignment.stage == ATTENTION:
        # SPEC 7: no points; the answer its caption asked for is kept as the reference.
        return 0, pair.expert_rating, {"first_rater": False, "attention": True}
    if assignment.stage == CONTROL:
        # SPEC 2.5: scored as a game pair whose two earlier ratings were the expert's.
        reference = pair.expert_rating
        return player_score(value, [reference, reference]), reference, {"first_rater": False}
    before = in_force(pair)
    first_rater = before.count == 0
    points = 0 if first_rater else player_score_from_aggregates(value, before.count, before.total, before.total_sq)
    pair.in_flight = max(pair.in_flight - 1, 0)
    pair_rating_add(pair, value, rater_model_of(profile))
    pair_rank_refresh(pair, prior=prior)
    return points, consensus_from_aggregates(before.count, before.total), {"first_rater": first_rater}


def _decided(
    assignment: AssignmentRow,
    window: Window,
    window_before: Window,
    window_rating_ids: Sequence[int],
    value: int,
    reference: int | None,
    now: datetime,
) -> Transition | None:
    """What the journey decides after this rating: the window's end (SPEC 2.3), else, after a
    control rating, the drift rule (SPEC 2.5) over the rater's control ratings that the read of
    the assignment carried."""
    if window_before.open:
        return journey.window_transition(window, list(window_rating_ids))
    if assignment.stage != CONTROL:
        return None
    latest = ControlResult(submitted_at=now, agreement=journey.control_agreement(value, reference))
    earlier = sql.rater_controls_read(assignment.rater_controls)
    return journey.drift_transition(control_results(earlier, latest), window)


@dataclass(frozen=True)
class TeachingDecision:
    """A tutorial or probation rating, decided: its points against the expert's rating, the stage's
    points with it, and, when it was the stage's last pair, whether the rater passed
    (``transition``: ``"<stage>_passed"`` or ``"<stage>_failed"``; None before the last pair)."""

    points: int
    total: int
    passed: bool | None
    shown: dict

    @property
    def finished(self) -> bool:
        return self.passed is not None


def teaching_decide(stage: str, value: int, expert: int, *, earlier: int, rated: int, size: int) -> TeachingDecision:
    """The decision of ``value`` for the pair at place ``rated`` (0-based) of a tutorial or a
    probation round of ``size`` pairs, ``earlier`` points before it (SPEC 2.1 and 2.2: 2 - |expert -
    rating| points a pair; the pass mark, half of the tutorial's maximum and 5/8 of a round's, is
    ``annotators.journey``'s)."""
    points = tutorial_points(value, expert)
    total = earlier + points
    passed = None
    if rated + 1 == size:
        pass_mark = journey.tutorial_pass_mark(size) if stage == Pool.TUTORIAL else journey.probation_pass_mark(size)
        passed = total >= pass_mark
    transition = None if passed is None else f"{stage}_passed" if passed else f"{stage}_failed"
    shown = {"stage_total": total, "stage_max": 2 * size, "transition": transition}
    return TeachingDecision(points, total, passed, shown)
