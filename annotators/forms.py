"""Forms of the rater's pages: they validate input; the services in annotators.services write."""

from django import forms
from django.contrib.auth.forms import UserCreationForm

from annotators.services import ANONYMOUS_NAME, DISPLAY_NAME_MAX_CHARS, DISPUTE_MAX_CHARS


class SignupForm(UserCreationForm):
    """Username, optional e-mail and password twice, checked by Django's password validators.

    The view does not call ``save()``: ``annotators.services.rater_signup`` creates the user, the
    annotator role and the profile together.
    """

    email = forms.EmailField(
        required=False, max_length=254, help_text="Optional; only used to reset a forgotten password."
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def full_clean(self) -> None:
        super().full_clean()
        # Passwords are never sent back by default. When they were accepted and only another field
        # was refused (a username taken), the page keeps them, so nothing right is typed again.
        if self.errors and not {"password1", "password2"} & set(self.errors):
            for name in ("password1", "password2"):
                self.fields[name].widget.render_value = True


class ConsentForm(forms.Form):
    agree = forms.BooleanField(
        required=True,
        label="I agree that my ratings are stored and published as part of a research dataset.",
        error_messages={"required": "Tick the box to agree before you start."},
    )


class ProfileForm(forms.Form):
    display_name = forms.CharField(
        max_length=DISPLAY_NAME_MAX_CHARS,
        required=False,
        label="Pseudonym on the leaderboard",
        help_text=(
            f"The name others see next to your points (never your username). Leave it empty to appear as "
            f"“{ANONYMOUS_NAME}”. Up to {DISPLAY_NAME_MAX_CHARS} characters."
        ),
    )
    on_leaderboard = forms.BooleanField(required=False, label="Show me on the leaderboard")

    def clean_display_name(self) -> str:
        return self.cleaned_data["display_name"].strip()


class DisputeForm(forms.Form):
    comment = forms.CharField(
        max_length=DISPUTE_MAX_CHARS,
        label="Why do you think this score is wrong?",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="An admin reads every dispute and may restore your points.",
    )

    def clean_comment(self) -> str:
        comment = self.cleaned_data["comment"].strip()
        if not comment:
            raise forms.ValidationError("Write a short reason.")
        return comment
