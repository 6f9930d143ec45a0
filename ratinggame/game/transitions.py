"""Where the journey's decisions after a game rating are applied: one place for the failed
qualification window (SPEC 2.3) and the drift rule (SPEC 2.5).

``annotators.journey`` decides a ``Transition``; the game writes the rating with the score the
decision leaves (``journey.score_after``) and then calls ``transition_apply``, in the same
transaction, with the rater's profile locked: the ratings it names are excluded (kept for audit,
out of every consensus and export; ``aggregates.ratings_exclude`` locks their game pairs in id
order), the rater goes back to probation with a new round, and the staff action log says what
happened and why.
"""

from annotators import progress
from annotators.journey import Transition
from annotators.models import RaterAction, RaterProfile
from ratinggame.game.aggregates import ratings_exclude
from ratinggame.models import Rating, game_ratings

ACTION_WORDS = {
    "window_failed": "Failed the qualification window: {excluded} game rating(s) excluded, game score reset, "
    "back to probation.",
    "drift": "Drift rule: agreement with the experts on the quality-check pairs fell under the threshold; "
    "{excluded} game rating(s) since the first of those checks excluded, game score reset, back to probation.",
}


def transition_apply(*, profile: RaterProfile, transition: Transition, rating_id: int) -> int:
    """Apply ``transition`` after the rating ``rating_id`` (itself among the excluded); returns how
    many ratings it excluded."""
    ids = {*transition.exclude_ids, rating_id}
    if transition.exclude_since is not None:
        since = Rating.objects.filter(game_ratings(), rater_id=profile.user_id, excluded=False)
        ids.update(since.filter(submitted_at__gte=transition.exclude_since).values_list("id", flat=True))
    excluded = ratings_exclude(rating_ids=sorted(ids), reason=transition.reason)
    from_state = profile.state
    if transition.enter_probation:
        progress.probation_enter(profile=profile)
    RaterAction.objects.create(
        rater=profile,
        actor=None,
        action=transition.name,
        reason=ACTION_WORDS[transition.name].format(excluded=excluded),
        from_state=from_state,
        to_state=profile.state,
    )
    return excluded
