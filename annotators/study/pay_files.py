"""The pay report as files: the shape Prolific's bulk bonus takes (one ``participant_id,amount``
line per paid Prolific participant, no header) and a CSV with every column. Both are opened in
spreadsheets, and their text cells come from people (open sign-up user names, participant ids),
so every text cell goes through the export's ``spreadsheet_safe`` (numbers, a negative one too, stay numbers)."""

import csv
import io

from annotators.models import Platform
from annotators.study.report import PayReport
from scoring.export.cells import spreadsheet_safe

COLUMNS = (
    "profile_id",
    "username",
    "platform",
    "participant_id",
    "study_id",
    "session_id",
    "outcome",
    "withdrawn",
    "active_seconds",
    "active_hours",
    "sessions",
    "ratings",
    "counted",
    "excluded",
    "points",
    "base",
    "bonus",
    "amount",
    "currency",
    "probation_after_game",
    "adjustment",
)


def prolific_bonus_csv(report: PayReport) -> str:
    """Lines for Prolific's bulk bonus: its participants with a bonus to pay, amounts with two
    decimals: only what Prolific pays on top of the study's reward (``PayRow.platform_bonus``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in report.rows:
        if row.platform == Platform.PROLIFIC and row.platform_bonus > 0:
            writer.writerow([spreadsheet_safe(row.participant_id), f"{row.platform_bonus:.2f}"])
    return out.getvalue()


def adjustment_csv(report: PayReport) -> str:
    """Lines for Prolific's bulk bonus that pay the adjustment up to its minimum hourly pay at the
    median (``MedianPay.adjustment``), one per Prolific participant; empty when none is due."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in report.rows:
        if row.platform == Platform.PROLIFIC and row.adjustment > 0:
            writer.writerow([spreadsheet_safe(row.participant_id), f"{row.adjustment:.2f}"])
    return out.getvalue()


def full_csv(report: PayReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in report.rows:
        text = [row.username, row.platform, row.participant_id, row.study_id, row.session_id, row.outcome]
        cells = [
            row.profile_id,
            *(spreadsheet_safe(cell) for cell in text),
            int(row.withdrawn),
            f"{row.active_seconds:.1f}",
            f"{row.active_seconds / 3600:.4f}",
            row.sessions,
            row.ratings,
            row.counted,
            row.excluded,
            row.points,
            f"{row.base:.2f}",
            f"{row.bonus:.2f}",
            f"{row.amount:.2f}",
            report.currency,
            int(row.probation_after_game),
            f"{row.adjustment:.2f}",
        ]
        writer.writerow(cells)
    return out.getvalue()


FILES = {
    "prolific": ("text/csv", prolific_bonus_csv),
    "adjustment": ("text/csv", adjustment_csv),
    "csv": ("text/csv", full_csv),
}
