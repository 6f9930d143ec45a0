"""The rater's pages around the rating screens: sign-up, consent, introduction, the journey
entry, suspension, leaderboard and the personal page. The rating and feedback screens are in
ratinggame.views.

Where a rater may be is decided in one place, ``annotators.progress.current_step``: every page
of a step asks ``step_gate`` and a rater on another step is sent to that step's page.
"""

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotators import journey, progress, services
from annotators.forms import ConsentForm, ProfileForm, SignupForm
from annotators.gates import PLAYING_STEPS, guide_context, step_gate, step_url
from annotators.journey import Step
from annotators.models import Participation
from annotators.study.gates import study_entry_refusal
from annotators.throttles import signup_seconds_to_wait
from scoring.consensus import points_table


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("annotators:play")
    if refusal := study_entry_refusal(request, signup=True):
        return refusal
    form = SignupForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and (wait := signup_seconds_to_wait(request)):
        form.add_error(None, "Too many accounts were created from your address. Try again later.")
        response = render(request, "annotators/signup.html", {"form": form}, status=429)
        response["Retry-After"] = str(wait)
        return response
    if request.method == "POST" and form.is_valid():
        try:
            user = services.rater_signup(
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
                email=form.cleaned_data.get("email") or "",
            )
        except ValidationError as error:
            for field, messages_ in error.message_dict.items():
                form.add_error(field if field in form.fields else None, messages_)
        else:
            login(request, user)
            return redirect("annotators:play")
    return render(request, "annotators/signup.html", {"form": form}, status=400 if form.errors else 200)


@login_required
def play(request: HttpRequest) -> HttpResponse:
    """The journey's entry: wherever the state machine says this rater is now."""
    return redirect(step_url(progress.current_step(request.user)))


@login_required
@require_http_methods(["GET", "POST"])
def consent(request: HttpRequest) -> HttpResponse:
    if gate := step_gate(request.user, {Step.CONSENT}):
        return gate
    form = ConsentForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        progress.consent_give(user=request.user)
        return redirect("annotators:intro")
    context = {"form": form, "participation": Participation.objects.filter(profile__user=request.user).first()}
    return render(request, "annotators/consent.html", context, status=400 if form.errors else 200)


@login_required
def intro(request: HttpRequest) -> HttpResponse:
    # A reference page for every rater who may play; only the button depends on the step.
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    step = progress.current_step(request.user)
    return render(
        request,
        "annotators/intro.html",
        {
            **guide_context(request.user),
            "step": step,
            "steps": Step,
            "min_seconds": journey.min_seconds(step),
            "rules": journey.rules(),
            "game_points": points_table(),
            "participation": Participation.objects.filter(profile__user=request.user).first(),
        },
    )


@login_required
def suspended(request: HttpRequest) -> HttpResponse:
    if gate := step_gate(request.user, {Step.SUSPENDED}):
        return gate
    return render(request, "annotators/suspended.html")


def leaderboard(request: HttpRequest) -> HttpResponse:
    boards = [
        {"key": "all", "title": "All time", "rows": services.leaderboard(period="all")},
        {"key": "week", "title": "This week (last 7 days)", "rows": services.leaderboard(period="week")},
    ]
    profile = progress.profile_for(request.user) if request.user.is_authenticated else None
    for board in boards:
        for row in board["rows"]:
            row["is_me"] = profile is not None and row["profile_id"] == profile.pk
    return render(request, "annotators/leaderboard.html", {"boards": boards, "profile": profile})


@login_required
@require_http_methods(["GET", "POST"])
def me(request: HttpRequest) -> HttpResponse:
    profile = progress.profile_for(request.user)
    initial = {"display_name": profile.display_name, "on_leaderboard": profile.on_leaderboard}
    form = ProfileForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.profile_update(
                user=request.user,
                display_name=form.cleaned_data["display_name"],
                on_leaderboard=form.cleaned_data["on_leaderboard"],
            )
        except ValidationError as error:
            form.add_error("display_name", error)
        else:
            messages.success(request, "Your leaderboard settings are saved.")
            return redirect("annotators:me")
    return render(
        request,
        "annotators/me.html",
        {
            "form": form,
            "stats": services.personal_stats(request.user),
            "profile": profile,
            "disputes": services.rater_disputes(request.user),
            "step": progress.current_step(request.user),
            "steps": Step,
            "session_ended": Participation.objects.filter(profile=profile).exclude(outcome="").first(),
        },
        status=400 if form.errors else 200,
    )
