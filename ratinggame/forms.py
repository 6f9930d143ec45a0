"""Forms of the rating screens' side pages: reporting a pair, and staff's answer to reports."""

from django import forms

from ratinggame.game.reports import REPORT_MAX_CHARS
from ratinggame.models import ReportReason


class PairReportForm(forms.Form):
    assignment = forms.IntegerField(widget=forms.HiddenInput)
    reason = forms.ChoiceField(choices=[("", "Choose…"), *ReportReason.choices], label="What is wrong?")
    text = forms.CharField(
        required=False,
        max_length=REPORT_MAX_CHARS,
        label="Details (needed for “something else”)",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )


class ReportResolveForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[
            ("back", "Put it back in play: nothing is wrong, or it has been fixed"),
            ("out", "Keep it out of play"),
        ],
        widget=forms.RadioSelect,
    )
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=2000, strip=True, label="Note")
