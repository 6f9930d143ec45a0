"""Forms of the staff pages: every action needs a reason."""

from django import forms


class ReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        strip=True,
        help_text="Kept in the rater's action log with your name.",
    )


class DisputeResolveForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[("accept", "Accept: restore the points"), ("reject", "Reject: no change")],
        widget=forms.RadioSelect,
    )
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=2000, strip=True, label="Reason")
