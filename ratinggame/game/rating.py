"""The rating screens' services: serve a pair, take a rating, give feedback (SPEC sections 2 and 3).

One journey, three stages. The tutorial (``journey.TUTORIAL_SIZE`` expert-rated pairs) and
probation rounds score ``2 - |expert - rating|``; the game scores a rating against the consensus
of the ratings in force before it (Algorithm 1, ``scoring.consensus``), and its first ratings
after every entry form the qualification window. The journey's rules and numbers are
``annotators.journey``; where a rater is and the moves between steps, ``annotators.progress``.

Times are the server's: a rating is accepted only from ``journey.min_seconds`` after the
server served the pair to that rater, until the assignment expires. A submission changes the
rating, the pair's aggregates, the rater's scores and state in one transaction, with the
rater's profile row and the pair row locked (profile first, then pairs in id order: one lock
order everywhere, so no deadlock). Submitting the same assignment again returns the first
feedback, marked ``already_rated`` (the value sent again is not taken).

One path for every stage: this module holds the transaction and the checks, in one order, of
every rating (``_submit``: the rater's profile locked, the assignment read with its pair and its
rating, then found, the rater's, not rated yet, of the rater's stage, old enough, not expired);
then the stage scores it: the tutorial and probation here, the game (and its control pairs) in
``ratinggame.game.gameplay``. Every stage reads and writes through one gateway,
``ratinggame.game.gateway`` (its rows, its lock order, a rating's writes sent together); the
journey's moves (``annotators.progress``) take the ORM.

A study participant's session (SPEC 7) has one gate, ``session_open``, asked under the profile's
lock by every serve, rating and skip: once the session has ended nothing more is served or taken
(a rating stored before is still answered with its feedback), and the rating that ends it serves
nothing after it (``Feedback.session_ended``).

One request per rating: ``rating_submit(..., serve_next=True)`` also serves the rater's next
pair. In the game that happens in the rating's own transaction, and the transaction's writes
go to the database together: a rating and the next serve cost a handful of statements
(``tests/ratinggame/game/test_statements.py`` holds the count).
"""

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotators import journey, progress
from annotators.journey import Step, Window
from annotators.models import RaterProfile
from annotators.study.completion import Session, session_end_check, session_of
from ratinggame.game import gameplay, gateway, sql
from ratinggame.game.assignment import assignments_release_expired
from ratinggame.game.decision import TeachingDecision, teaching_decide
from ratinggame.game.results import (
    SESSION_ENDED,
    Feedback,
    RatingRejected,
    Served,
    check_may_rate,
    clean_assignment_id,
    clean_value,
    expired,
    not_yours,
    session_closed,
    shown_stage,
    too_early,
    wrong_stage,
)
from ratinggame.game.sql import ProfileRow
from ratinggame.models import SERVED_IN_GAME, Pool

__all__ = [
    "Feedback",
    "RatingRejected",
    "Served",
    "check_may_rate",
    "feedback_for",
    "pair_serve",
    "rating_submit",
    "shown_stage",
]


# --- Serving --------------------------------------------------------------------------------


def pair_serve(*, rater: AbstractBaseUser, now: datetime | None = None) -> Served | None:
    """The rater's next pair for their current step, or the assignment already open for it.

    Reload-safe: while an assignment of the current step is open (unsubmitted, unexpired), it
    is returned unchanged, with its original served time. None when nothing is left to rate.
    """
    now = now or timezone.now()
    try:
        served, step = _serve(rater, now, wait=False)
    except RatingRejected as rejected:
        outcome_keep(rejected, rater, now)
        raise
    if served is None and step == Step.GAME:
        # Every open pair may be locked by raters claiming or rating it at this moment: wait
        # for the first, in a transaction of its own, which holds no other pair's lock.
        served, step = _serve(rater, now, wait=True)
    if served is None and step == Step.GAME and assignments_release_expired(now=now):
        # Nothing open: the slots of expired assignments may be all that is left (the periodic
        # task ratinggame.tasks.release_expired_assignments gives them back otherwise).
        served, step = _serve(rater, now, wait=True)
    return served


def _serve(rater, now: datetime, *, wait: bool) -> tuple[Served | None, Step]:
    with transaction.atomic():
        # The profile lock makes two requests of the same rater serve one after the other.
        profile = gateway.profile_locked(rater)
        step = journey.step_of(profile)
        check_may_rate(step)
        session_open(rater, profile, now)
        if step == Step.TUTORIAL:
            return _serve_tutorial(rater, now), step
        if step == Step.PROBATION:
            return _serve_probation(rater, gateway.profile_model(profile), now), step
        return gameplay.serve(profile, now, wait=wait), step


def outcome_keep(rejected: RatingRejected, rater, now: datetime) -> None:
    """After a refusal: a refusal rolls its transaction back, and with it the session's outcome
    that the gate may have just recorded (a session that ended by other means than a rating of
    this rater's: a quota lowered, a rating imported): recorded again, on its own."""
    if rejected.code == SESSION_ENDED and rater is not None:
        session_end_check(user=rater, now=now)


def session_open(rater, profile: ProfileRow, now: datetime) -> Session | None:
    """The study session's gate (SPEC 7), asked under the rater's profile lock by every serve,
    rating and skip: a participant's session, refused once it has ended (``session_ended``);
    None for a rater who did not come through a platform link (no query: read with the profile)."""
    if not profile.participant:
        return None
    session = session_of(user=rater, now=now)
    if session is not None and session.closed:
        raise session_closed(session.participation.outcome)
    return session


def _serve_tutorial(rater, now: datetime) -> Served | None:
    pair_ids = progress.tutorial_pair_ids()
    rated = {pair_id for pair_id, _points in gateway.tutorial_ratings(rater)}
    remaining = [pair_id for pair_id in pair_ids if pair_id not in rated]
    if not remaining:
        return None
    position = len(pair_ids) - len(remaining) + 1
    return _serve_pair(rater, remaining[0], Pool.TUTORIAL, now, position=position, total=len(pair_ids))


def _serve_probation(rater, profile: RaterProfile, now: datetime) -> Served | None:
    current = progress.probation_round_current(profile)
    if current is None or current.finished_at is not None:
        # On probation without an open round (moved here by staff): start one.
        current = progress.probation_round_start(profile=profile)
    if current.rated >= len(current.pair_order):
        return None
    pair_id = current.pair_order[current.rated]
    return _serve_pair(rater, pair_id, Pool.PROBATION, now, position=current.rated + 1, total=len(current.pair_order))


def _serve_pair(rater, pair_id: int, stage: str, now: datetime, *, position: int, total: int) -> Served:
    """The teaching pair ``pair_id``: its open assignment, or a new one served now."""
    expires_at = now + timedelta(seconds=settings.RATINGGAME["ASSIGNMENT_EXPIRY_SECONDS"])
    opened, pair, image = gateway.teaching_assignment(rater, pair_id, stage, now, expires_at)
    return gameplay.served_of(
        opened.id, stage, opened.served_at, opened.expires_at, pair, image, position=position, total=total
    )


# --- Submitting -----------------------------------------------------------------------------


def rating_submit(
    *,
    rater: AbstractBaseUser | None,
    assignment_id: int,
    value: object,
    now: datetime | None = None,
    serve_next: bool = False,
    locked_rater: Callable[[], tuple[AbstractBaseUser, ProfileRow]] | None = None,
) -> Feedback:
    """Store the rater's rating of a pair served to them; return what to show them.

    ``value`` must be a whole number 1..5 (an int, or the text "1".."5" a form sends).
    Served and submitted times are the server's; nothing the client says about time is used.
    Raises RatingRejected; a rejected submission changes nothing.

    ``serve_next``: the feedback also carries the rater's next pair (``Feedback.next``, None
    when nothing is left), served at ``now`` as ``pair_serve`` would serve it; a repeated
    submission carries the pair open now.

    ``locked_rater``: reads who rates and their profile row, locked, first thing in the rating's
    transaction (the one-request rating reads them with the rater's token or session in one query,
    ``ratinggame.game.signed_in``; ``rater`` is then None); by default ``profile_locked(rater)``.
    An exception it raises leaves nothing changed.
    """
    now = now or timezone.now()
    session = None
    try:
        with transaction.atomic():
            if locked_rater is not None:
                rater, profile = locked_rater()
            else:
                profile = gateway.profile_locked(rater)
            try:
                session = session_open(rater, profile, now)
            except RatingRejected as closed:
                # The session has ended: a rating stored before is still answered with its feedback.
                stored = _stored_feedback(rater, assignment_id)
                if stored is None:
                    raise closed from None
                return stored
            feedback = _submit(rater, profile, assignment_id, value, now, serve_next=serve_next, session=session)
    except IntegrityError:
        # The one-rating-per-assignment constraint: a concurrent submission of the same
        # assignment stored its rating first. Show that one (idempotent).
        feedback = _stored_feedback(rater, assignment_id)
        if feedback is None:
            raise
    except RatingRejected as rejected:
        outcome_keep(rejected, rater, now)
        raise
    # A participant's rating that served nothing with it: whether it ended their session (recorded
    # now). One that did serves nothing after it either.
    if _may_have_ended(session, feedback):
        later = session_of(user=rater, now=now)
        if later.ended:
            return replace(feedback, session_ended=True)
        feedback = replace(feedback, session_progress=later.progress)
    if serve_next and feedback.next is None:
        # Not served with the rating: a repeated submission, a change of stage, or no free
        # game pair without waiting for a lock. Served now, in a transaction of its own.
        feedback = replace(feedback, next=pair_serve(rater=rater, now=now))
    return feedback


def _may_have_ended(session: Session | None, feedback: Feedback) -> bool:
    """Whether this new rating of a participant may have ended their session: it served nothing
    with it (a rating that ends the session never does, ``Session.ends_with``)."""
    return session is not None and not session.ended and not feedback.already_rated and feedback.next is None


def _stored_feedback(rater, assignment_id: object) -> Feedback | None:
    """The feedback of the rating stored for this assignment of the rater's, marked as a
    repeated submission; None when there is none (or no such assignment can be)."""
    try:
        assignment, _pair, rating = _assignment_of(rater, assignment_id)
    except RatingRejected:
        return None
    return None if rating.id is None else replace(_feedback(rating, assignment), already_rated=True)


def feedback_for(*, rater: AbstractBaseUser, assignment_id: int) -> Feedback:
    """The feedback of an assignment the rater already rated (as shown when they submitted)."""
    assignment, _pair, rating = _assignment_of(rater, assignment_id)
    if rating.id is None:
        raise RatingRejected("not_found", "This pair has not been rated yet.", 404)
    return _feedback(rating, assignment)


def _assignment_of(rater, assignment_id: object, *, lock: bool = False) -> tuple:
    """(assignment, pair, rating) rows of an assignment of the rater's, at any stage; raises
    ``not_found`` and ``not_yours``."""
    assignment, pair, rating = gateway.assignment_read(clean_assignment_id(assignment_id), lock=lock)
    if assignment.rater_id != rater.pk:
        raise not_yours()
    return assignment, pair, rating


def _feedback(rating: sql.RatingRow, assignment: sql.AssignmentRow) -> Feedback:
    """A stored rating's feedback; a teaching pair's with its explanation (read only then)."""
    if assignment.stage in SERVED_IN_GAME:
        return gameplay.feedback_of(rating, assignment)
    return gameplay.feedback_of(rating, assignment, gateway.explanation_of(assignment.pair_id))


def _submit(
    rater,
    profile: ProfileRow,
    assignment_id: object,
    raw_value: object,
    now: datetime,
    *,
    serve_next: bool,
    session: Session | None,
) -> Feedback:
    """Every stage's checks, in one order, then the stage's own scoring."""
    step = journey.step_of(profile)
    check_may_rate(step)
    value = clean_value(raw_value)
    # The rated game pair is locked by the read of its assignment (after the profile: the one lock
    # order), except when this rating closes the qualification window: it is then locked with the
    # window's pairs, in id order (``gameplay``). Teaching pairs have no consensus: nothing to lock.
    closing = Window(count=profile.window_count, points=profile.window_points).closing
    assignment, pair, rating = _assignment_of(rater, assignment_id, lock=step == Step.GAME and not closing)
    if rating.id is not None:
        return replace(_feedback(rating, assignment), already_rated=True)
    if shown_stage(assignment.stage) != step:
        raise wrong_stage(assignment.stage, step)
    if now < assignment.served_at + journey.min_delay(assignment.stage):
        raise too_early(assignment.stage)
    if now >= assignment.expires_at:
        raise expired()
    if step == Step.TUTORIAL:
        return _submit_tutorial(rater, gateway.profile_model(profile), assignment, pair, value, now)
    if step == Step.PROBATION:
        return _submit_probation(rater, gateway.profile_model(profile), assignment, pair, value, now, session=session)
    if session is None:
        return gameplay.rate(profile, assignment, pair, value, now, serve_next=serve_next)
    after = session.after(stage=assignment.stage, served_at=assignment.served_at, now=now)
    serve_next = serve_next and not session.ends_as(after)  # the rating that ends a session serves nothing
    feedback = gameplay.rate(profile, assignment, pair, value, now, serve_next=serve_next)
    return replace(feedback, session_progress=after.progress)


def _submit_tutorial(
    rater, profile: RaterProfile, assignment: sql.AssignmentRow, pair: sql.PairRow, value: int, now: datetime
) -> Feedback:
    pair_ids = progress.tutorial_pair_ids()
    done = gateway.tutorial_ratings(rater)
    rated = {pair_id for pair_id, _ in done}
    remaining = [pair_id for pair_id in pair_ids if pair_id not in rated]
    if not remaining or assignment.pair_id != remaining[0]:
        raise expired()
    earlier = sum(points for _, points in done)
    decided = teaching_decide(
        Pool.TUTORIAL, value, pair.expert_rating, earlier=earlier, rated=len(done), size=len(pair_ids)
    )
    if decided.finished:
        progress.tutorial_finish(profile=profile, score=decided.total, passed=decided.passed, now=now)
    return _teaching_store(assignment, pair, value, decided, profile, now)


def _submit_probation(
    rater,
    profile: RaterProfile,
    assignment: sql.AssignmentRow,
    pair: sql.PairRow,
    value: int,
    now: datetime,
    *,
    session: Session | None,
) -> Feedback:
    current = progress.probation_round_current(profile)
    if current is None or current.finished_at is not None or current.rated >= len(current.pair_order):
        raise expired()
    if assignment.pair_id != current.pair_order[current.rated]:
        raise expired()
    decided = teaching_decide(
        Pool.PROBATION,
        value,
        pair.expert_rating,
        earlier=current.score,
        rated=current.rated,
        size=len(current.pair_order),
    )
    progress.probation_round_rated(current, score=decided.total, passed=decided.passed, now=now)
    if decided.passed:
        progress.game_enter(profile=profile, now=now)
    elif decided.passed is False and (
        # The next round, unless this failure ends a participant's session (SPEC 7): nothing
        # is served after it, and no round is left open.
        session is None
        or not session.ends_with(stage=assignment.stage, served_at=assignment.served_at, now=now, failed_round=True)
    ):
        progress.probation_round_start(profile=profile)
    return _teaching_store(assignment, pair, value, decided, profile, now)


def _teaching_store(
    assignment: sql.AssignmentRow,
    pair: sql.PairRow,
    value: int,
    decided: TeachingDecision,
    profile: RaterProfile,
    now: datetime,
) -> Feedback:
    """Store a tutorial or probation rating and close its assignment, as a game rating's writes go
    (``gateway.rating_writes``); its feedback with the pair's explanation."""
    points, shown = decided.points, {**decided.shown, "level": journey.level_for(profile.game_score)}
    batch = gateway.Batch()
    closed, inserted = gateway.rating_writes(
        batch, assignment, pair, value, now, points=points, reference=pair.expert_rating, shown=shown
    )
    results = batch.run()
    if not results[closed]:
        raise expired()
    stored = sql.RatingRow(results[inserted], value, points, pair.expert_rating, shown, assignment.stage)
    return _feedback(stored, assignment)
