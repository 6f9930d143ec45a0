"""Pay arithmetic (SPEC 7), no Django: ``base = hourly rate × active hours`` plus ``bonus =
max(0, points) × rate per point``, each rounded half up to the cent and never negative; the amount
paid is their sum, so the columns of a report add up. Sessions and the effective hourly pay at the
median, which platforms check against their minimum (Prolific judges a study's pay at its median
completion time), with the adjustment that brings a short-paid study up to it. Exact (Decimal)
from the rates to the cent.
"""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, ROUND_UP, Decimal

CENT = Decimal("0.01")
# Two ratings further apart than this (the previous submit to the next serve) are in different
# sessions: the same half hour after which an abandoned assignment expires.
SESSION_GAP_SECONDS = 30 * 60


def money(amount: Decimal) -> Decimal:
    """Half up to the cent, never negative."""
    return max(Decimal(0), amount).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Pay:
    base: Decimal
    bonus: Decimal

    @property
    def amount(self) -> Decimal:
        return self.base + self.bonus


def pay_for(*, active_seconds: float, points: int, hourly: Decimal, per_point: Decimal) -> Pay:
    # Seconds enter as a decimal of their shortest repr: 0.1 s is 0.1, not 0.1000000000000000055.
    hours = Decimal(repr(float(active_seconds))) / 3600
    return Pay(base=money(hourly * hours), bonus=money(max(0, points) * per_point))


def session_seconds(rows: Sequence[tuple[datetime, datetime, float]]) -> list[float]:
    """Active seconds of each session of one rater: ``rows`` are (served, submitted, capped active
    seconds) of their ratings in serve order; a gap over ``SESSION_GAP_SECONDS`` starts a new one."""
    sessions: list[float] = []
    last_submit = None
    for served, submitted, seconds in rows:
        if last_submit is None or (served - last_submit).total_seconds() > SESSION_GAP_SECONDS:
            sessions.append(0.0)
        sessions[-1] += seconds
        last_submit = submitted if last_submit is None else max(last_submit, submitted)
    return sessions


@dataclass(frozen=True)
class MedianPay:
    """The median session's active time and the pay per hour at the median."""

    median_session_seconds: float | None
    median_pay_per_session: Decimal | None
    hourly_at_median: Decimal | None  # median pay per session / median session hours
    under_minimum: bool
    # What each participant is paid on top when the pay at the median falls short: the minimum
    # hourly pay over the median session's hours less the median pay, rounded up to the cent (so
    # that the pay at the median then reaches the minimum, never a fraction under it); else 0.
    adjustment: Decimal = Decimal(0)


def median_pay(sessions: Sequence[float], pay_per_session: Sequence[Decimal], minimum_hourly: Decimal) -> MedianPay:
    """Platforms (Prolific: £6 / $8 an hour) judge a study by its pay over the median completion time:
    here the median pay per session (each rater's amount over their sessions) over the median
    session's active hours. ``under_minimum`` only when a minimum is set (above 0)."""
    if not sessions:
        return MedianPay(None, None, None, False)
    median_seconds = statistics.median(sessions)
    median_paid = money(statistics.median(pay_per_session)) if pay_per_session else Decimal(0)
    hourly = None
    if median_seconds > 0:
        hourly = money(median_paid / (Decimal(repr(float(median_seconds))) / 3600))
    under = minimum_hourly > 0 and hourly is not None and hourly < minimum_hourly
    adjustment = Decimal(0)
    if under:
        owed = minimum_hourly * Decimal(repr(float(median_seconds))) / 3600 - median_paid
        adjustment = max(Decimal(0), owed).quantize(CENT, rounding=ROUND_UP)
    return MedianPay(median_seconds, median_paid, hourly, under, adjustment)
