"""``manage.py pay_report --start 2026-11-01 --end 2026-11-30 [--format table|prolific|csv]``: the
pay report for a period (``annotators.study.report``), to the terminal or a file (``--output``)."""

from datetime import date
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotators.study.pay_files import FILES
from annotators.study.report import PayPeriodError, pay_period, pay_report


def day_argument(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{text!r} is not a date: write it as YYYY-MM-DD.") from None


class Command(BaseCommand):
    help = "The pay report (time on task, points, pay) for a period: a table, Prolific's bulk-bonus lines, or a CSV."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--start", required=True, help="The period's first day, YYYY-MM-DD (UTC).")
        parser.add_argument("--end", required=True, help="The period's last day, YYYY-MM-DD (UTC), included.")
        parser.add_argument("--format", choices=["table", *FILES], default="table")
        parser.add_argument("--output", help="Write the file here instead of the terminal.")

    def handle(self, *args, **options) -> None:
        try:
            start, end = pay_period(day_argument(options["start"]), day_argument(options["end"]))
        except PayPeriodError as error:
            raise CommandError(str(error)) from None
        report = pay_report(start=start, end=end)
        text = FILES[options["format"]][1](report) if options["format"] in FILES else self._table(report)
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            self.stdout.write(f"{len(report.rows)} rater(s), {report.total} {report.currency}: {options['output']}")
        else:
            self.stdout.write(text, ending="")

    def _table(self, report) -> str:
        lines = [f"{'rater':<24} {'platform id':<28} {'active min':>10} {'sessions':>8} {'points':>7} {'amount':>10}"]
        for row in report.rows:
            who = f"{row.platform} {row.participant_id}" if row.platform else "sign-up"
            lines.append(
                f"{row.username:<24} {who:<28} {row.active_seconds / 60:>10.1f} {row.sessions:>8} "
                f"{row.points:>7} {row.amount:>10}"
            )
        median = report.median
        lines.append(f"total {report.total} {report.currency} for {len(report.rows)} rater(s)")
        if median.median_session_seconds is not None:
            lines.append(
                f"median session {median.median_session_seconds / 60:.1f} active min; "
                f"pay per hour at the median {median.hourly_at_median} {report.currency}"
            )
        if median.under_minimum:
            lines.append(f"WARNING: under the platform's minimum of {report.minimum_hourly} {report.currency} an hour")
        return "\n".join(lines) + "\n"
