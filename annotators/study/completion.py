"""The end of a participant's session (SPEC 7): the quota reached (counted game ratings or active
minutes, whichever first) completes it with the completion code; failing probation the set number
of rounds before ever entering the game screens the rater out, with the screened-out code. Only
participants who came through a platform link have a session quota; open sign-up raters play on.

Prolific allows in-study screening only at a study's start ("custom screening at the end is not
allowed"; screened-out participants get a fixed payment and may not be rejected: Prolific's help
pages on in-study screening), so a participant sent back to probation after entering the game (a
failed window, a drift) who then fails the rounds completes instead, with the completion code, paid
for their time, and flagged for the researcher (``Participation.probation_after_game``).

``outcome_due`` is the rule (no query); ``session_of`` reads a participant's figures and records
the outcome once (a conditional UPDATE: two requests at once record it once), logged in the staff
action log. The rating service reads the session under the rater's profile lock, refuses a rating
or a serve once it is ``closed``, and asks ``ends_with`` whether a rating ends it (then nothing is
served after it), without a query of its own.
"""

from dataclasses import dataclass, replace
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q

from annotators.models import Participation, ProbationRound, RaterAction, SessionOutcome
from annotators.study.settings import StudySettings, study
from annotators.study.timing import active_seconds_sum, capped_seconds
from ratinggame.models import GAME_STAGES, Rating, game_ratings

ACTION_WORDS = {
    SessionOutcome.COMPLETED: "Session complete: {ratings} counted game rating(s), {minutes:.1f} active minute(s).",
    SessionOutcome.SCREENED_OUT: "Screened out after failing {rounds} probation round(s); paid for the time given.",
}
NOTHING_LEFT_WORDS = (
    "Session complete before its quota: no pair was left to rate; {ratings} counted game rating(s), "
    "{minutes:.1f} active minute(s). Paid for the time given."
)
AFTER_GAME_WORDS = (
    "Session complete after failing {rounds} probation round(s), sent back after entering the game: never "
    "screened out once in the game (Prolific screens only at a study's start); paid for the time given. "
    "Flagged for the researcher."
)


def outcome_due(
    *, counted: int, active_seconds: float, failed_rounds: int, rules: StudySettings, entered_game: bool = False
) -> str | None:
    """The session's outcome from a participant's figures, or None while it goes on.

    ``counted``: game ratings (game and control pairs, as the rater sees them) not excluded;
    tutorial and probation ratings never count. ``entered_game``: the participant has been in the
    game: failing probation then completes the session, never screens them out. Failing probation
    comes first: a rater on their last failed round is never "complete" by the quota.
    """
    if rules.screen_out_rounds and failed_rounds >= rules.screen_out_rounds:
        return SessionOutcome.COMPLETED if entered_game else SessionOutcome.SCREENED_OUT
    if rules.quota_ratings and counted >= rules.quota_ratings:
        return SessionOutcome.COMPLETED
    if rules.quota_minutes and active_seconds >= 60 * rules.quota_minutes:
        return SessionOutcome.COMPLETED
    return None


@dataclass(frozen=True)
class Session:
    """A participant's session as a serve or a rating finds it; its figures are read only while
    it goes on."""

    participation: Participation
    rules: StudySettings
    counted: int = 0
    active_seconds: float = 0.0
    failed_rounds: int = 0

    @property
    def ended(self) -> bool:
        return bool(self.participation.outcome)

    @property
    def closed(self) -> bool:
        """Ended, and takes no further rating or serve (unless the study lets completed
        participants rate on)."""
        return self.ended and not may_rate_on(self.participation, self.rules)

    def after(self, *, stage: str, served_at: datetime, now: datetime, failed_round: bool = False) -> "Session":
        """The session's figures after one more rating (of an assignment of ``stage`` served at
        ``served_at``, stored at ``now``; ``failed_round``: it fails a probation round)."""
        return replace(
            self,
            counted=self.counted + (stage in GAME_STAGES),
            active_seconds=self.active_seconds + capped_seconds(served_at, now, self.rules.active_seconds_cap),
            failed_rounds=self.failed_rounds + failed_round,
        )

    @property
    def entered_game(self) -> bool:
        return self.participation.profile.game_entered_at is not None

    def due(self) -> str | None:
        """The outcome these figures call for (``outcome_due``), or None while the session goes on."""
        return outcome_due(
            counted=self.counted,
            active_seconds=self.active_seconds,
            failed_rounds=self.failed_rounds,
            rules=self.rules,
            entered_game=self.entered_game,
        )

    def ends_with(self, *, stage: str, served_at: datetime, now: datetime, failed_round: bool = False) -> bool:
        """Whether one more rating (as ``after`` takes it) ends the session now."""
        after = self.after(stage=stage, served_at=served_at, now=now, failed_round=failed_round)
        return self.ends_as(after)

    def ends_as(self, after: "Session") -> bool:
        """Whether the session ends with the figures ``after`` (this one's after a rating)."""
        return not self.ended and after.due() is not None  # once ended (rating on), it ended before

    @property
    def progress(self) -> "SessionProgress":
        limit = self.rules.screen_out_rounds
        return SessionProgress(
            rated=self.counted,
            quota_ratings=self.rules.quota_ratings,
            minutes=int(self.active_seconds // 60),
            quota_minutes=self.rules.quota_minutes,
            rounds_left=max(0, limit - self.failed_rounds) if limit else None,
        )


@dataclass(frozen=True)
class SessionProgress:
    """How far a participant's session is, in their own terms, for the rating screens."""

    rated: int  # counted game ratings so far
    quota_ratings: int  # 0: no limit
    minutes: int  # whole active minutes so far
    quota_minutes: int  # 0: no limit
    rounds_left: int | None = None  # probation rounds that may still be failed before the end; None: no limit

    @property
    def last_round(self) -> bool:
        """The probation round on now is the last: failing it ends the session."""
        return self.rounds_left == 1

    def words(self, stage: str) -> str:
        """ "Session: rating 12 of 100" on a game pair (the pair on screen is the next one);
        elsewhere what is done, since practice pairs do not count."""
        parts = []
        if self.quota_ratings:
            if stage not in GAME_STAGES:
                parts.append(f"{self.rated} of {self.quota_ratings} game ratings done (practice pairs do not count)")
            elif self.rated >= self.quota_ratings:
                parts.append(f"all {self.quota_ratings} ratings done, rating on")
            else:
                parts.append(f"rating {self.rated + 1} of {self.quota_ratings}")
        if self.quota_minutes:
            parts.append(f"{min(self.minutes, self.quota_minutes)} of {self.quota_minutes} minutes")
        words = f"Session: {' · '.join(parts)}." if parts else ""
        if stage == "probation" and self.last_round:
            words += " This is your last probation round: if you do not pass it, your session ends here."
        return words.strip()


def session_of(*, user: AbstractBaseUser, now: datetime) -> Session | None:
    """The participant's session (its outcome recorded now when it just ended), or None for a
    rater who did not come through a platform link."""
    participation = Participation.objects.select_related("profile").filter(profile__user=user).first()
    if participation is None:
        return None
    rules = study()
    if participation.outcome:
        return Session(participation, rules)
    # One statement, whatever the session's length: the counted game ratings and the active time.
    figures = Rating.objects.filter(rater=user).aggregate(
        counted=Count("pk", filter=game_ratings() & Q(excluded=False)),
        active=active_seconds_sum(rules.active_seconds_cap),
    )
    counted, seconds = figures["counted"], figures["active"].total_seconds()
    failed = ProbationRound.objects.filter(profile=participation.profile, passed=False).count()
    session = Session(participation, rules, counted=counted, active_seconds=seconds, failed_rounds=failed)
    outcome = session.due()
    if outcome is not None:
        after_game = bool(rules.screen_out_rounds) and failed >= rules.screen_out_rounds and session.entered_game
        _outcome_record(session, outcome, now=now, after_game=after_game)
    return session


def session_end_nothing_left(session: Session, *, now: datetime) -> None:
    """End an open session with the completion code, at the participant's request, when no pair is
    left for them to rate (the caller has just found none): they gave their time, and waiting on
    an empty pool has no end. The staff action log says the quota was not reached."""
    if not session.ended:
        _outcome_record(session, SessionOutcome.COMPLETED, now=now, after_game=False, words=NOTHING_LEFT_WORDS)


def _outcome_record(
    session: Session, outcome: str, *, now: datetime, after_game: bool, words: str | None = None
) -> None:
    participation = session.participation
    with transaction.atomic():
        recorded = Participation.objects.filter(pk=participation.pk, outcome="").update(
            outcome=outcome, ended_at=now, probation_after_game=after_game
        )
        if recorded:
            profile = participation.profile
            words = words or (AFTER_GAME_WORDS if after_game else ACTION_WORDS[outcome])
            RaterAction.objects.create(
                rater=profile,
                actor=None,
                action=f"session_{outcome}",
                reason=words.format(
                    ratings=session.counted, minutes=session.active_seconds / 60, rounds=session.failed_rounds
                ),
                from_state=profile.state,
                to_state=profile.state,
            )
    participation.refresh_from_db()


def session_end_check(*, user: AbstractBaseUser, now: datetime) -> Participation | None:
    """The participant's participation once their session has ended (recorded now when it just
    did), else None; None for a rater who did not come through a platform link."""
    session = session_of(user=user, now=now)
    return session.participation if session is not None and session.ended else None


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
