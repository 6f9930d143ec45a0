"""The rating screens' services: serve a pair, take a rating, give feedback (SPEC sections 2 and 3).

One journey, three stages. The tutorial (10 expert-rated pairs) and probation (rounds of 20)
score ``2 - |expert - rating|``; the game scores a rating against the consensus of the
ratings in force before it (Algorithm 1, ``scoring.consensus``), and its first 20 ratings
after every entry form the qualification window. The journey's rules and numbers are
``annotators.journey``; where a rater is and the moves between steps, ``annotators.progress``.

Times are the server's: a rating is accepted only from ``journey.min_seconds`` after the
server served the pair to that rater, until the assignment expires. A submission changes the
rating, the pair's aggregates, the rater's scores and state in one transaction, with the
rater's profile row and the pair row locked (profile first, then pairs in id order: one lock
order everywhere, so no deadlock). Submitting the same assignment again returns the first
feedback.

One request per rating: ``rating_submit(..., serve_next=True)`` also serves the rater's next
pair. In the game that happens in the rating's own transaction, and the transaction's writes
go to the database together (``writes.Writes``): a rating and the next serve cost a handful of
statements (``tests/ratinggame/game/test_statements.py`` holds the count).
"""

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotators import journey, progress
from annotators.journey import WINDOW_FAILED_REASON, Step, Window
from annotators.models import RaterProfile
from ratinggame.game.aggregates import in_force, pair_rating_add, ratings_exclude
from ratinggame.game.assignment import assignments_release_expired, game_pair_claim, pair_rank_refresh
from ratinggame.game.writes import Writes
from ratinggame.models import Assignment, CaptionPair, Image, Pool, Rating
from scoring.consensus import consensus_from_aggregates, player_score_from_aggregates, tutorial_points


@dataclass(frozen=True)
class Served:
    assignment_id: int
    pair_id: int
    stage: str  # "tutorial" | "probation" | "game"
    image_url: str
    image_width: int
    image_height: int
    caption: str
    served_at: datetime
    min_submit_at: datetime  # served_at + journey.min_seconds(stage)
    expires_at: datetime
    position: int | None  # 1-based place in the tutorial / probation round; None in the game
    total: int | None  # pairs in the tutorial / probation round; None in the game
    # The pair's image, for pages (its display copies); the API sends only the fields above.
    image: Image | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Feedback:
    assignment_id: int
    pair_id: int
    stage: str
    value: int
    points: int
    reference: int | None  # expert rating (tutorial/probation) or consensus shown (game); None: first rater
    explanation: str  # expert explanation (tutorial/probation), "" in the game
    first_rater: bool  # game: no rating before this one -> 0 points
    stage_total: int  # tutorial total / probation round total / game score, after this rating
    stage_max: int | None  # 2 * pairs in the tutorial / round; None in the game
    window: Window | None  # game only
    transition: (
        str | None
    )  # tutorial_passed|tutorial_failed|probation_passed|probation_failed|window_passed|window_failed
    level: int
    rating_id: int
    next: Served | None = None  # the rater's next pair, when the submission asked for it (serve_next)


class RatingRejected(Exception):
    """A serve or submission the rules refuse; ``status`` is the HTTP status to answer with."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


# --- Serving --------------------------------------------------------------------------------


def pair_serve(*, rater: AbstractBaseUser, now: datetime | None = None) -> Served | None:
    """The rater's next pair for their current step, or the assignment already open for it.

    Reload-safe: while an assignment of the current step is open (unsubmitted, unexpired), it
    is returned unchanged, with its original served time. None when nothing is left to rate.
    """
    now = now or timezone.now()
    served, step = _serve(rater, now, wait=False)
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
        profile = _profile_locked(rater)
        step = journey.step_of(profile)
        _check_may_rate(step)
        if step == Step.TUTORIAL:
            return _serve_tutorial(rater, now), step
        if step == Step.PROBATION:
            return _serve_probation(rater, profile, now), step
        return _serve_game(rater, now, wait=wait), step


def _profile_locked(rater) -> RaterProfile:
    profile = RaterProfile.objects.select_for_update().filter(user=rater).first()
    if profile is None:
        progress.profile_for(rater)  # users made by staff get theirs on first use
        profile = RaterProfile.objects.select_for_update().get(user=rater)
    return profile


def _serve_tutorial(rater, now: datetime) -> Served | None:
    pair_ids = progress.tutorial_pair_ids()
    rated = set(Rating.objects.filter(rater=rater, stage=Pool.TUTORIAL).values_list("pair_id", flat=True))
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
    open_ = _open_assignments(rater, stage, now).filter(pair_id=pair_id).first()
    if open_ is None:
        open_ = _assignment_new(rater, CaptionPair.objects.select_related("image").get(pk=pair_id), stage, now)
        open_.save()
    return _served(open_, position=position, total=total)


def _serve_game(rater, now: datetime, *, wait: bool) -> Served | None:
    open_ = _open_assignments(rater, Pool.GAME, now).first()
    if open_ is None:
        pair = game_pair_claim(rater=rater, wait=wait)
        if pair is None:
            return None
        writes = Writes()
        open_ = _slot_take(writes, rater, pair, now)
        writes.run()
    return _served(open_, position=None, total=None)


def _slot_take(writes: Writes, rater, pair: CaptionPair, now: datetime) -> Assignment:
    """Add to ``writes`` the slot of ``pair`` that ``game_pair_claim`` took: its counters and the assignment."""
    writes.update(CaptionPair.objects.filter(pk=pair.pk), in_flight=pair.in_flight, assign_rank=pair.assign_rank)
    assignment = _assignment_new(rater, pair, Pool.GAME, now, holds_slot=True)
    writes.insert(assignment)
    return assignment


def _open_assignments(rater, stage: str, now: datetime):
    return Assignment.objects.open(now).filter(rater=rater, stage=stage).select_related("pair__image").order_by("-id")


def _assignment_new(rater, pair: CaptionPair, stage: str, now: datetime, *, holds_slot: bool = False) -> Assignment:
    """An assignment served now, not saved yet."""
    expiry = timedelta(seconds=settings.RATINGGAME["ASSIGNMENT_EXPIRY_SECONDS"])
    return Assignment(
        rater=rater, pair=pair, stage=stage, served_at=now, expires_at=now + expiry, holds_slot=holds_slot
    )


def _served(assignment: Assignment, *, position: int | None, total: int | None) -> Served:
    pair = assignment.pair
    return Served(
        assignment_id=assignment.pk,
        pair_id=pair.pk,
        stage=Pool(assignment.stage).value,
        image_url=pair.image.file.url,
        image_width=pair.image.width,
        image_height=pair.image.height,
        caption=pair.caption,
        served_at=assignment.served_at,
        min_submit_at=assignment.served_at + journey.min_delay(assignment.stage),
        expires_at=assignment.expires_at,
        position=position,
        total=total,
        image=pair.image,
    )


# --- Submitting -----------------------------------------------------------------------------


def rating_submit(
    *,
    rater: AbstractBaseUser,
    assignment_id: int,
    value: object,
    now: datetime | None = None,
    serve_next: bool = False,
) -> Feedback:
    """Store the rater's rating of a pair served to them; return what to show them.

    ``value`` must be a whole number 1..5 (an int, or the text "1".."5" a form sends).
    Served and submitted times are the server's; nothing the client says about time is used.
    Raises RatingRejected; a rejected submission changes nothing.

    ``serve_next``: the feedback also carries the rater's next pair (``Feedback.next``, None
    when nothing is left), served at ``now`` as ``pair_serve`` would serve it; a repeated
    submission carries the pair open now.
    """
    now = now or timezone.now()
    try:
        feedback = _submit(rater, assignment_id, value, now, serve_next=serve_next)
    except IntegrityError:
        # The one-rating-per-assignment constraint: a concurrent submission of the same
        # assignment stored its rating first. Show that one (idempotent).
        rating = Rating.objects.filter(assignment_id=assignment_id, rater=rater).first()
        if rating is None:
            raise
        feedback = _feedback_from(rating)
    if serve_next and feedback.next is None:
        # Not served with the rating: a repeated submission, a change of stage, or no free
        # game pair without waiting for a lock. Served now, in a transaction of its own.
        feedback = replace(feedback, next=pair_serve(rater=rater, now=now))
    return feedback


def feedback_for(*, rater: AbstractBaseUser, assignment_id: int) -> Feedback:
    """The feedback of an assignment the rater already rated (as shown when they submitted)."""
    assignment = _assignment_of(rater, assignment_id)
    rating = getattr(assignment, "rating", None)
    if rating is None:
        raise RatingRejected("not_found", "This pair has not been rated yet.", 404)
    rating.pair = assignment.pair
    return _feedback_from(rating)


def _submit(rater, assignment_id: int, raw_value: object, now: datetime, *, serve_next: bool) -> Feedback:
    with transaction.atomic():
        profile = _profile_locked(rater)
        step = journey.step_of(profile)
        _check_may_rate(step)
        value = _clean_value(raw_value)
        # In the game the rated pair is locked by the query that reads the assignment (after
        # the profile: the one lock order), except when this rating closes the qualification
        # window: then it is locked with the window's pairs, in id order (_submit_game).
        window = Window(count=profile.window_count, points=profile.window_points)
        assignment = _assignment_of(rater, assignment_id, lock_pair=step == Step.GAME and not window.closing)
        existing = getattr(assignment, "rating", None)
        if existing is not None:
            existing.pair = assignment.pair
            return _feedback_from(existing)
        if assignment.stage != step:
            raise RatingRejected(
                "wrong_stage", f"This pair belongs to the {assignment.stage}, and you are now in the {step}.", 403
            )
        if now < assignment.served_at + journey.min_delay(assignment.stage):
            seconds = journey.min_seconds(assignment.stage)
            raise RatingRejected(
                "too_early", f"Take at least {seconds:g} seconds to look at the pair before rating it.", 400
            )
        if now >= assignment.expires_at:
            raise _expired()
        if step == Step.TUTORIAL:
            return _submit_tutorial(rater, profile, assignment, value, now)
        if step == Step.PROBATION:
            return _submit_probation(rater, profile, assignment, value, now)
        return _submit_game(rater, profile, assignment, value, now, serve_next=serve_next)


def _submit_tutorial(rater, profile: RaterProfile, assignment: Assignment, value: int, now: datetime) -> Feedback:
    pair_ids = progress.tutorial_pair_ids()
    done = list(Rating.objects.filter(rater=rater, stage=Pool.TUTORIAL).values_list("pair_id", "points"))
    rated = {pair_id for pair_id, _ in done}
    remaining = [pair_id for pair_id in pair_ids if pair_id not in rated]
    if not remaining or assignment.pair_id != remaining[0]:
        raise _expired()
    pair = assignment.pair
    points = tutorial_points(value, pair.expert_rating)
    total = sum(points for _, points in done) + points
    transition = None
    if len(remaining) == 1:
        profile.tutorial_score = total
        profile.tutorial_completed_at = now
        profile.save(update_fields=["tutorial_score", "tutorial_completed_at"])
        if total >= journey.tutorial_pass_mark(len(pair_ids)):
            progress.game_enter(profile=profile, now=now)
            transition = "tutorial_passed"
        else:
            progress.probation_enter(profile=profile)
            transition = "tutorial_failed"
    shown = {"stage_total": total, "stage_max": 2 * len(pair_ids), "transition": transition}
    return _rating_store(assignment, value, points, pair.expert_rating, shown, profile, now)


def _submit_probation(rater, profile: RaterProfile, assignment: Assignment, value: int, now: datetime) -> Feedback:
    current = progress.probation_round_current(profile)
    if current is None or current.finished_at is not None or current.rated >= len(current.pair_order):
        raise _expired()
    if assignment.pair_id != current.pair_order[current.rated]:
        raise _expired()
    pair = assignment.pair
    points = tutorial_points(value, pair.expert_rating)
    current.score += points
    current.rated += 1
    transition = None
    size = len(current.pair_order)
    if current.rated == size:
        current.finished_at = now
        current.passed = current.score >= journey.probation_pass_mark(size)
    current.save(update_fields=["score", "rated", "finished_at", "passed"])
    if current.passed:
        progress.game_enter(profile=profile, now=now)
        transition = "probation_passed"
    elif current.passed is False:
        progress.probation_round_start(profile=profile)
        transition = "probation_failed"
    shown = {"stage_total": current.score, "stage_max": 2 * size, "transition": transition}
    return _rating_store(assignment, value, points, pair.expert_rating, shown, profile, now)


def _submit_game(
    rater, profile: RaterProfile, assignment: Assignment, value: int, now: datetime, *, serve_next: bool
) -> Feedback:
    window_before = Window(count=profile.window_count, points=profile.window_points)
    window_rating_ids: list[int] = []
    if window_before.closing:
        # This rating closes the qualification window, which may fail and take all of its
        # pairs out of consensus: lock them all now, in id order, before scoring.
        in_window = _window_ratings(rater, profile, window_before.count)
        window_rating_ids = [rating_id for rating_id, _ in in_window]
        lock_ids = sorted({pair_id for _, pair_id in in_window} | {assignment.pair_id})
        locked = CaptionPair.objects.select_for_update().filter(pk__in=lock_ids).order_by("id")
        assignment.pair = next(pair for pair in locked if pair.pk == assignment.pair_id)
    pair = assignment.pair  # locked, as read after the lock

    before = in_force(pair)
    consensus_of = [pair.human_count, before.count - pair.human_count]  # other players, model primes
    first_rater = before.count == 0
    points = 0 if first_rater else player_score_from_aggregates(value, before.count, before.total, before.total_sq)
    reference = consensus_from_aggregates(before.count, before.total)
    pair.in_flight = max(pair.in_flight - 1, 0)
    pair_rating_add(pair, value)
    pair_rank_refresh(pair)

    window = window_before.after(points)
    transition = window.outcome if window_before.open else None
    window_failed = transition == "window_failed"
    profile.game_score = 0 if window_failed else profile.game_score + points
    profile.window_count, profile.window_points = window.count, window.points
    shown = {
        "stage_total": profile.game_score,
        "stage_max": None,
        "transition": transition,
        "first_rater": first_rater,
        "consensus_of": consensus_of,
        "window": [window.count, window.points],
    }
    rating = _rating_new(assignment, value, points, reference, shown, profile, now)

    writes = Writes()
    # The assignment gives its slot back as it turns into a rating. If the slot is gone
    # already (expired and released to another rater), the rating would overfill the pair.
    closed = writes.update(
        Assignment.objects.filter(pk=assignment.pk, holds_slot=True), holds_slot=False, submitted_at=now
    )
    writes.update(
        CaptionPair.objects.filter(pk=pair.pk),
        human_count=pair.human_count,
        human_sum=pair.human_sum,
        human_sumsq=pair.human_sumsq,
        in_flight=pair.in_flight,
        assign_rank=pair.assign_rank,
    )
    writes.update(
        RaterProfile.objects.filter(pk=profile.pk),
        game_score=profile.game_score,
        window_count=profile.window_count,
        window_points=profile.window_points,
    )
    writes.insert(rating)
    next_assignment = None
    if serve_next and not window_failed:
        # The rater's one open game assignment was this one: the next pair is claimed here.
        # Never waiting for a locked pair while this one is held (the lock order); a miss is
        # served after the commit, by rating_submit.
        next_pair = game_pair_claim(rater=rater)
        if next_pair is not None:
            next_assignment = _slot_take(writes, rater, next_pair, now)
    if not writes.run()[closed]:
        raise _expired()  # the transaction rolls back: nothing of this rating is stored

    feedback = _feedback_from(rating)
    if window_failed:
        # SPEC 2.3: score reset, back to probation, the window's ratings kept but excluded.
        ratings_exclude(rating_ids=[*window_rating_ids, feedback.rating_id], reason=WINDOW_FAILED_REASON)
        progress.probation_enter(profile=profile)
    if next_assignment is not None:
        feedback = replace(feedback, next=_served(next_assignment, position=None, total=None))
    return feedback


def _window_ratings(rater, profile: RaterProfile, count: int) -> list[tuple[int, int]]:
    """(rating id, pair id) of the rater's last ``count`` counted game ratings of this window."""
    ratings = Rating.objects.counted().filter(rater=rater)
    if profile.game_entered_at is not None:
        ratings = ratings.filter(submitted_at__gte=profile.game_entered_at)
    return list(ratings.order_by("-id").values_list("id", "pair_id")[:count])


def _rating_store(
    assignment: Assignment,
    value: int,
    points: int,
    reference: int | None,
    shown: dict,
    profile: RaterProfile,
    now: datetime,
) -> Feedback:
    """Store a tutorial or probation rating and close its assignment (a game rating: _submit_game)."""
    rating = _rating_new(assignment, value, points, reference, shown, profile, now)
    writes = Writes()
    writes.insert(rating)
    writes.update(Assignment.objects.filter(pk=assignment.pk), submitted_at=now)
    writes.run()
    return _feedback_from(rating)


def _rating_new(
    assignment: Assignment,
    value: int,
    points: int,
    reference: int | None,
    shown: dict,
    profile: RaterProfile,
    now: datetime,
) -> Rating:
    """The rating of ``assignment`` with what the rater is shown, not saved yet."""
    return Rating(
        assignment=assignment,
        pair=assignment.pair,
        rater_id=assignment.rater_id,
        stage=assignment.stage,
        value=value,
        served_at=assignment.served_at,
        submitted_at=now,
        points=points,
        reference=reference,
        feedback={**shown, "level": journey.level_for(profile.game_score)},
    )


def _feedback_from(rating: Rating) -> Feedback:
    shown = rating.feedback
    window = shown.get("window")
    return Feedback(
        assignment_id=rating.assignment_id,
        pair_id=rating.pair_id,
        stage=Pool(rating.stage).value,
        value=rating.value,
        points=rating.points,
        reference=rating.reference,
        explanation="" if rating.stage == Pool.GAME else rating.pair.explanation,
        first_rater=bool(shown.get("first_rater", False)),
        stage_total=shown.get("stage_total", 0),
        stage_max=shown.get("stage_max"),
        window=Window(count=window[0], points=window[1]) if window else None,
        transition=shown.get("transition"),
        level=shown.get("level", 1),
        rating_id=rating.pk,
    )


# --- Checks ---------------------------------------------------------------------------------


def _check_may_rate(step: Step) -> None:
    if step == Step.SUSPENDED:
        raise RatingRejected("suspended", "Your account is suspended: you cannot rate pairs for now.", 403)
    if step == Step.CONSENT:
        raise RatingRejected("no_consent", "Please read and accept the consent form before rating.", 403)


def _assignment_of(rater, assignment_id: object, *, lock_pair: bool = False) -> Assignment:
    if isinstance(assignment_id, bool) or not isinstance(assignment_id, int):
        raise RatingRejected("not_found", "There is no such pair to rate.", 404)
    assignments = Assignment.objects.select_related("pair", "rating")
    if lock_pair:
        # Locked by this read: after the wait, PostgreSQL reads the pair again, so its
        # aggregates are the latest (the assignment's slot flag is checked as it is closed).
        assignments = assignments.select_for_update(of=("pair",))
    assignment = assignments.filter(pk=assignment_id).first()
    if assignment is None:
        raise RatingRejected("not_found", "There is no such pair to rate.", 404)
    if assignment.rater_id != rater.pk:
        raise RatingRejected("not_yours", "This pair was served to someone else.", 403)
    return assignment


def _expired() -> RatingRejected:
    return RatingRejected("expired", "This pair is no longer open for rating. Please rate the next one.", 400)


_VALUE_TEXT = {"1": 1, "2": 2, "3": 3, "4": 4, "5": 5}


def _clean_value(value: object) -> int:
    # bool is an int subclass (True == 1) and "3.5" or 3.0 are not ratings on a 5-level scale.
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5:
        return value
    if isinstance(value, str) and value in _VALUE_TEXT:
        return _VALUE_TEXT[value]
    raise RatingRejected("invalid_value", "Choose a rating from 1 to 5.", 400)
