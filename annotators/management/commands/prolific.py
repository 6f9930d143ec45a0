"""``manage.py prolific sync|approve|bonus|batches|resolve``: the study's submissions, approvals
and bonuses through Prolific's API (``annotators.study.ledger``; SPEC 7).

- ``sync``: read the study's submissions and record each participant's status;
- ``approve [--yes]``: approve the submissions of participants whose session here completed;
- ``bonus --up-to YYYY-MM-DD [--yes]``: what each participant is owed up to that day (less what
  earlier batches paid), then, with ``--yes``, set it up and pay it on Prolific (never twice);
- ``batches``: the ledger; ``resolve N --paid|--not-paid``: the researcher's word on a batch whose
  pay call's answer was lost, after looking on Prolific.

Without ``--yes`` nothing changes on Prolific: the command shows what it would do.
"""

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from annotators.management.commands.pay_report import day_argument
from annotators.models import BonusBatch, BonusState
from annotators.study import ledger
from annotators.study.report import PayPeriodError


class Command(BaseCommand):
    help = "Prolific: read submissions, approve completed ones, and pay bonuses through its API (never twice)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        actions.add_parser("sync", help="Read the study's submissions and record their status.")
        approve = actions.add_parser("approve", help="Approve the submissions of completed sessions.")
        approve.add_argument("--yes", action="store_true", help="Approve them (without it: show them).")
        bonus = actions.add_parser("bonus", help="Pay what is owed up to a day, less earlier batches.")
        bonus.add_argument("--up-to", required=True, help="The last day (UTC) whose earnings are paid, YYYY-MM-DD.")
        bonus.add_argument("--yes", action="store_true", help="Pay it on Prolific (without it: show the batch).")
        actions.add_parser("batches", help="The ledger of bonus batches.")
        resolve = actions.add_parser("resolve", help="Say whether a batch whose answer was lost was paid.")
        resolve.add_argument("batch", type=int)
        said = resolve.add_mutually_exclusive_group(required=True)
        said.add_argument("--paid", action="store_true", help="Prolific shows it paid.")
        said.add_argument("--not-paid", action="store_true", help="Prolific shows it not paid: it may be paid again.")

    def handle(self, *args, action: str, **options) -> None:
        try:
            getattr(self, f"_{action}")(**options)
        except (ledger.LedgerError, PayPeriodError) as error:
            raise CommandError(str(error)) from None

    def _sync(self, **options) -> None:
        found = ledger.submissions_sync(ledger.client(), approve=False, now=timezone.now())
        self.stdout.write(
            f"{len(found.approvable)} to approve, {len(found.not_completed)} awaiting review without a completed "
            f"session here, {len(found.unknown)} not from this site."
        )

    def _approve(self, *, yes: bool, **options) -> None:
        found = ledger.submissions_sync(ledger.client(), approve=yes, now=timezone.now())
        for participant in found.approvable:
            self.stdout.write(f"{participant}  {'approved' if found.approved else 'to approve'}")
        if not yes and found.approvable:
            self.stdout.write("Run again with --yes to approve them on Prolific.")
        for participant in found.not_completed:
            self.stdout.write(f"{participant}  awaiting review, session not completed here: not approved")

    def _bonus(self, *, up_to: str, yes: bool, **options) -> None:
        day, now = day_argument(up_to), timezone.now()
        rules = ledger.prolific_rules()
        if not yes:
            batch = ledger.batch_open(rules.prolific_study_id)
            lines = (
                [(line.participation.external_id, line.amount) for line in batch.lines.select_related("participation")]
                if batch
                else [(p.external_id, amount) for p, amount in ledger.owed(day)]
            )
            if not lines:
                raise CommandError(ledger.NOTHING_OWED.format(day=day))
            for participant, amount in lines:
                self.stdout.write(f"{participant}  {amount} {rules.currency}")
            total = sum(amount for _, amount in lines)
            on_way = f" (batch {batch.pk}, {batch.get_state_display().lower()})" if batch else ""
            self.stdout.write(f"{len(lines)} participant(s), {total} {rules.currency}{on_way}. Run with --yes to pay.")
            return
        batch = ledger.bonus_run(up_to=day, by=None, now=now, api=ledger.client(rules))
        paid = f"{batch.lines.count()} participant(s), {batch.total} {batch.currency} paid"
        self.stdout.write(f"Batch {batch.pk}: {paid}.")

    def _batches(self, **options) -> None:
        if not BonusBatch.objects.exists():
            self.stdout.write("No bonus batches yet.")
            return
        for batch in BonusBatch.objects.all():
            self.stdout.write(
                f"{batch.pk}  up to {batch.up_to}  {batch.total} {batch.currency}  {batch.get_state_display()}"
                f"{'  ' + batch.error if batch.error else ''}"
            )

    def _resolve(self, *, batch: int, paid: bool, **options) -> None:
        found = BonusBatch.objects.filter(pk=batch, state=BonusState.PAYING).first()
        if found is None:
            raise CommandError(f"Batch {batch} is not waiting for your word (only a batch whose answer was lost is).")
        found = ledger.batch_resolve(found, paid=paid, now=timezone.now())
        self.stdout.write(f"Batch {found.pk}: {found.get_state_display()}.")
