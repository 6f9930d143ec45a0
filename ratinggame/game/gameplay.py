"""The game stage: serving game and control pairs and storing their ratings, the hot path (the
checks every rating passes first, at every stage, are ``ratinggame.game.rating``'s; what a rating
decides, from its rows alone, is ``ratinggame.game.decision``'s).

The same rules as every stage (``annotators.journey``, Algorithm 1 in ``scoring.consensus``,
the serving order in ``ratinggame.game.assignment``, the controls in ``ratinggame.game.controls``),
read and written through the prepared statements of ``ratinggame.game.sql``: the rater's profile
as a row (locked by the caller, ``rating.py``), the assignment with its pair (the pair locked by
the same read), the next pair's claim, and every write of the rating and the next serve as one
statement on PostgreSQL (``sql.write_plan``). Rare turns (the qualification window's last rating,
a journey ``Transition``) take the ORM as the other stages do.

Control pairs (SPEC 2.5) are served, shown and scored as game pairs: their assignments and
ratings carry the stage "control" (out of every consensus, cap and export) but everything the
rater sees says "game", and a control is scored by Algorithm 1 against its expert rating as the
consensus (``prev = [expert, expert]``). A study's attention checks (SPEC 7) are served on the
game screen to its participants, picked as controls are, and recorded with the stage "attention":
no points, no window, no consensus, no drift.
"""

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.conf import settings

from annotators import journey
from annotators.journey import Window
from annotators.models import RaterProfile
from ratinggame.game import sql
from ratinggame.game.assignment import Lock, game_pair_claim, order_start
from ratinggame.game.controls import control_pick
from ratinggame.game.decision import decide
from ratinggame.game.results import (
    Feedback,
    Served,
    expired,
    feedback_shown,
    not_found,
    shown_stage,
)
from ratinggame.game.sql import AssignmentRow, ImageRow, PairRow, ProfileRow, Write
from ratinggame.game.transitions import transition_apply
from ratinggame.models import CaptionPair, Pool, Rating, game_ratings
from ratinggame.pairs.storage import image_storage

GAME, CONTROL, ATTENTION = Pool.GAME.value, Pool.CONTROL.value, Pool.ATTENTION.value


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


@dataclass
class NewServe:
    """A serve added to a batch: the pair and image served, the assignment's place in the batch."""

    stage: str
    pair: PairRow
    image: ImageRow
    served_at: datetime
    expires_at: datetime
    insert: int  # the assignment insert's index in the batch
    skip: dict  # served_of's skip_open and skip_from for this serve

    def served(self, results: list[int]) -> Served:
        return served_of(
            results[self.insert], self.stage, self.served_at, self.expires_at, self.pair, self.image, **self.skip
        )


def skip_state(profile: ProfileRow, stage: str) -> dict:
    """Whether the rater may skip the pair of their latest game serve, and if not from which game
    pair on (SPEC 5's skip limit, ``journey.skip_open``): read from the profile, no query. An
    attention check is never skipped (SPEC 7), and no later pair is promised for it."""
    if stage == ATTENTION:
        return {"skip_open": False, "skip_from": None}
    if journey.skip_open(profile.game_serves, profile.game_skips):
        return {"skip_open": True, "skip_from": None}
    return {"skip_open": False, "skip_from": journey.next_skip_serve(profile.game_skips)}


# --- Serving --------------------------------------------------------------------------------------


def serve(profile: ProfileRow, now: datetime, *, wait: bool) -> Served | None:
    """The rater's open game pair (a control's too), or their next one; None when none is free."""
    latest = sql.latest_game_assignment().fetchone(profile.user_id)
    if latest is not None:
        assignment, pair, image = _split(latest, sql.ASSIGNMENT, sql.PAIR, sql.IMAGE)
        if assignment.submitted_at is None and assignment.expires_at > now:
            return served_of(
                assignment.id,
                assignment.stage,
                assignment.served_at,
                assignment.expires_at,
                pair,
                image,
                **skip_state(profile, assignment.stage),
            )
    batch = Batch()
    new = serve_new(batch, profile, now, wait=wait)
    if new is None:
        return None
    batch.add(
        sql.PROFILE_SERVED,
        *(profile.game_serves, profile.control_owed_at, profile.controls_owed, profile.recent_images, profile.id),
    )
    return new.served(batch.run())


def serve_new(batch: Batch, profile: ProfileRow, now: datetime, *, wait: bool = False) -> NewServe | None:
    """The rater's next game serve, added to ``batch``: a control pair when this serve is their
    block's control (SPEC 2.5), else the next game pair of their order, with the slot it takes
    (SPEC 5); None when no game pair is free. Counts the serve and its image on ``profile`` (the
    caller writes them)."""
    serve_number = profile.game_serves
    avoid_images = images_to_avoid(profile)
    expires_at = now + timedelta(seconds=settings.RATINGGAME["ASSIGNMENT_EXPIRY_SECONDS"])
    found, stage = None, GAME
    if journey.control_due_now(profile.order_seed, serve_number, profile.control_owed_at, profile.controls_owed):
        found = control_pick(rater_id=profile.user_id, seed=profile.order_seed, avoid_images=avoid_images)
        stage = CONTROL
    elif profile.participant and journey.attention_due(profile.order_seed, serve_number):
        found = control_pick(
            rater_id=profile.user_id, seed=profile.order_seed, avoid_images=avoid_images, pool=ATTENTION
        )
        stage = ATTENTION
    if found is None:
        start = order_start(profile.order_seed, serve_number)
        lock = Lock.WAIT if wait else Lock.SKIP
        found = game_pair_claim(rater_id=profile.user_id, start=start, avoid_images=avoid_images, lock=lock)
        stage = GAME
        if found is None:
            return None
        batch.add(sql.PAIR_SLOT_TAKEN, found[0].in_flight, found[0].assign_rank, found[0].id)
    pair, image = found
    holds_slot = stage == GAME
    if stage == CONTROL:
        profile.control_owed_at, profile.controls_owed = journey.control_owed_after(
            profile.order_seed, serve_number, profile.control_owed_at, profile.controls_owed
        )
    insert = batch.add(sql.ASSIGNMENT_INSERT, profile.user_id, pair.id, stage, now, expires_at, None, holds_slot)
    profile.game_serves = serve_number + 1
    profile.recent_images = images_seen(profile.recent_images, pair.image_id)
    return NewServe(stage, pair, image, now, expires_at, insert, skip_state(profile, stage))


# How many of the rater's latest game serves (controls and attention checks too) the next one
# keeps their images away from (SPEC 5: never two captions of one image in a row).
IMAGES_AVOIDED = 1


def images_to_avoid(profile: ProfileRow | RaterProfile) -> tuple[int, ...]:
    """The images the rater's next game serve keeps away from while a pair of another image is
    open: those of their latest ``IMAGES_AVOIDED`` serves, which the profile carries (read with it,
    so no query). The one place that decides it: every serve, the serve with a rating and the next
    image's guess ask this, and the claim and the control pick take however many images it gives."""
    return tuple(profile.recent_images[-IMAGES_AVOIDED:])


def images_seen(recent: list[int], image_id: int) -> list[int]:
    """The profile's ``recent_images`` after a serve of an image of ``image_id``: the newest last,
    as many as ``images_to_avoid`` reads."""
    return [*recent, image_id][-IMAGES_AVOIDED:]


def served_of(
    assignment_id: int,
    stage: str,
    served_at: datetime,
    expires_at: datetime,
    pair: PairRow,
    image: ImageRow,
    *,
    position: int | None = None,
    total: int | None = None,
    skip_open: bool = False,
    skip_from: int | None = None,
) -> Served:
    """What the rater is shown of a pair served to them, at every stage (``position`` of
    ``total``: a tutorial's or probation round's place)."""
    return Served(
        assignment_id=assignment_id,
        pair_id=pair.id,
        stage=shown_stage(stage),  # a control is a game pair to the rater
        image_url=image_storage().url(image.file),
        image_width=image.width,
        image_height=image.height,
        caption=pair.caption,
        served_at=served_at,
        min_submit_at=served_at + journey.min_delay(stage),
        expires_at=expires_at,
        position=position,
        total=total,
        image=image,
        skip_open=skip_open,
        skip_from=skip_from,
    )


# --- Submitting -----------------------------------------------------------------------------------


def assignment_read(assignment_id: int, *, lock: bool) -> tuple[AssignmentRow, PairRow, sql.RatingRow]:
    """An assignment with its pair (row-locked with ``lock``) and its rating (``id`` None when it
    has none), at every stage; raises ``not_found``."""
    read = sql.assignment_locking_pair() if lock else sql.assignment_with_pair()
    row = read.fetchone(False, journey.drift_window() - 1, assignment_id)
    if row is None:
        raise not_found()
    assignment, pair, rating = _split(row, sql.ASSIGNMENT, sql.PAIR, sql.RATING)
    assignment.rater_controls = row[-1]
    return assignment, pair, rating


def rate(
    profile: ProfileRow, assignment: AssignmentRow, pair: PairRow, value: int, now: datetime, *, serve_next: bool
) -> Feedback:
    """Store the rating of a game (or control) assignment, which the caller checked (``rating``:
    the profile locked, the assignment the rater's, open and old enough, the value on the scale):
    the rows it needs read, its decision (``ratinggame.game.decision``) written, as one batch;
    with ``serve_next``, the rater's next pair is served with it."""
    window_rating_ids: list[int] = []
    window_before = Window(count=profile.window_count, points=profile.window_points)
    if window_before.closing and assignment.stage != ATTENTION:
        window_rating_ids, pair = _window_lock(profile, window_before, pair, control=assignment.stage == CONTROL)
    decision = decide(profile, assignment, pair, value, now, window_rating_ids=window_rating_ids)
    profile, pair = decision.profile, decision.pair
    batch = Batch()
    closed = _rating_writes(batch, assignment, pair, now=now)
    inserted = rating_insert(batch, assignment, value, now, decision.points, decision.reference, decision.shown)
    # The rater's one open game assignment was this one: the next pair is claimed here. Never
    # waiting for a locked pair while this one is held (the lock order); a miss is served after
    # the commit, by rating_submit.
    new = serve_new(batch, profile, now) if serve_next and decision.transition is None else None
    batch.add(
        sql.PROFILE_AFTER_RATING,
        *(profile.game_score, profile.window_count, profile.window_points, profile.game_serves),
        *(profile.control_owed_at, profile.controls_owed, profile.recent_images, profile.id),
    )
    results = batch.run()
    if not results[closed]:
        raise expired()  # the caller's transaction rolls back: nothing of this rating is stored
    feedback = feedback_shown(
        rating_id=results[inserted],
        assignment_id=assignment.id,
        pair_id=pair.id,
        stage=assignment.stage,
        value=value,
        points=decision.points,
        reference=decision.reference,
        shown=decision.shown,
    )
    if decision.transition is not None:
        rater = RaterProfile.objects.get(pk=profile.id)
        transition_apply(profile=rater, transition=decision.transition, rating_id=feedback.rating_id)
    return feedback if new is None else replace(feedback, next=new.served(results))


def _window_lock(
    profile: ProfileRow, window_before: Window, pair: PairRow, *, control: bool
) -> tuple[list[int], PairRow]:
    """This rating closes the qualification window, which may fail and take all of its pairs out
    of consensus: lock them all now, in id order, before scoring (control pairs have no consensus
    and are never locked for it). The window's rating ids, and the rated pair as locked."""
    in_window = _window_ratings(profile, window_before.count)
    lock_ids = {pair_id for _, pair_id, stage in in_window if stage == GAME}
    if not control:
        lock_ids.add(pair.id)
    locked = list(CaptionPair.objects.select_for_update(no_key=True).filter(pk__in=sorted(lock_ids)).order_by("id"))
    if not control:
        pair = sql.PAIR.of(next(found for found in locked if found.pk == pair.id))
    return [rating_id for rating_id, _, _ in in_window], pair


def _rating_writes(batch: "Batch", assignment: AssignmentRow, pair: PairRow, *, now: datetime) -> int:
    """The assignment turned into a rating, and a game pair's new aggregates (a control or an
    attention check has none); the close's index in the batch (its count is 0 when the assignment
    was no longer open)."""
    if assignment.stage != GAME:
        return batch.add(sql.ASSIGNMENT_CLOSE, False, now, assignment.id)
    # A game pair's assignment gives its slot back: if the slot is gone already, expired and
    # released to another rater, the rating would overfill the pair.
    closed = batch.add(sql.GAME_ASSIGNMENT_CLOSE, False, now, assignment.id, True)
    batch.add(
        sql.PAIR_RATED,
        *(pair.human_count, pair.human_sum, pair.human_sumsq, pair.label_evidence),
        *(pair.in_flight, pair.assign_rank, pair.id),
    )
    return closed


def rating_insert(
    batch: "Batch",
    assignment: AssignmentRow,
    value: int,
    now: datetime,
    points: int,
    reference: int | None,
    shown: dict,
) -> int:
    """The rating's row, at every stage; its index in the batch."""
    return batch.add(
        sql.RATING_INSERT,
        *(assignment.id, assignment.pair_id, assignment.rater_id, assignment.stage, value, assignment.served_at),
        *(now, points, reference, shown, False, ""),
    )


def _window_ratings(profile: ProfileRow, count: int) -> list[tuple[int, int, str]]:
    """(rating id, pair id, stage) of the rater's last ``count`` game ratings of this window
    (game and control pairs), not excluded."""
    ratings = Rating.objects.filter(game_ratings(), rater_id=profile.user_id, excluded=False)
    if profile.game_entered_at is not None:
        ratings = ratings.filter(submitted_at__gte=profile.game_entered_at)
    return list(ratings.order_by("-id").values_list("id", "pair_id", "stage")[:count])


def feedback_of(rating: sql.RatingRow, assignment: AssignmentRow, explanation: str = "") -> Feedback:
    """The feedback of a stored rating, as it was shown (every stage: a teaching pair's with its
    ``explanation``)."""
    return feedback_shown(
        rating_id=rating.id,
        assignment_id=assignment.id,
        pair_id=assignment.pair_id,
        stage=rating.stage,
        value=rating.value,
        points=rating.points,
        reference=rating.reference,
        shown=rating.feedback,
        explanation=explanation,
    )


def _split(row: tuple, *shapes) -> list:
    """A row of several tables' columns (``shape.select`` one after the other) as their rows."""
    rows, start = [], 0
    for shape in shapes:
        rows.append(shape.read(row[start : start + shape.width]))
        start += shape.width
    return rows
