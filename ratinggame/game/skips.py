"""The neutral skip: "Skip this pair" on a game screen (SPEC 5).

A rater may pass a served game pair without giving a reason: the assignment closes without a
rating (nothing is scored, nothing reaches staff), a game pair's slot goes back to the pool and
the pair is never served to that rater again (one game assignment per rater and pair; a skipped
control pair is left out of their control draws). Skips are limited so that skipping cannot be
used to pick easy pairs: none in the rater's first game serves, then a share of the serves after
them (``annotators.journey.skips_allowed``). "Report a problem" is separate and reaches staff
(``ratinggame.game.reports``). Locks follow the game's order: the rater's profile, then the pair.
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotators import journey
from annotators.journey import Step
from annotators.models import RaterProfile
from ratinggame.game import gateway
from ratinggame.game.assignment import pair_rank_refresh, slot_give_back
from ratinggame.game.rating import RatingRejected, check_may_rate, outcome_keep, session_open
from ratinggame.game.results import not_found, not_yours
from ratinggame.game.sql import ProfileRow
from ratinggame.models import GAME_STAGES, Assignment, CaptionPair, Pool


@dataclass(frozen=True)
class Skipped:
    assignment_id: int
    skips_left: int  # skips the rater may still make now


def pair_skip(*, rater: AbstractBaseUser, assignment_id: object, now: datetime | None = None) -> Skipped:
    """Skip the rater's open game assignment ``assignment_id``. Raises RatingRejected (a 4xx):
    not_found (no such pair served to this rater), not_yours, wrong_stage (not a game pair),
    expired (rated, skipped or expired already), skip_limit (no skip left now), session_ended (a
    study session that has ended, SPEC 7)."""
    now = now or timezone.now()
    if isinstance(assignment_id, bool) or not isinstance(assignment_id, int):
        raise not_found("skip")
    try:
        return _skip(rater, assignment_id, now)
    except RatingRejected as rejected:
        outcome_keep(rejected, rater, now)
        raise


def _skip(rater, assignment_id: int, now: datetime) -> Skipped:
    with transaction.atomic():
        profile = gateway.profile_locked(rater)
        step = journey.step_of(profile)
        check_may_rate(step)
        session_open(rater, profile, now)
        assignment = Assignment.objects.filter(pk=assignment_id).first()
        if assignment is None:
            raise not_found("skip")
        if assignment.rater_id != rater.pk:
            raise not_yours()
        if assignment.stage == Pool.ATTENTION:
            raise RatingRejected(
                "wrong_stage",
                "An attention check cannot be skipped: please choose the level its caption asks for.",
                403,
            )
        if assignment.stage not in GAME_STAGES or step != Step.GAME:
            raise RatingRejected("wrong_stage", "Only game pairs can be skipped: please rate this one.", 403)
        if assignment.submitted_at is not None or assignment.skipped_at is not None or assignment.expires_at <= now:
            raise RatingRejected("expired", "This pair is no longer open: it was rated or skipped already.", 409)
        used = profile.game_skips
        allowed = journey.skips_allowed(profile.game_serves)
        if not journey.skip_open(profile.game_serves, used):
            raise RatingRejected("skip_limit", _limit_message(used), 409)
        closing = Assignment.objects.filter(pk=assignment.pk)
        if assignment.stage == Pool.GAME:
            pair = CaptionPair.objects.select_for_update(no_key=True).get(pk=assignment.pair_id)
            if slot_give_back(pair, assignment.pk):
                pair_rank_refresh(pair)
                pair.save(update_fields=["in_flight", "assign_rank"])
        closing.update(skipped_at=now, expires_at=now, holds_slot=False)
        RaterProfile.objects.filter(pk=profile.id).update(game_skips=F("game_skips") + 1)
        if assignment.stage == Pool.CONTROL:
            control_owe(profile)
    return Skipped(assignment_id=assignment.pk, skips_left=allowed - used - 1)


def control_owe(profile: ProfileRow) -> None:
    """A control skipped or reported does not take the block's check away (SPEC 2.5): one more is
    owed; the first owed comes at a serve drawn among the next ones (``journey.control_owed_serve``)."""
    owed_at = profile.control_owed_at
    if not profile.controls_owed or owed_at is None:
        owed_at = journey.control_owed_serve(profile.order_seed, profile.game_serves)
    RaterProfile.objects.filter(pk=profile.id).update(control_owed_at=owed_at, controls_owed=profile.controls_owed + 1)


def _limit_message(used: int) -> str:
    """Why a skip is refused, and when the next one comes, as the rule counts them (issue 35,
    item 3: "after your first 20" on pair 21, and "you have skipped as many as you may" with none
    used, were not true)."""
    at = journey.next_skip_serve(used)
    if at is None:
        return "Skipping is off in this study: please rate this pair."
    which = "first" if used == 0 else "next"
    share = "one in ten" if journey.skip_percent() == 10 else f"{journey.skip_percent()}%"
    rule = f"{share} of the pairs after your first {journey.SKIPS_FROM_SERVE}"
    return f"Your {which} skip comes with game pair {at} ({rule}): please rate this one."
