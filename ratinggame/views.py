"""The site's pages: home, the rating screen (tutorial, probation and game share it) and feedback.

Views validate input, call one service of ratinggame.game, and render. Every rejection of a
rating (too early, expired, not yours, ...) is a page with a clear message and the status code
the service gives, never a server error.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from annotators import journey, progress, services
from annotators.forms import DisputeForm
from annotators.gates import PLAYING_STEPS, STEP_STAGES, guide_context, step_gate
from annotators.journey import Step
from annotators.scale import SHORT
from ratinggame import game
from ratinggame.models import CaptionPair, Image

STAGE_STEPS = {stage: step for step, stage in STEP_STAGES.items()}
HOME_CALLS = {
    Step.CONSENT: "Start playing",
    Step.TUTORIAL: "Continue the tutorial",
    Step.PROBATION: "Continue probation",
    Step.GAME: "Continue playing",
    Step.SUSPENDED: "Your account is suspended",
}


def home(request: HttpRequest) -> HttpResponse:
    counts = dict(CaptionPair.objects.values_list("pool").annotate(n=Count("id")).order_by())
    sample = CaptionPair.objects.game().select_related("image").order_by("id")[:6]
    call = HOME_CALLS[progress.current_step(request.user)] if request.user.is_authenticated else None
    return render(
        request,
        "ratinggame/home.html",
        {"counts": counts, "images": Image.objects.count(), "sample": sample, "call": call},
    )


@login_required
@require_http_methods(["GET", "POST"])
def rate(request: HttpRequest, stage: str) -> HttpResponse:
    if request.method == "POST":
        return _rate_submit(request)
    if gate := step_gate(request.user, {STAGE_STEPS[stage]}):
        return gate
    try:
        served = game.pair_serve(rater=request.user)
    except game.RatingRejected as rejected:
        return rejected_response(request, rejected)
    if served is None:
        return render(request, "ratinggame/no_pairs.html", guide_context())
    return rate_response(request, served)


def _rate_submit(request: HttpRequest) -> HttpResponse:
    # Consent and suspension are the state machine's; the stage is checked by rating_submit
    # itself, so that submitting the same form twice after the last pair of a stage (the stage
    # has changed by then) shows the first result instead of a wrong-page redirect.
    if gate := step_gate(request.user, PLAYING_STEPS):
        if progress.current_step(request.user) == Step.SUSPENDED:
            return render(request, "annotators/suspended.html", status=403)
        return gate
    try:
        assignment_id = int(request.POST.get("assignment", ""))
    except ValueError:
        return render(
            request,
            "ratinggame/rating_error.html",
            {"message": "This form does not say which pair it rates. Open the next pair and try again."},
            status=400,
        )
    value = request.POST.get("value", "")
    try:
        feedback_ = game.rating_submit(rater=request.user, assignment_id=assignment_id, value=value)
    except game.RatingRejected as rejected:
        if rejected.code in {"too_early", "invalid_value"}:
            # Same pair again (pair_serve returns the open assignment, served time unchanged),
            # with the message and the choice the rater made.
            served = game.pair_serve(rater=request.user)
            if served is not None and served.assignment_id == assignment_id:
                return rate_response(request, served, error=rejected.message, chosen=value, status=rejected.status)
        return rejected_response(request, rejected)
    return redirect("feedback", assignment_id=feedback_.assignment_id)


def rate_response(
    request: HttpRequest, served: "game.Served", *, error: str = "", chosen: str = "", status: int = 200
) -> HttpResponse:
    now = timezone.now()
    # The wait is the server's min_submit_at minus the server's now: the page only counts it
    # down with the browser's monotonic clock, so a wrong clock on the rater's machine can
    # neither shorten nor lengthen it (and the server checks again on submit).
    wait_ms = max(0, round((served.min_submit_at - now).total_seconds() * 1000))
    context = {
        **guide_context(),
        "served": served,
        "stage": served.stage,
        "error": error,
        "chosen": chosen,
        "wait_ms": wait_ms,
        "server_now_ms": round(now.timestamp() * 1000),
        "min_submit_ms": round(served.min_submit_at.timestamp() * 1000),
        "min_seconds": f"{journey.min_seconds(served.stage):g}",
        "progress": progress.stage_progress(request.user, served.stage),
    }
    return render(request, "ratinggame/rate.html", context, status=status)


@login_required
def feedback(request: HttpRequest, assignment_id: int) -> HttpResponse:
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    try:
        feedback_ = game.feedback_for(rater=request.user, assignment_id=assignment_id)
    except game.RatingRejected as rejected:
        return rejected_response(request, rejected)
    return feedback_response(request, feedback_)


def feedback_response(
    request: HttpRequest, feedback_: "game.Feedback", *, dispute_form: DisputeForm | None = None, status: int = 200
) -> HttpResponse:
    fb = feedback_
    next_step = progress.current_step(request.user)
    window = fb.window
    context = {
        **guide_context(),
        "fb": fb,
        "stage": fb.stage,
        "pair": CaptionPair.objects.select_related("image").filter(pk=fb.pair_id).first(),
        "points_class": "good" if fb.points > 0 else "bad" if fb.points < 0 else "zero",
        "value_short": SHORT.get(fb.value, ""),
        "reference_short": SHORT.get(fb.reference, ""),
        "show_window": window is not None and (window.count < window.size or fb.transition in WINDOW_TRANSITIONS),
        "outcome": outcome_for(fb),
        "announce": announcement(fb),
        "continue_label": CONTINUE_LABELS.get(next_step, "Continue") if fb.transition else "Next pair",
        "dispute_form": dispute_form or DisputeForm(),
    }
    return render(request, "ratinggame/feedback.html", context, status=status)


WINDOW_TRANSITIONS = frozenset({"window_passed", "window_failed"})
CONTINUE_LABELS = {
    Step.TUTORIAL: "Next pair",
    Step.PROBATION: "Start probation",
    Step.GAME: "Go to the game",
    Step.SUSPENDED: "Continue",
}


def outcome_for(fb: "game.Feedback") -> dict | None:
    """Title and text of the end of a stage (tutorial, probation round, qualification window)."""
    window = fb.window
    pairs = (fb.stage_max or 0) // 2
    tutorial_mark = journey.tutorial_pass_mark(pairs)
    probation_mark = journey.probation_pass_mark(pairs)
    texts = {
        "tutorial_passed": (
            "good",
            "Tutorial passed",
            f"You scored {fb.stage_total} of {fb.stage_max} points ({tutorial_mark} needed). "
            "Next: the rating game, scored against the other players' consensus.",
        ),
        "tutorial_failed": (
            "bad",
            "Tutorial finished: probation next",
            f"You scored {fb.stage_total} of {fb.stage_max} points, fewer than the {tutorial_mark} needed to go "
            f"straight to the game. Next is probation: {journey.PROBATION_SIZE} more pairs rated by experts, and "
            f"{journey.PROBATION_PASS_POINTS} of {2 * journey.PROBATION_SIZE} points take you to the game.",
        ),
        "probation_passed": (
            "good",
            "Probation passed",
            f"You scored {fb.stage_total} of {fb.stage_max} points ({probation_mark} needed). Next: the rating game.",
        ),
        "probation_failed": (
            "bad",
            "Probation round finished: another round next",
            f"You scored {fb.stage_total} of {fb.stage_max} points, fewer than the {probation_mark} needed. "
            "A new round starts next, in a new order.",
        ),
    }
    if window is not None:
        texts["window_passed"] = (
            "good",
            "Qualification passed",
            f"You scored {window.points} points in your first {window.size} game ratings "
            f"({window.needed} needed). Keep playing!",
        )
        texts["window_failed"] = (
            "bad",
            "Qualification failed: back to probation",
            f"You scored {window.points} points in your first {window.size} game ratings, fewer than the "
            f"{window.needed} needed. Your game score is reset to 0 and you go back to probation.",
        )
    if fb.transition not in texts:
        return None
    tone, title, text = texts[fb.transition]
    return {"tone": tone, "title": title, "text": text}


def announcement(fb: "game.Feedback") -> str:
    """One sentence for screen readers, announced by feedback.js through an aria-live region."""
    points = f"{fb.points:+d} points" if fb.points else "0 points"
    if fb.stage == "game":
        if fb.first_rater:
            said = f"You rated {fb.value}. You are the first to rate this pair: 0 points."
        else:
            said = f"You rated {fb.value}. Consensus {fb.reference}. {points}."
        said += f" Game score {fb.stage_total}, level {fb.level}."
    else:
        said = f"You rated {fb.value}. Expert rating {fb.reference}. {points}."
        said += f" Total {fb.stage_total} of {fb.stage_max}."
    outcome = outcome_for(fb)
    if outcome:
        said += f" {outcome['title']}."
    return said


@login_required
@require_POST
def dispute(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """'Dispute this score' on a game feedback screen: files a Dispute for an admin to resolve."""
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    try:
        feedback_ = game.feedback_for(rater=request.user, assignment_id=assignment_id)
    except game.RatingRejected as rejected:
        return rejected_response(request, rejected)
    form = DisputeForm(request.POST)
    if feedback_.stage != "game":
        form.add_error(None, "Only game scores can be disputed: tutorial and probation use expert ratings.")
    if not form.is_valid():
        return feedback_response(request, feedback_, dispute_form=form, status=400)
    try:
        services.dispute_file(rater=request.user, rating_id=feedback_.rating_id, comment=form.cleaned_data["comment"])
    except ValidationError as error:
        form.add_error(None, error)
        return feedback_response(request, feedback_, dispute_form=form, status=400)
    messages.success(request, "Your dispute is filed. An admin will look at it.")
    return redirect("feedback", assignment_id=assignment_id)


def rejected_response(request: HttpRequest, rejected: "game.RatingRejected") -> HttpResponse:
    if rejected.code == "suspended":
        return render(request, "annotators/suspended.html", status=rejected.status)
    context = {**guide_context(), "message": rejected.message, "code": rejected.code}
    return render(request, "ratinggame/rating_error.html", context, status=rejected.status)
