"""The pay report for a period (SPEC 7): per rater, active time, sessions, ratings counted and
excluded, points and pay; the median session and the hourly pay at the median. Staff and
researchers read it on a page, through the API and with ``manage.py pay_report``; it downloads as
Prolific's bulk-bonus CSV and as a CSV with every column (``annotators.study.pay_files``).

Every study rater with a rating in the period is in it, withdrawn ones too: their data is gone,
their pay is not, and their external id stays here (and nowhere else shown). Staff are not paid
raters. Points are the game score as the rater was last shown it before the period's end (the
running total of their last game rating's feedback), so a reset after a failed window shows.
"""

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import OuterRef, Q, Subquery

from annotators.models import Participation, RaterProfile, SessionOutcome
from annotators.study.pay import MedianPay, median_pay, money, pay_for, session_seconds
from annotators.study.settings import StudySettings, study
from annotators.study.timing import capped_seconds
from ratinggame.models import GAME_STAGES, Rating


class PayPeriodError(ValueError):
    """A period that cannot be reported (its words are for the person who asked)."""


# The days a period may name: any a study can have run on, and never the calendar's last day,
# whose end (the next midnight) no datetime can hold.
PERIOD_DAYS = (date(2000, 1, 1), date(2099, 12, 31))


def pay_period(first_day: date, last_day: date) -> tuple[datetime, datetime]:
    """The period from the start of ``first_day`` to the end of ``last_day`` (UTC), as [start, end)."""
    for day in (first_day, last_day):
        if not PERIOD_DAYS[0] <= day <= PERIOD_DAYS[1]:
            raise PayPeriodError(
                f"{day} is outside the days a pay period may name ({PERIOD_DAYS[0]} to {PERIOD_DAYS[1]})."
            )
    if last_day < first_day:
        raise PayPeriodError(f"The period ends ({last_day}) before it starts ({first_day}): swap the dates.")
    start = datetime.combine(first_day, time.min, tzinfo=UTC)
    return start, datetime.combine(last_day + timedelta(days=1), time.min, tzinfo=UTC)


@dataclass(frozen=True)
class PayRow:
    profile_id: int
    username: str
    platform: str  # "" for open sign-up
    participant_id: str
    study_id: str
    session_id: str
    outcome: str
    withdrawn: bool
    active_seconds: float
    sessions: int
    ratings: int  # every stage
    counted: int  # game ratings (game and control pairs) not excluded
    excluded: int  # game ratings excluded
    points: int
    base: Decimal
    bonus: Decimal
    # Completed by failing probation after entering the game (SPEC 7): for the researcher to review.
    probation_after_game: bool = False
    # The base goes in the platform's bonus too (``StudySettings.pay_base_as_bonus``).
    base_as_bonus: bool = False
    # The adjustment to the platform's minimum hourly pay at the median (``MedianPay.adjustment``),
    # paid to every participant who came through a platform link when the study falls short.
    adjustment: Decimal = Decimal(0)

    @property
    def amount(self) -> Decimal:
        return self.base + self.bonus

    @property
    def platform_bonus(self) -> Decimal:
        """What the platform pays on top of its own reward (SPEC 7): the points' bonus; the base
        too only where the study says so."""
        return self.amount if self.base_as_bonus else self.bonus

    @property
    def platform_due(self) -> Decimal:
        """All the platform pays on top of its reward: the bonus and the adjustment."""
        return self.platform_bonus + self.adjustment

    @property
    def outcome_label(self) -> str:
        """How the session ended, in words ("screened out"; the stored value is ``screened_out``)."""
        if not self.outcome:
            return ""
        label = SessionOutcome(self.outcome).label.lower()
        return f"{label} (failed probation after entering the game: review)" if self.probation_after_game else label


@dataclass(frozen=True)
class PayReport:
    start: datetime
    end: datetime
    currency: str
    hourly: Decimal
    per_point: Decimal
    minimum_hourly: Decimal
    rows: list[PayRow]
    median: MedianPay

    @property
    def total(self) -> Decimal:
        return sum((row.amount for row in self.rows), Decimal(0))

    @property
    def last_day(self) -> date:
        """The period's last day, as the researcher named it (``end`` is the midnight after it)."""
        return (self.end - timedelta(microseconds=1)).date()

    @property
    def active_seconds(self) -> float:
        return sum(row.active_seconds for row in self.rows)


@dataclass
class _Tally:
    timings: list = field(default_factory=list)  # (served, submitted, capped seconds)
    ratings: int = 0
    counted: int = 0
    excluded: int = 0


def pay_report(*, start: datetime, end: datetime) -> PayReport:
    """The report of ratings submitted in [start, end)."""
    if end <= start:
        raise PayPeriodError("The period must end after it starts.")
    rules = study()
    profiles = _period_profiles(start, end)
    tallies = _tallies(profiles, start, end, rules.active_seconds_cap)
    shown = _shown_feedback(profiles)
    participations = {p.profile_id: p for p in Participation.objects.filter(profile__in=profiles.values())}
    rows, all_sessions, pay_per_session = [], [], []
    for user_id, profile in sorted(profiles.items(), key=lambda item: item[1].pk):
        tally = tallies[user_id]
        sessions = session_seconds(tally.timings)
        points = int((shown.get(profile.last_game_rating) or {}).get("stage_total", 0))
        participation = participations.get(profile.pk)
        row = _pay_row(profile, participation, tally, sessions, points, rules)
        rows.append(row)
        all_sessions.extend(sessions)
        paid = _received(row, participation, rules)
        pay_per_session.extend([money(paid / len(sessions))] * len(sessions))
    median = median_pay(all_sessions, pay_per_session, rules.platform_min_hourly)
    if median.adjustment:
        rows = [replace(row, adjustment=median.adjustment) if row.platform else row for row in rows]
    return PayReport(
        start=start,
        end=end,
        currency=rules.currency,
        hourly=rules.pay_hourly,
        per_point=rules.pay_per_point,
        minimum_hourly=rules.platform_min_hourly,
        rows=rows,
        median=median,
    )


def _period_profiles(start: datetime, end: datetime) -> dict[int, RaterProfile]:
    """Every study rater with a rating in [start, end), withdrawn ones too, by user id.

    Each carries ``last_game_rating``: the pk of its last game rating before ``end``, whose
    feedback holds the points it was last shown.
    """
    return {
        profile.user_id: profile
        for profile in RaterProfile.objects.raters(with_withdrawn=True)
        .filter(user__ratings__submitted_at__gte=start, user__ratings__submitted_at__lt=end)
        .distinct()
        .select_related("user")
        .annotate(last_game_rating=Subquery(_last_game_rating(end)))
    }


def _tallies(profiles: dict[int, RaterProfile], start: datetime, end: datetime, cap: int) -> dict[int, _Tally]:
    """Per rater (user id), the period's ratings: their timings in serve order and their counts.

    ``cap`` is the study's cap on one rating's active seconds. Only game ratings are counted
    or excluded; every rating counts in ``ratings``.
    """
    tallies: dict[int, _Tally] = defaultdict(_Tally)
    ratings = (
        Rating.objects.filter(rater_id__in=profiles, submitted_at__gte=start, submitted_at__lt=end)
        .order_by("rater_id", "served_at", "id")
        .values_list("rater_id", "stage", "excluded", "served_at", "submitted_at")
    )
    for rater_id, stage, excluded, served, submitted in ratings.iterator(chunk_size=5000):
        tally = tallies[rater_id]
        tally.timings.append((served, submitted, capped_seconds(served, submitted, cap)))
        tally.ratings += 1
        if stage in GAME_STAGES:
            tally.counted += not excluded
            tally.excluded += excluded
    return tallies


def _shown_feedback(profiles: dict[int, RaterProfile]) -> dict[int, dict]:
    """The feedback of each profile's last game rating, by rating pk: the points it was shown."""
    return dict(
        Rating.objects.filter(pk__in=[p.last_game_rating for p in profiles.values() if p.last_game_rating])
        .values_list("pk", "feedback")
        .iterator()
    )


def _pay_row(
    profile: RaterProfile,
    participation: Participation | None,
    tally: _Tally,
    sessions: list[float],
    points: int,
    rules: StudySettings,
) -> PayRow:
    """One rater's row and pay; the platform's columns are empty for open sign-up (no participation)."""
    seconds = sum(sessions)
    pay = pay_for(active_seconds=seconds, points=points, hourly=rules.pay_hourly, per_point=rules.pay_per_point)
    return PayRow(
        profile_id=profile.pk,
        username=profile.user.get_username(),
        platform=participation.platform if participation else "",
        participant_id=participation.external_id if participation else "",
        study_id=participation.study_id if participation else "",
        session_id=participation.session_id if participation else "",
        outcome=participation.outcome if participation else "",
        withdrawn=profile.withdrawn_at is not None,
        active_seconds=seconds,
        sessions=len(sessions),
        ratings=tally.ratings,
        counted=tally.counted,
        excluded=tally.excluded,
        points=points,
        base=pay.base,
        bonus=pay.bonus,
        probation_after_game=bool(participation and participation.probation_after_game),
        base_as_bonus=rules.pay_base_as_bonus,
    )


def _received(row: PayRow, participation: Participation | None, rules: StudySettings) -> Decimal:
    """What the participant receives, as the pay at the median judges it.

    With the study's reward on the platform set, that reward and the platform's bonus on top
    (the base is the reward's part unless the study pays it as a bonus); without it, this
    site's amount.
    """
    if participation and rules.platform_reward:
        return rules.platform_reward + row.platform_bonus
    return row.amount


def _last_game_rating(end: datetime):
    return (
        Rating.objects.filter(Q(stage__in=GAME_STAGES), rater_id=OuterRef("user_id"), submitted_at__lt=end)
        .order_by("-submitted_at", "-id")
        .values("pk")[:1]
    )
