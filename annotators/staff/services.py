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
* **resolve a dispute**: accepting it restores the points the disputed game rating cost
  (``dispute_points_restorable``): its negative points, ``max(0, -rating.points)``, less
  what was restored for that rating before, are credited to the rater's ``game_score`` and
  recorded in ``Dispute.points_restored``; a rating that earned 0 or more restores nothing.
  So restoring is idempotent and never more than the rating lost, however many staff accept
  at once (the dispute row is locked) and however the dispute came to be. The rating itself
  keeps the points it was scored (the game's record stays as it happened). Rejecting changes
  no score. Only an open dispute can be resolved, once. A dispute whose rating
  was excluded after it was filed (a failed qualification window) cannot be accepted: the
  rating no longer counts and the window reset the game score, so restoring its points would
  credit a score the rules took away; it can be rejected.

Rows are locked (``select_for_update``) so two staff members acting at once, or a staff
action racing the rater's own rating, never lose an update.
"""

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from annotators import progress
from annotators.models import Dispute, DisputeStatus, RaterAction, RaterProfile, RaterState
from ratinggame.models import Rating


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
    return RaterProfile.objects.select_for_update().get(pk=profile.pk)


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
        dispute = Dispute.objects.select_for_update().select_related("rating").get(pk=dispute.pk)
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
        profile = RaterProfile.objects.select_for_update().get(user_id=rating.rater_id)
        restored = dispute_points_restorable(rating) if accept else 0
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
            reason=f"Dispute {dispute.pk} on rating {rating.pk}: {note}",
            from_state=profile.state,
            to_state=profile.state,
        )
        return dispute


def dispute_points_restorable(rating: Rating) -> int:
    """Points an accepted dispute gives back for ``rating``: what the rating lost (its negative
    points), less what disputes on it restored already; never negative.

    The one place that decides how much an acceptance restores (the caller holds the rater's
    profile lock, so two acceptances cannot both read "nothing restored yet").
    """
    lost = max(0, -rating.points)
    already = Dispute.objects.filter(rating=rating).aggregate(total=Sum("points_restored"))["total"] or 0
    return max(0, lost - already)
