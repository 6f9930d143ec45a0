from django import forms

from ratinggame.models import MIN_HUMAN_RATINGS
from scoring.export.formats import DEFAULT_FORMATS, WRITERS


class ExportForm(forms.Form):
    min_ratings = forms.IntegerField(
        label="Minimum ratings per pair",
        min_value=1,
        max_value=100,
        initial=MIN_HUMAN_RATINGS,
        help_text=f"The validated dataset uses {MIN_HUMAN_RATINGS}: a pair needs that many human ratings that count.",
    )
    seed = forms.IntegerField(
        label="Seed", min_value=0, max_value=2**31 - 1, initial=0, help_text="Seeds the split and the virtual raters."
    )
    formats = forms.MultipleChoiceField(
        label="Table formats",
        choices=[(name, writer.label) for name, writer in WRITERS.items()],
        initial=list(DEFAULT_FORMATS),
        widget=forms.CheckboxSelectMultiple,
    )
    with_images = forms.BooleanField(label="Include the image files", required=False)
