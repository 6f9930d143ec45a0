"""Typed readers for environment variables (the only place settings read os.environ)."""

import os
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0/true/false/yes/no/on/off, not {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_decimal(name: str, default: str) -> Decimal:
    """A sum of money or a rate: exact (Decimal), never a float that rounds a cent away."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        raw = default
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        raise ImproperlyConfigured(f"{name} must be a number such as 12.50, not {raw!r}") from None
    if not value.is_finite() or value < 0:
        raise ImproperlyConfigured(f"{name} must be a number of 0 or more, not {raw!r}")
    return value


def env_datetime(name: str) -> datetime | None:
    """An ISO date or date and time (``2026-12-31`` or ``2026-12-31T18:00+00:00``); a date without
    a time means the end of that day, UTC; a time without a zone is UTC. Unset: None."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        if len(raw) == 10:
            return datetime.combine(date.fromisoformat(raw), time.max, tzinfo=UTC)
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an ISO date (2026-12-31) or date and time, not {raw!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
