from django import forms

from scoring.export.files import FORMATS


class ExportForm(forms.Form):
    min_ratings = forms.IntegerField(
        label="Minimum ratings per pair",
        min_value=1,
        max_value=100,
        initial=3,
        help_text="The validated dataset uses 3 (SPEC section 6).",
    )
    seed = forms.IntegerField(
        label="Seed", min_value=0, max_value=2**31 - 1, initial=0, help_text="Seeds the split and the virtual raters."
    )
    formats = forms.MultipleChoiceField(
        label="Table formats",
        choices=[(name, name) for name in FORMATS],
        initial=["csv", "jsonl"],
        widget=forms.CheckboxSelectMultiple,
    )
    with_images = forms.BooleanField(label="Include the image files", required=False)
