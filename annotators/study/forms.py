from datetime import date

from django import forms
from django.utils import timezone

from annotators.study.report import PayPeriodError, pay_period


class PayPeriodForm(forms.Form):
    """A pay report's period: from the start of one day to the end of another (UTC), both given."""

    start = forms.DateField(label="From (first day)", widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(label="To (last day)", widget=forms.DateInput(attrs={"type": "date"}))

    @classmethod
    def this_month(cls) -> dict[str, date]:
        today = timezone.now().date()
        return {"start": today.replace(day=1), "end": today}

    def clean(self) -> dict:
        data = super().clean()
        if "start" in data and "end" in data:
            try:
                data["period"] = pay_period(data["start"], data["end"])
            except PayPeriodError as error:
                raise forms.ValidationError(str(error), code="inverted") from None
        return data
