"""Filter fields shared by the API's lists: ids and counts are bounded integers, and times are
read as UTC, so a huge or fractional number or an odd time in a query string is a 400, never an
overflow or an out-of-range value in the database driver."""

from datetime import UTC

import django_filters
from django import forms
from django.core.exceptions import ValidationError

MAX_ID = 2**63 - 1


class IdFilter(django_filters.Filter):
    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


class CountFilter(django_filters.Filter):
    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", 1_000_000)
        super().__init__(*args, **kwargs)


class _UtcIsoDateTimeField(django_filters.fields.IsoDateTimeField):
    """ISO 8601 times, converted to UTC before they reach the database.

    Python accepts UTC offsets up to 24 hours, PostgreSQL only up to 15:59: an offset such as
    +23:13 would fail in the database. In UTC it is just another instant, or, near year 1 or
    9999, no representable instant at all, which is the client's error.
    """

    def to_python(self, value):
        moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise ValidationError("This time lies outside the representable range.", code="invalid") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = _UtcIsoDateTimeField
