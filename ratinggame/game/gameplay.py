"""The game stage: serving game and control pairs and storing their ratings, the hot path (the
checks every rating passes first, at every stage, are ``ratinggame.game.rating``'s; what a rating
decides, from its rows alone, is ``ratinggame.game.decision``'s).

The same rules as every stage (``annotators.journey``, Algorithm 1 in ``scoring.consensus``,
the serving order in ``ratinggame.game.assignment``, the controls in ``ratinggame.game.controls``),
read and written through ``ratinggame.game.gateway``: the rater's profile as a row (locked by the
caller, ``rating.py``), the assignment with its pair (the pair locked by the same read), the next
pair's claim, and every write of the rating and the next serve as one statement on PostgreSQL
(``gateway.Batch``). Rare turns (the qualification window's last rating, a journey
``Transition``) take the ORM as the other stages do.

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
from ratinggame.game import gateway, sql
from ratinggame.game.assignment import Lock, game_pair_claim, order_start
from ratinggame.game.controls import control_pick
from ratinggame.game.decision import decide
from ratinggame.game.gateway import Batch
from ratinggame.game.prior import level_prior
from ratinggame.game.results import (
    Feedback,
    Served,
    expired,
    feedback_shown,
    shown_stage,
)
from ratinggame.game.sql import AssignmentRow, ImageRow, PairRow, ProfileRow
from ratinggame.game.transitions import transition_apply
from ratinggame.models import Pool
from ratinggame.pairs.storage import image_storage

GAME, CONTROL, ATTENTION = Pool.GAME.value, Pool.CONTROL.value, Pool.ATTENTION.value


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
    latest = gateway.latest_game_serve(profile.user_id)
    if latest is not None:
        assignment, pair, image = latest
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
    gateway.profile_writes(batch, profile, rated=False)
    return new.served(batch.run())


def pool_due(profile: "ProfileRow | RaterProfile", serve_number: int, *, participant: bool) -> str:
    """The pool game serve ``serve_number`` of this rater is drawn from: their block's control or
    an owed one (SPEC 2.5), a participant's attention check (SPEC 7), else the game (which the
    serve falls back to when the pool has nothing for them). The serve and the prefetch's guess
    both ask this, so the guess is the serve's."""
    seed = profile.order_seed
    if journey.control_due_now(seed, serve_number, profile.control_owed_at, profile.controls_owed):
        return CONTROL
    if participant and journey.attention_due(seed, serve_number):
        return ATTENTION
    return GAME


def serve_new(batch: Batch, profile: ProfileRow, now: datetime, *, wait: bool = False) -> NewServe | None:
    """The rater's next game serve, added to ``batch``: a control pair when this serve is their
    block's control (SPEC 2.5), else the next game pair of their order, with the slot it takes
    (SPEC 5); None when no game pair is free. Counts the serve and its image on ``profile`` (the
    caller writes them)."""
    serve_number = profile.game_serves
    avoid_images = images_to_avoid(profile)
    expires_at = now + timedelta(seconds=settings.RATINGGAME["ASSIGNMENT_EXPIRY_SECONDS"])
    found, stage = None, pool_due(profile, serve_number, participant=profile.participant)
    if stage != GAME:
        found = control_pick(rater_id=profile.user_id, seed=profile.order_seed, avoid_images=avoid_images, pool=stage)
    if found is None:
        start = order_start(profile.order_seed, serve_number)
        lock = Lock.WAIT if wait else Lock.SKIP
        found = game_pair_claim(rater_id=profile.user_id, start=start, avoid_images=avoid_images, lock=lock)
        stage = GAME
        if found is None:
            return None
    pair, image = found
    if stage == CONTROL:
        profile.control_owed_at, profile.controls_owed = journey.control_owed_after(
            profile.order_seed, serve_number, profile.control_owed_at, profile.controls_owed
        )
    insert = gateway.serve_writes(batch, profile, pair, stage, now, expires_at)
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
        window_rating_ids, pair = gateway.window_lock(
            profile, window_before.count, pair, control=assignment.stage == CONTROL
        )
    prior = level_prior()  # read by the process every few minutes, not per rating
    decision = decide(profile, assignment, pair, value, now, prior=prior, window_rating_ids=window_rating_ids)
    profile, pair = decision.profile, decision.pair
    batch = Batch()
    closed, inserted = gateway.rating_writes(
        batch, assignment, pair, value, now, points=decision.points, reference=decision.reference, shown=decision.shown
    )
    # The rater's one open game assignment was this one: the next pair is claimed here. Never
    # waiting for a locked pair while this one is held (the lock order); a miss is served after
    # the commit, by rating_submit.
    new = serve_new(batch, profile, now) if serve_next and decision.transition is None else None
    gateway.profile_writes(batch, profile, rated=True)
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
        transition_apply(
            profile=gateway.profile_model(profile), transition=decision.transition, rating_id=feedback.rating_id
        )
    return feedback if new is None else replace(feedback, next=new.served(results))


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
