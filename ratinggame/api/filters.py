"""Filter fields shared by the API's lists: ids and counts are bounded integers, so a huge or
fractional number in a query string is a 400, never an overflow in the database driver."""

import django_filters
from django import forms

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
