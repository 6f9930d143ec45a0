"""What staff do to raters and disputes. Every change is logged as a RaterAction (who, why).

Rules:

* **suspend**: any rater not already suspended; the state they had is kept in
  ``state_before_suspension``. A suspended rater is refused pairs and ratings by the game.
* **reinstate**: a suspended rater goes back to the state they had before the suspension
  (tutorial, probation or game). A suspension made elsewhere (Django admin) without that
  record goes back to the tutorial when the tutorial was never finished, else to the game.
* **send to probation**: a rater in the game, or suspended, starts a new probation round
  (``annotators.progress.probation_enter``). The game score is kept: this is not a failed
  qualification window (SPEC 2.3); the next entry to the game opens a new window. A rater in
  the tutorial (no training score yet) or already on probation cannot be sent.
* **resolve a dispute**: the rating is re-scored (``dispute_rescore``) by Algorithm 1 against
  the current consensus of the OTHER non-excluded human ratings of its pair: ratings that came
  after it, and ratings excluded since (a failed window), change what it deserved. Accepting
  credits the difference, the points now less the points it was scored, less what was restored
  for that rating before, to the rater's ``game_score``, recorded in ``Dispute.points_restored``
  and in the action log; never negative. With no other human rating the re-score is 0 (the
  first rater's score), so a rating restores what it lost. So restoring is idempotent and
  bounded, however many staff accept at once (the rater's profile row is locked) and however
  the dispute came to be. The rating itself
  keeps the points it was scored (the game's record stays as it happened). Rejecting changes
  no score. Only an open dispute can be resolved, once. A dispute whose rating
  was excluded after it was filed (a failed qualification window) cannot be accepted: the
  rating no longer counts and the window reset the game score, so restoring its points would
  credit a score the rules took away; it can be rejected.

Rows are locked (``select_for_update``) so two staff members acting at once, or a staff
action racing the rater's own rating, never lose an update.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from annotators import progress
from annotators.models import Dispute, DisputeStatus, RaterAction, RaterProfile, RaterState
from ratinggame.models import Pool, Rating
from scoring.consensus import consensus_rating, player_score


class ActionRefused(Exception):
    """A staff action that does not apply to the rater or dispute as they are now."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ActionRefused("A reason is required.")
    return reason


def _locked(profile: RaterProfile) -> RaterProfile:
    return RaterProfile.objects.select_for_update(no_key=True).get(pk=profile.pk)


def _log(profile: RaterProfile, actor: AbstractBaseUser, action: str, reason: str, from_state: str) -> RaterAction:
    return RaterAction.objects.create(
        rater=profile, actor=actor, action=action, reason=reason, from_state=from_state, to_state=profile.state
    )


def rater_suspend(*, profile: RaterProfile, actor: AbstractBaseUser, reason: str) -> RaterAction:
    reason = _clean_reason(reason)
    with transaction.atomic():
        profile = _locked(profile)
        if profile.state == RaterState.SUSPENDED:
            raise ActionRefused("This rater is already suspended.")
        before = profile.state
        profile.state_before_suspension = before
        profile.state = RaterState.SUSPENDED
        profile.save(update_fields=["state", "state_before_suspension"])
        return _log(profile, actor, "suspend", reason, before)


def rater_reinstate(*, profile: RaterProfile, actor: AbstractBaseUser, reason: str) -> RaterAction:
    reason = _clean_reason(reason)
    with transaction.atomic():
        profile = _locked(profile)
        if profile.state != RaterState.SUSPENDED:
            raise ActionRefused("Only a suspended rater can be reinstated.")
        back_to = profile.state_before_suspension
        if back_to not in (RaterState.TUTORIAL, RaterState.PROBATION, RaterState.GAME):
            back_to = RaterState.TUTORIAL if profile.tutorial_score is None else RaterState.GAME
        profile.state = back_to
        profile.state_before_suspension = ""
        profile.save(update_fields=["state", "state_before_suspension"])
        return _log(profile, actor, "reinstate", reason, RaterState.SUSPENDED)


def rater_send_to_probation(*, profile: RaterProfile, actor: AbstractBaseUser, reason: str) -> RaterAction:
    reason = _clean_reason(reason)
    with transaction.atomic():
        profile = _locked(profile)
        if profile.state == RaterState.PROBATION:
            raise ActionRefused("This rater is already on probation.")
        if profile.state == RaterState.TUTORIAL:
            raise ActionRefused("This rater has not finished the tutorial; suspend them instead.")
        before = profile.state
        profile.state_before_suspension = ""
        profile.save(update_fields=["state_before_suspension"])
        progress.probation_enter(profile=profile)
        return _log(profile, actor, "send_to_probation", reason, before)


def dispute_resolve(*, dispute: Dispute, actor: AbstractBaseUser, accept: bool, note: str) -> Dispute:
    """Accept (restore the rating's lost points) or reject an open dispute; see the module docstring."""
    note = _clean_reason(note)
    with transaction.atomic():
        dispute = Dispute.objects.select_for_update(no_key=True).select_related("rating").get(pk=dispute.pk)
        if dispute.status != DisputeStatus.OPEN:
            raise ActionRefused("This dispute has already been resolved.")
        rating = dispute.rating
        if accept and rating.excluded:
            reason = f" ({rating.excluded_reason})" if rating.excluded_reason else ""
            raise ActionRefused(
                f"Rating {rating.pk} was excluded{reason} after this dispute was filed: it no longer counts, "
                "so the dispute cannot be accepted. Reject it instead."
            )
        # The rater's profile lock also serialises every restore for this rater's ratings.
        profile = RaterProfile.objects.select_for_update(no_key=True).get(user_id=rating.rater_id)
        rescore = dispute_rescore(rating)
        restored = rescore.owed if accept else 0
        if restored:
            profile.game_score += restored
            profile.save(update_fields=["game_score"])
        dispute.status = DisputeStatus.ACCEPTED if accept else DisputeStatus.REJECTED
        dispute.points_restored = restored
        dispute.resolved_by = actor
        dispute.resolved_at = timezone.now()
        dispute.resolution_note = note
        dispute.save(update_fields=["status", "points_restored", "resolved_by", "resolved_at", "resolution_note"])
        RaterAction.objects.create(
            rater=profile,
            actor=actor,
            action="dispute_accept" if accept else "dispute_reject",
            reason=(
                f"Dispute {dispute.pk} on rating {rating.pk}: {note} (scored {rating.points:+d}; re-scored "
                f"{rescore.points:+d} against the consensus {rescore.consensus or 'none'} of {rescore.others} other "
                f"rating(s) now; {restored} point(s) restored)"
            ),
            from_state=profile.state,
            to_state=profile.state,
        )
        return dispute


@dataclass(frozen=True)
class Rescore:
    """A disputed rating scored again now (see the module docstring)."""

    consensus: int | None  # of the other non-excluded human ratings of the pair; None: there is none
    others: int  # how many they are
    points: int  # the rating's points against them (Algorithm 1; 0 with none)
    owed: int  # what accepting restores: points now less the points scored, less restored before


def dispute_rescore(rating: Rating, *, others: Sequence[int] | None = None, restored: int | None = None) -> Rescore:
    """``rating`` re-scored against the other counted human ratings of its pair (a control pair's
    rating against its expert rating, as it was scored: SPEC 2.5).

    The one place that decides how much an acceptance restores. ``others`` (their values) and
    ``restored`` (points restored for this rating before) are read when not given (the dispute
    queue passes them, read for all its disputes at once). The caller of an acceptance holds
    the rater's profile lock, so two acceptances cannot both read "nothing restored yet".
    """
    if rating.stage == Pool.CONTROL:
        others = [rating.pair.expert_rating] * 2
    elif others is None:
        others = list(
            Rating.objects.counted()
            .filter(pair_id=rating.pair_id)
            .exclude(pk=rating.pk)
            .values_list("value", flat=True)
        )
    if restored is None:
        restored = Dispute.objects.filter(rating=rating).aggregate(total=Sum("points_restored"))["total"] or 0
    points = player_score(rating.value, others)
    return Rescore(
        consensus=consensus_rating(others),
        others=len(others),
        points=points,
        owed=max(0, points - rating.points - restored),
    )
