"""Approvals and bonuses through Prolific's API, with a ledger that never pays twice (SPEC 7).

A bonus batch pays everyone what they earned up to a day (the pay report from the study's first day,
``PayRow.platform_due``: what Prolific pays on top of its reward, the points' bonus and any
adjustment up to its minimum hourly pay at the median) less what earlier batches paid
them, so running the same day twice, or overlapping days, pays only what is new. One batch of a
study is on its way at a time (a database constraint): a draft (its lines fixed here), created on
Prolific (not paid), its pay call sent, then paid. The pay call, which Prolific does not make
idempotent, is claimed by a conditional update that is committed before it is sent: a second "Pay"
finds it claimed and answers "already". When Prolific's answer is lost (a timeout, a server error)
the batch stays "paying" and counts as paid; Prolific's API reference documents no call that reads
a bulk bonus back, so this site never guesses: the researcher looks on Prolific and says which it
was (``batch_resolve``). A crash between set-up and pay leaves the batch "created": paying it then
is its first pay call.

Callers run these outside a transaction: each step commits before the next call to Prolific.
"""

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Sum

from annotators.models import (
    BONUS_OPEN_STATES,
    BonusBatch,
    BonusLine,
    BonusState,
    Participation,
    Platform,
    SessionOutcome,
)
from annotators.study.prolific import Prolific, ProlificError
from annotators.study.report import PERIOD_DAYS, pay_period, pay_report
from annotators.study.settings import StudySettings, study

# The batches whose lines count as paid: paid, and those whose pay call went out (its answer lost).
COUNTED_PAID = (BonusState.PAID, BonusState.PAYING)


NOTHING_OWED = "Nothing is owed up to {day}: no bonus earned by then waits to be paid."


class LedgerError(Exception):
    """What the researcher is told when a step cannot go on (nothing was paid by it)."""


def prolific_rules() -> StudySettings:
    """The study's settings, with the Prolific study they pay for."""
    rules = study()
    if not rules.prolific_study_id:
        raise LedgerError("No Prolific study is set (RATINGGAME_PROLIFIC_STUDY_ID).")
    return rules


def client(rules: StudySettings | None = None) -> Prolific:
    rules = rules or prolific_rules()
    try:
        return Prolific(token=rules.prolific_api_token, base_url=rules.prolific_api_url)
    except ProlificError as error:
        raise LedgerError(str(error)) from None


# --- Owed ----------------------------------------------------------------------------------------


def owed(up_to: date) -> list[tuple[Participation, Decimal]]:
    """Each Prolific participant's bonus earned up to the end of ``up_to`` less what batches paid
    them; only those owed something."""
    study_id = study().prolific_study_id
    start, end = pay_period(PERIOD_DAYS[0], up_to)
    # This study's participants (a link that named no study is taken as this one's).
    rows = [
        row
        for row in pay_report(start=start, end=end).rows
        if row.platform == Platform.PROLIFIC and row.study_id in ("", study_id)
    ]
    participations = {
        p.profile_id: p for p in Participation.objects.filter(profile_id__in=[r.profile_id for r in rows])
    }
    paid = dict(
        BonusLine.objects.filter(batch__state__in=COUNTED_PAID, batch__study_id=study_id)
        .values("participation")
        .annotate(total=Sum("amount"))
        .values_list("participation", "total")
    )
    found = []
    for row in rows:
        participation = participations[row.profile_id]
        due = row.platform_due - paid.get(participation.pk, Decimal(0))
        if due > 0:
            found.append((participation, due))
    return found


# --- A batch's steps -------------------------------------------------------------------------------


def batch_open(study_id: str) -> BonusBatch | None:
    return BonusBatch.objects.filter(study_id=study_id, state__in=BONUS_OPEN_STATES).first()


def batch_draft(*, up_to: date, by, now: datetime) -> BonusBatch:
    """A draft batch of what is owed up to ``up_to``: shown to the researcher before anything goes
    to Prolific. Refused while another batch of the study is on its way, or when nothing is owed."""
    rules = prolific_rules()
    if (current := batch_open(rules.prolific_study_id)) is not None:
        raise LedgerError(f"Batch {current.pk} is on its way ({current.get_state_display()}): finish it first.")
    lines = owed(up_to)
    if not lines:
        raise LedgerError(NOTHING_OWED.format(day=up_to))
    try:
        with transaction.atomic():
            batch = BonusBatch.objects.create(
                study_id=rules.prolific_study_id,
                up_to=up_to,
                currency=rules.currency,
                total=sum((amount for _, amount in lines), Decimal(0)),
                created_at=now,
                created_by=by,
            )
            BonusLine.objects.bulk_create(BonusLine(batch=batch, participation=p, amount=a) for p, a in lines)
    except IntegrityError:
        raise LedgerError("Another batch was started at the same moment: finish that one first.") from None
    return batch


def batch_cancel(batch: BonusBatch) -> BonusBatch:
    """A batch whose pay call was never sent goes: nothing of it was paid (a bulk bonus set up on
    Prolific and never paid costs nothing)."""
    if not BonusBatch.objects.filter(pk=batch.pk, state__in=(BonusState.DRAFT, BonusState.CREATED)).update(
        state=BonusState.CANCELLED
    ):
        batch.refresh_from_db()
        raise LedgerError(f"Batch {batch.pk} is {batch.get_state_display().lower()}: it cannot be cancelled.")
    batch.refresh_from_db()
    return batch


def batch_create(batch: BonusBatch, api: Prolific) -> BonusBatch:
    """Set the draft up on Prolific (safe to repeat: a set-up pays nothing)."""
    if batch.state != BonusState.DRAFT:
        return batch
    lines = [(line.participation.external_id, line.amount) for line in batch.lines.select_related("participation")]
    try:
        answer = api.bonus_create(batch.study_id, lines)
    except ProlificError as error:
        # Refused as it is (a wrong id, say): the batch fails, nothing was paid, a new one may be drafted.
        state = BonusState.FAILED if error.refused else BonusState.DRAFT
        BonusBatch.objects.filter(pk=batch.pk, state=BonusState.DRAFT).update(state=state, error=str(error))
        raise LedgerError(f"Prolific did not set the bonus up: {error}") from None
    BonusBatch.objects.filter(pk=batch.pk, state=BonusState.DRAFT).update(
        state=BonusState.CREATED, prolific_id=answer["id"], error=""
    )
    batch.refresh_from_db()
    return batch


def batch_pay(batch: BonusBatch, api: Prolific, *, now: datetime) -> BonusBatch:
    """Send the batch's one pay call. A second call for the same batch answers "already"."""
    claimed = BonusBatch.objects.filter(pk=batch.pk, state=BonusState.CREATED).update(
        state=BonusState.PAYING, pay_sent_at=now
    )
    batch.refresh_from_db()
    if not claimed:
        raise LedgerError(_not_payable(batch))
    try:
        api.bonus_pay(batch.prolific_id)
    except ProlificError as error:
        if error.carried_out_unknown:
            BonusBatch.objects.filter(pk=batch.pk).update(error=f"{error} {UNKNOWN_WORDS}")
            raise LedgerError(f"Batch {batch.pk}: {error} {UNKNOWN_WORDS}") from None
        # Certainly not carried out: the batch may be paid later.
        BonusBatch.objects.filter(pk=batch.pk, state=BonusState.PAYING).update(
            state=BonusState.CREATED, pay_sent_at=None, error=str(error)
        )
        raise LedgerError(f"Batch {batch.pk} was not paid: {error}") from None
    BonusBatch.objects.filter(pk=batch.pk, state=BonusState.PAYING).update(state=BonusState.PAID, paid_at=now, error="")
    batch.refresh_from_db()
    return batch


UNKNOWN_WORDS = (
    "It counts as paid and is never sent again: look at the study's bonuses on Prolific, then say whether it was "
    "paid (manage.py prolific resolve <batch> --paid, or --not-paid to pay it again)."
)


def _not_payable(batch: BonusBatch) -> str:
    if batch.state == BonusState.PAID:
        return f"Batch {batch.pk} is already paid."
    if batch.state == BonusState.PAYING:
        return f"Batch {batch.pk}'s pay call was already sent; its answer was not received. {UNKNOWN_WORDS}"
    if batch.state == BonusState.DRAFT:
        return f"Batch {batch.pk} is not set up on Prolific yet."
    return f"Batch {batch.pk} is {batch.get_state_display().lower()}: it is not paid."


def batch_resolve(batch: BonusBatch, *, paid: bool, now: datetime) -> BonusBatch:
    """The researcher's word on a batch whose pay call's answer was lost."""
    to = {"state": BonusState.PAID, "paid_at": now} if paid else {"state": BonusState.CREATED, "pay_sent_at": None}
    if not BonusBatch.objects.filter(pk=batch.pk, state=BonusState.PAYING).update(**to, error=""):
        batch.refresh_from_db()
        raise LedgerError(f"Batch {batch.pk} is {batch.get_state_display().lower()}: there is nothing to resolve.")
    batch.refresh_from_db()
    return batch


def batch_current(*, up_to: date, by, now: datetime) -> BonusBatch:
    """The batch of the study on its way, or a new draft up to ``up_to``."""
    return batch_open(prolific_rules().prolific_study_id) or batch_draft(up_to=up_to, by=by, now=now)


def bonus_run(*, up_to: date, by, now: datetime, api: Prolific) -> BonusBatch:
    """Draft (or take up the batch on its way), set up and pay: the whole of "Pay bonuses"."""
    batch = batch_create(batch_current(up_to=up_to, by=by, now=now), api)
    return batch_pay(batch, api, now=now)


# --- Approvals -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Approval:
    approvable: list[str]  # participant ids: completed here, awaiting review on Prolific
    approved: bool  # whether those were approved now
    not_completed: list[str]  # awaiting review on Prolific, their session here not completed
    unknown: list[str]  # submissions of the study with no participant here


def submissions_sync(api: Prolific, *, approve: bool, now: datetime) -> Approval:
    """Read the study's submissions, record each participant's status, and (``approve``) approve
    those whose session here completed (never a screened-out one: Prolific pays those its way)."""
    rules = prolific_rules()
    try:
        submissions = api.submissions(rules.prolific_study_id)
    except ProlificError as error:
        raise LedgerError(f"Prolific's submissions could not be read: {error}") from None
    ours = {p.external_id: p for p in Participation.objects.filter(platform=Platform.PROLIFIC)}
    approvable, not_completed, unknown = [], [], []
    for submission in submissions:
        participation = ours.get(submission.get("participant_id", ""))
        if participation is None:
            unknown.append(str(submission.get("participant_id", "")))
            continue
        status = str(submission.get("status", ""))[:32]
        Participation.objects.filter(pk=participation.pk).update(platform_status=status)
        if status == "AWAITING REVIEW":
            if participation.outcome == SessionOutcome.COMPLETED:
                approvable.append((participation, submission["id"]))
            else:
                not_completed.append(participation.external_id)
    if approve and approvable:
        try:
            api.approve([submission_id for _, submission_id in approvable])
        except ProlificError as error:
            raise LedgerError(f"Prolific did not approve the submissions: {error}") from None
        Participation.objects.filter(pk__in=[p.pk for p, _ in approvable]).update(
            approved_at=now, platform_status="APPROVED"
        )
    return Approval(
        approvable=[p.external_id for p, _ in approvable],
        approved=approve and bool(approvable),
        not_completed=not_completed,
        unknown=unknown,
    )
