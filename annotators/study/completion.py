"""The end of a participant's session (SPEC 7): the quota reached (counted game ratings or active
minutes, whichever first) completes it with the completion code; failing probation the set number
of rounds screens the rater out, with the screened-out code. Only participants who came through a
platform link have a session quota; open sign-up raters play on.

``outcome_due`` is the rule (no query); ``session_end_check`` reads a participant's figures and
records the outcome once (a conditional UPDATE: two requests at once record it once), logged in
the staff action log.
"""

from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q

from annotators.models import Participation, ProbationRound, RaterAction, SessionOutcome
from annotators.study.settings import StudySettings, study
from annotators.study.timing import active_seconds_sum
from ratinggame.models import Rating, game_ratings

ACTION_WORDS = {
    SessionOutcome.COMPLETED: "Session complete: {ratings} counted game rating(s), {minutes:.1f} active minute(s).",
    SessionOutcome.SCREENED_OUT: "Screened out after failing {rounds} probation round(s); paid for the time given.",
}


def outcome_due(*, counted: int, active_seconds: float, failed_rounds: int, rules: StudySettings) -> str | None:
    """The session's outcome from a participant's figures, or None while it goes on.

    ``counted``: game ratings (game and control pairs, as the rater sees them) not excluded;
    tutorial and probation ratings never count. Screen-out comes first: a rater failing probation
    is never "complete".
    """
    if rules.screen_out_rounds and failed_rounds >= rules.screen_out_rounds:
        return SessionOutcome.SCREENED_OUT
    if rules.quota_ratings and counted >= rules.quota_ratings:
        return SessionOutcome.COMPLETED
    if rules.quota_minutes and active_seconds >= 60 * rules.quota_minutes:
        return SessionOutcome.COMPLETED
    return None


def session_end_check(*, user: AbstractBaseUser, now: datetime) -> Participation | None:
    """The participant's participation once their session has ended (recorded now when it just
    did), else None; None for a rater who did not come through a platform link."""
    participation = Participation.objects.select_related("profile").filter(profile__user=user).first()
    if participation is None or participation.outcome:
        return participation  # not a participant (None), or their session ended already
    rules = study()
    # One statement, whatever the session's length: the counted game ratings and the active time.
    figures = Rating.objects.filter(rater=user).aggregate(
        counted=Count("pk", filter=game_ratings() & Q(excluded=False)),
        active=active_seconds_sum(rules.active_seconds_cap),
    )
    counted, seconds = figures["counted"], figures["active"].total_seconds()
    failed = ProbationRound.objects.filter(profile=participation.profile, passed=False).count()
    outcome = outcome_due(counted=counted, active_seconds=seconds, failed_rounds=failed, rules=rules)
    if outcome is None:
        return None
    with transaction.atomic():
        recorded = Participation.objects.filter(pk=participation.pk, outcome="").update(outcome=outcome, ended_at=now)
        if recorded:
            profile = participation.profile
            RaterAction.objects.create(
                rater=profile,
                actor=None,
                action=f"session_{outcome}",
                reason=ACTION_WORDS[outcome].format(ratings=counted, minutes=seconds / 60, rounds=failed),
                from_state=profile.state,
                to_state=profile.state,
            )
    participation.refresh_from_db()
    return participation


def may_rate_on(participation: Participation | None, rules: StudySettings) -> bool:
    """Whether a participant whose session ended may still rate: never when screened out; after
    completing, when the study allows it."""
    if participation is None or not participation.outcome:
        return True
    return participation.outcome == SessionOutcome.COMPLETED and rules.continue_after_completion


def completion_code(participation: Participation, rules: StudySettings) -> str:
    if participation.outcome == SessionOutcome.SCREENED_OUT:
        return rules.screen_out_code
    return rules.completion_code
