"""Reports of a problem with a pair, the skip that comes with them in the game, and their staff queue.

A rater who finds a pair broken (an image that does not load, an unreadable or offensive
caption, anything else) reports it from the rating screen. In the game the report also skips
the pair: the rater's assignment closes without a rating (a skip is never a rating: it scores
nothing and counts toward no consensus) and its slot goes back to the pair. Skips are limited to
``RATINGGAME["SKIPS_PER_HOUR"]`` an hour, so that skipping cannot be used to pick easy pairs;
past the limit the report is still filed, and the rater rates the pair. A control pair is
reported and skipped as a game pair is, and another control comes later in its place (SPEC 2.5).
Tutorial and probation pairs are fixed sets scored against experts: reported but never skipped.

Once ``RATINGGAME["REPORTS_TO_WITHDRAW"]`` raters have reported a game pair and no staff member
has answered, the pair is withdrawn: it leaves the serving order (``assign_rank``, see
``ratinggame.game.assignment.pair_rank_refresh``) until staff put it back in play. Locks follow
the game's order: the rater's profile, then the pair.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from ratinggame.game import gateway
from ratinggame.game.assignment import pair_rank_refresh, slot_give_back
from ratinggame.game.rating import RatingRejected, outcome_keep, session_open
from ratinggame.game.skips import control_owe
from ratinggame.models import GAME_STAGES, Assignment, CaptionPair, PairReport, Pool, ReportOutcome, ReportReason

REPORT_MAX_CHARS = 1000


class ReportRefused(Exception):
    """A report that cannot be filed; the message says why."""


@dataclass(frozen=True)
class Reported:
    report: PairReport
    skipped: bool  # the rater's assignment closed without a rating
    withdrawn: bool  # the pair left the serving order with this report
    skips_left: int  # skips the rater has left this hour


def pair_report(
    *, rater: AbstractBaseUser, assignment_id: int, reason: str, text: str = "", now: datetime | None = None
) -> Reported:
    """Report the pair of the rater's open assignment ``assignment_id``; skip it in the game.

    Raises ReportRefused for an unknown reason, "other" without words, an assignment that is not
    the rater's or no longer open, or a pair the rater reported already.
    """
    now = now or timezone.now()
    text = text.strip()
    if reason not in ReportReason.values:
        raise ReportRefused("Choose what is wrong with the pair.")
    if reason == ReportReason.OTHER and not text:
        raise ReportRefused("Say in a few words what is wrong with the pair.")
    if len(text) > REPORT_MAX_CHARS:
        raise ReportRefused(f"Keep it under {REPORT_MAX_CHARS} characters.")
    try:
        return _report(rater, assignment_id, reason, text, now)
    except RatingRejected as rejected:  # the study session's gate (SPEC 7): nothing filed, nothing skipped
        outcome_keep(rejected, rater, now)
        raise ReportRefused(f"{rejected.message} The report was not filed.") from None


def _report(rater, assignment_id: int, reason: str, text: str, now: datetime) -> Reported:
    with transaction.atomic():
        # One request of a rater at a time.
        profile = gateway.profile_locked(rater)
        session_open(rater, profile, now)
        assignment = Assignment.objects.open(now).filter(pk=assignment_id, rater=rater).select_related("pair").first()
        if assignment is None:
            raise ReportRefused("This pair is no longer open: the report was not filed.")
        skips_left = skips_left_for(rater, now)
        # A control is skipped as a game pair is (SPEC 2.5: nothing tells them apart), and another
        # control is owed in its place.
        skip = assignment.stage in GAME_STAGES and skips_left > 0
        try:
            with transaction.atomic():
                report = PairReport.objects.create(
                    pair=assignment.pair,
                    rater=rater,
                    stage=assignment.stage,
                    reason=reason,
                    text=text,
                    skipped=skip,
                    created_at=now,
                )
        except IntegrityError:
            raise ReportRefused("You have reported this pair already: staff will look at it.") from None
        pair = CaptionPair.objects.select_for_update(no_key=True).get(pk=assignment.pair_id)
        if skip and assignment.stage == Pool.CONTROL:
            Assignment.objects.filter(pk=assignment.pk).update(expires_at=now)
            control_owe(profile)
        elif skip:
            slot_give_back(pair, assignment.pk, expires_at=now)
        withdrawn = False
        if pair.pool == Pool.GAME and pair.withdrawn_at is None and _open_reports(pair) >= _threshold():
            pair.withdrawn_at = now
            withdrawn = True
        pair_rank_refresh(pair)
        pair.save(update_fields=["in_flight", "withdrawn_at", "assign_rank"])
    return Reported(report=report, skipped=skip, withdrawn=withdrawn, skips_left=skips_left - skip)


def skips_left_for(rater: AbstractBaseUser, now: datetime) -> int:
    """Game pairs the rater may still skip in the hour before ``now``."""
    recent = PairReport.objects.filter(rater=rater, skipped=True, created_at__gt=now - timedelta(hours=1)).count()
    return max(0, settings.RATINGGAME["SKIPS_PER_HOUR"] - recent)


def reports_resolve(
    *, pair: CaptionPair, actor: AbstractBaseUser, back_in_play: bool, note: str, now: datetime | None = None
) -> int:
    """Staff's answer to the open reports of ``pair``: back in play (the pair is served again) or
    kept out (a game pair stays out of the serving order). Returns how many reports it closed."""
    note = note.strip()
    if not note:
        raise ReportRefused("A note is required: say what you found.")
    now = now or timezone.now()
    with transaction.atomic():
        pair = CaptionPair.objects.select_for_update(no_key=True).get(pk=pair.pk)
        closed = PairReport.objects.filter(pair=pair, resolved_at__isnull=True).update(
            resolved_at=now,
            resolved_by=actor,
            outcome=ReportOutcome.BACK_IN_PLAY if back_in_play else ReportOutcome.KEPT_OUT,
            note=note,
        )
        if not closed:
            raise ReportRefused("This pair has no open report.")
        if pair.pool == Pool.GAME:
            pair.withdrawn_at = None if back_in_play else (pair.withdrawn_at or now)
            pair_rank_refresh(pair)
            pair.save(update_fields=["withdrawn_at", "assign_rank"])
    return closed


def _open_reports(pair: CaptionPair) -> int:
    return PairReport.objects.filter(pair=pair, resolved_at__isnull=True).count()


def _threshold() -> int:
    return max(1, settings.RATINGGAME["REPORTS_TO_WITHDRAW"])
