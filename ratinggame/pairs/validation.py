"""Rules for a caption pair's fields, shared by the importer, the admin and the API."""

import unicodedata

from django.conf import settings

from ratinggame.models import EXPERT_POOLS, TEACHING_POOLS, CaptionSource, Pool

SOURCES = {choice.value for choice in CaptionSource}
POOLS = {choice.value for choice in Pool}


class PairInvalid(ValueError):
    """A caption pair's fields break a rule; the message says which and why."""


# PositiveIntegerField's range on every database (PostgreSQL's integer).
MAX_DISPLAY_ORDER = 2**31 - 1
# Characters that show nothing: format characters (zero-width space and joiners, BOM, word
# joiner), separators, and controls.
_INVISIBLE_CATEGORIES = {"Cf", "Zs", "Zl", "Zp", "Cc"}


def check_unicode(text: str, what: str) -> str:
    """``text`` unchanged, or PairInvalid when it cannot be stored in every database.

    JSON may spell an unpaired surrogate ("\\ud800"), which decodes to a Python string that no
    database can store, and CSV or JSON may carry a NUL character, which PostgreSQL refuses in
    any text: both are caught here, with the field named, instead of failing at the write.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise PairInvalid(f"{what} contains an unpaired surrogate (not valid Unicode text)") from None
    if "\x00" in text:
        raise PairInvalid(f"{what} contains a NUL character (byte 0), which cannot be stored")
    return text


def clean_caption(caption: object, what: str = "caption") -> str:
    if not isinstance(caption, str):
        raise PairInvalid(f"{what} must be text")
    text = " ".join(check_unicode(caption, what).split())
    if not text:
        raise PairInvalid(f"{what} is empty")
    if all(unicodedata.category(ch) in _INVISIBLE_CATEGORIES for ch in text):
        raise PairInvalid(f"{what} has no visible character (only zero-width or format characters)")
    limit = settings.RATINGGAME["MAX_CAPTION_CHARS"]
    if len(text) > limit:
        raise PairInvalid(f"{what} is {len(text)} characters, over the limit of {limit}")
    if any(ord(ch) < 32 for ch in text):
        raise PairInvalid(f"{what} contains control characters")
    return text


def clean_explanation(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise PairInvalid("explanation must be text")
    return check_unicode(str(value), "explanation").strip()


def clean_source(source: object) -> str:
    value = (str(source) if source is not None else "").strip().lower() or CaptionSource.OTHER
    if value not in SOURCES:
        raise PairInvalid(f"unknown source {source!r} (expected one of {', '.join(sorted(SOURCES))})")
    return value


def clean_pool(pool: object) -> str:
    value = (str(pool) if pool is not None else "").strip().lower()
    if value not in POOLS:
        raise PairInvalid(f"unknown pool {pool!r} (expected one of {', '.join(sorted(POOLS))})")
    return value


def clean_expert_rating(value: object) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise PairInvalid(f"expert_rating {value!r} is not a whole number from 1 to 5")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        number = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise PairInvalid(f"expert_rating {value!r} is not a whole number from 1 to 5") from None
    if not 1 <= number <= 5:
        raise PairInvalid(f"expert_rating {number} is outside 1-5")
    return number


def clean_references(value: object) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        items = value.split("|")
    elif isinstance(value, list):
        items = value
    else:
        raise PairInvalid("references must be text separated by '|' or a list of texts")
    cleaned = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, str):
            raise PairInvalid("references must be text")
        text = " ".join(item.split())
        if text:
            cleaned.append(clean_caption(text, what=f"reference {number}"))
    return cleaned


def clean_display_order(value: object) -> int | None:
    """A whole number from 0 to 2^31 - 1, or None (empty: the importer numbers the row)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise PairInvalid(f"display_order {value!r} is not a whole number")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise PairInvalid(f"display_order {str(value)[:40]!r} is not a whole number") from None
    if number < 0:
        raise PairInvalid("display_order must not be negative")
    if number > MAX_DISPLAY_ORDER:
        raise PairInvalid(f"display_order {str(number)[:40]} is over the largest allowed, {MAX_DISPLAY_ORDER:,}")
    return number


def check_expert_fields(pool: str, expert_rating: int | None, explanation: str) -> None:
    """Tutorial, probation and Rating Guide pairs teach: they need the expert rating and its
    explanation. Control pairs (quality checks in the game) need the expert rating; their
    explanation is optional (staff read it; raters are shown a control as a game pair)."""
    if pool in EXPERT_POOLS and expert_rating is None:
        raise PairInvalid(f"{pool} pairs need an expert_rating (1-5)")
    if pool in TEACHING_POOLS and not explanation.strip():
        raise PairInvalid(f"{pool} pairs need an explanation of the expert rating")
