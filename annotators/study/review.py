"""Who a researcher may reject under Prolific's rules (SPEC 7), listed for them to decide: the site
never rejects anyone by itself.

Of Prolific's valid reasons to reject a submission, two can be read here: exceptionally fast
completion (a completion time more than 3 standard deviations below the mean of the study's
completed sessions) and failed fair attention checks (instructed-response items; Prolific asks for
at least two failed, in a study over five minutes). Disagreeing with the expert answers of hidden
control pairs is none of them, and screened-out participants may never be rejected: they are left
out. Completion time here is the session's time from the first entry to its end on this site.
"""

from dataclasses import dataclass
from statistics import mean, stdev

from django.db.models import Count, F, Q

from annotators.models import Participation, SessionOutcome
from annotators.study.settings import study
from ratinggame.models import Pool, Rating

FAST = "Exceptionally fast completion"
ATTENTION = "Failed attention checks"
FAST_SD = 3  # Prolific: 3 standard deviations below the mean completion time
# No session of n can lie more than (n - 1) / sqrt(n) standard deviations below the mean: 3 SD
# needs 11 sessions at least; fewer list no one.
FAST_MIN_SESSIONS = 11


@dataclass(frozen=True)
class RejectEligible:
    participation: Participation
    reason: str  # Prolific's reason, as its review page names it
    evidence: str  # what the reason rests on, in words


def reject_eligible() -> list[RejectEligible]:
    """Every participant who may be rejected, with Prolific's reason and its evidence: first those
    who failed attention checks, then those exceptionally fast (a participant may appear twice)."""
    participations = {
        p.profile.user_id: p
        for p in Participation.objects.select_related("profile").exclude(outcome=SessionOutcome.SCREENED_OUT)
    }
    return _failed_attention(participations) + _exceptionally_fast(participations)


def _failed_attention(participations: dict[int, Participation]) -> list[RejectEligible]:
    rows = (
        Rating.objects.filter(stage=Pool.ATTENTION, rater_id__in=participations)
        .values("rater_id")
        .annotate(met=Count("id"), failed=Count("id", filter=~Q(value=F("reference"))))
        .filter(failed__gte=study().attention_fails)
        .order_by("rater_id")
    )
    return [
        RejectEligible(
            participations[row["rater_id"]],
            ATTENTION,
            f"{row['failed']} of {row['met']} attention checks answered otherwise than they asked",
        )
        for row in rows
    ]


def _exceptionally_fast(participations: dict[int, Participation]) -> list[RejectEligible]:
    completed = [
        (p, (p.ended_at - p.entered_at).total_seconds())
        for p in participations.values()
        if p.outcome == SessionOutcome.COMPLETED and p.ended_at is not None
    ]
    if len(completed) < FAST_MIN_SESSIONS:
        return []
    seconds = [s for _, s in completed]
    average, spread = mean(seconds), stdev(seconds)
    limit = average - FAST_SD * spread
    return [
        RejectEligible(
            p,
            FAST,
            f"completed in {s / 60:.1f} min; the mean is {average / 60:.1f} min, 3 SD below it {limit / 60:.1f} min",
        )
        for p, s in sorted(completed, key=lambda item: item[1])
        if s < limit
    ]
