from datetime import date

from django import forms
from django.utils import timezone

from annotators.study.report import PERIOD_DAYS, PayPeriodError, pay_period


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


class UpToForm(forms.Form):
    """The last day whose earnings a bonus batch pays (``annotators.study.ledger``)."""

    up_to = forms.DateField(label="Pay what was earned up to (last day, UTC)", widget=forms.DateInput({"type": "date"}))

    def clean_up_to(self) -> date:
        day = self.cleaned_data["up_to"]
        if not PERIOD_DAYS[0] <= day <= PERIOD_DAYS[1]:
            raise forms.ValidationError(f"Name a day from {PERIOD_DAYS[0]} to {PERIOD_DAYS[1]}.")
        return day
