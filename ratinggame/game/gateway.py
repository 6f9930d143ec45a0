"""Every read and write of a serve and a rating, at every stage, and the order they lock rows in.

The services decide (``rating``: the checks every rating passes; ``gameplay``: the game's serve
and rating; ``decision``: what a rating scores and moves, from its rows alone); this module is
where they meet the database. The statements are built in ``ratinggame.game.sql`` (once per
process, from the models' names). Three reads choose what to serve and stay beside their rules:
the claim's probes of the serving order (``ratinggame.game.assignment``), the control pick
(``ratinggame.game.controls``) and the next teaching pair (``annotators.progress``). The journey's
moves (``annotators.progress``: into the game, onto probation, a round's score) and the rarer
writes of a skip and a report (``skips``, ``reports``) take the ORM, in the same lock order.

One lock order everywhere, so no deadlock: the rater's profile row first (``profile_locked``,
the first query of every serve, rating and skip), then caption pairs in id order (the rated
pair by the read of its assignment, ``assignment_read``; a closing window's pairs together,
``window_lock``; a claimed pair by the claim, which never waits while it holds another pair).
Every row lock is FOR NO KEY UPDATE (``sql.row_lock`` says why). The writes of one transaction
go out together (``Batch``: one statement on PostgreSQL), after every read.
"""

from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser

from annotators import journey, progress
from annotators.models import RaterProfile
from ratinggame.game import sql
from ratinggame.game.results import not_found
from ratinggame.game.sql import AssignmentRow, ImageRow, PairRow, ProfileRow, Write
from ratinggame.models import Assignment, CaptionPair, Pool, Rating, game_ratings

GAME = Pool.GAME.value


# --- Reads ----------------------------------------------------------------------------------------


def profile_locked(rater: AbstractBaseUser) -> ProfileRow:
    """The rater's profile as a row, locked to the end of the transaction (made on first use:
    users made by staff have none yet)."""
    row = sql.profile_locked().fetchone(rater.pk)
    if row is None:
        progress.profile_for(rater)
        row = sql.profile_locked().fetchone(rater.pk)
    return sql.profile_with_participant(row)


def profile_model(profile: ProfileRow) -> RaterProfile:
    """The profile (locked already) as a model, for the moves of ``annotators.progress``."""
    return RaterProfile.objects.get(pk=profile.id)


def latest_game_serve(rater_id: int) -> tuple[AssignmentRow, PairRow, ImageRow] | None:
    """The rater's latest serve on the game screen (a control or an attention check too) with its
    pair and image; None before their first."""
    row = sql.latest_game_assignment().fetchone(rater_id)
    return None if row is None else split(row, sql.ASSIGNMENT, sql.PAIR, sql.IMAGE)


def assignment_read(assignment_id: int, *, lock: bool) -> tuple[AssignmentRow, PairRow, sql.RatingRow]:
    """An assignment with its pair (row-locked with ``lock``) and its rating (``id`` None when it
    has none), at every stage; raises ``not_found``."""
    read = sql.assignment_locking_pair() if lock else sql.assignment_with_pair()
    row = read.fetchone(False, journey.drift_window() - 1, assignment_id)
    if row is None:
        raise not_found()
    assignment, pair, rating = split(row, sql.ASSIGNMENT, sql.PAIR, sql.RATING)
    assignment.rater_controls = row[-1]
    return assignment, pair, rating


def explanation_of(pair_id: int) -> str:
    """A teaching pair's explanation, shown with its feedback (read only then)."""
    return CaptionPair.objects.filter(pk=pair_id).values_list("explanation", flat=True).first() or ""


def tutorial_ratings(rater: AbstractBaseUser) -> list[tuple[int, int]]:
    """(pair id, points) of the rater's tutorial ratings."""
    return list(Rating.objects.filter(rater=rater, stage=Pool.TUTORIAL).values_list("pair_id", "points"))


def teaching_assignment(
    rater: AbstractBaseUser, pair_id: int, stage: str, now: datetime, expires_at: datetime
) -> tuple[AssignmentRow, PairRow, ImageRow]:
    """The rater's open assignment of the teaching pair ``pair_id``, or a new one served now."""
    opened = (
        Assignment.objects.open(now)
        .filter(rater=rater, stage=stage, pair_id=pair_id)
        .select_related("pair__image")
        .order_by("-id")
        .first()
    )
    if opened is None:
        pair = CaptionPair.objects.select_related("image").get(pk=pair_id)
        opened = Assignment.objects.create(rater=rater, pair=pair, stage=stage, served_at=now, expires_at=expires_at)
    pair = opened.pair  # read with its image: with the open assignment, or for the new one
    return sql.ASSIGNMENT.of(opened), sql.PAIR.of(pair), sql.IMAGE.of(pair.image)


def window_lock(profile: ProfileRow, count: int, pair: PairRow, *, control: bool) -> tuple[list[int], PairRow]:
    """The rating closes the qualification window of ``count`` ratings before it, which may fail
    and take all of its pairs out of consensus: lock them all now, in id order, before scoring
    (control pairs have no consensus and are never locked for it). The window's rating ids, and
    the rated pair as locked."""
    in_window = _window_ratings(profile, count)
    lock_ids = {pair_id for _, pair_id, stage in in_window if stage == GAME}
    if not control:
        lock_ids.add(pair.id)
    locked = list(CaptionPair.objects.select_for_update(no_key=True).filter(pk__in=sorted(lock_ids)).order_by("id"))
    if not control:
        pair = sql.PAIR.of(next(found for found in locked if found.pk == pair.id))
    return [rating_id for rating_id, _, _ in in_window], pair


def _window_ratings(profile: ProfileRow, count: int) -> list[tuple[int, int, str]]:
    """(rating id, pair id, stage) of the rater's last ``count`` game ratings of this window
    (game and control pairs), not excluded."""
    ratings = Rating.objects.filter(game_ratings(), rater_id=profile.user_id, excluded=False)
    if profile.game_entered_at is not None:
        ratings = ratings.filter(submitted_at__gte=profile.game_entered_at)
    return list(ratings.order_by("-id").values_list("id", "pair_id", "stage")[:count])


def split(row: tuple, *shapes) -> list:
    """A row of several tables' columns (``shape.select`` one after the other) as their rows."""
    rows, start = [], 0
    for shape in shapes:
        rows.append(shape.read(row[start : start + shape.width]))
        start += shape.width
    return rows


# --- Writes ---------------------------------------------------------------------------------------


class Batch:
    """The writes of one transaction, collected in order and sent together (``sql.write_plan``)."""

    def __init__(self) -> None:
        self.writes: list[Write] = []
        self.values: list[tuple] = []

    def add(self, write: Write, *values) -> int:
        self.writes.append(write)
        self.values.append(values)
        return len(self.writes) - 1

    def run(self) -> list[int]:
        return sql.write_plan(*self.writes).run(self.values)


def rating_writes(
    batch: Batch,
    assignment: AssignmentRow,
    pair: PairRow,
    value: int,
    now: datetime,
    *,
    points: int,
    reference: int | None,
    shown: dict,
) -> tuple[int, int]:
    """A rating of any stage: its assignment closed, a game pair's new aggregates (the other
    stages' pairs have none) and the rating's row. The close's index in the batch (its count is 0
    when the assignment was no longer open) and the insert's."""
    if assignment.stage != GAME:
        closed = batch.add(sql.ASSIGNMENT_CLOSE, False, now, assignment.id)
    else:
        # A game pair's assignment gives its slot back: if the slot is gone already, expired and
        # released to another rater, the rating would overfill the pair.
        closed = batch.add(sql.GAME_ASSIGNMENT_CLOSE, False, now, assignment.id, True)
        batch.add(
            sql.PAIR_RATED,
            *(pair.human_count, pair.human_sum, pair.human_sumsq, pair.label_evidence),
            *(pair.in_flight, pair.assign_rank, pair.id),
        )
    inserted = batch.add(
        sql.RATING_INSERT,
        *(assignment.id, assignment.pair_id, assignment.rater_id, assignment.stage, value, assignment.served_at),
        *(now, points, reference, shown, False, ""),
    )
    return closed, inserted


def serve_writes(
    batch: Batch, profile: ProfileRow, pair: PairRow, stage: str, now: datetime, expires_at: datetime
) -> int:
    """A game-screen serve: a game pair's slot taken (its ``in_flight`` and rank as claimed) and
    the assignment; the insert's index in the batch."""
    holds_slot = stage == GAME
    if holds_slot:
        batch.add(sql.PAIR_SLOT_TAKEN, pair.in_flight, pair.assign_rank, pair.id)
    return batch.add(sql.ASSIGNMENT_INSERT, profile.user_id, pair.id, stage, now, expires_at, None, holds_slot)


def profile_writes(batch: Batch, profile: ProfileRow, *, rated: bool) -> None:
    """The rater's profile after a serve (the serve counter, the controls owed, the recent
    images), and with ``rated`` after a rating too (the score and the window)."""
    served = (profile.game_serves, profile.control_owed_at, profile.controls_owed, profile.recent_images)
    if rated:
        batch.add(
            sql.PROFILE_AFTER_RATING,
            profile.game_score,
            profile.window_count,
            profile.window_points,
            *served,
            profile.id,
        )
    else:
        batch.add(sql.PROFILE_SERVED, *served, profile.id)
