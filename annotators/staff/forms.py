"""Forms of the staff pages: every action needs a reason."""

from django import forms


class ReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        strip=True,
        help_text="Kept in the rater's action log with your name.",
    )


ACCEPT = ("accept", "Accept: restore the points")
REJECT = ("reject", "Reject: no change")


class DisputeResolveForm(forms.Form):
    decision = forms.ChoiceField(choices=[ACCEPT, REJECT], widget=forms.RadioSelect)
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=2000, strip=True, label="Reason")

    def __init__(self, *args, rating_excluded: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if rating_excluded:
            # An excluded rating no longer counts and its points went with it (the service
            # refuses to accept): rejecting is the only decision offered.
            decision = self.fields["decision"]
            decision.choices, decision.initial = [REJECT], REJECT[0]
            decision.error_messages["invalid_choice"] = (
                "The rating was excluded after this dispute was filed: it cannot be accepted, only rejected."
            )
